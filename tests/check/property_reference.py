"""A reference for properties, written from the meaning in ``flowc/compiler/properties.py``'s
docstring and nothing else: every complete run of a small flow is enumerated (from the
explorer's turns), each property is evaluated on each run by computing its intervals
and judging each, and the turn where a run breaks it is worked out per interval. It
shares no code with the checker's automaton (:mod:`flowc.compiler.monitor`).

Only flows with ``max_turns`` (every run is finite).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.analysis.explore import KICKOFF, StateSpace
from flowc.compiler.analysis.system import OTHER, UNSET
from flowc.compiler.properties import (
    After,
    AfterUntil,
    Always,
    AtMost,
    Before,
    Between,
    Ends,
    Eventually,
    Globally,
    Never,
    OnlyAfter,
    Previous,
    Property,
    Responds,
    TurnIs,
)


@attrs.frozen
class Letter:
    """One turn: who spoke (agent id), the tool, the abstract valuation after it, the
    close reason when the run ends after it (None: goes on; "" : a reason no property
    names)."""

    speaker: str
    tool: str | None
    val: tuple[int, ...]
    ends: str | None


def runs(space: StateSpace, reasons: list[str]) -> Iterator[list[Letter]]:
    """Every complete run (to an end, or to ``max_turns``)."""
    system = space.system
    cap = system.max_turns
    assert cap is not None

    def go(key: Any, prefix: list[Letter]) -> Iterator[list[Letter]]:
        speaker = system.start if key == KICKOFF else key[0]
        for step in space.explorer.steps(key):
            nxt = space.explorer.next_key(step)
            letter = Letter(system.ids[speaker], step.action.tool, step.after, None)
            if nxt[0] == "end":
                options = [nxt[1]] if nxt[1] is not None else [*reasons, ""]
                for reason in options:
                    yield [*prefix, attrs.evolve(letter, ends=reason)]
            elif len(prefix) + 1 == cap:
                yield [*prefix, attrs.evolve(letter, ends="max_turns")]
            else:
                yield from go(nxt, [*prefix, letter])

    yield from go(KICKOFF, [])


class Judge:
    """Evaluates one property on complete runs of one system."""

    def __init__(self, space: StateSpace, prop: Property):
        self.system = space.system
        self.prop = prop

    def holds(self, expr: Any, run: list[Letter], t: int) -> bool:
        """Whether ``expr`` holds at turn ``t`` (1-based) of ``run``."""
        x = run[t - 1]
        if isinstance(expr, m.FromSpeaker):
            return x.speaker == expr.agent_id
        if isinstance(expr, m.ToolCalled):
            return x.tool == expr.tool_name
        if isinstance(expr, m.ContextEquals):
            k = self.system.keys.index(expr.key)
            value = x.val[k]
            if value == UNSET:
                return expr.value is None
            if value == OTHER:
                return False
            return bool(self.system.literals[k][value - 2] == expr.value)
        if isinstance(expr, Ends):
            return x.ends is not None and (expr.reason is None or x.ends == expr.reason)
        if isinstance(expr, TurnIs):
            return {
                "==": t == expr.number,
                "!=": t != expr.number,
                "<": t < expr.number,
                "<=": t <= expr.number,
                ">": t > expr.number,
                ">=": t >= expr.number,
            }[expr.op]
        if isinstance(expr, Previous):
            return t > 1 and self.holds(expr.expr, run, t - 1)
        if isinstance(expr, m.Not):
            return not self.holds(expr.condition, run, t)
        if isinstance(expr, m.AllOf):
            return all(self.holds(c, run, t) for c in expr.conditions)
        if isinstance(expr, m.AnyOf):
            return any(self.holds(c, run, t) for c in expr.conditions)
        raise AssertionError(expr)

    def intervals(self, run: list[Letter]) -> list[tuple[int, int, bool]]:
        """The scope's intervals [a, b], and whether an R closed each (else the run's end)."""
        n = len(run)
        scope = self.prop.scope
        if isinstance(scope, Globally):
            return [(1, n, False)]
        if isinstance(scope, Before):
            for r in range(1, n + 1):
                if self.holds(scope.r, run, r):
                    return [(1, r - 1, True)]
            return []
        if isinstance(scope, After):
            for q in range(1, n + 1):
                if self.holds(scope.q, run, q):
                    return [(q, n, False)]
            return []
        assert isinstance(scope, Between | AfterUntil)
        out = []
        for q in range(1, n + 1):
            if self.holds(scope.q, run, q) and not self.holds(scope.r, run, q):
                r = next((r for r in range(q + 1, n + 1) if self.holds(scope.r, run, r)), None)
                if r is not None:
                    out.append((q, r - 1, True))
                elif isinstance(scope, AfterUntil):
                    out.append((q, n, False))
        return out

    def broken(self, run: list[Letter]) -> int | None:
        """The turn where ``run`` breaks the property (None: it holds on the run)."""
        best: int | None = None
        for a, b, closed in self.intervals(run):
            witness = self.witness(run, a, b)
            if witness is None:
                continue
            turn, definite = witness
            if closed and (not definite or isinstance(self.prop.scope, Before | Between)):
                turn = b + 1  # known only when R closes the interval
            best = turn if best is None else min(best, turn)
        return best

    def witness(self, run: list[Letter], a: int, b: int) -> tuple[int, bool] | None:
        """Whether the pattern fails on [a, b]: the turn that shows it, and whether that
        turn shows it whatever comes later (else only the interval's end does)."""
        pat = self.prop.pattern
        turns = range(a, b + 1)

        def p(t: int) -> bool:
            return self.holds(pat.p, run, t)

        if isinstance(pat, Never):
            return next(((t, True) for t in turns if p(t)), None)
        if isinstance(pat, Always):
            return next(((t, True) for t in turns if not p(t)), None)
        if isinstance(pat, Eventually):
            first = turns if pat.within is None else range(a, min(b, a + pat.within - 1) + 1)
            if any(p(t) for t in first):
                return None
            if pat.within is not None and b >= a + pat.within - 1:
                return a + pat.within - 1, True
            return b, False
        if isinstance(pat, AtMost):
            seen = 0
            for t in turns:
                if p(t):
                    seen += 1
                    if seen > pat.times:
                        return t, True
            return None
        if isinstance(pat, OnlyAfter):
            for i in turns:
                if p(i) and not any(self.holds(pat.s, run, j) for j in range(a, i + 1)):
                    return i, True
            return None
        assert isinstance(pat, Responds)
        best: tuple[int, bool] | None = None
        for i in turns:
            if not p(i):
                continue
            last = b if pat.within is None else min(b, i + pat.within)
            if any(self.holds(pat.s, run, j) for j in range(i + 1, last + 1)):
                continue
            found = (
                (i + pat.within, True)
                if pat.within is not None and i + pat.within <= b
                else (b, False)
            )
            if best is None or found[0] < best[0]:
                best = found
        return best


def reference(space: StateSpace, prop: Property, reasons: list[str]) -> int | None:
    """The fewest turns of a run that breaks ``prop`` (where it breaks), or None when
    every run keeps it."""
    judge = Judge(space, prop)
    best: int | None = None
    for run in runs(space, reasons):
        turn = judge.broken(run)
        if turn is not None and (best is None or turn < best):
            best = turn
    return best
