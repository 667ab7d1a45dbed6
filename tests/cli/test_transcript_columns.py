"""Columns hold text as the terminal shows it: a wide character (``用户``: two columns
each) and, on an output whose encoding lacks a character, its escape (``\\u7528``: six)
take the columns they take. In the transcript (`run`, `resume`, `log`) every turn's text,
and the lines under it (``→``, ``| ``), start in one column; under a finding's excerpt the
caret stays under what it marks.

Both were measured in characters of the unescaped text: a wide name pushed its turn's
text one column right per character, an escaped one five; a caret under an escaped line
pointed left of its mark."""

from __future__ import annotations

import json
import subprocess
import unicodedata
from pathlib import Path

import pytest

from tests.cli import test_unencodable_output as unencodable

FLOW = """\
speaker `用户`
speaker bot
speaker `çé`
start `用户`
max_turns 5
when from `用户` then bot
when from bot then `çé`
when from `çé` then `用户`
"""
SCRIPT = {"script": {"用户": ["你好", "again"], "bot": ["one\nsecond line", "two"], "çé": ["x"]}}


def columns(text: str) -> int:
    """Terminal columns, counted here without flowc's code: East Asian wide or full-width
    characters two, combining marks none."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def flowc_process(cwd: Path, encoding: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``flowc ARGS`` with its output in ``encoding`` (``PYTHONIOENCODING``'s form), read
    as it is written."""
    return unencodable.flowc(cwd, *args, encoding=encoding, decode=encoding.partition(":")[0])


def flowc(cwd: Path, encoding: str, *args: str) -> str:
    """The standard output of ``flowc ARGS``, which must succeed."""
    done = flowc_process(cwd, encoding, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def text_columns(transcript: str) -> set[int]:
    """The column each turn's text starts in, and the one each line under a turn points
    at: ``| `` (a text's later line) starts two columns before the text, ``→``, ``■``,
    ``calls:`` one before it."""
    found = set()
    for line in transcript.splitlines():
        head = line[:3].strip()
        if head.isdigit():  # "  1  <speaker padded>  text"
            rest = line[5:]
            # the speaker's name holds no two spaces in a row here: the column ends there
            name_end = rest.index("  ")
            pad = len(rest) - len(rest[name_end:].lstrip(" "))
            found.add(5 + columns(rest[:pad]))
        elif line.startswith(" ") and line.strip():
            indent = len(line) - len(line.lstrip(" "))
            found.add(indent + (2 if line.lstrip().startswith("|") else 1))
    return found


@pytest.mark.parametrize("encoding", ["utf-8", "ascii", "ascii:replace", "latin-1"])
def test_every_turn_text_starts_in_one_column(tmp_path: Path, encoding: str) -> None:
    (tmp_path / "wide.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "wide.json").write_text(json.dumps(SCRIPT), encoding="utf-8")
    db = str(tmp_path / "runs.db")
    ran = flowc(tmp_path, encoding, "run", "wide.flow", "--script", "wide.json", "--db", db)
    logged = flowc(tmp_path, encoding, "log", "last", "--db", db)
    for transcript in (ran, logged.split("\n", 1)[1]):
        turns = [line for line in transcript.splitlines() if line[:3].strip().isdigit()]
        assert len(turns) == 5, transcript
        if encoding == "utf-8":
            assert "用户" in transcript and "çé" in transcript
        elif encoding == "latin-1":  # its own characters as they are
            assert "\\u7528\\u6237" in transcript and "çé" in transcript
        elif encoding == "ascii":
            assert transcript.isascii() and "\\u7528\\u6237" in transcript
        else:  # the handler asked for: `?`, and the column as wide as what is written
            assert transcript.isascii() and "\\u7528" not in transcript
            assert "  1  ??   ??" in transcript
        assert len(text_columns(transcript)) == 1, transcript


def test_a_resumed_run_keeps_the_column(tmp_path: Path) -> None:
    """`resume` prints the turns it plays in the column of the names as this output shows
    them, as `run` did."""
    (tmp_path / "wide.flow").write_text(FLOW, encoding="utf-8")
    short = {"script": {"用户": ["你好"], "bot": ["one"]}}
    (tmp_path / "short.json").write_text(json.dumps(short), encoding="utf-8")
    (tmp_path / "wide.json").write_text(json.dumps(SCRIPT), encoding="utf-8")
    db = str(tmp_path / "runs.db")
    first = flowc_process(
        tmp_path, "ascii", "run", "wide.flow", "--script", "short.json", "--db", db
    )
    assert first.returncode != 0  # stalled: `çé` has no scripted turn
    resumed = flowc(tmp_path, "ascii", "resume", "last", "--script", "wide.json", "--db", db)
    assert [line for line in resumed.splitlines() if line[:3].strip().isdigit()], resumed
    assert len(text_columns(resumed)) == 1, resumed


@pytest.mark.parametrize("encoding", ["utf-8", "ascii", "ascii:replace"])
def test_a_findings_caret_stays_under_what_it_marks(tmp_path: Path, encoding: str) -> None:
    """A finding's excerpt on an output that escapes characters (``\\u7528``) has its
    caret under the escaped line's columns, as under the line with wide characters."""
    (tmp_path / "bad.flow").write_text(
        "speaker `用户`\nspeaker bot\nstart `用户`\nwhen from `用户` then nobody\n",
        encoding="utf-8",
    )
    done = flowc_process(tmp_path, encoding, "check", "bad.flow")
    report = done.stdout + done.stderr
    lines = report.splitlines()
    [at] = [i for i, line in enumerate(lines) if line.startswith("4 | when from")]
    excerpt, caret = lines[at], lines[at + 1]
    start = excerpt.index("nobody")
    assert caret.index("^") == columns(excerpt[:start]), report
    assert caret.count("^") == len("nobody"), report


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_the_coverage_table_lines_up_a_wide_file_name(tmp_path: Path, encoding: str) -> None:
    flow = 'speaker a\nspeaker b\nstart a\nmax_turns 2\nwhen from a then b\nwhen from b then terminate "x"\n'
    for name in ("用户用户.flow", "abcdefgh.flow"):
        (tmp_path / name).write_text(flow, encoding="utf-8")
    out = flowc(tmp_path, encoding, "test", "--coverage", "用户用户.flow", "abcdefgh.flow")
    lines = out.splitlines()
    [head] = [line for line in lines if line.startswith("File ")]
    wide = "用户用户.flow " if encoding == "utf-8" else "\\u7528\\u6237\\u7528\\u6237.flow "
    rows = [line for line in lines if line.startswith((wide, "abcdefgh.flow "))]
    assert len(rows) == 2, out
    starts = {columns(head[: head.index("Speakers")])}
    starts |= {columns(row[: row.index("0/2")]) for row in rows}
    assert len(starts) == 1, out


def test_an_emoji_sequence_takes_the_columns_of_one_emoji(tmp_path: Path) -> None:
    """``👩‍💻`` (woman, zero-width joiner, laptop) and ``❤️`` (a heart and the emoji
    variation selector) take two columns each, as ``ab``: no name is padded."""
    (tmp_path / "e.flow").write_text(
        "speaker `👩\u200d💻`\nspeaker `\u2764\ufe0f`\nspeaker ab\nstart `👩\u200d💻`\n"
        "max_turns 3\nwhen from `👩\u200d💻` then `\u2764\ufe0f`\n"
        "when from `\u2764\ufe0f` then ab\nwhen from ab then `👩\u200d💻`\n",
        encoding="utf-8",
    )
    script = {"script": {"👩\u200d💻": ["one"], "\u2764\ufe0f": ["two"], "ab": ["three"]}}
    (tmp_path / "e.json").write_text(json.dumps(script), encoding="utf-8")
    out = flowc(tmp_path, "utf-8", "run", "e.flow", "--script", "e.json", "--db", ":memory:")
    turns = [line for line in out.splitlines() if line[:3].strip().isdigit()]
    assert turns == ["  1  👩\u200d💻  one", "  2  \u2764\ufe0f  two", "  3  ab  three"], out
