"""Deciding properties over every run of a flow: E116, I305, I306.

A property (:mod:`flowc.compiler.properties`) is decided on the explored state graph
(:mod:`explore`): a node is a speaker about to speak and an abstract valuation, an edge
a turn. The property's automaton (:class:`flowc.compiler.monitor.Monitor`) runs beside
it: a breadth-first search over (node, monitor state) pairs, layer by layer (a layer is
a turn number), each pair once. The first layer where the monitor breaks gives a
shortest run that breaks the property. Two kinds of violation need more than that:

- a run cut by ``max_turns``: on the cap's turn ``ends`` holds (with ``"max_turns"``),
  and the end of the run judges what is still pending (``eventually``, ``after P, S``).
  Reaching a pair sooner dominates reaching it later for every other violation (the
  same turns follow, all before the cap), but not for this one: whether a walk of
  exactly ``max_turns - 1`` turns reaches a pair from which the cap's turn breaks the
  property is asked separately (:meth:`_Search.cap_run`);
- a run that never ends (no ``max_turns``): an obligation left pending for ever breaks
  ``eventually`` and ``after P, S`` (without ``within``): a loop of the product along
  which it stays pending (:meth:`_Search.loop_run`).

The valuation abstraction tells apart only the values rules compare; a flow whose
properties compare others is explored again with those values told apart too, unless
the flow's declarations already decide each comparison on the first exploration
(:func:`flowc.compiler.analysis.prop_system.system_for`), so that ``context.k == "x"``
is decided exactly. A property is
"holds" only when every run was seen: past the state bound (I301) a violation found
among the explored states is still a real run, but otherwise the verdict is
"unknown". Custom conditions are taken either way and custom targets resolve to each
result they declare, as everywhere in the analysis; a custom target that ends the run
may close it with any reason.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.analysis.explore import Recorded, StateSpace, Step, explore
from flowc.compiler.analysis.facts import DEFAULT_MAX_STATES, Facts, Finding
from flowc.compiler.analysis.prop_system import (
    Comparisons,
    comparisons,
    property_literals,
    reads_turns,
    system_for,
)
from flowc.compiler.analysis.runs import Run, run_along
from flowc.compiler.analysis.system import (
    UNSET,
    Declarations,
    System,
    Valuation,
    system_of_declarations,
)
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.monitor import (
    BAD,
    AtomTable,
    Broken,
    Monitor,
    PropertyError,
    StepResult,
    claim_text,
    explain,
    expr_key,
    walk,
)
from flowc.compiler.pipeline import LoadedGraph
from flowc.compiler.properties import Ends, Property, Verdict, expressions
from flowc.diagnostics import E116, I305, I306, counted
from flowc.dsl.formatter import format_name

__all__ = [
    "MIN_PRODUCT",
    "PRODUCT_FACTOR",
    "PropertyResult",
    "check_properties",
    "decide",
    "decide_on",
    "declared_property_findings",
    "property_literals",
    "reads_turns",
    "system_for",
]

#: the pairs (node, monitor state) one property's search may visit, per state of the
#: bound (``--max-states``): past it the property is "unknown" (unless broken sooner)
PRODUCT_FACTOR = 4
#: ... and at least this many, whatever the bound
MIN_PRODUCT = 100_000


@attrs.frozen
class PropertyResult:
    """The verdict on one property over every run of a flow."""

    prop: Property
    verdict: Verdict  # "holds" | "violated" | "unknown"
    #: for "violated": a shortest run that breaks it (fewest turns), ending on the turn
    #: that breaks it (``next``: who would speak then) or with the run's end
    run: Run | None
    #: for "holds": what the proof rests on
    assumed: tuple[str, ...] = ()
    #: for "unknown": what was not covered and why, and what would decide it (``None``:
    #: raising the exploration's bound)
    note: str | None = None
    fix: str | None = None
    #: for "violated": on which turn, and why, in words
    broken_at: int | None = None
    why: str | None = None
    #: for "violated": the run is cut by ``max_turns`` before an obligation is met (an
    #: ``eventually``, a ``within``, an ``after P, S`` still waiting when the cap's end
    #: judges it), not broken by what a turn does (which may be the cap's turn)
    cut_by_cap: bool = False


# ── the graph as the properties read it ──────────────────────────────────────


class _Graph:
    """The explored graph with each turn read as the properties' atoms (a bit mask over
    ``table``): per node, its turns as distinct (successor, mask) pairs."""

    def __init__(self, space: StateSpace, table: AtomTable, compared: Comparisons | None):
        self.space = space
        self.system = system = space.system
        self.table = table
        self.n = len(space.keys)
        self.is_end = [key[0] == "end" for key in space.keys]
        atoms = list(table.atoms)
        speaks: dict[str, int] = {}
        for i, a in enumerate(atoms):
            if isinstance(a, m.FromSpeaker):
                speaks[a.agent_id] = speaks.get(a.agent_id, 0) | 1 << i
        self._spk = [speaks.get(agent, 0) for agent in system.ids]
        self._tools: dict[str | None, int] = {}
        self._ctx: list[tuple[int, int, frozenset[int]]] = []  # (bit, key, abstract hits)
        for i, a in enumerate(atoms):
            if isinstance(a, m.ContextEquals):
                found = None if compared is None else compared.get(expr_key(a))
                if found is None:  # (:func:`system_for` chooses a system that tells each)
                    raise ValueError(
                        f"the explored system does not tell `context.{a.key} == {a.value!r}`"
                    )
                self._ctx.append((1 << i, *found))
        self._ctx_cache: dict[Valuation, int] = {}
        self._ends: dict[str, int] = {}
        #: the reasons an ``ends "r"`` names: a custom target's end may close with any
        self.reasons = [a.reason for a in atoms if isinstance(a, Ends) and a.reason is not None]
        self.cap_bits = self.end_bits("max_turns")
        #: whether every node's turns are built (:meth:`_build_all`)
        self._all_built = False
        self._edges: list[
            tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]] | None
        ] = [None] * self.n
        self._steps_of: dict[int, list[tuple[Step, tuple[tuple[int, int], ...]]]] = {}

    def tool_bits(self, tool: str | None) -> int:
        found = self._tools.get(tool)
        if found is None:
            found = self._tools[tool] = _bits(
                self.table.atoms, lambda a: isinstance(a, m.ToolCalled) and a.tool_name == tool
            )
        return found

    def ctx_bits(self, val: Valuation) -> int:
        found = self._ctx_cache.get(val)
        if found is None:
            found = 0
            for bit, k, hits in self._ctx:
                if (val[k] if k >= 0 else UNSET) in hits:
                    found |= bit
            self._ctx_cache[val] = found
        return found

    def end_bits(self, reason: str | None) -> int:
        """The ``ends`` atoms that hold on a turn that ends the run with ``reason`` (None:
        with a reason none of the properties names)."""
        key = reason if reason is not None else "\0"
        found = self._ends.get(key)
        if found is None:
            found = self._ends[key] = _bits(
                self.table.atoms,
                lambda a: isinstance(a, Ends) and (a.reason is None or a.reason == reason),
            )
        return found

    def masks(self, u: int, step: Step) -> Iterator[tuple[int, int]]:
        """The (successor, mask) of one turn from ``u``; see :meth:`turn_masks`."""
        v = self.space.ids.get(self.space.explorer.next_key(step))
        if v is not None:
            yield from self.turn_masks(u, v, step.action.tool, step.after)

    def turn_masks(
        self, u: int, v: int, tool: str | None, after: Valuation
    ) -> Iterator[tuple[int, int]]:
        """The (successor, mask) of one turn from ``u`` to ``v``; several when a custom
        target ends the run (with each reason a property names, or another)."""
        key = self.space.keys[v]
        base = self._spk[self.space.speaker_of(u)] | self.tool_bits(tool) | self.ctx_bits(after)
        if key[0] != "end":
            yield v, base
        elif key[1] is not None:
            yield v, base | self.end_bits(key[1])
        else:
            for reason in self.reasons:
                yield v, base | self.end_bits(reason)
            yield v, base | self.end_bits(None)

    def edges(self, u: int) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
        """The distinct (successor, mask) turns from ``u``: those the run goes on from
        (the successor shifted left by :data:`_SHIFT` bits, ready to be a pair), and
        those that end it."""
        found = self._edges[u]
        if found is None:
            if self.space.recorded is not None and not self._all_built:
                self._build_all(self.space.recorded)
                found = self._edges[u]
            if found is None:
                found = self._edges[u] = self._build(u)
        return found

    def _build(self, u: int) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
        if self.is_end[u]:
            return (), ()
        go: dict[tuple[int, int], None] = {}
        stop: dict[tuple[int, int], None] = {}
        spk = self._spk[self.space.speaker_of(u)]
        for v, tool, after in self._turns(u):
            if self.is_end[v]:
                for edge in self.turn_masks(u, v, tool, after):
                    stop.setdefault(edge, None)
            else:
                mask = spk | self.tool_bits(tool) | self.ctx_bits(after)
                go.setdefault((v << _SHIFT, mask), None)
        return tuple(go), tuple(stop)

    def _build_all(self, rec: Recorded) -> None:
        """:meth:`_build` of every node, from the turns the exploration kept (the common
        case: one pass over three arrays, the bits of each tool, valuation and node looked
        up by number; a turn that goes on has its successor's valuation). The searches of
        a few properties read nearly every node, so all are built at once, in one loop."""
        self._all_built = True
        tool_bits = [self.tool_bits(t) for t in rec.tools]
        val_bits = [self.ctx_bits(v) for v in rec.vals]
        keys, spks, is_end = self.space.keys, self._spk, self.is_end
        node_bits = [-1] * self.n
        succ, tool, val, start = rec.succ, rec.tool, rec.val, rec.start
        out = self._edges
        none: tuple[tuple[int, int], ...] = ()
        for u in range(self.n):
            if is_end[u]:
                out[u] = none, none
                continue
            spk = spks[self.system.start if u == 0 else keys[u][0]]
            go: dict[tuple[int, int], None] = {}
            stop: dict[tuple[int, int], None] | None = None
            for i in range(start[u], start[u + 1]):
                v = succ[i]
                if is_end[v]:
                    if stop is None:
                        stop = {}
                    for edge in self.turn_masks(u, v, rec.tools[tool[i]], rec.vals[val[i]]):
                        stop[edge] = None
                    continue
                a = val[i]
                if a >= 0:
                    ctx = val_bits[a]
                else:
                    ctx = node_bits[v]
                    if ctx < 0:
                        ctx = node_bits[v] = self.ctx_bits(keys[v][1])
                go[v << _SHIFT, spk | tool_bits[tool[i]] | ctx] = None
            out[u] = tuple(go), tuple(stop) if stop else none

    def _turns(self, u: int) -> Iterator[tuple[int, str | None, Valuation]]:
        space = self.space
        for step in space.explorer.steps(space.keys[u]):
            v = space.ids.get(space.explorer.next_key(step))
            if v is not None:
                yield v, step.action.tool, step.after

    def step_for(self, u: int, v: int, fits: Any) -> tuple[Step, int]:
        """The first turn from ``u`` to ``v`` whose mask ``fits``, and that mask."""
        for step, edges in self._steps(u):
            for w, mask in edges:
                if w == v and fits(mask):
                    return step, mask
        raise LookupError(f"no turn from {u} to {v}")  # pragma: no cover - edges come from steps

    def _steps(self, u: int) -> list[tuple[Step, tuple[tuple[int, int], ...]]]:
        """Each turn from ``u`` with its (successor, mask) pairs (:meth:`masks`), worked
        out once per node: the runs of several properties go through the same nodes (the
        kickoff at least), and a node's turns are routed anew each time they are asked."""
        found = self._steps_of.get(u)
        if found is None:
            found = self._steps_of[u] = [
                (step, tuple(self.masks(u, step)))
                for step in self.space.explorer.steps(self.space.keys[u])
            ]
        return found


def _bits(atoms: Sequence[Any], test: Any) -> int:
    out = 0
    for i, a in enumerate(atoms):
        if test(a):
            out |= 1 << i
    return out


# ── one property ─────────────────────────────────────────────────────────────

_VIOLATED, _DONE = -1, -2

#: a pair (node, monitor state) is one number: the node shifted left by _SHIFT bits, or
#: the monitor state's number (at most _MIDS of them: past that, the property is unknown)
_SHIFT = 20
_MIDS = (1 << _SHIFT) - 1


#: the steps per turn of the cap the quick try at a run cut by the cap may take, and
#: one per two pairs searched (:meth:`_Search.cap_run`), before the pairs' distances to
#: the cap are counted (0: no quick try)
_QUICK_WALK = 2
#: the longest run cut by the cap that :meth:`_Search.cap_run` builds: a longer one (a
#: ``max_turns`` of billions) is not built, as its memory grows with it, and the
#: property is "unknown" (never "holds")
LONGEST_CAP_RUN = 10**7


class _Overflow(Exception):
    """More monitor states than a pair's number holds (:data:`_MIDS`)."""


@attrs.frozen
class _Found:
    """A violation: the pairs from the start (``path``), the last turn (from the last
    pair's node to ``v`` with ``mask``), how it ends, and the monitor's verdict."""

    path: tuple[int, ...]
    v: int
    mask: int
    kind: str  # "turn" (broken on a turn the run goes on from), "end", "cap"
    result: StepResult
    turn: int
    loop_from: int | None = None


class _Search:
    """The product of the explored graph and one property's monitor."""

    def __init__(self, graph: _Graph, mon: Monitor, limit: int):
        self.g = graph
        self.mon = mon
        self.limit = limit
        mine = _atoms_of(mon.prop)
        index = graph.table.index  # (expr_key -> bit number, as _bits would find them)
        self.pmask = sum(1 << index[k] for k in mine if k in index)
        self.cap = graph.system.max_turns
        self.turn_cap = mon.turn_cap
        # monitor states (with the turn, capped, when the property reads it) as numbers
        self.mstates: list[tuple[Any, int]] = []
        self.mids: dict[tuple[Any, int], int] = {}
        #: per monitor state: the turn's mask over this property's atoms -> :meth:`trans`
        self.rows: list[dict[int, int]] = []
        #: whether the search records the product edges that keep an obligation pending
        self.record_kept = self.cap is None and mon.can_pend
        self._ending: dict[tuple[int, int, bool], StepResult] = {}
        self.parent: dict[int, int] = {}
        self.layers: list[list[int]] = []
        #: product edges that keep an obligation pending (for the loops' question):
        #: pair -> successors (the cap's question reads them again: :meth:`succ_of`)
        self.kept: dict[int, list[int]] = {}
        self.overflow = False
        self.cap_too_long = False
        #: (on a small flow the search is quicker than asking which states are safe;
        #: the runs found and the verdicts are the same either way)
        self.safety = _Safety(mon, graph.table) if graph.n >= _SAFETY_FROM else None

    def mid(self, state: Any, tc: int) -> int:
        key = (state, tc)
        found = self.mids.get(key)
        if found is None:
            if len(self.mstates) >= _MIDS:
                raise _Overflow
            found = self.mids[key] = len(self.mstates)
            self.mstates.append(key)
            self.rows.append({})
        return found

    def turn_of(self, tc: int) -> int:
        """The number passed to the monitor for the turn after ``tc`` turns (capped)."""
        return min(tc + 1, self.turn_cap) if self.turn_cap else tc + 1

    def trans(self, mid: int, mask: int) -> int:
        """After a turn that does not end the run: the next monitor state's number
        times two, plus one when an obligation stays pending through the turn
        (:attr:`StepResult.kept`); or :data:`_VIOLATED` / :data:`_DONE`."""
        row = self.rows[mid]
        found = row.get(mask)
        if found is None:
            state, tc = self.mstates[mid]
            res = self.mon.step(state, mask, self.turn_of(tc), False)
            if res.kind == "next":
                assert res.state is not None
                tc = min(tc + 1, self.turn_cap) if self.turn_cap else 0
                if self.safety is not None and self.safety.safe(res.state, tc):
                    found = _DONE  # nothing that comes after can break it
                else:
                    found = 2 * self.mid(res.state, tc) + (1 if res.kept else 0)
            else:
                found = _VIOLATED if res.kind == "violated" else _DONE
            row[mask] = found
        return found

    def ending(self, mid: int, mask: int) -> StepResult:
        """The monitor's verdict on a turn that ends the run."""
        key = (mid, mask, True)
        found = self._ending.get(key)
        if found is None:
            state, tc = self.mstates[mid]
            found = self._ending[key] = self.mon.step(state, mask, self.turn_of(tc), True)
        return found

    def violation_at(self, x: int, v: int, mask: int, kind: str, turn: int) -> _Found:
        state, tc = self.mstates[x & _MIDS]
        res = self.mon.step(state, mask & self.pmask, self.turn_of(tc), kind != "turn")
        return _Found(self.path_to(x), v, mask, kind, res, turn)

    def path_to(self, x: int) -> tuple[int, ...]:
        out = [x]
        while out[-1] in self.parent and self.parent[out[-1]] >= 0:
            out.append(self.parent[out[-1]])
        return tuple(out[::-1])

    def succ_of(self, x: int) -> list[int]:
        """The pairs one turn from pair ``x``, in the order (and with the repeats) of
        its turns, for a pair :meth:`run` went on from: the monitor's step on each of
        its turns is known (in :attr:`rows`), so reading them again is cheaper than
        keeping every pair's list while searching, which most properties never read."""
        row = self.rows[x & _MIDS]
        pmask = self.pmask
        out: list[int] = []
        for vs, mask in self.g.edges(x >> _SHIFT)[0]:
            r = row[mask & pmask]
            if r >= 0:
                out.append(vs | r >> 1)
        return out

    # the breadth-first search -----------------------------------------------------

    def run(self) -> _Found | None:
        cap = self.cap
        start = self.mid(self.mon.initial, 0)  # node 0, the kickoff
        self.parent[start] = -1
        frontier = [start]
        t = 0
        while frontier:
            self.layers.append(frontier)
            turn = t + 1
            if cap is not None and turn >= cap:
                return self._cap_layer(frontier, turn)
            nxt = self._layer(frontier, turn)
            if isinstance(nxt, _Found):
                return nxt
            if len(self.parent) > self.limit:
                self.overflow = True
                return None
            frontier = nxt
            t += 1
        return None

    def _layer(self, frontier: list[int], turn: int) -> list[int] | _Found:
        """The next layer of the search (pairs in the order they are first reached), or
        the first turn of this layer that breaks the property."""
        built, build, rows = self.g._edges, self.g.edges, self.rows
        parent = self.parent
        pmask, trans = self.pmask, self.trans
        record_kept = self.record_kept
        nxt: list[int] = []
        push = nxt.append
        for x in frontier:
            both = built[x >> _SHIFT] or build(x >> _SHIFT)
            if both[1]:
                found = self._end_turns(x, both[1], turn)
                if found is not None:
                    return found
            mid = x & _MIDS
            row = rows[mid]
            kept: list[int] | None = [] if record_kept else None
            for vs, mask in both[0]:
                r = row.get(mask & pmask)
                if r is None:
                    r = trans(mid, mask & pmask)
                if r >= 0:
                    y = vs | r >> 1
                    if y not in parent:
                        parent[y] = x
                        push(y)
                    if kept is not None and r & 1:
                        kept.append(y)
                elif r == _VIOLATED:
                    return self.violation_at(x, vs >> _SHIFT, mask, "turn", turn)
            if kept:
                self.kept[x] = kept
        return nxt

    def _end_turns(self, x: int, stop: tuple[tuple[int, int], ...], turn: int) -> _Found | None:
        """A turn from pair ``x`` that ends the run and breaks the property, if any."""
        mid, pmask = x & _MIDS, self.pmask
        for v, mask in stop:
            if self.ending(mid, mask & pmask).kind == "violated":
                return self.violation_at(x, v, mask, "end", turn)
        return None

    def _cap_layer(self, frontier: list[int], turn: int) -> _Found | None:
        """The cap's turn from each pair first reached on the turn before it: one that
        ends the run anyway, or one that goes on (and is cut by the cap)."""
        g, pmask = self.g, self.pmask
        cap_bits = g.cap_bits & pmask
        for x in frontier:
            mid = x & _MIDS
            both = g.edges(x >> _SHIFT)
            found = self._end_turns(x, both[1], turn)
            if found is not None:
                return found
            for vs, mask in both[0]:
                if self.ending(mid, (mask & pmask) | cap_bits).kind == "violated":
                    return self.violation_at(x, vs >> _SHIFT, mask | g.cap_bits, "cap", turn)
        if len(self.parent) > self.limit:
            self.overflow = True
        return None

    # runs cut by the cap ---------------------------------------------------------

    def cap_run(self) -> _Found | None:
        """A walk of exactly ``max_turns - 1`` turns to a pair from which the cap's turn
        breaks the property (pairs reached sooner than that are not in the last layer of
        :meth:`run`, which already tried the cap from the pairs first reached there)."""
        cap, g, pmask = self.cap, self.g, self.pmask
        assert cap is not None
        want = cap - 1
        cap_bits = g.cap_bits & pmask
        # per monitor state, the letters of the turns from it the search met (each went
        # through :meth:`trans`) with which the cap's turn breaks the property
        breaking: dict[int, set[int]] = {}
        for mid, row in enumerate(self.rows):
            found = {ll for ll in row if self.ending(mid, ll | cap_bits).kind == "violated"}
            if found:
                breaking[mid] = found
        if not breaking:
            return None
        if want > LONGEST_CAP_RUN:
            self.cap_too_long = True
            return None
        # the pairs first reached on the cap's turn were tried by :meth:`_cap_layer`
        last = set(self.layers[want]) if len(self.layers) > want else set()
        cap_all = g.cap_bits
        edges = g.edges
        #: pair -> the cap's turn (v, mask) from it that breaks the property, or None
        #: (worked out for the pairs a walk reaches: most pairs are never asked)
        bad: dict[int, tuple[int, int] | None] = {}

        def is_bad(x: int) -> bool:
            found = bad.get(x, False)
            if found is False:
                found = None
                wrong = breaking.get(x & _MIDS)
                if wrong is not None and x not in last:
                    for vs, mask in edges(x >> _SHIFT)[0]:
                        if mask & pmask in wrong:
                            found = (vs >> _SHIFT, mask | cap_all)
                            break
                bad[x] = found
            return found is not None

        start = self.layers[0][0]
        # depth first, for a walk of exactly ``want`` turns: a quick try first (the turns
        # that break at the cap are often many), then guided by how few turns lead from
        # each pair to a pair from which the cap's turn breaks it (backwards over the
        # pairs). Both find the same walk, the first in the order of the turns (the
        # distances only cut branches that cannot reach such a pair in time), so the
        # quick try may take about half as many steps as counting the distances costs (a
        # pass over every pair's turns): a try that fails then costs the search half as
        # much again, at most, and one that succeeds (the common case) saves the pass
        budget = _QUICK_WALK * cap + (len(self.parent) // 2 if _QUICK_WALK else 0)
        path = self._walk(start, want, is_bad, None, budget=budget)
        if path is None:
            # one pass over each pair the search went on from: whether it is bad, and
            # what leads to it (:meth:`succ_of`, inline)
            pred: dict[int, list[int]] = {}
            rows = self.rows
            targets: list[int] = []
            for layer in self.layers[:want]:
                for x in layer:
                    row = rows[x & _MIDS]
                    wrong = breaking.get(x & _MIDS)
                    known = bad.get(x, False)
                    for vs, mask in edges(x >> _SHIFT)[0]:
                        ll = mask & pmask
                        if known is False and wrong is not None and ll in wrong:
                            known = bad[x] = (vs >> _SHIFT, mask | cap_all)
                        r = row[ll]
                        if r >= 0:
                            y = vs | r >> 1
                            into = pred.get(y)
                            if into is None:
                                pred[y] = [x]
                            else:
                                into.append(x)
                    if known is False:
                        bad[x] = None
                    elif known is not None:
                        targets.append(x)
            if not targets:
                return None
            near = dict.fromkeys(targets, 0)
            todo = deque(targets)
            while todo:
                y = todo.popleft()
                d = near[y] + 1
                for x in pred.get(y, ()):
                    if x not in near:
                        near[x] = d
                        todo.append(x)
            path = self._walk(start, want, is_bad, near, budget=None)
        if path is None:
            return None
        x = path[-1]
        found_at = bad[x]
        assert found_at is not None
        v, mask = found_at
        state, tc = self.mstates[x & _MIDS]
        res = self.mon.step(state, mask & pmask, self.turn_of(tc), True)
        return _Found(tuple(path), v, mask, "cap", res, cap)

    def _walk(
        self,
        start: int,
        want: int,
        is_bad: Callable[[int], bool],
        near: dict[int, int] | None,
        budget: int | None,
    ) -> list[int] | None:
        """Depth first from ``start``: a walk of exactly ``want`` turns over the pairs
        the search went on from to one ``is_bad`` accepts (a failed (pair, turns) is not
        tried again); ``near`` prunes the pairs too far from those; past ``budget`` steps,
        None. (The pairs a walk reaches after fewer than ``want`` turns are ones the
        search went on from; those it reaches after ``want`` need no successors.)"""
        # a long walk goes round the same few pairs: each pair's successors are read once
        # (in order, without repeats: a pair tried once from a (pair, turns) is not tried
        # again, so the repeats never changed the walk). At most one list per pair the
        # walk enters, for as long as the walk: the search itself keeps none
        known: dict[int, list[int]] = {}

        def succ_of(x: int) -> list[int]:
            found = known.get(x)
            if found is None:
                found = known[x] = list(dict.fromkeys(self.succ_of(x)))
            return found

        failed: set[tuple[int, int]] = set()
        far = want + 1
        path = [start]
        stack: list[Iterator[int]] = [iter(succ_of(start) if want > 0 else ())]
        steps = 0
        while stack:
            t = len(path) - 1
            if t == want:
                if is_bad(path[-1]):
                    return path
                failed.add((path[-1], t))
                path.pop()
                stack.pop()
                continue
            steps += 1
            if budget is not None and steps > budget:
                return None
            for y in stack[-1]:
                if (y, t + 1) in failed:
                    continue
                if near is not None and t + 1 + near.get(y, far) > want:
                    continue
                path.append(y)
                stack.append(iter(succ_of(y) if t + 1 < want else ()))
                break
            else:
                failed.add((path[-1], t))
                path.pop()
                stack.pop()
        return None

    # runs that never end ---------------------------------------------------------

    def loop_run(self) -> _Found | None:
        """A run that goes round a loop for ever with an obligation pending all along:
        a cycle of the pairs joined by turns that keep it pending, reached soonest."""
        kept = self.kept
        if not kept:
            return None
        comps = _cycles(kept)
        if not comps:
            return None
        depth: dict[int, int] = {}
        for t, layer in enumerate(self.layers):
            for x in layer:
                depth[x] = t
        best = min((x for comp in comps for x in comp), key=lambda x: (depth[x], x))
        comp = next(c for c in comps if best in c)
        # the shortest way round from ``best`` back to it, inside its component
        back: dict[int, int] = {}
        todo = deque([best])
        found = None
        while todo and found is None:
            y = todo.popleft()
            for z in kept.get(y, ()):
                if z not in comp:
                    continue
                if z == best:
                    found = y
                    break
                if z not in back:
                    back[z] = y
                    todo.append(z)
        assert found is not None
        cycle = [found]
        while cycle[-1] != best:
            cycle.append(back[cycle[-1]])
        cycle.reverse()  # best ... found
        prefix = self.path_to(best)
        path = (*prefix, *cycle[1:], best)
        state, _tc = self.mstates[best & _MIDS]
        judged = self.mon.closed_open(state) or 0
        res = StepResult("violated", why="loop", judged=judged)
        return _Found(path[:-1], best >> _SHIFT, -1, "loop", res, len(path) - 1, len(prefix) - 1)


def _atoms_of(prop: Property) -> set[Any]:
    return {
        expr_key(e)
        for expr in expressions(prop)
        for e in walk(expr)
        if isinstance(e, m.FromSpeaker | m.ToolCalled | m.ContextEquals | Ends)
    }


def _cycles(succ: dict[int, list[int]]) -> list[set[int]]:
    """The strongly connected components of a graph that hold a cycle (Tarjan, without
    recursion)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    out: list[set[int]] = []
    for root in list(succ):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        work: list[tuple[int, Iterator[int]]] = [(root, iter(succ.get(root, ())))]
        while work:
            v, it = work[-1]
            pushed = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                    pushed = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if pushed:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp: set[int] = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in succ.get(v, ()):
                    out.append(comp)
    return out


# ── deciding ─────────────────────────────────────────────────────────────────


def decide(
    compiled: CompiledFlow,
    props: Sequence[Property] | None = None,
    *,
    max_states: int = DEFAULT_MAX_STATES,
) -> tuple[PropertyResult, ...]:
    """Decide each property (``compiled.properties`` when ``props`` is None) over every
    run of the flow, in the given order.

    >>> from flowc import compile_flow
    >>> from flowc.compiler.properties import Never, OnlyAfter
    >>> flow = compile_flow('''
    ... speaker user: human
    ... speaker bot { tool publish }
    ... max_turns 4
    ... when from user then bot
    ... when from bot then user
    ... ''')
    >>> published = m.ToolCalled("publish")
    >>> [r.verdict for r in decide(flow, [
    ...     Property("never", Never(published)),
    ...     Property("asked", OnlyAfter(published, m.FromSpeaker("user"))),
    ... ])]
    ['violated', 'holds']
    >>> decide(flow, [Property("never", Never(published))])[0].run.render()
    'user → bot (publish) → user'
    """
    props = tuple(compiled.properties if props is None else props)
    if not props:
        return ()
    system = system_for(compiled, props)
    space = explore(system, max_states, record=True)
    return decide_on(space, props, max_states)


def decide_on(
    space: StateSpace, props: Sequence[Property], max_states: int, *, retold: bool = False
) -> tuple[PropertyResult, ...]:
    """:func:`decide` on a state space already explored (its system must tell apart the
    values the properties compare: :func:`system_for`); ``retold``: it is a second
    exploration, which tells apart values the rules do not compare, beside a complete
    one of the flow (whose findings report no I301)."""
    table = AtomTable()
    monitors = [Monitor(p, table, space.system.max_turns) for p in props]
    graph = _Graph(space, table, comparisons(space.system, props))
    limit = PRODUCT_FACTOR * max(max_states, len(space.keys), MIN_PRODUCT)
    # (what a proof rests on is the same for every property, and reads every rule: once)
    assumed = _assumptions(space.system)
    return tuple(_decide_one(graph, mon, limit, assumed, retold) for mon in monitors)


#: the most turns a property's own automaton is tried on (:class:`_Safety`): the letters
#: (which of its atoms hold together) and the states it reaches
_LETTERS, _OWN_STATES = 512, 4096
#: the explored states from which safe monitor states are looked for (:class:`_Safety`)
_SAFETY_FROM = 2000


def _letters(mon: Monitor, table: AtomTable) -> tuple[list[int], list[int]] | None:
    """Every turn a property can tell apart, as a mask over ``table``: one speaker (or
    none of those it names), one tool (or none), one value per context key (or another),
    and, for a turn that ends the run, one reason (each it names, or another). Returns
    (turns that go on, turns that end the run); None when there are too many."""
    mine = _atoms_of(mon.prop)
    atoms = [(i, a) for i, a in enumerate(table.atoms) if expr_key(a) in mine]
    speakers: dict[str, int] = {}
    tools: dict[str, int] = {}
    keys: dict[str, list[tuple[Any, int]]] = {}
    reasons: dict[str | None, int] = {}
    for i, a in atoms:
        bit = 1 << i
        if isinstance(a, m.FromSpeaker):
            speakers[a.agent_id] = speakers.get(a.agent_id, 0) | bit
        elif isinstance(a, m.ToolCalled):
            tools[a.tool_name] = tools.get(a.tool_name, 0) | bit
        elif isinstance(a, m.ContextEquals):
            keys.setdefault(a.key, []).append((a.value, bit))
        else:
            reasons[a.reason] = reasons.get(a.reason, 0) | bit
    choices: list[list[int]] = [[0, *speakers.values()], [0, *tools.values()]]
    for values in keys.values():
        # the atoms a value makes true: those that compare with an equal value
        # (and another value, or none: no atom)
        made = {sum(bit for w, bit in values if m.values_equal(v, w)) for v, _ in values}
        choices.append([0, *made])
    go = [0]
    for options in choices:
        go = [a | b for a in go for b in options]
        if len(go) > _LETTERS:
            return None
    anyway = reasons.get(None, 0)
    ends = [anyway | bits for r, bits in reasons.items() if r is not None] + [anyway]
    stop = [g | e for g in go for e in ends]
    if len(stop) > 4 * _LETTERS:
        return None
    return go, stop


class _Safety:
    """Which monitor states no run of any flow can lead to a violation from: stepped on
    every turn the property can tell apart (:func:`_letters`), the automaton never
    breaks and never keeps an obligation (which a run that goes on for ever could leave
    pending). From such a state the search need not go on: `ends at most 2 times` is
    proved without the flow's states, and `never ... until turn > 1` stops after turn 1.
    """

    def __init__(self, mon: Monitor, table: AtomTable):
        self.mon = mon
        self.letters = _letters(mon, table)
        self.known: dict[tuple[Any, int], bool] = {}

    def safe(self, state: Any, tc: int) -> bool:
        start = (state, tc)
        found = self.known.get(start)
        if found is not None:
            return found
        if self.letters is None:
            self.known[start] = False
            return False
        go, stop = self.letters
        mon, cap = self.mon, self.mon.turn_cap
        seen = {start}
        todo = [start]
        safe = True
        while todo and safe:
            state, tc = todo.pop()
            if self.known.get((state, tc)) is False or mon.closed_open(state) is not None:
                safe = False
                break
            turn = min(tc + 1, cap) if cap else 1
            if any(mon.step(state, mask, turn, True).kind == "violated" for mask in stop):
                safe = False
                break
            for mask in go:
                res = mon.step(state, mask, turn, False)
                if res.kind == "violated":
                    safe = False
                    break
                if res.kind == "next":
                    assert res.state is not None
                    nxt = (res.state, min(tc + 1, cap) if cap else 0)
                    if nxt not in seen and self.known.get(nxt) is not True:
                        if len(seen) >= _OWN_STATES:
                            safe = False
                            break
                        seen.add(nxt)
                        todo.append(nxt)
        if safe:  # every state it reached is safe too
            self.known.update(dict.fromkeys(seen, True))
        else:
            self.known[start] = False
        return safe


def _decide_one(
    graph: _Graph, mon: Monitor, limit: int, assumed: tuple[str, ...], retold: bool = False
) -> PropertyResult:
    prop = mon.prop
    space, system = graph.space, graph.system
    search = _Search(graph, mon, limit)
    if search.safety is not None and not space.truncated and search.safety.safe(mon.initial, 0):
        # no run of any flow breaks it
        return PropertyResult(prop, "holds", None, assumed=assumed)
    try:
        found = search.run()
        if found is None and not search.overflow:
            if system.max_turns is not None and mon.end_sensitive:
                found = search.cap_run()
            elif system.max_turns is None and mon.can_pend:
                found = search.loop_run()
    except _Overflow:
        found, search.overflow = None, True
    if found is not None:
        run, broken_at = _run_of(graph, search, found)
        broken = Broken(prop, broken_at, found.result.why, found.result.judged)
        return PropertyResult(
            prop,
            "violated",
            run,
            broken_at=broken_at,
            why=explain(prop, broken, system.id_names),
            cut_by_cap=found.kind == "cap"
            and found.result.why in ("end", "close")
            and found.result.judged != BAD,
        )
    if space.truncated:
        return PropertyResult(prop, "unknown", None, note=_partial_note(space, retold))
    if search.cap_too_long:
        return PropertyResult(
            prop,
            "unknown",
            None,
            note=f"whether a run cut by `max_turns {system.max_turns}` breaks it was not"
            f" decided: such a run is longer than the"
            f" {counted(LONGEST_CAP_RUN, 'turn', grouped=True)} flowc follows to the cap"
            " (a lower `max_turns` decides it)",
            fix=f"check the property with a `max_turns` of at most {LONGEST_CAP_RUN:,}",
        )
    if search.overflow:
        return PropertyResult(
            prop,
            "unknown",
            None,
            note=f"the runs of the flow, watched for this property, take more than"
            f" {counted(search.limit, 'state', grouped=True)} ({PRODUCT_FACTOR} times the"
            f" bound, and at least {PRODUCT_FACTOR * MIN_PRODUCT:,}): no run seen breaks it,"
            " but not every run was seen (raise `--max-states`)",
        )
    return PropertyResult(prop, "holds", None, assumed=assumed)


def _partial_note(space: StateSpace, retold: bool) -> str:
    """Why a property no explored run breaks is not decided, the exploration cut short."""
    states = counted(len(space.keys), "state", grouped=True)
    memory = space.stopped_by == "memory"
    bound = "memory budget" if memory else "bound"
    where = (
        f"the runs explored again to tell apart the values the properties compare (a"
        f" larger state space than the flow's own, which was complete) stopped at the"
        f" {bound} ({states})"
        if retold
        else f"the exploration stopped at its {bound} ({states}, I301)"
    )
    more = "a larger `--max-states` stops there too" if memory else "raise `--max-states`"
    return f"{where}: no run among the states explored breaks it, but the others were not seen ({more})"


def _assumptions(system: System) -> tuple[str, ...]:
    """What a proof rests on: the cap, and what the flow declares but does not decide."""
    out: list[str] = []
    if system.max_turns is not None:
        out.append(f"max_turns {system.max_turns}")
    else:
        out.append("no max_turns (runs that never end included)")
    if system.atoms:
        out.append("custom conditions either way")
    customs = [r for r in system.rules if isinstance(r.then, m.CustomTarget)]
    if customs or isinstance(system.default, m.CustomTarget):
        out.append("custom targets resolve to their declared results")
    if any(a.tool is not None for acts in system.actions for a in acts):
        out.append("tools do what they declare")
    if any(a.any_writes for acts in system.actions for a in acts):
        out.append("humans write any value to the keys they declare")
    return tuple(out)


def _run_of(graph: _Graph, search: _Search, found: _Found) -> tuple[Run, int]:
    """The run of a violation, and the turn it breaks on."""
    path = found.path
    nodes = [x >> _SHIFT for x in path]
    on_loop = found.loop_from if found.kind == "loop" else None

    # (a long run goes through the same few pairs again and again: one turn each)
    known: dict[tuple[int, int, bool], Step] = {}

    def turn_between(i: int, x: int, y: int) -> Step:
        """A turn from pair ``x`` to pair ``y`` (keeping the obligation pending on the loop)."""
        keep = on_loop is not None and i >= on_loop
        hit = known.get((x, y, keep))
        if hit is None:
            hit = known[x, y, keep] = _turn_between(x, y, keep)
        return hit

    def _turn_between(x: int, y: int, keep: bool) -> Step:
        mid_x, mid_y = x & _MIDS, y & _MIDS

        def fits(mask: int) -> bool:
            r = search.trans(mid_x, mask & search.pmask)
            return r >= 0 and r >> 1 == mid_y and (not keep or bool(r & 1))

        return graph.step_for(x >> _SHIFT, y >> _SHIFT, fits)[0]

    chosen = {i: turn_between(i, x, y) for i, (x, y) in enumerate(itertools.pairwise(path))}
    if found.kind == "loop":
        assert on_loop is not None
        chosen[len(path) - 1] = turn_between(len(path) - 1, path[-1], path[on_loop])
        nodes.append(found.v)
        return run_along(graph.space, nodes, None, on_loop, chosen), found.turn
    last = path[-1] >> _SHIFT
    wanted = found.mask & ~graph.cap_bits if found.kind == "cap" else found.mask
    final, _ = graph.step_for(last, found.v, lambda mask: mask == wanted)
    run = run_along(graph.space, nodes, final, None, chosen)
    if found.kind == "cap":
        run = attrs.evolve(run, next=None, reason="max_turns")
    return run, found.turn


# ── findings ─────────────────────────────────────────────────────────────────


def declared_property_findings(
    loaded: LoadedGraph,
    decl: Declarations,
    max_states: int,
    filename: str = "<input>",
    *,
    retold: bool = False,
) -> tuple[Finding, ...]:
    """E116, I305 and I306 for the properties a run stored, decided over every run of its
    stored graph with its flow's declarations (:func:`system_of_declarations`: the
    system ``check`` makes of the `.flow` file, with the values the properties compare
    told apart): what ``check`` says of them on the flow, the file gone."""
    props = decl.properties
    system = system_of_declarations(loaded, decl, property_literals(props))
    space = explore(system, max_states, record=True)
    facts = Facts(system, space, filename)
    results = decide_on(space, props, max_states, retold=retold)
    return tuple(_finding(facts, res) for res in results)


def check_properties(facts: Facts) -> Iterator[Finding]:
    """E116 (a property some run breaks), I305 (not decided: the analysis is partial),
    I306 (a property that holds on every run)."""
    compiled = facts.system.compiled
    if compiled is None or not compiled.properties or facts.system.json_mode:
        return
    props = compiled.properties
    bound = facts.space.bound
    try:
        system = system_for(compiled, props, facts.system)
        space = (
            facts.space
            if system is facts.system
            else explore(system, bound, record=True, like=facts.space.explorer)
        )
        retold = space is not facts.space and not facts.space.truncated
        results = decide_on(space, props, bound, retold=retold)
    except PropertyError as err:  # pragma: no cover - the parser refuses such properties
        for prop in props:
            yield Finding(
                facts.diag(
                    I305, f"property {prop.name} could not be decided: {err}", span=prop.span
                )
            )
        return
    for res in results:
        yield _finding(facts, res)


def _finding(facts: Facts, res: PropertyResult) -> Finding:
    prop = res.prop
    name = format_name(prop.name)
    claim = claim_text(prop)
    text = f" (`{claim}`)" if claim else ""
    span = prop.span
    if res.verdict == "violated":
        run = res.run
        assert run is not None
        notes = (
            [f"broken for ever: {res.why}", f"a run that breaks it: {run.render()}"]
            if run.loop_from is not None
            else [
                f"broken on turn {res.broken_at}: {res.why}",
                f"a shortest run that breaks it: {run.render()}",
            ]
        )
        if run.reason is None and run.next is None and run.loop_from is None:
            notes.append("(the run is ended by a custom target, with any reason it chooses)")
        diag = facts.diag(
            E116,
            f"property {name} is violated{text}",
            span=span,
            notes=tuple(notes),
            help=_fix_hint(res, facts.system),
        )
        # the run as data too, for `flowc render --check` to draw (the notes stay its text)
        return Finding(attrs.evolve(diag, run=run.path(prop.name)), run)
    if res.verdict == "unknown":
        return Finding(
            facts.diag(
                I305,
                f"property {name} could not be decided{text}",
                span=span,
                notes=(res.note or "",),
                help=res.fix
                or "raise the bound with `--max-states N` (or `max-states` in `[tool.flowc]`)",
            )
        )
    held = ("it holds on every run; assumed: " + ", ".join(res.assumed),)
    return Finding(facts.diag(I306, f"property {name} holds{text}", span=span, notes=held))


def _fix_hint(res: PropertyResult, system: System) -> str:
    run = res.run
    if res.cut_by_cap:
        return (
            f"the run is cut by `max_turns {system.max_turns}` before the property is met:"
            " make such runs end sooner, raise `max_turns`, or say in the property what"
            " may stay open at the cap (`within N turns`, a scope)"
        )
    if run is not None and run.loop_from is not None:
        return (
            "the run goes round the loop for ever: add `max_turns N`, or a rule that leaves"
            " the loop once the property is met"
        )
    return (
        "change the rules so that no run goes this way (the run shows where), or, if the"
        " run is one the flow should allow, say less in the property (a scope, `within N turns`)"
    )
