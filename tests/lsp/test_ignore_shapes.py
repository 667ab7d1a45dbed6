"""The editor's "Ignore CODE" quick fix reads ignore comments as `flowc check` does
(:data:`flowc.dsl.ignores.IGNORE`): on every shape of comment the checker accepts, with
``\\n`` or ``\\r\\n`` line ends, the fix silences the finding and adds no X001; on a
statement written over several lines, the code joins the ignore comment that counts
there (the first that names a code). Called directly, without a server."""

from __future__ import annotations

from collections import Counter

import pytest

from flowc.compiler.analysis import check_source
from flowc.dsl.parser import parse
from flowc.lsp.actions import actions
from flowc.lsp.index import Index
from flowc.source import SourceFile
from tests.lsp.client import TRAP

RULE = "priority 100"
TITLE = "Ignore W204 on this line (# flowc: ignore[W204])"


def codes(text: str) -> list[str]:
    return sorted(d.code.id for d in check_source(SourceFile("f.flow", text)))


def fixed(text: str, title: str = TITLE) -> str:
    """``text`` with the quick fix ``title`` applied."""
    source = SourceFile("f.flow", text)
    index = Index(source, parse(source.text, source.name), None)
    found = [a for a in actions(index, check_source(source), 1, 10**6) if a.title == title]
    assert len(found) == 1, [a.title for a in actions(index, check_source(source), 1, 10**6)]
    out = source.text
    for e in sorted(found[0].edits, key=lambda e: -e.start):
        out = out[: e.start] + e.new + out[e.end :]
    return out


def rule_line(text: str) -> str:
    return next(line for line in text.split("\n") if RULE in line)


#: the comment after the rule -> the comment after the fix
SHAPES = {
    "": "  # flowc: ignore[W204]",
    " # why": " # flowc: ignore[W204] # why",
    " # flowc: ignore[W203]": " # flowc: ignore[W203, W204]",
    " #flowc:ignore[W203]": " #flowc:ignore[W203, W204]",
    " #  flowc :  ignore  [ W203 ]": " #  flowc :  ignore  [ W203 , W204]",
    " #\tflowc:\tignore\t[W203]": " #\tflowc:\tignore\t[W203, W204]",
    " # flowc: ignore[W203] why": " # flowc: ignore[W203, W204] why",
    " # flowc: ignore[]": " # flowc: ignore[, W204]",
    # an ignore comment that names nothing (X001): the new one goes before it
    " # flowc: ignore": " # flowc: ignore[W204] # flowc: ignore",
    " # flowc: ignore[W203": " # flowc: ignore[W204] # flowc: ignore[W203",
    # not ignore comments (case counts, `ignored` is another word)
    " # FLOWC: IGNORE[W203]": " # flowc: ignore[W204] # FLOWC: IGNORE[W203]",
    " # flowc: ignored[W203]": " # flowc: ignore[W204] # flowc: ignored[W203]",
}


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("before", SHAPES)
def test_the_ignore_fix_on_every_shape_of_comment(before: str, newline: str) -> None:
    text = TRAP.replace(RULE, RULE + before).replace("\n", newline)
    assert "W204" in codes(text)
    done = fixed(text)
    assert rule_line(done) == rule_line(text).replace(RULE + before, RULE + SHAPES[before])
    # W204 silenced, and nothing found that was not before (no X001)
    assert "W204" not in codes(done)
    assert not Counter(codes(done)) - Counter(codes(text))


def test_over_lines_the_code_joins_the_first_ignore_comment_that_names_one() -> None:
    """An ignore comment that names no code is not the one that counts for a statement
    written over several lines (`flowc check` reads the first that names one): the code
    goes into the one that does, not into the empty one, which would make the other a
    second ignore comment (X001, its codes silencing nothing)."""
    text = TRAP.replace("then terminate", " # flowc: ignore[]\n  then terminate").replace(
        RULE, RULE + "  # flowc: ignore[W203]"
    )
    done = fixed(text)
    assert "true  # flowc: ignore[]\n" in done
    assert f"{RULE}  # flowc: ignore[W203, W204]\n" in done
    assert codes(done) == [c for c in codes(text) if c != "W204"]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_the_unused_ignore_fix_reads_codes_as_the_checker_does(newline: str) -> None:
    """X001 on a code of an ignore comment that names others: that code removed; on the
    only code it names (blanks between commas are none): the whole comment."""
    for before, after in (
        (" # flowc: ignore[W203, W204]", " # flowc: ignore[W204]"),
        (" # flowc: ignore[W203, ]", ""),
        (" # flowc: ignore", ""),
        (" # flowc: ignore[]", ""),
    ):
        text = TRAP.replace(RULE, RULE + before).replace("\n", newline)
        title = "Remove `W203` from the ignore comment" if after else "Remove the ignore comment"
        assert rule_line(fixed(text, title)) == rule_line(text).replace(RULE + before, RULE + after)
