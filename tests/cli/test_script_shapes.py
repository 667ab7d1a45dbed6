"""A script of the wrong shape names its place, whatever the wrong value is: a falsy one
(``[]``, ``0``, ``false``, ``""``) is not read as none; and a bare graph's script that
names a participant twice is the script's mistake, named at its key, not the graph's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.runtime.script import ScriptError, parse_script
from tests.cli.cli_runs import flowc

FLOW = """speaker user: human
speaker bot {
  tool go
}
start user
max_turns 4
when from user then bot
when from bot then terminate "done"
"""

GRAPH = {
    "initial_speaker": "user",
    "max_turns": 4,
    "transitions": [
        {
            "when": {"name": "from_speaker", "args": {"agent_id": "user"}},
            "then": {"name": "agent", "args": {"agent_id": "bot"}},
            "priority": 0,
        }
    ],
    "default_target": {"name": "terminate", "args": {"reason": "done"}},
}

#: a script -> the refusal
WRONG: list[tuple[object, str]] = [
    (
        {"kickoff": "hi", "script": []},
        "script: expected an object mapping speakers to lists of turns, got a list",
    ),
    (
        {"kickoff": "hi", "script": 0},
        "script: expected an object mapping speakers to lists of turns, got a number",
    ),
    (
        {"kickoff": "hi", "script": False},
        "script: expected an object mapping speakers to lists of turns, got a boolean",
    ),
    (
        {"kickoff": "hi", "script": ""},
        "script: expected an object mapping speakers to lists of turns, got a string",
    ),
    (
        {"script": {"bot": [{"tool": "go", "set": []}]}},
        "script.bot[0].set: expected an object of context keys, got a list",
    ),
    (
        {"script": {"bot": [{"tool": "go", "args": 0}]}},
        "script.bot[0].args: expected an object, got a number",
    ),
    (
        {"script": {"bot": [{"tool": "go", "args": ""}]}},
        "script.bot[0].args: expected an object, got a string",
    ),
    (
        {"script": {"bot": [{"tool": "go", "delete": 0}]}},
        "script.bot[0].delete: expected a key or a list of keys, got a number",
    ),
    (
        {"script": {"bot": [{"tool": "go", "delete": False}]}},
        "script.bot[0].delete: expected a key or a list of keys, got a boolean",
    ),
    (
        {"participants": ["user", "bot", "user"]},
        "participants[2]: `user` is already given at participants[0]; name each once",
    ),
    (
        {"participants": ["user", "bot"], "humans": ["user", "user"]},
        "humans[1]: `user` is already given at humans[0]; name each once",
    ),
]


@pytest.mark.parametrize(("data", "said"), WRONG)
def test_a_script_of_the_wrong_shape_names_its_place(data: object, said: str) -> None:
    with pytest.raises(ScriptError) as caught:
        parse_script(data)
    assert str(caught.value) == said


def test_absent_or_null_is_none() -> None:
    script = parse_script({"kickoff": "hi", "script": None})
    assert script.turns == {}
    [call] = (
        parse_script({"script": {"bot": [{"tool": "go", "args": None, "set": None}]}})
        .turns["bot"][0]
        .calls
    )
    assert (call.args, call.set, call.delete) == ({}, {}, ())


def test_run_refuses_an_empty_list_for_a_script(tmp_path: Path) -> None:
    (tmp_path / "a.flow").write_text(FLOW)
    (tmp_path / "s.yaml").write_text("{kickoff: hi, script: []}\n")
    run = flowc(tmp_path, "run", "a.flow", "--script", "s.yaml", "--db", "r.db")
    assert run.returncode == 1
    assert run.stderr == (
        "s.yaml: error: script: expected an object mapping speakers to lists of turns, got a list\n"
    )
    assert not (tmp_path / "r.db").exists()


def test_a_participant_named_twice_is_the_scripts_mistake(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps(GRAPH))
    (tmp_path / "j3.json").write_text(
        json.dumps(
            {"kickoff": "hi", "participants": ["user", "bot", "user"], "script": {"bot": ["b1"]}}
        )
    )
    run = flowc(tmp_path, "run", "c.json", "--script", "j3.json", "--db", ":memory:")
    assert run.returncode == 1
    assert run.stderr == (
        "j3.json: error: participants[2]: `user` is already given at participants[0]; "
        "name each once\n"
    )
