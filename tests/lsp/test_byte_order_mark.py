"""A document that starts with a byte order mark (U+FEFF), as an editor may keep one in
its text: the server reads it as `flowc check` reads the file (which drops the mark),
finding the same, on the editor's positions (the mark is one UTF-16 unit of the first
line, so the first line's columns count it; no other line's do). Formatting keeps the
mark, as `flowc fmt` does."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from flowc.dsl.formatter import format_source
from tests.lsp.client import apply_edits, open_doc
from tests.lsp.test_incremental import checked, published

pytestmark = pytest.mark.asyncio(loop_scope="module")

BOM = "\ufeff"
#: the unused speaker on the first line is a finding (W201) there
TEXT = (
    "speaker   c\n"
    "speaker a: human\n"
    "speaker b\n"
    "start a\n"
    "when from a then b\n"
    "when from b then a\n"
    'when from b then terminate   "done"\n'
)


def on_the_editors_columns(found: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """`flowc check`'s findings (columns after the mark) with the first line's columns
    counting the mark, as the editor's text has it."""
    out = []
    for code, message, severity, line, column, end_line, end_column in found:
        column = column + 1 if line == 0 else column  # type: ignore[operator]
        end_column = end_column + 1 if end_line == 0 else end_column  # type: ignore[operator]
        out.append((code, message, severity, line, column, end_line, end_column))
    return out


async def test_findings_are_those_of_flowc_check_on_the_editors_columns(
    client: LanguageClient,
) -> None:
    await open_doc(client, BOM + TEXT)
    diags = published(client.last_diagnostics)  # type: ignore[attr-defined]
    assert diags == on_the_editors_columns(checked(TEXT))
    assert ("W201", 0, 11) in [(d[0], d[3], d[4]) for d in diags], diags


async def test_a_syntax_error_on_the_first_line_is_after_the_mark(
    client: LanguageClient,
) -> None:
    await open_doc(client, BOM + TEXT.replace("speaker   c", "speakr c"))
    diags = published(client.last_diagnostics)  # type: ignore[attr-defined]
    assert [(d[0], d[3], d[4]) for d in diags] == [("E001", 0, 1)], diags


async def test_requests_on_the_first_line_count_the_mark(client: LanguageClient) -> None:
    uri = await open_doc(client, BOM + TEXT)
    doc = lsp.TextDocumentIdentifier(uri)
    on_c = lsp.Position(0, 11)
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, on_c))
    assert hover is not None and hover.range is not None
    assert (hover.range.start, hover.range.end) == (on_c, lsp.Position(0, 12))


async def test_formatting_keeps_the_mark_as_flowc_fmt_does(client: LanguageClient) -> None:
    text = BOM + TEXT
    uri = await open_doc(client, text)
    doc = lsp.TextDocumentIdentifier(uri)
    options = lsp.FormattingOptions(tab_size=2, insert_spaces=True)
    edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(doc, options))
    assert edits and apply_edits(text, edits) == BOM + format_source(TEXT)
    # a range: the first line changes (`speaker   c`), the mark stays before it
    ranged = await client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(
            doc, lsp.Range(lsp.Position(0, 0), lsp.Position(1, 0)), options
        )
    )
    assert ranged
    assert apply_edits(text, ranged).startswith(BOM + "speaker c\nspeaker a: human\n")
    # a formatted document with the mark: nothing to do
    uri = await open_doc(client, BOM + format_source(TEXT))
    doc = lsp.TextDocumentIdentifier(uri)
    edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(doc, options))
    assert not edits
