"""`flowc decompile` reads every graph `check`, `compile` and `run` read: a composite
`.flow` cannot write as the graph does (an empty or one-item `all_of` / `any_of`, a rule
whose whole condition is an `any_of`) is written as what it means, and the `.flow`
compiles to a graph that routes every run alike and draws the same findings."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from flowc import compile_flow, decompile
from flowc.cli import main
from flowc.compiler.decompile import meaning
from flowc.compiler.serde import structure_graph


def _from(agent: str) -> dict[str, Any]:
    return {"name": "from_speaker", "args": {"agent_id": agent}}


def _all(*conds: dict[str, Any]) -> dict[str, Any]:
    return {"name": "all_of", "args": {"conditions": list(conds)}}


def _any(*conds: dict[str, Any]) -> dict[str, Any]:
    return {"name": "any_of", "args": {"conditions": list(conds)}}


TOOL = {"name": "tool_called", "args": {"tool_name": "t"}}


def _graph(*whens: dict[str, Any], priority: int = 0) -> dict[str, Any]:
    return {
        "initial_speaker": "a",
        "transitions": [
            {"when": w, "then": {"name": "agent", "args": {"agent_id": "b"}}, "priority": priority}
            for w in whens
        ]
        + [
            {
                "when": _from("b"),
                "then": {"name": "agent", "args": {"agent_id": "a"}},
                "priority": 0,
            }
        ],
        "default_target": {"name": "terminate", "args": {"reason": "after_work"}},
        "max_turns": 6,
    }


CASES = {
    "one-item all_of": _graph(_all(_from("a"))),
    "empty all_of": _graph(_all()),
    "empty any_of": _graph(_any()),
    "top-level any_of": _graph(_any(_from("a"), TOOL)),
    "top-level any_of of senders": _graph(_any(_from("a"), _from("b"))),
    "top-level one-item any_of": _graph(_any(TOOL), priority=-2),
    "nested top-level any_of": _graph(_any(_any(_from("a"), TOOL), _all())),
    "nested empty any_of": _graph(_all(_from("a"), _any())),
    "nested one-item any_of": _graph(_all(TOOL, _any(_from("a")))),
    "not an empty all_of": _graph({"name": "not", "args": {"condition": _all()}}),
    "one-item all_of of a top-level any_of": _graph(_all(_any(_from("a"), TOOL))),
}


def _findings(path: Path, capsys: pytest.CaptureFixture[str]) -> list[tuple[str, str]]:
    main(["check", "--format", "json", str(path)])
    return [(f["code"], f["severity"]) for f in json.loads(capsys.readouterr().out)]


@pytest.mark.parametrize("graph", CASES.values(), ids=CASES.keys())
def test_a_composite_the_other_commands_read_is_decompiled_to_what_it_means(
    graph: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = tmp_path / "g.json"
    original.write_text(json.dumps(graph))
    flow = tmp_path / "g.flow"
    assert main(["decompile", str(original), "-o", str(flow)]) == 0
    assert capsys.readouterr().err == ""
    back = tmp_path / "back.json"
    assert main(["compile", str(flow), "-o", str(back)]) == 0
    capsys.readouterr()
    compiled = json.loads(back.read_text())["graph"]
    assert meaning(structure_graph(compiled)) == meaning(structure_graph(graph))
    assert _findings(back, capsys) == _findings(original, capsys)


def test_decompiled_composites_keep_their_meaning_on_random_graphs() -> None:
    rng = random.Random(7)
    leaves = [_from("a"), _from("b"), TOOL, {"name": "always", "args": {}}]

    def cond(depth: int) -> dict[str, Any]:
        pick = rng.randrange(5 if depth < 3 else 1)
        if pick == 0:
            return rng.choice(leaves)
        if pick == 1:
            return {"name": "not", "args": {"condition": cond(depth + 1)}}
        items = [cond(depth + 1) for _ in range(rng.randrange(4))]
        return _all(*items) if pick in (2, 3) else _any(*items)

    for _ in range(60):
        graph = _graph(*(cond(0) for _ in range(rng.randrange(1, 4))))
        compiled = compile_flow(decompile(graph)).graph_dict
        assert meaning(structure_graph(compiled)) == meaning(structure_graph(graph))


def test_an_empty_context_key_is_refused_at_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"graph": _graph(_from("a")), "context_vars": {"": 1}}))
    assert main(["check", str(path)]) == 0  # a graph the other commands read...
    capsys.readouterr()
    assert main(["decompile", str(path)]) == 1  # ...that no .flow can write
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        'error[E108]: context_vars[""]: "" cannot be written as a .flow name\n'
        f' --> {path}:context_vars[""]\n\n'
    )
