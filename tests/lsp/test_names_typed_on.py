"""While a document does not parse, the server answers from its last version that did,
each name placed where the edits since moved it. A name an edit typed on into another
(`reviewer` made `reviewer2`, no character of it replaced) is not that name any more: no
hover, definition, reference or rename of `reviewer` there, as for a name an edit
replaced part of. Before, the hover on `reviewer2` was speaker `reviewer`, and
`reviewer`'s references (the rename's start too) took in the `reviewer` of `reviewer2`."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.client import change_range, hover_text, open_doc, wait_version

pytestmark = pytest.mark.asyncio(loop_scope="module")

FLOW = """\
speaker user: human
speaker reviewer
start user
when from user then reviewer
when from reviewer then user
"""
DECLARED = lsp.Position(1, 10)  # on `reviewer` in its declaration
USED = lsp.Position(3, 22)  # on `reviewer` in `then reviewer`


async def broken(client: LanguageClient, typed: str, at: int = 28) -> str:
    """``FLOW`` opened, made not to parse (its last rule cut short), then ``typed``
    written at column ``at`` of its fourth line (28: right after `then reviewer`)."""
    uri = await open_doc(client, FLOW)
    change_range(client, uri, 2, lsp.Position(4, 23), lsp.Position(4, 28), "")
    assert "E001" in [d.code for d in await wait_version(client, uri, 2)]
    change_range(client, uri, 3, lsp.Position(3, at), lsp.Position(3, at), typed)
    await wait_version(client, uri, 3)
    return uri


async def lines_of_references(client: LanguageClient, uri: str) -> list[int]:
    found = await client.text_document_references_async(
        lsp.ReferenceParams(
            context=lsp.ReferenceContext(include_declaration=True),
            text_document=lsp.TextDocumentIdentifier(uri),
            position=DECLARED,
        )
    )
    return [loc.range.start.line for loc in found or []]


@pytest.mark.parametrize(("typed", "at"), [("2", 28), ("_old", 28), ("-x", 28), ("my", 20)])
async def test_a_name_typed_on_is_not_that_name(
    client: LanguageClient, typed: str, at: int
) -> None:
    uri = await broken(client, typed, at)
    doc = lsp.TextDocumentIdentifier(uri)
    assert await hover_text(client, uri, USED) is None
    assert await client.text_document_definition_async(lsp.DefinitionParams(doc, USED)) is None
    assert (
        await client.text_document_prepare_rename_async(lsp.PrepareRenameParams(doc, USED)) is None
    )
    assert await lines_of_references(client, uri) == [1, 4]


@pytest.mark.parametrize(
    ("typed", "lines"), [(" ", [1, 3, 4]), (" # a comment", [1, 3, 4]), ("\n", [1, 3, 5])]
)
async def test_a_name_followed_by_other_text_is_still_that_name(
    client: LanguageClient, typed: str, lines: list[int]
) -> None:
    uri = await broken(client, typed)
    hover = await hover_text(client, uri, USED)
    assert hover is not None and hover.startswith("**speaker `reviewer`**")
    assert await lines_of_references(client, uri) == lines
