"""Helpers for the `flowc lsp` tests: open and edit documents, wait for diagnostics,
find positions in a text, apply the edits the server answers with."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

#: the priority trap: `priority 100` sorts the terminate rule last, so it never fires (W204)
TRAP = """\
speaker user: human
speaker drafter
speaker reviewer {
  tool approve sets approved = true
}
start user
max_turns 12
when context.approved == true then terminate "approved" priority 100
when from user     then drafter
when from drafter  then reviewer
when from reviewer then drafter
"""

_opened = 0


async def open_doc(client: LanguageClient, text: str, name: str = "") -> str:
    """Open a new document and wait for its first diagnostics."""
    global _opened
    _opened += 1
    root: Path = client.root  # type: ignore[attr-defined]
    path = root / (name or f"doc{_opened}.flow")
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="flow", version=1, text=text)
        )
    )
    client.last_diagnostics = await wait_diagnostics(client, uri)  # type: ignore[attr-defined]
    return uri


async def wait_diagnostics(
    client: LanguageClient, uri: str, timeout: float = 30
) -> list[lsp.Diagnostic]:
    """The next diagnostics published for ``uri`` (the caller pops the old ones before
    the edit), taken out so that the next wait sees only newer ones."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if uri in client.diagnostics:
            return list(client.diagnostics.pop(uri))
        await asyncio.sleep(0.02)
    raise AssertionError(f"no diagnostics for {uri}")


async def wait_version(
    client: LanguageClient, uri: str, version: int, timeout: float = 30
) -> list[lsp.Diagnostic]:
    """The diagnostics published for ``version`` of ``uri`` (the server publishes each
    with the version it analysed)."""
    published: list[lsp.PublishDiagnosticsParams] = client.published  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for params in published:
            if params.uri == uri and params.version == version:
                return list(params.diagnostics)
        await asyncio.sleep(0.02)
    raise AssertionError(f"no diagnostics for version {version} of {uri}")


def versions(client: LanguageClient, uri: str) -> list[int | None]:
    """The versions of ``uri`` whose diagnostics were published, in order."""
    published: list[lsp.PublishDiagnosticsParams] = client.published  # type: ignore[attr-defined]
    return [p.version for p in published if p.uri == uri]


def change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def change_range(
    client: LanguageClient,
    uri: str,
    version: int,
    start: lsp.Position,
    end: lsp.Position,
    text: str,
) -> None:
    """The editor's change of one range (incremental sync): ``start`` .. ``end`` made ``text``."""
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [lsp.TextDocumentContentChangePartial(range=lsp.Range(start, end), text=text)],
        )
    )


def position_of(text: str, needle: str, nth: int = 0, offset: int = 1) -> lsp.Position:
    """The position ``offset`` characters into the ``nth`` occurrence of ``needle``."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    at += offset
    line = text.count("\n", 0, at)
    return lsp.Position(line, at - (text.rfind("\n", 0, at) + 1))


def apply_edits(text: str, edits: Sequence[lsp.TextEdit]) -> str:
    """``text`` with ``edits`` made (ranges of the text before any of them, as LSP sends),
    on an editor's lines: ended by ``\\n``, ``\\r\\n`` or a lone ``\\r`` (a form feed or
    U+2028 ends none, though ``str.splitlines`` ends a line there)."""
    starts = [0, *(m.end() for m in re.finditer(r"\r\n|\r|\n", text))]  # of each line
    lines = len(starts)
    starts.append(len(text))  # a line past the last: the end
    out = text
    for e in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        begin = starts[e.range.start.line] + e.range.start.character
        end = starts[min(e.range.end.line, lines)] + e.range.end.character
        out = out[:begin] + e.new_text + out[end:]
    return out


def apply(text: str, edit: lsp.WorkspaceEdit) -> str:
    """``text`` with the edits of a workspace edit of one document made."""
    assert edit.document_changes is not None and len(edit.document_changes) == 1
    doc = edit.document_changes[0]
    assert isinstance(doc, lsp.TextDocumentEdit)
    assert all(isinstance(e, lsp.TextEdit) for e in doc.edits)
    return apply_edits(text, doc.edits)  # type: ignore[arg-type]


async def colours_and_outline(
    client: LanguageClient, doc: lsp.TextDocumentIdentifier, lines: Sequence[str]
) -> tuple[list[tuple[int, str, str]], list[tuple[str, int]]]:
    """The coloured tokens of ``doc`` as (line, text, token type), their text read on
    ``lines`` (the editor's lines, without their ends), and its outline as (name, line)."""
    result = await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(doc))
    assert result is not None and client.server_caps.semantic_tokens_provider is not None
    legend = client.server_caps.semantic_tokens_provider.legend
    line = column = 0
    coloured = []
    for i in range(0, len(result.data), 5):
        down, right, length, kind, _ = result.data[i : i + 5]
        line += down
        column = column + right if down == 0 else right
        coloured.append((line, lines[line][column : column + length], legend.token_types[kind]))
    symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(doc))
    assert symbols is not None
    outline = [(s.name, s.range.start.line) for s in symbols]  # type: ignore[union-attr]
    return coloured, outline


async def hover_text(client: LanguageClient, uri: str, position: lsp.Position) -> str | None:
    """The text of the hover at ``position`` (None when there is none)."""
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), position)
    )
    if hover is None:
        return None
    assert isinstance(hover.contents, lsp.MarkupContent)
    return hover.contents.value
