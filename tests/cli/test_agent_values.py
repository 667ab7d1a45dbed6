"""A value a run's records cannot hold, sent by an agent, is refused as the agent's
failure, naming the agent and the value's place: nothing of the turn is written, the run
stops open on that speaker (exit 1), never an internal error. Such values are: what JSON
cannot hold (a set in a context write or in a tool's args, which were once turned into
text), and numbers that are not finite (JSON has no ``NaN`` or ``Infinity``: written as
they were, ``--json`` and the view's streams were not JSON any more). Real ``flowc run``
processes, on SQLite files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from flowc.runtime.stored import MAX_NESTING
from tests.cli.cli_runs import flowc

FLOW = """speaker user: human
speaker triage {
  tool lookup
}
start user
max_turns 4
when from user then triage
when from triage then user
"""

GRAPH = {
    "initial_speaker": "user",
    "max_turns": 4,
    "transitions": [
        {
            "when": {"name": "from_speaker", "args": {"agent_id": "user"}},
            "then": {"name": "agent", "args": {"agent_id": "triage"}},
            "priority": 0,
        }
    ],
    "default_target": {"name": "terminate", "args": {"reason": "done"}},
}

#: the agent's tool call -> the refusal's place and words
CASES = {
    "a set in a context write": (
        'ToolCall("lookup", {}, set={"k": {1, 2}})',
        "event_data.context_updates.set.k: expected a JSON value (a string, number, "
        "boolean, null, list or object), got a set ({1, 2})",
    ),
    "a set in the args": (
        'ToolCall("lookup", {"q": {1, 2}})',
        "event_data.tool_calls[0].args.q: expected a JSON value (a string, number, "
        "boolean, null, list or object), got a set ({1, 2})",
    ),
    "NaN and infinity in the args": (
        'ToolCall("lookup", {"q": float("nan"), "r": float("inf")})',
        "event_data.tool_calls[0].args.q: expected a finite number, got nan",
    ),
    "infinity in a context write": (
        'ToolCall("lookup", {}, set={"k": [1, float("-inf")]})',
        "event_data.context_updates.set.k[1]: expected a finite number, got -inf",
    ),
    "a value nested deeper than a record holds": (
        # (a list in a list ... 600 deep: it took the run down as an internal error)
        'ToolCall("lookup", {"q": __import__("functools").reduce(lambda v, _: [v], range(600), [])})',
        "event_data.tool_calls[0].args.q"
        + "[0]" * (MAX_NESTING - 4)
        + f": a list or object nested more than {MAX_NESTING} deep in the record's value (JSON's"
        " readers stop at some depth)",
    ),
    "a key that is not a string": (
        'ToolCall("lookup", {1: "x"})',
        "event_data.tool_calls[0].args.1: expected a string key, got 1",
    ),
    # read as JSON reads them, whatever their own methods say (each of these took the run
    # down as an internal error)
    "a set in a list whose len says it is empty": (
        'ToolCall("lookup", {"q": type("L", (list,), {"__len__": lambda s: 0})([{1}])})',
        "event_data.tool_calls[0].args.q[0]: expected a JSON value (a string, number, "
        "boolean, null, list or object), got a set ({1})",
    ),
    "an integer whose bit_length says it is short": (
        'ToolCall("lookup", {"q": type("I", (int,), {"bit_length": lambda s: 1})(10**5000)})',
        "event_data.tool_calls[0].args.q: a number of more than 4,300 digits (a record holds"
        " at most 4,300, as a run script does)",
    ),
    "a key to delete that is a list, after a write": (
        'ToolCall("lookup", set={"a": 1}), ToolCall("lookup", delete=[[1]])',
        "event_data.context_updates.delete[0]: expected a string, number, boolean or null, "
        "got a list",
    ),
}


def write_inputs(folder: Path, call: str) -> None:
    (folder / "t.flow").write_text(FLOW)
    (folder / "t.json").write_text(json.dumps(GRAPH))
    (folder / "hk.yaml").write_text("kickoff: hi\n")
    (folder / "bare.yaml").write_text(
        "{kickoff: hi, participants: [user, triage], humans: [user]}\n"
    )
    (folder / "ag.py").write_text(
        "from flowc.runtime import Reply, ToolCall\n"
        f"def triage(turn): return Reply('t', ({call},))\n"
        "AGENTS = {'triage': triage}\n"
    )


def strict_json(text: str) -> object:
    """``text`` read as JSON is (``json.loads`` alone takes ``NaN`` and ``Infinity``)."""

    def refuse(constant: str) -> object:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def stored_turns(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT event_type FROM wal ORDER BY seq")]


@pytest.mark.parametrize("name", list(CASES))
def test_a_value_no_record_can_hold_is_the_agents_failure(tmp_path: Path, name: str) -> None:
    call, said = CASES[name]
    write_inputs(tmp_path, call)
    run = flowc(
        tmp_path, "run", "t.flow", "--script", "hk.yaml", "--agents", "ag.py", "--db", "r.db"
    )
    assert run.returncode == 1, run.stderr
    assert "internal error" not in run.stderr
    assert run.stdout.rstrip().endswith("stalled: triage's turn failed after 1 turn")
    assert run.stderr == f"error: triage's reply was refused: {said}\n"
    # nothing of the turn is written: the kickoff alone, and the run is open for resume
    assert stored_turns(tmp_path / "r.db") == ["ag2.channel.opened", "ag2.msg.text"]
    log = flowc(tmp_path, "log", "last", "--db", "r.db", "--json")
    doc = json.loads(log.stdout)
    assert (doc["turn_count"], doc["next_speaker"]) == (1, "triage")


@pytest.mark.parametrize(
    "more", [("--contracts", "warn"), ("--json",), ("--jsonl",)], ids=["warn", "json", "jsonl"]
)
def test_refused_whatever_the_options(tmp_path: Path, more: tuple[str, ...]) -> None:
    call, said = CASES["NaN and infinity in the args"]
    write_inputs(tmp_path, call)
    run = flowc(
        tmp_path,
        *("run", "t.flow", "--script", "hk.yaml", "--agents", "ag.py", "--db", "r.db", *more),
    )
    assert run.returncode == 1, run.stderr
    assert said in run.stdout + run.stderr
    assert "NaN" not in run.stdout and "Infinity" not in run.stdout
    if "--json" in more:
        strict_json(run.stdout)
    if "--jsonl" in more:
        for line in run.stdout.splitlines():
            strict_json(line)


def test_refused_for_a_bare_json_graph(tmp_path: Path) -> None:
    write_inputs(tmp_path, CASES["a set in a context write"][0])
    run = flowc(
        tmp_path, "run", "t.json", "--script", "bare.yaml", "--agents", "ag.py", "--db", "r.db"
    )
    assert run.returncode == 1, run.stderr
    assert "internal error" not in run.stderr
    assert "triage's reply was refused: event_data.context_updates.set.k" in run.stderr
