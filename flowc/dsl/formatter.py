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

import json
import re
from collections.abc import Sequence
from typing import Any

import attrs

from flowc.diagnostics import FlowError
from flowc.dsl import nodes as n
from flowc.dsl.parser import KEYWORDS, parse_source
from flowc.source import SourceFile, Span

_PLAIN_NAME = re.compile(r"[A-Za-z_](?:[A-Za-z0-9_]|-(?!>))*\Z")
INDENT = "  "


class FormatterBug(Exception):
    """The formatter's own output failed its checks: a bug in flowc, not in the input."""


def format_name(name: str) -> str:
    """A name as written in a file: backquoted when it is a keyword or not an identifier.

    >>> format_name("drafter"), format_name("next")
    ('drafter', '`next`')
    """
    if _PLAIN_NAME.match(name) and name not in KEYWORDS and not name.endswith("-"):
        return name
    return f"`{name}`"


def format_value(value: Any) -> str:
    """A JSON literal on one line: ``{"a": [1, 2]}``."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


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


class _Printer:
    def __init__(self, comments: Sequence[n.Comment]):
        self.comments = sorted(comments, key=lambda c: c.span.start)
        self.next = 0
        self.lines: list[_Line | None] = []  # None is a blank line
        self.prev_line: int | None = None

    def _comment_text(self, c: n.Comment) -> str:
        return "#" + c.text.rstrip()

    def _pending_before(self, offset: int) -> list[n.Comment]:
        out = []
        while self.next < len(self.comments) and self.comments[self.next].span.start < offset:
            out.append(self.comments[self.next])
            self.next += 1
        return out

    def _trailing(self, line: int) -> str | None:
        """The comment that sits at the end of source ``line``, if the next one does."""
        if self.next < len(self.comments) and self.comments[self.next].span.line == line:
            c = self.comments[self.next]
            self.next += 1
            return self._comment_text(c)
        return None

    def _gap(self, line: int) -> None:
        """Keep one blank line where the source had one or more."""
        if self.prev_line is not None and line - self.prev_line > 1:
            self.lines.append(None)

    def _comments(
        self, comments: Sequence[n.Comment], pad: str, inside: Span | None = None
    ) -> None:
        """Comments on their own lines; those ``inside`` a one-line item move above it."""
        for c in comments:
            line = c.span.line
            if inside is not None and c.span.start > inside.start:
                line = inside.line
            self._gap(line)
            self.lines.append(_Line(pad, self._comment_text(c), None, None))
            self.prev_line = line

    def block(self, items: Sequence[Any], depth: int, end: int) -> None:
        """Print ``items`` (statements or block entries) then comments up to ``end``."""
        pad = INDENT * depth
        for item in items:
            span: Span = item.span
            one_line = not _is_block(item)
            if one_line:
                self._comments(self._pending_before(span.end), pad, inside=span)
            else:
                self._comments(self._pending_before(span.start), pad)
            self._gap(span.line)
            if one_line:
                text = _line_of(item)
                split = text.index(" then ") if isinstance(item, n.Rule) else None
                self.lines.append(_Line(pad, text, self._trailing(span.end_line), split))
            else:
                self.emit_block(item, depth)
            self.prev_line = span.end_line
        self._comments(self._pending_before(end), pad)

    def emit_block(self, item: Any, depth: int) -> None:
        pad = INDENT * depth
        children: Sequence[Any]
        if isinstance(item, n.SpeakerDecl):
            header = format_statement_line(item) + " {"
            children = sorted((*item.writes, *item.tools), key=lambda c: c.span.start)
        elif isinstance(item, n.ContextDecl):
            header = "context {"
            children = item.entries
        else:
            assert isinstance(item, n.Scenario)
            header = f"scenario {_str(item.title)} {{"
            children = item.items
        span: Span = item.span
        first_child = children[0].span.start if children else span.end
        # a comment on the header line, after the `{`, stays there
        trailing = None
        if (
            self.next < len(self.comments)
            and self.comments[self.next].span.line == span.line
            and self.comments[self.next].span.start < first_child
        ):
            trailing = self._trailing(span.line)
        self.lines.append(_Line(pad, header, trailing, None))
        self.prev_line = span.line
        self.block(children, depth + 1, span.end - 1)  # up to the closing brace
        self.lines.append(_Line(pad, "}", self._trailing(span.end_line), None))


@attrs.frozen
class _Line:
    """One output line: indent, code, trailing comment, and for a rule where `then` is."""

    pad: str
    code: str
    comment: str | None
    then_at: int | None


#: alignment is skipped where it would open a gap wider than this
MAX_ALIGN_GAP = 24


def _runs(lines: Sequence[_Line | None], member: Any) -> list[list[int]]:
    """Maximal runs of consecutive line indexes for which ``member`` holds."""
    runs: list[list[int]] = []
    current: list[int] = []
    for i, line in enumerate(lines):
        if line is not None and member(line):
            if current and lines[current[-1]] is not None and current[-1] == i - 1:
                prev = lines[current[-1]]
                assert prev is not None
                if prev.pad == line.pad:
                    current.append(i)
                    continue
            if current:
                runs.append(current)
            current = [i]
        else:
            if current:
                runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def _layout(lines: Sequence[_Line | None]) -> list[str]:
    """Align `then` across consecutive rules and `#` across consecutive trailing comments."""
    present = {i: line for i, line in enumerate(lines) if line is not None}
    codes = {i: line.code for i, line in present.items()}
    for run in _runs(lines, lambda ln: ln.then_at is not None):
        splits = {i: present[i].then_at or 0 for i in run}
        widths = list(splits.values())
        if len(run) < 2 or max(widths) - min(widths) > MAX_ALIGN_GAP:
            continue
        column = max(widths)
        for i, at in splits.items():
            codes[i] = codes[i][:at] + " " * (column - at) + codes[i][at:]
    comment_column: dict[int, int] = {}
    for run in _runs(lines, lambda ln: ln.code != ln.comment and not ln.code.endswith("{")):
        commented = [i for i in run if present[i].comment is not None]
        widths = [len(codes[i]) for i in commented]
        if len(commented) > 1 and max(widths) - min(widths) <= MAX_ALIGN_GAP:
            column = max(widths)  # once per run: a run of k comments is linear in k
            for i in commented:
                comment_column[i] = column
    out: list[str] = []
    for i in range(len(lines)):
        line = present.get(i)
        if line is None:
            out.append("")
        elif line.comment is None:
            out.append(line.pad + codes[i])
        else:
            width = comment_column.get(i, len(codes[i]))
            out.append(line.pad + codes[i].ljust(width) + "  " + line.comment)
    return out


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
    text = "\n".join(_layout(printer.lines))
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
        if [c.text.rstrip() for c in again.comments] != [c.text.rstrip() for c in flow.comments]:
            raise FormatterBug(f"{filename}: formatting lost or reordered a comment")
        if format_flow(again).replace("\n", newline) != out:
            raise FormatterBug(f"{filename}: formatting is not stable on its own output")
    return out
