"""A lone carriage return (an old Mac line end) ends a line, as it does in an editor and
for the language server protocol: a comment stops there instead of swallowing what the
editor shows on the next lines, and positions are on the editor's lines. Read as a
space, a file saved with such line ends lost every statement after its first comment,
and `flowc check` passed it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from flowc import compile_flow
from flowc.cli import main
from flowc.dsl.parser import parse_source
from flowc.source import SourceFile, lone_returns_as_newlines

#: a flow whose second line is a comment: the rules after it are what the comment swallowed
LINES = [
    "speaker a: human",
    "# the reviewer loop",
    "speaker b",
    "start a",
    "when from a then b",
    'when from b then terminate "done"',
]


def with_ends(end: str) -> str:
    return end.join(LINES) + end


def findings(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[tuple[object, ...]]]:
    """``flowc check --format json``'s exit code and (code, line, column, message) of each finding."""
    code = main(["check", "--format", "json", str(path)])
    found = json.loads(capsys.readouterr().out)
    return code, [
        (d["code"], d["location"]["row"], d["location"]["column"], d["message"]) for d in found
    ]


@pytest.mark.parametrize("end", ["\r", "\r\n", "\n"])
def test_every_rule_after_a_comment_is_read(end: str) -> None:
    flow = compile_flow(with_ends(end))
    assert [r.span.line for r in flow.rules] == [5, 6]
    assert flow.start == "a"


def test_check_sees_the_rules_after_a_comment_and_the_editors_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same findings, on the same lines and columns, whichever line end the file
    has (read as a space, `\\r` made the flow one line whose comment hid both rules:
    `b` was never scheduled, W201)."""
    lines = [*LINES, "when from b then a"]  # a rule no turn reaches: W203, on line 7
    results = []
    for end in ("\n", "\r", "\r\n"):
        path = tmp_path / f"f{len(results)}.flow"
        path.write_bytes(end.join(lines).encode() + end.encode())
        results.append(findings(path, capsys))
    assert results[1] == results[0] == results[2]
    codes = [(c, line) for c, line, _, _ in results[0][1]]
    assert ("W203", 7) in codes and "W201" not in [c for c, _ in codes], codes


def test_fmt_makes_lone_returns_newlines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mac.flow"
    path.write_bytes(with_ends("\r").replace("when from", "when   from").encode())
    assert main(["fmt", str(path)]) == 0
    assert path.read_bytes() == with_ends("\n").encode()
    capsys.readouterr()


@pytest.mark.parametrize(
    "text",
    [
        with_ends("\r"),
        with_ends("\n").replace("speaker b\n", "speaker b\r"),
        "\ufeff" + with_ends("\r"),
    ],
)
def test_fmt_rewrites_a_formatted_file_whose_only_change_is_its_line_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    """A lone `\r` is a change of its own: `--check` and `--diff` say so, and `fmt` writes
    the newline (the text flowc reads has it already, so comparing with that text found
    the file formatted and left it as it was)."""
    path = tmp_path / "mac.flow"
    path.write_bytes(text.encode())
    assert main(["fmt", "--check", str(path)]) == 1
    assert "would reformat" in capsys.readouterr().err
    assert main(["fmt", "--diff", str(path)]) == 1
    assert "+speaker b\n" in capsys.readouterr().out
    assert main(["fmt", str(path)]) == 0
    bom = "\ufeff" if text.startswith("\ufeff") else ""  # kept, as the line ends are
    assert path.read_bytes() == (bom + with_ends("\n")).encode()
    assert main(["fmt", "--check", str(path)]) == 0
    capsys.readouterr()


def test_a_formatted_file_with_a_byte_order_mark_is_left_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bom.flow"
    path.write_bytes(b"\xef\xbb\xbf" + with_ends("\n").encode())
    assert main(["fmt", "--check", str(path)]) == 0
    assert main(["fmt", str(path)]) == 0
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    capsys.readouterr()


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_fmt_keeps_a_byte_order_mark_whatever_else_it_changes(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    end: str,
) -> None:
    """`--check` passes on a formatted file with a BOM, so `fmt` keeps the BOM when it
    rewrites one (a file or standard input): the two agree on every file."""
    bom = b"\xef\xbb\xbf"
    messy = bom + with_ends(end).replace("when from", "when   from").encode()
    path = tmp_path / "bom.flow"
    path.write_bytes(messy)
    assert main(["fmt", "--check", str(path)]) == 1
    assert main(["fmt", str(path)]) == 0
    assert path.read_bytes() == bom + with_ends(end).encode()
    assert main(["fmt", "--check", str(path)]) == 0
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(messy), newline=""))
    out = io.BytesIO()
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(out))
    assert main(["fmt", "-"]) == 0
    assert out.getvalue() == bom + with_ends(end).encode()
    capsys.readouterr()


def test_a_byte_that_is_not_utf8_is_on_the_editors_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for end in ("\n", "\r", "\r\n"):
        path = tmp_path / "bad.flow"
        path.write_bytes(
            end.join(["speaker a", "speaker b", "speaker c\xff"]).encode("latin-1") + end.encode()
        )
        assert main(["check", str(path)]) == 1
        said = "".join(capsys.readouterr())
        assert f"{path}:3:10" in said and 'in "speaker c\\xff")' in said, said


def test_offsets_stay_where_they_were() -> None:
    """One character for one: a span's offsets index the text as the editor has it."""
    text = "a\rb\r\nc\r\r\nd\r"
    read = SourceFile("f.flow", text)
    assert read.text == "a\nb\r\nc\n\r\nd\n" == lone_returns_as_newlines(text)
    assert len(read.text) == len(text)
    assert [read.position(text.index(ch)) for ch in "abcd"] == [(1, 1), (2, 1), (3, 1), (5, 1)]
    assert lone_returns_as_newlines("a\r\nb") == "a\r\nb"


@pytest.mark.parametrize("end", ["\r", "\r\n"])
def test_a_comment_ends_where_its_line_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], end: str
) -> None:
    """A comment stops before its line's end, the `\\r` of `\\r\\n` included: its text,
    its span and the X001 `flowc check` reports over it are those of the same file with
    newlines (the span took the `\\r` in, one column more, and the text had it: a quick
    fix that rewrote the comment wrote it back inside the line)."""
    lines = ["speaker a  # flowc: ignore[W203]", "speaker b  # a note ", "# alone", "#"]
    text = end.join(lines) + end
    flow, _ = parse_source(SourceFile("f.flow", text))
    plain, _ = parse_source(SourceFile("f.flow", "\n".join(lines) + "\n"))
    got = [
        (c.text, c.span.line, c.span.column, c.span.end_line, c.span.end_column)
        for c in flow.comments
    ]
    assert got == [
        (" flowc: ignore[W203]", 1, 12, 1, 33),
        (" a note ", 2, 12, 2, 21),
        (" alone", 3, 1, 3, 8),
        ("", 4, 1, 4, 2),
    ]
    assert got == [
        (c.text, c.span.line, c.span.column, c.span.end_line, c.span.end_column)
        for c in plain.comments
    ]
    assert all(text[c.span.start : c.span.end] == "#" + c.text for c in flow.comments)
    ends = []
    for name, written in (("lf", "\n".join(lines) + "\n"), ("other", text)):
        path = tmp_path / f"{name}.flow"
        path.write_bytes(written.encode())
        main(["check", "--format", "json", str(path)])
        found = json.loads(capsys.readouterr().out)
        ends += [(d["location"], d["end_location"]) for d in found if d["code"] == "X001"]
    assert ends == [({"row": 1, "column": 12}, {"row": 1, "column": 33})] * 2
