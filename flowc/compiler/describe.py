"""Compiled conditions and targets written back in `.flow` syntax.

One conversion (model -> AST) and the formatter's printers serve every place that
shows a compiled rule to a person — checker messages, diagram labels, run
transcripts — and ``flowc decompile``, so all of them write the same, valid text.

>>> from flowc.compiler import model as m
>>> condition_text(m.AllOf((m.FromSpeaker("agent-7"), m.Not(m.ContextEquals("k", 1)))),
...                {"agent-7": "drafter"})
'from drafter and context.k != 1'
>>> transition_text(m.Transition(m.ToolCalled("next"), m.TerminateTarget("done"), 3))
'when tool `next` then terminate "done" priority 3'
>>> rule_label(2, 14, "when from drafter then reviewer")
'rule 3, line 14: when from drafter then reviewer'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from flowc.compiler import model as m
from flowc.compiler import properties as pr
from flowc.dsl import nodes as n
from flowc.dsl.formatter import (
    format_condition,
    format_property,
    format_statement_line,
    format_target,
)
from flowc.source import NO_SPAN

S = NO_SPAN


class DecompileError(Exception):
    """Part of a graph has no `.flow` spelling; ``path`` (a JSON path) says where."""

    def __init__(self, path: str, message: str):
        self.path, self.message = path, message
        super().__init__(f"{path}: {message}")


class ModelToAst:
    """Compiled conditions/targets -> AST nodes.

    ``names`` maps agent ids back to speaker names. ``strict`` (for decompile)
    refuses what no `.flow` text can express, and writes an empty or one-item `all_of` /
    `any_of` as what it means; otherwise the closest text is used.
    ``on_custom(kind, name, args, path)`` sees every custom condition and target.
    """

    def __init__(
        self,
        names: Mapping[str, str] | None = None,
        *,
        strict: bool = False,
        on_custom: Callable[[str, str, dict[str, Any], str], None] | None = None,
    ):
        self.names = names or {}
        self.strict = strict
        self.on_custom = on_custom

    def name(self, value: str, path: str = "") -> n.Name:
        if self.strict and ("`" in value or "\n" in value or "\r" in value or not value):
            raise DecompileError(path, f"{json.dumps(value)} cannot be written as a .flow name")
        return n.Name(value, S)

    def speaker(self, agent_id: str, path: str = "") -> n.Name:
        return self.name(self.names.get(agent_id, agent_id), path)

    def args(self, args: dict[str, Any], path: str) -> tuple[n.Arg, ...]:
        return tuple(n.Arg(self.name(k, path), n.Value(v, S), S) for k, v in args.items())

    def cond(self, c: m.Condition, path: str = "") -> n.Cond:
        if isinstance(c, m.Always):
            return n.AlwaysCond(S)
        if isinstance(c, m.FromSpeaker):
            return n.FromCond((self.speaker(c.agent_id, path),), S)
        if isinstance(c, m.ToolCalled):
            return n.ToolCond(self.name(c.tool_name, path), S)
        if isinstance(c, m.ContextEquals):
            return n.ContextCond(self.name(c.key, path), "==", n.Value(c.value, S), S)
        if isinstance(c, m.Not):
            inner = c.condition
            if isinstance(inner, m.ContextEquals):
                return n.ContextCond(self.name(inner.key, path), "!=", n.Value(inner.value, S), S)
            return n.NotCond(self.cond(inner, f"{path}.args.condition"), S)
        if isinstance(c, m.AllOf | m.AnyOf):
            if not c.conditions:
                if not self.strict:  # as the graph writes it
                    return n.CallCond(n.Name(c.NAME, S), (), S)
                # what it means: an empty `all_of` always holds, an empty `any_of` never
                return n.AlwaysCond(S) if isinstance(c, m.AllOf) else n.NotCond(n.AlwaysCond(S), S)
            if isinstance(c, m.AnyOf) and all(isinstance(x, m.FromSpeaker) for x in c.conditions):
                speakers = tuple(
                    self.speaker(x.agent_id, path)  # type: ignore[union-attr]
                    for x in c.conditions
                )
                return n.FromCond(speakers, S)
            items = tuple(
                self.cond(x, f"{path}.args.conditions[{i}]") for i, x in enumerate(c.conditions)
            )
            if len(items) == 1:
                return items[0]
            return n.AndCond(items, S) if isinstance(c, m.AllOf) else n.OrCond(items, S)
        if self.on_custom is not None:
            self.on_custom("condition", c.name, c.args, path)
        return n.CallCond(self.name(c.name, path), self.args(c.args, path), S)

    def target(self, t: m.Target, path: str = "") -> n.Target:
        if isinstance(t, m.AgentTarget):
            return n.SpeakerTarget(self.speaker(t.agent_id, path), S)
        if isinstance(t, m.RoundRobinTarget):
            return n.NextTarget(S)
        if isinstance(t, m.StayTarget):
            return n.StayTarget(S)
        if isinstance(t, m.RevertToInitiatorTarget):
            return n.InitiatorTarget(S)
        if isinstance(t, m.TerminateTarget):
            return n.TerminateTarget(n.Str(t.reason, S), S)
        if self.on_custom is not None:
            self.on_custom("target", t.name, t.args, path)
        return n.CallTarget(self.name(t.name, path), self.args(t.args, path), S)

    def rule(self, t: m.Transition, path: str = "") -> n.Rule:
        priority = n.Priority(t.priority, S) if t.priority != 0 else None
        cond = self.cond(t.when, f"{path}.when")
        if self.strict and isinstance(t.when, m.AllOf | m.AnyOf):
            cond = _buried(cond)
        return n.Rule(cond, self.target(t.then, f"{path}.then"), priority, S)

    # properties -----------------------------------------------------------

    def expression(self, e: Any) -> n.Cond:
        """A property's expression (:mod:`flowc.compiler.properties`): the conditions'
        atoms and composites, and ``ends``, ``turn`` and ``previous``."""
        if isinstance(e, pr.Ends):
            return n.EndsCond(None if e.reason is None else n.Str(e.reason, S), S)
        if isinstance(e, pr.TurnIs):
            return n.TurnCond(e.op, e.number, S)
        if isinstance(e, pr.Previous):
            return n.PreviousCond(self.expression(e.expr), S)
        if isinstance(e, m.Not) and not isinstance(e.condition, m.ContextEquals):
            return n.NotCond(self.expression(e.condition), S)
        if isinstance(e, m.AllOf | m.AnyOf) and len(e.conditions) > 1:
            if isinstance(e, m.AnyOf) and all(isinstance(x, m.FromSpeaker) for x in e.conditions):
                return self.cond(e)  # `from a, b`
            items = tuple(self.expression(x) for x in e.conditions)
            return n.AndCond(items, S) if isinstance(e, m.AllOf) else n.OrCond(items, S)
        return self.cond(e)

    def property(self, prop: pr.Property) -> n.PropertyDecl:
        x = self.expression
        pat = prop.pattern
        within = getattr(pat, "within", None)
        w = n.Within(within, S) if within is not None else None
        pattern: n.Pattern
        if isinstance(pat, pr.Never):
            pattern = n.NeverPattern(x(pat.p), S)
        elif isinstance(pat, pr.Always):
            pattern = n.AlwaysPattern(x(pat.p), S)
        elif isinstance(pat, pr.Eventually):
            pattern = n.EventuallyPattern(x(pat.p), w, S)
        elif isinstance(pat, pr.AtMost):
            pattern = n.AtMostPattern(x(pat.p), pat.times, S)
        elif isinstance(pat, pr.OnlyAfter):
            pattern = n.OnlyAfterPattern(x(pat.p), x(pat.s), S)
        else:
            pattern = n.RespondsPattern(x(pat.p), x(pat.s), w, S)
        sc = prop.scope
        scope: n.Scope | None = None
        if isinstance(sc, pr.Before):
            scope = n.BeforeScope(x(sc.r), S)
        elif isinstance(sc, pr.After):
            scope = n.AfterScope(x(sc.q), S)
        elif isinstance(sc, pr.Between):
            scope = n.BetweenScope(x(sc.q), x(sc.r), S)
        elif isinstance(sc, pr.AfterUntil):
            scope = n.AfterUntilScope(x(sc.q), x(sc.r), S)
        return n.PropertyDecl(self.name(prop.name), pattern, scope, S)


def _buried(cond: n.Cond) -> n.Cond:
    """A composite's `tool` condition that its `.flow` spelling would bring to the top
    of a rule (a one-item `all_of`, an alternative of a top-level `any_of`), kept inside
    one as `tool t and always`: AG2 1.2.1 routes on a `tool` condition only at the top.
    """
    if isinstance(cond, n.ToolCond):
        return n.AndCond((cond, n.AlwaysCond(S)), S)
    if isinstance(cond, n.OrCond):
        return n.OrCond(tuple(_buried(c) for c in cond.items), S)
    return cond


def expression_text(expr: pr.Expr, names: Mapping[str, str] | None = None) -> str:
    """A property's expression in `.flow` syntax; ``names`` maps agent ids to speakers.

    >>> expression_text(m.AllOf((m.FromSpeaker("bot"), pr.Previous(m.FromSpeaker("bot")))))
    'from bot and previous from bot'
    """
    return format_condition(ModelToAst(names).expression(expr))


def property_text(prop: pr.Property, names: Mapping[str, str] | None = None) -> str:
    """A property (built in code, or lowered) as a ``property`` statement.

    >>> property_text(pr.Property("quick", pr.Eventually(pr.Ends("done"), 1),
    ...                           pr.After(m.ToolCalled("escalate"))))
    'property quick: eventually ends "done" within 1 turn after tool escalate'
    """
    return format_property(ModelToAst(names).property(prop))


def condition_text(cond: m.Condition, names: Mapping[str, str] | None = None) -> str:
    """A compiled condition in `.flow` syntax; ``names`` maps agent ids to speakers."""
    return format_condition(ModelToAst(names).cond(cond))


def target_text(target: m.Target, names: Mapping[str, str] | None = None) -> str:
    """A compiled target in `.flow` syntax: ``reviewer``, ``next``, ``terminate "done"``."""
    return format_target(ModelToAst(names).target(target))


def transition_text(transition: m.Transition, names: Mapping[str, str] | None = None) -> str:
    """A compiled transition as a rule: ``when from a then b priority 2``."""
    return format_statement_line(ModelToAst(names).rule(transition))


_UNKNOWN: Any = object()


class Describer:
    """:func:`condition_text`, :func:`target_text` and :func:`transition_text` for one
    ``names`` mapping, each condition and target written once: the checker names
    thousands of rules of a large flow, which repeat a few conditions and targets.

    A text is remembered under a key that tells apart what ``==`` does not (``1``,
    ``1.0`` and ``true`` are equal in Python but written differently); a custom call
    (its arguments may be any JSON) is written afresh each time.

    >>> d = Describer({"agent-7": "drafter"})
    >>> t = m.Transition(m.AllOf((m.FromSpeaker("agent-7"), m.Not(m.ContextEquals("k", 1)))),
    ...                  m.TerminateTarget("done"), -1)
    >>> d.transition(t) == transition_text(t, {"agent-7": "drafter"})
    True
    >>> d.condition(m.ContextEquals("k", 1)), d.condition(m.ContextEquals("k", True))
    ('context.k == 1', 'context.k == true')
    """

    def __init__(self, names: Mapping[str, str] | None = None):
        self.names = names
        self._conds: dict[Any, str] = {}
        self._targets: dict[Any, str] = {}

    def condition(self, cond: m.Condition, key: Any = _UNKNOWN) -> str:
        """``cond`` as text; ``key``: its :func:`condition_key`, when the caller has it."""
        if key is _UNKNOWN:
            key = condition_key(cond)
        if key is None:
            return condition_text(cond, self.names)
        text = self._conds.get(key)
        if text is None:
            text = self._conds[key] = condition_text(cond, self.names)
        return text

    def target(self, target: m.Target) -> str:
        key = _target_key(target)
        if key is None:
            return target_text(target, self.names)
        text = self._targets.get(key)
        if text is None:
            text = self._targets[key] = target_text(target, self.names)
        return text

    def transition(self, transition: m.Transition, when_key: Any = _UNKNOWN) -> str:
        """The same text as :func:`transition_text`."""
        return self.rule(transition.when, transition.then, transition.priority, when_key)

    def rule(
        self, when: m.Condition, then: m.Target, priority: int, when_key: Any = _UNKNOWN
    ) -> str:
        """The rule ``when`` / ``then`` / ``priority`` as :func:`transition_text` writes it
        (one line: `when`, the condition, `then`, the target, a priority other than 0)."""
        text = f"when {self.condition(when, when_key)} then {self.target(then)}"
        return text + (f" priority {priority}" if priority != 0 else "")


#: JSON scalars whose type and ``==`` together decide how they are written
_EXACT = (str, int, bool, type(None))


def _scalar(value: Any) -> Any:
    """``value`` as part of a key (None: not a scalar, no key)."""
    kind = type(value)
    if kind in _EXACT:
        return (kind, value)
    if kind is float:
        return (float, repr(value))  # -0.0 == 0.0, but each is written as it is
    return None


def _target_key(target: m.Target) -> Any:
    kind = type(target)
    if kind is m.AgentTarget:
        agent = target.agent_id  # type: ignore[union-attr]
        return ("agent", agent) if type(agent) is str else None
    if kind is m.TerminateTarget:
        reason = target.reason  # type: ignore[union-attr]
        return ("terminate", reason) if type(reason) is str else None
    if kind is m.RoundRobinTarget or kind is m.StayTarget or kind is m.RevertToInitiatorTarget:
        return kind
    return None


def condition_key(cond: m.Condition) -> Any:
    """A hashable key equal for two conditions only when they are written alike, or None
    (a custom call, or a value that is not a JSON scalar). Two conditions with one key
    are the same condition in every respect (``==`` alone would take ``1`` for ``true``).

    >>> condition_key(m.ContextEquals("k", 1)) == condition_key(m.ContextEquals("k", True))
    False
    """
    kind = type(cond)  # the model's classes have no subclasses
    if kind is m.FromSpeaker:
        agent = cond.agent_id  # type: ignore[union-attr]
        return ("from", agent) if type(agent) is str else None
    if kind is m.ToolCalled:
        tool = cond.tool_name  # type: ignore[union-attr]
        return ("tool", tool) if type(tool) is str else None
    if kind is m.ContextEquals:
        key, value = cond.key, cond.value  # type: ignore[union-attr]
        scalar = _scalar(value)
        return None if scalar is None or type(key) is not str else ("ctx", key, scalar)
    if kind is m.Not:
        inner = condition_key(cond.condition)  # type: ignore[union-attr]
        return None if inner is None else ("not", inner)
    if kind is m.AllOf or kind is m.AnyOf:
        parts = []
        for c in cond.conditions:  # type: ignore[union-attr]
            k = condition_key(c)
            if k is None:
                return None
            parts.append(k)
        return (cond.NAME, tuple(parts))  # type: ignore[union-attr]
    if kind is m.Always:
        return ("always",)
    return None


# ── naming a rule ─────────────────────────────────────────────────────────────
#
# Every output names a rule the same way: ``rule N, line L``. ``N`` is the rule's
# position in the compiled ``transitions`` list, counted from 1 — the order rules are
# written in the file (a rule with `or` branches, `from a, b, c`, or a
# ``sequence a -> b -> c`` gives one compiled rule per branch or step, each with its
# own number), so ``rule N`` is ``transitions[N-1]`` of the compiled graph and of a
# JSON graph. It is not the evaluation order: rules are tried by ascending
# ``priority``, then in this order, and adding a priority renumbers nothing.


def rule_ref(index: int, line: int | None = None) -> str:
    """``rule 3, line 14`` for compiled transition ``index`` (0-based) written on ``line``.

    >>> rule_ref(0), rule_ref(2, 14)
    ('rule 1', 'rule 3, line 14')
    """
    return f"rule {index + 1}, line {line}" if line is not None else f"rule {index + 1}"


def rule_label(index: int, line: int | None, text: str = "", *, code: bool = False) -> str:
    """``rule 3, line 14: when from drafter then reviewer`` — the one way every output
    (run, log, test, check, render, coverage) names a rule. ``code`` quotes the text for
    a sentence: ``rule 3, line 14 (`when from drafter then reviewer`)``.

    >>> rule_label(0, None, "when from a then b", code=True)
    'rule 1 (`when from a then b`)'
    """
    ref = rule_ref(index, line)
    if not text:
        return ref
    return f"{ref} (`{text}`)" if code else f"{ref}: {text}"
