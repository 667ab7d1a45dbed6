"""A human at the `client>` prompt of `flowc run` does what a scripted human does: posts
text and writes the context keys its `speaker NAME: human { sets ... }` block declares
(`/set KEY = VALUE`, `/set KEY`, `/clear KEY`, `/help`), and nothing else; on a terminal,
Tab completes the commands and the keys."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main
from flowc.commands.human_prompt import HumanPrompt, PromptError, complete
from flowc.commands.run_output import TerminalLines

ROOT = Path(__file__).resolve().parents[2]

FLOW = """\
speaker client: human {
  sets signed_off, notes
}
speaker bot
start client
max_turns 10
when context.signed_off == true then terminate "signed off"
when from client then bot
when from bot then client
"""

AGENTS = """\
async def bot(turn):
    return "Draft: " + turn.text

AGENTS = {"bot": bot}
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "signoff.flow").write_text(FLOW)
    (tmp_path / "agents.py").write_text(AGENTS)
    return tmp_path


def flowc(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowc", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def run_signoff(files: Path, stdin: str, *more: str) -> subprocess.CompletedProcess[str]:
    return flowc(
        "run",
        str(files / "signoff.flow"),
        "--agents",
        str(files / "agents.py"),
        "--db",
        ":memory:",
        *more,
        stdin=stdin,
    )


def test_the_human_writes_a_declared_key_with_the_turn(files: Path) -> None:
    proc = run_signoff(
        files, 'Write it\n/set notes = "shorter"\nShorter\n/set signed_off\nLooks good\n', "--json"
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [(t["speaker"], t["text"], t["context"]["set"]) for t in doc["turns"]] == [
        ("client", "Write it", {}),
        ("bot", "Draft: Write it", {}),
        ("client", "Shorter", {"notes": "shorter"}),
        ("bot", "Draft: Shorter", {}),
        ("client", "Looks good", {"signed_off": True}),
    ]
    assert doc["close_reason"] == "signed off"
    assert doc["context_vars"] == {"notes": "shorter", "signed_off": True}
    # the prompt shows the writes waiting for the turn's text
    assert "client (signed_off = true)> " in proc.stderr


def test_clear_and_a_value_of_any_json(files: Path) -> None:
    proc = run_signoff(
        files,
        '/set notes = {"tone": ["dry", 2]}\nFirst\n/clear notes\n/set signed_off = true\nDone\n',
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    turns = json.loads(proc.stdout)["turns"]
    assert turns[0]["context"] == {"set": {"notes": {"tone": ["dry", 2]}}, "delete": []}
    assert turns[2]["context"] == {"set": {"signed_off": True}, "delete": ["notes"]}
    assert json.loads(proc.stdout)["context_vars"] == {"signed_off": True}


def test_undeclared_keys_and_bad_lines_are_refused_and_asked_again(files: Path) -> None:
    proc = run_signoff(
        files,
        "/set secret = 1\n/set signed_off = yes\n/sett x\n/clear\n"
        "//set is a word\n/set signed_off\nok\n",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # nothing refused reached the run: the first turn is the escaped text, alone
    assert doc["turns"][0]["text"] == "/set is a word"
    assert doc["turns"][0]["context"]["set"] == {}
    assert doc["turns"][2]["context"]["set"] == {"signed_off": True}
    err = proc.stderr
    assert (
        "  `client` is a human that may write only context.notes, context.signed_off, not "
        "context.secret (/help lists them)\n"
    ) in err
    assert (
        "  /set signed_off = yes: the value is JSON (Expecting value at character 1): write"
        " text in double "
        'quotes ("yes"), or true, false, null, a number, [...] or {...}\n'
    ) in err
    assert "  /sett: no such command" in err
    assert "  /clear: name the context key (/help lists them)" in err
    # asked again after each refusal: 5 prompts for the first turn, 1 for the second
    # (then `client (signed_off = true)> `)
    assert err.count("client> ") == 6


def test_help_lists_the_commands_and_the_keys_with_their_values(files: Path) -> None:
    proc = run_signoff(files, "Hi\n/set notes = 3\nMore\n/help\n", "--json")
    assert proc.returncode == 1  # stdin ended: the run stalls on the client
    err = proc.stderr
    assert "  client may write: notes (now 3), signed_off (unset)\n" in err
    for line in ("/set KEY = VALUE", "/set KEY ", "/clear KEY", "//TEXT"):
        assert f"\n    {line}" in err
    assert json.loads(proc.stdout)["stalled_on"] == "client"


def test_a_human_that_declares_no_keys_may_write_none(tmp_path: Path) -> None:
    (tmp_path / "f.flow").write_text(FLOW.replace("  sets signed_off, notes\n", ""))
    (tmp_path / "agents.py").write_text(AGENTS)
    proc = flowc(
        "run",
        str(tmp_path / "f.flow"),
        "--agents",
        str(tmp_path / "agents.py"),
        "--db",
        ":memory:",
        "--json",
        stdin="/set signed_off\n/help\n",
    )
    assert (
        "`client` is a human that declares no context keys it may write, so not context.signed_off"
    ) in proc.stderr
    assert "client may write: no context keys (the flow declares none for it)" in proc.stderr


def test_a_bare_graph_human_may_write_any_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = {
        "initial_speaker": "client",
        "max_turns": 4,
        "transitions": [
            {
                "when": {"name": "context_equals", "args": {"key": "ok", "value": True}},
                "then": {"name": "terminate", "args": {"reason": "ok"}},
                "priority": 0,
            },
            {
                "when": {"name": "always", "args": {}},
                "then": {"name": "round_robin", "args": {}},
                "priority": 0,
            },
        ],
        "default_target": {"name": "terminate", "args": {"reason": "after_work"}},
    }
    (tmp_path / "g.json").write_text(json.dumps(graph))
    (tmp_path / "s.json").write_text(
        json.dumps({"participants": ["client", "bot"], "humans": ["client"]})
    )
    (tmp_path / "agents.py").write_text(AGENTS)
    # the script names the humans; a human with no scripted turn is asked when stdin is
    # a terminal (here: as if it were one)
    monkeypatch.setattr("flowc.commands.run.isatty", lambda stream: True)
    monkeypatch.setattr("sys.stdin", io.StringIO("/set anything = 1\nhi\n/set ok\nbye\n"))
    code = main(
        [
            "run",
            str(tmp_path / "g.json"),
            "--script",
            str(tmp_path / "s.json"),
            "--agents",
            str(tmp_path / "agents.py"),
            "--db",
            ":memory:",
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["context_vars"] == {"anything": 1, "ok": True}


def test_a_resumed_run_prompts_with_the_stored_declarations(files: Path) -> None:
    db = str(files / "runs.db")
    proc = flowc(
        "run",
        str(files / "signoff.flow"),
        "--agents",
        str(files / "agents.py"),
        "--db",
        db,
        stdin="Write it\n",
    )
    assert proc.returncode == 1  # stdin ended at the client's second turn
    proc = flowc(
        "resume",
        "last",
        "--agents",
        str(files / "agents.py"),
        "--db",
        db,
        "--json",
        stdin="/set secret\n/set signed_off\nDone\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert "may write only context.notes, context.signed_off, not context.secret" in proc.stderr
    assert json.loads(proc.stdout)["close_reason"] == "signed off"


# ── the prompt itself ─────────────────────────────────────────────────────────────


def test_the_prompt_as_a_script_turn() -> None:
    p = HumanPrompt("client", ("notes", "signed_off"), {"notes": "x"})
    assert p.feed("/set notes = 1") == "" and p.feed("/clear notes") == ""
    assert p.prompt() == "client (notes cleared)> "
    assert p.feed("/set `signed_off` = false") == ""
    turn = p.feed("text")
    assert not isinstance(turn, str)
    assert (turn.say, turn.calls[0].set, turn.calls[0].delete) == (
        "text",
        {"signed_off": False},
        ("notes",),
    )
    assert p.prompt() == "client> "  # the writes went with that turn
    plain = p.feed("again")
    assert not isinstance(plain, str) and plain.calls == ()
    with pytest.raises(PromptError, match="no such command"):
        p.feed("/quit")


def test_completion_offers_commands_then_declared_keys() -> None:
    keys = ["notes", "signed_off", "severity"]
    assert complete("/", keys) == ["/set ", "/clear ", "/help"]
    assert complete("/c", keys) == ["/clear "]
    assert complete("/set ", keys) == keys
    assert complete("/set s", keys) == ["signed_off", "severity"]
    assert complete("/clear se", keys) == ["severity"]
    assert complete("/set notes = ", keys) == []  # a value: nothing to offer
    assert complete("/help x", keys) == []
    assert complete("text /s", keys) == []  # text, not a command
    assert complete("/set s", None) == []  # a bare graph declares no keys


class FakeReadline:
    """What :class:`TerminalLines` asks readline for while it completes."""

    def __init__(self, line: str) -> None:
        self.line = line

    def get_line_buffer(self) -> str:
        return self.line

    def get_endidx(self) -> int:
        return len(self.line)

    def __getattr__(self, name: str) -> Any:  # set_completer & co, at construction
        return lambda *args: None


def test_the_readline_completer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "readline", FakeReadline(""))
    lines = TerminalLines()
    lines.keys = ["notes", "signed_off", "severity"]
    lines.readline = FakeReadline("/set s")
    assert [lines.completer("s", i) for i in range(3)] == ["signed_off", "severity", None]
    lines.readline = FakeReadline("/cl")
    assert lines.completer("/cl", 0) == "/clear " and lines.completer("/cl", 1) is None


def test_tab_completes_on_a_terminal(files: Path) -> None:
    from tests.runtime.test_live_runs import Terminal

    term = Terminal(
        [
            "run",
            str(files / "signoff.flow"),
            "--agents",
            str(files / "agents.py"),
            "--db",
            ":memory:",
        ]
    )
    try:
        term.read_until("client> ")
        term.type(b"Write it\n")
        term.read_until("Draft: Write it")
        term.read_until("\nclient> ")  # the second prompt, after the turns
        time.sleep(0.3)
        term.type(b"/se\t")
        term.read_until("/set ")
        term.type(b"sig\t")
        term.read_until("signed_off")
        term.type(b"\n")
        term.read_until("client (signed_off = true)> ")
        term.type(b"Looks good\n")
        assert term.finish() == 0
    finally:
        term.close()
    assert 'closed: "signed off" after 3 turns' in term.seen


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("yes", "Expecting value at character 1"),
        ("[1 2]", "Expecting ',' delimiter at character 4"),
        ("[1, 2", "Expecting ',' delimiter at the end"),
        ('"café', "Unterminated string starting at character 1"),
    ],
)
def test_a_value_that_is_not_json_is_refused_with_where(value: str, why: str) -> None:
    from flowc.commands.human_prompt import HumanPrompt, PromptError

    prompt = HumanPrompt("client", ("notes",))
    with pytest.raises(PromptError) as err:
        prompt.feed(f"/set notes = {value}")
    assert f"/set notes = {value}: the value is JSON ({why}): write text" in str(err.value)
