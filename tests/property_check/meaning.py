"""What a property means on one complete run, read directly off the docstring of
:mod:`flowc.compiler.properties` (the contract), independently of flowc's checker.

Nothing here is an automaton: each expression is evaluated on every turn of the whole
run (a truth vector), the scope cuts the run into intervals of turns from those vectors,
and the pattern is judged on each interval by counting and searching turns. A property
holds on a run when its pattern holds on every interval its scope cuts.

For the differential test, a violated run also has the turn at which its violation
becomes *definite*: the first turn *t* after which what the run has shown so far (turns
1..t, and whether it ends after *t*) is enough to know that one of its intervals fails,
whatever the run does next. Per interval [a, b]:

- it is *known to exist* from ``opened``: the first turn where Q holds for ``After`` and
  ``AfterUntil`` (the interval opens there whether or not an R follows), turn 1 for
  ``Globally``, and the turn r where R holds for ``Before`` and ``Between`` (without that
  R there is no interval at all);
- its *end is known* at ``closed``: the turn r where R holds (b = r - 1), or n when the
  interval runs to the end of the run (the run shows it ends after n);
- a failure at a turn of the interval (``never``, ``always``, ``at most``'s N+1-th turn,
  ``only after``'s P without S before it) is definite at max(that turn, ``opened``);
- ``eventually`` without a P among the interval's first N turns (``within N``) is
  definite at max(a + N - 1, ``opened``) when the interval reaches its N-th turn, else
  (and always without ``within``) at ``closed``;
- a P at turn i with no S in (i, i + N] (``within N``) is definite at max(i + N,
  ``opened``) when i + N is in the interval, else (and always without ``within``) at
  ``closed``.

The run's violation turn is the least over its failing intervals. Each is decided by the
turns up to it alone, so every run sharing those turns (and the ending-or-not after the
last) fails too: the least violation turn over all runs of a flow is the length of a
shortest run prefix that shows the property broken, which is what the checker's
counterexample must be.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from flowc.compiler import model as m
from flowc.compiler import properties as p


class TurnLike(Protocol):
    """What the meaning reads of one turn (the enumerator's records have it)."""

    @property
    def speaker(self) -> str: ...
    @property
    def tool(self) -> str | None: ...
    @property
    def values(self) -> Mapping[str, Any]: ...  # the context after the turn's writes
    @property
    def ended(self) -> str | None: ...  # the close reason when the run ends after it


@attrs.frozen
class T:
    """A hand-made turn (for the unit tests)."""

    speaker: str
    tool: str | None = None
    values: Mapping[str, Any] = attrs.field(factory=dict)
    ended: str | None = None


_OPS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

# ── expressions: a truth value per turn ───────────────────────────────────────


def truth(expr: Any, run: Sequence[TurnLike]) -> list[bool]:
    """``out[t]`` is whether ``expr`` holds at turn t (1..n); ``out[0]`` is unused."""
    n = len(run)
    if isinstance(expr, m.Not):
        inner = truth(expr.condition, run)
        return [False] + [not inner[t] for t in range(1, n + 1)]
    if isinstance(expr, m.AllOf | m.AnyOf):
        parts = [truth(c, run) for c in expr.conditions]
        combine = all if isinstance(expr, m.AllOf) else any
        return [False] + [combine(v[t] for v in parts) for t in range(1, n + 1)]
    if isinstance(expr, p.Previous):
        inner = truth(expr.expr, run)
        return [False, False] + [inner[t - 1] for t in range(2, n + 1)]
    if isinstance(expr, m.FromSpeaker):
        return [False] + [turn.speaker == expr.agent_id for turn in run]
    if isinstance(expr, m.ToolCalled):
        return [False] + [turn.tool is not None and turn.tool == expr.tool_name for turn in run]
    if isinstance(expr, m.ContextEquals):
        # as a rule compares: Python equality, a missing key reads as null
        return [False] + [bool(turn.values.get(expr.key) == expr.value) for turn in run]
    if isinstance(expr, p.Ends):
        return [False] + [
            turn.ended is not None and expr.reason in (None, turn.ended) for turn in run
        ]
    if isinstance(expr, p.TurnIs):
        op = _OPS[expr.op]
        return [False] + [op(t, expr.number) for t in range(1, n + 1)]
    raise TypeError(f"not a property expression: {expr!r}")


# ── scopes: intervals ─────────────────────────────────────────────────────────


@attrs.frozen
class Interval:
    """Turns [a, b] (empty when a > b); known to exist from turn ``opened``, its end
    known at turn ``closed``."""

    a: int
    b: int
    opened: int
    closed: int


def _first(holds: list[bool], start: int) -> int | None:
    """The first turn >= start where the vector holds."""
    for t in range(start, len(holds)):
        if holds[t]:
            return t
    return None


def intervals(scope: Any, run: Sequence[TurnLike]) -> list[Interval]:
    n = len(run)
    if isinstance(scope, p.Globally):
        return [Interval(1, n, 1, n)]
    if isinstance(scope, p.Before):
        r = _first(truth(scope.r, run), 1)
        return [] if r is None else [Interval(1, r - 1, r, r)]
    if isinstance(scope, p.After):
        q = _first(truth(scope.q, run), 1)
        return [] if q is None else [Interval(q, n, q, n)]
    if isinstance(scope, p.Between | p.AfterUntil):
        qs, rs = truth(scope.q, run), truth(scope.r, run)
        out = []
        for q in range(1, n + 1):
            if not qs[q] or rs[q]:
                continue
            r = _first(rs, q + 1)
            if r is not None:
                out.append(Interval(q, r - 1, r if isinstance(scope, p.Between) else q, r))
            elif isinstance(scope, p.AfterUntil):
                out.append(Interval(q, n, q, n))
        return out
    raise TypeError(f"not a scope: {scope!r}")


# ── patterns: judged on one interval ──────────────────────────────────────────


def _turns(iv: Interval) -> range:
    return range(iv.a, iv.b + 1)


def failure(pattern: Any, iv: Interval, ps: list[bool], ss: list[bool] | None) -> int | None:
    """None when the pattern holds on the interval, else the turn at which its failure
    is definite (see the module's docstring); ``ps`` and ``ss`` are P's and S's truth
    vectors on the run."""
    if isinstance(pattern, p.Never):
        bad = [i for i in _turns(iv) if ps[i]]
        return max(bad[0], iv.opened) if bad else None
    if isinstance(pattern, p.Always):
        bad = [i for i in _turns(iv) if not ps[i]]
        return max(bad[0], iv.opened) if bad else None
    if isinstance(pattern, p.Eventually):
        n = pattern.within
        last = iv.b if n is None else min(iv.b, iv.a + n - 1)
        if any(ps[i] for i in range(iv.a, last + 1)):
            return None
        if n is not None and iv.a + n - 1 <= iv.b:
            return max(iv.a + n - 1, iv.opened)
        return iv.closed
    if isinstance(pattern, p.AtMost):
        hits = [i for i in _turns(iv) if ps[i]]
        return max(hits[pattern.times], iv.opened) if len(hits) > pattern.times else None
    assert ss is not None
    if isinstance(pattern, p.OnlyAfter):
        for i in _turns(iv):
            if ps[i] and not any(ss[j] for j in range(iv.a, i + 1)):
                return max(i, iv.opened)
        return None
    if isinstance(pattern, p.Responds):
        n = pattern.within
        found: list[int] = []
        for i in _turns(iv):
            if not ps[i]:
                continue
            deadline = iv.b if n is None else min(iv.b, i + n)
            if any(ss[j] for j in range(i + 1, deadline + 1)):
                continue
            found.append(max(i + n, iv.opened) if n is not None and i + n <= iv.b else iv.closed)
        return min(found) if found else None
    raise TypeError(f"not a pattern: {pattern!r}")


def violation_turn(prop: p.Property, run: Sequence[TurnLike]) -> int | None:
    """None when the property holds on the complete ``run``, else the turn at which its
    violation is definite."""
    assert run, "a run has its kickoff"
    pattern = prop.pattern
    ps = truth(pattern.p, run)
    ss = truth(pattern.s, run) if isinstance(pattern, p.OnlyAfter | p.Responds) else None
    found = [failure(pattern, iv, ps, ss) for iv in intervals(prop.scope, run)]
    bad = [t for t in found if t is not None]
    return min(bad) if bad else None


def holds(prop: p.Property, run: Sequence[TurnLike]) -> bool:
    return violation_turn(prop, run) is None
