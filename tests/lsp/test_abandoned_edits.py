"""An edit whose check is abandoned (the next version arrives while it runs) leaves the
analysis the editor still uses as it was: its code actions, hovers and kept findings
read positions in its own text. (The re-parser moves the spans of the statements after
an edit: moved in place, they were the shown analysis's too, so an undo back to its text
gave quick fixes that cut the wrong rule, hovers on the wrong line, and findings
republished a line low.)"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.client import apply, change, open_doc, wait_version
from tests.lsp.conftest import HOLD

TEXT = """\
speaker a
speaker b
start a
when from a then b
when from a then a
when from b then a
"""


async def _actions(client: LanguageClient, uri: str) -> list[lsp.CodeAction]:
    got = await asyncio.wait_for(
        client.text_document_code_action_async(
            lsp.CodeActionParams(
                lsp.TextDocumentIdentifier(uri),
                lsp.Range(lsp.Position(0, 0), lsp.Position(20, 0)),
                lsp.CodeActionContext(diagnostics=[]),
            )
        ),
        timeout=10,
    )
    return [a for a in got or [] if isinstance(a, lsp.CodeAction)]


@asynccontextmanager
async def abandoned(client: LanguageClient, uri: str, then: str) -> AsyncIterator[None]:
    """Version 2 (a comment line on top: every later span moves) is parsed, and its check
    held; version 3 (``then``) arrives meanwhile, so version 2's check is abandoned. The
    body runs while it is held."""
    entered = HOLD.with_name(HOLD.name + ".entered")
    entered.unlink(missing_ok=True)
    HOLD.touch()
    try:
        change(client, uri, 2, "# " + "x" * 30 + "\n" + TEXT)
        deadline = time.monotonic() + 30
        while not entered.exists():
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        change(client, uri, 3, then)
        await asyncio.sleep(0.1)
        yield
    finally:
        HOLD.unlink(missing_ok=True)


@pytest.mark.asyncio(loop_scope="module")
async def test_code_actions_after_an_abandoned_edit_and_an_undo(
    held_client: LanguageClient,
) -> None:
    client = held_client
    uri = await open_doc(client, TEXT)
    before = {a.title: apply(TEXT, a.edit) for a in await _actions(client, uri) if a.edit}
    async with abandoned(client, uri, TEXT):  # undone: the text of the analysis shown
        during = {a.title: apply(TEXT, a.edit) for a in await _actions(client, uri) if a.edit}
    await wait_version(client, uri, 3)
    after = {a.title: apply(TEXT, a.edit) for a in await _actions(client, uri) if a.edit}
    assert after == before
    # while the undone edit's check is abandoned: only fixes of the analysis shown, each
    # the edit it was (one it cannot place on its text may be left out, never misplaced)
    assert during and all(before.get(title) == text for title, text in during.items()), during


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_after_an_abandoned_edit_and_an_undo(held_client: LanguageClient) -> None:
    client = held_client
    uri = await open_doc(client, TEXT, "hover")
    at = lsp.HoverParams(
        lsp.TextDocumentIdentifier(uri), lsp.Position(4, 2)
    )  # `when from a then a`
    first = await client.text_document_hover_async(at)
    assert first is not None and "W203" in first.contents.value  # type: ignore[union-attr]
    async with abandoned(client, uri, TEXT):
        during = await asyncio.wait_for(client.text_document_hover_async(at), timeout=10)
    await wait_version(client, uri, 3)
    assert during is not None and "W203" in during.contents.value  # type: ignore[union-attr]


@pytest.mark.asyncio(loop_scope="module")
async def test_syntax_error_after_an_abandoned_edit(held_client: LanguageClient) -> None:
    client = held_client
    uri = await open_doc(client, TEXT, "syntax")
    first = await wait_version(client, uri, 1)
    want = sorted((d.code, d.range.start.line) for d in first)
    async with abandoned(client, uri, TEXT + "when from\n"):  # the undo, then a half rule
        pass
    last = await wait_version(client, uri, 3)
    got = sorted((d.code, d.range.start.line) for d in last if d.code != "E001")
    assert got == want
