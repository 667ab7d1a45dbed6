"""Portability to a bare AG2 1.2.1: `flowc compile` says what AG2 must register, and
`--target ag2` refuses, with the source span, every construct a bare registry cannot load.

"Bare" is AG2's own ``TransitionRegistry()``, fresh: its built-ins and nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ag2.network import TransitionGraph, TransitionRegistry
from ag2.network.transitions import WorkflowGraphError

import flowc
from flowc.ag2 import register_composites
from flowc.cli import main
from flowc.compiler.portability import COMPOSITES, bare_ag2_problems, needs_registration

ROOT = Path(__file__).resolve().parents[2]
FLOWS = sorted(
    [*(ROOT / "tests" / "cases" / "compile").glob("*.flow"), *(ROOT / "examples").glob("*.flow")]
)

EXTRA = {
    "and": "speakers u: human, b\nwhen from u and context.k == 1 then b\n",
    "not-equal": "speakers u: human, b\nwhen context.k != 1 then b\n",
    "not": "speakers u: human, b\nwhen not from b then b\n",
    "nested or": "speakers u: human, b\nwhen from u and (context.k == 1 or context.k == 2) then b\n",
    "nested from list": "speakers u: human, b, c\nwhen context.k == 1 and from u, b then c\n",
    "top-level or": "speakers u: human, b\nwhen from u or context.k == 1 then b\n",
    "top-level from list": "speakers u: human, b, c\nwhen from u, b then c\n",
    "custom condition": "speakers u: human, b\ncondition urgent(level: int)\n"
    "when urgent(level = 2) then b\n",
    "custom target": "speakers u: human, b\ntarget pick()\nwhen from u then pick()\n",
    "custom otherwise": "speakers u: human, b\ntarget pick()\nwhen from u then b\notherwise pick()\n",
    "built-ins only": "speakers u: human, b\nstart u\nmax_turns 4\ncontext k = 1\n"
    'when context.k == 1 and from b then terminate "x"\n',
}


def bare_loads(graph: dict[str, Any], registry: TransitionRegistry | None = None) -> bool:
    """Whether AG2 loads ``graph`` (a fresh registry: bare); a bare load round-trips."""
    try:
        loaded = TransitionGraph.loads(graph, registry=registry or TransitionRegistry())
    except WorkflowGraphError:
        return False
    if registry is None:
        assert loaded.to_dict() == graph
    return True


def sources() -> list[tuple[str, str]]:
    out = [(p.name, p.read_text(encoding="utf-8")) for p in FLOWS]
    return [*out, *EXTRA.items()]


@pytest.mark.parametrize(("name", "text"), sources(), ids=[n for n, _ in sources()])
def test_target_ag2_accepts_exactly_what_a_bare_registry_loads(name: str, text: str) -> None:
    try:
        compiled = flowc.compile_flow(text, filename=name)
    except flowc.FlowError:
        pytest.skip("not a compiling flow")
    problems = bare_ag2_problems(compiled, name)
    names = needs_registration(compiled)
    assert bare_loads(compiled.graph_dict) == (not problems) == (not names), (name, names)
    for d in problems:
        assert d.code.id == "E112" and d.span is not None and d.span.line >= 1
    if names:
        # registering exactly what the note names is enough
        registry = TransitionRegistry()
        if set(names) & COMPOSITES:
            register_composites(registry)
        for custom in set(names) - COMPOSITES:
            registry.register_condition(
                type(custom, (), {"name": custom, "evaluate": _never, "__init__": _any_args})
            )
            registry.register_target(
                type(custom, (), {"name": custom, "resolve": _never, "__init__": _any_args})
            )
        assert bare_loads(compiled.graph_dict, registry)


def _never(self: Any, state: Any, envelope: Any) -> Any:  # pragma: no cover - never called
    raise AssertionError


def _any_args(self: Any, **kwargs: Any) -> None:
    pass


def test_each_construct_is_refused_at_its_span() -> None:
    spans = {
        "and": [(2, 6, "`and` compiles to `all_of`")],
        "not-equal": [(2, 6, "`!=` compiles to `not` of `context_equals`")],
        "not": [(2, 6, "`not` compiles to flowc's `not`")],
        "nested or": [(2, 6, "`and`"), (2, 18, "`or` inside a condition compiles to `any_of`")],
        "nested from list": [(2, 6, "`and`"), (2, 25, "`from` with several speakers")],
        "custom condition": [(3, 6, "custom condition `urgent`")],
        "custom target": [(3, 18, "custom target `pick`")],
        "custom otherwise": [(4, 11, "custom target `pick`")],
        "top-level or": [],
        "top-level from list": [],
        "built-ins only": [(5, 6, "`and`")],
    }
    for name, expected in spans.items():
        compiled = flowc.compile_flow(EXTRA[name])
        got = [
            (d.span.line, d.span.column, d.message)
            for d in bare_ag2_problems(compiled)
            if d.span is not None
        ]
        assert len(got) == len(expected), (name, got)
        for (line, col, message), (wl, wc, wm) in zip(got, expected, strict=True):
            assert (line, col) == (wl, wc) and message.startswith(wm), (name, got)


def test_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f.flow"
    path.write_text(EXTRA["and"])
    assert main(["compile", str(path)]) == 0
    out = capsys.readouterr()
    knobs = json.loads(out.out)
    assert not bare_loads(knobs["graph"])  # what the note warns about
    assert "note: bare AG2 cannot load this graph until these are registered" in out.err
    assert "all_of (flowc.ag2.register_composites()" in out.err
    assert main(["compile", str(path), "--target", "ag2"]) == 1
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("error[E112]") == 1 and f"{path}:2:6" in out.err
    # portable: no note, same output with or without the option, and bare AG2 loads it
    path.write_text(EXTRA["top-level or"])
    assert main(["compile", str(path), "--target", "ag2"]) == 0
    out = capsys.readouterr()
    assert out.err == "" and bare_loads(json.loads(out.out)["graph"])
    # check says the same under --target ag2
    path.write_text(EXTRA["not"])
    assert main(["check", str(path), "--target", "ag2", "--format", "concise"]) == 1
    assert f"{path.name}:2:6: E112" in capsys.readouterr().out.replace(str(tmp_path) + "/", "")


def test_check_target_ag2_on_a_json_graph_names_the_paths(tmp_path: Path) -> None:
    from flowc.compiler.analysis import CheckOptions, check_source
    from flowc.source import SourceFile

    graph = flowc.compile_flow(EXTRA["nested or"]).graph_dict
    text = json.dumps(graph)
    found = check_source(SourceFile("g.json", text), CheckOptions(target="ag2"))
    assert sorted(d.json_path or "" for d in found if d.code.id == "E112") == [
        "transitions[0].when.args.conditions[1].name",
        "transitions[0].when.name",
    ]
    assert not [d for d in check_source(SourceFile("g.json", text)) if d.code.id == "E112"]
    knobs = json.dumps({"graph": graph, "context_vars": {}})
    found = check_source(SourceFile("k.json", knobs), CheckOptions(target="ag2"))
    assert "graph.transitions[0].when.name" in [d.json_path for d in found]
