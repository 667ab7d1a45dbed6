"""A graph's conditions nested deep: every command that reads the graph takes the same
depths and refuses the same ones, at the same JSON path, with no traceback.

The fast reader leaves conditions nested deeper than 32 levels to the converter, which
refuses more than 128 levels itself. Before, the converter gave up wherever Python's
recursion limit fell in the command reading the graph: `flowc check` took 193 `not`s and
`flowc run` refused them, each naming another depth.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.compiler import serde
from flowc.compiler.shapes import MAX_CONDITION_DEPTH
from flowc.inputs import MAX_DEPTH
from tests.hostile.limits import Limited, run_limited

LIMITS = {"memory_mib": 512, "cpu_seconds": 30, "wall_seconds": 60.0, "output_mib": 8}
COMMANDS = ("check", "run", "decompile", "render")


def nots(n: int) -> str:
    """A graph whose one rule is ``not`` n times over ``from a`` (n + 1 conditions)."""
    leaf = '{"name": "from_speaker", "args": {"agent_id": "a"}}'
    cond = '{"name": "not", "args": {"condition": ' * n + leaf + "}}" * n
    return (
        '{"initial_speaker": "a", "transitions": [{"when": '
        + cond
        + ', "then": {"name": "agent", "args": {"agent_id": "b"}}, "priority": 0}], '
        '"default_target": {"name": "terminate", "args": {"reason": "x"}}, "max_turns": 3}'
    )


def run(command: str, graph: Path) -> Limited:
    args = [command, str(graph)]
    if command == "run":
        script = graph.parent / "s.json"
        script.write_text('{"kickoff": "hi", "script": {"a": ["x"], "b": ["y"]}}')
        args += ["--script", str(script), "--db", ":memory:"]
    return run_limited(args, cwd=graph.parent, **LIMITS)


def first_line(result: Limited) -> str:
    return (result.stdout + result.stderr).splitlines()[0]


def test_the_deepest_graph_taken_reads_in_every_command(tmp_path: Path) -> None:
    graph = tmp_path / "deep.json"
    graph.write_text(nots(MAX_CONDITION_DEPTH - 1))
    for command in COMMANDS:
        result = run(command, graph)
        out = result.stdout + result.stderr
        assert not result.timed_out and not result.traceback, (command, out[-2000:])
        if command == "decompile":  # read, but a flow nests conditions at most 100 deep
            assert result.returncode == 1, out[-2000:]
            assert first_line(result) == (
                "error[E108]: the graph has no .flow spelling: "
                "condition nested more than 100 levels deep"
            ), out
        else:
            assert result.returncode == 0 and "nested" not in out, (command, out[-2000:])


@pytest.mark.parametrize("depth", [MAX_CONDITION_DEPTH, 193, 10_000])
def test_a_graph_nested_too_deep_is_refused_alike_in_every_command(
    tmp_path: Path, depth: int
) -> None:
    graph = tmp_path / "deep.json"
    graph.write_text(nots(depth))
    lines = set()
    for command in COMMANDS:
        result = run(command, graph)
        out = result.stdout + result.stderr
        assert not result.timed_out and not result.traceback, (command, out[-2000:])
        assert result.returncode == 1, (command, out[-2000:])
        lines.add(first_line(result))
    assert len(lines) == 1, lines  # the same words and the same path in each
    (line,) = lines
    if depth < 250:  # read by the converter, refused at its fixed depth
        path = "transitions[0].when" + ".args.condition" * MAX_CONDITION_DEPTH
        assert line == (
            f"error[E108]: {path}: nested too deeply: conditions nest at most "
            f"{MAX_CONDITION_DEPTH} levels"
        ), line
    else:  # past the JSON reader's own limit
        assert line.startswith("error[E001]: nested more than 500 levels deep"), line


def test_the_depth_limit_is_the_same_from_any_stack_depth() -> None:
    """Read from deep inside a call stack, the graph is still taken or refused as at the
    top (only a caller already near Python's recursion limit meets RecursionError)."""
    taken = json.loads(nots(MAX_CONDITION_DEPTH - 1))
    refused = json.loads(nots(MAX_CONDITION_DEPTH))

    def at_depth(n: int, data: object) -> object:
        if n:
            return at_depth(n - 1, data)
        try:
            return serde.structure_graph(data)
        except serde.ShapeError as err:
            return [str(p) for p in err.problems]

    for n in (0, 50, 150):
        assert not isinstance(at_depth(n, taken), list)
        problems = at_depth(n, refused)
        assert isinstance(problems, list) and len(problems) == 1
        assert problems[0].endswith("nested too deeply: conditions nest at most 128 levels")


def deep_value(n: int) -> str:
    """A graph whose one rule compares ``context.k`` with ``1`` in n lists."""
    value = "[" * n + "1" + "]" * n
    return (
        '{"initial_speaker": "a", "transitions": [{"when": {"name": "context_equals", '
        f'"args": {{"key": "k", "value": {value}}}}}, '
        '"then": {"name": "agent", "args": {"agent_id": "b"}}, "priority": 0}], '
        '"default_target": {"name": "terminate", "args": {"reason": "x"}}, "max_turns": 3}'
    )


def test_a_value_as_deep_as_a_graph_takes_runs_and_is_read_back(tmp_path: Path) -> None:
    """The deepest value a graph's reader takes (the graph nests 500 levels: the value's
    495 lists and the five around them) is run, its run stored (a run's opening holds
    the graph), logged and replayed. Before, `check` took it and `run` stopped with an
    internal error (RecursionError: the value was copied two Python frames a level)."""
    graph = tmp_path / "deep.json"
    graph.write_text(deep_value(MAX_DEPTH - 5))
    (tmp_path / "s.json").write_text('{"kickoff": "hi", "script": {"b": ["y"]}}')
    steps = {
        "check": ["check", "deep.json"],
        "render": ["render", "deep.json"],
        "run": ["run", "deep.json", "--script", "s.json", "--db", "r.db", "--json"],
        "log": ["log", "last", "--db", "r.db", "--json"],
        "replay": ["replay", "last", "--db", "r.db"],
    }
    for name, args in steps.items():
        result = run_limited(args, cwd=tmp_path, **LIMITS)
        out = result.stdout + result.stderr
        assert not result.timed_out and not result.traceback, (name, out[-2000:])
        assert result.returncode == 0 and "nested" not in out, (name, out[-2000:])
        if name in ("run", "log"):
            assert json.loads(result.stdout)["close_reason"] == "x", (name, out[-2000:])
    graph.write_text(deep_value(MAX_DEPTH - 4))
    refused = run_limited(["check", "deep.json"], cwd=tmp_path, **LIMITS)
    assert first_line(refused).startswith(
        f"error[E001]: nested more than {MAX_DEPTH} levels deep"
    ), refused.stdout
