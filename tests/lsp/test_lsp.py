"""`flowc lsp` end to end: pytest-lsp starts the real `flowc lsp` command as a
subprocess and talks to it over stdio, as an editor does."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from flowc.dsl.formatter import format_source
from flowc.project.explain import page
from tests.lsp.client import (
    TRAP,
    change,
    hover_text,
    open_doc,
    position_of,
    versions,
    wait_diagnostics,
    wait_version,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

#: the priority trap, its last line with an ignore comment naming an unknown code (X001)
TRAP = TRAP.removesuffix("\n") + "  # flowc: ignore[W999]\n"
TRAP_LINE = next(i for i, line in enumerate(TRAP.splitlines()) if "priority 100" in line)


async def test_priority_trap_is_reported_where_the_rule_is(client: LanguageClient) -> None:
    await open_doc(client, TRAP)
    diags = client.last_diagnostics  # type: ignore[attr-defined]
    trap = [d for d in diags if d.code == "W204"]
    assert len(trap) == 1, diags
    line = TRAP.splitlines()[TRAP_LINE]
    assert trap[0].range == lsp.Range(
        lsp.Position(TRAP_LINE, 0), lsp.Position(TRAP_LINE, len(line))
    )
    assert trap[0].severity == lsp.DiagnosticSeverity.Warning
    assert trap[0].source == "flowc"
    assert "priority -1" in trap[0].message  # the fix travels with it
    assert lsp.DiagnosticTag.Unnecessary in (trap[0].tags or [])
    # the same findings as `flowc check`: the unknown code in the ignore comment is X001
    assert sorted(d.code for d in diags) == ["W204", "X001"]


async def test_edits_are_debounced_and_a_syntax_error_keeps_the_last_analysis(
    client: LanguageClient,
) -> None:
    uri = await open_doc(client, TRAP)
    fixed = TRAP.replace("priority 100", "priority -1")
    broken = fixed + "when from\n"
    # three quick edits: the first, after a quiet spell, is analysed at once (unless the
    # next one arrives first: then it is dropped), the next two are debounced, and only
    # the last of them is analysed
    for version, text in ((2, TRAP + "\n"), (3, fixed), (4, broken)):
        change(client, uri, version, text)
    diags = await wait_version(client, uri, 4)
    assert versions(client, uri) in ([1, 2, 4], [1, 4]), versions(client, uri)
    codes = sorted(str(d.code) for d in diags)
    # the syntax error, and the last good analysis (of version 1 or 2) for the rest: but
    # its W204 was on the rule an edit since changed, so it is left out
    assert codes == ["E001", "X001"], codes
    error = next(d for d in diags if d.code == "E001")
    assert error.range.start.line >= len(fixed.splitlines())  # on the added line (or at the end)
    # hover still answers from the last version that parsed
    hover = await hover_text(client, uri, position_of(TRAP, "drafter"))
    assert hover is not None and "speaker `drafter`" in hover
    # once it parses again, the fixed version has no W204
    change(client, uri, 5, fixed)
    diags = await wait_version(client, uri, 5)
    assert sorted(str(d.code) for d in diags) == ["X001"]


async def test_a_partial_analysis_is_reported_on_the_first_speaker(client: LanguageClient) -> None:
    """I301 (the analysis stopped at its state bound) is a diagnostic in the editor too,
    placed where `flowc check` places it: the first speaker's name (or `flow NAME`)."""
    root: Path = client.root  # type: ignore[attr-defined]
    project = root / "bounded"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.flowc]\nmax-states = 3\n", encoding="utf-8")
    await open_doc(client, TRAP, "bounded/trap.flow")
    diags = client.last_diagnostics  # type: ignore[attr-defined]
    (partial,) = [d for d in diags if d.code == "I301"]
    assert partial.severity == lsp.DiagnosticSeverity.Information
    assert "findings are partial" in partial.message and "--max-states" in partial.message
    assert partial.range == lsp.Range(lsp.Position(0, 8), lsp.Position(0, 12))  # `user`
    named = "flow trap\n" + TRAP
    await open_doc(client, named, "bounded/named.flow")
    (partial,) = [d for d in client.last_diagnostics if d.code == "I301"]  # type: ignore[attr-defined]
    assert partial.range == lsp.Range(lsp.Position(0, 0), lsp.Position(0, 9))


async def test_config_in_pyproject_applies_and_is_reloaded(client: LanguageClient) -> None:
    root: Path = client.root  # type: ignore[attr-defined]
    project = root / "configured"
    project.mkdir()
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[tool.flowc]\nignore = ["W204"]\n', encoding="utf-8")
    uri = await open_doc(client, TRAP, "configured/trap.flow")
    assert [d.code for d in client.last_diagnostics] == ["X001"]  # type: ignore[attr-defined]
    pyproject.write_text('[tool.flowc]\nselect = ["W2"]\n', encoding="utf-8")
    change(client, uri, 2, TRAP)
    assert [d.code for d in await wait_diagnostics(client, uri)] == ["W204"]


async def test_hover_on_a_speaker(client: LanguageClient) -> None:
    uri = await open_doc(client, TRAP)
    text = await hover_text(client, uri, position_of(TRAP, "reviewer", nth=2))
    assert text is not None
    assert "**speaker `reviewer`** (model agent)" in text
    assert "`approve`: sets approved = true" in text
    # one rule routes to the reviewer (line 10), one from it (line 11)
    to_part, from_part = text.split("Rules routing from it")
    assert "line 10" in to_part and "when from drafter then reviewer" in to_part
    assert "line 11" in from_part and "when from reviewer then drafter" in from_part
    human = await hover_text(client, uri, position_of(TRAP, "user", nth=0))
    assert human is not None and "(human)" in human and "Tools: none." in human


ROTATION = """\
speaker user: human
speakers alice, bob
initiator alice
max_turns 6
when from user then next
when from alice then initiator
when from bob then stay
"""


async def test_hover_on_a_speaker_counts_next_stay_and_initiator(client: LanguageClient) -> None:
    """A rule routes to a speaker through `next` (from the speaker before it),
    `initiator` and `stay` (from itself) as much as by naming it."""
    uri = await open_doc(client, ROTATION)
    alice = await hover_text(client, uri, position_of(ROTATION, "alice", nth=0))
    assert alice is not None
    to_part, from_part = alice.split("Rules routing from it")
    assert "line 5" in to_part and "line 6" in to_part and "line 7" not in to_part, alice
    assert "line 6" in from_part
    bob = await hover_text(client, uri, position_of(ROTATION, "bob", nth=0))
    assert bob is not None
    to_part, _ = bob.split("Rules routing from it")
    assert "line 7" in to_part and "line 5" not in to_part and "line 6" not in to_part, bob
    user = await hover_text(client, uri, position_of(ROTATION, "user", nth=0))
    assert user is not None and "Rules routing to it: none." in user, user


async def test_hover_on_a_tool_and_on_a_code(client: LanguageClient) -> None:
    text = TRAP.replace("context.approved == true", "tool approve").replace(
        "# flowc: ignore[W999]", "# flowc: ignore[W204]"
    )
    uri = await open_doc(client, text)
    value = await hover_text(client, uri, position_of(text, "tool approve then", offset=6))
    assert value is not None
    assert "**tool `approve`**" in value and "on `reviewer`: sets approved = true" in value
    assert "line 8" in value
    assert await hover_text(client, uri, position_of(text, "W204", offset=2)) == page("W204")
    assert await hover_text(client, uri, position_of(text, "max_turns", offset=2)) is None


async def test_hover_on_a_finding_gives_the_checkers_explanation(client: LanguageClient) -> None:
    """The hover over a finding shows what `flowc check` prints for it (the message with
    the analysis's explanation, its notes and fix), then the page of its code."""
    import flowc
    from tests.check.test_explanations import CLOSE, FINISHING

    uri = await open_doc(client, CLOSE)
    (w203,) = [d for d in flowc.check(CLOSE) if d.code.id == "W203"]
    text = await hover_text(client, uri, position_of(CLOSE, 'terminate "closed"'))
    assert text is not None
    finding, explained = text.split("\n\n---\n\n")
    assert finding.startswith(f"**warning[W203]**: {w203.message}\n")
    assert FINISHING in finding and f"- help: {w203.help}" in finding
    assert explained == page("W203")


async def test_definition_of_speakers_and_tools(client: LanguageClient) -> None:
    text = TRAP.replace("context.approved == true", "tool approve")
    uri = await open_doc(client, text)
    for use, decl in (
        ("from drafter", "speaker drafter"),
        ("then reviewer", "speaker reviewer"),
        ("tool approve then", "tool approve"),
    ):
        needle = decl.split()[1]
        result = await client.text_document_definition_async(
            lsp.DefinitionParams(
                lsp.TextDocumentIdentifier(uri),
                position_of(text, use, offset=use.index(needle) + 1),
            )
        )
        assert isinstance(result, list) and len(result) == 1, (needle, result)
        expected = position_of(text, decl, offset=len(decl) - len(needle))
        assert result[0].uri == uri
        assert result[0].range.start == expected, needle
        assert result[0].range.end == lsp.Position(expected.line, expected.character + len(needle))
    none = await client.text_document_definition_async(
        lsp.DefinitionParams(
            lsp.TextDocumentIdentifier(uri), position_of(text, "terminate", offset=2)
        )
    )
    assert none is None


async def test_document_symbols(client: LanguageClient) -> None:
    uri = await open_doc(client, TRAP)
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri))
    )
    assert symbols is not None
    speakers = [
        s for s in symbols if isinstance(s, lsp.DocumentSymbol) and s.kind == lsp.SymbolKind.Class
    ]
    assert [s.name for s in speakers] == ["user", "drafter", "reviewer"]
    reviewer = speakers[2]
    assert [c.name for c in reviewer.children or []] == ["approve"]
    assert reviewer.range.start.line == 2 and reviewer.range.end.line == 4  # the whole block
    rules = [
        s for s in symbols if isinstance(s, lsp.DocumentSymbol) and s.kind == lsp.SymbolKind.Event
    ]
    assert len(rules) == 4
    assert rules[0].name.startswith("when context.approved == true then terminate")
    assert rules[0].range.start.line == TRAP_LINE


async def test_formatting_is_flowc_fmt(client: LanguageClient) -> None:
    messy = "speaker   a\nspeaker b {tool t sets x=1}\nwhen from a then b   # go"
    uri = await open_doc(client, messy)
    edits = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(
            lsp.TextDocumentIdentifier(uri), lsp.FormattingOptions(tab_size=2, insert_spaces=True)
        )
    )
    assert edits is not None and len(edits) == 1
    assert edits[0].new_text == format_source(messy)
    assert edits[0].range == lsp.Range(
        lsp.Position(0, 0), lsp.Position(2, len(messy.splitlines()[2]))
    )
    # already formatted: no edit; a syntax error: nothing to apply
    done = await open_doc(client, format_source(messy))
    unchanged = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(
            lsp.TextDocumentIdentifier(done), lsp.FormattingOptions(tab_size=2, insert_spaces=True)
        )
    )
    assert unchanged is not None and len(unchanged) == 0
    bad = await open_doc(client, "speaker a\nwhen from\n")
    assert (
        await client.text_document_formatting_async(
            lsp.DocumentFormattingParams(
                lsp.TextDocumentIdentifier(bad),
                lsp.FormattingOptions(tab_size=2, insert_spaces=True),
            )
        )
        is None
    )


async def test_positions_count_utf16_units(client: LanguageClient) -> None:
    """A name after a character outside the BMP: the client's columns are UTF-16 units."""
    text = (
        'flow "😀 demo"\nspeaker a\nspeaker b\nwhen from a then b priority 3\nwhen from a then a\n'
    )
    text = text.replace('flow "😀 demo"', 'flow demo "😀"')
    uri = await open_doc(client, text)
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri))
    )
    flow = next(
        s
        for s in symbols or []
        if isinstance(s, lsp.DocumentSymbol) and s.kind == lsp.SymbolKind.Module
    )
    line = text.splitlines()[0]
    units = len(line.encode("utf-16-le")) // 2
    assert units == len(line) + 1  # the emoji takes two UTF-16 units
    assert flow.range.end == lsp.Position(0, units)


async def test_a_broken_config_is_reported_and_the_defaults_apply(client: LanguageClient) -> None:
    root: Path = client.root  # type: ignore[attr-defined]
    project = root / "broken"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.flowc]\nselect = ["Z9"]\n', encoding="utf-8")
    before = len(client.messages)
    await open_doc(client, TRAP, "broken/trap.flow")
    assert sorted(d.code for d in client.last_diagnostics) == ["W204", "X001"]  # type: ignore[attr-defined]
    said = [m.message for m in client.messages[before:]]
    assert len(said) == 1 and "pyproject.toml" in said[0] and "Z9" in said[0], said


async def test_definition_of_keys_and_custom_conditions_from_scenarios(
    client: LanguageClient,
) -> None:
    text = (
        "speaker user: human\n"
        "speaker bot {\n"
        "  tool done sets finished = true\n"
        "}\n"
        "context finished = false\n"
        "condition urgent(level: int)\n"
        "start user\n"
        "when urgent(level = 2) then terminate\n"
        'when context.finished == true then terminate "ok"\n'
        "when from user then bot\n"
        "when from bot then user\n"
        'scenario "done" {\n'
        '  user: "hi"\n'
        "  bot calls done\n"
        "  expect context.finished == true\n"
        "}\n"
    )
    uri = await open_doc(client, text)
    for use, decl in (
        ("context.finished", "context finished"),
        ("expect context.finished", "context finished"),
        ("urgent(level = 2)", "condition urgent"),
        ("bot calls", "speaker bot"),
        ("calls done", "tool done"),
    ):
        name = decl.split()[1]
        result = await client.text_document_definition_async(
            lsp.DefinitionParams(
                lsp.TextDocumentIdentifier(uri), position_of(text, use, offset=use.index(name) + 1)
            )
        )
        assert isinstance(result, list) and len(result) == 1, (use, result)
        assert result[0].range.start == position_of(text, decl, offset=len(decl) - len(name)), use


async def test_hover_on_a_context_key(client: LanguageClient) -> None:
    text = TRAP.replace("start user\n", "start user\ncontext approved = false\n")
    uri = await open_doc(client, text)
    value = await hover_text(client, uri, position_of(text, "context.approved", offset=9))
    assert value is not None
    assert "**context key `approved`**" in value
    assert "Initial value: `false`" in value
    assert "`reviewer` via tool `approve`: sets approved = true" in value
    rule_line = (
        text.splitlines().index(next(x for x in text.splitlines() if "priority 100" in x)) + 1
    )
    assert f"line {rule_line}" in value.split("Read by:")[1]
