"""Real agents are held to what the run records: what an agent does to its own objects
after it answered, or to the context it was given, changes nothing; the flow's
declarations judge the values as they are written; a reply that is not what its parts
say, an agent's `sys.exit` or a `CancelledError` of its own are its turn's failure.
Before, each of these either changed the run behind its records (a run `check` proved
could not end "tagged" ended so, with exit 0, and `replay` then said the records
diverge), or took the command down (an internal error, or exit 0 with nothing said).
Real `flowc run` processes on SQLite files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.cli_runs import flowc

#: a run can end "tagged" only if `tags` becomes ["a", "b"], which no declared write does
TAGS = """speaker user: human { sets go }
speaker bot {
  tool tag sets tags = ["a", "x"]
}
start user
max_turns 6
context tags = ["a"]
context go = false
when context.go == true and context.tags == ["a", "b"] then terminate "tagged"
when from user then bot
when from bot then user
property never_tagged: never ends "tagged"
"""

SCRIPT = "{kickoff: hi, script: {user: [{say: u1, set: {go: true}}, u2, u3]}}\n"

AGENTS = {
    "the context it was given": """
done = []
def bot(turn):
    if not done:
        turn.context["tags"].append("b"); done.append(1)
    return "just text"
""",
    "the turns it was shown": """
from flowc.runtime import Reply, ToolCall
n = []
def bot(turn):
    n.append(1)
    if len(n) == 1:
        return Reply("tagging", (ToolCall("tag", {}, set={"tags": ["a", "x"]}),))
    for env in (*turn.history, turn.envelope):
        tags = ((env.event_data.get("context_updates") or {}).get("set") or {}).get("tags")
        if tags is not None:
            tags[:] = ["a", "b"]
    return "just text"
""",
    "a list it wrote, changed later": """
from flowc.runtime import Reply, ToolCall
L = ["a", "x"]
n = []
def bot(turn):
    n.append(1)
    if len(n) == 1:
        return Reply("tagging", (ToolCall("tag", {}, set={"tags": L}),))
    L[:] = ["a", "b"]
    return "just text"
""",
}


def run_tags(tmp_path: Path, agents: str) -> tuple[str, dict[str, object]]:
    (tmp_path / "t.flow").write_text(TAGS)
    (tmp_path / "s.yaml").write_text(SCRIPT)
    (tmp_path / "ag.py").write_text(agents + "\nAGENTS = {'bot': bot}\n")
    run = flowc(
        tmp_path, "run", "t.flow", "--script", "s.yaml", "--agents", "ag.py", "--db", "r.db"
    )
    replay = flowc(tmp_path, "replay", "last", "--db", "r.db")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    log = flowc(tmp_path, "log", "last", "--db", "r.db", "--json")
    return run.stdout + run.stderr, json.loads(log.stdout)


@pytest.mark.parametrize("name", list(AGENTS))
def test_what_an_agent_does_to_its_objects_changes_nothing(tmp_path: Path, name: str) -> None:
    check = flowc(tmp_path, "check", "--format", "json", str(_write(tmp_path)))
    assert "I306" in check.stdout  # the property holds: no run ends "tagged"
    out, log = run_tags(tmp_path, AGENTS[name])
    assert 'closed: "max_turns"' in out, out
    assert log["close_reason"] == "max_turns"
    assert log["context_vars"]["tags"] != ["a", "b"], log


def _write(tmp_path: Path) -> Path:
    (tmp_path / "t.flow").write_text(TAGS)
    return tmp_path / "t.flow"


def test_an_ag2_agent_changing_its_state_view_changes_nothing(tmp_path: Path) -> None:
    pytest.importorskip("ag2")
    out, log = run_tags(
        tmp_path,
        """
from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.network import ChannelStateInject
from ag2.testing import TestConfig
done = []
bot = Agent("bot", config=TestConfig(ToolCallEvent(name="peek", arguments="{}"), "looked"))
@bot.tool
async def peek(state: ChannelStateInject) -> str:
    '''Look at the context.'''
    if not done:
        state.context_vars["tags"].append("b")
        done.append(1)
    return "ok"
""",
    )
    assert log["close_reason"] == "max_turns", out
    assert log["context_vars"]["tags"] == ["a"], log


DECIDE = """speaker user: human
speaker bot {
  tool decide sets verdict = "approve"
}
start user
max_turns 4
context verdict = "none"
when context.verdict == "reject" then terminate "rejected"
when from user then bot
when from bot then user
"""


def test_the_declarations_judge_the_values_as_written(tmp_path: Path) -> None:
    """A string whose `==` says yes to anything is judged by its text."""
    (tmp_path / "t.flow").write_text(DECIDE)
    (tmp_path / "s.yaml").write_text("{kickoff: hi, script: {user: [u1, u2]}}\n")
    (tmp_path / "ag.py").write_text(
        "from flowc.runtime import Reply, ToolCall\n"
        "class Liar(str):\n"
        "    def __eq__(self, other): return True\n"
        "    __hash__ = str.__hash__\n"
        "def bot(turn):\n"
        "    return Reply('deciding', (ToolCall('decide', {}, set={'verdict': Liar('reject')}),))\n"
        "AGENTS = {'bot': bot}\n"
    )
    run = flowc(
        tmp_path, "run", "t.flow", "--script", "s.yaml", "--agents", "ag.py", "--db", "r.db"
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert 'sets verdict = "reject", but the flow declares that it sets verdict = "approve"' in (
        run.stderr
    )
    assert "rejected" not in run.stdout


@pytest.mark.parametrize("mode", ["enforce", "warn"])
def test_a_value_no_record_holds_is_never_judged_as_it_is(tmp_path: Path, mode: str) -> None:
    """A write no record can hold, overwritten by a later call of the same reply (so no
    record would hold it), with a string whose `==` says yes to anything written last:
    the declarations judged the agent's own objects, found nothing, and the run ended
    "rejected". It is the turn's failure, naming the part; nothing of it is written."""
    (tmp_path / "t.flow").write_text(DECIDE)
    (tmp_path / "s.yaml").write_text("{kickoff: hi, script: {user: [u1, u2]}}\n")
    (tmp_path / "ag.py").write_text(
        "from flowc.runtime import Reply, ToolCall\n"
        "class Liar(str):\n"
        "    def __eq__(self, other): return True\n"
        "    __hash__ = str.__hash__\n"
        "class Odd:\n"
        "    def __eq__(self, other): return True\n"
        "    __hash__ = object.__hash__\n"
        "    def __str__(self): return 'reject'\n"
        "def bot(turn):\n"
        "    first = ToolCall('decide', {}, set={'verdict': Odd()})\n"
        "    return Reply('deciding', (first, ToolCall('decide', {}, set={'verdict': Liar('reject')})))\n"
        "AGENTS = {'bot': bot}\n"
    )
    run = flowc(
        tmp_path,
        *("run", "t.flow", "--script", "s.yaml", "--agents", "ag.py", "--db", "r.db"),
        *("--contracts", mode),
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "rejected" not in out and "internal error" not in out, out
    assert (
        "turn 2 failed (bot): TypeError: the reply's tool_calls[0].set.verdict: expected a JSON"
        " value (a string, number, boolean, null, list or object), got a"
    ) in out, out
    log = json.loads(flowc(tmp_path, "log", "last", "--db", "r.db", "--json").stdout)
    assert (log["close_reason"], log["next_speaker"], log["turn_count"]) == (None, "bot", 1), log
    assert log["context_vars"] == {"verdict": "none"}, log
    assert [f["speaker"] for f in log["failures"]] == ["bot"], log


def test_a_key_a_dict_hides_from_json_is_not_written(tmp_path: Path) -> None:
    (tmp_path / "t.flow").write_text(DECIDE.replace('sets verdict = "approve"', "sets ok = true"))
    (tmp_path / "s.yaml").write_text("{kickoff: hi, script: {user: [u1, u2]}}\n")
    (tmp_path / "ag.py").write_text(
        "from flowc.runtime import Reply, ToolCall\n"
        "class Sneaky(dict):\n"
        "    def items(self):\n"
        "        return [(k, v) for k, v in dict.items(self) if k != 'verdict']\n"
        "def bot(turn):\n"
        "    return Reply('ok', (ToolCall('decide', {}, set=Sneaky(ok=True, verdict='reject')),))\n"
        "AGENTS = {'bot': bot}\n"
    )
    run = flowc(
        tmp_path, "run", "t.flow", "--script", "s.yaml", "--agents", "ag.py", "--db", "r.db"
    )
    assert "rejected" not in run.stdout, run.stdout
    log = json.loads(flowc(tmp_path, "log", "last", "--db", "r.db", "--json").stdout)
    assert log["context_vars"] == {"verdict": "none", "ok": True}, log
    assert flowc(tmp_path, "replay", "last", "--db", "r.db").returncode == 0


FLOW = """speaker user: human
speaker triage {
  tool lookup
  tool close finishes "resolved"
}
start user
max_turns 4
when from user then triage
when from triage then user
"""

#: the agent's body -> the failure the run says
FAILURES = {
    "a tool call given as a dict": (
        "return Reply('x', ({'name': 'lookup'},))",
        "TypeError: the reply's tool_calls[0]: expected a ToolCall, got a dict",
    ),
    "tool calls given as a string": (
        "return Reply('x', 'lookup')",
        "TypeError: the reply's tool_calls[0]: expected a ToolCall, got a str",
    ),
    "args given as a list": (
        "return Reply('x', (ToolCall('lookup', [1, 2]),))",
        "TypeError: the reply's tool_calls[0].args: expected a dict of the tool's arguments,"
        " got a list",
    ),
    "writes given as pairs": (
        "return Reply('x', (ToolCall('lookup', {}, set=[('k', 1)]),))",
        "TypeError: the reply's tool_calls[0].set: expected a dict of the context keys it sets,"
        " got a list",
    ),
    "a result that is a string": (
        "return Reply('x', (ToolCall('close', result='resolved'),))",
        "TypeError: the reply's tool_calls[0].result: expected a Handoff, a Finish or None,"
        " got a str",
    ),
    # (a list as a hand-off's target took the run down as an internal error; a list as a
    # finish's summary was written)
    "a hand-off to a list": (
        "return Reply('x', (ToolCall('close', result=Handoff(['user'])),))",
        "TypeError: the reply's tool_calls[0].result.target: expected a string, got a list",
    ),
    "a finish's summary that is a list": (
        "return Reply('x', (ToolCall('close', result=Finish(['done'], 'resolved')),))",
        "TypeError: the reply's tool_calls[0].result.summary: expected a string, got a list",
    ),
    "sys.exit(0)": ("sys.exit(0)", "SystemExit: 0"),
    "SystemExit(3)": ("raise SystemExit(3)", "SystemExit: 3"),
    "its own CancelledError": ("raise asyncio.CancelledError()", "CancelledError"),
}


@pytest.mark.parametrize("name", list(FAILURES))
def test_a_reply_or_an_exit_is_the_agents_failure(tmp_path: Path, name: str) -> None:
    body, said = FAILURES[name]
    (tmp_path / "t.flow").write_text(FLOW)
    (tmp_path / "s.yaml").write_text("{kickoff: hi}\n")
    (tmp_path / "ag.py").write_text(
        "import asyncio, sys\n"
        "from flowc.runtime import Finish, Handoff, Reply, ToolCall\n"
        f"async def triage(turn):\n    {body}\n"
        "AGENTS = {'triage': triage}\n"
    )
    run = flowc(
        tmp_path, "run", "t.flow", "--script", "s.yaml", "--agents", "ag.py", "--db", "r.db"
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "internal error" not in out
    assert f"turn 2 failed (triage): {said}" in out, out
    assert "stalled: triage's turn failed after 1 turn" in run.stdout.splitlines(), out
    log = json.loads(flowc(tmp_path, "log", "last", "--db", "r.db", "--json").stdout)
    # open on that speaker, its failure recorded
    assert (log["close_reason"], log["next_speaker"]) == (None, "triage"), log
    assert [f["speaker"] for f in log["failures"]] == ["triage"], log


def test_an_agents_file_that_exits_while_it_loads_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "t.flow").write_text(FLOW)
    (tmp_path / "s.yaml").write_text("{kickoff: hi}\n")
    (tmp_path / "ag.py").write_text("import sys\nsys.exit(4)\n")
    run = flowc(tmp_path, "run", "t.flow", "--script", "s.yaml", "--agents", "ag.py")
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr == "flowc run: error: ag.py:2: cannot import it: SystemExit: 4\n"


def test_an_integer_no_record_can_write_is_refused(tmp_path: Path) -> None:
    (tmp_path / "t.flow").write_text(FLOW)
    (tmp_path / "s.yaml").write_text("{kickoff: hi}\n")
    (tmp_path / "ag.py").write_text(
        "from flowc.runtime import Reply, ToolCall\n"
        "def triage(turn): return Reply('t', (ToolCall('lookup', {'q': 10**5000}),))\n"
        "AGENTS = {'triage': triage}\n"
    )
    run = flowc(
        tmp_path, "run", "t.flow", "--script", "s.yaml", "--agents", "ag.py", "--db", "r.db"
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stderr == (
        "error: triage's reply was refused: event_data.tool_calls[0].args.q: a number of more"
        " than 4,300 digits (a record holds at most 4,300, as a run script does)\n"
    )
