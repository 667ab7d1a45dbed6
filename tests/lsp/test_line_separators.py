"""A character that `str.splitlines` ends a line at but an editor does not (a form feed,
U+001C-1E, U+0085, U+2028, U+2029) leaves every position where the editor has it: the
server keeps a document's lines as flowc numbers them (newlines only), applies an
editor's changes of a range on those lines, and answers on them (hover, definition,
rename, completion, formatting, colours, outline)."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from flowc.dsl.formatter import format_source
from tests.lsp.client import (
    apply,
    apply_edits,
    change_range,
    colours_and_outline,
    open_doc,
    wait_version,
)
from tests.lsp.test_incremental import checked, published

pytestmark = pytest.mark.asyncio(loop_scope="module")

SEPARATORS = ["\x0c", "\x1d", "\x85", "\u2028", "\u2029"]


def flow(sep: str, final: str = "\n") -> str:
    """A flow with ``sep`` in its first line's comment: `then b` is on line 4 (0-based)."""
    return f"# a{sep}b\nspeaker a\nspeaker b\nstart a\nwhen from a then b{final}"


THEN_B = lsp.Position(4, 17)


@pytest.mark.parametrize("sep", SEPARATORS)
async def test_an_editors_change_of_a_range_goes_where_the_editor_made_it(
    client: LanguageClient, sep: str
) -> None:
    """The editor sends the change of a range (incremental sync): `b` of `then b` made
    `a`. pygls applied it on `str.splitlines`'s lines, a line off: it changed `start a`."""
    text = flow(sep)
    uri = await open_doc(client, text)
    change_range(client, uri, 2, THEN_B, lsp.Position(4, 18), "a")
    new = text.replace("then b", "then a")
    assert published(await wait_version(client, uri, 2)) == checked(new)


@pytest.mark.parametrize("sep", SEPARATORS)
async def test_hover_definition_rename_and_completion_after_one(
    client: LanguageClient, sep: str
) -> None:
    text = flow(sep)
    uri = await open_doc(client, text)
    doc = lsp.TextDocumentIdentifier(uri)
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, THEN_B))
    assert hover is not None and hover.range is not None
    assert (hover.range.start, hover.range.end) == (THEN_B, lsp.Position(4, 18))
    found = await client.text_document_definition_async(lsp.DefinitionParams(doc, THEN_B))
    assert isinstance(found, list) and isinstance(found[0], lsp.Location)
    assert found[0].range.start == lsp.Position(2, 8)
    edit = await client.text_document_rename_async(lsp.RenameParams(doc, THEN_B, "bee"))
    assert edit is not None
    assert apply(text, edit) == text.replace("speaker b", "speaker bee").replace(
        "then b", "then bee"
    )
    done = await client.text_document_completion_async(lsp.CompletionParams(doc, THEN_B))
    labels = [i.label for i in (done.items if isinstance(done, lsp.CompletionList) else done)]
    assert {"a", "b"} <= set(labels), labels


@pytest.mark.parametrize("sep", SEPARATORS)
@pytest.mark.parametrize("final", ["\n", ""])
async def test_formatting_after_one(client: LanguageClient, sep: str, final: str) -> None:
    """The whole document's edit ends where the document does (it ended a line past it),
    and a range's edit stays within the document."""
    text = flow(sep, final).replace("speaker b", "speaker    b").replace("a then", "a   then")
    uri = await open_doc(client, text)
    doc = lsp.TextDocumentIdentifier(uri)
    options = lsp.FormattingOptions(tab_size=2, insert_spaces=True)
    edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(doc, options))
    assert edits
    lines = text.split("\n")
    assert edits[-1].range.end == lsp.Position(len(lines) - 1, len(lines[-1]))
    assert apply_edits(text, edits) == format_source(text)
    ranged = await client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(
            doc, lsp.Range(lsp.Position(4, 0), lsp.Position(4, 3)), options
        )
    )
    assert ranged and all(e.range.end.line <= len(lines) - 1 for e in ranged), ranged
    assert apply_edits(text, ranged).split("\n")[4] == "when from a then b"


@pytest.mark.parametrize("sep", SEPARATORS)
async def test_colours_and_outline_after_one(client: LanguageClient, sep: str) -> None:
    text = flow(sep)
    uri = await open_doc(client, text)
    doc = lsp.TextDocumentIdentifier(uri)
    coloured, outline = await colours_and_outline(client, doc, text.split("\n"))
    assert (2, "b", "class") in coloured and (4, "b", "class") in coloured, coloured
    assert ("b", 2) in outline, outline
