r"""The regular expressions of ``text_matches``: Python's meaning, matched in linear time.

``text_matches(pattern)`` means what AG2's regex guardrail and classic AutoGen's
termination tests mean: Python ``re.search(pattern, text)`` with no flags. Python's
engine backtracks, so a pattern such as ``^(a+)+$`` takes exponential time on a text of
40 ``a`` and a ``!``. flowc matches with RE2 instead (``google-re2``), which runs in time
linear in the text, and keeps Python's meaning exactly:

- the pattern is parsed by Python's own parser, so what is valid, and what each escape,
  flag and class means, is Python's; where Python 3.11, 3.12 and 3.13 disagree on what is
  valid, :class:`_Scan` decides first, the same way on each (the strictest version's
  verdict), so a pattern is accepted or refused alike on every supported version;
- every character class (``\d``, ``\w``, ``\s`` are Unicode unless ``(?a)``; ``.``;
  ``(?i)`` case folding, with Python's own folding rules) is turned into the exact set of
  code points Python's engine accepts, computed by Python's engine itself;
- the text is matched as fixed-width units (:func:`_unit`): five bytes per character,
  the first and last saying whether it is a word character (for ``\b`` / ``\B``, which
  are Unicode in Python and ASCII in RE2) or a line break (for ``^`` / ``$`` under
  ``(?m)``), the three in between its code point; so lone surrogates match too;
- ``\Z`` is RE2's ``\z``; ``$`` without ``(?m)`` (end, or before a final line break) is
  written as "an optional final line break, then the end", which is exact where nothing
  follows it in the pattern.

What RE2 cannot do in linear time is refused with a :class:`PatternRefused` that says
what and where (an offset in the pattern): lookahead and lookbehind, backreferences,
conditionals, possessive quantifiers and atomic groups, ``$`` (without ``(?m)``) with
something after it, a pattern mixing ASCII and Unicode word boundaries, repeat counts
over 1000 (counts of nested repeats multiply), groups nested more than
:data:`MAX_DEPTH` deep and patterns too large for the engine.

>>> m = compile_pattern(r"^(a+)+$")
>>> m.search("a" * 40 + "!"), m.search("aaa\n")
(False, True)
>>> compile_pattern(r"\bcafé\b").search("un café.")
True
>>> refusal(r"(?<=a)b")
PatternRefused('a lookbehind `(?<=...)` (at offset 0): linear-time matching cannot look around; rewrite the pattern without it', 0, 4)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from flowc._compat import (
    RE_CONSTANTS,
    RE_TYPE_FLAGS,
    re_extra_cases,
    re_parse,
    unicode_iscased,
    unicode_tolower,
)

__all__ = ["MAX_DEPTH", "MAX_REPEAT", "Matcher", "PatternRefused", "compile_pattern", "refusal"]

# the opcodes and flags of Python's parse of a pattern
_const: Any = RE_CONSTANTS

#: RE2's largest repeat count (counts of nested repeats multiply)
MAX_REPEAT = 1000
#: how deep groups may nest. Python's parser and the translation below recurse once per
#: level, so without a limit of its own, how deep a pattern may go would depend on the
#: Python version and on the caller's stack (300 levels passed on 3.12 and failed on
#: 3.11); 50 is far below where any supported version fails, from any caller
MAX_DEPTH = 50
#: memory RE2 may use for one pattern's program and its cache of states
_MAX_MEM = 64 << 20
_LAST = 0x10FFFF
_UNIT_BYTES = 5
#: the flag bytes that open and close a character's unit
_WORD, _OTHER, _BREAK = ord("w"), ord(" "), ord("\n")


class PatternRefused(ValueError):
    """A pattern flowc will not match: not valid Python, or not matchable in linear time.

    ``offset`` and ``length`` are where, in the pattern (characters).
    """

    def __init__(self, message: str, offset: int = 0, length: int = 0):
        super().__init__(message, offset, length)
        self.message = message
        self.offset = offset
        self.length = length

    def __str__(self) -> str:
        return self.message


# ── the code point sets of character classes, computed by Python's engine ─────────


@functools.cache
def _every_character() -> str:
    """Every code point, in order (surrogates too): what class scans run over."""
    import array

    codes = array.array("I", range(_LAST + 1))
    return codes.tobytes().decode("utf-32-le" if codes.itemsize == 4 else "utf-32", "surrogatepass")


Ranges = tuple[tuple[int, int], ...]


def _runs(pattern: str) -> Ranges:
    """The code points a one-character Python pattern accepts, as ranges (``pattern``
    must match a run of them: ``X+``)."""
    found = re.compile(pattern).finditer(_every_character())
    return tuple((m.start(), m.end() - 1) for m in found)


def _complement(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    at = 0
    for lo, hi in ranges:
        if lo > at:
            out.append((at, lo - 1))
        at = hi + 1
    if at <= _LAST:
        out.append((at, _LAST))
    return tuple(out)


def _normal(points: Iterable[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(points):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def _py_char(code: int) -> str:
    return f"\\U{code:08x}"


_CATEGORY_ESCAPES = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}


def _flag_prefix(flags: int) -> str:
    ascii_ = "a" if flags & _const.SRE_FLAG_ASCII else ""
    ignore = "i" if flags & _const.SRE_FLAG_IGNORECASE else ""
    return ascii_ + ignore


@functools.cache
def _category(name: str, ascii_: bool) -> Ranges:
    r"""The code points of ``\d``, ``\w``, ``\s`` (and their negations), Unicode or ASCII,
    as Python's engine has them."""
    escape = _CATEGORY_ESCAPES[name]
    if escape[1].isupper():
        return _complement(_category(name.replace("NOT_", ""), ascii_))
    if ascii_:
        return _normal(
            (ord(c), ord(c))
            for c in {
                "d": "0123456789",
                "s": " \t\n\r\f\v",
                "w": "0123456789_"
                + "".join(map(chr, range(65, 91)))
                + "".join(map(chr, range(97, 123))),
            }[escape[1]]
        )
    return _runs(escape + "+")


def _plain_set(op: Any, av: Any, flags: int) -> Ranges:
    """The code points a character node accepts when case is not ignored."""
    if op is _const.LITERAL:
        return ((av, av),)
    if op is _const.NOT_LITERAL:
        return _complement(((av, av),))
    items = list(av)
    negate = bool(items) and items[0][0] is _const.NEGATE
    points: list[tuple[int, int]] = []
    for item, arg in items[1:] if negate else items:
        if item is _const.LITERAL:
            points.append((arg, arg))
        elif item is _const.RANGE:
            points.append((arg[0], arg[1]))
        elif item is _const.CATEGORY:
            points.extend(_category(str(arg), bool(flags & _const.SRE_FLAG_ASCII)))
        else:  # pragma: no cover - Python's parser puts nothing else in a class
            raise PatternRefused(f"an unexpected class item {item}")
    merged = _normal(points)
    return _complement(merged) if negate else merged


def _one_char_pattern(op: Any, av: Any, flags: int) -> str:
    """Python syntax for the character node alone, under its flags."""
    if op is _const.LITERAL:
        body = _py_char(av)
    elif op is _const.NOT_LITERAL:
        body = f"[^{_py_char(av)}]"
    else:
        items = list(av)
        negate = bool(items) and items[0][0] is _const.NEGATE
        parts = []
        for item, arg in items[1:] if negate else items:
            if item is _const.LITERAL:
                parts.append(_py_char(arg))
            elif item is _const.RANGE:
                parts.append(f"{_py_char(arg[0])}-{_py_char(arg[1])}")
            else:
                parts.append(_CATEGORY_ESCAPES[str(arg)])
        body = "[" + ("^" if negate else "") + "".join(parts) + "]"
    return f"(?{_flag_prefix(flags)}:{body})"


@functools.cache
def _case_candidates(ascii_: bool) -> str:
    """Every character whose case-insensitive matching may differ from its plain
    matching: the cased ones, what they lower to, and Python's extra equivalents
    (``re._casefix``). Each other character ``ch`` lowers to itself and is the lower case
    of nothing else, so a case-insensitive class accepts it exactly when the same class
    without ``(?i)`` does. All cased characters are below U+20000 (a test checks it)."""
    if ascii_:
        return "".join(map(chr, [*range(65, 91), *range(97, 123)]))
    lower, cased = unicode_tolower, unicode_iscased
    found: set[int] = set()
    for code in range(0x20000):
        if cased(code):
            found.add(code)
            found.add(lower(code))
    for key, values in re_extra_cases().items():
        found.add(key)
        found.update(values)
    return "".join(map(chr, sorted(found)))


def _without(ranges: Ranges, points: Sequence[int]) -> list[tuple[int, int]]:
    """``ranges`` minus the sorted code ``points``."""
    out: list[tuple[int, int]] = []
    i = 0
    for lo, hi in ranges:
        while i < len(points) and points[i] < lo:
            i += 1
        at = lo
        while i < len(points) and points[i] <= hi:
            if points[i] > at:
                out.append((at, points[i] - 1))
            at = points[i] + 1
            i += 1
        if at <= hi:
            out.append((at, hi))
    return out


@functools.lru_cache(maxsize=4096)
def _set_from(pattern: str, plain: Ranges, ascii_: bool) -> Ranges:
    candidates = _case_candidates(ascii_)
    hits = [(ord(m.group()), ord(m.group())) for m in re.finditer(pattern, candidates)]
    return _normal([*_without(plain, sorted(map(ord, candidates))), *hits])


def _set_of(op: Any, av: Any, flags: int) -> Ranges:
    """The code points one character-consuming node accepts under ``flags``, as Python's
    engine decides."""
    if op is _const.ANY:
        return ((0, _LAST),) if flags & _const.SRE_FLAG_DOTALL else _complement(((10, 10),))
    plain = _plain_set(op, av, flags)
    if not flags & _const.SRE_FLAG_IGNORECASE:
        return plain
    return _set_from(_one_char_pattern(op, av, flags), plain, bool(flags & _const.SRE_FLAG_ASCII))


# ── code point sets as RE2 byte patterns over units ──────────────────────────────


def _unit(code: int, word: bool) -> str:
    """The five Latin-1 characters that stand for one character of the text."""
    flag = _BREAK if code == 10 else _WORD if word else _OTHER
    return "".join(
        map(chr, (flag, 0x80 | code >> 14, 0x80 | (code >> 7) & 0x7F, 0x80 | code & 0x7F, flag))
    )


def _byte_class(ranges: Iterable[tuple[int, int]]) -> str:
    parts = []
    for lo, hi in ranges:
        parts.append(
            f"\\x{0x80 | lo:02x}" if lo == hi else f"\\x{0x80 | lo:02x}-\\x{0x80 | hi:02x}"
        )
    return "[" + "".join(parts) + "]"


def _digits(ranges: Ranges, width: int) -> str:
    """RE2 syntax for ``width`` base-128 digits (each a byte 0x80-0xff) whose value lies
    in ``ranges`` (within ``[0, 128**width)``)."""
    if width == 1:
        return _byte_class(ranges)
    size = 128 ** (width - 1)
    full: Ranges = ((0, size - 1),)
    buckets: dict[int, list[tuple[int, int]]] = {}
    spans: list[tuple[int, int]] = []  # runs of leading digits whose rest is full
    for lo, hi in ranges:
        lo_d, lo_r = divmod(lo, size)
        hi_d, hi_r = divmod(hi, size)
        if lo_d == hi_d:
            buckets.setdefault(lo_d, []).append((lo_r, hi_r))
            continue
        first, last = lo_d, hi_d
        if lo_r:
            buckets.setdefault(lo_d, []).append((lo_r, size - 1))
            first += 1
        if hi_r != size - 1:
            buckets.setdefault(hi_d, []).append((0, hi_r))
            last -= 1
        if first <= last:
            spans.append((first, last))
    groups: dict[Ranges, list[tuple[int, int]]] = {}
    for d, pieces in buckets.items():
        groups.setdefault(_normal(pieces), []).append((d, d))
    for span in spans:
        groups.setdefault(full, []).append(span)
    alternatives = []
    for rest, leads in groups.items():
        tail = "[\\x80-\\xff]" * (width - 1) if rest == full else _digits(rest, width - 1)
        alternatives.append(_byte_class(_normal(leads)) + tail)
    if not alternatives:
        return "[^\\x00-\\xff]"
    return alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"


@functools.lru_cache(maxsize=4096)
def _unit_class(ranges: Ranges) -> str:
    """RE2 syntax for one unit whose code point is in ``ranges``."""
    if not ranges:
        return "[^\\x00-\\xff]"
    return "(?s:.)" + _digits(ranges, 3) + "(?s:.)"


# ── the translation ──────────────────────────────────────────────────────────────────

_NEVER = "[^\\x00-\\xff]"
_LOOK_HINT = "linear-time matching cannot look around; rewrite the pattern without it"
_COUNT_HINT = (
    f"linear-time matching repeats at most {MAX_REPEAT} times; use `*` or `+`, or a smaller count"
)
_FINAL_BREAK = "(?:" + "".join(f"\\x{ord(c):02x}" for c in _unit(10, False)) + ")?\\z"


class _Translation:
    def __init__(self, pattern: str):
        self.pattern = pattern
        self.word_kinds: set[str] = set()
        self.ends = 0  # `$` seen so far (their order in the pattern)
        self.boundaries = 0  # word boundaries seen so far

    def refuse(self, what: str, kind: str, message: str, ordinal: int = 0) -> PatternRefused:
        offset, length = _locate(self.pattern, kind, ordinal)
        where = f" (at offset {offset})" if length else ""
        return PatternRefused(f"{what}{where}: {message}", offset, length)

    def sequence(self, items: Sequence[tuple[Any, Any]], flags: int, tail: bool) -> str:
        # loops, not generator expressions: a frame less per level of nesting
        out = []
        last = len(items) - 1
        for i, (op, av) in enumerate(items):
            out.append(self.node(op, av, flags, tail and i == last))
        return "".join(out)

    def node(self, op: Any, av: Any, flags: int, tail: bool) -> str:
        c = _const
        if op in (c.LITERAL, c.NOT_LITERAL, c.ANY, c.IN):
            return _unit_class(_set_of(op, av, flags))
        if op is c.SUBPATTERN:
            _group, add_flags, del_flags, inner = av
            return "(?:" + self.sequence(inner, _combine(flags, add_flags, del_flags), tail) + ")"
        if op is c.BRANCH:
            alternatives = []
            for alt in av[1]:
                alternatives.append(self.sequence(alt, flags, tail))
            return "(?:" + "|".join(alternatives) + ")"
        if op in (c.MAX_REPEAT, c.MIN_REPEAT):
            low, high, inner = av
            if low > MAX_REPEAT or (high != c.MAXREPEAT and high > MAX_REPEAT):
                raise self.refuse(f"a repeat count over {MAX_REPEAT}", "count", _COUNT_HINT)
            body = self.sequence(inner, flags, tail and high <= 1)
            if high == c.MAXREPEAT:
                count = "*" if low == 0 else "+" if low == 1 else f"{{{low},}}"
            elif (low, high) == (0, 1):
                count = "?"
            else:
                count = f"{{{low}}}" if low == high else f"{{{low},{high}}}"
            return f"(?:{body}){count}"
        if op is c.AT:
            return self.at(av, flags, tail)
        if op in (c.ASSERT, c.ASSERT_NOT):
            direction, _inner = av
            behind = direction < 0
            name = ("a lookbehind `(?<" if behind else "a lookahead `(?") + (
                "=...)`" if op is c.ASSERT else "!...)`"
            )
            raise self.refuse(name, "lookbehind" if behind else "lookahead", _LOOK_HINT)
        if op is c.GROUPREF:
            raise self.refuse(
                "a backreference",
                "backref",
                "linear-time matching cannot match a group's text again",
            )
        if op is c.GROUPREF_EXISTS:
            raise self.refuse(
                "a conditional `(?(...)...)`",
                "conditional",
                "linear-time matching cannot branch on what a group matched",
            )
        if op is c.FAILURE:  # Python 3.13's parse of an empty `(?!)` or `(?<!)`
            behind = self.pattern.startswith("(?<", _locate(self.pattern, "lookaround")[0])
            raise self.refuse(
                "a lookbehind `(?<!...)`" if behind else "a lookahead `(?!...)`",
                "lookbehind" if behind else "lookahead",
                _LOOK_HINT,
            )
        if op is c.ATOMIC_GROUP:
            raise self.refuse(
                "an atomic group `(?>...)`",
                "atomic",
                "linear-time matching has no atomic groups; use `(?:...)`",
            )
        if op is c.POSSESSIVE_REPEAT:
            raise self.refuse(
                "a possessive quantifier",
                "possessive",
                "linear-time matching has no possessive quantifiers; drop the `+` after it",
            )
        raise self.refuse(f"`{op}`", "", "not supported")  # pragma: no cover - nothing else parses

    def at(self, code: Any, flags: int, tail: bool) -> str:
        c = _const
        if flags & c.SRE_FLAG_MULTILINE:  # as Python's compiler: ^ and $ of any line
            code = {c.AT_BEGINNING: c.AT_BEGINNING_LINE, c.AT_END: c.AT_END_LINE}.get(code, code)
        if code in (c.AT_BEGINNING, c.AT_BEGINNING_STRING):
            return "\\A"
        if code is c.AT_END_STRING:
            return "\\z"
        if code is c.AT_BEGINNING_LINE:
            return "(?m:^)"
        if code is c.AT_END_LINE:
            return "(?m:$)"
        if code is c.AT_END:
            self.ends += 1
            if not tail:
                raise self.refuse(
                    "`$` with something after it",
                    "end",
                    "without (?m), `$` also matches before a final line break, which linear-time "
                    "matching can express only at the end of the pattern; write `\\Z` (the very "
                    "end) or `(?m)$` (the end of any line)",
                    self.ends,
                )
            return _FINAL_BREAK
        if code in (c.AT_BOUNDARY, c.AT_NON_BOUNDARY):
            self.boundaries += 1
            self.word_kinds.add("ascii" if flags & c.SRE_FLAG_ASCII else "unicode")
            if len(self.word_kinds) > 1:
                raise self.refuse(
                    "ASCII and Unicode word boundaries in one pattern",
                    "boundary",
                    "use `(?a)` for the whole pattern, or for none of it",
                    self.boundaries,
                )
            return "\\b" if code is c.AT_BOUNDARY else "\\B"
        raise self.refuse(f"`{code}`", "", "not supported")  # pragma: no cover


def _combine(flags: int, add: int, remove: int) -> int:
    if add & RE_TYPE_FLAGS:
        flags &= ~RE_TYPE_FLAGS
    return (flags | add) & ~remove


def _matches_empty(items: Sequence[tuple[Any, Any]]) -> bool:
    """Whether the parsed pattern matches the empty text (where Python's ``\\b`` and
    ``\\B`` both fail, unlike RE2's ``\\B``)."""
    c = _const
    for op, av in items:
        if op in (c.LITERAL, c.NOT_LITERAL, c.ANY, c.IN):
            return False
        if op is c.SUBPATTERN:
            if not _matches_empty(av[3]):
                return False
        elif op is c.BRANCH:
            if not any(_matches_empty(alt) for alt in av[1]):
                return False
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
            if av[0] > 0 and not _matches_empty(av[2]):
                return False
        elif op is c.AT and av in (c.AT_BOUNDARY, c.AT_NON_BOUNDARY):
            return False
    return True


# ── where a refused construct is in the pattern ─────────────────────────────────────

_TOKEN = re.compile(
    r"""\\(?:[0-9]{1,3}|.)            # an escape (backreferences are digits)
      | \[\^?\]?(?:\\.|[^\]\\])*\]?   # a class
      | \(\?\#[^)]*\)?                 # a comment
      | \(\?P=\w*\)?                   # a named backreference
      | \(\?(?:<[=!]|[=!>(])           # lookaround, atomic, conditional
      | \(\?[aiLmsux-]*[:)]            # a group with flags
      | \{\d*(?:,\d*)?\}\+?            # a count
      | [*+?]\+?                       # a quantifier
      | \#[^\n]*                       # a comment (verbose patterns only)
      | .""",
    re.VERBOSE | re.DOTALL,
)


def _locate(pattern: str, kind: str, ordinal: int = 0) -> tuple[int, int]:
    """``(offset, length)`` of the first construct of ``kind`` in ``pattern`` (the
    ``ordinal``-th for ``end``), or ``(0, 0)`` when it cannot be found."""
    verbose = bool(re.match(r"\(\?[aiLmsu]*x", pattern))
    seen = 0
    for m in _TOKEN.finditer(pattern):
        tok = m.group()
        if tok.startswith("#") and len(tok) > 1 and not verbose:
            continue
        hit = {
            "lookahead": tok in ("(?=", "(?!"),
            "lookbehind": tok in ("(?<=", "(?<!"),
            "lookaround": tok in ("(?=", "(?!", "(?<=", "(?<!"),
            "atomic": tok == "(?>",
            "conditional": tok == "(?(",
            "backref": tok.startswith("(?P=")
            or (tok[:1] == "\\" and tok[1:2].isdigit() and tok[1:2] != "0" and not _octal(tok)),
            "possessive": (len(tok) == 2 and tok[0] in "*+?" and tok[1] == "+")
            or (tok.startswith("{") and tok.endswith("}+")),
            "count": tok.startswith("{") and _big_count(tok),
            "boundary": tok in ("\\b", "\\B"),
            "end": tok == "$",
        }.get(kind, False)
        if hit:
            seen += 1
            if kind not in ("end", "boundary") or seen == ordinal:
                return m.start(), len(tok)
    return 0, 0


def _octal(tok: str) -> bool:
    return len(tok) == 4 and all(ch in "01234567" for ch in tok[1:])


def _big_count(tok: str) -> bool:
    numbers = re.findall(r"\d+", tok)
    return any(int(n) > MAX_REPEAT for n in numbers)


# ── what Python versions disagree on, checked the same way on each ──────────────────

#: code points assigned after Unicode 14.0 (Python 3.11's database) up to 15.1 (3.13's):
#: ``\N{...}`` of one of them is valid on 3.12 or 3.13 only, so flowc refuses it on every
#: version, as 3.11 does (a test checks the table against the running Python)
_NEWER_THAN_UNICODE_14 = (
    (0x0CF3, 0x0CF3),
    (0x0ECE, 0x0ECE),
    (0x2FFC, 0x2FFF),
    (0x31EF, 0x31EF),
    (0x10EFD, 0x10EFF),
    (0x1123F, 0x11241),
    (0x11B00, 0x11B09),
    (0x11F00, 0x11F10),
    (0x11F12, 0x11F3A),
    (0x11F3E, 0x11F59),
    (0x1342F, 0x1342F),
    (0x13439, 0x13455),
    (0x1B132, 0x1B132),
    (0x1B155, 0x1B155),
    (0x1D2C0, 0x1D2D3),
    (0x1DF25, 0x1DF2A),
    (0x1E030, 0x1E06D),
    (0x1E08F, 0x1E08F),
    (0x1E4D0, 0x1E4F9),
    (0x1F6DC, 0x1F6DC),
    (0x1F774, 0x1F776),
    (0x1F77B, 0x1F77F),
    (0x1F7D9, 0x1F7D9),
    (0x1FA75, 0x1FA77),
    (0x1FA87, 0x1FA88),
    (0x1FAAD, 0x1FAAF),
    (0x1FABB, 0x1FABD),
    (0x1FABF, 0x1FABF),
    (0x1FACE, 0x1FACF),
    (0x1FADA, 0x1FADB),
    (0x1FAE8, 0x1FAE8),
    (0x1FAF7, 0x1FAF8),
    (0x2B739, 0x2B739),
    (0x2EBF0, 0x2EE5D),
    (0x31350, 0x323AF),
)
_NEWER_STARTS = [lo for lo, _hi in _NEWER_THAN_UNICODE_14]
#: the inline flags of every supported Python (3.11 and 3.12 also took `t`, 3.13 does not)
_FLAGS = "aiLmsux"
_WHITESPACE = " \t\n\r\v\f"


def _named_character(name: str) -> int | None:
    r"""The code point ``\N{name}`` stands for on every supported Python, or None."""
    import bisect
    import unicodedata

    try:
        found = unicodedata.lookup(name)
    except KeyError:
        return None
    if len(found) != 1:  # a named sequence
        return None
    code = ord(found)
    at = bisect.bisect_right(_NEWER_STARTS, code) - 1
    return None if at >= 0 and code <= _NEWER_THAN_UNICODE_14[at][1] else code


def _invalid(pattern: str, message: str, pos: int) -> PatternRefused:
    """What Python's parser says of an invalid pattern, as flowc words it."""
    return PatternRefused(
        f"not a valid regular expression: {message} (at offset {pos})",
        pos,
        1 if pos < len(pattern) else 0,
    )


class _Scan:
    r"""One pass over a pattern, as Python's parser reads it (escapes, classes, comments,
    ``(?x)`` whitespace), for the few things Python versions disagree on: how deep groups
    nest (:data:`MAX_DEPTH`), the inline flag ``t`` (3.11 and 3.12 accept it, 3.13 does
    not), the group name of a conditional (3.11 also takes ``+1``, `` 1``, ``1_0`` or
    non-ASCII digits, 3.12 and 3.13 do not) and ``\N{...}`` names (each version knows the
    characters of its own Unicode). :meth:`first` is the first of these in the pattern,
    worded as the strictest version words it; a pattern that has one is refused with it
    on every version before Python's parser runs. At some malformed constructs, which
    every version refuses alike, the scan stops and leaves them to Python's parser.

    >>> _Scan("(?i:a(?t))").first()
    PatternRefused('not a valid regular expression: unknown extension ?t (at offset 6)', 6, 1)
    >>> _Scan("(?x) # not a group: (((((((((((").first() is None
    True
    """

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.at = 0

    def token(self) -> str | None:
        """The next token (a character, or an escape and the character after it)."""
        text, at = self.pattern, self.at
        if at >= len(text):
            return None
        size = 2 if text[at] == "\\" else 1
        self.at = at + size
        return text[at : at + size]

    def until(self, end: str) -> str | None:
        """The tokens up to ``end``, which is consumed; None when it never comes."""
        out: list[str] = []
        while (tok := self.token()) is not None:
            if tok == end:
                return "".join(out)
            out.append(tok)
        return None

    def escape(self, start: int) -> PatternRefused | None:
        """After an escape token at ``start``: a ``\\N{name}`` no version shares."""
        if self.pattern[start : start + 3] != "\\N{":
            return None
        self.at = start + 3
        name = self.until("}")
        if not name:  # missing or unterminated: the same error everywhere
            return None
        if _named_character(name) is None:
            return _invalid(self.pattern, f"undefined character name {name!r}", start)
        return None

    def first(self) -> PatternRefused | None:
        text = self.pattern
        verbose = False
        outer: list[bool] = []  # per open group, the verbose flag outside it
        while self.at < len(text):
            start = self.at
            tok = self.token()
            assert tok is not None
            if tok[0] == "\\":
                if len(tok) < 2:
                    return None
                problem = self.escape(start)
                if problem is not None:
                    return problem
            elif tok == "[":
                problem, ended = self.char_class()
                if problem is not None or not ended:
                    return problem
            elif verbose and tok in _WHITESPACE:
                continue
            elif verbose and tok == "#":
                while (tok := self.token()) is not None and tok != "\n":
                    pass
            elif tok == ")":
                if not outer:
                    return None
                verbose = outer.pop()
            elif tok == "(":
                opened = self.group(start, verbose)
                if isinstance(opened, PatternRefused):
                    return opened
                if opened is None:
                    return None
                if opened is _NOT_A_GROUP:
                    continue
                if opened is _GLOBAL_VERBOSE:
                    verbose = True
                    continue
                if len(outer) >= MAX_DEPTH:
                    return PatternRefused(
                        f"groups nested too deeply (at offset {start}): flowc allows at most "
                        f"{MAX_DEPTH} levels of groups within groups, on every Python version",
                        start,
                        self.at - start,
                    )
                outer.append(verbose)
                verbose = opened is _VERBOSE or (verbose and opened is not _NOT_VERBOSE)
        return None

    def char_class(self) -> tuple[PatternRefused | None, bool]:
        """After ``[``: a problem in the class, and whether the class ended."""
        if self.pattern.startswith("^", self.at):
            self.at += 1
        first = True
        while True:
            start = self.at
            tok = self.token()
            if tok is None:
                return None, False
            if tok == "]" and not first:
                return None, True
            first = False
            if tok[0] == "\\":
                if len(tok) < 2:
                    return None, False
                problem = self.escape(start)
                if problem is not None:
                    return problem, False

    def group(self, start: int, verbose: bool) -> object:
        """After ``(``: what opened (a group, keeping, turning on or turning off verbose
        mode), or that nothing did (a comment, a named backreference, global flags), or a
        problem, or None where Python's parser refuses the pattern the same way on every
        version."""
        text = self.pattern
        if not text.startswith("?", self.at):
            return _GROUP
        self.at += 1
        kind = text[self.at : self.at + 1]
        self.at += 1
        if kind == "#" or text.startswith("P=", self.at - 1):
            return _NOT_A_GROUP if self.until(")") is not None else None
        if kind == "P":
            if not text.startswith("<", self.at):
                return None
            self.at += 1
            return _GROUP if self.until(">") is not None else None
        if kind == "(":
            name_at = self.at
            name = self.until(")")
            if not name:
                return None
            if not (name.isidentifier() or (name.isdecimal() and name.isascii())):
                return _invalid(text, f"bad character in group name {name!r}", name_at)
            return _GROUP
        if kind in (":", "=", "!", ">"):
            return _GROUP
        if kind == "<":
            follows = text[self.at : self.at + 1]
            self.at += 1
            return _GROUP if follows and follows in "=!" else None
        if kind == "t":
            return _invalid(text, "unknown extension ?t", start + 1)
        if kind and kind in _FLAGS + "-":
            self.at -= 1
            return self.flags()
        return None

    def flags(self) -> object:
        """Inline flags, from their first letter or ``-`` (as 3.13's parser reads them)."""
        text = self.pattern
        on: set[str] = set()
        off: set[str] = set()
        char = text[self.at : self.at + 1]
        if char != "-":
            while True:
                if char == "L" or (char in "au" and on & {"a", "u"} - {char}):
                    return None
                on.add(char)
                self.at += 1
                char = text[self.at : self.at + 1]
                if char == "t":
                    return _invalid(text, "unknown flag", self.at)
                if not char or char not in _FLAGS + ")-:":
                    return None
                if char in ")-:":
                    break
        if char == ")":
            self.at += 1
            return _GLOBAL_VERBOSE if "x" in on else _NOT_A_GROUP
        if char == "-":
            self.at += 1
            char = text[self.at : self.at + 1]
            while True:
                if char == "t":
                    return _invalid(text, "unknown flag", self.at)
                if not char or char not in _FLAGS or char in "aLu":
                    return None
                off.add(char)
                self.at += 1
                char = text[self.at : self.at + 1]
                if char == ":":
                    break
        if on & off:
            return None
        self.at += 1  # the `:`
        return _VERBOSE if "x" in on else _NOT_VERBOSE if "x" in off else _GROUP


# what :meth:`_Scan.group` found
_GROUP, _VERBOSE, _NOT_VERBOSE = object(), object(), object()
_NOT_A_GROUP, _GLOBAL_VERBOSE = object(), object()


# ── compiling and matching ───────────────────────────────────────────────────────────


def _parse(pattern: str) -> tuple[list[tuple[Any, Any]], int]:
    """Python's parse of ``pattern`` (its items and global flags), after :class:`_Scan`."""
    problem = _Scan(pattern).first()
    if problem is not None:
        raise problem
    try:
        return re_parse(pattern)
    except re.error as err:
        raise _invalid(pattern, err.msg, err.pos if err.pos is not None else 0) from None
    except OverflowError:  # a count over Python's own limit (MAXREPEAT)
        raise PatternRefused(
            f"a repeat count over {MAX_REPEAT}" + _where(pattern, "count") + ": " + _COUNT_HINT,
            *_locate(pattern, "count"),
        ) from None
    except (RecursionError, MemoryError):  # pragma: no cover - MAX_DEPTH keeps well below
        raise PatternRefused("the regular expression is nested too deeply") from None


def _where(pattern: str, kind: str) -> str:
    offset, length = _locate(pattern, kind)
    return f" (at offset {offset})" if length else ""


class Matcher:
    """A compiled pattern: :meth:`search` is ``re.search(pattern, text) is not None``."""

    def __init__(self, pattern: str):
        import re2

        items, flags = _parse(pattern)
        translation = _Translation(pattern)
        try:
            body = translation.sequence(items, flags, True)
            self.empty = _matches_empty(items)
        except RecursionError:
            raise PatternRefused("the regular expression is nested too deeply") from None
        self.pattern = pattern
        self.word_ascii = translation.word_kinds == {"ascii"}
        options = re2.Options()
        options.encoding = re2.Options.Encoding.LATIN1
        options.never_capture = True
        options.log_errors = False
        options.max_mem = _MAX_MEM
        # every match starts at a unit boundary: the units before it are skipped whole
        program = "\\A(?s:.....)*?(?:" + body + ")"
        try:
            self._regexp = re2.compile(program.encode("latin-1"), options)
        except re2.error as err:
            detail = (
                err.args[0].decode() if err.args and isinstance(err.args[0], bytes) else str(err)
            )
            if "repetition" in detail:
                raise PatternRefused(
                    f"nested repeats count more than {MAX_REPEAT} repetitions in all: linear-time "
                    "matching allows at most that many (the counts of nested repeats multiply)",
                    *_locate(pattern, "count"),
                ) from None
            raise PatternRefused(
                f"the regular expression is too large for linear-time matching ({detail})"
            ) from None

    def encode(self, text: str) -> bytes:
        """The text as units (five bytes per character)."""
        table = _UnitTable(self.word_ascii)
        table.update(_ascii_units(self.word_ascii))
        return text.translate(table).encode("latin-1")

    def search(self, text: str) -> bool:
        if not text:
            return self.empty
        return self._regexp.search(self.encode(text)) is not None


@functools.cache
def _ascii_units(word_ascii: bool) -> dict[int, str]:
    return {code: _unit(code, chr(code).isalnum() or code == 95) for code in range(128)}


class _UnitTable(dict[int, str]):
    """``str.translate`` table: each code point to its unit, made on first use."""

    def __init__(self, word_ascii: bool):
        super().__init__()
        self.word_ascii = word_ascii

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        if self.word_ascii:
            word = code < 128 and (ch.isalnum() or ch == "_")
        else:
            word = ch.isalnum() or ch == "_"
        unit = _unit(code, word)
        self[code] = unit
        return unit


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Matcher:
    """The matcher of ``pattern``; raises :class:`PatternRefused` (a ``ValueError``)."""
    return Matcher(pattern)


def refusal(pattern: str) -> PatternRefused | None:
    """Why ``pattern`` is refused, or None when flowc matches it (what compile and check
    report, and what run refuses)."""
    try:
        compile_pattern(pattern)
    except PatternRefused as err:
        return err
    return None
