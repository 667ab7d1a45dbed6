"""Text -> AST with Lark's LALR parser and lexer: the reference parser, and the one that
reports syntax errors. The parser's one module that imports Lark or catches its
exceptions (the language server's completion drives Lark's interactive parser too), and it
uses Lark's public interface only.

:func:`flowc.dsl.parser.parse_source` parses a file with the faster hand-written
parser of :mod:`flowc.dsl.descent` first; only a file that does not parse cleanly
comes here, so that its errors are found and worded as Lark finds them.

>>> flow, diags = parse_lalr(SourceFile("f.flow", 'speaker a\\nspeaker b\\nwhen from a then b'))
>>> (len(flow.statements), diags)
(3, ())
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterator
from contextvars import ContextVar
from functools import cache
from importlib import resources
from typing import Any

import attrs
import lark
from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from flowc.diagnostics import E001, Diagnostic
from flowc.dsl import nodes as n
from flowc.dsl.comments import Comments
from flowc.dsl.descent import scan
from flowc.dsl.keywords import KEYWORDS, MAX_NESTING
from flowc.inputs import MAX_INT_DIGITS
from flowc.source import SourceFile, Span, offsets

_SURROGATE = re.compile("[\ud800-\udfff]")


@cache
def _parser() -> Lark:
    grammar = resources.files("flowc").joinpath("grammar/flow.lark").read_text(encoding="utf-8")
    return Lark(
        grammar,
        parser="lalr",
        lexer="basic",
        keep_all_tokens=True,
        maybe_placeholders=True,
        lexer_callbacks={"COMMENT": _collect_comment},
        transformer=_Build(),
        cache=True,
    )


@cache
def _terminal_names() -> dict[str, str]:
    """Lark's name of each keyword's and punctuation's terminal (``WHEN``, ``LBRACE``),
    by its text."""
    return {str(t.pattern.value): t.name for t in _parser().terminals if t.pattern.type == "str"}


def tokens(text: str, *, comments: bool = False) -> Iterator[Token]:
    """The tokens of ``text`` as Lark's tokens of the grammar's terminals, comments only
    when asked for, up to the first character no token starts with
    (:func:`flowc.dsl.parser.tokens`). They are scanned by the fast parser's scanner
    (:func:`flowc.dsl.descent.scan`, twice as fast as Lark's lexer, which a language
    server runs on every edit); a test compares them with Lark's lexer's."""
    names = _terminal_names()
    for kind, value, start, line, column in scan(text, comments=comments):
        end_column = column + len(value)
        yield Token(
            names.get(kind, kind), value, start, line, column, line, end_column, start + len(value)
        )


class _TooDeep(Exception):
    def __init__(self, span: Span, what: str = "condition"):
        self.span, self.what = span, what


#: terminals whose text matters; keyword and punctuation tokens are dropped
_VALUE_TOKENS = frozenset({"NAME", "QUOTED_NAME", "STRING", "NUMBER"})
#: rules whose callbacks want every token (their keyword is their value)
_RAW_RULES = frozenset({"at_most_pattern", "cmp", "type_name", "turn_cmp", "within"})


@attrs.frozen
class _Flag:
    """A keyword-only piece (``: human``) that still has a place."""

    span: Span


@attrs.define
class _Names:
    """``from a, b`` of a property, while its list is read (``from`` included in the span)."""

    names: list[n.Name]
    span: Span


@attrs.frozen
class _Block:
    """The ``{ ... }`` of a speaker, with the span of its braces."""

    tools: tuple[n.ToolDecl, ...]
    span: Span
    writes: tuple[n.WritesDecl, ...] = ()


def _first_pos(obj: Any) -> tuple[int, int, int] | None:
    if isinstance(obj, Token):
        return (obj.start_pos or 0, obj.line or 1, obj.column or 1)
    span = getattr(obj, "span", None)
    if isinstance(span, Span):
        return (span.start, span.line, span.column)
    if isinstance(obj, list | tuple):
        for item in obj:
            found = _first_pos(item)
            if found is not None:
                return found
    return None


def _last_pos(obj: Any) -> tuple[int, int, int] | None:
    if isinstance(obj, Token):
        return (obj.end_pos or 0, obj.end_line or 1, obj.end_column or 1)
    span = getattr(obj, "span", None)
    if isinstance(span, Span):
        return (span.end, span.end_line, span.end_column)
    if isinstance(obj, list | tuple):
        for item in reversed(obj):
            found = _last_pos(item)
            if found is not None:
                return found
    return None


def _extent(children: list[Any]) -> Span:
    # the hot path of every reduction: tokens and placeholders are checked inline
    first = last = None
    for c in children:
        if c is None:
            continue
        if type(c) is Token:
            first = (c.start_pos or 0, c.line or 1, c.column or 1)
            break
        first = _first_pos(c)
        if first is not None:
            break
    if first is None:
        return Span(1, 1, 1, 1, 0, 0)
    for c in reversed(children):
        if c is None:
            continue
        if type(c) is Token:
            last = (c.end_pos or 0, c.end_line or 1, c.end_column or 1)
            break
        last = _last_pos(c)
        if last is not None:
            break
    assert last is not None  # the child that gave `first` gives a `last` too
    return Span(first[1], first[2], last[1], last[2], first[0], last[0])


def _callback(name: str, method: Any) -> Any:
    raw = name in _RAW_RULES

    def call(self: Any, children: list[Any]) -> Any:
        span = _extent(children)
        if not raw:
            children = [c for c in children if not isinstance(c, Token) or c.type in _VALUE_TOKENS]
        return method(self, span, children)

    call.__name__ = name
    return call


class _BuildMeta(type):
    """Wraps every rule callback so it gets ``(span, value children)``."""

    def __new__(mcs, cls_name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        for key, value in list(ns.items()):
            if callable(value) and not key.startswith("_"):
                ns[key] = _callback(key, value)
        return super().__new__(mcs, cls_name, bases, ns)


class _Build(metaclass=_BuildMeta):
    """Builds AST nodes while the LALR parser runs (no intermediate tree).

    Lark calls each method with a rule's children; :class:`_BuildMeta` turns that
    into the rule's span and its value children. Method names are the rule names.
    """

    def _span(self, meta: Any) -> Span:
        assert isinstance(meta, Span)
        return meta

    def _tok(self, tok: Token) -> Span:
        return Span(
            tok.line or 1,
            tok.column or 1,
            tok.end_line or 1,
            tok.end_column or 1,
            tok.start_pos or 0,
            tok.end_pos or 0,
        )

    # leaves
    def name(self, meta: Any, ch: list[Token]) -> n.Name:
        tok = ch[0]
        if tok.type == "QUOTED_NAME":
            return n.Name(str(tok)[1:-1], self._tok(tok), quoted=True)
        return n.Name(str(tok), self._tok(tok))

    def _decode(self, tok: Token) -> str:
        text: str = json.loads(str(tok))
        # "\ud800" alone decodes to a lone surrogate, which no UTF-8 output can hold
        if "\\u" in tok and _SURROGATE.search(text):
            raise _BadToken(
                self._tok(tok), "a `\\u` escape names half of a surrogate pair", f"found {tok}"
            )
        return text

    def string(self, meta: Any, ch: list[Token]) -> n.Value:
        return n.Value(self._decode(ch[0]), self._tok(ch[0]))

    def number(self, meta: Any, ch: list[Token]) -> n.Value:
        text = str(ch[0])
        # as a JSON graph or script is read (flowc.inputs): never `Infinity`, which is
        # not JSON, and no integer Python cannot convert back to text
        digits = len(text.lstrip("-").split(".")[0].split("e")[0].split("E")[0])
        if digits > MAX_INT_DIGITS:
            raise _BadToken(
                self._tok(ch[0]),
                f"a number may have at most {MAX_INT_DIGITS:,} digits",
                f"found {digits:,}",
            )
        value = json.loads(text)
        if isinstance(value, float) and not math.isfinite(value):
            shown = text if len(text) <= 40 else text[:37] + "..."
            raise _BadToken(
                self._tok(ch[0]),
                "a number must be finite (at most about 1.8e308)",
                f"found {shown}",
            )
        node = n.Value(value, self._tok(ch[0]))
        if isinstance(value, float):  # a count refused later quotes it as written
            _WRITTEN[id(node)] = (node, text)
        return node

    def true(self, meta: Any, ch: list[Any]) -> n.Value:
        return n.Value(True, self._span(meta))

    def false(self, meta: Any, ch: list[Any]) -> n.Value:
        return n.Value(False, self._span(meta))

    def null(self, meta: Any, ch: list[Any]) -> n.Value:
        return n.Value(None, self._span(meta))

    def _nested_value(self, value: n.Value, items: list[n.Value]) -> n.Value:
        # deeper JSON would overflow the recursion of every later stage (serde, json)
        depth = 1 + max((_depth(i) for i in items), default=0)
        if depth > MAX_NESTING:
            raise _BadToken(
                value.span,
                f"JSON value nested more than {MAX_NESTING} levels deep",
                f"found {depth} levels",
            )
        _DEPTH[id(value)] = depth
        return value

    def array(self, meta: Any, ch: list[n.Value | None]) -> n.Value:
        items = [v for v in ch if v is not None]
        return self._nested_value(n.Value([v.value for v in items], self._span(meta)), items)

    def pair(self, meta: Any, ch: list[Any]) -> tuple[str, n.Value, Token]:
        return self._decode(ch[0]), ch[1], ch[0]

    def object(self, meta: Any, ch: list[tuple[str, n.Value, Token] | None]) -> n.Value:
        pairs = [p for p in ch if p is not None]
        seen: dict[str, Token] = {}
        for key, _, tok in pairs:
            first = seen.setdefault(key, tok)
            if first is not tok:  # (JSON would keep the last: a member silently dropped)
                shown = tok if len(tok) <= 40 else tok[:36] + '..."'
                raise _BadToken(
                    self._tok(tok),
                    "an object gives each key once",
                    f"found {shown} a second time (first at {first.line}:{first.column})",
                    help="remove one of the two members, or rename one",
                )
        value = n.Value({k: v.value for k, v, _ in pairs}, self._span(meta))
        return self._nested_value(value, [v for _, v, _ in pairs])

    def _str(self, value: n.Value | None) -> n.Str | None:
        return None if value is None else n.Str(value.value, value.span)

    # statements
    def flow_decl(self, meta: Any, ch: list[Any]) -> n.FlowDecl:
        return n.FlowDecl(ch[0], self._str(ch[1]), self._span(meta))

    def human(self, meta: Any, ch: list[Any]) -> _Flag:
        return _Flag(self._span(meta))

    def speaker_decl(self, meta: Any, ch: list[Any]) -> n.SpeakerDecl:
        block: _Block | None = ch[2]
        tools = block.tools if block is not None else ()
        writes = block.writes if block is not None else ()
        return n.SpeakerDecl(
            ch[0],
            ch[1] is not None,
            tools,
            self._span(meta),
            block=block is not None,
            writes=writes,
        )

    def tool_block(self, meta: Any, ch: list[n.ToolDecl | n.WritesDecl]) -> _Block:
        return _Block(
            tuple(c for c in ch if isinstance(c, n.ToolDecl)),
            self._span(meta),
            tuple(c for c in ch if isinstance(c, n.WritesDecl)),
        )

    def writes_decl(self, meta: Any, ch: list[n.Name]) -> n.WritesDecl:
        return n.WritesDecl(tuple(ch), self._span(meta))

    def tool_decl(self, meta: Any, ch: list[Any]) -> n.ToolDecl:
        return n.ToolDecl(ch[0], tuple(ch[1] or ()), self._span(meta))

    def tool_effects(self, meta: Any, ch: list[Any]) -> list[tuple[n.Effect, ...]]:
        return list(ch)

    def effect_group(self, meta: Any, ch: list[n.Effect]) -> tuple[n.Effect, ...]:
        return tuple(ch)

    def bare_handoff(self, meta: Any, ch: list[n.Name]) -> tuple[n.Effect, ...]:
        return (n.HandoffEffect(ch[0], ch[0].span),)

    def set_effect(self, meta: Any, ch: list[Any]) -> n.SetEffect:
        return n.SetEffect(ch[0], ch[1], self._span(meta))

    def clear_effect(self, meta: Any, ch: list[Any]) -> n.ClearEffect:
        return n.ClearEffect(ch[0], self._span(meta))

    def handoff_effect(self, meta: Any, ch: list[Any]) -> n.HandoffEffect:
        return n.HandoffEffect(ch[0], self._span(meta))

    def finish_effect(self, meta: Any, ch: list[Any]) -> n.FinishEffect:
        return n.FinishEffect(self._str(ch[0]), self._span(meta))

    def speakers_decl(self, meta: Any, ch: list[n.SpeakerDecl]) -> n.SpeakersDecl:
        return n.SpeakersDecl(tuple(ch), self._span(meta))

    def speaker_item(self, meta: Any, ch: list[Any]) -> n.SpeakerDecl:
        return n.SpeakerDecl(ch[0], ch[1] is not None, (), self._span(meta))

    def start_decl(self, meta: Any, ch: list[Any]) -> n.StartDecl:
        return n.StartDecl(ch[0], self._span(meta))

    def initiator_decl(self, meta: Any, ch: list[Any]) -> n.InitiatorDecl:
        return n.InitiatorDecl(ch[0], self._span(meta))

    def max_turns_decl(self, meta: Any, ch: list[Any]) -> n.MaxTurnsDecl:
        return n.MaxTurnsDecl(ch[0], self._span(meta))

    def context_entry(self, meta: Any, ch: list[Any]) -> n.ContextEntry:
        return n.ContextEntry(ch[0], ch[1], self._span(meta))

    def context_line(self, meta: Any, ch: list[Any]) -> n.ContextDecl:
        return n.ContextDecl((ch[0],), False, self._span(meta))

    def context_block(self, meta: Any, ch: list[Any]) -> n.ContextDecl:
        return n.ContextDecl(tuple(c for c in ch if c is not None), True, self._span(meta))

    def priority(self, meta: Any, ch: list[n.Value]) -> n.Priority:
        value = ch[0].value
        if not isinstance(value, int):
            raise _BadToken(ch[0].span, "priority must be an integer", f"found `{value}`")
        return n.Priority(value, self._span(meta))

    def rule(self, meta: Any, ch: list[Any]) -> n.Rule:
        return n.Rule(ch[0], ch[1], ch[2], self._span(meta))

    def otherwise(self, meta: Any, ch: list[Any]) -> n.Otherwise:
        return n.Otherwise(ch[0], self._span(meta))

    def sequence_decl(self, meta: Any, ch: list[n.Name]) -> n.SequenceDecl:
        return n.SequenceDecl(tuple(ch), self._span(meta))

    def round_robin_decl(self, meta: Any, ch: list[n.Name]) -> n.RoundRobinDecl:
        return n.RoundRobinDecl(tuple(ch), self._span(meta))

    def type_name(self, meta: Any, ch: list[Token]) -> Token:
        # a NAME token keeps its position, so the type_ref's span starts at the name
        return ch[0].update(type="NAME")

    def type_ref(self, meta: Any, ch: list[Any]) -> n.TypeRef:
        return n.TypeRef(str(ch[0]), ch[1], self._span(meta))

    def param(self, meta: Any, ch: list[Any]) -> n.Param:
        return n.Param(ch[0], ch[1], ch[2], self._span(meta))

    def condition_decl(self, meta: Any, ch: list[Any]) -> n.ConditionDecl:
        return n.ConditionDecl(ch[0], tuple(p for p in ch[1:] if p is not None), self._span(meta))

    def target_decl(self, meta: Any, ch: list[Any]) -> n.TargetDecl:
        params = tuple(c for c in ch[1:] if isinstance(c, n.Param))
        results = [c for c in ch[1:] if isinstance(c, n.ResultSpeaker | n.ResultTerminate)]
        has_arrow = len(results) > 0
        return n.TargetDecl(ch[0], params, tuple(results) if has_arrow else None, self._span(meta))

    def result_speaker(self, meta: Any, ch: list[n.Name]) -> n.ResultSpeaker:
        return n.ResultSpeaker(ch[0], self._span(meta))

    def result_terminate(self, meta: Any, ch: list[Any]) -> n.ResultTerminate:
        return n.ResultTerminate(self._str(ch[0]), self._span(meta))

    # conditions
    def _nested(self, node: Any, *items: Any) -> Any:
        depth = 1 + max((_depth(i) for i in items), default=0)
        if depth > MAX_NESTING:
            raise _TooDeep(node.span)
        _DEPTH[id(node)] = depth
        return node

    def or_cond(self, meta: Any, ch: list[n.Cond]) -> n.OrCond:
        return self._nested(n.OrCond(tuple(ch), self._span(meta)), *ch)  # type: ignore[no-any-return]

    def and_cond(self, meta: Any, ch: list[n.Cond]) -> n.AndCond:
        return self._nested(n.AndCond(tuple(ch), self._span(meta)), *ch)  # type: ignore[no-any-return]

    def not_op(self, meta: Any, ch: list[n.Cond]) -> n.NotCond:
        return self._nested(n.NotCond(ch[0], self._span(meta)), ch[0])  # type: ignore[no-any-return]

    def always_cond(self, meta: Any, ch: list[Any]) -> n.AlwaysCond:
        return n.AlwaysCond(self._span(meta))

    def from_cond(self, meta: Any, ch: list[n.Name]) -> n.FromCond:
        return n.FromCond(tuple(ch), self._span(meta))

    def tool_cond(self, meta: Any, ch: list[n.Name]) -> n.ToolCond:
        return n.ToolCond(ch[0], self._span(meta))

    def cmp(self, meta: Any, ch: list[Token]) -> str:
        return str(ch[0])

    def context_cond(self, meta: Any, ch: list[Any]) -> n.ContextCond:
        cond = n.ContextCond(ch[0], str(ch[1]), ch[2], self._span(meta))
        _DEPTH[id(cond)] = _depth(ch[2])  # a deep value uses up the nesting budget too
        return cond

    def arg(self, meta: Any, ch: list[Any]) -> n.Arg:
        return n.Arg(ch[0], ch[1], self._span(meta))

    def call_cond(self, meta: Any, ch: list[Any]) -> n.CallCond:
        args = tuple(a for a in ch[1:] if a is not None)
        cond = n.CallCond(ch[0], args, self._span(meta))
        _DEPTH[id(cond)] = max((_depth(a.value) for a in args), default=0)
        return cond

    # targets
    def speaker_target(self, meta: Any, ch: list[n.Name]) -> n.SpeakerTarget:
        return n.SpeakerTarget(ch[0], self._span(meta))

    def next_target(self, meta: Any, ch: list[Any]) -> n.NextTarget:
        return n.NextTarget(self._span(meta))

    def stay_target(self, meta: Any, ch: list[Any]) -> n.StayTarget:
        return n.StayTarget(self._span(meta))

    def initiator_target(self, meta: Any, ch: list[Any]) -> n.InitiatorTarget:
        return n.InitiatorTarget(self._span(meta))

    def terminate_target(self, meta: Any, ch: list[Any]) -> n.TerminateTarget:
        return n.TerminateTarget(self._str(ch[0]), self._span(meta))

    def call_target(self, meta: Any, ch: list[Any]) -> n.CallTarget:
        return n.CallTarget(ch[0], tuple(a for a in ch[1:] if a is not None), self._span(meta))

    # scenarios
    def scenario(self, meta: Any, ch: list[Any]) -> n.Scenario:
        title = self._str(ch[0])
        assert title is not None
        return n.Scenario(title, tuple(ch[1:]), self._span(meta))

    def say_turn(self, meta: Any, ch: list[Any]) -> n.SayTurn:
        text = self._str(ch[1])
        assert text is not None
        return n.SayTurn(ch[0], text, self._span(meta))

    def call_turn(self, meta: Any, ch: list[Any]) -> n.CallTurn:
        # an absent optional group leaves one placeholder per symbol (two for
        # `["with" value]` and `[":" string]`), so the text is the last child
        rest = ch[2:]
        args, text = rest[0], (rest[-1] if len(rest) > 1 else None)
        effects = next((x for x in rest[1:-1] if isinstance(x, tuple)), ())
        if args is not None and not isinstance(args.value, dict):
            raise _BadToken(
                args.span, "`with` takes a JSON object of arguments", "found a non-object"
            )
        return n.CallTurn(ch[0], ch[1], args, self._str(text), self._span(meta), effects)

    def assign(self, meta: Any, ch: list[Any]) -> n.Assign:
        return n.Assign(ch[0], ch[1], self._span(meta))

    def set_turn(self, meta: Any, ch: list[Any]) -> n.SetTurn:
        assigns = tuple(c for c in ch[1:] if isinstance(c, n.Assign))
        return n.SetTurn(ch[0], assigns, self._str(ch[-1]), self._span(meta))

    def clear_turn(self, meta: Any, ch: list[Any]) -> n.ClearTurn:
        keys = tuple(c for c in ch[1:] if isinstance(c, n.Name))
        return n.ClearTurn(ch[0], keys, self._str(ch[-1]), self._span(meta))

    def handoff_turn(self, meta: Any, ch: list[Any]) -> n.HandoffTurn:
        return n.HandoffTurn(ch[0], ch[1], self._str(ch[2]), self._span(meta))

    def finish_turn(self, meta: Any, ch: list[Any]) -> n.FinishTurn:
        return n.FinishTurn(ch[0], self._str(ch[1]), self._span(meta))

    def expect_next(self, meta: Any, ch: list[Any]) -> n.ExpectNext:
        return n.ExpectNext(ch[0], self._span(meta))

    def expect_terminate(self, meta: Any, ch: list[Any]) -> n.ExpectTerminate:
        return n.ExpectTerminate(self._str(ch[0]), self._span(meta))

    def expect_context(self, meta: Any, ch: list[Any]) -> n.ExpectContext:
        return n.ExpectContext(ch[0], ch[1], self._span(meta))

    def expect_turns(self, meta: Any, ch: list[Any]) -> n.ExpectTurns:
        return n.ExpectTurns(ch[0], self._span(meta))

    def atom(self, meta: Any, ch: list[n.Cond]) -> n.Cond:
        return ch[0]  # `( cond )`: the parentheses only group

    # properties
    def property_decl(self, meta: Any, ch: list[Any]) -> n.PropertyDecl:
        decl = n.PropertyDecl(ch[0], ch[1], ch[2], self._span(meta))
        refused = n.refused_in_property(decl)
        if isinstance(refused, n.AlwaysCond):
            raise _BadToken(
                refused.span,
                "`always` is not a condition in a property: it holds on every turn, so it "
                "says nothing about a run",
                "",
                help="`always P` is the pattern (P holds on every turn); to name every "
                "turn, write `turn >= 1`",
            )
        if isinstance(refused, n.CallCond):
            name = refused.name.value
            raise _BadToken(
                refused.name.span,
                f"a property cannot use the custom condition `{name}`: its outcome is "
                "computed by code as a run goes on and is no part of the run, so no check "
                "can decide the property",
                "",
                help="write the property with what a run shows: `from`, `tool`, "
                "`context.KEY == VALUE`, `ends`, `turn`, `previous`",
            )
        return decl

    def never_pattern(self, meta: Any, ch: list[n.Cond]) -> n.NeverPattern:
        return n.NeverPattern(ch[0], self._span(meta))

    def always_pattern(self, meta: Any, ch: list[n.Cond]) -> n.AlwaysPattern:
        return n.AlwaysPattern(ch[0], self._span(meta))

    def eventually_pattern(self, meta: Any, ch: list[Any]) -> n.EventuallyPattern:
        return n.EventuallyPattern(ch[0], ch[1], self._span(meta))

    def at_most_pattern(self, meta: Any, ch: list[Any]) -> n.AtMostPattern:
        # (raw: P, `at`, `most`, N, the unit)
        times = _count(ch[-2], 0, "`at most` takes a whole number of times, 0 or more")
        unit = ch[-1]
        if str(unit) == "time" and times != 1:  # as `within N turns`: the singular is for 1
            raise _BadToken(
                self._tok(unit), f"`at most {times} time`: the singular is for 1", "write `times`"
            )
        return n.AtMostPattern(ch[0], times, self._span(meta))

    def only_after_pattern(self, meta: Any, ch: list[n.Cond]) -> n.OnlyAfterPattern:
        return n.OnlyAfterPattern(ch[0], ch[1], self._span(meta))

    def responds_pattern(self, meta: Any, ch: list[Any]) -> n.RespondsPattern:
        return n.RespondsPattern(ch[0], ch[1], ch[2], self._span(meta))

    def within(self, meta: Any, ch: list[Any]) -> n.Within:
        turns = _count(ch[1], 1, "`within` takes a whole number of turns, 1 or more")
        unit = ch[2]
        if str(unit) == "turn" and turns != 1:
            raise _BadToken(
                self._tok(unit), f"`within {turns} turn`: the singular is for 1", "write `turns`"
            )
        return n.Within(turns, self._span(meta))

    def before_scope(self, meta: Any, ch: list[n.Cond]) -> n.BeforeScope:
        return n.BeforeScope(ch[0], self._span(meta))

    def after_scope(self, meta: Any, ch: list[n.Cond]) -> n.AfterScope:
        return n.AfterScope(ch[0], self._span(meta))

    def between_scope(self, meta: Any, ch: list[n.Cond]) -> n.BetweenScope:
        return n.BetweenScope(ch[0], ch[1], self._span(meta))

    def after_until_scope(self, meta: Any, ch: list[n.Cond]) -> n.AfterUntilScope:
        return n.AfterUntilScope(ch[0], ch[1], self._span(meta))

    def _prop_nested(self, node: Any, *items: Any) -> Any:
        depth = 1 + max((_depth(i) for i in items), default=0)
        if depth > MAX_NESTING:
            raise _TooDeep(node.span, "property expression")
        _DEPTH[id(node)] = depth
        return node

    def or_prefix(self, meta: Any, ch: list[Any]) -> list[n.Cond]:
        # `a or` then `b or` ...: one list, grown in place (a long chain stays linear)
        if len(ch) == 1:
            return [ch[0]]
        ch[0].append(ch[1])
        return ch[0]  # type: ignore[no-any-return]

    and_prefix = or_prefix

    def prop_or_list(self, meta: Any, ch: list[Any]) -> n.OrCond:
        items = (*ch[0], ch[1])
        return self._prop_nested(n.OrCond(items, self._span(meta)), *items)  # type: ignore[no-any-return]

    prop_or_list_comma = prop_or_list

    def prop_and_list(self, meta: Any, ch: list[Any]) -> n.AndCond:
        items = (*ch[0], ch[1])
        return self._prop_nested(n.AndCond(items, self._span(meta)), *items)  # type: ignore[no-any-return]

    prop_and_list_comma = prop_and_list

    def prop_not_op(self, meta: Any, ch: list[n.Cond]) -> n.NotCond:
        return self._prop_nested(n.NotCond(ch[0], self._span(meta)), ch[0])  # type: ignore[no-any-return]

    prop_not_op_comma = prop_not_op

    def prop_previous(self, meta: Any, ch: list[n.Cond]) -> n.PreviousCond:
        return self._prop_nested(n.PreviousCond(ch[0], self._span(meta)), ch[0])  # type: ignore[no-any-return]

    prop_previous_comma = prop_previous

    def from_names(self, meta: Any, ch: list[Any]) -> _Names:
        if len(ch) == 1:
            return _Names([ch[0]], self._span(meta))
        names: _Names = ch[0]
        names.names.append(ch[1])
        names.span = self._span(meta)
        return names

    def prop_from(self, meta: Any, ch: list[_Names]) -> n.FromCond:
        return n.FromCond(tuple(ch[0].names), ch[0].span)

    prop_from_comma = prop_from  # (its span leaves the comma out)

    def prop_other_comma(self, meta: Any, ch: list[n.Cond]) -> n.Cond:
        return ch[0]

    def prop_other(self, meta: Any, ch: list[n.Cond]) -> n.Cond:
        # `( E )`: in a property, E's span covers its parentheses (nodes.PropertyDecl)
        inner = ch[0]
        node = attrs.evolve(inner, span=self._span(meta))
        depth = _DEPTH.pop(id(inner), None)
        if depth is not None:
            _DEPTH[id(node)] = depth
        return node

    def ends_cond(self, meta: Any, ch: list[Any]) -> n.EndsCond:
        return n.EndsCond(self._str(ch[0]), self._span(meta))

    def turn_cmp(self, meta: Any, ch: list[Token]) -> str:
        return str(ch[0])

    def turn_cond(self, meta: Any, ch: list[Any]) -> n.TurnCond:
        number = _count(ch[1], 0, "`turn` is compared with a whole number, 0 or more")
        return n.TurnCond(ch[0], number, self._span(meta))

    def start(self, meta: Any, ch: list[n.Statement]) -> list[n.Statement]:
        return list(ch)


_DEPTH: dict[int, int] = {}
#: a number written with a fraction or an exponent (``1e3``), as written: a count that
#: refuses it quotes it so, not as the float it reads as (``1000.0``); cleared per parse
_WRITTEN: dict[int, tuple[n.Value, str]] = {}


def _depth(node: Any) -> int:
    return _DEPTH.get(id(node), 0)


class _BadToken(Exception):
    def __init__(self, span: Span, message: str, found: str, help: str | None = None):
        self.span, self.message, self.found, self.help = span, message, found, help


def _count(value: n.Value, least: int, words: str) -> int:
    """A property's count (``turn < N``, ``within N turns``, ``at most N times``): a whole
    number, at least ``least``; otherwise an error at the number."""
    v = value.value
    if isinstance(v, int) and not isinstance(v, bool) and v >= least:
        return v
    written = _WRITTEN.get(id(value))
    shown = written[1] if written is not None and written[0] is value else json.dumps(v)
    raise _BadToken(value.span, words, f"found `{shown}`")


# ── error messages in words ──────────────────────────────────────────────────

_TERMINAL_WORDS = {
    "NAME": "a name",
    "QUOTED_NAME": "a `quoted name`",
    "STRING": 'a string ("...")',
    "NUMBER": "a number",
    "$END": "end of file",
}


def _terminal_word(name: str) -> str:
    if name in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[name]
    try:
        term = _parser().get_terminal(name)
    except KeyError:
        return name.lower()
    pattern = term.pattern
    if isinstance(pattern, lark.lexer.PatternStr):
        return f"`{pattern.value}`"
    return name.lower()


def _expected_words(expected: set[str] | frozenset[str]) -> str:
    words = sorted({_terminal_word(e) for e in expected}, key=lambda w: (not w.startswith("`"), w))
    # NAME and QUOTED_NAME always travel together; one word is enough.
    if "a name" in words and "a `quoted name`" in words:
        words.remove("a `quoted name`")
    if len(words) > 12:
        words = [*words[:11], f"... ({len(words) - 11} more)"]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _found_words(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    text = str(token)
    if token.type in ("NAME", "QUOTED_NAME"):
        return f"name `{text}`"
    if token.type == "STRING":
        return f"string {text[:40]}{'...' if len(text) > 40 else ''}"
    if token.type == "NUMBER":
        return f"number `{text}`"
    if text in KEYWORDS:
        return f"keyword `{text}`"
    return f"`{text}`"


_LEADING = re.compile(r"(?:\s|#[^\n]*)*")


def _unquoted_if_not_flow(source: SourceFile, diag: Diagnostic) -> Diagnostic:
    """A syntax error before the first statement: the file may be anything (a link to
    ``/etc/passwd``, a key), so neither its text nor the token found is shown; the
    place is. A flow with a typo in its first statement still gets what was expected."""
    span = diag.span
    if span is None or _LEADING.fullmatch(source.text, 0, span.start) is None:
        return diag
    expected = diag.message.split("; expected ", 1)
    typo = diag.help if diag.help and "did you mean" in diag.help else None
    return Diagnostic(
        E001,
        "the file does not start with a .flow statement; its text is not shown, as it may "
        "not be a .flow file",
        source.name,
        source.span(span.start, span.start),
        quote_source=False,
        notes=(f"expected {expected[1]}",) if len(expected) == 2 else (),
        # a misspelt first keyword (`speakr`) names only the keyword it resembles
        help=typo.split(": ", 1)[1]
        if typo
        else "a .flow file starts with a statement such as `flow NAME` or `speaker NAME`; "
        "see docs/language.md",
    )


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_WORD_BEFORE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\Z")
#: a file this large is not parsed again to try spellings (each try is a whole parse)
_SUGGEST_MAX_CHARS = 200_000


def _error_offset(text: str) -> int | None:
    """Where parsing ``text`` fails (None: it parses), a word or value refused included
    (``within 2 turn``: the singular is for 1)."""
    try:
        _parser().parse(text)
    except UnexpectedInput as err:
        if isinstance(err, UnexpectedToken):
            return len(text) if err.token.type == "$END" else (err.token.start_pos or 0)
        return err.pos_in_stream or 0
    except _BadToken as err:
        return err.span.start
    except Exception:  # past the syntax (a depth problem): the spelling fits
        return None
    return None


def _keyword_typo(source: SourceFile, offset: int) -> str | None:
    """``did you mean `from`?`` when a name at or just before the error is a misspelt
    keyword and the keyword lets the parse go further (``when form user``, ``speakr``)."""
    import difflib

    text = source.text
    if len(text) > _SUGGEST_MAX_CHARS:
        return None
    words: list[tuple[int, str]] = []
    here = _WORD.match(text, offset)
    if here is not None:
        words.append((offset, here.group()))
    before = _WORD_BEFORE.search(text, max(0, offset - 200), offset)
    if before is not None:
        words.append((before.start(1), before.group(1)))
    for start, word in words:
        if word in KEYWORDS:
            continue
        for keyword in difflib.get_close_matches(word, sorted(KEYWORDS), n=3, cutoff=0.75):
            trial = text[:start] + keyword + text[start + len(word) :]
            failed_at = _error_offset(trial)
            # the keyword must take the parse past where it failed (past the keyword itself
            # when the misspelt word is the token it failed on)
            past = offset + len(keyword) - len(word) if start < offset else start + len(keyword) - 1
            # (a value refused before the word, `within 0 turnz`, is no matter of its spelling)
            if failed_at is None or failed_at > past or failed_at < start:
                return f"`{word}` is not a keyword: did you mean `{keyword}`?"
    return None


_PROPERTY_EXPRESSION = frozenset(
    {"ALWAYS", "CONTEXT", "ENDS", "FROM", "LPAR", "NAME", "NOT", "PREVIOUS", "QUOTED_NAME"}
    | {"TOOL", "TURN"}
)
#: what a set of expected tokens is, in one word, when it is all a target, a condition, a
#: property's pattern or expression may start with
_EXPECTED_NOUNS = {
    frozenset({"INITIATOR", "NAME", "NEXT", "QUOTED_NAME", "STAY", "TERMINATE"}): "a target",
    frozenset(
        {"ALWAYS", "CONTEXT", "FROM", "LPAR", "NAME", "NOT", "QUOTED_NAME", "TOOL"}
    ): "a condition",
    # in a property (`always` and a name parse there, to be refused with the reason)
    _PROPERTY_EXPRESSION: "an expression",
    _PROPERTY_EXPRESSION | {"AFTER", "EVENTUALLY", "NEVER"}: "a pattern",
}
#: tokens that a finished statement (or block item) may be followed by: when the parser
#: would take one of them, what came before the line break was complete
_AFTER_A_STATEMENT = frozenset({"$END", "RBRACE"})


def _token_before(text: str, offset: int) -> Token | None:
    """The last token that ends at or before ``offset`` (None: there is none). Tokens
    never span lines (strings, backquoted names and comments end on theirs), so only the
    lines before ``offset`` are lexed, from the nearest one that holds a token."""
    end = offset
    while end > 0:
        begin = text.rfind("\n", 0, end) + 1
        found = [t for t in tokens(text[begin:end]) if t.type != "COMMENT"]
        if found:
            last = found[-1]
            return Token(last.type, str(last), (last.start_pos or 0) + begin)
        end = begin - 1
    return None


def _unfinished(source: SourceFile, err: UnexpectedToken) -> Diagnostic | None:
    """A statement left unfinished at the end of its line (``when from a then`` with the
    next line starting another rule) or of the file: reported where it stops, after its
    last token, with what it still needs (``expected a target after `then```), rather
    than at the next line's first token (a keyword that the parser would take as a name
    in backquotes)."""
    expected = frozenset(err.accepts or err.expected)
    if expected & _AFTER_A_STATEMENT:
        return None
    tok = err.token
    text = source.text
    at = len(text) if tok.type == "$END" else (tok.start_pos or 0)
    prev = _token_before(text, at)
    if prev is None:
        return None
    stop = (prev.start_pos or 0) + len(str(prev))
    if tok.type != "$END" and "\n" not in text[stop:at]:
        return None
    words = _expected_words(expected)
    noun = _EXPECTED_NOUNS.get(expected, words)
    shown = (
        str(prev)
        if prev.type == "QUOTED_NAME"
        else (_found_words(prev).removeprefix("string ") if prev.type == "STRING" else f"`{prev}`")
    )
    message = f"expected {noun} after {shown}"
    span = source.span(stop, stop)
    if tok.type == "$END":
        message = f"unexpected end of file; {message}"
        help_text = "the file ends in the middle of a statement; finish it or remove it"
    else:
        help_text = (
            f"finish the statement on line {span.line} or remove it; line "
            f"{source.position(at)[0]} starts another with `{tok}`"
        )
    notes = (f"expected {words}",) if noun != words else ()
    return Diagnostic(E001, message, source.name, span, notes=notes, help=help_text)


def _unclosed_block(source: SourceFile, err: UnexpectedToken) -> Diagnostic | None:
    """A block left open (``speaker a {`` with no ``}``): the parser stops at the next
    statement's keyword, or at the end of the file, expecting ``}``. Reported at the
    ``{`` that is not closed, with where the ``}`` goes, rather than as a keyword that
    the parser would take as a name in backquotes. A block that a ``}`` further down does
    close is not this case (a statement inside it that does not belong there); a ``{``
    that starts a value (``context k = {"a": 1``) is an object left open."""
    if "RBRACE" not in (err.accepts or err.expected):
        return None
    tok = err.token
    text = source.text
    at = len(text) if tok.type == "$END" else (tok.start_pos or 0)
    if tok.type != "$END" and (
        str(tok) not in KEYWORDS or text[text.rfind("\n", 0, at) + 1 : at].strip()
    ):
        return None  # not a statement's first word
    opened: list[tuple[Token, bool]] = []  # each `{` not closed yet, and whether a value
    before = ""
    for t in tokens(text[:at]):
        if t.type == "LBRACE":
            opened.append((t, before in _BEFORE_A_VALUE))
        elif t.type == "RBRACE" and opened:
            opened.pop()
        before = str(t)
    if not opened:
        return None
    brace, value = opened[-1]
    depth = len(opened)
    # an object holds no statement: one left open where the next statement starts is
    # open, whatever `}` comes later (a scenario's own, most likely)
    for t in () if value else tokens(text[at:]):
        depth += 1 if t.type == "LBRACE" else -1 if t.type == "RBRACE" else 0
        if depth < len(opened):
            return None  # a `}` further down closes it
    line = brace.line or 1
    last = _token_before(text, at)
    after = source.position(last.start_pos or 0)[0] if last is not None else line
    where = (
        "the end of the file" if tok.type == "$END" else f"`{tok}` on line {source.position(at)[0]}"
    )
    start = brace.start_pos or 0
    what = "object" if value else "block"
    return Diagnostic(
        E001,
        f"the {what} opened on line {line} is not closed: expected `}}` before {where}",
        source.name,
        source.span(start, start + 1),
        help=f"add the `}}` that ends the object, after its last value on line {after}"
        if value
        else f"add `}}` on its own line after line {after}, to end the block",
    )


#: the tokens after which a `{` starts an object value, not a block
_BEFORE_A_VALUE = frozenset({"=", "==", "!=", ":", "[", ",", "{", "with"})


def _name_char(c: str, after: str) -> bool:
    """Whether ``c`` (followed by ``after``) may be part of a name as a reader sees one:
    a letter, mark or digit of any script, `_`, or `-` that does not start `->`."""
    return unicodedata.category(c)[0] in "LMN" or c == "_" or (c == "-" and after != ">")


def _word_at(source: SourceFile, pos: int) -> tuple[Span, str]:
    """The name written around ``pos`` (letters, marks and digits of any script, `_` and
    `-` but not the `-` of `->`), and its span: what a non-ASCII letter at ``pos`` is
    part of. A keyword written right before it (`then終`) is not part of it.

    >>> _word_at(SourceFile("f", "speaker ab用户: human"), 10)[1]
    'ab用户'
    >>> _word_at(SourceFile("f", "sequence 用户->bot"), 9)[1]
    '用户'
    >>> _word_at(SourceFile("f", "when from a then終"), 16)[1]
    '終'
    """
    text = source.text
    start, end = pos, pos + 1
    while start > 0 and _name_char(text[start - 1], text[start]):
        start -= 1
    while end < len(text) and _name_char(text[end], text[end + 1 : end + 2]):
        end += 1
    if text[start:pos] in KEYWORDS:  # (the lexer took it as the keyword)
        start = pos
    return source.span(start, end), text[start:end]


#: what may follow a backslash in a string (JSON's escapes; ``u`` takes four hex digits)
_ESCAPES = set('"\\/bfnrtu')


def _string_error(source: SourceFile, pos: int) -> tuple[Span, str, str]:
    r"""What is wrong with the string that opens at ``pos`` (which the lexer refused):
    the first bad escape or raw control character in it (a span on that very place), or
    its missing end on the line (a span on its opening quote).

    >>> src = SourceFile("f", 'x "a\\qb" "c\td" "e')
    >>> [(_string_error(src, p)[0].column, _string_error(src, p)[1]) for p in (2, 9, 15)]
    [(5, 'invalid escape `\\q` in a string'), (12, 'a tab cannot be written as it is in a string'), (16, 'unterminated string')]
    """
    text, i = source.text, pos + 1
    while i < len(text) and text[i] not in '"\n\r':
        ch = text[i]
        if ch == "\\":
            nxt = text[i + 1 : i + 2]
            if nxt in ("", "\n", "\r"):
                break  # (a backslash at the end of the line: the string is not closed)
            hex_ok = nxt == "u" and re.fullmatch("[0-9a-fA-F]{4}", text[i + 2 : i + 6])
            if nxt not in _ESCAPES or (nxt == "u" and not hex_ok):
                if nxt == "u":
                    message = "`\\u` in a string takes four hex digits"
                elif nxt.isprintable() and not unicodedata.combining(nxt):
                    message = f"invalid escape `\\{nxt}` in a string"
                else:  # (a character that shows nothing, or draws over the backslash)
                    message = f"a backslash followed by U+{ord(nxt):04X} is no escape in a string"
                return (
                    source.span(i, i + 1 + len(nxt)),
                    message,
                    'strings are JSON strings: the escapes are `\\"`, `\\\\`, `\\/`, `\\b`, '
                    "`\\f`, `\\n`, `\\r`, `\\t` and `\\uXXXX` (four hex digits)",
                )
            i += 2
            continue
        if ch < " ":
            what = "a tab" if ch == "\t" else f"the control character U+{ord(ch):04X}"
            escape = "\\t" if ch == "\t" else f"\\u{ord(ch):04x}"
            return (
                source.span(i, i + 1),
                f"{what} cannot be written as it is in a string",
                f"write it as `{escape}`",
            )
        i += 1
    if i < len(text) and text[i] == '"':  # (closed: refused for another reason)
        return (
            source.span(pos, pos + 1),
            "invalid string",
            'strings are JSON strings: close them on the same line, escape `"` as `\\"`',
        )
    return (
        source.span(pos, pos + 1),
        "unterminated string",
        'close the string with `"` on the same line (a line break in it is written `\\n`)',
    )


def _syntax_error(source: SourceFile, err: UnexpectedInput) -> Diagnostic:
    help_text = None
    if isinstance(err, UnexpectedToken):
        unfinished = _unfinished(source, err) or _unclosed_block(source, err)
        if unfinished is not None:
            return unfinished
        tok = err.token
        if tok.type == "$END":
            start = len(source.text)
            span = source.span(start, start)
        else:
            start = tok.start_pos or 0
            span = source.span(start, start + max(1, len(str(tok))))
        found = _found_words(tok)
        expected = _expected_words(err.accepts or err.expected)
        message = f"unexpected {found}; expected {expected}"
        # (what the parser accepts there: Lark's `expected` may hold more, `nevr from a`)
        if str(tok) in KEYWORDS and "NAME" in (err.accepts or err.expected):
            help_text = (
                f"`{tok}` is a keyword; to use it as a name, write it in backquotes: `` `{tok}` ``"
            )
        elif tok.type == "$END":
            help_text = "the file ends in the middle of a statement; finish it or remove it"
        elif str(tok) == "=" and "EQUAL" not in err.expected:
            help_text = "compare with `==` (or `!=`); a single `=` assigns in `context` and `sets`"
        else:
            help_text = (
                _keyword_typo(source, start) or "see docs/language.md for the statement forms"
            )
    elif isinstance(err, UnexpectedCharacters):
        pos = err.pos_in_stream or 0
        char = source.text[pos] if pos < len(source.text) else ""
        span = source.span(pos, pos + 1)
        shown = repr(char) if not char.isprintable() or char == "" else f"`{char}`"
        if char == '"':
            span, message, help_text = _string_error(source, pos)
        elif char == "`" and source.text[pos + 1 : pos + 2] == "`":
            span = source.span(pos, pos + 2)
            message = "a name in backquotes cannot be empty"
            help_text = "write the name between the backquotes, or remove them"
        elif char == "`":
            message = "unterminated backquoted name"
            help_text = "close the name with a backquote on the same line"
        elif not char.isascii() and _name_char(char, ""):  # not ASCII: a letter, mark, digit
            span, word = _word_at(source, pos)
            message = f"unexpected character {shown} in the name `{word}`"
            help_text = (
                f"names are ASCII letters, digits, `_` and `-`; write any other name in "
                f"backquotes: did you mean `` `{word}` ``?"
            )
        else:
            message = f"unexpected character {shown}"
            help_text = "names are ASCII letters, digits, `_` and `-`; `#` starts a comment"
    elif isinstance(err, UnexpectedEOF):
        start = len(source.text)
        span = source.span(start, start)
        message = f"unexpected end of file; expected {_expected_words(set(err.expected))}"
    else:  # pragma: no cover - Lark has no other UnexpectedInput
        span = source.span(0, 0)
        message = str(err)
    return Diagnostic(E001, message, source.name, span, help=help_text)


_COMMENTS: ContextVar[_Starts | None] = ContextVar("flowc_comments", default=None)


class _Starts:
    """Where a parse keeps its comments: the offsets of their ``#`` (a Token each would
    be some 300 bytes, :class:`~flowc.dsl.comments.Comments`)."""

    def __init__(self, size: int) -> None:
        self.starts = offsets(size)

    def append(self, tok: Token) -> None:
        self.starts.append(tok.start_pos or 0)


def _collect_comment(tok: Token) -> Token:
    bucket = _COMMENTS.get()
    if bucket is not None:
        bucket.append(tok)
    return tok


def parse_lalr(source: SourceFile) -> tuple[n.Flow, tuple[Diagnostic, ...]]:
    """Parse a source file into a :class:`~flowc.dsl.nodes.Flow` with Lark's LALR parser.

    Never raises on user input: a syntax error is an E001 diagnostic and the
    returned flow is then empty.
    """
    text = source.text
    empty = n.Flow((), (), source.span(0, len(text)))
    bucket = _Starts(len(text))
    token = _COMMENTS.set(bucket)
    try:
        # the transformer (_Build) makes the start rule a list of statements
        statements: list[n.Statement] = _parser().parse(text)  # type: ignore[assignment]
    except UnexpectedInput as err:
        return empty, (_unquoted_if_not_flow(source, _syntax_error(source, err)),)
    except _BadToken as err:
        return empty, (
            Diagnostic(
                E001,
                f"{err.message}; {err.found}" if err.found else err.message,
                source.name,
                err.span,
                help=err.help,
            ),
        )
    except _TooDeep as err:
        return empty, (
            Diagnostic(
                E001,
                f"{err.what} nested more than {MAX_NESTING} levels deep",
                source.name,
                err.span,
                help="split the condition into several rules or custom conditions"
                if err.what == "condition"
                else "split the property into several properties",
            ),
        )
    finally:
        _COMMENTS.reset(token)
        _DEPTH.clear()
        _WRITTEN.clear()
    comments = Comments(source, bucket.starts)
    return n.Flow(tuple(statements), comments, source.span(0, len(text))), ()
