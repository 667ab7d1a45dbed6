"""A change of a document the editor has not opened, or has closed (a change racing
the close, or one after a `didOpen` the server skipped as unreadable), is dropped with
a line in the server's log: there is no text to apply it to. It told the user
`Error in server: KeyError: 'file:///...'` at every keystroke."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.client import change, change_range, open_doc, wait_version
from tests.lsp.test_incremental import checked, published

pytestmark = pytest.mark.asyncio(loop_scope="module")

FLOW = "speaker a: human\nspeaker b\nstart a\nwhen from a then b\n"


async def settled(client: LanguageClient) -> None:
    """Every notification sent so far handled, and what it made the server send
    received: the server handles messages in order, and writes in order."""
    await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier("file:///nowhere.flow"), lsp.Position(0, 0))
    )


async def test_a_change_of_a_document_never_opened_is_dropped(client: LanguageClient) -> None:
    uri = client.root.joinpath("never-opened.flow").as_uri()  # type: ignore[attr-defined]
    change_range(client, uri, 2, lsp.Position(0, 0), lsp.Position(0, 0), "x")
    change(client, uri, 3, FLOW)
    await settled(client)
    # no error shown (pygls': `Error in server: KeyError: 'file:///...'`), and nothing
    # checked: the server read no text of it
    assert not [m for m in client.messages if "never-opened.flow" in m.message]
    assert not [p for p in client.published if p.uri == uri]  # type: ignore[attr-defined]


async def test_a_change_after_the_close_is_dropped(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    doc = lsp.TextDocumentIdentifier(uri)
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(doc))
    change_range(client, uri, 2, lsp.Position(3, 17), lsp.Position(3, 18), "a")
    await settled(client)
    assert not [m for m in client.messages if uri in m.message]
    # opened again, it is the editor's text, and the changes after it apply
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "flow", 5, FLOW))
    )
    assert published(await wait_version(client, uri, 5)) == checked(FLOW)
    change_range(client, uri, 6, lsp.Position(3, 17), lsp.Position(3, 18), "a")
    assert published(await wait_version(client, uri, 6)) == checked(
        FLOW.replace("then b", "then a")
    )
