"""Watching runs for properties: a property's pattern under its scope as a small
deterministic automaton over a run's turns (the meaning of :mod:`flowc.compiler.properties`).

The same automaton serves the checker, which steps it over abstract turns of every run
(:mod:`flowc.compiler.analysis.properties`), and whatever watches one concrete run
(``flowc test``'s scenarios; ``flowc run``, ``resume`` and the workers, through
:mod:`flowc.runtime.guard`): a turn is given as the set of the property's
basic atoms that hold on it (a bit mask over an :class:`AtomTable`), its number, and
whether the run ends after it.

A monitor's state (:data:`MState`) is finite: the previous turn's values of the
``previous`` subexpressions, the scope's phase, and the open intervals' pattern states,
as a frozen set, with every counter capped (``within N`` counts at most N turns, ``at
most N times`` at most N + 1). Intervals open at once (``after Q before R``, ``after Q
until R``) are closed by the same ``R`` and see the same turns, and each pattern's states
are ordered so that those turns keep the order and a higher state breaks no later: the
set keeps only its highest state, which decides for all of them. The turn number is not in it: a caller that
needs it (``turn OP N``) passes it, and the checker keeps it (capped) beside the state.

>>> from flowc.compiler import model as m
>>> from flowc.compiler.properties import Never, Property
>>> watch = RunWatch([Property("no_publish", Never(m.ToolCalled("publish")))])
>>> watch.turn(Observation("user", None, {}, 1))
()
>>> [b.prop.name for b in watch.turn(Observation("bot", "publish", {}, 2))]
['no_publish']
>>> watch.turn(Observation("bot", "publish", {}, 3))  # reported once
()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

import attrs

from flowc.compiler import model as m
from flowc.compiler.properties import (
    After,
    AfterUntil,
    Always,
    AtMost,
    Before,
    Between,
    Ends,
    Eventually,
    Expr,
    Globally,
    Never,
    OnlyAfter,
    Previous,
    Property,
    Responds,
    TurnIs,
    expressions,
)
from flowc.diagnostics import counted, elide
from flowc.dsl.names import format_name

__all__ = [
    "AtomTable",
    "Broken",
    "MState",
    "Monitor",
    "Observation",
    "PropertyError",
    "RunWatch",
    "StepResult",
    "claim_text",
    "explain",
    "expr_key",
    "expr_text",
    "walk",
]

#: a basic atom: what one bit of a turn's mask says
BasicAtom: TypeAlias = m.FromSpeaker | m.ToolCalled | m.ContextEquals | Ends

#: a monitor's state: (previous values, scope phase, open intervals' pattern states)
MState: TypeAlias = tuple[tuple[bool, ...], int, frozenset[int]]

#: a pattern state that is broken for good (the interval is violated when it is judged)
BAD = -1


class PropertyError(ValueError):
    """A property the checker cannot read (built in code with a custom condition, say)."""


def walk(expr: Any) -> Iterable[Any]:
    """An expression and every expression inside it."""
    yield expr
    if isinstance(expr, m.AllOf | m.AnyOf):
        for c in expr.conditions:
            yield from walk(c)
    elif isinstance(expr, m.Not):
        yield from walk(expr.condition)
    elif isinstance(expr, Previous):
        yield from walk(expr.expr)


def expr_key(expr: Any) -> Any:
    """A key for an expression in a dict or a set: the expression itself, or, when it holds
    a value that does not hash (``context.k == [1, 2]``), its ``repr``."""
    try:
        hash(expr)
    except TypeError:
        return ("unhashable", repr(expr))
    return expr


class AtomTable:
    """The basic atoms of some properties, one bit each (shared by their monitors)."""

    def __init__(self) -> None:
        self.atoms: list[BasicAtom] = []
        self.index: dict[Any, int] = {}

    def bit(self, atom: BasicAtom) -> int:
        key = expr_key(atom)
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.atoms)
            self.atoms.append(atom)
        return 1 << found

    def mask_of(self, turn: Observation) -> int:
        """The atoms that hold on a concrete turn (as a rule's condition reads it: a key
        that is not set compares equal to ``null`` only)."""
        mask = 0
        context = turn.context
        for i, atom in enumerate(self.atoms):
            if isinstance(atom, m.FromSpeaker):
                hit = atom.agent_id == turn.speaker
            elif isinstance(atom, m.ToolCalled):
                hit = atom.tool_name == turn.tool
            elif isinstance(atom, m.ContextEquals):
                hit = m.values_equal(context.get(atom.key), atom.value)
            else:
                hit = turn.ended and (atom.reason is None or atom.reason == turn.reason)
            if hit:
                mask |= 1 << i
        return mask


Fn: TypeAlias = Callable[[int, tuple[bool, ...], int], bool]


@attrs.frozen
class StepResult:
    """What one turn does to a monitor: ``"next"`` (go on in ``state``), ``"done"`` (the
    property can no longer be violated on this run) or ``"violated"`` (``why``: ``"bad"``
    broken on this turn, ``"close"`` an ``R`` closed a broken interval, ``"end"`` the run
    ended with an interval broken or still waiting)."""

    kind: Literal["next", "done", "violated"]
    state: MState | None = None
    why: str = ""
    #: the pattern state that was judged (for the explanation)
    judged: int = 0
    #: for a run that never ends: an obligation pending before this turn is still
    #: unanswered after it (a ``eventually`` / ``after P, S`` without ``within``)
    kept: bool = False


class Monitor:
    """The automaton of one property; see the module docstring.

    >>> from flowc.compiler.properties import Eventually, Property
    >>> table = AtomTable()
    >>> mon = Monitor(Property("ends_ok", Eventually(Ends("ok"))), table)
    >>> r = mon.step(mon.initial, 0, 1, False)
    >>> r.kind, mon.step(r.state, 0, 2, True).kind
    ('next', 'violated')
    >>> mon.step(r.state, table.bit(Ends("ok")) | table.bit(Ends()), 2, True).kind
    'done'
    """

    def __init__(self, prop: Property, table: AtomTable, max_turns: int | None = None):
        self.prop = prop
        self.table = table
        #: the flow's cap, when the runs watched have at most that many turns (the checker):
        #: a ``turn OP N`` with N past it has one value on every turn, a ``within N`` or
        #: ``at most N`` with N at or past it cannot be reached, so none of them is counted
        self.max_turns = max_turns
        self._prev: list[Previous] = []
        self._prev_index: dict[Any, int] = {}
        self.turn_cap = 0  # the turn from which every `turn OP N` is constant (0: none)
        for expr in expressions(prop):
            for e in walk(expr):
                if isinstance(e, Previous) and expr_key(e) not in self._prev_index:
                    self._prev_index[expr_key(e)] = len(self._prev)
                    self._prev.append(e)
                elif isinstance(e, TurnIs) and not self._past_cap(e.number):
                    self.turn_cap = max(self.turn_cap, e.number + 1)
        pat, scope = prop.pattern, prop.scope
        self.pattern = pat
        self.scope = scope
        self._p = self._compile(pat.p)
        self._s = self._compile(pat.s) if isinstance(pat, OnlyAfter | Responds) else _false
        self._q = (
            self._compile(scope.q) if isinstance(scope, After | Between | AfterUntil) else _false
        )
        self._r = (
            self._compile(scope.r) if isinstance(scope, Before | Between | AfterUntil) else _false
        )
        self._prev_fns = tuple(self._compile(p.expr) for p in self._prev)
        within: int | None = getattr(pat, "within", None)
        # within N >= max_turns: an interval has fewer turns than N, so it is no limit
        self.within = None if within is not None and self._past_cap(within + 1) else within
        self.times: int = pat.times if isinstance(pat, AtMost) else 0
        #: ``at most N`` with N >= max_turns: no run has more turns than N to count
        self.uncounted = isinstance(pat, AtMost) and self._past_cap(self.times + 1)
        self.intervals_many = isinstance(scope, Between | AfterUntil)
        #: whether the run's end judges the open intervals (Globally, After, AfterUntil)
        self.end_judges = isinstance(scope, Globally | After | AfterUntil)
        #: whether a broken interval is a violation at once (it will be judged whatever comes)
        self.bad_is_final = self.end_judges
        #: whether a run that never ends can break it (an obligation left pending for ever)
        self.can_pend = self.end_judges and (
            isinstance(pat, Eventually | Responds) and self.within is None
        )
        #: whether a run cut by ``max_turns`` can break it differently than its prefix:
        #: the run's end judges a pending obligation, or ``ends`` is read
        self.reads_ends = any(isinstance(e, Ends) for expr in expressions(prop) for e in walk(expr))
        self.end_sensitive = self.reads_ends or (
            self.end_judges and isinstance(pat, Eventually | Responds)
        )
        phase = 0 if isinstance(scope, After) else 1
        opened = frozenset() if isinstance(scope, After | Between | AfterUntil) else frozenset({0})
        self.initial: MState = ((False,) * len(self._prev), phase, opened)

    def _past_cap(self, n: int) -> bool:
        """Whether ``n`` is past the last turn any watched run has."""
        return self.max_turns is not None and n > self.max_turns

    # expressions ---------------------------------------------------------------

    def _compile(self, expr: Expr) -> Fn:
        if isinstance(expr, m.FromSpeaker | m.ToolCalled | m.ContextEquals | Ends):
            bit = self.table.bit(expr)
            return lambda mask, prev, turn: bool(mask & bit)
        if isinstance(expr, TurnIs):
            op, n = expr.op, expr.number
            cmp = _TURN_OPS[op]
            if self._past_cap(n):  # every turn 1..max_turns is below n: one value
                value = cmp(1, n)
                return lambda mask, prev, turn: value
            return lambda mask, prev, turn: cmp(turn, n)
        if isinstance(expr, Previous):
            k = self._prev_index[expr_key(expr)]
            return lambda mask, prev, turn: prev[k]
        if isinstance(expr, m.Not):
            inner = self._compile(expr.condition)  # type: ignore[arg-type]
            return lambda mask, prev, turn: not inner(mask, prev, turn)
        if isinstance(expr, m.AllOf):
            parts = tuple(self._compile(c) for c in expr.conditions)  # type: ignore[arg-type]
            return lambda mask, prev, turn: all(f(mask, prev, turn) for f in parts)
        if isinstance(expr, m.AnyOf):
            parts = tuple(self._compile(c) for c in expr.conditions)  # type: ignore[arg-type]
            return lambda mask, prev, turn: any(f(mask, prev, turn) for f in parts)
        if isinstance(expr, m.Always):
            return lambda mask, prev, turn: True
        what = "a custom condition" if isinstance(expr, m.CustomCondition) else repr(expr)
        raise PropertyError(
            f"property {self.prop.name} reads {what}, which no run shows (a property reads"
            " speakers, tools, context, the end of the run and the turn number)"
        )

    # patterns ------------------------------------------------------------------

    def _feed(self, ps: int, p: bool, s: bool) -> int | None:
        """One turn of an interval: the new pattern state, None when it can no longer
        be violated (dropped), :data:`BAD` when it is broken for good."""
        if ps == BAD:
            return BAD
        pat = self.pattern
        if isinstance(pat, Never):
            return BAD if p else ps
        if isinstance(pat, Always):
            return ps if p else BAD
        if isinstance(pat, Eventually):  # ps: the turns seen without P
            if p:
                return None
            if self.within is None:
                return 0
            return BAD if ps + 1 >= self.within else ps + 1
        if isinstance(pat, AtMost):  # ps: the turns with P
            if not p or self.uncounted:
                return ps
            return BAD if ps + 1 > self.times else ps + 1
        if isinstance(pat, OnlyAfter):
            if s:
                return None
            return BAD if p else 0
        # Responds: 0 nothing pending; k > 0 the oldest unanswered P is k - 1 turns old
        if ps > 0:
            if s:
                ps = 0
            elif self.within is None:
                ps = 1
            else:
                ps += 1
                if ps - 1 >= self.within:
                    return BAD
        if p and ps == 0:
            ps = 1
        return ps

    def _broken_at_close(self, ps: int) -> bool:
        """Whether an interval in pattern state ``ps`` is violated when it ends."""
        if ps == BAD:
            return True
        return isinstance(self.pattern, Eventually) or (
            isinstance(self.pattern, Responds) and ps > 0
        )

    def _pending_kept(self, ps: int, p: bool, s: bool) -> bool:
        """Whether an obligation pending in ``ps`` stays unanswered through this turn."""
        if isinstance(self.pattern, Eventually):
            return not p
        return ps > 0 and not s

    # one turn --------------------------------------------------------------------

    def step(self, state: MState, mask: int, turn: int, ended: bool) -> StepResult:
        """The monitor after turn ``turn``, whose atoms are ``mask``; ``ended``: the run
        ends after it."""
        prev, phase, opened = state
        p = self._p(mask, prev, turn)
        s = self._s(mask, prev, turn)
        new_prev = tuple(f(mask, prev, turn) for f in self._prev_fns)
        scope = self.scope
        kept = False
        if isinstance(scope, Before | Between | AfterUntil) and self._r(mask, prev, turn):
            for ps in sorted(opened):
                if self._broken_at_close(ps):
                    return StepResult("violated", why="close", judged=ps)
            if isinstance(scope, Before):
                return StepResult("done")
            opened = frozenset()
        else:
            fresh = False  # the interval opens on this turn: nothing was pending before it
            if isinstance(scope, After) and phase == 0:
                if not self._q(mask, prev, turn):
                    return (
                        StepResult("done") if ended else StepResult("next", (new_prev, 0, opened))
                    )
                phase, opened, fresh = 1, frozenset({0}), True
            fed: set[int] = set()
            for ps in opened:
                if (
                    self.can_pend
                    and not fresh
                    and self._is_pending(ps)
                    and self._pending_kept(ps, p, s)
                ):
                    kept = True
                nxt = self._feed(ps, p, s)
                if nxt is not None:
                    fed.add(nxt)
            if isinstance(scope, Between | AfterUntil) and self._q(mask, prev, turn):
                nxt = self._feed(0, p, s)
                if nxt is not None:
                    fed.add(nxt)
            if not self.intervals_many and not fed:
                return StepResult("done")  # the one interval can no longer be violated
            if self.bad_is_final and BAD in fed:
                return StepResult("violated", why="bad", judged=BAD)
            # of intervals open together (one R closes them all), the most advanced one
            # decides: each pattern's states are ordered (a count, an age; BAD on top), the
            # same turns move them alike and keep that order, and an interval breaks no
            # sooner than one above it; so only the top one is kept
            opened = frozenset({max(fed, key=_rank)}) if len(fed) > 1 else frozenset(fed)
        if ended:
            if self.end_judges:
                for ps in sorted(opened):
                    if self._broken_at_close(ps):
                        return StepResult("violated", why="end", judged=ps)
            return StepResult("done")
        return StepResult("next", (new_prev, phase, opened), kept=kept)

    def _is_pending(self, ps: int) -> bool:
        if ps == BAD:
            return False
        return isinstance(self.pattern, Eventually) or ps > 0

    def closed_open(self, state: MState) -> int | None:
        """For a run that goes on for ever: a pattern state left pending in ``state``
        (an interval the end of the run would judge violated), or None."""
        if not self.can_pend:
            return None
        for ps in sorted(state[2]):
            if self._is_pending(ps):
                return ps
        return None


def _rank(ps: int) -> float:
    """The order of an interval's pattern states: how near it is to being broken."""
    return float("inf") if ps == BAD else ps


def _false(mask: int, prev: tuple[bool, ...], turn: int) -> bool:
    return False


_TURN_OPS = m.COMPARISONS


# ── one concrete run ──────────────────────────────────────────────────────────


@attrs.frozen
class Observation:
    """One turn of a concrete run, as a property reads it: who spoke (an agent id), the
    tool it called, the context after the turn's writes, the turn's number (the kickoff
    is 1), whether the run ends after it and with which reason."""

    speaker: str
    tool: str | None
    context: Mapping[str, Any]
    number: int
    ended: bool = False
    reason: str | None = None


@attrs.frozen
class Broken:
    """A property a run broke: on turn ``turn``; ``why`` as :class:`StepResult` says."""

    prop: Property
    turn: int
    why: str
    judged: int = 0


class RunWatch:
    """Steps the monitors of some properties over one concrete run, turn by turn.

    :meth:`turn` returns the properties the run broke on that turn: for good (a
    ``never`` / ``always`` / ``only after`` / ``at most`` / ``within`` broken, or an
    ``R`` closing a broken interval), or, when the turn ends the run, what the end
    judges (an ``eventually`` never met, an ``after P, S`` left waiting). A run that
    stops without ending (a scenario that is over) leaves its pending obligations
    undecided: they are no violation. Each property is reported once.
    """

    #: the turns remembered (a long run repeats a few of them: the same states, atoms
    #: and end), past which each one is stepped again
    MEMO = 4096

    def __init__(self, props: Sequence[Property]):
        self.table = AtomTable()
        self.monitors = [Monitor(p, self.table) for p in props]
        #: the monitors' states (None: reported, or no longer breakable); a turn replaces
        #: the list, never changes it in place
        self.states: list[MState | None] = [mon.initial for mon in self.monitors]
        #: the ``turn OP N`` the properties read: a step depends on the turn's number
        #: only through which of them hold
        found: dict[Any, tuple[Callable[[int, int], bool], int]] = {}
        for prop in props:
            for top in expressions(prop):
                for e in walk(top):
                    if isinstance(e, TurnIs):
                        found.setdefault(e, (_TURN_OPS[e.op], e.number))
        self._turn_tests = tuple(found.values())
        #: (states, mask, which `turn OP N` hold, ended) -> (new states, (monitor, why,
        #: judged) of each one broken)
        self._memo: dict[Any, tuple[tuple[MState | None, ...], tuple[Any, ...]]] = {}

    def turn(self, turn: Observation) -> tuple[Broken, ...]:
        mask = self.table.mask_of(turn)
        number, ended = turn.number, turn.ended
        turn_bits = 0
        for bit, (test, n) in enumerate(self._turn_tests):
            if test(number, n):
                turn_bits |= 1 << bit
        key = (tuple(self.states), mask, turn_bits, ended)
        memo = self._memo
        hit = memo.get(key)
        if hit is None:
            states: list[MState | None] = []
            broken: list[tuple[int, str, int]] = []
            for i, mon in enumerate(self.monitors):
                state = self.states[i]
                if state is None:
                    states.append(None)
                    continue
                res = mon.step(state, mask, number, ended)
                states.append(res.state)
                if res.kind == "violated":
                    broken.append((i, res.why, res.judged))
            hit = (tuple(states), tuple(broken))
            if len(memo) < self.MEMO:
                memo[key] = hit
        self.states = list(hit[0])
        monitors = self.monitors
        return tuple(Broken(monitors[i].prop, number, why, judged) for i, why, judged in hit[1])


# ── words ─────────────────────────────────────────────────────────────────────


def expr_text(expr: Any, names: Mapping[str, str] | None = None) -> str:
    """A property expression in `.flow` syntax (``names``: agent id -> speaker), as
    :func:`flowc.compiler.describe.expression_text` writes it.

    >>> expr_text(m.AllOf((m.FromSpeaker("bot"), Previous(m.FromSpeaker("bot")))))
    'from bot and previous from bot'
    >>> expr_text(m.AnyOf((Ends("approved"), m.Not(TurnIs("<", 3)))))
    'ends "approved" or not turn < 3'
    """
    from flowc.compiler.describe import expression_text

    return expression_text(expr, names)


def claim_text(prop: Property) -> str:
    """What a property claims, as written: its statement without ``property NAME:``
    ("" for a property built in code without its text).

    >>> claim_text(Property("p", Never(Ends()), text="property p: never ends"))
    'never ends'
    >>> claim_text(Property("a: b", Never(Ends()), text="property `a: b`: never ends"))
    'never ends'
    """
    text = prop.text
    head = f"property {format_name(prop.name)}:"  # (the text is the formatter's)
    if text.startswith(head):
        text = text[len(head) :].strip()
    elif text.startswith("property ") and ":" in text:  # (a text written otherwise)
        text = text.split(":", 1)[1].strip()
    return elide(text)  # cut as a quoted rule is: its place shows the whole statement


def explain(prop: Property, broken: Broken, names: Mapping[str, str] | None = None) -> str:
    """Why a run broke a property on turn ``broken.turn``, in words.

    >>> p = Property("first", OnlyAfter(m.ToolCalled("publish"), m.FromSpeaker("customer")))
    >>> explain(p, Broken(p, 3, "bad", BAD))
    'turn 3 has `tool publish`, and no turn up to it has `from customer`'
    """
    names = names or {}
    pat, scope, t = prop.pattern, prop.scope, broken.turn

    def q(e: Any) -> str:  # cut as a quoted rule is (a property may be very long)
        return f"`{elide(expr_text(e, names))}`"

    p = q(pat.p)
    s = q(pat.s) if isinstance(pat, OnlyAfter | Responds) else ""
    n = getattr(pat, "within", None)
    where = _scope_words(scope, q)
    if broken.why == "bad":
        if isinstance(pat, Never):
            return f"turn {t} has {p}{where}"
        if isinstance(pat, Always):
            return f"turn {t} does not have {p}{where}"
        if isinstance(pat, Eventually):
            return (
                f"no turn among the first {counted(n or 0, 'turn')}{where}, up to turn {t}, has {p}"
            )
        if isinstance(pat, AtMost):
            return f"turn {t} is the {_nth(pat.times + 1)} turn with {p}{where}"
        if isinstance(pat, OnlyAfter):
            return f"turn {t} has {p}, and no turn up to it{where} has {s}"
        return (
            f"turn {t - (n or 0)} has {p}, and no turn within {counted(n or 0, 'turn')}"
            f" after it{where} has {s}"
        )
    if broken.why == "close":
        assert isinstance(scope, Before | Between | AfterUntil)
        closes = f"turn {t} has {q(scope.r)}, which ends an interval in which "
        if isinstance(pat, Never):
            return closes + f"a turn has {p}"
        if isinstance(pat, Always):
            return closes + f"a turn does not have {p}"
        if isinstance(pat, Eventually):
            return closes + (
                f"no turn has {p}"
                if n is None or broken.judged != BAD
                else f"no turn among the first {counted(n, 'turn')} has {p}"
            )
        if isinstance(pat, AtMost):
            if pat.times == 0:
                return closes + f"a turn has {p}"
            have = "has" if pat.times == 1 else "have"
            return closes + f"more than {counted(pat.times, 'turn')} {have} {p}"
        if isinstance(pat, OnlyAfter):
            return closes + f"a turn has {p} before any turn has {s}"
        return closes + f"a turn with {p} is not followed{_within(n)} by a turn with {s}"
    ends = f"the run ends after turn {t}" if broken.why == "end" else "the run never ends"
    if isinstance(pat, Eventually):
        return f"{ends}, and no turn{where} has {p}" + (
            f" (within {_turns(n)})" if n is not None else ""
        )
    if isinstance(pat, Responds):
        return f"{ends} while a turn with {p}{where} still waits for a turn with {s}" + (
            f" (within {_turns(n)})" if n is not None else ""
        )
    return f"{ends}, with the property broken{where}"  # pragma: no cover - bad comes first


def _scope_words(scope: Any, q: Callable[[Any], str]) -> str:
    if isinstance(scope, Before):
        return f" (before {q(scope.r)})"
    if isinstance(scope, After):
        return f" (after {q(scope.q)})"
    if isinstance(scope, Between):
        return f" (after {q(scope.q)} before {q(scope.r)})"
    if isinstance(scope, AfterUntil):
        return f" (after {q(scope.q)} until {q(scope.r)})"
    return ""


def _nth(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _turns(k: int | None) -> str:
    return counted(k or 0, "turn")


def _within(k: int | None) -> str:
    return "" if k is None else f" within {_turns(k)}"
