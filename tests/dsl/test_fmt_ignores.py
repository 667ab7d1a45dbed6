"""``flowc fmt`` never changes what ``flowc check`` reports: an ignore comment inside a
statement written over several lines silences what is found on any of its lines, and
the formatter, which writes the statement on one line, keeps the comment at that line's
end (the comments before it above the statement, those after it below, in order)."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from flowc import format_source
from flowc.compiler.analysis import check_source
from flowc.source import SourceFile

#: flows with statements over several lines, each with findings on those statements:
#: W201 (unreachable), W204 (a terminate rule read too late), E116 (a property broken)
BASES = {
    "rule": (
        "speaker user: human\n"
        "speaker drafter\n"
        "speaker reviewer {\n"
        "  tool approve sets done = true\n"
        "}\n"
        "start user\n"
        "max_turns 12\n"
        "context done = false\n"
        "when context.done == true\n"
        '  then terminate "approved"\n'
        "  priority 100\n"
        "when from user then drafter\n"
        "when from drafter then reviewer\n"
        "when from reviewer then drafter\n"
    ),
    "speakers": (
        "speaker user: human\n"
        "speakers x,\n"
        "  y\n"
        "speaker b\n"
        "start user\n"
        "when from user then b\n"
        'when from b then terminate "x"\n'
    ),
    "property": (
        "speaker a: human\n"
        "speaker b\n"
        "start a\n"
        "max_turns 4\n"
        "when from a then b\n"
        "when from b then a\n"
        "property quiet: never from a\n"
        "  and previous from b\n"
    ),
}


def _codes(text: str) -> Counter[str]:
    return Counter(d.code.id for d in check_source(SourceFile("f.flow", text)))


def _placements(base: str) -> list[str]:
    """The base with ignore comments (each code the check finds, and one it does not)
    put at the end of each line of a statement over several lines, alone, with other
    comments before and after it on that statement, or with a second ignore comment."""
    lines = base.splitlines()
    codes = sorted(set(_codes(base)) | {"W203"})
    # the lines of the statements over several lines: a line and its continuations
    multi = [i for i, line in enumerate(lines) if line.startswith("  ")]
    spots = sorted({i - 1 for i in multi} | set(multi))
    out = []
    for at, code in itertools.product(spots, codes):
        for before, after in [(None, None), (at - 1, None), (None, at + 1), (at - 1, at + 1)]:
            marked = list(lines)
            marked[at] += f"  # flowc: ignore[{code}]"
            for other, note in ((before, "said before"), (after, "said after")):
                if other is not None and other in spots and other != at:
                    marked[other] += f"  # {note}"
            out.append("\n".join(marked) + "\n")
        # and a second ignore comment on the same statement, naming each code in turn
        for other, second in itertools.product(spots, codes):
            if other != at:
                marked = list(lines)
                marked[at] += f"  # flowc: ignore[{code}]"
                marked[other] += f"  # flowc: ignore[{second}]"
                out.append("\n".join(marked) + "\n")
    return out


@pytest.mark.parametrize("name", sorted(BASES))
def test_formatting_never_changes_what_check_reports(name: str) -> None:
    tried = 0
    for text in _placements(BASES[name]):
        formatted = format_source(text)
        assert _codes(formatted) == _codes(text), (text, formatted)
        assert format_source(formatted) == formatted
        tried += 1
    assert tried >= 12


def test_an_ignore_on_any_line_of_a_statement_silences_its_findings() -> None:
    """The walkthrough's file: W204 is found on the rule's first line; the ignore on it,
    or on the rule's last line, silences it, before and after `fmt`."""
    base = BASES["rule"]
    assert _codes(base)["W204"] == 1
    for line in ("when context.done == true", "  priority 100"):
        text = base.replace(line, line + "  # flowc: ignore[W204]")
        assert _codes(text)["W204"] == 0 and _codes(text)["X001"] == 0
        formatted = format_source(text)
        assert (
            'when context.done == true then terminate "approved" priority 100'
            "  # flowc: ignore[W204]\n" in formatted
        )
        assert _codes(formatted) == _codes(text)


def test_an_unused_ignore_on_a_statement_names_its_lines() -> None:
    text = BASES["rule"].replace("  priority 100", "  priority 100  # flowc: ignore[W203]")
    [x001] = [d for d in check_source(SourceFile("f.flow", text)) if d.code.id == "X001"]
    assert "no W203 finding on lines 9-11 (one item, which `flowc fmt` writes" in x001.message


def test_a_second_ignore_comment_on_a_statement_is_x001_before_and_after_fmt() -> None:
    """Only the first ignore comment of a statement over several lines counts (`fmt` keeps
    it at the end of the joined line, and moves the next below it): the second is X001,
    naming the first, and its codes are not silenced."""
    text = BASES["speakers"].replace("speakers x,", "speakers x,  # flowc: ignore[W201]")
    text = text.replace("  y\n", "  y  # flowc: ignore[W201, W207]\n")
    found = check_source(SourceFile("f.flow", text))
    x001 = [d for d in found if d.code.id == "X001"]
    assert [d.span.line if d.span else 0 for d in x001] == [3, 3]  # one per code
    assert [d.message.split("]")[0] for d in x001] == [
        "`# flowc: ignore[W201",
        "`# flowc: ignore[W207",
    ]
    for d in x001:
        assert "only the first ignore comment counts, the one on line 2" in d.message
        assert "`# flowc: ignore[W201, W207]`" in (d.help or "")
    assert _codes(format_source(text)) == _codes(text)


def test_comments_around_the_ignore_keep_their_order() -> None:
    text = (
        "speaker user: human\nspeaker b\nstart user\nwhen from user then b\n"
        "when from b  # before\n  # flowc: ignore[W207]\n  # after\n"
        '  then terminate "x"  # end\n\n# next\nwhen from user then b priority 3\n'
    )
    assert format_source(text) == (
        "speaker user: human\nspeaker b\nstart user\nwhen from user then b\n"
        '# before\nwhen from b then terminate "x"  # flowc: ignore[W207]\n# after\n# end\n'
        "\n# next\nwhen from user then b priority 3\n"
    )
