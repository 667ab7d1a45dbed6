"""`property` statements in the language server (pytest-lsp over stdio): the names they
read are uses (references, rename), a property is in the outline and has a hover, its
words and operators are coloured, and completion offers what fits in it."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from flowc import compile_flow
from tests.lsp.client import apply, change, hover_text, open_doc, position_of, wait_version

pytestmark = pytest.mark.asyncio(loop_scope="module")

FLOW = """\
speaker user: human {
  sets approved
}
speaker bot {
  tool refund sets refunded = true
}
speaker agent
start user
max_turns 12
when from user then bot
when from bot then agent
when context.refunded == true then terminate "refunded"
property no_double_bot: never from bot and previous from bot
property approved_first: tool refund only after context.approved == true
property early: eventually ends "refunded" within 3 turns after from user before turn >= 10
"""
PROPERTY_LINE = 12


def texts_of(text: str, locations: list[lsp.Location]) -> list[tuple[int, str]]:
    lines = text.splitlines()
    return [
        (
            loc.range.start.line,
            lines[loc.range.start.line][loc.range.start.character : loc.range.end.character],
        )
        for loc in locations
    ]


async def references(client: LanguageClient, uri: str, pos: lsp.Position) -> list[lsp.Location]:
    found = await client.text_document_references_async(
        lsp.ReferenceParams(
            context=lsp.ReferenceContext(include_declaration=True),
            text_document=lsp.TextDocumentIdentifier(uri),
            position=pos,
        )
    )
    assert found is not None
    return found


async def test_the_names_a_property_reads_are_references(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    bot = texts_of(FLOW, await references(client, uri, position_of(FLOW, "speaker bot", offset=9)))
    assert (PROPERTY_LINE, "bot") in bot and bot.count((PROPERTY_LINE, "bot")) == 2
    tool = texts_of(
        FLOW, await references(client, uri, position_of(FLOW, "tool refund s", offset=6))
    )
    assert tool == [(4, "refund"), (PROPERTY_LINE + 1, "refund")]
    key = texts_of(
        FLOW, await references(client, uri, position_of(FLOW, "sets approved", offset=6))
    )
    assert key == [(1, "approved"), (PROPERTY_LINE + 1, "approved")]


async def test_rename_reaches_into_properties(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    # a keyword of properties is a name in backquotes, in the property too
    edit = await client.text_document_rename_async(
        lsp.RenameParams(
            text_document=lsp.TextDocumentIdentifier(uri),
            position=position_of(FLOW, "speaker bot", offset=9),
            new_name="after",
        )
    )
    assert edit is not None
    renamed = apply(FLOW, edit)
    assert "never from `after` and previous from `after`" in renamed
    assert compile_flow(renamed).properties[0].text == (
        "property no_double_bot: never from `after` and previous from `after`"
    )
    edit = await client.text_document_rename_async(
        lsp.RenameParams(
            text_document=lsp.TextDocumentIdentifier(uri),
            position=position_of(FLOW, "speaker bot", offset=9),
            new_name="assistant",
        )
    )
    assert edit is not None
    renamed = apply(FLOW, edit)
    assert "never from assistant and previous from assistant" in renamed
    compiled = compile_flow(renamed)
    assert compiled.properties[0].text == (
        "property no_double_bot: never from assistant and previous from assistant"
    )


async def test_outline_and_hover(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri))
    )
    assert symbols is not None
    props = [
        s
        for s in symbols
        if isinstance(s, lsp.DocumentSymbol) and s.kind == lsp.SymbolKind.Property
    ]
    assert [(s.name, s.detail, s.range.start.line) for s in props] == [
        ("no_double_bot", "property", PROPERTY_LINE),
        ("approved_first", "property", PROPERTY_LINE + 1),
        ("early", "property", PROPERTY_LINE + 2),
    ]
    assert props[2].range.end.character == len(FLOW.splitlines()[PROPERTY_LINE + 2])
    text = await hover_text(client, uri, position_of(FLOW, "early:", offset=1))
    assert text is not None
    assert "**property `early`**" in text
    assert (
        'property early: eventually ends "refunded" within 3 turns after from user before '
        "turn >= 10" in text
    )


async def test_colours(client: LanguageClient) -> None:
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
    at = PROPERTY_LINE
    assert (at, "property", "keyword", 0) in decoded
    assert (at, "no_double_bot", "property", 1) in decoded  # a declaration
    assert (at, "never", "keyword", 0) in decoded and (at, "previous", "keyword", 0) in decoded
    assert (at, "bot", "class", 0) in decoded
    assert (at + 1, "refund", "method", 0) in decoded
    assert (at + 1, "approved", "variable", 0) in decoded
    assert (at + 2, ">=", "operator", 0) in decoded
    assert (at + 2, "10", "number", 0) in decoded


async def test_completion_in_a_property(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    version = 100

    async def complete(text: str, kind: lsp.CompletionItemKind | None = None) -> list[str]:
        nonlocal version
        version += 1
        change(client, uri, version, text)
        lines = text.split("\n")
        result = await client.text_document_completion_async(
            lsp.CompletionParams(
                text_document=lsp.TextDocumentIdentifier(uri),
                position=lsp.Position(len(lines) - 1, len(lines[-1])),
            )
        )
        assert isinstance(result, lsp.CompletionList)
        return [item.label for item in result.items if kind is None or item.kind == kind]

    # the pattern: `always` among them, right after the colon
    assert await complete(FLOW + "property p: ") == [
        "after",
        "always",
        "context",
        "ends",
        "eventually",
        "from",
        "never",
        "not",
        "previous",
        "tool",
        "turn",
    ]
    # an expression: no `always`, no custom condition
    got = await complete(
        FLOW.replace("speaker agent", "speaker agent\ncondition c()") + "property p: never "
    )
    assert got == ["context", "ends", "from", "not", "previous", "tool", "turn"]
    # after `ends`: the reasons a run closes with, those the flow writes first: a run
    # ends with "refunded" or after `agent` speaks ("after_work", which the flow does not
    # write), a few turns in, never by its `max_turns 12` (it offered "max_turns" and left
    # "after_work" out)
    got = await complete(FLOW + "property p: eventually ends ", lsp.CompletionItemKind.Value)
    assert got == ['"refunded"', '"after_work"']
    assert await complete(FLOW + "property p: tool refund at most 2 ") == ["time", "times"]
    assert await complete(FLOW + "property p: never tool ") == ["refund"]


async def test_reparsing_edits_of_properties_gives_the_tree_of_a_full_parse() -> None:
    """The server parses again only the statements an edit touches: on a flow full of
    properties (statements over several lines among them), each edit gives the tree of a
    full parse, spans included."""
    import random
    from pathlib import Path

    from flowc.dsl.parser import parse_source
    from flowc.lsp.incremental import Reparser
    from flowc.source import SourceFile
    from tests.lsp import test_incremental as inc

    root = Path(__file__).resolve().parents[2]
    text = (root / "tests" / "editors" / "textmate" / "snap" / "support_desk.flow").read_text()
    pieces = [
        "property z: never from triage\n",
        "property y: after tool escalate,\n  from security within 2 turns\n",
        " before ends",
        "(",
        ")",
        ", ",
        " and previous from tech",
    ]
    rng = random.Random(27)
    reparser = Reparser()
    reparser.parse(SourceFile("f.flow", text))
    current, compared = text, 0
    for _ in range(300):
        if rng.random() < 0.6:
            new = inc.edit(rng, current)
        else:
            at = rng.randrange(len(current) + 1)
            new = current[:at] + rng.choice(pieces) + current[at:]
        incremental, errors = reparser.parse(SourceFile("f.flow", new))
        full, full_errors = parse_source(SourceFile("f.flow", new))
        assert [(d.message, d.span) for d in errors] == [(d.message, d.span) for d in full_errors]
        if errors:
            continue
        assert inc.tree(incremental) == inc.tree(full), new
        compared += 1
        current = new
    assert compared > 60, compared


async def test_a_violated_property_is_a_diagnostic_with_its_run_in_the_hover(
    client: LanguageClient,
) -> None:
    """The language server reports each property's verdict where ``flowc check`` does, and
    hovering a violated property shows the run that breaks it (the same run, in the same
    words, as ``flowc check``); a fix that makes it hold takes the error away."""
    from flowc.compiler.analysis import check_source
    from flowc.source import SourceFile

    uri = await open_doc(client, FLOW)
    published = client.last_diagnostics  # type: ignore[attr-defined]
    expected = [d for d in check_source(SourceFile("f.flow", FLOW)) if d.code.id == "E116"]
    # `flowc check` finds `approved_first` violated (its lines count from 1)
    assert [d.span.line for d in expected if d.span] == [PROPERTY_LINE + 2]
    errors = [d for d in published if d.code == "E116"]
    assert [(d.range.start.line, d.severity) for d in errors] == [
        (PROPERTY_LINE + 1, lsp.DiagnosticSeverity.Error)
    ]
    assert errors[0].message.startswith(expected[0].message)
    run_note = next(n for n in expected[0].notes if "a shortest run that breaks it" in n)
    text = await hover_text(client, uri, position_of(FLOW, "approved_first:", offset=1))
    assert text is not None
    assert "**property `approved_first`**" in text
    assert "**error[E116]**" in text and run_note in text
    # a property that holds says so, with what was assumed, and shows no run
    held = await hover_text(client, uri, position_of(FLOW, "no_double_bot:", offset=1))
    assert held is not None and "**info[I306]**" in held and "assumed: max_turns 12" in held
    assert "run that breaks it:" not in held and "E116" not in held

    # the fix: the bot speaks only once the user approved; `approved_first` then holds
    # (and `early` no longer does: the user may wait): the diagnostics follow the check
    fixed = FLOW.replace(
        "when from user then bot",
        "when context.approved == true and from user then bot\nwhen from user then user",
    )
    change(client, uri, 2, fixed)
    after = await wait_version(client, uri, 2)
    now = [
        d.span.line - 1
        for d in check_source(SourceFile("f.flow", fixed))
        if d.code.id == "E116" and d.span
    ]
    assert [d.range.start.line for d in after if d.code == "E116"] == now
    assert PROPERTY_LINE + 2 not in now and now  # approved_first holds; early is broken
