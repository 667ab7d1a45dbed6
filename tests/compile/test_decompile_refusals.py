"""`flowc decompile` refusing what no `.flow` can write: each refusal once, at the place
that holds it (a JSON path in the graph, or the option that gave the name)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _score_graph() -> dict[str, Any]:
    """Three rules calling the custom condition `score`, the second with one more argument."""

    def rule(target: str, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "priority": 0,
            "then": {"name": "agent", "args": {"agent_id": target}},
            "when": {"name": "score", "args": args},
        }

    return {
        "initial_speaker": "a",
        "max_turns": None,
        "default_target": {"name": "terminate", "args": {"reason": "after_work"}},
        "transitions": [
            rule("b", {"min": 1}),
            rule("a", {"min": 1, "x": "s"}),
            rule("a", {"min": 2}),
        ],
    }


@pytest.mark.parametrize("knobs", [False, True], ids=["graph", "knobs"])
def test_custom_calls_that_disagree_on_arguments_are_one_finding_at_a_path(
    knobs: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = _score_graph()
    root = "graph." if knobs else ""
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"graph": graph, "context_vars": {}} if knobs else graph))
    assert main(["decompile", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"error[E108]: {root}transitions[1].when: the custom condition `score` is called here "
        f"with the arguments (`min`, `x`), at {root}transitions[0].when with (`min`): a .flow "
        "declares one parameter list for it and passes every parameter on each call (a "
        "default included), so none compiles to both calls\n"
        f" --> {path}:{root}transitions[1].when\n\n"
    )


@pytest.mark.parametrize(
    ("option", "value"),
    [("--participants", "x`y,user"), ("--initiator", "x`y"), ("--name", "x`y")],
)
def test_a_name_from_an_option_is_refused_by_the_option(
    option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = tmp_path / "g.json"
    assert main(["compile", str(ROOT / "examples" / "feedback_loop.flow"), "-o", str(graph)]) == 0
    capsys.readouterr()
    assert main(["decompile", str(graph), option, value]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert (
        err == f'error[E108]: {option}: "x`y" cannot be written as a .flow name\n --> {graph}\n\n'
    )
