"""``text_matches`` patterns (issue 11, point 4): Python's meaning, in linear time.

The property: for every pattern of the accepted subset and every text, flowc's matcher
says what ``re.search(pattern, text) is not None`` says. The subset's refusals (lookaround,
backreferences, conditionals, possessive and atomic, a `$` with something after it, counts
over 1000) come with the offset of the construct. The case-folding and class tables are
checked against Python's engine over every code point.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from flowc.regex import MAX_REPEAT, PatternRefused, compile_pattern, refusal

_sre: Any = importlib.import_module("_sre")

# characters where Python's rules are subtle: case pairs outside ASCII (Kelvin sign, long s,
# final sigma, dotted/dotless i, sharp s, a titlecase digraph), non-ASCII digits, word and
# space characters, a line break, an emoji and a lone surrogate
TRICKY = (
    "aAbBkKsSiI_1 \n\t-.\u212a\u017f\u03c3\u03c2\u03a3\u0130\u0131\u00df\u1e9e\u01c5\u01c6"
    "\u00e9\u00c9\u0663\u00a0\u2028\u3000\U0001f600\ud800"
)
TEXT = st.text(alphabet=st.sampled_from(TRICKY), max_size=12)


def _escape(ch: str) -> str:
    return re.escape(ch) if ord(ch) < 0xD800 or ord(ch) > 0xDFFF else f"\\u{ord(ch):04x}"


LITERAL = st.sampled_from(TRICKY).map(_escape)
CLASS_ITEM = st.one_of(
    LITERAL.filter(lambda s: s not in ("\\-",)),
    st.sampled_from(
        [
            r"\d",
            r"\w",
            r"\s",
            r"\D",
            r"\W",
            r"\S",
            "a-z",
            "A-Z",
            "0-9",
            "\u00c0-\u024f",
            "\u0370-\u03ff",
            "\\u0100-\\U0001f600",
        ]
    ),
)
CHAR_CLASS = st.builds(
    lambda neg, items: "[" + ("^" if neg else "") + "".join(items) + "]",
    st.booleans(),
    st.lists(CLASS_ITEM, min_size=1, max_size=4),
)
ATOM = st.one_of(
    LITERAL,
    CHAR_CLASS,
    st.sampled_from(
        [".", r"\d", r"\w", r"\s", r"\D", r"\W", r"\S", r"\b", r"\B", "^", r"\A", r"\Z"]
    ),
)
QUANT = st.sampled_from(
    ["", "", "", "*", "+", "?", "*?", "+?", "??", "{2}", "{1,3}", "{0,2}?", "{2,}"]
)


def _group(inner: str, kind: str) -> str:
    return {
        "plain": f"(?:{inner})",
        "capture": f"({inner})",
        "i": f"(?i:{inner})",
        "s": f"(?s:{inner})",
        "m": f"(?m:{inner})",
        "a": f"(?a:{inner})",
        "-i": f"(?-i:{inner})",
    }[kind]


def _patterns(depth: int) -> st.SearchStrategy[str]:
    piece = st.builds(
        lambda a, q: a + (q if a not in ("^", r"\A", r"\Z", r"\b", r"\B") else ""), ATOM, QUANT
    )
    if depth > 0:
        sub = _patterns(depth - 1)
        grouped = st.builds(
            lambda alts, kind, q: _group("|".join(alts), kind) + q,
            st.lists(sub, min_size=1, max_size=3),
            st.sampled_from(["plain", "capture", "i", "s", "m", "a", "-i"]),
            QUANT,
        )
        piece = st.one_of(piece, grouped)
    return st.lists(piece, min_size=0, max_size=4).map("".join)


PATTERN = st.builds(
    lambda prefix, body, end: prefix + body + end,
    st.sampled_from(["", "", "(?i)", "(?s)", "(?m)", "(?a)", "(?im)", "(?ai)", "(?x)"]),
    _patterns(2),
    st.sampled_from(["", "", "$", r"\Z", "(?m:$)"]),
)


def _python(pattern: str, text: str) -> bool:
    return re.search(pattern, text) is not None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PATTERN, st.lists(TEXT, min_size=1, max_size=6))
def test_matches_as_python_re_search(pattern: str, texts: list[str]) -> None:
    try:
        re.compile(pattern)
    except re.error:  # the generator may put a quantifier where Python allows none
        assume(False)
    problem = refusal(pattern)
    # the one refusal the generator can produce: (?a) and Unicode word boundaries mixed
    assert problem is None or "word boundaries" in problem.message, problem
    assume(problem is None)
    matcher = compile_pattern(pattern)
    for text in texts:
        assert matcher.search(text) == _python(pattern, text), (pattern, text)


EXAMPLES = [
    # (pattern, text, Python's answer)
    (r"^(a+)+$", "aaa", True),
    (r"a$", "a\n", True),
    (r"a$", "a\n\n", False),
    (r"a\Z", "a\n", False),
    (r"(?m)a$", "a\nb", True),
    (r"(?m)^b", "a\nb", True),
    (r"^b", "a\nb", False),
    (r"\bé", "café", False),
    (r"\bé", "é", True),
    (r"(?a)\bé", "é", False),
    (r"\B", "", False),
    (r"\b", "", False),
    (r"^$", "", True),
    (r"\d", "\u0663", True),
    (r"(?a)\d", "\u0663", False),
    (r"\s", "\u2028", True),
    (r"(?a)\s", "\x0b", True),
    (r"(?i)k", "\u212a", True),
    (r"(?ai)k", "\u212a", False),
    (r"(?i)\u0130", "i", True),
    (r"(?i)s", "\u017f", True),
    (r"(?i)\u03c3", "\u03c2", True),
    (r"(?i)[^k]", "\u212a", False),
    (r".", "\n", False),
    (r"(?s).", "\n", True),
    (r"[\ud800]", "\ud800", True),
    (r"(?i)TERMINATE\s*\Z", "all done. terminate \n", True),
    (r"\b(?:\d[ -]?){13,16}\b", "card 4111 1111 1111 1111 ok", True),
    (r"\b(?:\d[ -]?){13,16}\b", "card 41111", False),
]


@pytest.mark.parametrize(("pattern", "text", "expected"), EXAMPLES)
def test_examples_agree_with_python(pattern: str, text: str, expected: bool) -> None:
    assert _python(pattern, text) is expected
    assert compile_pattern(pattern).search(text) is expected


REFUSED = [
    # (pattern, what the message names, offset, length)
    (r"x(?=a)", "lookahead", 1, 3),
    (r"x(?!a)", "lookahead", 1, 3),
    (r"[(]x(?<=a)", "lookbehind", 4, 4),
    (r"\(?<!a\)x(?<!a)", "lookbehind", 9, 4),
    (r"(a)b\1", "backreference", 4, 2),
    (r"(?P<n>a)(?P=n)", "backreference", 8, 6),
    (r"(a)?(?(1)b|c)", "conditional", 4, 3),
    (r"a++", "possessive", 1, 2),
    (r"a{2}+", "possessive", 1, 4),
    (r"(?>ab)", "atomic", 0, 3),
    (r"a$b", "`$` with something after it", 1, 1),
    (r"[$]a$|$b", "`$` with something after it", 6, 1),
    (r"a{1001}", "repeat count over 1000", 1, 6),
    (r"(?:a{100}){100}", "nested repeats", 0, 0),
    (r"\b(?a:\b)", "word boundaries", 6, 2),
    (r"(", "not a valid regular expression", 0, 1),
    (r"a{2,1}", "not a valid regular expression", 2, 1),
]


@pytest.mark.parametrize(("pattern", "what", "offset", "length"), REFUSED)
def test_refusals_name_the_construct_and_where(
    pattern: str, what: str, offset: int, length: int
) -> None:
    problem = refusal(pattern)
    assert problem is not None and what in problem.message, problem
    assert (problem.offset, problem.length) == (offset, length), problem.message
    with pytest.raises(PatternRefused):
        compile_pattern(pattern)


def test_repeat_counts_up_to_the_limit_are_accepted() -> None:
    assert compile_pattern(f"a{{{MAX_REPEAT}}}").search("a" * MAX_REPEAT)
    assert not compile_pattern(f"^a{{{MAX_REPEAT}}}$").search("a" * (MAX_REPEAT + 1))


def test_nothing_above_u20000_changes_case() -> None:
    """What the case-insensitive literal sets rely on (flowc.regex._lowering)."""
    lower, upper = _sre.unicode_tolower, _sre.unicode_iscased
    assert not [c for c in range(0x20000, 0x110000) if lower(c) != c or upper(c)]


@pytest.mark.parametrize(
    "literal",
    list("kKsSiI\u212a\u017f\u03c3\u03c2\u03a3\u0130\u0131\u00df\u1e9e\u01c5\u00b5\u039c\u03bc"),
)
@pytest.mark.parametrize("flags", ["i", "ai"])
def test_case_insensitive_literal_sets_are_pythons(literal: str, flags: str) -> None:
    """Every code point Python's `(?i)X` accepts, and no other, is in flowc's set."""
    import flowc.regex as rx

    every = "".join(map(chr, range(0x30000)))
    python = {ord(m.group()) for m in re.finditer(f"(?{flags}:{re.escape(literal)})", every)}
    ours = {
        c
        for lo, hi in rx._set_of(rx._const.LITERAL, ord(literal), _flags(flags))
        for c in range(lo, hi + 1)
    }
    assert ours == python


def _flags(letters: str) -> int:
    return re.compile(f"(?{letters})").flags


def test_catastrophic_pattern_is_linear_in_process() -> None:
    """^(a+)+$ against 40 a's and a '!' (Python: 2^40 steps) and against a million."""
    matcher = compile_pattern(r"^(a+)+$")
    assert matcher.search("a" * 40 + "!") is False
    assert matcher.search("a" * 1_000_000 + "!") is False
    assert matcher.search("a" * 1_000_000) is True


@pytest.mark.parametrize("depth", [300, 5000])
def test_deep_nesting_is_refused_not_a_recursion_error(depth: int) -> None:
    problem = refusal("(" * depth + "a" + ")" * depth)
    assert problem is not None and "nested too deeply" in problem.message
