"""Find references and rename through `flowc lsp` (pytest-lsp over stdio)."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from flowc.compiler.analysis import check_source
from flowc.source import SourceFile
from tests.lsp.client import apply, open_doc, position_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

FLOW = """\
speaker user: human {
  sets topic
}
speaker bot {
  tool done sets finished = true
  tool pass hands off to helper
}
speaker helper
context finished = false
condition urgent(level: int)
target pick(who: speaker, crowd: list[speaker]) -> bot | helper
start user
max_turns 20
when urgent(level = 2) then pick(who = "bot", crowd = ["helper",
  "bot"])
when context.finished == true then terminate "ok"
when tool done then terminate "done"
when from user then bot
when from bot, helper then user
scenario "done" {
  user sets topic = "x": "hi"
  bot calls done
  expect context.finished == true
  expect next user
}
"""


def span_texts(text: str, locations: list[lsp.Location]) -> list[tuple[int, str]]:
    """(line, text) of each location (single-line ranges, ASCII text)."""
    lines = text.splitlines()
    out = []
    for loc in locations:
        r = loc.range
        assert r.start.line == r.end.line
        out.append((r.start.line, lines[r.start.line][r.start.character : r.end.character]))
    return out


async def refs(
    client: LanguageClient, uri: str, pos: lsp.Position, declaration: bool = True
) -> list[lsp.Location]:
    result = await client.text_document_references_async(
        lsp.ReferenceParams(
            context=lsp.ReferenceContext(include_declaration=declaration),
            text_document=lsp.TextDocumentIdentifier(uri),
            position=pos,
        )
    )
    assert result is not None
    return result


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


async def test_references_of_every_kind_include_scenarios(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    # a speaker: declaration, custom-call arguments (a string and a list item), results,
    # routes, and the scenario's turns
    found = span_texts(FLOW, await refs(client, uri, position_of(FLOW, "from bot", offset=6)))
    assert found == [
        (3, "bot"),
        (10, "bot"),
        (13, '"bot"'),
        (14, '"bot"'),
        (17, "bot"),
        (18, "bot"),
        (21, "bot"),
    ], found
    helper = span_texts(
        FLOW, await refs(client, uri, position_of(FLOW, "speaker helper", offset=9))
    )
    assert [line for line, _ in helper] == [5, 7, 10, 13, 18]
    # a tool, without its declaration
    done = span_texts(
        FLOW,
        await refs(client, uri, position_of(FLOW, "tool done then", offset=6), declaration=False),
    )
    assert done == [(16, "done"), (21, "done")]
    # a context key: tool effect, context entry, rule, scenario expectation
    finished = await refs(client, uri, position_of(FLOW, "context.finished", offset=9))
    assert [line for line, _ in span_texts(FLOW, finished)] == [4, 8, 15, 22]
    # a key a human writes: its `sets` line and the scenario's set turn
    topic = await refs(client, uri, position_of(FLOW, "sets topic", offset=6))
    assert [line for line, _ in span_texts(FLOW, topic)] == [1, 20]
    # a custom condition and a custom target
    urgent = await refs(client, uri, position_of(FLOW, "urgent(level = 2)", offset=1))
    assert [line for line, _ in span_texts(FLOW, urgent)] == [9, 13]
    pick = await refs(client, uri, position_of(FLOW, "then pick", offset=6))
    assert [line for line, _ in span_texts(FLOW, pick)] == [10, 13]
    # nothing under the cursor: no answer
    assert (
        await client.text_document_references_async(
            lsp.ReferenceParams(
                context=lsp.ReferenceContext(include_declaration=True),
                text_document=lsp.TextDocumentIdentifier(uri),
                position=position_of(FLOW, "max_turns", offset=2),
            )
        )
        is None
    )


async def rename(
    client: LanguageClient, uri: str, pos: lsp.Position, new: str
) -> lsp.WorkspaceEdit:
    edit = await client.text_document_rename_async(
        lsp.RenameParams(text_document=lsp.TextDocumentIdentifier(uri), position=pos, new_name=new)
    )
    assert edit is not None
    return edit


def codes(text: str) -> list[str]:
    return sorted(d.code.id for d in check_source(SourceFile("f.flow", text)))


async def test_rename_a_speaker_everywhere_and_the_flow_still_checks(
    client: LanguageClient,
) -> None:
    uri = await open_doc(client, FLOW)
    prepared = await client.text_document_prepare_rename_async(
        lsp.PrepareRenameParams(
            lsp.TextDocumentIdentifier(uri), position_of(FLOW, "bot calls", offset=1)
        )
    )
    assert isinstance(prepared, lsp.PrepareRenamePlaceholder)
    assert prepared.placeholder == "bot"
    assert prepared.range.start == lsp.Position(line_of(FLOW, "bot calls"), 2)
    edit = await rename(client, uri, position_of(FLOW, "bot calls", offset=1), "assistant")
    renamed = apply(FLOW, edit)
    assert "bot" not in renamed
    assert renamed.count("assistant") == 7
    assert 'pick(who = "assistant", crowd = ["helper",\n  "assistant"])' in renamed
    assert "  assistant calls done\n" in renamed
    # the renamed flow means the same: the same findings as before
    assert codes(renamed) == codes(FLOW)


async def test_rename_a_tool_and_a_key(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    renamed = apply(
        FLOW, await rename(client, uri, position_of(FLOW, "tool done sets", offset=6), "finish")
    )
    assert "tool finish sets finished = true" in renamed
    assert "when tool finish then" in renamed and "bot calls finish" in renamed
    assert codes(renamed) == codes(FLOW)
    renamed = apply(
        FLOW, await rename(client, uri, position_of(FLOW, "finished = false", offset=1), "complete")
    )
    assert "finished" not in renamed
    assert renamed.count("complete") == 4
    assert codes(renamed) == codes(FLOW)
    # a key only a human writes (the declaration in its block and the scenario's turn)
    renamed = apply(
        FLOW, await rename(client, uri, position_of(FLOW, "sets topic", offset=6), "subject")
    )
    assert "sets subject\n" in renamed and 'user sets subject = "x"' in renamed


#: what a rename of the speaker `bot` to a name that would not read as it is written says
_UNSEEN = (
    "a character that shows nothing or reorders the text around it, so the name would look"
    " like another"
)
_CONTROL = "a line end or another control character"


@pytest.mark.parametrize(
    ("where", "offset", "new", "says"),
    [
        pytest.param(
            "from bot",
            6,
            "helper",
            "there is already a speaker `helper` (line 8); renaming `bot` to it would merge"
            " the two",
            id="a-speaker-taken",
        ),
        pytest.param(
            "tool done then",
            6,
            "pass",
            "there is already a tool `pass` (line 6); renaming `done` to it would merge the two",
            id="a-tool-taken",
        ),
        pytest.param(
            "context.finished",
            9,
            "topic",
            "there is already a context key `topic` (line 2); renaming `finished` to it would"
            " merge the two",
            id="a-key-taken",
        ),
        pytest.param(
            "from bot",
            6,
            "two`words",
            "`two`words` cannot be a name: a name cannot hold a backquote",
            id="a-backquote",
        ),
        pytest.param(
            "from bot",
            6,
            "two\nlines",
            f"`two\\nlines` cannot be a name: it holds `\\n`, {_CONTROL}",
            id="a-line-end",
        ),
        pytest.param(
            "from bot",
            6,
            "`a\tb`",  # (`flowc check` reads it, but it shows as a space)
            f"`a\tb` cannot be a name: it holds `\\t`, {_CONTROL}",
            id="a-tab",
        ),
        pytest.param(
            "from bot",
            6,
            "user\u200b",
            f"`user\\u200b` cannot be a name: it holds `\\u200b`, {_UNSEEN}",
            id="a-zero-width-space",
        ),
        pytest.param(
            "from bot",
            6,
            "a\u202eb",
            f"`a\\u202eb` cannot be a name: it holds `\\u202e`, {_UNSEEN}",
            id="a-right-to-left-override",
        ),
        pytest.param(
            "from bot",
            6,
            "us\u00ader",  # a soft hyphen (category Cf, which `visible` shows as it is)
            f"`us\u00ader` cannot be a name: it holds `\\xad`, {_UNSEEN}",
            id="a-soft-hyphen",
        ),
        pytest.param(
            "from bot",
            6,
            "`user `",
            "`user ` cannot be a name: it starts or ends with a blank, so it would look like"
            " `user`",
            id="a-trailing-space",
        ),
        pytest.param(
            "from bot",
            6,
            "` user`",
            "` user` cannot be a name: it starts or ends with a blank, so it would look like"
            " `user`",
            id="a-leading-space",
        ),
        pytest.param(
            "from bot",
            6,
            "  ",
            "the speaker `bot` cannot be renamed to an empty name",
            id="empty",
        ),
        pytest.param(
            "from bot",
            6,
            "``",
            "the speaker `bot` cannot be renamed to an empty name",
            id="empty-in-backquotes",
        ),
        pytest.param(
            "from bot",
            6,
            "`  `",
            "the speaker `bot` cannot be renamed to an empty name (`  ` is all blank)",
            id="all-blank",
        ),
    ],
)
async def test_rename_refuses_a_clash_or_a_name_not_read_as_written(
    client: LanguageClient,
    where: str,
    offset: int,
    new: str,
    says: str,
) -> None:
    uri = await open_doc(client, FLOW)
    with pytest.raises(Exception) as refused:
        await client.text_document_rename_async(
            lsp.RenameParams(
                text_document=lsp.TextDocumentIdentifier(uri),
                position=position_of(FLOW, where, offset=offset),
                new_name=new,
            )
        )
    assert str(refused.value) == says


@pytest.mark.parametrize(
    ("new", "written"),
    [
        ("two words", "`two words`"),
        ("用户", "`用户`"),
        ("next", "`next`"),
        ("`a b`", "`a b`"),
        ("dev\U0001f469\u200d\U0001f4bb", "`dev\U0001f469\u200d\U0001f4bb`"),  # a joiner
    ],
)
async def test_rename_to_a_name_in_backquotes(
    client: LanguageClient, new: str, written: str
) -> None:
    # the language reads any text without a backquote or a line end as a name in backquotes
    uri = await open_doc(client, FLOW)
    renamed = apply(FLOW, await rename(client, uri, position_of(FLOW, "from bot", offset=6), new))
    assert f"when from {written}, helper then user" in renamed and "from bot" not in renamed
    # the renamed flow means the same: the same findings as before
    assert codes(renamed) == codes(FLOW)


async def test_custom_names_are_not_renamed_and_nothing_is_not_renamed(
    client: LanguageClient,
) -> None:
    uri = await open_doc(client, FLOW)
    with pytest.raises(Exception) as refused:
        await client.text_document_prepare_rename_async(
            lsp.PrepareRenameParams(
                lsp.TextDocumentIdentifier(uri), position_of(FLOW, "urgent(level = 2)", offset=1)
            )
        )
    assert "custom condition" in str(refused.value) and "Python" in str(refused.value)
    nothing = await client.text_document_prepare_rename_async(
        lsp.PrepareRenameParams(
            lsp.TextDocumentIdentifier(uri), position_of(FLOW, "max_turns", offset=1)
        )
    )
    assert nothing is None


DEFAULTS = """\
speakers a, b, `sup desk`
condition near(who: speaker = "b")
target pick(who: speaker = "b", many: list[speaker] = ["sup desk",
  "b"])
when from a and near() then pick()
when from b then a
when from `sup desk` then a
"""


async def test_a_speaker_in_a_parameter_default_is_a_use(client: LanguageClient) -> None:
    uri = await open_doc(client, DEFAULTS)
    found = span_texts(
        DEFAULTS, await refs(client, uri, position_of(DEFAULTS, "from b ", offset=5))
    )
    assert found == [(0, "b"), (1, '"b"'), (2, '"b"'), (3, '"b"'), (5, "b")], found
    # the cursor on a default finds the speaker too
    from_default = await refs(client, uri, position_of(DEFAULTS, 'speaker = "b", many', offset=11))
    assert span_texts(DEFAULTS, from_default) == found
    desk = span_texts(
        DEFAULTS, await refs(client, uri, position_of(DEFAULTS, "`sup desk` then", offset=2))
    )
    assert desk == [(0, "`sup desk`"), (2, '"sup desk"'), (6, "`sup desk`")], desk
    renamed = apply(
        DEFAULTS, await rename(client, uri, position_of(DEFAULTS, "from b ", offset=5), "c")
    )
    assert renamed == DEFAULTS.replace('"b"', '"c"').replace(", b,", ", c,").replace(
        "from b ", "from c "
    )
    assert codes(renamed) == codes(DEFAULTS)
    renamed = apply(
        DEFAULTS,
        await rename(client, uri, position_of(DEFAULTS, "`sup desk` then", offset=2), "desk"),
    )
    assert '["desk",' in renamed and "from desk then" in renamed
    assert codes(renamed) == codes(DEFAULTS)
