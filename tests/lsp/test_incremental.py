"""The language server parses an edited document again only where the edit touched it:
the tree it builds is the one a full parse builds, spans and comments included."""

from __future__ import annotations

import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from flowc.compiler.analysis import check_source
from flowc.dsl import nodes as n
from flowc.dsl.parser import parse_source
from flowc.lsp import incremental
from flowc.lsp.incremental import Reparser
from flowc.source import SourceFile
from tests.lsp.client import change, open_doc, versions, wait_version
from tests.lsp.conftest import HOLD

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_compile import generate  # noqa: E402

PIECES = [
    "\n",
    " ",
    "x",
    "when from a then b\n",
    "# note\n",
    "priority 3",
    "}",
    "{",
    '"',
    ",",
    "speaker q\n",
    "\n\n",
    "  # tail",
]


def tree(node: Any) -> Any:
    """Everything in a tree, spans included (the nodes' equality leaves spans out)."""
    if isinstance(node, (tuple, list)):
        return [tree(x) for x in node]
    if attrs.has(type(node)):
        return (
            type(node).__name__,
            {f.name: tree(getattr(node, f.name)) for f in attrs.fields(type(node))},
        )
    return node


def edit(rng: random.Random, text: str) -> str:
    at = rng.randrange(len(text) + 1)
    if rng.random() < 0.5:
        at = text.rfind("\n", 0, at) + 1  # at the start of a line
    kind = rng.random()
    lines = text.split("\n")
    k = rng.randrange(len(lines))
    if kind < 0.35:
        return text[:at] + text[at + rng.randrange(0, 12) :]
    if kind < 0.75:
        return text[:at] + rng.choice(PIECES) + text[at:]
    if kind < 0.85:
        lines[k] += "  # edited"
    elif kind < 0.93:
        lines.insert(k, lines[k])
    else:
        del lines[k]
    return "\n".join(lines)


def reparsed_as_full(reparser: Reparser, new: str) -> bool:
    """Parse ``new`` with ``reparser`` and check it against a full parse: the same errors,
    the same tree (spans included) when it parses, and what the reparser keeps for the
    next version a full parse of its own text, whether this one parsed or not (nothing
    moved before everything reparsed had parsed). Whether ``new`` parsed."""
    incremental, errors = reparser.parse(SourceFile("f.flow", new))
    full, full_errors = parse_source(SourceFile("f.flow", new))
    assert [(d.message, d.span) for d in errors] == [(d.message, d.span) for d in full_errors]
    assert reparser.text is not None
    kept = parse_source(SourceFile("f.flow", reparser.text))[0]
    assert tree(reparser.flow) == tree(kept)
    if errors:
        return False
    assert tree(incremental) == tree(full), new
    return True


def test_reparsing_an_edit_gives_the_tree_of_a_full_parse() -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").rglob("*.flow"))]
    texts.append(generate(60))
    rng = random.Random(13)
    compared = reused = 0
    for text in texts:
        reparser = Reparser()
        reparser.parse(SourceFile("f.flow", text))
        current = text
        for _ in range(150):
            new = edit(rng, current)
            if not reparsed_as_full(reparser, new):
                if rng.random() < 0.1:
                    current = new  # go on editing a file that does not parse
                continue
            compared += 1
            reused += reparser.reused
            current = new
    assert compared > 60, compared
    # most statements came from the last tree, not from the parser
    assert reused > 10 * compared, (reused, compared)


LINES = [
    "",
    "# note",
    "when from a then b",
    "when tool t then stay priority 2",
    "speaker q",
    "  # tail",
    "priority 3",
    "}",
    "{",
    '"',
    "when from agent_1 then agent_2  # moved",
    "otherwise agent_0",
]


def edit_in_places(rng: random.Random, text: str) -> str:
    """``text`` with 2 to 5 of its lines replaced (a line of :data:`LINES`, another line of
    the file, or the line with a word changed): a version that differs from the last in
    several places, each as many lines as before."""
    lines = text.split("\n")
    for k in rng.sample(range(len(lines)), min(len(lines), rng.randrange(2, 6))):
        kind = rng.random()
        if kind < 0.3:
            lines[k] = rng.choice(LINES)
        elif kind < 0.5:
            lines[k] = rng.choice(lines)
        else:
            lines[k] = lines[k].replace("agent_1", "agent_12").replace("then ", "then  ")
    return "\n".join(lines)


def test_reparsing_a_version_that_differs_in_several_places_gives_the_tree_of_a_full_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A version that differs from the last in several places, each replacing lines by as
    many lines (an editor sending the whole text after two changes, a replace-all): each
    place is parsed again on its own, the statements between them kept, and the tree is
    the one a full parse builds, spans and comments included; a place that does not parse
    on its own falls back as a single edit does."""
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").rglob("*.flow"))]
    texts += [generate(80)] * 4
    rng = random.Random(29)
    compared = 0
    several: list[int] = []  # the regions of each version parsed in several
    reparse = Reparser._reparse

    def counting(self: Reparser, old: Any, old_text: str, source: Any, regions: Any) -> Any:
        flow = reparse(self, old, old_text, source, regions)
        if flow is not None and len(regions) > 1:
            several.append(len(regions))
        return flow

    monkeypatch.setattr(Reparser, "_reparse", counting)
    for text in texts:
        reparser = Reparser()
        reparser.parse(SourceFile("f.flow", text))
        current = text
        for _ in range(60):
            new = edit_in_places(rng, current)
            if not reparsed_as_full(reparser, new):
                continue
            compared += 1
            current = new
    assert compared > 200, compared
    assert len(several) > 60 and max(several) >= 4, several


def test_two_far_apart_changes_parse_the_statements_around_each_only() -> None:
    """A version that changes two rules far apart (two changes the server reads as one
    version: an edit made while the last was being checked, a multi-cursor edit): the
    statements around each of the two places are parsed again, not the thousands between
    them."""
    text = generate(1000)
    lines = text.split("\n")
    rules = [i for i, line in enumerate(lines) if line.startswith("when from")]
    first, last = rules[10], rules[-10]
    reparser = Reparser()
    reparser.parse(SourceFile("f.flow", text))
    for version in range(3):
        lines[first] += f" # {version}"
        lines[last] = lines[last].replace(" then ", " then  ")
        new = "\n".join(lines)
        flow, errors = reparser.parse(SourceFile("f.flow", new))
        assert not errors
        assert len(reparser._parsed) <= 6, len(reparser._parsed)
        assert reparser.reused >= len(flow.statements) - 6
        assert tree(flow) == tree(parse_source(SourceFile("f.flow", new))[0])


def test_a_place_of_several_lines_moves_what_follows_by_all_it_added() -> None:
    """A place that changes two lines in a row, the first made longer, then another place:
    the statements between and after are moved by what both lines added."""
    text = "speaker a\nspeaker b\nspeaker c\nspeaker d\nspeaker e\nspeaker ffffff\nspeaker g\n"
    new = "speaker a\nspeaker bb\nspeaker c\nspeaker d\nspeaker eeee\nspeaker xxxxxx\nspeaker g\n"
    reparser = Reparser()
    reparser.parse(SourceFile("f.flow", text))
    flow, errors = reparser.parse(SourceFile("f.flow", new))
    assert not errors and reparser.reused >= 1
    assert tree(flow) == tree(parse_source(SourceFile("f.flow", new))[0])


@pytest.mark.parametrize(("places", "several"), [(16, True), (17, False)])
def test_at_most_sixteen_places_are_parsed_apart(places: int, several: bool) -> None:
    """Up to 16 places, each is parsed again on its own; past that, the version is one
    region from the first place to the last (each region costs a pass of its own)."""
    text = generate(400)
    lines = text.split("\n")
    rules = [i for i, line in enumerate(lines) if line.startswith("when ")]
    chosen = rules[10 : 10 + 20 * places : 20]
    assert len(chosen) == places
    reparser = Reparser()
    reparser.parse(SourceFile("f.flow", text))
    for k in chosen:
        lines[k] += "  # changed"
    new = "\n".join(lines)
    flow, errors = reparser.parse(SourceFile("f.flow", new))
    assert not errors
    assert tree(flow) == tree(parse_source(SourceFile("f.flow", new))[0])
    assert reparser.reused == len(flow.statements) - len(reparser._parsed)
    if several:
        assert len(reparser._parsed) <= 3 * places, len(reparser._parsed)
    else:  # one region: every statement from the first place to the last
        assert len(reparser._parsed) > 15 * places, len(reparser._parsed)


def test_an_edit_in_the_middle_of_a_large_flow_parses_one_statement() -> None:
    text = generate(1000)
    reparser = Reparser()
    reparser.parse(SourceFile("f.flow", text))
    lines = text.split("\n")
    middle = next(i for i in range(len(lines) // 2, len(lines)) if lines[i].startswith("when from"))
    lines.insert(middle, "when tool route_3 then agent_4  # added")
    new = "\n".join(lines)
    flow, errors = reparser.parse(SourceFile("f.flow", new))
    assert not errors
    statements = len(flow.statements)
    assert reparser.reused >= statements - 3
    assert tree(flow) == tree(parse_source(SourceFile("f.flow", new))[0])


def test_an_edit_that_changes_the_length_moves_every_later_span(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The statements after an edit that adds characters keep their trees, every span
    moved, whatever classes the walk has met before: JSON values (lists, objects,
    numbers, null) and every kind of statement after the edit, walked with no class
    known yet."""
    text = (
        "speaker a\nspeaker b: human\n"
        'context {\n  items = [1, {"k": [null, 2.5]}],\n  meta = {"a": "b"},\n  done = false,\n}\n'
        "when from a then b\n"
        'when context.items == [1, {"k": [null, 2.5]}] and not tool t then terminate "x"\n'
        "when from b or tool t then stay priority 2\n"
        "otherwise a\n"
    )
    new = text.replace("when from a then b", "when from a then b  # moved")
    monkeypatch.setattr(incremental, "_FIELDS", {})
    reparser = Reparser()
    reparser.parse(SourceFile("f.flow", text))
    flow, errors = reparser.parse(SourceFile("f.flow", new))
    assert not errors and reparser.reused >= 3
    assert tree(flow) == tree(parse_source(SourceFile("f.flow", new))[0])


def test_an_edit_lists_the_span_holders_of_the_statements_it_parsed_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The nodes that hold spans are listed when a statement is parsed: an edit that
    moves the whole tail of a large file (one near its top) lists those of the statements
    it parsed again, not of every statement it moves (the first edits of a session paid
    for listing the whole file); the tree is that of a full parse."""
    text = generate(300)
    listed: list[object] = []
    holders = incremental._holders

    def counting(node: object) -> list[tuple[object, tuple[str, ...]]]:
        listed.append(node)
        return holders(node)

    monkeypatch.setattr(incremental, "_holders", counting)
    reparser = Reparser()
    first, _ = reparser.parse(SourceFile("f.flow", text))
    assert len(listed) == len(first.statements)
    lines = text.split("\n")
    top = next(i for i, line in enumerate(lines) if line.startswith("when from"))
    for i in range(3):
        listed.clear()
        lines[top] += f"  # note {i}"
        new = "\n".join(lines)
        flow, errors = reparser.parse(SourceFile("f.flow", new))
        assert not errors and reparser.reused >= len(flow.statements) - 3
        assert 1 <= len(listed) <= 3, len(listed)
        assert tree(flow) == tree(parse_source(SourceFile("f.flow", new))[0])


SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "info": lsp.DiagnosticSeverity.Information,
}


def checked(text: str) -> list[tuple[Any, ...]]:
    """What `flowc check` reports for ``text``, field by field, in file order (an ASCII
    text: columns are characters)."""
    return [
        (
            d.code.id,
            d.message + (f"\nhelp: {d.help}" if d.help else ""),
            SEVERITY[d.severity.value],
            d.span.line - 1,
            d.span.column - 1,
            d.span.end_line - 1,
            d.span.end_column - 1,
        )
        for d in check_source(SourceFile("f.flow", text))
        if d.span is not None
    ]


def published(diags: list[lsp.Diagnostic]) -> list[tuple[Any, ...]]:
    assert all(d.source == "flowc" for d in diags)
    return [
        (
            d.code,
            d.message,
            d.severity,
            d.range.start.line,
            d.range.start.character,
            d.range.end.line,
            d.range.end.character,
        )
        for d in diags
    ]


@pytest.mark.asyncio(loop_scope="module")
async def test_findings_of_a_large_flow_after_edits_are_those_of_flowc_check(
    client: LanguageClient,
) -> None:
    """Hundreds of findings, most of them the same from one version to the next (the
    server reuses their JSON), and each edit's are exactly `flowc check`'s, in its order."""
    text = generate(400)
    uri = await open_doc(client, text)
    assert published(client.last_diagnostics) == checked(text)  # type: ignore[attr-defined]
    assert len(checked(text)) > 200
    rng = random.Random(7)
    for version in range(2, 8):
        lines = text.split("\n")
        k = rng.choice([i for i, line in enumerate(lines) if line.startswith("when from agent_")])
        if version % 3 == 0:
            lines.insert(k, lines[k].replace("then", "and context.done == true then"))
        else:
            head, _, tail = lines[k].partition(" then ")
            lines[k] = (
                f"{head} then agent_{version}" + tail[tail.index(" ") :]
                if " " in tail
                else f"{head} then agent_{version}"
            )
        text = "\n".join(lines)
        change(client, uri, version, text)
        assert published(await wait_version(client, uri, version)) == checked(text)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("sep", ["\x0c", "\x1c", "\x85", "\u2028", "\u2029"])
async def test_a_character_python_ends_a_line_at_leaves_the_findings_on_their_lines(
    client: LanguageClient, sep: str
) -> None:
    """A form feed, U+2028 and the like end no line for flowc (nor for an editor, which
    ends lines at newlines): the findings after one are on the lines `flowc check` gives
    (the server split its lines where `str.splitlines` does, and put them a line off)."""
    text = f"# a{sep}b\nspeaker a\nspeaker b\nspeaker a\nwhen from a then b\n"
    uri = await open_doc(client, text)
    found = published(client.last_diagnostics)  # type: ignore[attr-defined]
    assert found == checked(text) and any(f[3] == 3 for f in found), found
    change(client, uri, 2, text.replace("speaker b\n", f"# {sep}\nspeaker b\n"))
    assert published(await wait_version(client, uri, 2)) == checked(
        text.replace("speaker b\n", f"# {sep}\nspeaker b\n")
    )


@pytest.mark.asyncio(loop_scope="module")
async def test_findings_after_edits_are_those_of_flowc_check(client: LanguageClient) -> None:
    text = (
        "speaker user: human\n"
        "speaker drafter\n"
        "speaker reviewer {\n"
        "  tool approve sets approved = true\n"
        "}\n"
        "start user\n"
        "max_turns 12\n"
        "when from user     then drafter\n"
        'when context.approved == true then terminate "approved" priority 100\n'
        "when from drafter  then reviewer\n"
        "when from reviewer then drafter\n"
        'scenario "s" {\n  user: "hi"\n  expect next drafter\n}\n'
    )
    uri = await open_doc(client, text)
    edits = [
        text.replace("speaker drafter\n", "# the writer\nspeaker drafter\n\n"),  # lines shift
        text.replace("speaker drafter\n", "# the writer\nspeaker drafter\n\n").replace(
            "priority 100", "priority 1000"
        ),  # columns shift on one line
        text.replace("max_turns 12\n", "").replace("when from user ", "when from user, drafter"),
    ]
    for version, new in enumerate(edits, start=2):
        change(client, uri, version, new)
        assert published(await wait_version(client, uri, version)) == checked(new), new
    # hover answers from the new text: the reviewer's rule moved down a line
    hover = await client.text_document_hover_async(
        lsp.HoverParams(
            lsp.TextDocumentIdentifier(uri),
            lsp.Position(edits[2].split("\n").index("when from reviewer then drafter"), 11),
        )
    )
    assert hover is not None and "speaker `reviewer`" in hover.contents.value  # type: ignore[union-attr]


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_answers_while_a_large_file_is_checked(held_client: LanguageClient) -> None:
    """The check runs beside the server's conversation: a hover sent while an edit of a
    large flow is being checked is answered, from the last analysis, before that edit's
    diagnostics. The server's check is held (tests/lsp/held_server.py) until the hover
    is answered, so the order does not depend on how fast the check is."""
    client = held_client
    text = generate(1000)
    uri = await open_doc(client, text)
    new = text.replace("when from user then agent_0", "when from user then agent_1")
    entered = HOLD.with_name(HOLD.name + ".entered")
    entered.unlink(missing_ok=True)
    HOLD.touch()
    try:
        change(client, uri, 2, new)
        deadline = time.monotonic() + 30
        while not entered.exists():  # the check of version 2 has begun, and waits
            assert time.monotonic() < deadline, "the server never checked version 2"
            await asyncio.sleep(0.01)
        hover = await asyncio.wait_for(
            client.text_document_hover_async(
                lsp.HoverParams(
                    lsp.TextDocumentIdentifier(uri),
                    lsp.Position(new.split("\n").index("speaker agent_3 {"), 9),
                )
            ),
            timeout=10,
        )
        assert hover is not None and "speaker `agent_3`" in hover.contents.value  # type: ignore[union-attr]
        assert versions(client, uri) == [1]  # not yet
    finally:
        HOLD.unlink(missing_ok=True)
    assert published(await wait_version(client, uri, 2)) == checked(new)


@pytest.mark.asyncio(loop_scope="module")
async def test_typing_a_rule_a_character_at_a_time(client: LanguageClient) -> None:
    """A burst of keystrokes, most of them leaving a statement unfinished: the server
    never publishes an older version after a newer one, and the last version's findings
    are exactly `flowc check`'s."""
    text = generate(300)
    uri = await open_doc(client, text)
    rule = "when from agent_3 and context.done == true then agent_5 priority 2\n"
    at = text.index("when tool route_1")
    version = 1
    for end in range(1, len(rule) + 1):
        version += 1
        change(client, uri, version, text[:at] + rule[:end] + text[at:])
        if end % 9 == 0:
            await asyncio.sleep(0.03)  # a pause now and then: some versions are checked
    final = text[:at] + rule + text[at:]
    assert published(await wait_version(client, uri, version)) == checked(final)
    seen = [v for v in versions(client, uri) if v is not None]
    assert seen == sorted(seen) and len(seen) == len(set(seen)), seen


def _lowered(compiled: Any, diags: Any) -> Any:
    """What lowering made, spans included (the model's and the nodes' equality leave
    the rules' spans out)."""
    rules = None
    if compiled is not None:
        rules = [(i.index, i.span, i.line, tree(i.rule)) for i in compiled.rules]
    return compiled, rules, [(d.code.id, d.message, d.span) for d in diags]


def test_the_rules_kept_between_edits_lower_as_a_fresh_lowering_does() -> None:
    """The language server keeps each rule's transitions from one version to the next
    (:class:`flowc.compiler.lower.RuleCache`); on random edits of every example (speakers
    added and removed among them, which must forget what was kept), what it lowers equals
    a fresh lowering of a full parse: transitions, rules' spans and lines, findings."""
    from flowc.compiler.lower import RuleCache, lower

    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").rglob("*.flow"))]
    texts.append(generate(60))
    rng = random.Random(29)
    compared = kept = 0
    for text in texts:
        reparser, cache = Reparser(), RuleCache()
        current = text
        for _ in range(80):
            new = edit(rng, current)
            flow, errors = reparser.parse(SourceFile("f.flow", new))
            if errors:
                continue
            got = _lowered(*lower(flow, "f.flow", cache=cache))
            full, _ = parse_source(SourceFile("f.flow", new))
            assert got == _lowered(*lower(full, "f.flow")), new
            # what is kept is the current version's, no more: the rules, each statement's
            # nodes that hold spans
            rules = sum(isinstance(st, n.Rule) for st in flow.statements)
            assert len(cache) <= rules and len(reparser.holders) <= len(flow.statements)
            compared += 1
            current = new
        kept += cache.reused
    assert compared > 300 and kept > 2 * compared, (compared, kept)


def test_a_declaration_changed_forgets_the_rules_kept() -> None:
    """A rule kept under a speaker's declaration is lowered again when that declaration
    goes: it now names an undeclared speaker (E101)."""
    from flowc.compiler.lower import RuleCache, lower

    text = "speaker a\nspeaker b\nspeaker c\nwhen from a then c\nwhen from b then a\n"
    reparser, cache = Reparser(), RuleCache()
    compiled, diags = lower(reparser.parse(SourceFile("f.flow", text))[0], "f.flow", cache=cache)
    assert compiled is not None and not diags and len(cache._of) == 2
    gone = text.replace("speaker c\n", "")
    compiled, diags = lower(reparser.parse(SourceFile("f.flow", gone))[0], "f.flow", cache=cache)
    assert compiled is None
    assert [d.code.id for d in diags] == ["E101"]
    # renamed: as many declarations as before, one of them a new object
    reparser, cache = Reparser(), RuleCache()
    lower(reparser.parse(SourceFile("f.flow", text))[0], "f.flow", cache=cache)
    renamed = text.replace("speaker c\n", "speaker d\n")
    compiled, diags = lower(reparser.parse(SourceFile("f.flow", renamed))[0], "f.flow", cache=cache)
    assert compiled is None and cache.reused == 0
    assert [d.code.id for d in diags] == ["E101"]
    # a comment added at the end: the last rule is read again (an edit right after a
    # statement may extend it), the other is taken from the cache
    reparser, cache = Reparser(), RuleCache()
    lower(reparser.parse(SourceFile("f.flow", text))[0], "f.flow", cache=cache)
    commented = text + "# a note\n"
    compiled, diags = lower(
        reparser.parse(SourceFile("f.flow", commented))[0], "f.flow", cache=cache
    )
    assert compiled is not None and not diags and cache.reused == 1


def test_the_servers_kept_work_gives_a_fresh_checks_findings_on_random_edits() -> None:
    """Everything the language server keeps from one version of a document to the next
    (the tree, the rules lowered, their texts, the state space) gives, after each of
    many random edits of every example, exactly the findings of a check of that version
    alone: codes, messages (which quote rules), places, notes and help."""
    from flowc.compiler.analysis import CheckOptions, SpaceCache, check_compiled
    from flowc.compiler.lower import RuleCache, lower

    def seen(diags: Any) -> list[tuple[object, ...]]:
        return [(d.code.id, d.message, d.span, d.notes, d.help, d.json_path) for d in diags]

    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").glob("*.flow"))]
    texts.append(generate(60))
    rng = random.Random(31)
    compared = 0
    spaces_reused = texts_reused = 0
    for text in texts:
        reparser, rules, spaces = Reparser(), RuleCache(), SpaceCache()
        current = text
        for _ in range(30):
            new = edit(rng, current)
            source = SourceFile("f.flow", new)
            flow, errors = reparser.parse(source)
            if errors:
                continue
            compiled, compile_diags = lower(flow, "f.flow", cache=rules)
            got = check_compiled(
                compiled, compile_diags, CheckOptions(), filename="f.flow", spaces=spaces
            )
            assert seen(got) == seen(check_source(source)), new
            compared += 1
            current = new
        spaces_reused += spaces.reused
        texts_reused += spaces.texts.reused
    assert compared > 150 and spaces_reused > 20 and texts_reused > 100, (
        compared,
        spaces_reused,
        texts_reused,
    )
