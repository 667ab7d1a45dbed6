"""Hostile data formats (issue 11, point 3), each command run under resource limits.

YAML aliases that amplify, values nested 100,000 levels deep, integers past Python's
4,300-digit limit, numbers that are not finite and run scripts that are not UTF-8: every
one ends quickly, in little memory, with a clean error naming the file and the place.
Before the fix they hung until killed, filled the disk, or ended in a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.limits import Limited, run_limited

ROOT = Path(__file__).resolve().parents[2]
FLOW = str(ROOT / "examples" / "feedback_loop.flow")
DEEP = 100_000
BIG = "9" * 5000

# limits every case runs under: a Python process needs ~60 MiB of address space to start
LIMITS = {"memory_mib": 512, "cpu_seconds": 30, "wall_seconds": 60.0, "output_mib": 8}


def _clean(result: Limited, *needles: str, code: int = 1) -> str:
    """The command ended by itself, refused the input with ``code`` and no traceback,
    and its messages hold every needle; returns stdout + stderr."""
    out = result.stdout + result.stderr
    assert not result.timed_out, f"timed out after {result.seconds:.0f}s"
    assert not result.traceback, out[-3000:]
    assert result.returncode == code, out[-3000:]
    for needle in needles:
        assert needle in out, out[-3000:]
    return out


def _alias_bomb() -> str:
    """516 bytes that expand to ~115 MB: nine aliases per level, seven levels."""
    lines = [
        "kickoff: hi",
        "script:",
        '  drafter: ["d"]',
        "  reviewer:",
        "    - say: x",
        "      tool: approve",
        "      set:",
        '        a0: &a0 ["lollollollollollollollol"]',
    ]
    for i in range(1, 8):
        lines.append(f"        a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_yaml_alias_amplification_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "bomb.yaml"
    script.write_text(_alias_bomb())
    db = tmp_path / "runs.db"
    result = run_limited(["run", FLOW, "--script", str(script), "--db", str(db)], **LIMITS)
    out = _clean(
        result,
        f"{script}:13:",
        "aliases expand the document past 1.0 MiB",
        "script.reviewer[0].set.a5",
    )
    assert "Task exception" not in out
    # nothing was run, so nothing was written
    assert not db.exists() or db.stat().st_size < 1024 * 1024


def test_yaml_alias_cycle_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "cycle.yaml"
    script.write_text("kickoff: hi\ncontext_vars:\n  k: &a [*a]\n")
    result = run_limited(
        ["run", FLOW, "--script", str(script), "--db", str(tmp_path / "r.db")], **LIMITS
    )
    _clean(
        result,
        f"{script}:3:",
        "the alias *a refers to a value that holds it (a cycle)",
        "context_vars.k[0]",
    )


def test_yaml_aliases_within_the_budget_still_work(tmp_path: Path) -> None:
    script = tmp_path / "ok.yaml"
    script.write_text(
        "kickoff: hi\n"
        "script:\n"
        '  drafter: &draft ["a draft"]\n'
        "  reviewer:\n"
        "    - tool: approve\n"
        "      args: {when: 2024-05-01, notes: &n [1, 2], again: *n}\n"
        "      say: ok\n"
    )
    result = run_limited(
        ["run", FLOW, "--script", str(script), "--db", str(tmp_path / "r.db"), "--json"], **LIMITS
    )
    _clean(result, code=0)
    [call] = json.loads(result.stdout)["turns"][-1]["tool_calls"]
    # a timestamp stays the text it was: a script holds JSON data only
    assert call["args"]["when"] == "2024-05-01" and call["args"]["again"] == [1, 2]


@pytest.mark.parametrize(
    "text, message",
    [
        ("k: !!binary aGVsbG8=", "tag:yaml.org,2002:binary (binary data) is not JSON data"),
        ("k: .inf", "a number must be finite (found .inf)"),
        ("k: " + BIG, "a number may have at most 4,300 digits"),
    ],
)
def test_yaml_values_json_cannot_hold_are_refused(tmp_path: Path, text: str, message: str) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(f"kickoff: hi\ncontext_vars:\n  {text}\n")
    result = run_limited(
        ["run", FLOW, "--script", str(script), "--db", str(tmp_path / "r.db")], **LIMITS
    )
    _clean(result, f"{script}:3:", message)


@pytest.mark.parametrize(
    "suffix, text",
    [
        (".json", '{"kickoff": "hi", "context_vars": {"k": ' + "[" * DEEP + "]" * DEEP + "}}"),
        (".yaml", "kickoff: hi\ncontext_vars:\n  k: " + "[" * DEEP + "]" * DEEP + "\n"),
    ],
)
def test_deep_script_is_refused_with_its_path(tmp_path: Path, suffix: str, text: str) -> None:
    script = tmp_path / f"deep{suffix}"
    script.write_text(text)
    result = run_limited(
        ["run", FLOW, "--script", str(script), "--db", str(tmp_path / "r.db")], **LIMITS
    )
    _clean(
        result,
        f"{script}:",
        "nested more than 100 levels deep",
        "(at context_vars.k[0][0][0][0][0][0]…(90 more)…[0][0])",
    )


DEEP_GRAPH = '{"initial_speaker": "a", "transitions": ' + "[" * DEEP + "]" * DEEP + "}"


@pytest.mark.parametrize("command", ["check", "render", "decompile", "run"])
def test_deep_json_graph_is_refused_with_its_path(tmp_path: Path, command: str) -> None:
    graph = tmp_path / "deep.json"
    graph.write_text(DEEP_GRAPH)
    args = [command, str(graph)]
    if command == "run":
        script = tmp_path / "s.json"
        script.write_text('{"kickoff": "hi"}')
        args += ["--script", str(script), "--db", str(tmp_path / "r.db")]
    result = run_limited(args, **LIMITS)
    _clean(
        result,
        "E001",
        "nested more than 500 levels deep",
        "(at transitions[0][0][0][0][0][0][0]…(490 more)…[0][0])",
        f"{graph}:1:",
    )


def test_graph_nested_as_deep_as_a_flow_allows_still_works(tmp_path: Path) -> None:
    """A flow's conditions nest 100 levels (3 JSON levels each), its values 100: the
    compiled graph must read back everywhere."""
    flow = tmp_path / "deep.flow"
    cond = "from a"
    for i in range(99):
        cond = f"({cond} {'and' if i % 2 else 'or'} from b)"
    value = "[" * 100 + "]" * 100
    flow.write_text(
        f"flow f\nspeaker a\nspeaker b\nstart a\nmax_turns 3\ncontext k = {value}\n"
        f"when {cond} then b\nwhen from b then a\n"
    )
    graph = tmp_path / "deep.json"
    result = run_limited(["compile", str(flow), "-o", str(graph)], **LIMITS)
    _clean(result, code=0)
    for command in ("check", "render", "decompile"):
        result = run_limited([command, str(graph)], **LIMITS)
        assert not result.traceback and "E001" not in result.stdout + result.stderr, command
        assert result.returncode == 0, (command, result.stderr[-2000:])


@pytest.mark.parametrize("command", ["compile", "check", "fmt", "render", "test"])
def test_huge_integer_in_a_flow_is_refused(tmp_path: Path, command: str) -> None:
    flow = tmp_path / "big.flow"
    flow.write_text(f"flow f\nspeaker a\nspeaker b\nstart a\nmax_turns {BIG}\nwhen from a then b\n")
    result = run_limited([command, str(flow)], **LIMITS)
    _clean(result, "E001", f"{flow}:5:11", "a number may have at most 4,300 digits; found 5,000")


@pytest.mark.parametrize("command", ["check", "decompile"])
def test_huge_integer_in_a_json_graph_is_refused(tmp_path: Path, command: str) -> None:
    graph = tmp_path / "big.json"
    graph.write_text(
        '{"initial_speaker": "a", "transitions": [], "default_target": '
        '{"name": "terminate", "args": {"reason": "x"}}, "max_turns": ' + BIG + "}"
    )
    result = run_limited([command, str(graph)], **LIMITS)
    _clean(
        result,
        "E001",
        f"{graph}:1:",
        "a number may have at most 4,300 digits (found 5,000)",
        "(at max_turns)",
    )


def test_huge_integer_in_a_json_script_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('{"kickoff": "hi", "context_vars": {"k": ' + BIG + "}}")
    result = run_limited(
        ["run", FLOW, "--script", str(script), "--db", str(tmp_path / "r.db")], **LIMITS
    )
    _clean(result, f"{script}:1:", "a number may have at most 4,300 digits", "(at context_vars.k)")


INFINITE = "flow f\nspeaker a\nspeaker b\nstart a\ncontext k = 1e400\nwhen from a then b\n"


@pytest.mark.parametrize("args", [["compile"], ["check"], ["fmt", "--fast"], ["fmt"]])
def test_a_number_that_is_not_finite_is_refused(tmp_path: Path, args: list[str]) -> None:
    """`1e400` compiled to `Infinity`, which is not JSON, and `fmt --fast` wrote it back."""
    result = run_limited([*args, "-"], stdin=INFINITE.encode(), **LIMITS)
    out = _clean(result, "E001", "<stdin>:5:13", "a number must be finite")
    assert "Infinity" not in out


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_json_graph_numbers_must_be_finite(tmp_path: Path, token: str) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(
        '{"graph": {"initial_speaker": "a", "transitions": [], "default_target": '
        '{"name": "terminate", "args": {"reason": "x"}}, "max_turns": 2}, '
        '"context_vars": {"k": ' + token + "}}"
    )
    result = run_limited(["check", str(graph)], **LIMITS)
    _clean(result, "E001", "must be finite", "(at context_vars.k)")


@pytest.mark.parametrize("suffix", [".yaml", ".json", ".txt"])
def test_script_that_is_not_utf8_is_refused(tmp_path: Path, suffix: str) -> None:
    script = tmp_path / f"latin1{suffix}"
    script.write_bytes('kickoff: "café"\n'.encode("latin-1"))
    result = run_limited(
        ["run", FLOW, "--script", str(script), "--db", str(tmp_path / "r.db")], **LIMITS
    )
    _clean(
        result,
        f'{script}:1:14: error: the file is not valid UTF-8 (byte 0xe9, in "kickoff: \\"caf\\xe9\\"")',
    )
