"""Every command that reads a JSON graph refuses what ``flowc check`` refuses, with the
same finding: a graph whose custom condition or target loads nothing (E103), which
``render`` drew."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.diagnostics import FlowError

TERMINATE = {"name": "terminate", "args": {"reason": "after_work"}}


def _graph(transitions: list[dict[str, object]], default: dict[str, object] = TERMINATE) -> str:
    return json.dumps(
        {
            "initial_speaker": "user",
            "transitions": transitions,
            "default_target": default,
            "max_turns": 6,
        }
    )


def _rule(when: dict[str, object], then: dict[str, object]) -> dict[str, object]:
    return {"when": when, "then": then, "priority": 0}


FROM_USER = {"name": "from_speaker", "args": {"agent_id": "user"}}
TO_BOT = {"name": "agent", "args": {"agent_id": "bot"}}
TWO = [
    _rule(FROM_USER, TO_BOT),
    _rule({"name": "from_speaker", "args": {"agent_id": "bot"}}, TERMINATE),
]

REFUSED = {
    "in knobs": (
        json.dumps(
            {
                "graph": json.loads(_graph([_rule({"name": "nope", "args": {}}, TERMINATE), *TWO])),
                "context_vars": {},
            }
        ),
        "E103",
        "graph.transitions[0].when.name",
    ),
    "a pattern flowc cannot match, in knobs": (
        json.dumps(
            {
                "graph": json.loads(
                    _graph(
                        [
                            _rule(
                                {"name": "text_matches", "args": {"pattern": "(?<=a)b"}},
                                TERMINATE,
                            ),
                            *TWO,
                        ]
                    )
                ),
                "context_vars": {},
            }
        ),
        "E114",
        "graph.transitions[0].when.args.pattern",
    ),
    "unknown condition": (
        _graph([_rule({"name": "no_such_cond", "args": {}}, TERMINATE), *TWO]),
        "E103",
        "transitions[0].when.name",
    ),
    "unknown target": (
        _graph([_rule(FROM_USER, {"name": "no_such_target", "args": {}}), *TWO]),
        "E103",
        "transitions[0].then.name",
    ),
    "unknown default": (
        _graph(TWO, {"name": "no_such_target", "args": {}}),
        "E103",
        "default_target.name",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_every_command_refuses_what_check_refuses(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, code, path = REFUSED[name]
    graph = tmp_path / "g.json"
    graph.write_text(text)
    script = tmp_path / "s.json"
    script.write_text('{"kickoff": "hi", "script": {}}')
    commands = {
        "check": ["check", str(graph)],
        "render": ["render", "-f", "dot", "-o", str(tmp_path / "g.dot"), str(graph)],
        "render --check": [
            "render",
            "--check",
            "-f",
            "dot",
            "-o",
            str(tmp_path / "c.dot"),
            str(graph),
        ],
        "test": ["test", str(graph)],
        "run": ["run", str(graph), "--script", str(script), "--db", str(tmp_path / "r.sqlite")],
        "diff": ["diff", str(graph), str(graph)],
        "submit": ["submit", str(graph), "--script", str(script), "--db", str(tmp_path / "q.db")],
    }
    for command, argv in commands.items():
        status = main(argv)
        err = "".join(capsys.readouterr())  # (`check` reports on stdout)
        assert status in (1, 2), (command, status, err)
        if command in ("run", "submit") and code == "E103":
            # (`run` looks custom names up once its agents file and plugins are loaded,
            # and says so as it says a script's errors: the same path, the same words)
            assert f"g.json: error: {path}: no " in err, err
            continue
        assert f"error[{code}]" in err, (command, err)
        assert f"g.json:{path}" in err, (command, err)
    assert not (tmp_path / "g.dot").exists() and not (tmp_path / "c.dot").exists()
    # refused before the database is opened: E114 as the graph is read, E103 once the
    # run's plugins are loaded (no empty database file is left behind)
    assert not (tmp_path / "r.sqlite").exists() and not (tmp_path / "q.db").exists()


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_render_api_refuses_it_too(name: str, tmp_path: Path) -> None:
    import flowc

    text, code, _ = REFUSED[name]
    with pytest.raises(FlowError) as caught:
        flowc.render(json.loads(text))
    assert code in str(caught.value)
    graph = tmp_path / "g.json"
    graph.write_text(text)
    with pytest.raises(FlowError):
        flowc.render(graph)


def test_a_graph_of_two_agents_is_read_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(_graph(TWO))
    assert main(["check", str(graph)]) == 0
    assert main(["render", "-f", "dot", "-o", str(tmp_path / "g.dot"), str(graph)]) == 0
    assert main(["test", str(graph)]) == 0
    assert main(["diff", str(graph), str(graph)]) == 0
    capsys.readouterr()
