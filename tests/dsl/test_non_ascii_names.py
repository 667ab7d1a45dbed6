"""E001 for a name written with letters that are not ASCII: it names the whole name as a
reader sees it (letters, marks and digits of any script) and proposes it in backquotes."""

from __future__ import annotations

import unicodedata

import pytest

from flowc.dsl.parser import parse_source
from flowc.source import SourceFile


def _e001(text: str) -> tuple[str, str, str]:
    """The E001's message, help, and the text its span covers."""
    _, diags = parse_source(SourceFile("f.flow", text))
    [d] = diags
    assert d.code.id == "E001"
    assert d.help is not None
    covered = text[d.span.start : d.span.end]
    return d.message, d.help, covered


@pytest.mark.parametrize(
    "text, word",
    [
        ("speaker bot\nspeaker नमस्ते: human\n", "नमस्ते"),  # vowel signs and virama: marks
        ("speaker bot\nspeaker " + unicodedata.normalize("NFD", "naïve") + ": human\n", None),
        ("speaker bot\nspeaker `用户`: human\nsequence 用户->bot\n", "用户"),  # not the `-` of `->`
        ("speaker a\nwhen from a then終\n", "終"),  # not the keyword before it
    ],
)
def test_a_name_not_in_ascii_is_proposed_in_backquotes(text: str, word: str | None) -> None:
    word = word if word is not None else unicodedata.normalize("NFD", "naïve")
    message, help_text, covered = _e001(text)
    assert message.endswith(f"in the name `{word}`"), message
    assert help_text == (
        "names are ASCII letters, digits, `_` and `-`; write any other name in "
        f"backquotes: did you mean `` `{word}` ``?"
    )
    assert covered == word


def test_the_help_for_any_other_character_says_names_are_ascii() -> None:
    _, help_text, _ = _e001("speaker bot\nspeaker a§: human\n")
    assert help_text == "names are ASCII letters, digits, `_` and `-`; `#` starts a comment"
