"""Completion, semantic tokens, folding and range formatting through `flowc lsp`
(pytest-lsp over stdio)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from flowc.dsl.formatter import format_source
from tests.lsp.client import apply_edits, change, open_doc, position_of, wait_diagnostics

pytestmark = pytest.mark.asyncio(loop_scope="module")

FLOW = """\
# a review loop
# with an approval
speaker user: human
speaker drafter
speaker reviewer {
  tool approve sets approved = true
  tool reject finishes "rejected"
}
context approved = false
condition urgent(level: int)
target pick(who: speaker) -> drafter | reviewer
start user
max_turns 12
when context.approved == true then terminate "approved"
when from user then drafter
when from drafter then reviewer
when from reviewer then drafter
scenario "approve" {
  user: "hi"
  drafter: "draft"
  reviewer calls approve
  expect terminate "approved"
}
"""


async def complete(
    client: LanguageClient, uri: str, text: str, pos: lsp.Position | None = None
) -> list[tuple[str, lsp.CompletionItemKind | None]]:
    """Complete at the end of ``text`` (after it was sent as the document's new text)."""
    if pos is None:
        lines = text.split("\n")
        pos = lsp.Position(len(lines) - 1, len(lines[-1]))
    result = await client.text_document_completion_async(
        lsp.CompletionParams(text_document=lsp.TextDocumentIdentifier(uri), position=pos)
    )
    assert isinstance(result, lsp.CompletionList)
    return [(i.label, i.kind) for i in result.items]


_version = 1


async def typed(client: LanguageClient, uri: str, text: str) -> None:
    global _version
    _version += 1
    change(client, uri, _version, text)


Kind = lsp.CompletionItemKind


async def test_completion_of_names_by_place(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    cases = [
        ("when from ", [("user", Kind.Class), ("drafter", Kind.Class), ("reviewer", Kind.Class)]),
        ("when from re", [("reviewer", Kind.Class)]),
        ("start ", [("user", Kind.Class), ("drafter", Kind.Class), ("reviewer", Kind.Class)]),
        ("when tool ", [("approve", Kind.Method), ("reject", Kind.Method)]),
        ("when context.", [("approved", Kind.Variable)]),
        ('scenario "s" {\n  reviewer calls ', [("approve", Kind.Method), ("reject", Kind.Method)]),
        ('scenario "s" {\n  expect next d', [("drafter", Kind.Class)]),
    ]
    for tail, expected in cases:
        text = FLOW + tail
        await typed(client, uri, text)
        assert await complete(client, uri, text) == expected, tail
    # after `then`: speakers, the custom target, and the target keywords of the grammar
    text = FLOW + "when from user then "
    await typed(client, uri, text)
    got = await complete(client, uri, text)
    assert got[:4] == [
        ("user", Kind.Class),
        ("drafter", Kind.Class),
        ("reviewer", Kind.Class),
        ("pick", Kind.Function),
    ]
    assert sorted(label for label, kind in got if kind == Kind.Keyword) == [
        "initiator",
        "next",
        "stay",
        "terminate",
    ]


async def test_completion_of_keywords_the_grammar_allows(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    # at the start of a statement: the statement keywords, nothing else
    text = FLOW
    got = await complete(client, uri, text)
    assert sorted(label for label, _ in got) == sorted(
        [
            "flow",
            "speaker",
            "speakers",
            "start",
            "initiator",
            "max_turns",
            "context",
            "when",
            "otherwise",
            "sequence",
            "round_robin",
            "condition",
            "target",
            "scenario",
            "property",
        ]
    )
    # after `when`: what starts a condition, and the declared custom condition
    text = FLOW + "when "
    await typed(client, uri, text)
    got = await complete(client, uri, text)
    assert got == [
        ("urgent", Kind.Function),
        *[(k, Kind.Keyword) for k in ("always", "context", "from", "not", "tool")],
    ]
    # inside a speaker's block: `tool` or `sets`; a typed prefix narrows the keywords
    text = FLOW + "speaker extra {\n  t"
    await typed(client, uri, text)
    assert await complete(client, uri, text) == [("tool", Kind.Keyword)]
    # in a comment: nothing
    text = FLOW + "# when from "
    await typed(client, uri, text)
    assert await complete(client, uri, text) == []


async def test_completion_of_declared_reasons(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    text = FLOW + "when from drafter then terminate "
    await typed(client, uri, text)
    got = await complete(client, uri, text)
    # in file order: the tool's `finishes` (line 7), then the rule's `terminate`
    assert [g for g in got if g[1] == Kind.Value] == [
        ('"rejected"', Kind.Value),
        ('"approved"', Kind.Value),
    ]
    text = FLOW + 'when from drafter then terminate "rej'
    await typed(client, uri, text)
    assert await complete(client, uri, text) == [('"rejected"', Kind.Value)]


async def test_completion_after_expect_terminate_offers_the_reasons_a_run_records(
    client: LanguageClient,
) -> None:
    """After `expect terminate` only reasons a run can close with are offered: an empty
    `finishes ""` or `terminate ""` closes as "finished" / "workflow_terminated" (so `""`,
    which check refuses there with E111, is not offered), and a cap closes as "max_turns"."""
    flow = FLOW.replace(
        'tool reject finishes "rejected"',
        'tool reject finishes "rejected"\n  tool stop finishes ""',
    )
    flow = flow.replace(
        "when from reviewer then drafter",
        'when from reviewer then drafter\nwhen from user then terminate ""',
    )
    uri = await open_doc(client, flow)
    text = flow + 'scenario "s" {\n  user: "hi"\n  expect terminate '
    await typed(client, uri, text)
    got = [g for g in await complete(client, uri, text) if g[1] == Kind.Value]
    assert got == [
        ('"rejected"', Kind.Value),
        ('"finished"', Kind.Value),
        ('"max_turns"', Kind.Value),
        ('"approved"', Kind.Value),
        ('"workflow_terminated"', Kind.Value),
    ]
    # a rule's own `terminate` still offers what the flow writes, `""` included
    text = flow + "when from drafter then terminate "
    await typed(client, uri, text)
    got = [g for g in await complete(client, uri, text) if g[1] == Kind.Value]
    assert ('""', Kind.Value) in got and ('"finished"', Kind.Value) not in got


#: a flow that writes no reason a run closes with: every run ends after `writer` speaks
#: ("after_work", as E111 says), before its `max_turns`; the `terminate` never fires
UNWRITTEN = """\
speaker user: human
speaker writer
start user
max_turns 6
when from user then writer
when from user then terminate "never"
"""


async def reasons_offered(client: LanguageClient, uri: str, text: str) -> list[tuple[str, str]]:
    """The reasons completion offers at the end of ``text``, with what each is."""
    await typed(client, uri, text)
    lines = text.split("\n")
    result = await client.text_document_completion_async(
        lsp.CompletionParams(
            lsp.TextDocumentIdentifier(uri), lsp.Position(len(lines) - 1, len(lines[-1]))
        )
    )
    assert isinstance(result, lsp.CompletionList)
    return [(i.label, i.detail or "") for i in result.items if i.kind == Kind.Value]


async def test_completion_offers_the_reasons_runs_close_with_though_unwritten(
    client: LanguageClient,
) -> None:
    """After `expect terminate` and a property's `ends`, every reason the check finds a
    run closing with is offered, written in the file or not (here "after_work", which it
    left out), and "max_turns" only when a run reaches the cap (it was offered for any
    cap); a reason the flow writes that no run closes with comes last, said so."""
    uri = await open_doc(client, UNWRITTEN)
    runs = "a run of this flow closes with it"
    written = "written in this flow, but no run of it closes with it"
    wanted = [('"after_work"', runs), ('"never"', written)]
    scenario = UNWRITTEN + 'scenario "s" {\n  user: "hi"\n  expect terminate '
    assert await reasons_offered(client, uri, scenario) == wanted
    assert await reasons_offered(client, uri, scenario + '"a') == wanted[:1]
    assert await reasons_offered(client, uri, UNWRITTEN + "property p: eventually ends ") == wanted
    # with runs the cap closes: "max_turns" is among them
    looping = UNWRITTEN.replace("writer\nstart", "writer\nwhen from writer then user\nstart")
    uri = await open_doc(client, looping)
    assert await reasons_offered(client, uri, looping + "property p: eventually ends ") == [
        ('"max_turns"', runs),
        ('"never"', written),
    ]
    # a rule's own `terminate`: what the flow writes, as before
    got = await reasons_offered(client, uri, looping + "when from writer then terminate ")
    assert got == [('"never"', "close reason used in this flow")]


async def test_completion_goes_on_after_an_unfinished_statement(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    text = FLOW + "when from\nwhen tool "
    await typed(client, uri, text)
    assert await complete(client, uri, text) == [("approve", Kind.Method), ("reject", Kind.Method)]


async def test_semantic_tokens(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    result = await client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(lsp.TextDocumentIdentifier(uri))
    )
    assert result is not None
    legend = client.server_caps.semantic_tokens_provider.legend  # type: ignore[attr-defined]
    lines = FLOW.split("\n")
    decoded = []
    line = col = 0
    data = result.data
    for i in range(0, len(data), 5):
        dl, dc, length, kind, mods = data[i : i + 5]
        line += dl
        col = col + dc if dl == 0 else dc
        decoded.append((line, lines[line][col : col + length], legend.token_types[kind], mods))
    assert (0, "# a review loop", "comment", 0) in decoded
    assert (3, "speaker", "keyword", 0) in decoded
    assert (3, "drafter", "class", 1) in decoded  # a declaration
    assert (14, "drafter", "class", 0) in decoded  # a use
    assert (5, "approve", "method", 1) in decoded
    assert (13, "approved", "variable", 0) in decoded
    assert (13, '"approved"', "string", 0) in decoded
    assert (9, "urgent", "function", 1) in decoded
    assert (9, "level", "parameter", 0) in decoded and (9, "int", "type", 0) in decoded
    assert (10, "speaker", "type", 0) in decoded  # a parameter's type, not a statement
    assert (12, "12", "number", 0) in decoded
    assert (13, "==", "operator", 0) in decoded
    assert (20, "reviewer", "class", 0) in decoded and (20, "approve", "method", 0) in decoded


async def test_folding_ranges(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    folds = await client.text_document_folding_range_async(
        lsp.FoldingRangeParams(lsp.TextDocumentIdentifier(uri))
    )
    assert folds is not None
    got = sorted((f.start_line, f.end_line, f.kind) for f in folds)
    assert got == [
        (0, 1, lsp.FoldingRangeKind.Comment),
        (4, 7, lsp.FoldingRangeKind.Region),
        (17, 22, lsp.FoldingRangeKind.Region),
    ]


MESSY = """\
speaker   a
speaker b {tool t sets x=1}
when from a then b   # go
when from b    then a
otherwise   terminate
"""


async def test_range_formatting_formats_the_statements_in_the_range_only(
    client: LanguageClient,
) -> None:
    uri = await open_doc(client, MESSY)
    edits = await client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(
            lsp.TextDocumentIdentifier(uri),
            lsp.Range(lsp.Position(1, 3), lsp.Position(1, 5)),
            lsp.FormattingOptions(tab_size=2, insert_spaces=True),
        )
    )
    assert edits is not None and len(edits) == 1
    # the speaker block on line 2 only, the rest left as it was
    assert edits[0].range == lsp.Range(lsp.Position(1, 0), lsp.Position(2, 0))
    after = apply_edits(MESSY, edits)
    assert after == MESSY.replace(
        "speaker b {tool t sets x=1}\n", "speaker b {\n  tool t sets x = 1\n}\n"
    )
    # the range of every line: the same text as formatting the document
    whole = await client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(
            lsp.TextDocumentIdentifier(uri),
            lsp.Range(lsp.Position(0, 0), lsp.Position(5, 0)),
            lsp.FormattingOptions(tab_size=2, insert_spaces=True),
        )
    )
    assert whole is not None and apply_edits(MESSY, whole) == format_source(MESSY)
    # a range already formatted: no edit
    done = await open_doc(client, format_source(MESSY))
    unchanged = await client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(
            lsp.TextDocumentIdentifier(done),
            lsp.Range(lsp.Position(0, 0), lsp.Position(1, 0)),
            lsp.FormattingOptions(tab_size=2, insert_spaces=True),
        )
    )
    assert unchanged is not None and len(unchanged) == 0


ALIGNED = (Path(__file__).resolve().parents[2] / "examples" / "feedback_loop.flow").read_text()
#: the example with one rule of its aligned group written without the alignment
UNALIGNED = ALIGNED.replace(
    "when from drafter         then reviewer\n", "when   from drafter then    reviewer\n"
)


@pytest.mark.parametrize(
    "end",
    [lsp.Position(18, 0), lsp.Position(17, 0), lsp.Position(17, 12)],
    ids=["whole line", "empty range", "within the line"],
)
async def test_range_formatting_writes_what_fmt_writes(
    client: LanguageClient, end: lsp.Position
) -> None:
    """A rule of an aligned group comes out aligned with its neighbours, as `flowc fmt`
    writes it; a range that ends at the start of a line leaves that line alone."""
    assert UNALIGNED != ALIGNED and format_source(UNALIGNED) == ALIGNED
    uri = await open_doc(client, UNALIGNED)
    edits = await client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(
            lsp.TextDocumentIdentifier(uri),
            lsp.Range(lsp.Position(17, 0), end),
            lsp.FormattingOptions(tab_size=2, insert_spaces=True),
        )
    )
    assert edits is not None and list(edits) == [
        lsp.TextEdit(
            lsp.Range(lsp.Position(17, 0), lsp.Position(18, 0)),
            "when from drafter         then reviewer\n",
        )
    ]
    assert apply_edits(UNALIGNED, edits) == ALIGNED


async def test_range_formatting_of_the_lines_between_statements(client: LanguageClient) -> None:
    """A comment between statements in the range is written as `flowc fmt` writes it;
    the statements around it are left alone."""
    text = ALIGNED.replace("could never be reached.\n", "could never be reached.   \n").replace(
        "when from user            then drafter", "when from user then drafter"
    )
    uri = await open_doc(client, text)
    line = position_of(text, "# No").line
    edits = await client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(
            lsp.TextDocumentIdentifier(uri),
            lsp.Range(lsp.Position(line, 2), lsp.Position(line, 4)),
            lsp.FormattingOptions(tab_size=2, insert_spaces=True),
        )
    )
    assert edits is not None
    after = apply_edits(text, edits)
    assert "could never be reached.\n" in after
    assert "when from user then drafter\n" in after


async def test_edits_then_completion_use_the_new_text(client: LanguageClient) -> None:
    """A speaker declared by an edit is offered once the edit is analysed."""
    uri = await open_doc(client, FLOW)
    text = FLOW.replace("speaker drafter\n", "speaker drafter\nspeaker critic\n")
    await typed(client, uri, text)
    await wait_diagnostics(client, uri)
    text2 = text + "when from c"
    await typed(client, uri, text2)
    assert await complete(client, uri, text2) == [("critic", Kind.Class)]
    assert position_of(text2, "critic")  # the helper finds it too
