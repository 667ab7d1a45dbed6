"""What an agent or a run script says is shown, never acted on by the terminal: a turn's
text, a failure's message and the end of a run holding ESC, BEL, CR or a C1 control are
printed escaped by `flowc run` and `flowc log` (a newline still breaks the line, the
next one marked `|` under the turn's text; a tab and any printable character are printed
as they are). Before, a kickoff of `a\\x1b[31mRED\\x07b` turned the terminal red and
rang its bell."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_runs import flowc

FLOW = """speaker user: human
speaker triage
start user
max_turns 4
when from user then triage
when from triage then user
"""

#: control characters of every kind a terminal acts on, and what is printed as it is
SCRIPT = r"""kickoff: "a\x1b[31mRED\x07b\rc\x9b2Jd"
script:
  user: ["tab\there, ünï ☃"]
  triage: ["first\nsecond\x1b[2J"]
"""
AGENT = """def triage(turn):
    raise ValueError("bad \\x1b]0;title\\x07 value")
AGENTS = {"triage": triage}
"""

CONTROLS = ("\x1b", "\x07", "\r", "\x9b")


def test_run_and_log_escape_what_a_script_says(tmp_path: Path) -> None:
    (tmp_path / "t.flow").write_text(FLOW)
    (tmp_path / "s.yaml").write_text(SCRIPT)
    run = flowc(tmp_path, "run", "t.flow", "--script", "s.yaml", "--db", "r.db")
    log = flowc(tmp_path, "log", "last", "--db", "r.db")
    for out in (run.stdout + run.stderr, log.stdout + log.stderr):
        assert not any(c in out for c in CONTROLS), repr(out)
        assert "  1  user    a\\x1b[31mRED\\x07b\\rc\\x9b2Jd\n" in out, out
        assert "tab\there, ünï ☃" in out
        # (the newline breaks the line: the next one is marked `|`, under the text)
        assert "  2  triage  first\n" + " " * 11 + "| second\\x1b[2J\n" in out, out


def test_an_agents_failure_is_escaped(tmp_path: Path) -> None:
    (tmp_path / "t.flow").write_text(FLOW)
    (tmp_path / "s.yaml").write_text("kickoff: hi\n")
    (tmp_path / "ag.py").write_text(AGENT)
    run = flowc(
        tmp_path, "run", "t.flow", "--script", "s.yaml", "--agents", "ag.py", "--db", "r.db"
    )
    log = flowc(tmp_path, "log", "last", "--db", "r.db")
    for out in (run.stdout + run.stderr, log.stdout + log.stderr):
        assert not any(c in out for c in CONTROLS), repr(out)
        assert "ValueError: bad \\x1b]0;title\\x07 value" in out, out
