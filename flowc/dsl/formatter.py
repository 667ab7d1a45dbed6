"""`flowc fmt`: the one canonical layout of a `.flow` file, keeping every comment.

``format_source`` is a pure function of the text. Like black, it checks its own
output: the result must parse to the same AST with the same comments (so it
compiles to the same graph), and formatting it again must change nothing.

>>> print(format_source('speaker a\\nspeaker   b {tool t sets x=1}\\nwhen from a then b # go'), end="")
speaker a
speaker b {
  tool t sets x = 1
}
when from a then b  # go
"""

from __future__ import annotations

import bisect
import io
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from flowc.diagnostics import FlowError, display_width, pad_to
from flowc.dsl import nodes as n
from flowc.dsl.comments import Comments
from flowc.dsl.ignores import IGNORE
from flowc.dsl.names import format_name as format_name
from flowc.dsl.names import format_value as format_value
from flowc.dsl.parser import parse_source
from flowc.source import SourceFile, Span

INDENT = "  "


class FormatterBug(Exception):
    """The formatter's own output failed its checks: a bug in flowc, not in the input."""


def _name(name: n.Name) -> str:
    return format_name(name.value)


def _str(s: n.Str) -> str:
    return format_value(s.value)


# ── expressions ──────────────────────────────────────────────────────────────

_PREC = {n.OrCond: 1, n.AndCond: 2, n.NotCond: 3, n.PreviousCond: 3}


def format_condition(cond: n.Cond, parent: int = 0) -> str:
    """A condition with the fewest parentheses that keep its structure."""
    prec = _PREC.get(type(cond), 4)
    if isinstance(cond, n.OrCond):
        text = " or ".join(format_condition(c, 1) for c in cond.items)
    elif isinstance(cond, n.AndCond):
        text = " and ".join(format_condition(c, 2) for c in cond.items)
    elif isinstance(cond, n.NotCond | n.PreviousCond):
        # `not` binds its operand tighter than and/or (a nested not needs no parens either);
        # the operand is formatted once, so `not not ... x` stays linear in its depth.
        # `previous` (in a property) binds as `not` does
        word = "not " if isinstance(cond, n.NotCond) else "previous "
        text = word + format_condition(cond.item, 2)
    elif isinstance(cond, n.AlwaysCond):
        text = "always"
    elif isinstance(cond, n.FromCond):
        text = "from " + ", ".join(_name(s) for s in cond.speakers)
    elif isinstance(cond, n.ToolCond):
        text = "tool " + _name(cond.tool)
    elif isinstance(cond, n.ContextCond):
        text = f"context.{_name(cond.key)} {cond.op} {format_value(cond.value.value)}"
    elif isinstance(cond, n.EndsCond):
        text = "ends" + (f" {_str(cond.reason)}" if cond.reason is not None else "")
    elif isinstance(cond, n.TurnCond):
        text = f"turn {cond.op} {cond.number}"
    else:
        text = _call(cond.name, cond.args)
    # same-operator nesting keeps its parentheses so the tree round-trips exactly
    if prec < parent or (prec == parent and prec in (1, 2)):
        return f"({text})"
    return text


def _call(name: n.Name, args: Sequence[n.Arg]) -> str:
    inner = ", ".join(f"{_name(a.name)} = {format_value(a.value.value)}" for a in args)
    return f"{_name(name)}({inner})"


def format_target(target: n.Target) -> str:
    if isinstance(target, n.SpeakerTarget):
        return _name(target.speaker)
    if isinstance(target, n.NextTarget):
        return "next"
    if isinstance(target, n.StayTarget):
        return "stay"
    if isinstance(target, n.InitiatorTarget):
        return "initiator"
    if isinstance(target, n.TerminateTarget):
        return "terminate" + (f" {_str(target.reason)}" if target.reason else "")
    return _call(target.name, target.args)


def _effect(effect: n.Effect) -> str:
    if isinstance(effect, n.SetEffect):
        return f"sets {_name(effect.key)} = {format_value(effect.value.value)}"
    if isinstance(effect, n.ClearEffect):
        return f"clears {_name(effect.key)}"
    if isinstance(effect, n.HandoffEffect):
        return f"hands off to {_name(effect.target)}"
    return "finishes" + (f" {_str(effect.reason)}" if effect.reason else "")


def _single_handoff(alt: tuple[n.Effect, ...]) -> bool:
    return len(alt) == 1 and isinstance(alt[0], n.HandoffEffect)


def format_tool(tool: n.ToolDecl) -> str:
    parts: list[str] = []
    for i, alt in enumerate(tool.alternatives):
        if i > 0 and _single_handoff(alt) and _single_handoff(tool.alternatives[i - 1]):
            handoff = alt[0]
            assert isinstance(handoff, n.HandoffEffect)
            parts.append(_name(handoff.target))
        else:
            parts.append(", ".join(_effect(e) for e in alt))
    effects = " | ".join(parts)
    return f"tool {_name(tool.name)}" + (f" {effects}" if effects else "")


def _param(p: n.Param) -> str:
    text = f"{_name(p.name)}: {p.type}"
    if p.default is not None:
        text += f" = {format_value(p.default.value)}"
    return text


def _text_suffix(text: n.Str | None) -> str:
    return f": {_str(text)}" if text is not None else ""


def format_item(item: n.ScenarioItem) -> str:
    """One scenario line."""
    if isinstance(item, n.SayTurn):
        return f"{_name(item.speaker)}: {_str(item.text)}"
    if isinstance(item, n.CallTurn):
        text = f"{_name(item.speaker)} calls {_name(item.tool)}"
        if item.args is not None:
            text += f" with {format_value(item.args.value)}"
        if item.effects:
            text += " " + ", ".join(_effect(e) for e in item.effects)
        return text + _text_suffix(item.text)
    if isinstance(item, n.SetTurn):
        assigns = ", ".join(f"{_name(a.key)} = {format_value(a.value.value)}" for a in item.assigns)
        return f"{_name(item.speaker)} sets {assigns}" + _text_suffix(item.text)
    if isinstance(item, n.ClearTurn):
        keys = ", ".join(_name(k) for k in item.keys)
        return f"{_name(item.speaker)} clears {keys}" + _text_suffix(item.text)
    if isinstance(item, n.HandoffTurn):
        return f"{_name(item.speaker)} hands off to {_name(item.target)}" + _text_suffix(item.text)
    if isinstance(item, n.FinishTurn):
        return f"{_name(item.speaker)} finishes" + (f" {_str(item.reason)}" if item.reason else "")
    if isinstance(item, n.ExpectNext):
        return f"expect next {_name(item.speaker)}"
    if isinstance(item, n.ExpectTerminate):
        return "expect terminate" + (f" {_str(item.reason)}" if item.reason else "")
    if isinstance(item, n.ExpectContext):
        return f"expect context.{_name(item.key)} == {format_value(item.value.value)}"
    return f"expect turns {format_value(item.count.value)}"


def _within(within: n.Within | None) -> str:
    if within is None:
        return ""
    return f" within {within.turns} turn" + ("" if within.turns == 1 else "s")


def format_pattern(pattern: n.Pattern) -> str:
    """A property's pattern: ``never P``, ``P at most 2 times``, ``after P, S within 3 turns``."""
    if isinstance(pattern, n.NeverPattern):
        return "never " + format_condition(pattern.p)
    if isinstance(pattern, n.AlwaysPattern):
        return "always " + format_condition(pattern.p)
    if isinstance(pattern, n.EventuallyPattern):
        return "eventually " + format_condition(pattern.p) + _within(pattern.within)
    if isinstance(pattern, n.AtMostPattern):
        unit = "time" if pattern.times == 1 else "times"
        return f"{format_condition(pattern.p)} at most {pattern.times} {unit}"
    if isinstance(pattern, n.OnlyAfterPattern):
        return f"{format_condition(pattern.p)} only after {format_condition(pattern.s)}"
    # `after P, S`: S starts with a keyword or `(`, so a `from a, b` list in P ends at
    # the comma
    return f"after {format_condition(pattern.p)}, {format_condition(pattern.s)}" + _within(
        pattern.within
    )


def format_scope(scope: n.Scope) -> str:
    """A property's scope: ``before R``, ``after Q``, ``after Q before R``, ``after Q until R``."""
    if isinstance(scope, n.BeforeScope):
        return "before " + format_condition(scope.r)
    if isinstance(scope, n.AfterScope):
        return "after " + format_condition(scope.q)
    word = "before" if isinstance(scope, n.BetweenScope) else "until"
    return f"after {format_condition(scope.q)} {word} {format_condition(scope.r)}"


def format_property(st: n.PropertyDecl) -> str:
    """``property NAME: PATTERN [SCOPE]`` on one line."""
    text = f"property {_name(st.name)}: {format_pattern(st.pattern)}"
    return text + (f" {format_scope(st.scope)}" if st.scope is not None else "")


def format_statement_line(st: n.Statement) -> str:
    """A statement that prints on one line (everything but blocks)."""
    if isinstance(st, n.FlowDecl):
        return f"flow {_name(st.name)}" + (f" {_str(st.description)}" if st.description else "")
    if isinstance(st, n.SpeakerDecl):
        return f"speaker {_name(st.name)}" + (": human" if st.human else "")
    if isinstance(st, n.SpeakersDecl):
        items = ", ".join(_name(s.name) + (": human" if s.human else "") for s in st.speakers)
        return f"speakers {items}"
    if isinstance(st, n.StartDecl):
        return f"start {_name(st.speaker)}"
    if isinstance(st, n.InitiatorDecl):
        return f"initiator {_name(st.speaker)}"
    if isinstance(st, n.MaxTurnsDecl):
        return f"max_turns {format_value(st.value.value)}"
    if isinstance(st, n.ContextDecl) and not st.block:
        entry = st.entries[0]
        return f"context {_name(entry.key)} = {format_value(entry.value.value)}"
    if isinstance(st, n.Rule):
        text = f"when {format_condition(st.cond)} then {format_target(st.target)}"
        return text + (f" priority {st.priority.value}" if st.priority is not None else "")
    if isinstance(st, n.Otherwise):
        return f"otherwise {format_target(st.target)}"
    if isinstance(st, n.SequenceDecl):
        return "sequence " + " -> ".join(_name(s) for s in st.steps)
    if isinstance(st, n.RoundRobinDecl):
        return "round_robin " + ", ".join(_name(s) for s in st.speakers)
    if isinstance(st, n.ConditionDecl):
        return f"condition {_name(st.name)}({', '.join(_param(p) for p in st.params)})"
    if isinstance(st, n.TargetDecl):
        text = f"target {_name(st.name)}({', '.join(_param(p) for p in st.params)})"
        if st.results is not None:
            results = []
            for r in st.results:
                if isinstance(r, n.ResultSpeaker):
                    results.append(_name(r.speaker))
                else:
                    results.append("terminate" + (f" {_str(r.reason)}" if r.reason else ""))
            text += " -> " + " | ".join(results)
        return text
    if isinstance(st, n.PropertyDecl):
        return format_property(st)
    raise TypeError(f"not a one-line statement: {type(st).__name__}")  # pragma: no cover


# ── layout with comments ─────────────────────────────────────────────────────


class _Index:
    """The comments the printer places, in file order, read by position: a parser's
    :class:`~flowc.dsl.comments.Comments` without building a node each (a file may hold
    millions of them), any other sequence of comments sorted by where they start."""

    def __init__(self, comments: Sequence[n.Comment]) -> None:
        self.comments: Comments | list[n.Comment]
        if isinstance(comments, Comments):
            self.comments = comments
            self.starts: Sequence[int] = comments.starts
        else:
            self.comments = sorted(comments, key=lambda c: c.span.start)
            self.starts = [c.span.start for c in self.comments]

    def __len__(self) -> int:
        return len(self.starts)

    def start(self, i: int) -> int:
        return self.starts[i]

    def line(self, i: int) -> int:
        c = self.comments
        return c.line(i) if isinstance(c, Comments) else c[i].span.line

    def text(self, i: int) -> str:
        """Comment ``i`` as the formatter writes it."""
        c = self.comments
        return "#" + (c.text(i) if isinstance(c, Comments) else c[i].text).rstrip()

    def before(self, first: int, offset: int) -> int:
        """The first comment from ``first`` on that starts at ``offset`` or after."""
        return bisect.bisect_left(self.starts, offset, lo=first)


@attrs.frozen
class _Run:
    """Comments ``first`` to ``stop - 1`` on lines of their own, kept as positions and
    written out when the layout is (a file of comments is not a list of lines):
    ``inside``, the span of the one-line item they are moved above; ``after``, the line
    before them (for the blank line kept between)."""

    pad: str
    first: int
    stop: int
    inside: Span | None
    after: int | None


class _Printer:
    def __init__(self, comments: Sequence[n.Comment]):
        self.comments = _Index(comments)
        self.next = 0
        self.lines: list[_Line | _Run | None] = []  # None is a blank line
        self.prev_line: int | None = None

    def _pending_before(self, offset: int) -> tuple[int, int]:
        first = self.next
        self.next = self.comments.before(first, offset)
        return first, self.next

    def _trailing(self, line: int) -> str | None:
        """The comment that sits at the end of source ``line``, if the next one does."""
        if self.next < len(self.comments) and self.comments.line(self.next) == line:
            self.next += 1
            return self.comments.text(self.next - 1)
        return None

    def _gap(self, line: int) -> None:
        """Keep one blank line where the source had one or more."""
        if self.prev_line is not None and line - self.prev_line > 1:
            self.lines.append(None)

    def _comments(self, pending: tuple[int, int], pad: str, inside: Span | None = None) -> None:
        """Comments on their own lines; those ``inside`` a one-line item move above it."""
        first, stop = pending
        if first == stop:
            return
        self.lines.append(_Run(pad, first, stop, inside, self.prev_line))
        last = self.comments.line(stop - 1)
        if inside is not None and self.comments.start(stop - 1) > inside.start:
            last = inside.line
        self.prev_line = last

    def expand(self, run: _Run) -> Iterator[str | None]:
        """A run's lines: each comment's text (its pad left out), None for a blank line."""
        inside = run.inside
        moved_after = inside.start if inside is not None else -1
        moved_to = inside.line if inside is not None else 0
        prev = run.after
        c = self.comments.comments
        if not isinstance(c, Comments):
            for i in range(run.first, run.stop):
                line = c[i].span.line
                if moved_after >= 0 and c[i].span.start > moved_after:
                    line = moved_to
                if prev is not None and line - prev > 1:
                    yield None
                yield "#" + c[i].text.rstrip()
                prev = line
            return
        # a file may hold millions of comments: its text and line index read here
        text = c.source.text
        find = text.find
        size = len(text)
        line_starts = c.source.line_starts
        lines = len(line_starts)
        starts = c.starts
        line = c.line(run.first)
        for i in range(run.first, run.stop):
            start = starts[i]
            while line < lines and line_starts[line] <= start:
                line += 1
            at = moved_to if 0 <= moved_after < start else line
            if prev is not None and at - prev > 1:
                yield None
            end = find("\n", start)
            yield text[start : size if end < 0 else end].rstrip()  # from its `#`
            prev = at

    def block(self, items: Sequence[Any], depth: int, end: int) -> None:
        """Print ``items`` (statements or block entries) then comments up to ``end``."""
        pad = INDENT * depth
        index = 0
        while index < len(items):
            item = items[index]
            shared = self._shared_line(items, index)
            index += len(shared) or 1
            if shared:
                self._line_of_items(shared, pad)
                continue
            span: Span = item.span
            one_line = not _is_block(item)
            kept = None
            if one_line:
                first, stop = self._pending_before(span.end)
                kept = self._kept_ignore(span, first, stop)
                self._comments((first, stop if kept is None else kept[0]), pad, inside=span)
            else:
                self._comments(self._pending_before(span.start), pad)
            self._gap(span.line)
            if one_line:
                text = _line_of(item)
                split = text.index(" then ") if isinstance(item, n.Rule) else None
                if kept is None:
                    self.lines.append(_Line(pad, text, self._trailing(span.end_line), split))
                else:  # the ignore comment at its end, the comments after it below it
                    at, after = kept
                    self.lines.append(_Line(pad, text, self.comments.text(at), split))
                    if at + 1 < after:
                        self.lines.append(_Run(pad, at + 1, after, span, span.line))
                    self.next = after
            else:
                # the comment at the end of the closing brace's line belongs to what follows it
                following = index < len(items) and items[index].span.line == span.end_line
                self.emit_block(item, depth, closing_comment=not following)
            self.prev_line = span.end_line
        self._comments(self._pending_before(end), pad)

    def _shared_line(self, items: Sequence[Any], at: int) -> Sequence[Any]:
        """The items from ``at`` on that share lines, each starting on the line the one
        before it ends on (``speaker b speaker c``; ``when from u`` / ``then a when from u
        then b``), when there are two or more and an ignore comment sits on one of their
        lines: the comment silences what is found on any of those lines, so the printer
        keeps them on one line, with that comment at its end (:meth:`_line_of_items`);
        none otherwise (each item gets a line of its own)."""
        stop, last = at, items[at].span.line
        while (
            stop < len(items)
            and not _is_block(items[stop])
            and (stop == at or items[stop].span.line == last)
        ):
            last = items[stop].span.end_line
            stop += 1
        if stop - at < 2 or self._chain_ignore(items[at].span.start, last) is None:
            return ()
        return items[at:stop]

    def _chain_ignore(self, start: int, last: int) -> tuple[int, int] | None:
        """The first ignore comment from offset ``start`` to the end of line ``last``, and
        the end of the comments up to that line's end; None when there is none."""
        end = self.comments.before(self.next, start)
        ignore = None
        while end < len(self.comments) and self.comments.line(end) <= last:
            if ignore is None and IGNORE.match(self.comments.text(end)[1:]):
                ignore = end
            end += 1
        return None if ignore is None else (ignore, end)

    def _line_of_items(self, items: Sequence[Any], pad: str) -> None:
        """Print :meth:`_shared_line`'s items on one line, its ignore comment at its end;
        the comments before that comment move above the line, those after it below (as
        for one item written over several lines: :meth:`_kept_ignore`)."""
        span = items[0].span.cover(items[-1].span)
        found = self._chain_ignore(span.start, span.end_line)
        assert found is not None  # (:meth:`_shared_line` found it)
        at, after = found
        first, _ = self._pending_before(span.start)
        self._comments((first, at), pad, inside=span)
        self._gap(span.line)
        text = " ".join(_line_of(item) for item in items)
        self.lines.append(_Line(pad, text, self.comments.text(at), None))
        if at + 1 < after:
            self.lines.append(_Run(pad, at + 1, after, span, span.line))
        self.next = after
        self.prev_line = span.end_line

    def _kept_ignore(self, span: Span, first: int, stop: int) -> tuple[int, int] | None:
        """For an item written over several lines (:func:`joined_lines`), whose comments
        ``first`` to ``stop - 1`` (those before its end) and maybe one after it on its
        last line the printer places: where its first ignore comment is, and the end of
        its comments, when it has one. That comment stays at the end of the item's line,
        so that it silences what it did; the comments before it move above the item (as
        every comment inside a one-line item does), those after it below, in order."""
        if span.end_line == span.line:
            return None
        end = stop
        if end < len(self.comments) and self.comments.line(end) == span.end_line:
            end += 1  # (the comment after it on its last line)
        for at in range(self.comments.before(first, span.start), end):
            if IGNORE.match(self.comments.text(at)[1:]):
                return at, end
        return None

    def emit_block(self, item: Any, depth: int, *, closing_comment: bool = True) -> None:
        pad = INDENT * depth
        children = _children(item)
        if isinstance(item, n.SpeakerDecl):
            header = format_statement_line(item) + " {"
        elif isinstance(item, n.ContextDecl):
            header = "context {"
        else:
            header = f"scenario {_str(item.title)} {{"
        span: Span = item.span
        first_child = children[0].span.start if children else span.end
        # a comment on the header line, after the `{`, stays there
        trailing = None
        if (
            self.next < len(self.comments)
            and self.comments.line(self.next) == span.line
            and self.comments.start(self.next) < first_child
        ):
            trailing = self._trailing(span.line)
        self.lines.append(_Line(pad, header, trailing, None))
        self.prev_line = span.line
        self.block(children, depth + 1, span.end - 1)  # up to the closing brace
        trailing = self._trailing(span.end_line) if closing_comment else None
        self.lines.append(_Line(pad, "}", trailing, None))


@attrs.frozen
class _Line:
    """One output line: indent, code, trailing comment, and for a rule where `then` is."""

    pad: str
    code: str
    comment: str | None
    then_at: int | None


#: alignment is skipped where it would open a gap wider than this
MAX_ALIGN_GAP = 24


def _then_columns(lines: Sequence[_Line | _Run | None]) -> dict[int, str]:
    """The code of the rules whose `then` is aligned with their neighbours' (by their
    place in ``lines``): a run of consecutive rules at one indent, when their `then`s
    are at most :data:`MAX_ALIGN_GAP` apart. A comment on a line of its own or a blank
    line ends a run."""
    codes: dict[int, str] = {}
    run: list[int] = []

    def close() -> None:
        if len(run) > 1:
            splits = {i: lines[i].then_at or 0 for i in run}  # type: ignore[union-attr]
            # (in columns: a wide name takes two per character, as an editor shows it)
            widths = {i: display_width(lines[i].code[:at]) for i, at in splits.items()}  # type: ignore[union-attr]
            if max(widths.values()) - min(widths.values()) <= MAX_ALIGN_GAP:
                column = max(widths.values())
                for i, at in splits.items():
                    code = lines[i].code  # type: ignore[union-attr]
                    codes[i] = code[:at] + " " * (column - widths[i]) + code[at:]
        run.clear()

    for i, line in enumerate(lines):
        if isinstance(line, _Line) and line.then_at is not None:
            if run and lines[run[-1]].pad != line.pad:  # type: ignore[union-attr]
                close()
            if run and run[-1] != i - 1:
                close()
            run.append(i)
        else:
            close()
    close()
    return codes


def _layout(printer: _Printer) -> str:
    """The printer's lines as text: `then` aligned across consecutive rules and `#`
    across consecutive trailing comments (lines of code or comments at one indent, no
    blank line and no line ending in `{` between)."""
    lines = printer.lines
    codes = _then_columns(lines)

    def code_of(i: int, line: _Line) -> str:
        return codes.get(i, line.code)

    # runs of member lines: a comment's column is the widest code of its run's commented
    # lines (once per run: a run of k comments is linear in k)
    comment_column: dict[int, int] = {}
    commented: list[int] = []
    run_pad: str | None = None  # the indent of the run's last line; None: no run open

    def close() -> None:
        nonlocal run_pad
        widths = [display_width(code_of(i, lines[i])) for i in commented]  # type: ignore[arg-type]
        if len(commented) > 1 and max(widths) - min(widths) <= MAX_ALIGN_GAP:
            column = max(widths)
            for i in commented:
                comment_column[i] = column
        commented.clear()
        run_pad = None

    def member(pad: str) -> None:
        nonlocal run_pad
        if run_pad is not None and run_pad != pad:
            close()
        run_pad = pad

    for i, line in enumerate(lines):
        if line is None:
            close()
        elif isinstance(line, _Run):
            for text in printer.expand(line):
                if text is None or text.endswith("{"):
                    close()
                else:
                    member(line.pad)
        elif line.code.endswith("{"):
            close()
        else:
            member(line.pad)
            if line.comment is not None:
                commented.append(i)
    close()

    out = io.StringIO()
    write = out.write
    started = False

    def emit(text: str) -> None:
        nonlocal started
        if started:
            write("\n")
        started = True
        write(text)

    for i, line in enumerate(lines):
        if line is None:
            emit("")
        elif isinstance(line, _Run):
            for text in printer.expand(line):
                emit("" if text is None else line.pad + text)
        elif line.comment is None:
            emit(line.pad + code_of(i, line))
        else:
            code = code_of(i, line)
            width = comment_column.get(i)
            emit(line.pad + (code if width is None else pad_to(code, width)) + "  " + line.comment)
    return out.getvalue()


def _children(item: Any) -> Sequence[Any]:
    """The entries of a block item (:func:`_is_block`), in file order."""
    if isinstance(item, n.SpeakerDecl):
        return sorted((*item.writes, *item.tools), key=lambda c: c.span.start)
    if isinstance(item, n.ContextDecl):
        return item.entries
    assert isinstance(item, n.Scenario)
    return item.items


def joined_lines(flow: n.Flow) -> dict[int, range]:
    """For each line of an item written over several lines (a statement, a tool, an
    entry of a block: anything but a block), that item's lines: the formatter writes it
    on one line, so an ignore comment on any of its lines silences what is found on any
    (:func:`flowc.compiler.analysis.suppress.apply_ignores`).

    >>> from flowc.dsl.parser import parse_source
    >>> from flowc.source import SourceFile
    >>> flow, _ = parse_source(SourceFile("f", "speaker a\\nwhen from a\\n  then a\\n"))
    >>> joined_lines(flow)
    {2: range(2, 4), 3: range(2, 4)}
    """
    out: dict[int, range] = {}
    todo: list[Any] = list(flow.statements)
    while todo:
        item = todo.pop()
        if _is_block(item):
            todo.extend(_children(item))
            continue
        span: Span = item.span
        if span.end_line > span.line:
            lines = range(span.line, span.end_line + 1)
            out.update(dict.fromkeys(lines, lines))
    return dict(sorted(out.items()))


def _is_block(item: Any) -> bool:
    if isinstance(item, n.SpeakerDecl):
        return bool(item.tools or item.writes)
    if isinstance(item, n.ContextDecl):
        return item.block
    return isinstance(item, n.Scenario)


def _line_of(item: Any) -> str:
    if isinstance(item, n.WritesDecl):
        return "sets " + ", ".join(_name(k) for k in item.keys)
    if isinstance(item, n.ToolDecl):
        return format_tool(item)
    if isinstance(item, n.ContextEntry):
        return f"{_name(item.key)} = {format_value(item.value.value)},"
    if isinstance(item, n.ScenarioItem):
        return format_item(item)
    return format_statement_line(item)


def format_flow(flow: n.Flow) -> str:
    """Print a parsed flow in the canonical layout, comments included."""
    printer = _Printer(flow.comments)
    printer.block(flow.statements, 0, flow.span.end + 1)
    text = _layout(printer)
    return text + "\n" if text else ""


def line_ending(text: str) -> str:
    """The line ending ``text`` is written with, as its first line ends: ``"\\r\\n"``
    (Windows) or ``"\\n"`` (also for text of one line). The formatter keeps it.

    >>> line_ending("speaker a\\r\\nspeaker b\\n"), line_ending("speaker a\\n"), line_ending("a")
    ('\\r\\n', '\\n', '\\n')
    """
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def format_source(text: str, filename: str = "<input>", *, verify: bool = True) -> str:
    """Format `.flow` text. Raises :class:`FlowError` if it does not parse.

    The result keeps the text's line ending (:func:`line_ending`): a file written with
    ``\\r\\n`` stays so, every line of it.

    With ``verify`` (the default) a result that differs from ``text`` is re-parsed and
    must have the same AST and comments, and formatting it again must change nothing;
    a failure there is a :class:`FormatterBug`.

    >>> format_source("when   from a then b   priority 2")
    'when from a then b priority 2\\n'
    >>> format_source("speaker a\\r\\nspeaker   b\\n")
    'speaker a\\r\\nspeaker b\\r\\n'
    """
    source = SourceFile(filename, text)
    flow, diags = parse_source(source)
    if diags:
        raise FlowError(diags, {filename: source})
    newline = line_ending(text)
    out = format_flow(flow)
    if newline != "\n":
        out = out.replace("\n", newline)
    # output equal to the input needs no check: parsing it again would give this same
    # tree and comments, and formatting that this same text (as black does)
    if verify and out != text:
        again, diags2 = parse_source(SourceFile(filename, out))
        if diags2 or again != flow:
            raise FormatterBug(f"{filename}: formatting changed the meaning of the file")
        if not _same_comments(again.comments, flow.comments):
            raise FormatterBug(f"{filename}: formatting lost or reordered a comment")
        if format_flow(again).replace("\n", newline) != out:
            raise FormatterBug(f"{filename}: formatting is not stable on its own output")
    return out


def _same_comments(first: Sequence[n.Comment], second: Sequence[n.Comment]) -> bool:
    """Whether two files hold the same comments, in order (blanks at their ends aside),
    read one at a time."""
    return len(first) == len(second) and all(
        a.text.rstrip() == b.text.rstrip() for a, b in zip(first, second, strict=True)
    )
