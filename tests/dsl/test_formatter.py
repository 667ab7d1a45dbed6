"""Formatter cases: tests/cases/fmt/NAME.flow formats to NAME.expected.flow."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc import compile_flow, format_source
from flowc.dsl.parser import parse_source
from flowc.source import SourceFile

CASES = Path(__file__).parent.parent / "cases" / "fmt"
INPUTS = sorted(p for p in CASES.glob("*.flow") if not p.name.endswith(".expected.flow"))


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.stem)
def test_format_case(path: Path, request: pytest.FixtureRequest) -> None:
    expected_path = path.with_name(path.stem + ".expected.flow")
    out = format_source(path.read_text(encoding="utf-8"), path.name)
    if request.config.getoption("--update-golden", default=False):
        expected_path.write_text(out, encoding="utf-8")
    assert out == expected_path.read_text(encoding="utf-8")
    assert format_source(out) == out


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.stem)
def test_format_keeps_tree_and_comments(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    before, _ = parse_source(SourceFile("a", text))
    after, _ = parse_source(SourceFile("b", format_source(text)))
    assert after == before
    assert [c.text.strip() for c in after.comments] == [c.text.strip() for c in before.comments]


def test_format_keeps_what_a_flow_compiles_to() -> None:
    text = (CASES / "comments.flow").read_text(encoding="utf-8")
    assert compile_flow(format_source(text)).knobs == compile_flow(text).knobs


def test_empty_and_comment_only_files() -> None:
    assert format_source("") == ""
    assert format_source("\n\n   \n") == ""
    assert format_source("# only\n\n\n# comments   \n") == "# only\n\n# comments\n"


def test_keywords_and_odd_names_are_backquoted() -> None:
    out = format_source("speakers `when`, `a b`, `x-`, plain-name")
    assert out == "speakers `when`, `a b`, `x-`, plain-name\n"


def test_consecutive_rules_align_then_and_comments() -> None:
    src = (
        "speaker a\nspeaker b\n"
        "when from a then b # one\n"
        "when context.k == 1 then a # two\n"
        "\n"
        "when from b then a\n"
    )
    assert format_source(src) == (
        "speaker a\nspeaker b\n"
        "when from a         then b  # one\n"
        "when context.k == 1 then a  # two\n"
        "\n"
        "when from b then a\n"
    )


def test_alignment_never_opens_a_wide_gap() -> None:
    long_cond = " and ".join(f"context.key{i} == {i}" for i in range(4))
    src = f"speaker a\nspeaker b\nwhen from a then b\nwhen {long_cond} then a\n"
    out = format_source(src)
    assert "when from a then b\n" in out


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.stem)
def test_format_keeps_windows_line_endings(path: Path) -> None:
    """A file written with CRLF formats to the same layout, with CRLF on every line; the
    result is formatted already (so `fmt --check` passes on a Windows checkout)."""
    text = path.read_text(encoding="utf-8").replace("\n", "\r\n")
    expected = path.with_name(path.stem + ".expected.flow").read_text(encoding="utf-8")
    out = format_source(text, path.name)
    assert out == expected.replace("\n", "\r\n")
    assert format_source(out) == out


def test_the_first_line_ending_decides() -> None:
    assert (
        format_source("speaker a\r\nspeaker b\nspeaker c")
        == "speaker a\r\nspeaker b\r\nspeaker c\r\n"
    )
    assert format_source("speaker a\nspeaker b\r\n") == "speaker a\nspeaker b\n"
    assert format_source("speaker a") == "speaker a\n"


def test_range_formatting_keeps_windows_line_endings() -> None:
    from flowc.lsp.features import range_format_edits

    text = "speaker a\r\nspeaker   b\r\nwhen from a then b"
    assert range_format_edits(text, "f.flow", 0, 2) == [(1, 2, "speaker b\r\n")]


@pytest.mark.parametrize(
    ("text", "line", "edits"),
    [
        # a rule written after a speaker on its line: formatting the line keeps the rule
        (
            "speaker u: human\nspeaker a when from u then a\n",
            1,
            [(1, 2, "speaker a\nwhen from u then a\n")],
        ),
        # a speaker after a block's closing brace, with the comment that line ends with
        (
            "speaker u: human\nspeaker x {\n  tool t\n} speaker b  # flowc: ignore[W201]\n"
            "when from u then x\n",
            3,
            [(3, 4, "}\nspeaker b  # flowc: ignore[W201]\n")],
        ),
    ],
)
def test_range_format_keeps_statements_that_share_a_line(
    text: str, line: int, edits: list[tuple[int, int, str]]
) -> None:
    from flowc.lsp.features import range_format_edits

    assert range_format_edits(text, "f.flow", line, line) == edits
    # the edits applied give what formatting the whole file gives on those lines
    lines = text.splitlines(keepends=True)
    for start, end, new in reversed(edits):
        lines[start:end] = [new]
    assert "".join(lines) == format_source(text, "f.flow")


def _columns(text: str) -> int:
    """Terminal columns, counted here from the Unicode tables (not by flowc's code): a
    wide or full-width character two, a combining mark none, any other one."""
    import unicodedata

    return sum(
        0
        if unicodedata.combining(ch)
        else 2
        if unicodedata.east_asian_width(ch) in ("W", "F")
        else 1
        for ch in text
    )


def test_alignment_counts_columns_not_characters() -> None:
    """`then` and trailing comments line up as an editor shows them: a wide name takes two
    columns per character, an accent written as a combining mark none."""
    src = (
        "speaker user: human\nspeaker `用户`\nspeaker `cafe\u0301`\n"
        "when from user then `用户` # one\n"
        "when from `用户` then `cafe\u0301` # two\n"
        "when from `cafe\u0301` then user # three\n"
    )
    out = format_source(src)
    rules = [line for line in out.splitlines() if line.startswith("when ")]
    assert len(rules) == 3
    thens = {_columns(line[: line.index(" then ")]) for line in rules}
    comments = {_columns(line[: line.index("#")]) for line in rules}
    assert len(thens) == 1 and len(comments) == 1, out
    # as narrow as the widest rule allows: the widest `when` part is followed by one space
    assert (
        min(
            len(line[: line.index(" then ")]) - len(line[: line.index(" then ")].rstrip())
            for line in rules
        )
        == 0
    )
    assert format_source(out) == out
