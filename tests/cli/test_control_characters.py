"""The text reports (`check`, `migrate`, `diff`, `--format concise`) never print a control
character of the input (ESC in a backquoted name, a carriage return) to the terminal:
each is written as an escape, as the E001 excerpt of a file that is not UTF-8 is."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.cli import main
from flowc.diagnostics import E101, Diagnostic, render_concise, render_text
from flowc.source import SourceFile

NAME = "b\x1b[2Jx"
FLOW = f"speakers a, `{NAME}`\nwhen from a then `{NAME}`\n"


def _no_control(text: str) -> None:
    assert not any((ord(c) < 32 and c not in "\n") or 0x7F <= ord(c) <= 0x9F for c in text), text


@pytest.mark.parametrize("fmt", ["text", "concise"])
def test_check_escapes_a_name_s_control_characters(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    path = tmp_path / "esc.flow"
    # the start speaker's W207 names it, and quotes its line
    path.write_text(f"speakers `{NAME}`, a\nwhen from `{NAME}` then a\n", encoding="utf-8")
    assert main(["check", str(path), "--format", fmt]) == 0
    out, err = capsys.readouterr()
    _no_control(out + err)
    assert "b\\x1b[2Jx" in out + err


def test_the_excerpt_s_caret_moves_with_the_escapes() -> None:
    source = SourceFile("f.flow", f"when from `{NAME}` then nobody\n")
    at = source.text.index("nobody")
    d = Diagnostic(E101, "`nobody` is not declared", "f.flow", source.span(at, at + 6))
    text = render_text([d], {"f.flow": source})
    _no_control(text)
    lines = text.splitlines()
    quoted = next(line for line in lines if line.startswith("1 |"))
    caret = lines[lines.index(quoted) + 1]
    assert quoted[caret.index("^") : caret.index("^") + 6] == "nobody"
    assert caret.count("^") == 6


def test_messages_notes_and_paths_are_escaped() -> None:
    d = Diagnostic(
        E101,
        "name `a\x1bb`",
        "f\x1b.json",
        json_path="config.\x9bname",
        notes=("note \x07",),
        help="help \r",
    )
    _no_control(render_text([d]))
    _no_control(render_concise([d]))
    assert render_concise([d]) == "f\\x1b.json:config.\\x9bname: E101 name `a\\x1bb`\n"


@pytest.mark.parametrize("color", ["", "1"])
@pytest.mark.parametrize("name", [NAME, "b\x1b[31mx"], ids=["clear", "a colour of the report's"])
def test_diff_escapes_a_name_s_control_characters(
    color: str,
    name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FORCE_COLOR", color)
    flow = FLOW.replace(NAME, name)
    old, new = tmp_path / "old.flow", tmp_path / "new.flow"
    old.write_text(flow, encoding="utf-8")
    new.write_text(flow + f"when from `{name}` then a\n", encoding="utf-8")
    assert main(["diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    escaped = name.replace("\x1b", "\\x1b")
    assert escaped in out
    # the report's own colours stay (with colour), nothing of the name acts
    assert name not in out
    assert ("\x1b[1m" in out) == bool(color)
