"""``text_matches`` means the same on every supported Python (issue 24, point 4).

flowc parses a pattern with Python's own parser, whose verdicts differ between 3.11,
3.12 and 3.13 in a few places (how deep groups may nest before the stack runs out, the
inline flag ``t``, a conditional's group name, an empty negative lookaround, the
character names ``\\N{...}`` knows). flowc checks those itself first, the same way on
every version. The corpus test compares each verdict with one expected file shared by
all versions; the others pin the checks one by one.
"""

from __future__ import annotations

import json
import sys
import unicodedata
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import flowc.regex as rx
from flowc.regex import MAX_DEPTH, compile_pattern, refusal
from tests.hostile.regex_corpus import CORPUS

EXPECTED = Path(__file__).with_name("regex_corpus.expected.json")


def _verdict(pattern: str) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Python's own FutureWarnings ("possible nested set")
        problem = refusal(pattern)
    if problem is None:
        return {"pattern": pattern, "accepted": True}
    return {
        "pattern": pattern,
        "accepted": False,
        "message": problem.message,
        "offset": problem.offset,
        "length": problem.length,
    }


def test_every_version_gives_the_corpus_the_same_verdicts(update_golden: bool) -> None:
    assert len(set(CORPUS)) == len(CORPUS), "a pattern is in the corpus twice"
    got = [_verdict(p) for p in CORPUS]
    if update_golden:
        EXPECTED.write_text(json.dumps(got, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    by_pattern = {e["pattern"]: e for e in expected}
    differ = [(g, by_pattern.get(g["pattern"])) for g in got if by_pattern.get(g["pattern"]) != g]
    shown = "\n".join(
        f"{g['pattern'][:60]!r}:\n  now      {g}\n  expected {e}" for g, e in differ[:10]
    )
    assert not differ, f"{len(differ)} verdicts differ on Python {sys.version.split()[0]}:\n{shown}"
    assert [e["pattern"] for e in expected] == CORPUS, "the expected file is stale: --update-golden"


def _deep(frames: int, call: Callable[[], Any]) -> Any:
    return call() if frames == 0 else _deep(frames - 1, call)


@pytest.mark.parametrize(
    "shape",
    [
        ("(", "", "a", ")"),
        ("(?:", "a|", "b", ")*"),
        ("(?i:", "a|", "b", ")*"),
        ("(", "a|", "b", ")+?"),
        ("(?s:", "x|", "b", ")?"),
    ],
)
@pytest.mark.parametrize("caller_frames", [0, 400])
def test_groups_nested_to_the_limit_compile_from_any_caller(
    shape: tuple[str, str, str, str], caller_frames: int
) -> None:
    """The deepest allowed nesting, in the shapes that take the most stack, compiles
    from a caller already 400 frames deep (Python's limit is 1000) on every version:
    the verdict does not depend on the stack."""
    opener, then, inner, closing = shape

    def nested(depth: int) -> str:
        return (opener + then) * depth + inner + closing * depth

    assert _deep(caller_frames, lambda: refusal(nested(MAX_DEPTH))) is None
    problem = _deep(caller_frames, lambda: refusal(nested(MAX_DEPTH + 1)))
    assert problem is not None and problem.message.startswith("groups nested too deeply (at offset")
    assert (problem.offset, problem.length) == (len(opener + then) * MAX_DEPTH, len(opener))


def test_deep_nesting_names_the_first_group_too_deep() -> None:
    problem = refusal("a" + "(?:" * 60 + ")" * 60)
    assert problem is not None
    assert problem.message == (
        f"groups nested too deeply (at offset {1 + 3 * MAX_DEPTH}): flowc "
        f"allows at most {MAX_DEPTH} levels of groups within groups, on "
        "every Python version"
    )
    assert (problem.offset, problem.length) == (1 + 3 * MAX_DEPTH, 3)


@pytest.mark.parametrize(("pattern", "offset"), [("(?t)", 1), ("(?i:a(?t))", 6), ("(?t:a)", 1)])
def test_the_template_flag_is_unknown_on_every_version(pattern: str, offset: int) -> None:
    problem = refusal(pattern)
    assert problem is not None
    assert (
        problem.message
        == f"not a valid regular expression: unknown extension ?t (at offset {offset})"
    )


@pytest.mark.parametrize("name", ["+1", " 1", "1_0", "\u0661"])
def test_a_conditional_group_name_is_checked_as_312_does(name: str) -> None:
    problem = refusal(f"(a)(?({name})b)")
    assert problem is not None
    assert (
        problem.message
        == f"not a valid regular expression: bad character in group name {name!r} (at offset 6)"
    )


@pytest.mark.parametrize(
    ("pattern", "what", "offset", "length"),
    [
        ("(?!)", "a lookahead `(?!...)`", 0, 3),
        ("a(?<!)", "a lookbehind `(?<!...)`", 1, 4),
    ],
)
def test_an_empty_negative_lookaround_is_a_lookaround_on_every_version(
    pattern: str, what: str, offset: int, length: int
) -> None:
    """3.13 parses `(?!)` as the opcode FAILURE; flowc refuses it as the lookaround it is."""
    problem = refusal(pattern)
    assert problem is not None and problem.message.startswith(f"{what} (at offset {offset})")
    assert (problem.offset, problem.length) == (offset, length)


def test_a_count_over_pythons_own_limit_is_a_count_over_1000() -> None:
    problem = refusal("a{4294967296}")
    assert problem is not None and problem.message.startswith(
        "a repeat count over 1000 (at offset 1)"
    )


def test_character_names_are_unicode_14s() -> None:
    r"""``\N{WIRELESS}`` (Unicode 15.0) is refused as 3.11 refuses it; its code point is
    still a valid pattern everywhere."""
    problem = refusal(r"x\N{WIRELESS}")
    assert problem is not None
    assert (
        problem.message
        == "not a valid regular expression: undefined character name 'WIRELESS' (at offset 1)"
    )
    assert compile_pattern("\\U0001f6dc").search("\U0001f6dc")
    assert compile_pattern(r"\N{LATIN SMALL LETTER A}").search("a")


def _assigned() -> set[int]:
    return {c for c in range(0x110000) if unicodedata.category(chr(c)) != "Cn"}


#: how many code points Unicode 14.0 (Python 3.11's database) assigns
UNICODE_14_ASSIGNED = 284_278


def test_the_table_of_characters_newer_than_unicode_14_fits_this_python() -> None:
    """The table flowc refuses ``\\N{...}`` names from is exactly what this Python's
    Unicode assigned after 14.0 (a Python with a newer Unicode fails here: extend the table)."""
    assert unicodedata.unidata_version in ("14.0.0", "15.0.0", "15.1.0"), (
        unicodedata.unidata_version
    )
    newer = {c for lo, hi in rx._NEWER_THAN_UNICODE_14 for c in range(lo, hi + 1)}
    assigned = _assigned()
    if unicodedata.unidata_version == "14.0.0":
        assert not newer & assigned
        assert len(assigned) == UNICODE_14_ASSIGNED
    else:
        assert len(assigned - newer) == UNICODE_14_ASSIGNED
        if unicodedata.unidata_version == "15.1.0":
            assert newer <= assigned
