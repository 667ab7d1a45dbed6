"""On a stdout whose encoding lacks characters of the run (``PYTHONIOENCODING=ascii:strict``,
a speaker named ``用户``), the readable transcript and a human's prompt write them as
escapes (``\\u7528``, as Python's stderr does) and go on, and ``--json`` / ``--jsonl`` stay
valid JSON (JSON escapes), holding the values as they are.

The transcript stopped at the first such character (``flowc run`` and ``flowc resume``
then exited 2 saying so; ``flowc log`` stopped on an internal error), and so did ``--json``
and a prompt at the terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.runtime.test_live_runs import Terminal

ROOT = Path(__file__).resolve().parents[2]

FLOW = """\
speaker `用户`: human
speaker bot
start `用户`
max_turns 3
when from `用户` then bot
when from bot then `用户`
"""
#: the human's second turn is not scripted: the run stalls on them (or asks them, at a
#: terminal)
SCRIPT = {"kickoff": "héllo 😀", "script": {"bot": ["réponse ✓"]}}
HUMAN = "\\u7528\\u6237"  # 用户, as the transcript writes it on an ASCII stdout


def flowc(
    cwd: Path, *args: str, encoding: str = "ascii:strict", decode: str = "latin-1"
) -> subprocess.CompletedProcess[str]:
    """``flowc ARGS`` with ``PYTHONIOENCODING=encoding``, its output read as ``decode``
    (by default whatever it wrote, as bytes; ASCII stays ASCII)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": encoding}
    return subprocess.run(
        [sys.executable, "-m", "flowc", *args],
        capture_output=True,
        text=True,
        encoding=decode,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def _files(tmp_path: Path) -> Path:
    (tmp_path / "u.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "s.json").write_text(json.dumps(SCRIPT), encoding="utf-8")
    return tmp_path


def test_the_transcript_writes_what_stdout_cannot_encode_as_escapes(tmp_path: Path) -> None:
    cwd = _files(tmp_path)
    ran = flowc(cwd, "run", "u.flow", "--script", "s.json", "--db", "r.db")
    assert ran.returncode == 1, ran.stderr  # stalled on the human, as the run is
    assert "transcript stopped" not in ran.stderr and "internal error" not in ran.stderr
    assert ran.stdout.isascii()
    lines = ran.stdout.splitlines()
    # the speaker column as wide as the escaped name (twelve columns)
    assert lines[0] == f"  1  {HUMAN}  h\\xe9llo \\U0001f600"
    assert lines[1].lstrip() == f"\\u2192 bot  (rule 1, line 5: when from `{HUMAN}` then bot)"
    assert lines[2] == "  2  bot           r\\xe9ponse \\u2713"
    assert f"stalled: {HUMAN} has no turn to take after 2 turns" in ran.stdout
    for command in (["log", "last"], ["resume", "last", "--script", "s.json"]):
        again = flowc(cwd, *command, "--db", "r.db")
        assert "internal error" not in again.stderr, again.stderr
        assert "transcript stopped" not in again.stderr, again.stderr
        assert again.returncode in (0, 1) and again.stdout.isascii()
        assert f"  1  {HUMAN}  h\\xe9llo \\U0001f600" in again.stdout
    replayed = flowc(cwd, "replay", "last", "--db", "r.db")
    assert replayed.returncode == 0, replayed.stderr
    assert f"{HUMAN} to speak next" in replayed.stdout


def test_json_stays_valid_json_with_the_values_as_they_are(tmp_path: Path) -> None:
    cwd = _files(tmp_path)
    for encoding in ("ascii:strict", "latin-1:strict"):
        ran = flowc(
            cwd, "run", "u.flow", "--script", "s.json", "--db", "r.db", "--json", encoding=encoding
        )
        assert ran.returncode == 1, ran.stderr
        doc = json.loads(ran.stdout)
        assert [t["text"] for t in doc["turns"]] == ["héllo 😀", "réponse ✓"]
        assert doc["stalled_on"] == "用户"
        logged = flowc(cwd, "log", "last", "--db", "r.db", "--jsonl", encoding=encoding)
        assert logged.returncode == 0, logged.stderr
        turns = [json.loads(line) for line in logged.stdout.splitlines()][1:3]
        assert [t["speaker"] for t in turns] == ["用户", "bot"]
        assert turns[0]["decided_by"] == "rule 1, line 5: when from `用户` then bot"


def test_the_prompt_at_a_terminal_writes_escapes(tmp_path: Path) -> None:
    cwd = _files(tmp_path)
    term = Terminal(
        ["run", "u.flow", "--script", "s.json", "--db", "r.db"],
        env={"PYTHONIOENCODING": "ascii:strict", "PYTHONPATH": str(ROOT)},
        cwd=cwd,
    )
    try:
        term.read_until(f"{HUMAN}> ")
        term.type(b"fine\n")
        assert term.finish() == 0
    finally:
        term.close()
    assert f"  3  {HUMAN}  fine" in term.seen
    assert 'closed: "max_turns" after 3 turns' in term.seen


def test_every_command_writes_reports_as_escapes_and_json_as_json(tmp_path: Path) -> None:
    """Not only the run commands: `check`, `diff` and `compile` (whose reports hold the
    flow's names and flowc's own arrows) write text with escapes and JSON as valid JSON,
    where they stopped on an internal error."""
    (tmp_path / "a.flow").write_text(FLOW + "speaker `访客`\n")  # never speaks: W201
    (tmp_path / "b.flow").write_text(FLOW.replace("max_turns 3", "max_turns 4"))
    for args in (("check", "a.flow"), ("diff", "a.flow", "b.flow")):
        done = flowc(tmp_path, *args)
        assert "internal error" not in done.stderr, done.stderr
        assert done.returncode in (0, 1), done.stderr
        assert done.stdout.isascii() and done.stdout.strip(), done.stdout
    check = flowc(tmp_path, "check", "a.flow")
    assert "\\u8bbf\\u5ba2" in check.stdout  # the flow's names, escaped
    for args in (("check", "a.flow", "--format", "json"), ("compile", "a.flow")):
        done = flowc(tmp_path, *args, encoding="latin-1:strict")
        assert "internal error" not in done.stderr, done.stderr
        assert "用户" in json.dumps(json.loads(done.stdout), ensure_ascii=False), done.stdout
    sarif = flowc(tmp_path, "check", "a.flow", "--format", "sarif")
    assert sarif.stdout.isascii() and json.loads(sarif.stdout)["version"] == "2.1.0"


def test_source_output_is_refused_clearly_never_escaped(tmp_path: Path) -> None:
    """A `.flow` or scenarios are read back: an escape (or a `?` put in its place) would
    change a name, so a character the encoding lacks ends the command with a clear error
    (exit 2) with none of the output written, never a different file (exit 0), a part of
    one, or an internal error; whatever stdout's error handler."""
    (tmp_path / "a.flow").write_text(FLOW.replace("then bot", "then   bot"))  # fmt changes it
    (tmp_path / "s.json").write_text(json.dumps(SCRIPT))
    assert flowc(tmp_path, "run", "a.flow", "--script", "s.json", "--db", "r.db").returncode == 1
    for encoding in ("ascii:strict", "ascii:replace", "latin-1:strict"):
        for args in (
            ("fmt", "--diff", "a.flow"),
            ("scenarios", "a.flow"),
            ("log", "last", "--db", "r.db", "--scenario-upto", "2"),
        ):
            done = flowc(tmp_path, *args, encoding=encoding)
            assert done.returncode == 2, (encoding, args, done.stdout, done.stderr)
            assert "internal error" not in done.stderr, done.stderr
            assert "cannot write " in done.stderr and "(U+7528)" in done.stderr, done.stderr
            assert done.stdout == "", done.stdout


def test_a_path_that_is_not_utf8_is_written_back_as_its_bytes(tmp_path: Path) -> None:
    """A file whose name is not UTF-8 (read as surrogates): a report written with `-o`
    names it by its bytes, and JSON on stdout stays valid, where both stopped."""
    odd = os.fsdecode(b"b\xff.flow")
    (tmp_path / "a.flow").write_text(FLOW)
    (tmp_path / odd).write_text(FLOW.replace("max_turns 3", "max_turns 4"))
    done = flowc(
        tmp_path, "diff", "--format", "json", "a.flow", odd, "-o", "r.json", encoding="utf-8"
    )
    assert done.returncode in (0, 1), done.stderr
    assert b"b\xff.flow" in (tmp_path / "r.json").read_bytes()
    checked = flowc(tmp_path, "check", "--format", "json", "a.flow", odd, encoding="utf-8")
    assert "internal error" not in checked.stderr, checked.stderr
    json.loads(checked.stdout)
