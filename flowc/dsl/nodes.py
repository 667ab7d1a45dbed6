"""The `.flow` abstract syntax tree: frozen attrs classes, every node with a span.

Class names are the CamelCase of the grammar rule that builds them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypeAlias

import attrs

from flowc.source import Span

# ── leaves ────────────────────────────────────────────────────────────────────


@attrs.frozen
class Name:
    """An identifier; ``quoted`` when written in backquotes."""

    value: str
    span: Span = attrs.field(eq=False, repr=False)
    quoted: bool = attrs.field(default=False, eq=False)


@attrs.frozen
class Str:
    """A JSON string literal, decoded."""

    value: str
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class Value:
    """A JSON literal (string, number, bool, null, array, object), decoded."""

    value: Any
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class Comment:
    """A ``#`` comment, text without the ``#``."""

    text: str
    span: Span = attrs.field(eq=False, repr=False)


# ── conditions ────────────────────────────────────────────────────────────────


@attrs.frozen
class AlwaysCond:
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class FromCond:
    """``from A, B``: one or more speakers."""

    speakers: tuple[Name, ...]
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class ToolCond:
    tool: Name
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class ContextCond:
    """``context.KEY == VALUE`` or ``!=``."""

    key: Name
    op: str
    value: Value
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class Arg:
    """``name = VALUE`` in a custom call."""

    name: Name
    value: Value
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class CallCond:
    """A declared custom condition: ``NAME(arg = VALUE, ...)``."""

    name: Name
    args: tuple[Arg, ...]
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class AndCond:
    items: tuple[Cond, ...]
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class OrCond:
    items: tuple[Cond, ...]
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class NotCond:
    item: Cond
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class EndsCond:
    """``ends`` or ``ends "reason"``: a property's atom, the run ends after the turn."""

    reason: Str | None
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class TurnCond:
    """``turn OP N``: a property's atom, the turn's number (``op`` one of ``==``, ``!=``,
    ``<``, ``<=``, ``>``, ``>=``; ``number`` a whole number >= 0)."""

    op: str
    number: int
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class PreviousCond:
    """``previous E``: a property's expression, E held on the turn before."""

    item: Cond
    span: Span = attrs.field(eq=False, repr=False)


#: a condition; ``EndsCond``, ``TurnCond`` and ``PreviousCond`` only in a property, where
#: ``AlwaysCond`` and ``CallCond`` never are (the parser refuses them there)
Cond: TypeAlias = (
    AlwaysCond
    | FromCond
    | ToolCond
    | ContextCond
    | CallCond
    | AndCond
    | OrCond
    | NotCond
    | EndsCond
    | TurnCond
    | PreviousCond
)

# ── targets ───────────────────────────────────────────────────────────────────


@attrs.frozen
class SpeakerTarget:
    speaker: Name
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class NextTarget:
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class StayTarget:
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class InitiatorTarget:
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class TerminateTarget:
    """``terminate ["reason"]``; ``reason`` is None when bare (means ``"after_work"``)."""

    reason: Str | None
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class CallTarget:
    """A declared custom target: ``NAME(arg = VALUE, ...)``."""

    name: Name
    args: tuple[Arg, ...]
    span: Span = attrs.field(eq=False, repr=False)


Target: TypeAlias = (
    SpeakerTarget | NextTarget | StayTarget | InitiatorTarget | TerminateTarget | CallTarget
)

# ── speakers and tools ────────────────────────────────────────────────────────


@attrs.frozen
class SetEffect:
    """``sets KEY = VALUE``."""

    key: Name
    value: Value
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class ClearEffect:
    """``clears KEY``."""

    key: Name
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class HandoffEffect:
    """``hands off to NAME`` (or a bare NAME after ``|``)."""

    target: Name
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class FinishEffect:
    """``finishes ["reason"]``."""

    reason: Str | None
    span: Span = attrs.field(eq=False, repr=False)


Effect: TypeAlias = SetEffect | ClearEffect | HandoffEffect | FinishEffect


@attrs.frozen
class ToolDecl:
    """``tool NAME [effects | effects ...]``.

    ``alternatives`` holds one tuple of effects per ``|`` alternative; a plain tool
    has none.
    """

    name: Name
    alternatives: tuple[tuple[Effect, ...], ...]
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class WritesDecl:
    """``sets K, ...`` in a human speaker's block: context keys the human may write."""

    keys: tuple[Name, ...]
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class SpeakerDecl:
    name: Name
    human: bool
    tools: tuple[ToolDecl, ...]
    span: Span = attrs.field(eq=False, repr=False)
    #: comments inside the ``{ ... }`` block are attached by the formatter
    block: bool = attrs.field(default=False, eq=False)
    #: ``sets K, ...`` lines of a human's block: the context keys it may write
    writes: tuple[WritesDecl, ...] = ()

    @property
    def written_keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(k.value for w in self.writes for k in w.keys))


@attrs.frozen
class SpeakersDecl:
    """``speakers A, B: human, C``."""

    speakers: tuple[SpeakerDecl, ...]
    span: Span = attrs.field(eq=False, repr=False)


# ── other statements ──────────────────────────────────────────────────────────


@attrs.frozen
class FlowDecl:
    name: Name
    description: Str | None
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class StartDecl:
    speaker: Name
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class InitiatorDecl:
    speaker: Name
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class MaxTurnsDecl:
    """``max_turns N``; the value is checked by the compiler (E106)."""

    value: Value
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class ContextEntry:
    key: Name
    value: Value
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class ContextDecl:
    """``context KEY = VALUE`` (``block`` False) or ``context { ... }``."""

    entries: tuple[ContextEntry, ...]
    block: bool
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class Priority:
    value: int
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class Rule:
    """``when COND then TARGET [priority N]``."""

    cond: Cond
    target: Target
    priority: Priority | None
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class Otherwise:
    target: Target
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class SequenceDecl:
    """``sequence A -> B -> C``."""

    steps: tuple[Name, ...]
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class RoundRobinDecl:
    """``round_robin A, B, C``."""

    speakers: tuple[Name, ...]
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class TypeRef:
    """A parameter type: ``string``, ``int``, ``float``, ``number``, ``bool``,
    ``list``, ``object``, ``any``, ``speaker``, or ``list[T]``."""

    name: str
    item: TypeRef | None
    span: Span = attrs.field(eq=False, repr=False)

    def __str__(self) -> str:
        return f"{self.name}[{self.item}]" if self.item is not None else self.name


@attrs.frozen
class Param:
    """``NAME: TYPE [= DEFAULT]``."""

    name: Name
    type: TypeRef
    default: Value | None
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class ConditionDecl:
    name: Name
    params: tuple[Param, ...]
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class ResultSpeaker:
    speaker: Name
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class ResultTerminate:
    reason: Str | None
    span: Span = attrs.field(eq=False, repr=False)


Result: TypeAlias = ResultSpeaker | ResultTerminate


@attrs.frozen
class TargetDecl:
    """``target NAME(params) [-> A | B | terminate]``; ``results`` None without ``->``."""

    name: Name
    params: tuple[Param, ...]
    results: tuple[Result, ...] | None
    span: Span = attrs.field(eq=False, repr=False)


# ── scenarios ─────────────────────────────────────────────────────────────────


@attrs.frozen
class SayTurn:
    """``NAME: "text"``."""

    speaker: Name
    text: Str
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class CallTurn:
    """``NAME calls TOOL [with {json}] [EFFECTS] [: "text"]``.

    ``effects`` (written as in a tool declaration: ``hands off to billing``, ``sets k = 1``)
    name which declared alternative the call takes, for a tool that has several.
    """

    speaker: Name
    tool: Name
    args: Value | None
    text: Str | None
    span: Span = attrs.field(eq=False, repr=False)
    effects: tuple[Effect, ...] = ()


@attrs.frozen
class Assign:
    key: Name
    value: Value
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class SetTurn:
    """``NAME sets K = V, ... [: "text"]``."""

    speaker: Name
    assigns: tuple[Assign, ...]
    text: Str | None
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class ClearTurn:
    """``NAME clears K, ... [: "text"]``."""

    speaker: Name
    keys: tuple[Name, ...]
    text: Str | None
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class HandoffTurn:
    """``NAME hands off to OTHER [: "text"]``."""

    speaker: Name
    target: Name
    text: Str | None
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class FinishTurn:
    """``NAME finishes ["reason"]``."""

    speaker: Name
    reason: Str | None
    span: Span = attrs.field(eq=False, repr=False)


Turn: TypeAlias = SayTurn | CallTurn | SetTurn | ClearTurn | HandoffTurn | FinishTurn


@attrs.frozen
class ExpectNext:
    speaker: Name
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class ExpectTerminate:
    reason: Str | None
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class ExpectContext:
    key: Name
    value: Value
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class ExpectTurns:
    count: Value
    span: Span = attrs.field(eq=False, repr=False)


Expectation: TypeAlias = ExpectNext | ExpectTerminate | ExpectContext | ExpectTurns
ScenarioItem: TypeAlias = Turn | Expectation


@attrs.frozen
class Scenario:
    title: Str
    items: tuple[ScenarioItem, ...]
    span: Span = attrs.field(eq=False, repr=False)


# ── properties ────────────────────────────────────────────────────────────────


@attrs.frozen
class Within:
    """``within N turns`` (``within 1 turn``): N >= 1."""

    turns: int
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class NeverPattern:
    """``never P``."""

    p: Cond
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class AlwaysPattern:
    """``always P``."""

    p: Cond
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class EventuallyPattern:
    """``eventually P [within N turns]``."""

    p: Cond
    within: Within | None
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class AtMostPattern:
    """``P at most N times`` (``at most 1 time``): N >= 0."""

    p: Cond
    times: int
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class OnlyAfterPattern:
    """``P only after S``."""

    p: Cond
    s: Cond
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class RespondsPattern:
    """``after P, S [within N turns]``."""

    p: Cond
    s: Cond
    within: Within | None
    span: Span = attrs.field(eq=False, repr=False)


Pattern: TypeAlias = (
    NeverPattern
    | AlwaysPattern
    | EventuallyPattern
    | AtMostPattern
    | OnlyAfterPattern
    | RespondsPattern
)


@attrs.frozen
class BeforeScope:
    """``before R``."""

    r: Cond
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class AfterScope:
    """``after Q``."""

    q: Cond
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class BetweenScope:
    """``after Q before R``."""

    q: Cond
    r: Cond
    span: Span = attrs.field(eq=False, repr=False)


@attrs.frozen
class AfterUntilScope:
    """``after Q until R``."""

    q: Cond
    r: Cond
    span: Span = attrs.field(eq=False, repr=False)


Scope: TypeAlias = BeforeScope | AfterScope | BetweenScope | AfterUntilScope


@attrs.frozen
class PropertyDecl:
    """``property NAME: PATTERN [SCOPE]`` (no scope: the whole run).

    In a property, a node's span covers the parentheses written around it (a rule's
    condition leaves grouping parentheses out), so that every span of the statement,
    its own included, reaches its last character.
    """

    name: Name
    pattern: Pattern
    scope: Scope | None
    span: Span = attrs.field(eq=False, repr=False)


def walk_written_cond(cond: Cond) -> Iterator[Cond]:
    """A condition as written in a `.flow` and every condition inside it, outermost
    first (the order they are written in). (:func:`flowc.compiler.model.walk_condition`
    walks a compiled condition.)"""
    yield cond
    if isinstance(cond, AndCond | OrCond):
        for item in cond.items:
            yield from walk_written_cond(item)
    elif isinstance(cond, NotCond):
        yield from walk_written_cond(cond.item)


def property_expressions(decl: PropertyDecl) -> tuple[Cond, ...]:
    """The top-level expressions of a property: its pattern's, then its scope's."""
    pat = decl.pattern
    out: list[Cond] = [pat.p]
    if isinstance(pat, OnlyAfterPattern | RespondsPattern):
        out.append(pat.s)
    scope = decl.scope
    if isinstance(scope, BeforeScope):
        out.append(scope.r)
    elif isinstance(scope, AfterScope):
        out.append(scope.q)
    elif isinstance(scope, BetweenScope | AfterUntilScope):
        out += [scope.q, scope.r]
    return tuple(out)


def refused_in_property(decl: PropertyDecl) -> AlwaysCond | CallCond | None:
    """The first ``always`` or custom condition call in a property, in the order written
    (both parse there, and both parsers refuse them, each with its reason)."""
    found: list[AlwaysCond | CallCond] = []
    stack: list[Cond] = list(reversed(property_expressions(decl)))
    while stack:
        node = stack.pop()
        if isinstance(node, AlwaysCond | CallCond):
            found.append(node)
        elif isinstance(node, AndCond | OrCond):
            stack.extend(reversed(node.items))
        elif isinstance(node, NotCond | PreviousCond):
            stack.append(node.item)
    return min(found, key=lambda c: c.span.start) if found else None


Statement: TypeAlias = (
    FlowDecl
    | SpeakerDecl
    | SpeakersDecl
    | StartDecl
    | InitiatorDecl
    | MaxTurnsDecl
    | ContextDecl
    | Rule
    | Otherwise
    | SequenceDecl
    | RoundRobinDecl
    | ConditionDecl
    | TargetDecl
    | Scenario
    | PropertyDecl
)


@attrs.frozen
class Flow:
    """A parsed file: its statements in order, and its comments (in order: as a parser
    keeps them, :class:`~flowc.dsl.comments.Comments`)."""

    statements: tuple[Statement, ...]
    comments: Sequence[Comment] = attrs.field(eq=False)
    span: Span = attrs.field(eq=False, repr=False)

    def speakers(self) -> tuple[SpeakerDecl, ...]:
        """Every declared speaker, in declaration order."""
        out: list[SpeakerDecl] = []
        for st in self.statements:
            if isinstance(st, SpeakerDecl):
                out.append(st)
            elif isinstance(st, SpeakersDecl):
                out.extend(st.speakers)
        return tuple(out)

    def of_type(self, cls: type[Any]) -> tuple[Any, ...]:
        return tuple(st for st in self.statements if isinstance(st, cls))
