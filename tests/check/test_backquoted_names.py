"""A name that needs backquotes (`` `bot 1` ``) is quoted once in every message.

A message quotes a name as code in backquotes; a name as a `.flow` writes it already has
them when it needs them (``format_name``), and wrapping that again printed
```` ``bot 1`` ````. Checked over the findings that name speakers, tools and keys, on flows
whose every name needs backquotes, under both targets, and over `flowc diff`'s words.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.compiler.analysis import CheckOptions, check_source
from flowc.source import SourceFile

FLOWS = {
    "handoffs": """\
speaker `the user`: human
speaker `bot 1` {
  tool `go on` hands off to `help desk`
  tool `route it` sets `my key` = "x"
  tool `close it` finishes "done"
}
speaker `help desk`
speaker `an agent`
speaker `never one`
speaker `late one`
start `the user`
max_turns 4
when context.`my key` == "x" then `help desk`
when from `the user` then `bot 1`
when tool `go on` then `an agent`
when tool `close it` then `an agent`
when from `help desk` then `late one`
when from `an agent` then terminate "a"
""",
    "cap": """\
speaker `the bot`
speaker `a human`: human
speaker `late one`
speaker `other one` {
  tool `set it` sets `the key` = 1
}
start `the bot`
max_turns 2
when from `the bot` then `a human`
when from `a human` then `late one`
when from `late one` then terminate "done"
when from `other one` then `the bot`
""",
    "ag2": """\
speaker `the user`: human
speaker `bot 1` {
  tool `go on` hands off to `bot 1` | finishes "x"
}
speaker `bot 2`
start `the user`
when from `bot 2` then `bot 1` priority 2
when from `the user` then `bot 1`
when from `bot 1` then `bot 2`
when from `bot 2` then terminate "y"
""",
}

#: codes these flows get that name a speaker, a tool or a key
NAMING = {"W201", "W203", "W204", "W205", "W207", "W213", "W215", "W219", "W221"}


def _names(text: str) -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", text))


def _doubled(text: str, names: set[str]) -> list[str]:
    return [name for name in names if f"``{name}``" in text]


def test_quoted_once() -> None:
    from flowc.compiler.quoting import once, ticked

    assert [once("bot"), once("`bot 1`"), ticked("bot 1"), ticked("next")] == [
        "`bot`",
        "`bot 1`",
        "`bot 1`",
        "`next`",
    ]


@pytest.mark.parametrize("target", ["flowc", "ag2"])
def test_check_quotes_each_name_once(target: str) -> None:
    seen: set[str] = set()
    for label, text in FLOWS.items():
        names = _names(text)
        for d in check_source(SourceFile(f"{label}.flow", text), CheckOptions(target=target)):
            seen.add(d.code.id)
            words = "\n".join([d.message, *d.notes, d.help or ""])
            assert not _doubled(words, names), f"{label}: {d.code.id}: {words}"
    if target == "ag2":
        assert seen >= NAMING, NAMING - seen


def _diff(tmp_path: Path, old: str, new: str) -> str:
    """What `flowc diff OLD NEW` prints."""
    (tmp_path / "old.flow").write_text(old)
    (tmp_path / "new.flow").write_text(new)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(["diff", str(tmp_path / "old.flow"), str(tmp_path / "new.flow")])
    return out.getvalue()


def test_diff_quotes_each_name_once(tmp_path: Path) -> None:
    old = FLOWS["handoffs"]
    new = old.replace('  tool `close it` finishes "done"\n', "").replace("`the user`", "`a user`")
    text = _diff(tmp_path, old, new)
    assert "declares no tool" in text or "refuse" in text or "`close it`" in text, text
    assert not _doubled(text, _names(old) | _names(new)), text


def test_diff_quotes_a_changed_target_once(tmp_path: Path) -> None:
    """A rule whose target changed names both targets: each quoted once, as written."""
    old = FLOWS["handoffs"]
    new = old.replace(
        "when from `help desk` then `late one`", "when from `help desk` then `an agent`"
    )
    text = _diff(tmp_path, old, new)
    assert "now goes to `an agent` (was `late one`)" in text, text
    assert not _doubled(text, _names(old) | _names(new)), text
