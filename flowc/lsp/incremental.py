"""Parse an edited document again without parsing what the edit did not touch.

A `.flow` file is a list of top-level statements. After an edit, the statements
before it and after it are the same text as before; only the statements the edit
touches are parsed again, with flowc's parser for valid files
(:func:`~flowc.dsl.descent.parse_valid`), told the line and offset their text starts at,
so that their spans are where they are in the whole file. The statements after the edit keep
their trees, moved down (or up) by the lines and characters the edit added: the edit
ends on an earlier line, so only their lines and offsets change, never their columns.

A new version may differ from the last in several places (an editor that sends the whole
text after a change in two places, a replace-all, a formatter, a checkout): when each
place replaces lines by as many lines, each is a region of its own, and the statements
between them are kept too (moved by the characters the places before them added), not
parsed again with everything from the first place to the last.

The result is the tree a full parse gives, spans included (tested against it on
random edits); when the touched statements do not parse on their own (a syntax error,
or an edit that joins two statements), the whole file is parsed, so errors are
exactly those of a full parse (a version that differs in several places is first tried
as one region, from the first place to the last).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import attrs

from flowc.diagnostics import Diagnostic
from flowc.dsl import nodes as n
from flowc.dsl.comments import Comments
from flowc.dsl.descent import parse_valid
from flowc.dsl.parser import parse_source
from flowc.identity import ByIdentity
from flowc.source import SourceFile, Span, offsets


def _merged_comments(
    old: Sequence[n.Comment], regions: Sequence[_Parsed], source: SourceFile
) -> Comments:
    """The edited file's comments, as offsets: around the regions parsed again (each with
    its own comments), the old ones that lie between them, moved by the characters the
    regions before them added."""
    out = offsets(len(source.text))
    frm, shift = 0, 0  # old comments from `frm` on are the edited file's, moved by `shift`
    for r in regions:
        out.extend(start + shift for start in _old_comments(old, frm, r.begin))
        out.extend(r.comments)
        frm, shift = r.cut, r.shift
    out.extend(start + shift for start in _old_comments(old, frm, None))
    return Comments(source, out)


def _old_comments(old: Sequence[n.Comment], frm: int, to: int | None) -> Sequence[int]:
    """The offsets of the old comments that start at ``frm`` or later and end by ``to``
    (``None``: the end)."""
    if isinstance(old, Comments):
        starts = old.starts
        lo = bisect.bisect_left(starts, frm)
        if to is None:
            return starts[lo:]
        # (``to`` is where a statement starts: no comment holds it, so every comment that
        # starts before it ends before it)
        return starts[lo : bisect.bisect_left(starts, to, lo)]
    return [c.span.start for c in old if c.span.start >= frm and (to is None or c.span.end <= to)]


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    lo, hi = 0, limit
    # binary search on slices: C-speed comparisons of long common parts
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


#: per class met in a tree: the names of its fields (an attrs class: slots, no
#: ``__dict__``), or None for a leaf value (a string, a number, a JSON literal)
_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _fields_of(cls: type) -> tuple[str, ...] | None:
    """``cls``'s entry in :data:`_FIELDS`, worked out the first time it is met."""
    names = _FIELDS[cls] = tuple(f.name for f in attrs.fields(cls)) if attrs.has(cls) else None
    return names


def _holders(node: Any) -> list[tuple[Any, tuple[str, ...]]]:
    """Every node under ``node`` (itself included) that holds a span, once each, with the
    names of its span fields: what :func:`_shift` moves. A value's class is looked up once
    (:data:`_FIELDS`), so a leaf costs a dictionary look-up, not an ``attrs.has``."""
    fields = _FIELDS
    span = Span
    seen: set[int] = set()
    add = seen.add
    out: list[tuple[Any, tuple[str, ...]]] = []
    stack = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        node = pop()
        cls = type(node)
        if cls is tuple or cls is list:
            extend(node)
            continue
        names = fields[cls] if cls in fields else _fields_of(cls)
        if names is None or id(node) in seen:
            continue
        add(id(node))
        spans: list[str] = []
        for name in names:
            value = getattr(node, name)
            kind = type(value)
            if kind is span:
                spans.append(name)
            elif kind is tuple or (kind is not list and fields.get(kind, ()) is not None):
                push(value)  # a node, or a class met for the first time: looked at when popped
        if spans:
            out.append((node, tuple(spans)))
    return out


#: per statement of the last tree, the nodes under it that hold spans (:func:`_holders`),
#: kept from one edit to the next: the statements after an edit are the same objects,
#: moved (:func:`_shift`), so their lists stay true and a large file's tail is not
#: walked again on every edit
_Holders = ByIdentity[Any, list[tuple[Any, tuple[str, ...]]]]


def _shift(
    segments: Sequence[tuple[Sequence[Any], int, int]], holders: _Holders | None = None
) -> None:
    """Move every span in each segment's statements by its lines and characters (in
    place: these trees belong to the analysis being replaced).

    It moves the whole tail of a large file after an edit that changed its length (on a
    10,000-rule file, tens of thousands of spans): the nodes that hold spans are listed
    once per statement (``holders``, kept between edits), and a node shared by two
    statements is moved once."""
    holders = holders if holders is not None else ByIdentity()
    new = object.__new__
    span = Span
    set_line, set_column, set_end_line, set_end_column, set_start, set_end = _SPAN_SETTERS
    setattr_ = object.__setattr__
    seen: set[int] = set()
    add = seen.add
    for statements, lines, chars in segments:
        for statement in statements:
            held = holders.get(statement)
            if held is None:
                held = _holders(statement)
                holders.put(statement, held)
            for node, names in held:
                if id(node) in seen:
                    continue
                add(id(node))
                for name in names:
                    value = getattr(node, name)
                    # Span(...) without its __init__: the fields set straight through
                    # their slots (the same object; a third of the time, on tens of
                    # thousands)
                    moved = new(span)
                    set_line(moved, value.line + lines)
                    set_column(moved, value.column)
                    set_end_line(moved, value.end_line + lines)
                    set_end_column(moved, value.end_column)
                    set_start(moved, value.start + chars)
                    set_end(moved, value.end + chars)
                    setattr_(node, name, moved)


#: the slots' setters of :class:`Span`'s fields, in its order (checked against the class)
_SPAN_SETTERS = tuple(Span.__dict__[f.name].__set__ for f in attrs.fields(Span))
assert tuple(f.name for f in attrs.fields(Span)) == (
    "line",
    "column",
    "end_line",
    "end_column",
    "start",
    "end",
)


#: the most places an edit may be told apart in (:func:`_places`): past that, it is one
#: region from the first to the last
_MOST_PLACES = 16


def _places(old: str, new: str, prefix: int, suffix: int) -> list[_Place] | None:
    """The places ``old`` and ``new`` differ in (each as where it starts and ends in
    ``old``, the characters it adds and no lines), when there are several (at most
    :data:`_MOST_PLACES`) and each replaces lines by as many lines, so that the texts
    have their lines at the same numbers; otherwise None. ``prefix`` and ``suffix``: the
    lengths the texts have in common at either end."""
    start = old.rfind("\n", 0, prefix) + 1  # the first line that differs, in both
    stop_old = old.find("\n", len(old) - suffix)
    stop_new = new.find("\n", len(new) - suffix)
    stop_old = len(old) if stop_old < 0 else stop_old
    stop_new = len(new) if stop_new < 0 else stop_new
    if old.count("\n", start, stop_old) != new.count("\n", start, stop_new):
        return None
    old_lines = old[start:stop_old].split("\n")
    new_lines = new[start:stop_new].split("\n")
    places: list[_Place] = []
    at = start  # where old line i starts
    run: list[int] | None = None  # [start, end, added] of the place being read
    for a, b in zip(old_lines, new_lines, strict=True):
        if a != b:
            if run is None:
                run = [at, at + len(a), len(b) - len(a)]
            else:
                run[1], run[2] = at + len(a), run[2] + len(b) - len(a)
        elif run is not None:
            places.append((run[0], run[1], run[2], 0))
            run = None
            if len(places) >= _MOST_PLACES:
                return None
        at += len(a) + 1
    if run is not None:
        places.append((run[0], run[1], run[2], 0))
    return places if len(places) > 1 else None


#: a place an edit changed: where it starts and ends in the old text, the characters
#: and the lines it adds
_Place = tuple[int, int, int, int]


@attrs.frozen
class _Region:
    """Statements parsed again: the old tree's from ``first`` up to ``after`` (the first
    one kept after them), with the characters and lines the edit added within them."""

    first: int
    after: int
    chars: int
    lines: int


@attrs.frozen
class _Parsed:
    """A region parsed again: where it starts in the old text (``begin``), where the
    statements kept after it start there (``cut``), the characters and lines those move
    by (what this region and those before it added: ``shift``, ``lines``), and what it
    parsed to."""

    begin: int
    cut: int
    shift: int
    lines: int
    statements: list[n.Statement]
    comments: Sequence[int]


def _regions(
    statements: Sequence[n.Statement], old_text: str, places: Sequence[_Place]
) -> list[_Region] | None:
    """The statements to parse again for each place (in order), two regions that meet
    made one; None when they are every statement."""
    out: list[_Region] = []
    for start, end, chars, lines in places:
        # keep statement i when the next one is wholly before the edit too (an edit right
        # after a statement may extend it: `priority 2` after a rule)
        before = bisect.bisect_right(statements, start, key=lambda st: st.span.end)
        first = max(before - 1, 0)
        # statements after the edit: they start on a later line than the edit's end
        line = old_text.count("\n", 0, end) + 1
        after = bisect.bisect_left(
            statements,
            True,
            lo=first,
            key=lambda st: st.span.start >= end and st.span.line > line,
        )
        if out and first <= out[-1].after:
            last = out.pop()
            first = last.first
            chars, lines = last.chars + chars, last.lines + lines
            after = max(after, last.after)
        out.append(_Region(first, after, chars, lines))
    if out[0].first == 0 and out[-1].after == len(statements) and len(out) == 1:
        return None
    return out


@attrs.define
class Reparser:
    """The last text that parsed and its tree, for the next edit."""

    text: str | None = None
    flow: n.Flow | None = None
    #: statements taken over from the last tree by the last parse (for the benchmark)
    reused: int = 0
    #: how many times statements of a tree were moved in place (:func:`_shift`): a tree
    #: an analysis kept is in its text's places only while this has not changed since
    moved: int = 0
    #: the nodes that hold spans under each statement of ``flow`` (for :func:`_shift`)
    holders: _Holders = attrs.field(factory=_Holders, repr=False)
    #: the statements the last incremental parse parsed again
    _parsed: Sequence[n.Statement] = attrs.field(default=(), repr=False)

    def parse(self, source: SourceFile) -> tuple[n.Flow, tuple[Diagnostic, ...]]:
        """``parse_source(source)``, reusing the last tree where the text is unchanged."""
        self._parsed = ()
        flow, errors = self._incremental(source)
        fresh: Sequence[n.Statement] = ()
        if flow is None:
            self.reused = 0
            flow, errors = parse_source(source)
            fresh = flow.statements
        if not errors:
            # (the tree first: a request that reads `text` and then `flow` from another
            # thread, and finds `text` is its document's, has that text's tree)
            self.flow = flow
            self.text = source.text
            self.holders.keep_only(flow.statements)
            # the nodes that hold spans, listed now for the statements just parsed: the
            # edits to come move them (an edit near the top of a large file moves nearly
            # all), and should not pay for listing them. A full parse pays instead (about
            # 25 ms per 1,000 rules): the first, when a document opens, and one an edit
            # falls back to (an edit that touches every statement, already a full parse)
            for st in fresh or self._parsed:
                self.holders.put(st, _holders(st))
        return flow, errors

    def _incremental(self, source: SourceFile) -> tuple[n.Flow | None, tuple[Diagnostic, ...]]:
        old_text, old = self.text, self.flow
        new_text = source.text
        if old_text is None or old is None or not old.statements:
            return None, ()
        statements = old.statements
        if old_text == new_text:
            self.reused = len(statements)
            return old, ()
        prefix = _common_prefix(old_text, new_text)
        suffix = _common_suffix(old_text, new_text, min(len(old_text), len(new_text)) - prefix)
        places = _places(old_text, new_text, prefix, suffix)
        if places is not None:
            regions = _regions(statements, old_text, places)
            if regions is not None and len(regions) > 1:
                flow = self._reparse(old, old_text, source, regions)
                if flow is not None:
                    return flow, ()
        # one region, from the first character the texts differ at to the last
        edit_end_old = len(old_text) - suffix  # the edit is old_text[prefix:edit_end_old]
        lines = new_text.count("\n", prefix, len(new_text) - suffix) - old_text.count(
            "\n", prefix, edit_end_old
        )
        chars = len(new_text) - len(old_text)
        one = _regions(statements, old_text, [(prefix, edit_end_old, chars, lines)])
        if one is None:
            return None, ()  # the edit touches everything: a plain parse
        return self._reparse(old, old_text, source, one), ()

    def _reparse(
        self, old: n.Flow, old_text: str, source: SourceFile, regions: Sequence[_Region]
    ) -> n.Flow | None:
        """The tree of ``source``: the old statements outside ``regions`` kept (moved by
        what the regions before them added), each region parsed again on its own; None
        when one does not parse on its own (the caller then tries one region from the
        first place to the last, then the whole file, whose errors are the ones to
        report). Nothing is moved before every region has parsed."""
        statements = old.statements
        new_text = source.text
        done: list[_Parsed] = []
        shift = lines = 0  # what the regions before this one added
        for r in regions:
            # from the first statement parsed again (from the top when that is the first
            # one, so that comments before it are read again too), in the old text
            begin = 0 if r.first == 0 else statements[r.first].span.start
            # where the statements kept after it start in the old text (before they move)
            after = r.after < len(statements)
            cut = statements[r.after].span.start if after else len(old_text) + 1
            start = begin + shift
            shift, lines = shift + r.chars, lines + r.lines
            end = cut + shift if after else len(new_text)
            if end < start:
                return None
            # the text from the start of `start`'s line (blanked before it), parsed as
            # the part of the file it is
            line_begin = new_text.rfind("\n", 0, start) + 1
            parsed = parse_valid(
                " " * (start - line_begin) + new_text[start:end],
                new_text.count("\n", 0, line_begin) + 1,
                line_begin,
            )
            if parsed is None:
                return None
            done.append(_Parsed(begin, cut, shift, lines, *parsed))
        kept: list[n.Statement] = list(statements[: regions[0].first])
        moves: list[tuple[Sequence[n.Statement], int, int]] = []
        for i, (r, p) in enumerate(zip(regions, done, strict=True)):
            kept.extend(p.statements)
            tail = statements[r.after : regions[i + 1].first if i + 1 < len(regions) else None]
            kept.extend(tail)
            if p.shift or p.lines:
                moves.append((tail, p.lines, p.shift))
        comments = _merged_comments(old.comments, done, source)
        if moves:
            self.moved += 1  # before: a request meanwhile no longer trusts the old places
        _shift(moves, self.holders)
        self.reused = len(statements) - sum(r.after - r.first for r in regions)
        self._parsed = [st for p in done for st in p.statements]
        return n.Flow(tuple(kept), comments, source.span(0, len(new_text)))
