"""While a document does not parse, what `flowc lsp` answers from the last version that
parsed (its findings, hover, definition, references, outline, folding, prepareRename)
is placed where the edits since put its text, and left out where an edit replaced it;
and requests on a document that was never opened answer nothing, or say it is not
open, never an internal error (pytest-lsp over stdio)."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.client import change_range, hover_text, open_doc, position_of, wait_version

pytestmark = pytest.mark.asyncio(loop_scope="module")

#: demo/review.flow, its first comment cut short to ASCII (:func:`text_of`), kept here so
#: that the positions below do not move with the demo: W207 on `drafter` (line 5), W204
#: on the priority trap (13), W202 on the default (16)
REVIEW = """\
# The drafter/reviewer loop as it is often first written by hand.
# `flowc check` finds why it never ends with "approved".
flow review "Drafter and reviewer iterate until approval"

speaker drafter
speaker reviewer {
  tool approve sets done = true
}

max_turns 12
context done = false

when context.done == true  then terminate "approved" priority 100
when from drafter          then reviewer
when from reviewer         then drafter
otherwise terminate "max_revisions"
"""

#: what the user typed at the start of line 5 (0-based 4): the text no longer parses
BREAK = "when from\n\n\n"


def at(line: int, character: int) -> lsp.Position:
    return lsp.Position(line, character)


def text_of(text: str, r: lsp.Range) -> str:
    """The text of a range of ``text`` (ASCII: characters are UTF-16 units)."""
    lines = text.split("\n")
    if r.start.line == r.end.line:
        return lines[r.start.line][r.start.character : r.end.character]
    first, last = lines[r.start.line][r.start.character :], lines[r.end.line][: r.end.character]
    return "\n".join([first, *lines[r.start.line + 1 : r.end.line], last])


def findings(text: str, diagnostics: list[lsp.Diagnostic]) -> list[tuple[object, str]]:
    """(code, text under the range) of each finding but the syntax errors."""
    return sorted(
        (str(d.code), text_of(text, d.range)) for d in diagnostics if str(d.code) != "E001"
    )


async def broken(client: LanguageClient) -> tuple[str, str, list[lsp.Diagnostic]]:
    """A document of REVIEW, then BREAK typed at the start of `speaker drafter`: its
    URI, its text now and the diagnostics published for that text."""
    uri = await open_doc(client, REVIEW)
    change_range(client, uri, 2, at(4, 0), at(4, 0), BREAK)
    text = REVIEW.replace("speaker drafter", BREAK + "speaker drafter", 1)
    return uri, text, await wait_version(client, uri, 2)


async def test_findings_of_the_last_parse_follow_the_text(client: LanguageClient) -> None:
    uri = await open_doc(client, REVIEW)
    before = findings(REVIEW, client.last_diagnostics)  # type: ignore[attr-defined]
    assert [code for code, _ in before] == ["W202", "W204", "W207"]
    change_range(client, uri, 2, at(4, 0), at(4, 0), BREAK)
    text = REVIEW.replace("speaker drafter", BREAK + "speaker drafter", 1)
    published = await wait_version(client, uri, 2)
    assert any(str(d.code) == "E001" for d in published)
    # each underlines the same text as before the edit, three lines further down
    assert findings(text, published) == before
    lines = {str(d.code): d.range.start.line for d in published}
    assert lines["W207"] == 7 and lines["W204"] == 15 and lines["W202"] == 18


async def test_a_finding_an_edit_changed_is_left_out(client: LanguageClient) -> None:
    uri, text, _ = await broken(client)
    # `priority 100` made `priority 200`: the W204 it was under is no longer this text's
    trap = 'when context.done == true  then terminate "approved" priority 100'
    line = text.split("\n").index(trap)
    one = trap.index("100")
    change_range(client, uri, 3, at(line, one), at(line, one + 1), "2")
    text = text.replace(trap, trap.replace("100", "200"))
    published = await wait_version(client, uri, 3)
    assert [code for code, _ in findings(text, published)] == ["W202", "W207"]
    assert findings(text, published) == [
        ("W202", 'otherwise terminate "max_revisions"'),
        ("W207", "drafter"),
    ]
    # the hover no longer shows it either (the rule's name `done` still has its own)
    assert await hover_text(client, uri, at(line, trap.index("priority") + 2)) is None
    assert await hover_text(client, uri, at(line, one)) is None
    done = await hover_text(client, uri, at(line, trap.index("done") + 1))
    assert done is not None and "W204" not in done


async def test_hover_and_navigation_answer_where_the_text_is_now(client: LanguageClient) -> None:
    uri, text, _ = await broken(client)
    doc = lsp.TextDocumentIdentifier(uri)
    # hover on `drafter` of `speaker drafter` (three lines further down than before)
    drafter = position_of(text, "speaker drafter", offset=10)
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, drafter))
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert "speaker `drafter`" in hover.contents.value
    assert hover.range is not None and text_of(text, hover.range) == "drafter"
    # go to definition of `reviewer` from a rule: its declaration, where it is now
    use = position_of(text, "then reviewer", offset=6)
    found = await client.text_document_definition_async(lsp.DefinitionParams(doc, use))
    assert isinstance(found, list) and len(found) == 1
    assert isinstance(found[0], lsp.Location)
    assert text_of(text, found[0].range) == "reviewer"
    assert text.split("\n")[found[0].range.start.line] == "speaker reviewer {"
    # references of `drafter`: each range on a `drafter` of the text now
    refs = await client.text_document_references_async(
        lsp.ReferenceParams(
            context=lsp.ReferenceContext(include_declaration=True),
            text_document=doc,
            position=drafter,
        )
    )
    assert refs is not None and len(refs) == 3
    assert {text_of(text, r.range) for r in refs} == {"drafter"}
    # prepareRename: the name's range where it is now
    placeholder = await client.text_document_prepare_rename_async(
        lsp.PrepareRenameParams(doc, drafter)
    )
    assert isinstance(placeholder, lsp.PrepareRenamePlaceholder)
    assert text_of(text, placeholder.range) == "drafter"
    # a cursor in what the edit wrote finds nothing
    assert await hover_text(client, uri, at(4, 6)) is None
    nothing = await client.text_document_definition_async(lsp.DefinitionParams(doc, at(4, 6)))
    assert not nothing


async def test_outline_and_folding_follow_the_text(client: LanguageClient) -> None:
    uri, text, _ = await broken(client)
    doc = lsp.TextDocumentIdentifier(uri)
    symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(doc))
    assert symbols
    names = []
    for s in symbols:
        assert isinstance(s, lsp.DocumentSymbol)
        names.append(s.name)
        if s.kind == lsp.SymbolKind.Event:  # a rule, named by its first line
            assert text_of(text, s.selection_range).startswith(s.name)
        else:
            assert text_of(text, s.selection_range) == s.name
    assert names[:4] == ["review", "drafter", "reviewer", "done"]
    folds = await client.text_document_folding_range_async(lsp.FoldingRangeParams(doc))
    lines = text.split("\n")
    assert folds is not None
    assert [(lines[f.start_line], lines[f.end_line]) for f in folds] == [
        (lines[0], lines[1]),  # the comment lines, before the edit: where they were
        ("speaker reviewer {", "}"),
    ]


async def test_a_second_edit_moves_the_answers_again(client: LanguageClient) -> None:
    uri, text, _ = await broken(client)
    # two lines inserted between the rules: the findings after them move on, the ones
    # before them stay
    line = text.split("\n").index("when from drafter          then reviewer")
    change_range(client, uri, 3, at(line, 0), at(line, 0), "# one\n# two\n")
    lines = text.split("\n")
    lines[line:line] = ["# one", "# two"]
    text = "\n".join(lines)
    published = await wait_version(client, uri, 3)
    assert findings(text, published) == [
        ("W202", 'otherwise terminate "max_revisions"'),
        ("W204", 'when context.done == true  then terminate "approved" priority 100'),
        ("W207", "drafter"),
    ]
    where = {str(d.code): d.range.start.line for d in published}
    assert where["W202"] == 20 and where["W204"] == 15 and where["W207"] == 7
    use = position_of(text, "then drafter", offset=6)
    found = await client.text_document_definition_async(
        lsp.DefinitionParams(lsp.TextDocumentIdentifier(uri), use)
    )
    assert isinstance(found, list) and isinstance(found[0], lsp.Location)
    assert text.split("\n")[found[0].range.start.line] == "speaker drafter"


NEVER = "file:///tmp/flowc-lsp-tests/never_opened.flow"
WHOLE = lsp.Range(at(0, 0), at(1, 0))
OPTIONS = lsp.FormattingOptions(tab_size=2, insert_spaces=True)


async def test_requests_on_a_document_never_opened(client: LanguageClient) -> None:
    doc = lsp.TextDocumentIdentifier(NEVER)
    formatted = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(doc, OPTIONS)
    )
    assert not formatted
    ranged = await client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(doc, WHOLE, OPTIONS)
    )
    assert not ranged
    completed = await client.text_document_completion_async(lsp.CompletionParams(doc, at(0, 0)))
    items = completed.items if isinstance(completed, lsp.CompletionList) else completed
    assert not items
    tokens = await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(doc))
    assert tokens is None or not tokens.data
    with pytest.raises(Exception) as refused:
        await client.text_document_rename_async(lsp.RenameParams(doc, at(0, 0), "x"))
    assert getattr(refused.value, "code", None) == -32803  # RequestFailed, not -32603
    assert "is not open" in str(refused.value)
    assert "internal error" not in str(refused.value)
