"""A document whose lines end with a lone carriage return (an old Mac line end), or with
a mix of line ends: the server reads it on the editor's lines, as the protocol defines
them (a line ends at `\\n`, `\\r\\n` or `\\r`). Read as a space, `\\r` let the first comment
swallow the rest of the document, and every position was on another line than the
editor's."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from flowc.dsl.formatter import format_source
from flowc.lsp.core import text_lines
from flowc.source import lone_returns_as_newlines
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

LINES = [
    "# the reviewer loop",
    "speaker a: human",
    "speaker b",
    "start a",
    "when from a then b",
    "when from b then a",
    'when from b then terminate   "done"',  # never fires (W203); `then a` takes b's turns
]
#: only lone `\r`, and a mix of every line end
ENDS = [["\r"] * len(LINES), ["\r", "\n", "\r\n", "\r", "\r", "\n", "\r\n"]]


def document(ends: list[str]) -> str:
    return "".join(line + end for line, end in zip(LINES, ends, strict=True))


def as_editor_shows(text: str) -> str:
    """The same lines ended by newlines: what the editor shows, and what flowc reads."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


@pytest.mark.parametrize("ends", ENDS)
async def test_diagnostics_are_on_the_editors_lines(
    client: LanguageClient, ends: list[str]
) -> None:
    text = document(ends)
    await open_doc(client, text)
    diags = published(client.last_diagnostics)  # type: ignore[attr-defined]
    assert diags == checked(as_editor_shows(text))
    assert ("W203", 6) in [(d[0], d[3]) for d in diags], diags


@pytest.mark.parametrize("ends", ENDS)
async def test_a_change_of_a_range_goes_where_the_editor_made_it(
    client: LanguageClient, ends: list[str]
) -> None:
    """`then a` on line 5 made `then b`: pygls applies the change on the editor's lines."""
    text = document(ends)
    uri = await open_doc(client, text)
    change_range(client, uri, 2, lsp.Position(5, 17), lsp.Position(5, 18), "b")
    new = as_editor_shows(text).replace("from b then a", "from b then b")
    assert published(await wait_version(client, uri, 2)) == checked(new)


@pytest.mark.parametrize("ends", ENDS)
async def test_requests_on_the_editors_lines(client: LanguageClient, ends: list[str]) -> None:
    text = document(ends)
    uri = await open_doc(client, text)
    doc = lsp.TextDocumentIdentifier(uri)
    then_b = lsp.Position(4, 17)
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, then_b))
    assert hover is not None and hover.range is not None
    assert (hover.range.start, hover.range.end) == (then_b, lsp.Position(4, 18))
    edit = await client.text_document_rename_async(lsp.RenameParams(doc, then_b, "bee"))
    assert edit is not None
    renamed = as_editor_shows(apply(text, edit))
    assert renamed == as_editor_shows(text).replace(" b", " bee")
    coloured, outline = await colours_and_outline(client, doc, as_editor_shows(text).split("\n"))
    assert (2, "b", "class") in coloured and (4, "b", "class") in coloured, coloured
    assert ("b", 2) in outline, outline
    # the quick fix of W203 (the dead rule on line 6) removes that line
    where = lsp.Range(lsp.Position(6, 0), lsp.Position(6, 0))
    context = lsp.CodeActionContext(diagnostics=[])
    fixes = await client.text_document_code_action_async(lsp.CodeActionParams(doc, where, context))
    assert fixes and isinstance(fixes[0], lsp.CodeAction) and fixes[0].edit is not None
    assert as_editor_shows(apply(text, fixes[0].edit)).split("\n")[:-1] == LINES[:6]


#: the line ends `flowc fmt` keeps or makes: CRLF when the first line ends so, else LF
FMT_ENDS = [
    *ENDS,
    ["\r", "\r\n", "\r\n", "\n", "\r", "\r\n", "\r\n"],  # the first `\n` after a `\r`: still LF
    ["\r\n", "\r", "\n", "\r\n", "\r", "\r", "\r\n"],
]


def fmt_writes(text: str) -> str:
    """What `flowc fmt` writes for a file holding ``text`` (it formats the text flowc
    reads, whose line ending is the first line's)."""
    return format_source(lone_returns_as_newlines(text))


@pytest.mark.parametrize("ends", FMT_ENDS)
async def test_formatting_writes_what_flowc_fmt_writes(
    client: LanguageClient, ends: list[str]
) -> None:
    """The whole document's edit ends where the document does and gives what `flowc fmt`
    writes; a range's edit formats only the lines that change, on the editor's lines."""
    text = document(ends)
    uri = await open_doc(client, text)
    doc = lsp.TextDocumentIdentifier(uri)
    options = lsp.FormattingOptions(tab_size=2, insert_spaces=True)
    edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(doc, options))
    assert edits
    assert edits[-1].range.end == lsp.Position(len(LINES), 0)
    assert apply_edits(text, edits) == fmt_writes(text)
    assert 'then terminate "done"' in fmt_writes(text)
    ranged = await client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(
            doc, lsp.Range(lsp.Position(4, 0), lsp.Position(6, 3)), options
        )
    )
    # the lines of the range that change, ends included (a lone `\r` read as a newline
    # changes none by itself; a line whose end is not the file's does change)
    read = text_lines(lone_returns_as_newlines(text))
    wanted = text_lines(fmt_writes(text))
    changing = {i for i in range(4, 7) if read[i] != wanted[i]}
    assert 6 in changing
    assert (
        ranged
        and {i for e in ranged for i in range(e.range.start.line, e.range.end.line)} == changing
    ), ranged
    after = text_lines(lone_returns_as_newlines(apply_edits(text, ranged)))
    assert after[:4] == read[:4] and after[4:] == wanted[4:]


@pytest.mark.parametrize("ends", ENDS)
async def test_a_formatted_document_keeps_its_line_ends_through_a_change(
    client: LanguageClient, ends: list[str]
) -> None:
    """After a change of a range, the server's text is still the editor's, its lone
    `\r` kept: formatting then still makes them newlines, as `flowc fmt` does (a server
    whose lines had lost them would find nothing to format)."""
    text = document(ends).replace("terminate   ", "terminate ")
    assert as_editor_shows(text) == format_source(as_editor_shows(text))
    uri = await open_doc(client, text)
    change_range(client, uri, 2, lsp.Position(5, 17), lsp.Position(5, 18), "b")
    await wait_version(client, uri, 2)
    text = text.replace("from b then a", "from b then b")
    doc = lsp.TextDocumentIdentifier(uri)
    options = lsp.FormattingOptions(tab_size=2, insert_spaces=True)
    edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(doc, options))
    assert edits and apply_edits(text, edits) == fmt_writes(text) == as_editor_shows(text)


@pytest.mark.parametrize("ends", ENDS)
async def test_completion_after_a_comment(client: LanguageClient, ends: list[str]) -> None:
    """The comment on the first line ends at its `\r`: after it, a statement's keyword
    is offered (read as a space, the rest of the document was the comment's)."""
    text = document(ends) + "wh"
    uri = await open_doc(client, text)
    done = await client.text_document_completion_async(
        lsp.CompletionParams(lsp.TextDocumentIdentifier(uri), lsp.Position(len(LINES), 2))
    )
    labels = [i.label for i in (done.items if isinstance(done, lsp.CompletionList) else done)]
    assert "when" in labels, labels


#: a flow of CRLF lines whose `speaker b` speaks only after the cap (W215, line 3), with
#: a comment after it, and an ignore comment on line 2 that silences nothing (X001)
CRLF = "\r\n".join(
    [
        "speaker user: human",
        "speaker a  # flowc: ignore[W203]",
        "speaker b  # a comment",
        "start user",
        "max_turns 2",
        "when from user then a",
        "when from a then b",
        'when from b then terminate "done"',
        "",
    ]
)


def _fixes(result: object) -> dict[str, lsp.WorkspaceEdit]:
    assert isinstance(result, (list, tuple))
    out = {}
    for a in result:
        assert isinstance(a, lsp.CodeAction) and a.edit is not None
        out[a.title] = a.edit
    return out


def _edits(edit: lsp.WorkspaceEdit) -> list[lsp.TextEdit]:
    assert edit.document_changes is not None
    doc = edit.document_changes[0]
    assert isinstance(doc, lsp.TextDocumentEdit)
    return [e for e in doc.edits if isinstance(e, lsp.TextEdit)]


async def test_a_comment_on_a_crlf_line_stops_before_its_carriage_return(
    client: LanguageClient,
) -> None:
    """A comment's span ends where its line does, before the `\\r` of `\\r\\n`: the ignore
    fix of a line with a comment replaces that comment alone, with text that holds no
    line end (its range went one past the line's end and its new text carried the `\\r`:
    an editor applying it inserted a blank line), the fix of an unused ignore comment
    keeps the line's `\\r\\n`, and X001 and the comment's colour end at the line's end."""
    lines = CRLF.split("\r\n")
    uri = await open_doc(client, CRLF)
    doc = lsp.TextDocumentIdentifier(uri)
    diags = client.last_diagnostics  # type: ignore[attr-defined]
    x001 = next(d for d in diags if d.code == "X001")
    assert x001.range == lsp.Range(lsp.Position(1, 11), lsp.Position(1, len(lines[1])))
    w215 = [d for d in diags if d.code == "W215" and d.range.start.line == 2]
    assert w215, diags
    where = lsp.Range(lsp.Position(2, 0), lsp.Position(2, 0))
    fixes = _fixes(
        await client.text_document_code_action_async(
            lsp.CodeActionParams(doc, where, lsp.CodeActionContext(diagnostics=w215))
        )
    )
    ignore = _edits(fixes["Ignore W215 on this line (# flowc: ignore[W215])"])
    assert [(e.range, e.new_text) for e in ignore] == [
        (
            lsp.Range(lsp.Position(2, 12), lsp.Position(2, len(lines[2]))),
            " flowc: ignore[W215] # a comment",
        )
    ]
    ignored = apply_edits(CRLF, ignore)
    assert ignored == CRLF.replace("# a comment", "# flowc: ignore[W215] # a comment")
    where = lsp.Range(lsp.Position(1, 0), lsp.Position(1, 0))
    fixes = _fixes(
        await client.text_document_code_action_async(
            lsp.CodeActionParams(doc, where, lsp.CodeActionContext(diagnostics=[x001]))
        )
    )
    removed = apply(CRLF, fixes["Remove the ignore comment"])
    assert removed == CRLF.replace("speaker a  # flowc: ignore[W203]", "speaker a")
    coloured = await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(doc))
    assert coloured is not None
    line = column = 0
    comments = []
    for i in range(0, len(coloured.data), 5):
        down, right, length, _, _ = coloured.data[i : i + 5]
        line += down
        column = right if down else column + right
        if lines[line][column:].startswith("#"):
            comments.append((line, column, length))
    assert comments == [(1, 11, 21), (2, 11, 11)]
