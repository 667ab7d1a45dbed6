"""A file's comments as the offsets of their `#` (flowc.dsl.comments.Comments): the same
nodes, spans included, as a tuple of them, read one at a time."""

from __future__ import annotations

import sys
from pathlib import Path

import attrs
import pytest

from flowc.dsl.comments import Comments, comments_containing
from flowc.dsl.formatter import format_flow
from flowc.dsl.nodes import Comment
from flowc.dsl.parser import parse_source
from flowc.source import SourceFile, Span

ROOT = Path(__file__).resolve().parents[2]
FLOWS = sorted((ROOT / "examples").glob("*.flow")) + sorted(
    (ROOT / "tests" / "cases").rglob("*.flow")
)

TEXT = "speaker a  # one\r\n\n  # two {  \n# flowc: ignore[W207]\nwhen from a then a # flowc\n#"


def test_comments_are_nodes_with_their_spans() -> None:
    flow, _ = parse_source(SourceFile("f.flow", TEXT))
    comments = flow.comments
    assert isinstance(comments, Comments) and comments.starts.itemsize == 4
    assert list(comments) == [comments[i] for i in range(len(comments))]
    assert [(c.text, c.span) for c in comments] == [
        (" one", Span(1, 12, 1, 17, 11, 16)),  # (stops before its line's `\r\n`)
        (" two {  ", Span(3, 3, 3, 12, 21, 30)),
        (" flowc: ignore[W207]", Span(4, 1, 4, 22, 31, 52)),
        (" flowc", Span(5, 20, 5, 27, 72, 79)),
        ("", Span(6, 1, 6, 2, 80, 81)),
    ]
    assert comments[1:3] == [comments[1], comments[2]]
    assert comments == tuple(comments) and comments != tuple(comments)[:-1]


def test_comments_that_say_a_word_are_found_in_the_text() -> None:
    source = SourceFile("f.flow", TEXT.replace("speaker a", "speaker flowc"))
    flow, _ = parse_source(source)
    found = [c.text for c in comments_containing(flow.comments, "flowc")]
    assert found == [" flowc: ignore[W207]", " flowc"]  # not the speaker named flowc
    assert found == [c.text for c in comments_containing(tuple(flow.comments), "flowc")]


@pytest.mark.parametrize("path", FLOWS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_formatter_lays_out_offsets_as_it_does_nodes(path: Path) -> None:
    flow, diags = parse_source(SourceFile(str(path), path.read_text(encoding="utf-8")))
    if diags:
        return
    as_nodes = attrs.evolve(flow, comments=tuple(reversed(tuple(flow.comments))))
    assert format_flow(as_nodes) == format_flow(flow)


def test_a_million_comments_take_a_few_megabytes() -> None:
    text = "speakers a, b\n" + "# note\n" * 1_000_000
    flow, _ = parse_source(SourceFile("f.flow", text))
    comments = flow.comments
    assert isinstance(comments, Comments) and len(comments) == 1_000_000
    assert sys.getsizeof(comments.starts) < 5 * 2**20
    assert comments[-1] == Comment(" note", Span(1_000_001, 1, 1_000_001, 7, 0, 0))
