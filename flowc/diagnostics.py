"""Diagnostic codes, findings, and the printers for every output format.

A user's mistake is a :class:`Diagnostic`, never an exception. Codes are registry
constants with a stable meaning (see ``docs/checks/CODE.md``). A bug in flowc is an
exception, reported as an internal error (:func:`internal_error_text`).
"""

from __future__ import annotations

import enum
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import attrs

from flowc.escaping import in_encoding, sarif_text, visible, workflow_data, workflow_property
from flowc.source import SourceFile, Span

T = TypeVar("T")


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@attrs.frozen
class Code:
    """A diagnostic code: ``E001`` / ``syntax-error`` / error."""

    id: str
    name: str
    severity: Severity
    summary: str


CODES: dict[str, Code] = {}


def _code(id: str, name: str, severity: Severity, summary: str) -> Code:
    code = Code(id, name, severity, summary)
    CODES[id] = code
    return code


E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

E001 = _code("E001", "syntax-error", E, "syntax error: where, what was found, what was expected")
E101 = _code("E101", "undeclared-speaker", E, "a name is used as a speaker but not declared")
E102 = _code("E102", "duplicate-declaration", E, "a speaker, condition or target is declared twice")
E103 = _code(
    "E103", "undeclared-custom", E, "a custom condition or target is used but not declared"
)
E104 = _code(
    "E104",
    "custom-arguments-mismatch",
    E,
    "a custom condition or target gets arguments that do not match its declaration",
)
E105 = _code("E105", "unknown-start", E, "`start` or `initiator` names no declared speaker")
E106 = _code("E106", "invalid-max-turns", E, "`max_turns` is not an integer >= 1")
E107 = _code("E107", "unknown-handoff-target", E, "a tool hands off to an undeclared speaker")
E108 = _code(
    "E108", "invalid-graph-shape", E, "a JSON graph does not have the `TransitionGraph` shape"
)
E109 = _code("E109", "repeated-statement", E, "a statement that may appear once appears twice")
E110 = _code("E110", "too-few-speakers", E, "a flow declares fewer than two speakers")
E111 = _code(
    "E111",
    "scenario-mismatch",
    E,
    "a scenario calls a tool or effect, or expects a close reason, that the flow does not have",
)
E112 = _code(
    "E112",
    "not-bare-ag2",
    E,
    "with `--target ag2`: a construct compiles to something a bare AG2 1.2.1 registry cannot load",
)
E113 = _code(
    "E113",
    "speaker-kind-mismatch",
    E,
    "a human declares a tool, or a model speaker declares the context keys a human writes",
)
E114 = _code(
    "E114",
    "unmatchable-pattern",
    E,
    "a `text_matches` pattern is not a regular expression flowc matches in linear time",
)
E115 = _code(
    "E115",
    "plugin-mismatch",
    E,
    "with plugins: a custom condition or target has no class, or its class cannot be built from a call's arguments",
)
E116 = _code(
    "E116",
    "property-violated",
    E,
    "a `property` of the flow is broken by some run (shown, shortest)",
)
E117 = _code(
    "E117",
    "property-mismatch",
    E,
    "a property names a tool, context key or end reason the flow does not have",
)
W201 = _code("W201", "unreachable-speaker", W, "a declared speaker can never be scheduled to speak")
W202 = _code("W202", "dead-default", W, "a written `otherwise` can never be reached")
W203 = _code(
    "W203", "dead-rule", W, "a rule can never fire: earlier rules take every state it could match"
)
W204 = _code(
    "W204",
    "priority-trap",
    W,
    "a rule is dead because its written priority sorts it after the rules that shadow it",
)
W205 = _code(
    "W205",
    "sticky-context-loop",
    W,
    "a context condition keeps routing into a cycle that nobody on it can leave",
)
W206 = _code(
    "W206", "non-termination", W, "a reachable cycle has no exit and there is no `max_turns`"
)
W207 = _code(
    "W207",
    "model-start-speaker",
    W,
    "the start speaker is a model agent whose model never runs for the kickoff",
)
W208 = _code(
    "W208", "undeclared-tool", W, "`when tool X` routes on a tool that no speaker declares"
)
W209 = _code("W209", "unset-context-key", W, "a condition reads a context key that nothing sets")
W210 = _code(
    "W210", "unreachable-terminate", W, "the flow writes a `terminate`, but none is reachable"
)
W212 = _code(
    "W212",
    "max-turns-too-small",
    W,
    "`max_turns` is smaller than the shortest run that reaches a `terminate`",
)
W213 = _code(
    "W213",
    "silent-after-work",
    W,
    "a speaker's only ways out are model-chosen and the fallback is the implicit default",
)
W214 = _code("W214", "empty-scenario", W, "a scenario has no turns and no expectations")
W215 = _code(
    "W215",
    "after-max-turns",
    W,
    "a speaker or rule is reachable only after `max_turns` has closed every run",
)
W216 = _code(
    "W216",
    "round-robin-order",
    W,
    "`round_robin` lists its speakers in an order other than the one it rotates in",
)
W217 = _code(
    "W217",
    "implied-max-turns",
    W,
    "the `max_turns` a `sequence` implies ends runs that the rules beside it continue",
)
W218 = _code(
    "W218",
    "ag2-nested-tool",
    W,
    "with `--target ag2`: a `tool` condition inside `and` / `not` / `or`, which AG2 1.2.1 never routes on",
)
W219 = _code(
    "W219",
    "ag2-routing-call-order",
    W,
    "with `--target ag2`: a speaker can route a reply in several ways, and AG2 1.2.1 may route on another of its calls",
)
W220 = _code(
    "W220",
    "ag2-inbox-limit",
    W,
    "with `--target ag2`: a run can pass 1,000 turns, where AG2 1.2.1's inbox limit stops it",
)
W221 = _code(
    "W221",
    "ag2-self-routing",
    W,
    "with `--target ag2`: a turn is routed back to the speaker who just spoke, where AG2 1.2.1 stalls",
)
W222 = _code(
    "W222",
    "ag2-context-write-order",
    W,
    "with `--target ag2`: two calls in one reply write a context key differently, and AG2 1.2.1 may apply them in either order",
)
I301 = _code(
    "I301",
    "state-bound-reached",
    INFO,
    "the state space was larger than the bound: findings are partial",
)
I302 = _code("I302", "human-initiator", INFO, "an `initiator` target resolves to a `human` speaker")
I303 = _code(
    "I303",
    "json-graph-assumptions",
    INFO,
    "a JSON graph was checked under the assumptions for graphs without declarations",
)
I304 = _code(
    "I304",
    "ag2-difference",
    INFO,
    "a run of this flow goes differently on AG2 1.2.1 (W218-W222 under `--target ag2`)",
)
I305 = _code(
    "I305",
    "property-unknown",
    INFO,
    "a `property` could not be decided: the analysis did not see every run",
)
I306 = _code(
    "I306",
    "property-holds",
    INFO,
    "a `property` holds on every run of the flow (with what that rests on)",
)
I307 = _code(
    "I307",
    "worst-case-turns",
    INFO,
    "the most turns a run takes before it ends, or a run only `max_turns` ends (when selected)",
)
#: codes reported only when asked for by their full code (``--select I307``, ``select`` in
#: ``[tool.flowc]``): a statement about every flow, not a problem in one, which would
#: otherwise be printed on every clean check
OPT_IN = frozenset({I307.id})
M001 = _code("M001", "migrate-unsupported", E, "a construct has no equivalent and was left out")
M002 = _code("M002", "migrate-lossy", W, "a construct was translated with a difference at run time")
M003 = _code("M003", "migrate-no-effect", INFO, "a setting that has no effect was dropped")
X001 = _code(
    "X001", "unused-ignore", W, "a `# flowc: ignore[...]` comment silences nothing or names no code"
)


@attrs.frozen
class RunPath:
    """A run the analysis found as the evidence of a finding, in plain values, for a
    diagram to draw (``flowc render --check`` marks the edges an E116's run takes).

    ``steps`` are the turns from the kickoff: ``(speaker, fired, tool)``, where ``fired``
    is what routed the turn: a rule's file index, ``-1`` the default, ``-2`` a tool's
    hand-off, ``-3`` a tool's finish. After the last turn, ``next`` speaks (a run that
    goes on, or the lasso's way back when ``loop_from`` is set), or the run ends with
    ``reason`` (``max_turns``: the cap ended it; ``None`` with no ``next``: a custom
    target ended it with a reason of its own)."""

    #: what the run is the evidence of: the property it breaks
    subject: str
    steps: tuple[tuple[str, int, str | None], ...]
    next: str | None
    reason: str | None
    #: a lasso: ``steps[loop_from:]`` repeat for ever
    loop_from: int | None = None


@attrs.frozen
class Diagnostic:
    """One finding: a code, where, what, and how to fix it."""

    code: Code
    message: str
    filename: str = "<input>"
    span: Span | None = None
    notes: tuple[str, ...] = ()
    help: str | None = None
    json_path: str | None = None
    #: False: the text report shows the place but never the source line (a file that
    #: may not be a flow at all, e.g. a link to a key: its text must not reach a CI log)
    quote_source: bool = True
    #: why the finding holds, as the analysis worked it out once (W203: why the rule never
    #: fires); the message ends with it, and the diagram (``render --check``) and the
    #: editor's hover show this same text
    explanation: str | None = None
    #: the run the finding is about, as data (E116: the run that breaks the property, also
    #: in its notes as text); left out of equality and of every report, which print the
    #: notes: outputs stay the same with or without it (two findings whose runs differ
    #: only where the notes shorten a long run compare equal)
    run: RunPath | None = attrs.field(default=None, eq=False, repr=False)
    #: the rules (compiled transition indices) the finding proves never fire, as data for
    #: the diagram (``render --check``); for a priority trap (W204) also the speakers whose
    #: turns an earlier rule takes from it; left out of equality and of every report (the
    #: language server's check leaves them out)
    dead_rules: tuple[int, ...] = attrs.field(default=(), eq=False, repr=False)
    trap_senders: tuple[str, ...] = attrs.field(default=(), eq=False, repr=False)

    def proving(self, dead_rules: tuple[int, ...], trap_senders: tuple[str, ...]) -> Diagnostic:
        """This finding carrying the rules it proves never fire: ``attrs.evolve`` with
        every field named (a check of 10,000 rules makes one per dead rule, and evolve
        is several times slower)."""
        return Diagnostic(
            self.code,
            self.message,
            self.filename,
            self.span,
            self.notes,
            self.help,
            self.json_path,
            self.quote_source,
            self.explanation,
            self.run,
            dead_rules,
            trap_senders,
        )

    @property
    def severity(self) -> Severity:
        return self.code.severity

    @property
    def is_error(self) -> bool:
        return self.code.severity is Severity.ERROR

    def sort_key(self) -> tuple[str, int, int, str]:
        line = self.span.line if self.span else 0
        column = self.span.column if self.span else 0
        return (self.filename, line, column, self.code.id)


class FlowError(Exception):
    """Raised by convenience APIs; carries every diagnostic that stopped the work."""

    def __init__(
        self, diagnostics: Sequence[Diagnostic], sources: dict[str, SourceFile] | None = None
    ):
        self.diagnostics = tuple(diagnostics)
        self.sources = sources or {}
        super().__init__(render_text(self.diagnostics, self.sources, color=False).rstrip())


def internal_error_text(err: BaseException) -> str:
    """What every command says of a bug in flowc (an exception nothing expected, never
    a finding about the input), on one line: the exception's type and message (its
    lines joined), and what to do.

    >>> internal_error_text(RuntimeError("no\\n  luck"))
    'internal error: RuntimeError: no luck; please report it with the command and the input'
    >>> internal_error_text(AssertionError())
    'internal error: AssertionError; please report it with the command and the input'
    """
    text = " ".join(part.strip() for part in str(err).splitlines() if part.strip())
    what = f"{type(err).__name__}: {text}" if text else type(err).__name__
    return f"internal error: {what}; please report it with the command and the input"


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diagnostics)


# ── printers ──────────────────────────────────────────────────────────────────

_COLORS = {
    Severity.ERROR: "\x1b[1;31m",
    Severity.WARNING: "\x1b[1;33m",
    Severity.INFO: "\x1b[1;36m",
}
_BOLD, _BLUE, _RESET = "\x1b[1m", "\x1b[1;34m", "\x1b[0m"


def _location(d: Diagnostic) -> str:
    if d.span is not None:
        return f"{shown(d.filename)}:{d.span.line}:{d.span.column}"
    if d.json_path is not None:
        return f"{shown(d.filename)}:{shown(d.json_path)}" if d.json_path else shown(d.filename)
    return shown(d.filename)


def shown(text: str) -> str:
    r"""``text`` as the text reports print it to a terminal: each of its lines
    :func:`~flowc.escaping.visible`, so that a name holding an escape sequence (ESC, a
    carriage return, a C1 control) is written as an escape, never acted on.

    >>> shown("speaker `a\x1b[2Jb` never speaks\nsecond line")
    'speaker `a\\x1b[2Jb` never speaks\nsecond line'
    """
    if text.isprintable():  # the common case: nothing to escape, not even a newline
        return text
    return "\n".join(visible(line) for line in text.split("\n"))


def render_concise(diagnostics: Iterable[Diagnostic]) -> str:
    """``path:line:col: CODE message``, one line each (control characters escaped)."""
    return "".join(
        f"{_location(d)}: {d.code.id} {visible(elide_quoted(d.message))}\n" for d in diagnostics
    )


#: the widest part of a source line the text report quotes; a longer line is cut to a
#: window around the finding (as rustc and ruff do), so a report stays proportional to
#: its input however long the lines are
EXCERPT_WIDTH = 100
#: how much of the line before the finding a cut window keeps
EXCERPT_LEAD = 30
_ELLIPSIS = "..."


def excerpt(source: SourceFile, span: Span) -> tuple[str, int, int]:
    """The quoted part of ``span``'s first line: ``(text, caret offset, caret width)``.

    A line longer than :data:`EXCERPT_WIDTH` is cut to a window of that width around
    the span's start, with ``...`` where text was left out; the underline stops at the
    window's edge. Only the window is copied out of the source.

    >>> src = SourceFile("f", "x" * 500 + " when from a then b" + "y" * 500)
    >>> text, at, width = excerpt(src, src.span(501, 505))
    >>> len(text) <= EXCERPT_WIDTH + 6, text[at : at + width]
    (True, 'when')
    """
    starts = source.line_starts
    line = span.line
    if line < 1 or line > len(starts):
        return "", 0, 1
    begin = starts[line - 1]
    stop = starts[line] - 1 if line < len(starts) else len(source.text)
    if stop > begin and source.text[stop - 1] == "\r":
        stop -= 1
    length = stop - begin
    col = min(max(span.column - 1, 0), length)
    if span.end_line == span.line:
        width = max(1, span.end_column - span.column)
    else:
        width = max(1, length - col + 1)  # to the end of the line, and its newline
    if length <= EXCERPT_WIDTH:
        return source.text[begin:stop].expandtabs(1), col, width
    lo = max(0, col - EXCERPT_LEAD)
    hi = min(length, lo + EXCERPT_WIDTH)
    lo = max(0, hi - EXCERPT_WIDTH)
    text = source.text[begin + lo : begin + hi].expandtabs(1)
    at = col - lo
    if lo > 0:
        text, at = _ELLIPSIS + text, at + len(_ELLIPSIS)
    width = max(1, min(width, hi - col))
    if hi < length:
        text += _ELLIPSIS
    return text, at, width


def _shown_excerpt(text: str, at: int, width: int, encoding: str | None) -> tuple[str, int, int]:
    """An excerpt as the output shows it: its control characters written as escapes
    (:func:`visible`), and what an output in ``encoding`` lacks as it writes it
    (:func:`in_encoding`); the caret moved with the text it marks."""
    if text.isprintable() and (encoding is None or text.isascii()):
        return text, at, width

    def show(piece: str) -> str:
        return in_encoding(visible(piece), encoding)

    before, marked = show(text[:at]), show(text[at : at + width])
    past_end = max(0, at + width - len(text))  # a span that takes in the line's end
    return before + marked + show(text[at + width :]), len(before), len(marked) + past_end


def display_width(text: str) -> int:
    """How many terminal columns ``text`` takes: a wide character (East Asian Width W or F:
    CJK, most emoji) two, a combining mark or an invisible format character (a zero-width
    joiner, a variation selector) none, anything else one; and an emoji sequence the
    columns of its first emoji, as terminals that draw it as one picture do: a symbol
    the emoji variation selector (U+FE0F) follows takes two (``❤️``), and an emoji joined
    to the emoji before it by a zero-width joiner (``👩‍💻``, woman and laptop), or a
    skin tone after an emoji, none. A joiner between letters (Devanagari's ``क्‍ष``, or
    ``a‍b``) joins no picture: each letter keeps its column. The carets under an excerpt
    are drawn in these columns; the reported columns stay counts of characters.

    >>> display_width("abc"), display_width("日本語"), display_width("🎉"), display_width("e\u0301")
    (3, 6, 2, 1)
    >>> display_width("\u2764\ufe0f"), display_width("\U0001f469\u200d\U0001f4bb")
    (2, 2)
    >>> display_width("a\ufe0f"), display_width("a\u200db"), display_width("\U0001f44d\U0001f3fd")
    (1, 2, 2)
    """
    if text.isascii():  # one column each (the common case: no loop)
        return len(text)
    width = 0
    last = ""  # the last character that took columns
    joined = False  # a zero-width joiner follows an emoji
    for ch in text:
        if ch < "\u0300":  # ASCII and Latin-1: one column each (the common case, no lookup)
            width, last, joined = width + 1, ch, False
            continue
        if ch == "\ufe0f":  # emoji presentation of the symbol before it
            if _is_emoji(last) and _columns(last) == 1:
                width += 1
            continue
        category = unicodedata.category(ch)
        if category in ("Mn", "Me", "Cf"):
            joined = joined or (ch == "\u200d" and _is_emoji(last))
            continue
        if (joined and _is_emoji(ch)) or ("\U0001f3fb" <= ch <= "\U0001f3ff" and _is_emoji(last)):
            joined = False  # a part of the emoji before it (or its skin tone)
            continue
        width, last, joined = width + _columns(ch), ch, False
    return width


def pad_to(text: str, width: int, *, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` terminal columns (:func:`display_width`),
    on its right, or on its left with ``right`` (as :meth:`str.ljust` and
    :meth:`str.rjust` pad to a number of characters).

    >>> pad_to("用户", 6) + "|", pad_to("ab", 4, right=True)
    ('用户  |', '  ab')
    """
    spaces = " " * (width - display_width(text))
    return spaces + text if right else text + spaces


def _columns(ch: str) -> int:
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _is_emoji(ch: str) -> bool:
    """A picture character an emoji sequence is made of (a wide symbol, or a symbol the
    variation selector may turn into one)."""
    return bool(ch) and unicodedata.category(ch) == "So"


def _underline(text: str, at: int, width: int) -> str:
    """The caret line under ``text`` for the characters ``text[at : at + width]``, in
    display columns (:func:`display_width`); a span past the end of the text (its newline,
    the end of the file) counts one column per character, and at least one caret is drawn.

    >>> _underline("x = '日本' then b", 4, 4)
    '    ^^^^^^'
    >>> _underline("日本 then", 7, 1)
    '         ^'
    """
    lead = display_width(text[:at])
    marked = display_width(text[at : at + width]) + max(0, at + width - len(text))
    return " " * lead + "^" * max(1, marked)


def render_text(
    diagnostics: Iterable[Diagnostic],
    sources: dict[str, SourceFile] | None = None,
    *,
    color: bool = False,
) -> str:
    """The full form: header, excerpt with a caret, notes and help."""
    return "".join(iter_text(diagnostics, sources, color=color))


def iter_text(
    diagnostics: Iterable[Diagnostic],
    sources: dict[str, SourceFile] | None = None,
    *,
    color: bool = False,
    encoding: str | None = None,
) -> Iterator[str]:
    """:func:`render_text` one finding at a time (a printer need not hold the whole report).
    ``encoding``: the output's, when it lacks characters (the excerpt is written as that
    output shows it, so the caret stays under what it marks)."""
    sources = sources or {}
    for d in diagnostics:
        out: list[str] = []
        sev = d.severity.value
        message = shown(elide_quoted(d.message))
        if color:
            head = f"{_COLORS[d.severity]}{sev}[{d.code.id}]{_RESET}{_BOLD}: {message}{_RESET}"
        else:
            head = f"{sev}[{d.code.id}]: {message}"
        out.append(head)
        source = sources.get(d.filename)
        gutter_width = len(str(d.span.end_line)) if d.span else 1
        pad = " " * gutter_width
        bar = f"{_BLUE}|{_RESET}" if color else "|"
        arrow = f"{_BLUE}-->{_RESET}" if color else "-->"
        out.append(f"{pad}{arrow} {_location(d)}")
        if d.span is not None and source is not None and d.quote_source:
            line_text, at, width = _shown_excerpt(*excerpt(source, d.span), encoding)
            out.append(f"{pad} {bar}")
            out.append(f"{d.span.line:>{gutter_width}} {bar} {line_text}")
            caret = _underline(line_text, at, width)
            if color:
                caret = f"{_COLORS[d.severity]}{caret}{_RESET}"
            out.append(f"{pad} {bar} {caret}")
        for note in d.notes:
            out.append(f"{pad} = note: {shown(elide_quoted(note))}")
        if d.help:
            out.append(f"{pad} = help: {shown(elide_quoted(d.help))}")
        out.append("\n")
        yield "\n".join(out)


#: how many items a finding lists before it says "and N more"
MAX_LISTED = 5
#: the longest quoted piece of a flow (a rule, a condition) a message holds
MAX_QUOTED = 120


def counted(n: int, noun: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """``n`` and its noun, in the singular for exactly one: every count a message or a
    summary prints goes through here (never "1 turns"). ``plural`` when adding ``s`` is
    wrong; ``grouped`` writes thousands with commas.

    >>> counted(1, "turn"), counted(0, "file"), counted(2, "run"), counted(1, "more loop")
    ('1 turn', '0 files', '2 runs', '1 more loop')
    >>> counted(2, "info", "info"), counted(12000, "turn", grouped=True)
    ('2 info', '12,000 turns')
    """
    word = noun if n == 1 else plural if plural is not None else noun + "s"
    return f"{n:,} {word}" if grouped else f"{n} {word}"


def listing(
    items: Sequence[str], limit: int = MAX_LISTED, more: str = "more", one: str | None = None
) -> list[str]:
    """The first ``limit`` items, then ``and N more`` for the rest (as one extra item);
    ``one``: the words after ``and 1`` when exactly one is left (``more`` is plural).

    >>> listing(["a", "b", "c"], 2)
    ['a', 'b', 'and 1 more']
    >>> listing(["a", "b", "c"], 2, "more places", "more place")
    ['a', 'b', 'and 1 more place']
    """
    if len(items) <= limit:
        return list(items)
    return [*items[:limit], _more(len(items) - limit, more, one)]


def _more(left: int, more: str, one: str | None) -> str:
    return f"and {left:,} {one if left == 1 and one is not None else more}"


def listing_of(
    items: Sequence[T],
    show: Callable[[T], str],
    limit: int = MAX_LISTED,
    more: str = "more",
    one: str | None = None,
) -> list[str]:
    """:func:`listing` of ``show(item)`` for each item, calling ``show`` only for the items
    listed (a long list is mostly counted, not written).

    >>> listing_of([1, 2, 3], lambda i: f"rule {i}", 2)
    ['rule 1', 'rule 2', 'and 1 more']
    """
    shown = [show(x) for x in items[:limit]]
    if len(items) <= limit:
        return shown
    return [*shown, _more(len(items) - limit, more, one)]


def elide(text: str, limit: int = MAX_QUOTED) -> str:
    """``text``, or its start and end around a ``...`` when longer than ``limit``.

    >>> elide("when from a, b, c, d, e then f", 20)
    'when from a,...hen f'
    """
    if len(text) <= limit:
        return text
    keep = limit - len(_ELLIPSIS)
    head = keep - keep // 3
    return text[:head] + _ELLIPSIS + text[len(text) - (keep - head) :]


#: what opens or closes a piece a finding's text quotes: a JSON string (a reason, a value:
#: skipped whole, so that a backquote inside it opens or closes nothing), or a run of
#: backquotes (a name that needs quoting has backquotes of its own, inside those of a
#: quoted statement: ```when from `a b` then c```)
_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|`+')
#: a bare name longer than a quote may be, outside the quoted pieces
_LONG_NAME = re.compile(rf"[\w-]{{{MAX_QUOTED + 1},}}")


def elide_quoted(text: str) -> str:
    """A finding's message, note or help as the reports print it: each name, statement or
    value it quotes that is longer than :data:`MAX_QUOTED` cut short around a ``...``
    (:func:`elide`), so that a report stays proportional to its input however long the
    names are. A text that quotes nothing longer comes back unchanged.

    >>> elide_quoted("the start speaker `" + "a" * 200 + "` is a model agent") == (
    ...     "the start speaker `" + "a" * 78 + "..." + "a" * 39 + "` is a model agent"
    ... )
    True
    >>> elide_quoted("rotates: " + " → ".join(["b" * 130, "c"]))[:24]
    'rotates: bbbbbbbbbbbbbbb'
    >>> len(elide_quoted("rotates: " + " → ".join(["b" * 130, "c"])))
    133
    >>> len(elide_quoted("e.g. `when from user then `" + " ".join(["ab"] * 60) + "``, or not"))
    135
    """
    if len(text) <= MAX_QUOTED or (
        _quoted_span(text) <= MAX_QUOTED and not _LONG_NAME.search(text)
    ):
        return text  # (no quoted piece can be longer: every editor's edit asks, per finding)
    out: list[str] = []
    at = 0
    for start, end in _pieces(text):
        out += [_LONG_NAME.sub(_elided_piece, text[at:start]), _elided(text[start:end])]
        at = end
    out.append(_LONG_NAME.sub(_elided_piece, text[at:]))
    return "".join(out)


def _quoted_span(text: str) -> int:
    """How many characters lie between ``text``'s first and last quote (backquote or double
    quote): no piece it quotes holds more."""
    firsts = [i for i in (text.find("`"), text.find('"')) if i >= 0]
    if not firsts:
        return 0
    return max(text.rfind("`"), text.rfind('"')) - min(firsts) - 1


def _pieces(text: str) -> Iterator[tuple[int, int]]:
    """Where the pieces ``text`` quotes start and end: its outermost backquoted pieces, and
    the JSON strings outside them. A JSON string inside a backquoted piece (a value its
    statement compares) is skipped whole. A run of backquotes after a space, or outside
    any piece, opens as many quotes as it has backquotes; one after other text and before
    a space or punctuation closes them. A piece still open at the end is none (nothing in
    it is cut but a long bare name)."""
    depth = start = 0
    for token in _TOKENS.finditer(text):
        i, j = token.span()
        if text[i] == '"':
            if not depth:
                yield i, j
            continue
        before = text[i - 1] if i else " "
        after = text[j] if j < len(text) else " "
        if depth and not before.isspace() and not (after.isalnum() or after == "_"):
            depth = max(0, depth - (j - i))
            if not depth:
                yield start, j
        else:
            start = i if not depth else start
            depth += j - i


def _elided_piece(match: re.Match[str]) -> str:
    return _elided(match.group())


def _elided(piece: str) -> str:
    """A quoted piece with what is inside its quotes cut to :data:`MAX_QUOTED` (as a quote
    is written: ``f"`{elide(text)}`"``); a bare name cut whole."""
    if piece[0] not in '`"':
        return elide(piece)
    inside = piece[1:-1]
    return piece if len(inside) <= MAX_QUOTED else piece[0] + elide(inside) + piece[-1]


def diagnostic_to_json(d: Diagnostic) -> dict[str, Any]:
    """The JSON object of one finding, with the fields the JSON output documents."""
    obj: dict[str, Any] = {
        "code": d.code.id,
        "name": d.code.name,
        "severity": d.severity.value,
        "message": elide_quoted(d.message),
        "filename": d.filename,
        "notes": [elide_quoted(note) for note in d.notes],
        "fix": elide_quoted(d.help) if d.help is not None else None,
    }
    if d.json_path is not None and d.span is None:
        obj["json_path"] = d.json_path
    else:
        span = d.span
        obj["location"] = {"row": span.line, "column": span.column} if span else None
        obj["end_location"] = {"row": span.end_line, "column": span.end_column} if span else None
    return obj


def iter_json(diagnostics: Iterable[Diagnostic]) -> Iterator[str]:
    """The JSON report in pieces, one finding at a time (never held whole): the same text
    as ``json.dumps(items, indent=2, sort_keys=True, ensure_ascii=False)`` and a newline."""
    first = True
    for d in sorted(diagnostics, key=Diagnostic.sort_key):
        item = json.dumps(diagnostic_to_json(d), indent=2, sort_keys=True, ensure_ascii=False)
        yield ("[\n  " if first else ",\n  ") + item.replace("\n", "\n  ")
        first = False
    yield "[]\n" if first else "\n]\n"


def render_json(diagnostics: Iterable[Diagnostic]) -> str:
    return "".join(iter_json(diagnostics))


def render_github(diagnostics: Iterable[Diagnostic]) -> str:
    """GitHub Actions workflow annotations: one workflow command a finding, its message and
    properties escaped as workflow commands need (:mod:`flowc.escaping`), and each control
    or invisible character written as an escape (:func:`visible`), as in text output."""
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
    lines = []
    for d in diagnostics:
        # (control characters escaped too: a log viewer acts on them, ``\x1b[2J`` clears it)
        props = [f"file={workflow_property(visible(d.filename))}"]
        if d.span is not None:
            props += [
                f"line={d.span.line}",
                f"col={d.span.column}",
                f"endLine={d.span.end_line}",
                f"endColumn={d.span.end_column}",
            ]
        props.append(f"title={workflow_property(f'{d.code.id} {d.code.name}')}")
        message = visible(elide_quoted(d.message))
        if d.help:
            message += f"\nhelp: {visible(elide_quoted(d.help))}"
        lines.append(f"::{level[d.severity]} {','.join(props)}::{workflow_data(message)}\n")
    return "".join(lines)


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render_sarif(diagnostics: Iterable[Diagnostic], *, tool_version: str = "0.1.0") -> str:
    """A SARIF 2.1.0 log with one run; rules are the codes that occur. Each message is a
    plain-text message whose ``[`` and ``]`` are escaped: a ``[x](https://...)`` in a
    name is no embedded link (:func:`flowc.escaping.sarif_text`)."""
    diags = sorted(diagnostics, key=Diagnostic.sort_key)
    used = sorted({d.code.id for d in diags})
    rule_index = {code: i for i, code in enumerate(used)}
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
    rules = [
        {
            "id": code,
            "name": CODES[code].name,
            "shortDescription": {"text": sarif_text(CODES[code].summary)},
            "helpUri": f"https://flowc.dev/checks/{code}",
            "defaultConfiguration": {"level": level[CODES[code].severity]},
        }
        for code in used
    ]
    results = []
    for d in diags:
        location: dict[str, Any] = {"artifactLocation": {"uri": d.filename}}
        if d.span is not None:
            location["region"] = {
                "startLine": d.span.line,
                "startColumn": d.span.column,
                "endLine": d.span.end_line,
                "endColumn": max(d.span.end_column, d.span.column + 1)
                if d.span.end_line == d.span.line
                else d.span.end_column,
            }
        text = elide_quoted(d.message)
        if d.notes:
            text += "\n" + "\n".join(f"note: {elide_quoted(n)}" for n in d.notes)
        if d.help:
            text += f"\nhelp: {elide_quoted(d.help)}"
        result: dict[str, Any] = {
            "ruleId": d.code.id,
            "ruleIndex": rule_index[d.code.id],
            "level": level[d.severity],
            "message": {"text": sarif_text(text)},
            "locations": [{"physicalLocation": location}],
        }
        if d.json_path is not None:
            result["locations"][0]["logicalLocations"] = [
                {"fullyQualifiedName": d.json_path, "kind": "member"}
            ]
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "flowc",
                        "version": tool_version,
                        "informationUri": "https://flowc.dev",
                        "rules": rules,
                    }
                },
                "results": results,
                # (SARIF 2.1.0 requires it of a run with results) the columns count
                # characters, code points, as every format counts them: an editor that
                # counts UTF-16 units (two for an emoji) recomputes them
                "columnKind": "unicodeCodePoints",
            }
        ],
    }
    return json.dumps(log, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def decode_source(name: str, data: bytes) -> tuple[SourceFile | None, tuple[Diagnostic, ...]]:
    r"""Bytes as a UTF-8 :class:`SourceFile` (a leading BOM dropped), or an E001 at the first
    byte that is not UTF-8: its line and column, and in the message a short escaped excerpt
    of its line (:func:`flowc.inputs.bad_utf8`). The file's text is never quoted as such:
    it may be anything (a binary, a huge line, escape sequences).

    >>> src, diags = decode_source("x.flow", b"speaker a\nspeaker \xff\x1b[2J")
    >>> print(diags[0].span.line, diags[0].span.column, diags[0].message)
    2 9 the file is not valid UTF-8 (byte 0xff, in "speaker \xff\x1b[2J")
    """
    from flowc.inputs import DataError, decode_utf8

    try:
        text = decode_utf8(data)
    except DataError as err:
        line, column, at = err.line or 1, err.column or 1, err.offset or 0
        span = Span(line, column, line, column + 1, at, at + 1)
        return None, (
            Diagnostic(
                E001, err.message, name, span, quote_source=False, help="save the file as UTF-8"
            ),
        )
    return SourceFile(name, text), ()
