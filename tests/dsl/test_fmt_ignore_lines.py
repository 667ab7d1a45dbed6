"""``flowc fmt`` keeps every comment of a file, and never changes what ``flowc check``
reports: the comments after a statement written over several lines whose last line
holds an ignore comment stay below it (at the end of the file, or before a block's
closing brace), and statements written together on a line that ends with an ignore
comment stay on that line, which the comment silences."""

from __future__ import annotations

import pytest

from flowc import format_source
from flowc.compiler.analysis import check_source
from flowc.source import SourceFile

CASES = {
    "end of file": (
        "speakers a, b\nwhen from a\n then b # flowc: ignore[W201]\n# trailing\n",
        "speakers a, b\nwhen from a then b  # flowc: ignore[W201]\n# trailing\n",
    ),
    "end of a block": (
        "speaker a {\n  tool t\n    sets k = 1 # flowc: ignore[W209]\n  # last\n}\nspeaker b\n",
        "speaker a {\n  tool t sets k = 1  # flowc: ignore[W209]\n  # last\n}\nspeaker b\n",
    ),
    "property then comments": (
        "speakers a, b\nproperty p1:\n  never\n  from a # flowc: ignore[E116]\n# one\n\n# two\n",
        "speakers a, b\nproperty p1: never from a  # flowc: ignore[E116]\n# one\n\n# two\n",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_comments_after_a_joined_statement_with_an_ignore_are_kept(case: str) -> None:
    source, expected = CASES[case]
    out = format_source(source)
    assert out == expected
    assert format_source(out) == out


#: statements (or entries of a block) written together on one line that ends with an
#: ignore comment, which silences what is found on any of them
SHARED = {
    "speakers": "speaker a\nspeaker b speaker ghost # flowc: ignore[W201]\nwhen from a then b\n",
    "ghost first": "speaker a\nspeaker ghost speaker b # flowc: ignore[W201]\nwhen from a then b\n",
    "rules": (
        "speaker a {\n  tool t\n}\nspeaker b\n"
        "when from a then b when tool t then b # flowc: ignore[W203]\n"
    ),
    "after a closing brace": (
        "speaker a {\n  tool t\n} speaker b speaker ghost # flowc: ignore[W201]\nwhen from a then b\n"
    ),
    "one after a closing brace": (
        "speaker a {\n  tool t\n} speaker ghost # flowc: ignore[W201]\nspeaker b\nwhen from a then b\n"
    ),
    # a statement over several lines shares its last line with another, which the
    # comment there ends: both stay on one line with it
    "over lines, then another": (
        "speaker u: human\nspeakers a, b\nmax_turns 4\nwhen from u\n  then a when from u then b"
        '  # flowc: ignore[W203]\nwhen from a then terminate "done"\n'
    ),
    # ... or its first line, the comment at the end of its last
    "another, then over lines": (
        "speaker u: human\nspeaker c\nmax_turns 4\nwhen context.z == 1 then c when from u\n"
        '  then c  # flowc: ignore[W209]\nwhen from c then terminate "done"\n'
    ),
}


def _codes(text: str) -> list[str]:
    return sorted(d.code.id for d in check_source(SourceFile("f.flow", text)))


@pytest.mark.parametrize("case", sorted(SHARED))
def test_statements_sharing_an_ignore_comment_stay_silenced(case: str) -> None:
    source = SHARED[case]
    out = format_source(source)
    assert _codes(out) == _codes(source)
    assert format_source(out) == out
    assert "W2" not in " ".join(_codes(out)).replace("W207", "")
