"""What an agent names (a helper tool's name, an argument's key, a context key of a bare
graph) cannot forge lines of the transcript or of `flowc log --why`: a newline or a
terminal control in it is written as an escape.

The transcript escaped values (as JSON) and the turn's text (indented), but wrote tool
names and argument keys as they were: a model's tool call with an argument key holding
``\\nclosed: "approved" after 3 turns`` printed a line that said the run had closed.
`--why` printed such names, ESC sequences included, straight to the terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FLOW = """\
speaker user: human
speaker drafter {
  tool approve sets done = true
}
speaker reviewer
start user
max_turns 6
context done = false
when context.done == true then terminate "approved"
when tool approve then reviewer
when from user then drafter
when from drafter then reviewer
"""

FORGED = '\nclosed: "approved" after 3 turns\x1b[2J'

AGENTS = f"""\
from flowc.runtime import Reply, ToolCall

FORGED = {FORGED!r}

def drafter(turn):
    # a helper the flow does not declare, which does nothing the flow can see
    return Reply("draft", (ToolCall("search" + FORGED, {{"q" + FORGED: 1}}),))

AGENTS = {{"drafter": drafter}}
"""

BARE = {
    "context_vars": {},
    "graph": {
        "initial_speaker": "user",
        "max_turns": 3,
        "transitions": [
            {
                "when": {"name": "from_speaker", "args": {"agent_id": "user"}},
                "then": {"name": "agent", "args": {"agent_id": "bot"}},
            }
        ],
    },
}


def flowc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowc", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def _forged_bot(folder: Path) -> str:
    """Write ``g.json``: the bare graph with its bot named after :data:`FORGED`; its name."""
    bot = "bot" + FORGED
    graph = json.loads(
        json.dumps(BARE).replace('"agent_id": "bot"', json.dumps({"agent_id": bot})[1:-1])
    )
    (folder / "g.json").write_text(json.dumps(graph))
    return bot


def _no_forged_line(out: str) -> None:
    assert "\x1b" not in out, out
    lines = out.splitlines()
    assert not any(line.startswith('closed: "approved"') for line in lines), out
    assert '\\nclosed: \\"approved\\"' in out or '\\nclosed: "approved"' in out, out


def test_a_helper_tool_name_and_argument_key_cannot_forge_lines(tmp_path: Path) -> None:
    (tmp_path / "f.flow").write_text(FLOW)
    (tmp_path / "agents.py").write_text(AGENTS)
    (tmp_path / "s.json").write_text(json.dumps({"kickoff": "brief", "script": {}}))
    ran = flowc(
        "run", "f.flow", "--script", "s.json", "--agents", "agents.py", "--db", "r.db", cwd=tmp_path
    )
    assert ran.returncode == 1, ran.stderr  # the reviewer has no turn: stalled
    _no_forged_line(ran.stdout)
    assert "calls: search\\nclosed:" in ran.stdout
    logged = flowc("log", "last", "--db", "r.db", cwd=tmp_path)
    assert logged.returncode == 0, logged.stderr
    _no_forged_line(logged.stdout)
    why = flowc("log", "last", "--db", "r.db", "--why", "2", cwd=tmp_path)
    assert why.returncode == 0, why.stderr
    _no_forged_line(why.stdout)
    assert "the turn called `search\\nclosed:" in why.stdout
    # the helper did nothing the flow can see: its turn's scenario line is the text
    scenario = flowc("log", "last", "--db", "r.db", "--scenario-upto", "2", cwd=tmp_path)
    assert scenario.returncode == 0, scenario.stderr
    assert '  drafter: "draft"\n' in scenario.stdout and "closed" not in scenario.stdout


def test_a_context_key_of_a_bare_graph_cannot_forge_lines(tmp_path: Path) -> None:
    (tmp_path / "g.json").write_text(json.dumps(BARE))
    script = {
        "kickoff": "hi",
        "participants": ["user", "bot"],
        "humans": ["user"],
        "script": {"bot": [{"set": {"k" + FORGED: 1}, "say": "ok"}]},
    }
    (tmp_path / "s.json").write_text(json.dumps(script))
    ran = flowc("run", "g.json", "--script", "s.json", "--db", "r.db", cwd=tmp_path)
    assert "Traceback" not in ran.stderr, ran.stderr
    assert "context: k\\nclosed:" in ran.stdout, ran.stdout
    _no_forged_line(ran.stdout.split("\nclosed: ")[0])
    logged = flowc("log", "last", "--db", "r.db", cwd=tmp_path)
    assert "context: k\\nclosed:" in logged.stdout, logged.stdout


def test_a_speaker_name_of_a_bare_graph_cannot_forge_lines(tmp_path: Path) -> None:
    bot = _forged_bot(tmp_path)
    script = {
        "kickoff": "hi",
        "participants": ["user", bot],
        "humans": ["user"],
        "script": {bot: ["ok"]},
    }
    (tmp_path / "s.json").write_text(json.dumps(script))
    ran = flowc("run", "g.json", "--script", "s.json", "--db", "r.db", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    turns = ran.stdout.split('\nclosed: "after_work"')[0]
    _no_forged_line(turns)
    assert "  2  bot\\nclosed:" in turns and "→ bot\\nclosed:" in turns, turns
    logged = flowc("log", "last", "--db", "r.db", cwd=tmp_path)
    _no_forged_line(logged.stdout.split('\nclosed: "after_work"')[0])


def test_a_speaker_name_in_a_stall_line_cannot_forge_lines(tmp_path: Path) -> None:
    # the speaker has no scripted turn: the run stalls on it, and says so on one line
    bot = _forged_bot(tmp_path)
    script = {"kickoff": "hi", "participants": ["user", bot], "humans": ["user"], "script": {}}
    (tmp_path / "s.json").write_text(json.dumps(script))
    ran = flowc("run", "g.json", "--script", "s.json", "--db", "r.db", cwd=tmp_path)
    assert ran.returncode == 1, ran.stderr
    _no_forged_line(ran.stdout)
    assert "stalled: bot\\nclosed:" in ran.stdout, ran.stdout
    resumed = flowc("resume", "last", "--script", "s.json", "--db", "r.db", cwd=tmp_path)
    assert resumed.returncode == 1, resumed.stderr
    _no_forged_line(resumed.stdout)


def test_a_failed_turn_cannot_forge_lines(tmp_path: Path) -> None:
    # the agent raises an error whose words, like its speaker's name, hold a forged line
    bot = _forged_bot(tmp_path)
    script = {"kickoff": "hi", "participants": ["user", bot], "humans": ["user"], "script": {}}
    (tmp_path / "s.json").write_text(json.dumps(script))
    (tmp_path / "agents.py").write_text(
        f"def bot(turn):\n    raise RuntimeError({'boom' + FORGED!r})\n\nAGENTS = {{{bot!r}: bot}}\n"
    )
    ran = flowc(
        "run", "g.json", "--script", "s.json", "--agents", "agents.py", "--db", "r.db", cwd=tmp_path
    )
    assert ran.returncode == 1, ran.stderr
    _no_forged_line(ran.stdout)
    assert "turn 2 failed (bot\\nclosed:" in ran.stdout, ran.stdout
    assert "boom\\nclosed:" in ran.stdout and "stalled: bot\\nclosed:" in ran.stdout
    logged = flowc("log", "last", "--db", "r.db", cwd=tmp_path)
    _no_forged_line(logged.stdout)
    assert "turn 2 failed (bot\\nclosed:" in logged.stdout, logged.stdout
