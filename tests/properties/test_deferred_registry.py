"""A registration deferred on a registry (`TransitionRegistry.defer`, made when the
registry is first read) against the same registration made at once: over generated
sequences of registrations (new names, the vocabulary's own names replaced, built-in
names and classes that are refused), reads, copies, second deferrals and settles, every
step answers the same, and the registry ends with the same names in the same order and
the same class under each. And a flow that uses the migrate vocabulary (`text_matches`,
`text_contains`, `turn_count_at_most`) checks and runs the same whether or not the
vocabulary's module was imported before the command began."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.compiler.registry import TransitionRegistry
from flowc.runtime.vocabulary import register_vocabulary

ROOT = Path(__file__).resolve().parents[2]


def _condition(name: str, ok: bool = True) -> type[Any]:
    body: dict[str, Any] = {"name": name}
    if ok:
        body["evaluate"] = lambda self, state, env: True
    return type(f"C_{name}", (), body)


def _target(name: str, ok: bool = True) -> type[Any]:
    body: dict[str, Any] = {"name": name}
    if ok:
        body["resolve"] = lambda self, state, env: None
    return type(f"T_{name}", (), body)


CONDITIONS = [
    _condition(n) for n in ("text_contains", "text_matches", "mine", "other", "turn_count_at_most")
] + [_condition("always"), _condition("not"), _condition("broken", ok=False), _condition("")]
TARGETS = [_target(n) for n in ("random_agent", "pick")] + [
    _target("stay"),
    _target("broken", ok=False),
]


def _extra(registry: TransitionRegistry) -> None:
    """A second deferrable registration (a plugin's, say)."""
    registry.register_condition(CONDITIONS[2])
    registry.register_target(TARGETS[1])


ops = st.lists(
    st.one_of(
        st.tuples(st.just("condition"), st.sampled_from(range(len(CONDITIONS)))),
        st.tuples(st.just("target"), st.sampled_from(range(len(TARGETS)))),
        st.tuples(
            st.just("read"),
            st.sampled_from(
                ["text_contains", "mine", "random_agent", "pick", "always", "stay", "nope"]
            ),
        ),
        st.tuples(st.just("names"), st.just(0)),
        st.tuples(st.just("copy"), st.just(0)),
        st.tuples(st.just("defer"), st.sampled_from([0, 1])),
        st.tuples(st.just("settle"), st.just(0)),
    ),
    max_size=12,
)


def _apply(registry: TransitionRegistry, op: tuple[str, Any], lazy: bool) -> Any:
    kind, arg = op
    try:
        if kind == "condition":
            registry.register_condition(CONDITIONS[arg])
        elif kind == "target":
            registry.register_target(TARGETS[arg])
        elif kind == "read":
            return (registry.condition(arg), registry.target(arg))
        elif kind == "names":
            return (registry.condition_names, registry.target_names)
        elif kind == "copy":
            other = registry.copy()
            return (
                other.condition_names,
                other.target_names,
                [other.condition(n) for n in other.condition_names],
            )
        elif kind == "defer":
            register = register_vocabulary if arg == 0 else _extra
            if lazy:
                registry.defer(register)
            else:
                register(registry)
        elif kind == "settle":
            registry.settle()
        return None
    except (TypeError, ValueError) as err:
        return (type(err), str(err))


def _whole(registry: TransitionRegistry) -> Any:
    return (
        registry.condition_names,
        registry.target_names,
        [registry.condition(n) for n in registry.condition_names],
        [registry.target(n) for n in registry.target_names],
    )


@settings(max_examples=400)
@given(st.booleans(), ops)
def test_a_deferred_registration_reads_as_one_made_at_once(
    first: bool, steps: list[tuple[str, Any]]
) -> None:
    lazy, eager = TransitionRegistry(), TransitionRegistry()
    if first:  # as flowc.runtime does on the default registry, before anything else
        steps = [("defer", 0), *steps]
    for step in steps:
        assert _apply(lazy, step, lazy=True) == _apply(eager, step, lazy=False), step
    assert _whole(lazy) == _whole(eager)


# ── the same flow, with and without the vocabulary's module imported first ────────────

FLOW = """flow vocab
speaker a: human
speaker b: human
speaker c: human
start a
max_turns 8
condition text_matches(pattern: string)
condition text_contains(text: string)
condition turn_count_at_most(`turns`: int)
when from a and text_matches(pattern = "(?i)^go\\\\b") then b
when from a and text_contains(text = "see") then c
when from b and turn_count_at_most(`turns` = 4) then a
when from b then c
when from c then a
"""
BAD = FLOW.replace('"(?i)^go\\\\b"', '"\\\\d+(?=px)"')
SCRIPT = (
    '{"kickoff": "go on", "script": {"a": ["see c", "GO", "go!", "x"], '
    '"b": ["1", "2", "3"], "c": ["back", "again", "more"]}}'
)
MAIN = """
import sys
if sys.argv[1] == "first":
    import flowc.runtime.vocabulary  # the lazy module, imported before the command
from flowc.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _command(tmp_path: Path, first: str, args: list[str]) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-c", MAIN, first, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    runs = re.compile(r"wf-[0-9a-f]+")  # a run's random id
    return done.returncode, runs.sub("wf-?", done.stdout), runs.sub("wf-?", done.stderr)


def test_a_flow_using_the_vocabulary_checks_and_runs_the_same_either_way(tmp_path: Path) -> None:
    (tmp_path / "vocab.flow").write_text(FLOW)
    (tmp_path / "bad.flow").write_text(BAD)
    (tmp_path / "s.json").write_text(SCRIPT)
    commands = [
        ["check", "vocab.flow"],
        ["check", "bad.flow"],
        ["run", "vocab.flow", "--script", "s.json", "--db", ":memory:"],
        ["run", "vocab.flow", "--script", "s.json", "--db", ":memory:", "--json"],
        ["run", "bad.flow", "--script", "s.json", "--db", ":memory:"],
        ["compile", "vocab.flow"],
    ]
    for args in commands:
        lazily = _command(tmp_path, "lazily", args)
        assert lazily == _command(tmp_path, "first", args), args
        assert "Traceback" not in lazily[2], lazily
    code, out, _ = _command(tmp_path, "lazily", commands[2])
    assert code == 0 and all(f"(rule {i}," in out for i in range(1, 6)), out
    code, out, err = _command(tmp_path, "lazily", commands[1])
    assert code == 1 and "E114" in out + err, out + err
