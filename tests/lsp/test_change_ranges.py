"""An editor's change whose range ends past the end of its line: the protocol reads
such a position as the line's end (before its line end), so the server checks the text
the editor shows. Read one character short, the change up to `(1, 99)` of a last line
without a newline left its last character behind; read past the line end, a change one
character past it joined two lines, or wrote between the `\\r` and `\\n` of a CRLF. And a
change whose range ends before it starts, read from its end to its start."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.client import change_range, open_doc, wait_version
from tests.lsp.test_incremental import checked, published

pytestmark = pytest.mark.asyncio(loop_scope="module")

FLOW = "speaker a: human\nspeaker b\nstart a\nwhen from a then b\n"

CASES = [
    # (text, start, end, new text, the text the editor then shows)
    pytest.param(
        FLOW.rstrip("\n"),
        (3, 0),
        (3, 99),
        "when from b then a",
        FLOW.replace("from a then b\n", "from b then a"),
        id="to-past-the-end-of-the-last-line",
    ),
    pytest.param(
        FLOW.rstrip("\n"),
        (3, 18),
        (3, 18 + 7),
        " priority 1",
        FLOW.rstrip("\n") + " priority 1",
        id="inserted-past-the-end-of-the-last-line",
    ),
    pytest.param(FLOW, (1, 9), (1, 10), "", FLOW, id="one-past-the-line-end-joins-no-lines"),
    pytest.param(
        FLOW.replace("\n", "\r\n"),
        (1, 10),
        (1, 10),
        "x",
        FLOW.replace("speaker b", "speaker bx"),
        id="one-past-the-end-of-a-crlf-line",
    ),
    # after an emoji (two UTF-16 units, as the editor counts): pygls joined the lines (one
    # past the end) or left the last character behind (on the last line), as would a line's
    # length counted in characters, not in the editor's units (on the last line)
    pytest.param(
        FLOW.replace("human", "human 😀"),
        (0, 16),
        (0, 20),
        "",
        FLOW,
        id="one-past-the-line-end-after-an-emoji",
    ),
    pytest.param(
        FLOW.rstrip("\n") + " 😀 x",
        (3, 18),
        (3, 99),
        "",
        FLOW.rstrip("\n"),
        id="past-the-end-of-the-last-line-after-an-emoji",
    ),
]


@pytest.mark.parametrize(("text", "start", "end", "new", "shown"), CASES)
async def test_a_change_past_a_line_end_stops_at_it(
    client: LanguageClient,
    text: str,
    start: tuple[int, int],
    end: tuple[int, int],
    new: str,
    shown: str,
) -> None:
    uri = await open_doc(client, text)
    change_range(client, uri, 2, lsp.Position(*start), lsp.Position(*end), new)
    assert published(await wait_version(client, uri, 2)) == checked(shown)
    formatted = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(
            lsp.TextDocumentIdentifier(uri), lsp.FormattingOptions(2, True)
        )
    )
    assert formatted is not None  # the text parses, as `flowc check` reads it


@pytest.mark.parametrize(
    ("start", "end", "new", "shown"),
    [
        pytest.param((3, 18), (3, 17), "a", FLOW.replace("then b", "then a"), id="on-a-line"),
        pytest.param(
            (3, 0), (1, 0), "", FLOW.replace("speaker b\nstart a\n", ""), id="across-lines"
        ),
    ],
)
async def test_a_change_whose_end_comes_first_is_read_from_end_to_start(
    client: LanguageClient, start: tuple[int, int], end: tuple[int, int], new: str, shown: str
) -> None:
    """As the protocol's reference text document reads it: not the text between written
    twice (on a line), nor the lines between lost (across lines)."""
    uri = await open_doc(client, FLOW)
    change_range(client, uri, 2, lsp.Position(*start), lsp.Position(*end), new)
    assert published(await wait_version(client, uri, 2)) == checked(shown)
