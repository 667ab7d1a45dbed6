"""While the check of a version that parses is still running, the outline and the folds
answer from that version's tree, at its places (an edit that parses moves the last
analysis' tree in place, so that one no longer answers): they never go blank on
ordinary typing. The `held_client` server holds its checks until told to go on."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.client import change_range, open_doc, wait_version
from tests.lsp.conftest import HOLD
from tests.lsp.test_broken_places import REVIEW, at

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _outline(symbols: object) -> list[tuple[str, int, int]]:
    assert isinstance(symbols, list | tuple)
    out: list[tuple[str, int, int]] = []
    for s in symbols:
        assert isinstance(s, lsp.DocumentSymbol)
        out.append((s.name, s.selection_range.start.line, s.selection_range.start.character))
        out += _outline(s.children or [])
    return out


def _folds(folds: object) -> list[tuple[int, int]]:
    assert isinstance(folds, list | tuple)
    return sorted((f.start_line, f.end_line) for f in folds)


async def test_outline_and_folds_while_an_edit_is_checked(held_client: LanguageClient) -> None:
    client = held_client
    uri = await open_doc(client, REVIEW)
    doc = lsp.TextDocumentIdentifier(uri)
    before = _outline(
        await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(doc))
    )
    folds_before = _folds(
        await client.text_document_folding_range_async(lsp.FoldingRangeParams(doc))
    )
    assert len(before) >= 5 and folds_before
    entered = HOLD.with_name(HOLD.name + ".entered")
    entered.unlink(missing_ok=True)
    HOLD.touch()
    try:
        change_range(client, uri, 2, at(0, 0), at(0, 0), "\n")  # (a line above all)
        for _ in range(1000):  # (the check of version 2 has begun, and waits)
            if entered.exists():
                break
            await asyncio.sleep(0.01)
        assert entered.exists()
        during = _outline(
            await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(doc))
        )
        folds_during = _folds(
            await client.text_document_folding_range_async(lsp.FoldingRangeParams(doc))
        )
    finally:
        HOLD.unlink(missing_ok=True)
    await wait_version(client, uri, 2)
    after = _outline(
        await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(doc))
    )
    folds_after = _folds(
        await client.text_document_folding_range_async(lsp.FoldingRangeParams(doc))
    )
    # one line down, during the check as after it
    assert after == [(name, line + 1, col) for name, line, col in before]
    assert during == after
    assert folds_during == folds_after == [(a + 1, b + 1) for a, b in folds_before]
