"""Parse an edited document again without parsing what the edit did not touch.

A `.flow` file is a list of top-level statements. After an edit, the statements
before it and after it are the same text as before; only the statements the edit
touches are parsed again, with flowc's parser for valid files
(:func:`~flowc.dsl.descent.parse_valid`), told the line and offset their text starts at,
so that their spans are where they are in the whole file. The statements after the edit keep
their trees, moved down (or up) by the lines and characters the edit added: the edit
ends on an earlier line, so only their lines and offsets change, never their columns.

The result is the tree a full parse gives, spans included (tested against it on
random edits); when the touched statements do not parse on their own (a syntax error,
or an edit that joins two statements), the whole file is parsed, so errors are
exactly those of a full parse.
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
    old: Sequence[n.Comment],
    begin: int,
    middle: Sequence[int],
    cut: int,
    delta: int,
    source: SourceFile,
) -> Comments:
    """The edited file's comments, as offsets: the old ones that end before ``begin``, the
    ones parsed again (``middle``), and the old ones from ``cut`` on, moved by ``delta``."""
    if isinstance(old, Comments):
        starts = old.starts
        head = bisect.bisect_left(starts, begin)
        while head and old.end(head - 1) > begin:
            head -= 1
        before: Sequence[int] = starts[:head]
        after: Sequence[int] = starts[bisect.bisect_left(starts, cut) :]
    else:
        before = [c.span.start for c in old if c.span.end <= begin]
        after = [c.span.start for c in old if c.span.start >= cut]
    out = offsets(len(source.text))
    out.extend(before)
    out.extend(middle)
    out.extend(start + delta for start in after)
    return Comments(source, out)


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


def _shift(nodes: Sequence[Any], lines: int, chars: int, holders: _Holders | None = None) -> None:
    """Move every span in ``nodes`` (statements) by ``lines`` and ``chars`` (in place:
    these trees belong to the analysis being replaced).

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
    for statement in nodes:
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
                # Span(...) without its __init__: the fields set straight through their
                # slots (the same object; a third of the time, on tens of thousands)
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


@attrs.define
class Reparser:
    """The last text that parsed and its tree, for the next edit."""

    text: str | None = None
    flow: n.Flow | None = None
    #: statements taken over from the last tree by the last parse (for the benchmark)
    reused: int = 0
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
            self.text, self.flow = source.text, flow
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
        edit_end_old = len(old_text) - suffix  # the edit is old_text[prefix:edit_end_old]
        # keep statement i when the next one is wholly before the edit too (an edit right
        # after a statement may extend it: `priority 2` after a rule)
        keep = 0
        while keep + 1 < len(statements) and statements[keep + 1].span.end <= prefix:
            keep += 1
        # statements after the edit: they start on a later line than the edit's end
        edit_line = old_text.count("\n", 0, edit_end_old) + 1
        after = len(statements)
        while (
            after > keep
            and statements[after - 1].span.start >= edit_end_old
            and statements[after - 1].span.line > edit_line
        ):
            after -= 1
        if keep == 0 and after == len(statements):
            return None, ()  # the edit touches everything: a plain parse
        delta = len(new_text) - len(old_text)
        # from the first statement parsed again (from the top when that is the first one,
        # so that comments before it are read again too)
        begin = 0 if keep == 0 else statements[keep].span.start
        end = statements[after].span.start + delta if after < len(statements) else len(new_text)
        if end < begin:
            return None, ()
        # the text from the start of `begin`'s line (blanked before `begin`), parsed as
        # the part of the file it is
        line_begin = new_text.rfind("\n", 0, begin) + 1
        parsed = parse_valid(
            " " * (begin - line_begin) + new_text[begin:end],
            new_text.count("\n", 0, line_begin) + 1,
            line_begin,
        )
        if parsed is None:
            return None, ()  # parse the whole file: its errors are the ones to report
        middle, middle_comments = parsed
        line_delta = new_text.count("\n", prefix, len(new_text) - suffix) - old_text.count(
            "\n", prefix, edit_end_old
        )
        # where the kept tail starts in the old text (before its spans move)
        cut = statements[after].span.start if after < len(statements) else len(old_text) + 1
        tail = statements[after:]
        if line_delta or delta:
            _shift(tail, line_delta, delta, self.holders)
        comments = _merged_comments(old.comments, begin, middle_comments, cut, delta, source)
        self.reused = keep + len(tail)
        self._parsed = middle
        flow = n.Flow((*statements[:keep], *middle, *tail), comments, source.span(0, len(new_text)))
        return flow, ()
