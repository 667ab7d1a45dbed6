"""The state-space explorer: breadth-first over the abstract system, into a ``networkx.DiGraph``.

Node 0 is the kickoff (the start speaker's first turn, a plain message). Every other
node is a speaker about to speak with an abstract valuation, or the end of the run
with a terminate reason. An edge is one turn. ``max_turns`` is not part of the state;
it is a global exit, checked with shortest paths.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import Any, TypeAlias

import attrs

from flowc._compat import networkx_digraph, networkx_successors
from flowc.compiler import model as m
from flowc.compiler.analysis.system import (
    OTHER,
    PLAIN,
    UNSET,
    Action,
    Atom,
    CondCode,
    RuleSpec,
    System,
    Valuation,
)
from flowc.compiler.tool_effects import finish_reason as finish_reason  # re-exported
from flowc.compiler.tool_effects import terminate_reason as terminate_reason  # re-exported

DEFAULT, HANDOFF, FINISH = -1, -2, -3


#: ("kickoff",) | (speaker, valuation or None) | ("end", reason or None)
NodeKey: TypeAlias = tuple[Any, ...]
KICKOFF: NodeKey = ("kickoff",)

#: custom conditions assumed on a step: ((atom id, value), ...)
Assumed: TypeAlias = tuple[tuple[int, bool], ...]


@attrs.frozen
class Outcome:
    """What one turn leads to, under some assumptions about custom conditions."""

    assumed: Assumed
    fired: int  # a rule's file index, or DEFAULT / HANDOFF / FINISH
    speaker: int  # the next speaker, -1 when the run ends
    reason: str | None = None  # the terminate reason (None: chosen by a custom target)
    choice: str | None = None  # how a custom target resolved, for display
    #: the custom target's call (``pick(role = "x")``) when one decided it: the same call
    #: on the same turn resolves the same way (``flowc diff`` pairs OLD's and NEW's by it)
    call: str | None = None


@attrs.frozen
class Step:
    """One turn from a node: the action taken, the valuation after its writes, the outcome."""

    action: Action
    after: Valuation
    outcome: Outcome


def evaluate(
    code: CondCode, sender: int, tool: int, val: Valuation, assumed: dict[int, bool]
) -> bool | Atom:
    """Three-valued evaluation: True, False, or the custom atom that decides it."""
    kind = code[0]
    if kind == "from":
        return bool(code[1] == sender)
    if kind == "ctx":
        return val[code[1]] in code[2]
    if kind == "tool":
        return bool(code[1] == tool)
    if kind == "T":
        return True
    if kind == "custom":
        atom: Atom = code[1]
        known = assumed.get(atom.id)
        return atom if known is None else known
    if kind == "not":
        inner = evaluate(code[1], sender, tool, val, assumed)
        return inner if isinstance(inner, Atom) else not inner
    want = kind == "any"  # "any" short-circuits on True, "all" on False
    pending: Atom | None = None
    for child in code[1]:
        res = evaluate(child, sender, tool, val, assumed)
        if isinstance(res, Atom):
            pending = pending or res
        elif res is want:
            return want
    return pending if pending is not None else not want


def satisfiable(
    wanted: list[tuple[CondCode, bool]],
    sender: int,
    tool: int,
    val: Valuation,
    assumed: dict[int, bool],
) -> dict[int, bool] | None:
    """Assumptions under which every condition has its wanted value, or None."""
    for code, want in wanted:
        res = evaluate(code, sender, tool, val, assumed)
        if isinstance(res, Atom):
            for choice in (True, False):
                found = satisfiable(wanted, sender, tool, val, {**assumed, res.id: choice})
                if found is not None:
                    return found
            return None
        if res is not want:
            return None
    return assumed


class Candidates:
    """The rules that may match a turn of a sender calling a tool, in one order (the
    evaluation order, or the file order), each list built once.

    A rule that names no tool may match every turn of the senders it names (or of
    anyone): those lists are built once per sender, and only the few rules that name
    the turn's tool are merged into them, so a large flow is not filtered rule by rule
    for every sender and tool.
    """

    def __init__(self, rules: Sequence[RuleSpec], speakers: int, order: Callable[[RuleSpec], int]):
        self._order = order  # ``rules`` are sorted by it
        self._general: list[RuleSpec] = []
        self._by_sender: list[list[RuleSpec]] = [[] for _ in range(speakers)]
        self._tooled: dict[int | None, list[RuleSpec]] = {}
        for r in rules:
            if r.tools is not None:
                for t in r.tools:
                    self._tooled.setdefault(t, []).append(r)
            elif r.senders is None:
                self._general.append(r)
            else:
                for sender in r.senders:
                    if 0 <= sender < speakers:
                        self._by_sender[sender].append(r)
        self._base: dict[int, tuple[RuleSpec, ...]] = {}
        self._found: dict[tuple[int, int | None], tuple[RuleSpec, ...]] = {}
        self._base_reads: dict[int, frozenset[int]] = {}
        self._reads: dict[tuple[int, int | None], tuple[int, ...]] = {}

    def _extra(self, sender: int, tool: int | None) -> list[RuleSpec]:
        return [r for r in self._tooled.get(tool, ()) if r.senders is None or sender in r.senders]

    def _base_of(self, sender: int) -> tuple[RuleSpec, ...]:
        base = self._base.get(sender)
        if base is None:
            mine = self._by_sender[sender] if 0 <= sender < len(self._by_sender) else []
            # two sorted runs: the sort merges them in one pass
            base = (
                tuple(sorted(self._general + mine, key=self._order))
                if mine
                else tuple(self._general)
            )
            self._base[sender] = base
        return base

    def of(self, sender: int, tool: int | None) -> tuple[RuleSpec, ...]:
        """The rules for a turn of ``sender`` calling ``tool``."""
        key = (sender, tool)
        found = self._found.get(key)
        if found is None:
            found = self._base_of(sender)
            extra = self._extra(sender, tool)
            if extra:
                found = tuple(sorted((*found, *extra), key=self._order))
            self._found[key] = found
        return found

    def reads(self, sender: int, tool: int | None) -> tuple[int, ...]:
        """The keys (sorted) that the rules for such a turn read."""
        key = (sender, tool)
        found = self._reads.get(key)
        if found is None:
            base = self._base_reads.get(sender)
            if base is None:
                # the rules share their read sets: each distinct one is joined once
                distinct = set(map(_READS, self._base_of(sender)))
                base = self._base_reads[sender] = frozenset().union(*distinct)
            found = self._reads[key] = tuple(
                sorted(base.union(*map(_READS, self._extra(sender, tool))))
            )
        return found


_READS = attrgetter("reads")


class Explorer:
    """Explores a :class:`System` breadth-first; see :func:`explore`."""

    def __init__(
        self, system: System, like: Explorer | None = None, *, keep_routes: bool | None = None
    ):
        """``like``: the explorer of a system with the same rules and flow (the flow's own
        system, for one that tells apart more values: ``system_of_flow(..., base=)``),
        whose routing this one shares. A turn's outcomes are a function of the rules'
        codes and the values of the keys they read (and of the speakers, the default and
        the custom targets, the same here), and they are kept by those values: the rules
        number their own values alike in both systems, and read a value only the other
        tells apart as they read "another value" (no rule's `==` matches it).

        ``keep_routes``: whether each turn's routing (its outcomes) is kept, by the values
        of the keys the rules read, for the next turn with those values. By default it is,
        but for a JSON graph: a graph's node keeps no valuation, so an exploration routes
        each of a speaker's turns once, and keeping them would hold a tuple a turn (300 MB
        for a graph whose rules read 16 keys).

        A search that routes a graph's turns again and again, as the diff's does, asks
        for them (``True``); then a graph keeps every routing of a sender and tool whose
        rules' keys take at most :data:`KEPT_GRAPH_COMBINATIONS` combinations of values,
        and the others while it keeps fewer than :data:`KEPT_GRAPH_ROUTES_IN_ALL`."""
        self.system = system
        self._keep_routes = not system.json_mode if keep_routes is None else keep_routes
        self._json = system.json_mode
        #: a JSON graph's (sender, tool) -> whether the keys its rules read take at most
        #: KEPT_GRAPH_COMBINATIONS combinations of values
        self._few: dict[tuple[int, int], bool] = {}
        #: the keys a JSON graph's turn reads -> its valuations (:meth:`any_after`)
        self._any_after: dict[tuple[int, ...], tuple[Valuation, ...]] = {}
        self._candidates: Candidates
        self._outcomes: dict[tuple[int, int, Valuation], tuple[Outcome, ...]]
        #: (sender, tool) -> (the candidate rules, the keys they read): one lookup a turn
        self._routing: dict[tuple[int, int], tuple[tuple[RuleSpec, ...], tuple[int, ...]]]
        if (
            like is not None
            and like.system.rules is system.rules
            and like.system.compiled is system.compiled
            and like.system.speakers == system.speakers
            and like.system.initiator == system.initiator
            and like.system.default == system.default
            and like.system.custom_results == system.custom_results
        ):
            self._candidates = like._candidates
            self._outcomes = like._outcomes
            self._routing = like._routing
        else:
            self._candidates = Candidates(system.ordered, len(system.speakers), attrgetter("rank"))
            self._outcomes = {}
            self._routing = {}

    # one turn ----------------------------------------------------------------

    def reads(self, sender: int, tool: int) -> tuple[int, ...]:
        """The keys (sorted) that the rules for a turn of ``sender`` calling ``tool`` read."""
        return self._candidates.reads(sender, tool)

    def candidates(self, sender: int, tool: int) -> tuple[RuleSpec, ...]:
        """The rules that may match a turn of ``sender`` calling ``tool``, in evaluation order."""
        return self._candidates.of(sender, tool)

    def route(
        self, sender: int, tool: int, val: Valuation, assumed: Assumed = ()
    ) -> tuple[Outcome, ...]:
        """The rules' decision for a turn (no handoff or finish): every possible outcome."""
        routing = self._routing.get((sender, tool))
        if routing is None:
            routing = self._routing[(sender, tool)] = (
                self._candidates.of(sender, tool),
                self._candidates.reads(sender, tool),
            )
        cands, reads = routing
        keep = self._keep_routes and not assumed
        if keep and self._json:
            few = self._few.get((sender, tool))
            if few is None:
                literals = self.system.literals
                few = math.prod(2 + len(literals[k]) for k in reads) <= KEPT_GRAPH_COMBINATIONS
                self._few[(sender, tool)] = few
            keep = few or len(self._outcomes) < KEPT_GRAPH_ROUTES_IN_ALL
        if keep:
            # the decision depends only on the keys the candidate rules read
            key = (sender, tool, tuple([val[k] for k in reads]))
            cached = self._outcomes.get(key)
            if cached is not None:
                return cached
        out: list[Outcome] = []
        self._walk(cands, 0, dict(assumed), sender, tool, val, out)
        result = tuple(out)
        if keep:
            self._outcomes[key] = result
        return result

    def _walk(
        self,
        cands: tuple[RuleSpec, ...],
        i: int,
        given: dict[int, bool],
        sender: int,
        tool: int,
        val: Valuation,
        out: list[Outcome],
    ) -> None:
        """Try the rules from ``cands[i]`` on: the first that holds decides; a custom
        condition splits the walk in two. (A method, not a closure calling itself: such a
        closure is a reference cycle per call, kept while the cycle collector is paused.)"""
        while i < len(cands):
            rule = cands[i]
            res = evaluate(rule.code, sender, tool, val, given)
            if isinstance(res, Atom):
                self._walk(cands, i, {**given, res.id: True}, sender, tool, val, out)
                self._walk(cands, i, {**given, res.id: False}, sender, tool, val, out)
                return
            if res:
                self._resolve(rule.then, rule.index, sender, tuple(sorted(given.items())), out)
                return
            i += 1
        self._resolve(self.system.default, DEFAULT, sender, tuple(sorted(given.items())), out)

    def _resolve(
        self, target: m.Target, fired: int, sender: int, assumed: Assumed, out: list[Outcome]
    ) -> None:
        sys = self.system
        if isinstance(target, m.AgentTarget):
            out.append(Outcome(assumed, fired, sys.index_of(target.agent_id)))
        elif isinstance(target, m.RoundRobinTarget):
            out.append(Outcome(assumed, fired, (sender + 1) % len(sys.speakers)))
        elif isinstance(target, m.StayTarget):
            out.append(Outcome(assumed, fired, sender))
        elif isinstance(target, m.RevertToInitiatorTarget):
            out.append(Outcome(assumed, fired, sys.initiator))
        elif isinstance(target, m.TerminateTarget):
            out.append(Outcome(assumed, fired, -1, terminate_reason(target.reason)))
        else:
            results = sys.custom_results.get(target.name)
            options: tuple[str | None, ...] = (
                results if results is not None else (*sys.speakers, None)
            )
            call = sys.call_text(target)
            for res in options:
                if res is None:
                    out.append(
                        Outcome(assumed, fired, -1, None, f"{target.name} → terminate", call)
                    )
                else:
                    who = sys.speaker_index(res)
                    out.append(
                        Outcome(assumed, fired, who, None, f"{target.name} → {sys.name(who)}", call)
                    )

    def steps(self, key: NodeKey) -> Iterator[Step]:
        """Every turn the node's speaker may take, with every outcome."""
        for action, after, outcome in self.turns(key):
            yield Step(action, after, outcome)

    def turns(self, key: NodeKey) -> Iterator[tuple[Action, Valuation, Outcome]]:
        """:meth:`steps` as (action, valuation after, outcome), no :class:`Step` made (the
        exploration makes one for the few turns it keeps)."""
        sys = self.system
        actions: tuple[Action, ...] = (PLAIN,)
        if key == KICKOFF:
            speaker, val = sys.start, sys.initial
            if speaker in sys.humans:  # a human's kickoff may write its keys too
                actions = sys.actions[speaker]
        else:
            speaker, val = key
            actions = sys.actions[speaker]
        for action in actions:
            for after in self.after(val, action, speaker):
                if action.finish is not None:
                    yield action, after, Outcome((), FINISH, -1, finish_reason(action.finish))
                elif action.handoff is not None:
                    yield action, after, Outcome((), HANDOFF, action.handoff)
                else:
                    for outcome in self.route(speaker, action.tool_index, after):
                        yield action, after, outcome

    def after(self, val: Valuation | None, action: Action, speaker: int) -> Iterator[Valuation]:
        """The valuations after ``action``'s writes by ``speaker`` (``val`` None: a JSON
        graph's turn, which may write anything: :meth:`any_after`)."""
        if val is None:
            yield from self.any_after(speaker, action.tool_index)
            return
        if action.any_writes:  # a human: each key it writes may take any value, or be unset
            domains = [
                (UNSET, OTHER, *range(2, 2 + len(self.system.literals[k])))
                for k in action.any_writes
            ]
            for values in itertools.product(*domains):
                new = list(val)
                for k, v in zip(action.any_writes, values, strict=True):
                    new[k] = v
                yield tuple(new)
            return
        if not action.writes:
            yield val
            return
        new = list(val)
        for k, v in action.writes:
            new[k] = v
        yield tuple(new)

    def any_after(self, speaker: int, tool: int) -> tuple[Valuation, ...]:
        """A JSON graph's turn of ``speaker`` calling ``tool``: its participant may set any
        key a condition reads to any value one compares it with, or unset it, so every
        such valuation may follow the turn; but the turn goes where the keys its rules
        read send it, and a graph's node keeps no valuation, so the turns that differ only
        in the other keys are one turn. This gives one valuation of each such set, the
        first in the order of every valuation (keys in order, the first most significant;
        each key's values unset first, then the literals): every other key unset. A
        search that takes the first turn meeting a test of where it goes, or of the keys
        it reads, takes the same turn as over every valuation, and a graph whose rules
        each read a few of 16 keys takes a few turns a speaker, not 65,536."""
        reads = self.reads(speaker, tool)
        found = self._any_after.get(reads)  # (turns that read the same keys share them)
        if found is None:
            literals = self.system.literals
            domains = [(UNSET, *range(2, 2 + len(literals[k]))) for k in reads]
            out = []
            for values in itertools.product(*domains):
                new = [UNSET] * len(literals)
                for k, v in zip(reads, values, strict=True):
                    new[k] = v
                out.append(tuple(new))
            found = self._any_after[reads] = tuple(out)
        return found

    def next_key(self, step: Step) -> NodeKey:
        if step.outcome.speaker < 0:
            return ("end", step.outcome.reason)
        return (step.outcome.speaker, None if self.system.json_mode else step.after)


@attrs.frozen
class Longest:
    """The longest paths from the kickoff through the nodes that are not ends, worked out
    once for a state space (:meth:`StateSpace.longest`) and shared by everything that asks
    it, also by the versions the language server hands the space to: callers must not
    change its lists."""

    #: the nodes that are not ends, in topological order, those on or after a loop left out
    order: list[int]
    #: node -> the most turns from the kickoff to it (-1: not in ``order``)
    depth: list[int]
    #: node -> the node before it on such a path
    back: list[int]
    #: whether some nodes that are not ends lie on a loop or after one
    loop: bool
    #: the longest run that ends: (its turns, the node before its end, the end)
    best_end: tuple[int, int, int] | None


@attrs.define
class StateSpace:
    """The explored abstract system."""

    system: System
    explorer: Explorer
    graph: Any  # networkx.DiGraph over node ids
    keys: list[NodeKey]
    parent: list[int]
    dist: list[int]
    truncated: bool
    fired: set[int]
    default_fired: bool
    #: per speaker: the first node where its plain message fell to the default
    plain_default: dict[int, int]
    ends: list[int]
    bound: int = 0
    turns: int = 0
    #: rule file index (or DEFAULT) -> the node of the first turn (breadth-first, so the
    #: fewest turns) on which it fires
    first_fired: dict[int, int] = attrs.field(factory=dict)
    #: per node: the turn that found it (from its ``parent``; None for the kickoff), which
    #: is the first turn from the parent that leads to it
    parent_step: list[Step | None] = attrs.field(factory=list)
    #: per node: the last turn of the breadth-first path to it and the valuation after
    #: it (see :func:`flowc.compiler.analysis.runs.run_along`), built on demand
    tree_turns: dict[int, tuple[Any, Valuation]] = attrs.field(factory=dict, eq=False, repr=False)
    #: node -> the turns of the breadth-first path to it and the valuation after them, for
    #: the nodes findings end at (see :func:`flowc.compiler.analysis.runs.run_to`)
    tree_runs: dict[int, tuple[tuple[Any, ...], Valuation | None]] = attrs.field(
        factory=dict, eq=False, repr=False
    )
    #: node key -> node
    ids: dict[NodeKey, int] = attrs.field(factory=dict, eq=False, repr=False)
    #: what the checks work out from this space and the routing of the rules alone (what
    #: :meth:`System.shape` holds), by what was asked: shared with the spaces
    #: :meth:`rebound` makes, so an edit that keeps the shape does not work it out again
    #: (see :meth:`flowc.compiler.analysis.facts.Facts.shared`)
    memo: dict[Any, Any] = attrs.field(factory=dict, eq=False, repr=False)
    #: when ``truncated``: every node at this distance or less was found (they are the
    #: nodes a complete exploration finds first, with the same numbers and parents), and
    #: every node nearer than it was expanded; None when complete
    horizon: int | None = None
    #: when ``truncated``: what stopped it, ``"states"`` (the bound), ``"turns"`` (the
    #: turns allowed per state of the bound) or ``"memory"`` (:data:`MEMORY_BUDGET`)
    stopped_by: str = ""
    #: the memory the exploration was allowed (bytes; see :class:`MemoryGuard`)
    memory_budget: int = 0
    #: with ``explore(..., record=True)``: per node, its turns as (successor, tool,
    #: valuation after the turn's writes), in the order they were explored (what the
    #: properties read of each turn, :mod:`flowc.compiler.analysis.properties`)
    recorded: Recorded | None = attrs.field(default=None, eq=False, repr=False)
    #: the turns that give the turn back to who just spoke, before ``max_turns`` closes
    #: the run (AG2 stalls there: W221), the first of each cause in exploration order:
    #: (rule file index or DEFAULT / HANDOFF, the tool of a handoff) -> (node, turn)
    self_routes: dict[tuple[int, str | None], tuple[int, Step]] = attrs.field(
        factory=dict, eq=False, repr=False
    )
    #: the nodes before this one had every turn looked at for :attr:`self_routes` (all
    #: of them unless ``truncated``)
    self_routes_upto: int = 0

    def rebound(self, system: System) -> StateSpace:
        """This space as explored for ``system``, a system of the same shape
        (:meth:`System.shape`): the states, turns and graph are shared, and what names
        the source (rule spans, the compiled flow) is ``system``'s."""
        explorer = Explorer(system)
        # routing outcomes: by shape alone (with those the properties' wider system added,
        # ``explore(..., like=)``: kept by values this shape's own system never holds)
        explorer._outcomes = self.explorer._outcomes
        return attrs.evolve(self, system=system, explorer=explorer)

    @property
    def turns_left(self) -> int:
        """The turns the bound allows past those explored, for a look at the turns of the
        nodes found but not expanded (``self_routes_upto`` on): none once the exploration
        stopped at its turns or at its memory budget (that look would take as long as the
        exploration did again, or longer)."""
        if self.stopped_by in ("turns", "memory"):
            return 0
        return max(0, TURNS_PER_STATE * self.bound - self.turns)

    def speaker_of(self, node: int) -> int:
        key = self.keys[node]
        if key == KICKOFF:
            return self.system.start
        return int(key[0]) if key[0] != "end" else -1

    def is_end(self, node: int) -> bool:
        return bool(self.keys[node][0] == "end")

    def path_to(self, node: int) -> list[int]:
        path = [node]
        while path[-1] != 0:
            path.append(self.parent[path[-1]])
        return path[::-1]

    def longest(self) -> Longest:
        """The longest paths from the kickoff through the nodes that are not ends (I307's
        worst case, and whether a run reaches ``max_turns``): Kahn's algorithm over those
        nodes (node 0, the kickoff, has no turn into it; every node is reached from it),
        in one pass over the edges, worked out once for the space (:attr:`memo`)."""
        found: Longest | None = self.memo.get(("longest",))
        if found is not None:
            return found
        size = len(self.keys)
        succ = networkx_successors(self.graph)
        is_end = [self.is_end(v) for v in range(size)]
        into = [0] * size
        for u in range(size):
            if not is_end[u]:
                for v in succ[u]:
                    if not is_end[v]:
                        into[v] += 1
        depth = [-1] * size  # the most turns from the kickoff to the node
        back = [-1] * size  # the node before it on such a path
        depth[0] = 0
        order = [0]
        best_end: tuple[int, int, int] | None = None  # (turns, the node before, the end)
        i = 0
        while i < len(order):
            u = order[i]
            i += 1
            d = depth[u] + 1
            for v in succ[u]:
                if is_end[v]:
                    if best_end is None or d > best_end[0]:
                        best_end = (d, u, v)
                    continue
                if d > depth[v]:
                    depth[v], back[v] = d, u
                into[v] -= 1
                if not into[v]:
                    order.append(v)
        found = Longest(order, depth, back, len(order) < size - sum(is_end), best_end)
        self.memo[("longest",)] = found
        return found

    def runs_to_cap(self, cap: int) -> bool:
        """Whether some run takes ``cap`` turns without ending, in a complete space: a loop
        among the nodes that are not ends (a run goes round it until the cap), or such a
        node ``cap`` turns or more from the kickoff. (What a run of exactly ``cap`` turns
        built a turn at a time, :attr:`~flowc.compiler.analysis.facts.Facts.cap_walk`,
        finds, in one pass over the edges instead of one a turn.)

        >>> from flowc import compile_flow
        >>> from flowc.compiler.analysis.system import system_of_flow
        >>> space = explore(system_of_flow(compile_flow(
        ...     "speaker a\\nspeaker b\\nwhen from a then b\\nwhen from b then terminate")), 100)
        >>> space.runs_to_cap(1), space.runs_to_cap(2)
        (True, False)
        """
        assert not self.truncated
        found = self.longest()
        return found.loop or max(found.depth[v] for v in found.order) >= cap

    def step_between(self, u: int, v: int) -> Step:
        """The first turn (in exploration order) that leads from ``u`` to ``v``."""
        if v and self.parent[v] == u and v < len(self.parent_step):
            found = self.parent_step[v]
            if found is not None:
                return found  # the turn that found v is the first from u that leads there
        target = self.keys[v]
        for step in self.explorer.steps(self.keys[u]):
            if self.explorer.next_key(step) == target:
                return step
        raise LookupError(f"no step from {u} to {v}")  # pragma: no cover - edges come from steps


#: explored turns allowed per abstract state of the bound (a step budget, so that few
#: states with very many turns each cannot hang the checker either)
TURNS_PER_STATE = 20
#: a JSON graph's turns of a sender and tool have their routings kept (for a search that
#: routes them again, :class:`Explorer`'s ``keep_routes``) when the keys their rules read
#: take at most this many combinations of values (each unset, one it is compared with,
#: or another) ...
KEPT_GRAPH_COMBINATIONS = 4096
#: ... and the other turns' routings while fewer than this many are kept in all (a diff
#: between graphs whose rules read many keys meets a speaker's turns again on each state
#: of the pair it has: about 40 MB for each side's explorer)
KEPT_GRAPH_ROUTES_IN_ALL = 1 << 17

#: the most memory the explicit exploration may add to the process (its states, turns and
#: the lookups built on them roughly double it by the end of a check, so that a check
#: stays under 1 GiB): measured on the 10-key flows of ``benchmarks/bench_analysis.py``,
#: about 800 bytes a state, so a bound past ~350,000 states stops here first
MEMORY_BUDGET = 200 * 2**20

#: how often (in new states) the exploration looks at its memory
MEMORY_EVERY = 4096
#: ... and how often in turns: a turn adds an edge, and a few states may have millions of
#: turns to as many states (a human who writes many keys), where no new state is found
TURNS_PER_LOOK = 1 << 16
#: what the graph of the explored turns (:func:`flowc._compat.networkx_digraph`) takes for
#: an edge, at least: its entries in the successors' and the predecessors' dicts and its
#: data dict (about 150 bytes on CPython 3.11 with networkx 3.6). That graph is built
#: after the exploration, beside its set of edges, so the exploration also stops when the
#: graph would take more than its budget: where the turns far outnumber the states (a
#: human who writes many keys: thousands of turns a state, each to a state of its own),
#: the graph takes the memory, not the states. With a few turns a state, the states reach
#: the budget long before their graph would (then this changes nothing).
GRAPH_EDGE_BYTES = 128


class MemoryGuard:
    """Whether the process has grown by more than a budget since it was made: resident
    memory on Linux (``/proc/self/statm``), else the peak (``ru_maxrss``). Under an
    address-space limit (``RLIMIT_AS``) the budget is at most a fifth of what is left
    (what a check builds on the explored states takes about three times as much again)."""

    def __init__(self, budget: int = MEMORY_BUDGET):
        self.start = _resident()
        limit = address_space_left()
        self.budget = budget if limit is None else min(budget, limit // 5)

    def exceeded(self, kept: Recorded | None = None, edges: int = 0) -> bool:
        """Whether the process grew past the budget (``kept``'s bytes do not count:
        kept on purpose beside the states), or the graph of ``edges`` edges would
        (:data:`GRAPH_EDGE_BYTES`)."""
        if edges * GRAPH_EDGE_BYTES > self.budget:
            return True
        allowance = kept.size if kept is not None else 0
        return _resident() - self.start - allowance > self.budget


class Recorded:
    """Each explored node's turns, as :func:`explore` met them with ``record=True``: the
    successor, the tool called (or None) and the valuation after the turn's writes, kept
    as three arrays of numbers (a few bytes a turn: a large flow has a million turns).
    Nodes are expanded in the order of their numbers, so a node's turns are one run of
    the arrays.

    A node is the speaker to move and the valuation after the turn that led to it, so
    the valuation after a turn is its successor's, and only a turn that ends the run
    (or one of a JSON graph, whose nodes keep no valuation) has its own: the others
    are kept as -1, which spares hashing every turn's valuation."""

    def __init__(self, system: System) -> None:
        self.succ = array("q")
        self.tool = array("i")
        self.val = array("i")  # the valuation's number, or -1: the successor's
        self.start = array("q")  # node -> where its turns begin (one more at the end)
        #: tool number -> the tool (0: no tool)
        self.tools: list[str | None] = [None, *system.tool_names]
        self._tool_ids: dict[str | None, int] = {t: i for i, t in enumerate(self.tools)}
        self.vals: list[Valuation] = []
        self._val_ids: dict[Valuation, int] = {}

    def begin(self, node: int) -> None:
        """The turns of ``node`` come next (and every node before it is done)."""
        start, at = self.start, len(self.succ)
        while len(start) <= node:
            start.append(at)

    def add(self, v: int, tool: str | None, after: Valuation) -> None:
        """A turn to node ``v`` with its own valuation after it (:func:`explore` keeps
        the others itself: :meth:`appenders`)."""
        t = self._tool_ids.get(tool)
        if t is None:
            t = self._tool_ids[tool] = len(self.tools)
            self.tools.append(tool)
        a = self._val_ids.get(after)
        if a is None:
            a = self._val_ids[after] = len(self.vals)
            self.vals.append(after)
        self.succ.append(v)
        self.tool.append(t)
        self.val.append(a)

    def appenders(
        self,
    ) -> tuple[
        dict[str | None, int], Callable[[int], None], Callable[[int], None], Callable[[int], None]
    ]:
        """For a turn whose successor holds the valuation after it, known tools only:
        the tools' numbers, and what appends the successor, the tool's number and -1."""
        return self._tool_ids, self.succ.append, self.tool.append, self.val.append

    def close(self, nodes: int) -> None:
        self.begin(nodes)

    @property
    def size(self) -> int:
        """Bytes of the arrays."""
        return sum(a.itemsize * len(a) for a in (self.succ, self.tool, self.val, self.start))


def _resident() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def address_space_left() -> int | None:
    """Bytes of address space left under ``RLIMIT_AS`` (None: no limit, or not known)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm", "rb") as f:
            size = int(f.read().split()[0]) * _PAGE
    except (ImportError, OSError, ValueError, IndexError):  # pragma: no cover
        return None
    return max(0, soft - size)


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _self_route(
    self_routes: dict[tuple[int, str | None], tuple[int, Step]],
    u: int,
    action: Action,
    after: Valuation,
    outcome: Outcome,
    json_mode: bool,
) -> None:
    """Note a turn from node ``u`` that gives the turn back to its speaker, the first for
    its cause (the rule that fired, or the tool that handed off): W221's turns."""
    tool = action.tool
    if json_mode and tool is not None:
        return  # a JSON graph's tools are assumed
    cause = (outcome.fired, tool if outcome.fired == HANDOFF else None)
    if cause not in self_routes:
        self_routes[cause] = (u, Step(action, after, outcome))


def explore(
    system: System, max_states: int, *, record: bool = False, like: Explorer | None = None
) -> StateSpace:
    """Breadth-first exploration from the kickoff, bounded by ``max_states`` nodes, by
    ``TURNS_PER_STATE * max_states`` turns and by memory; ``record``: keep each node's turns
    (:attr:`StateSpace.recorded`); ``like``: an :class:`Explorer` whose routing to share.

    >>> from flowc import compile_flow
    >>> from flowc.compiler.analysis.system import system_of_flow
    >>> space = explore(system_of_flow(compile_flow("speaker a: human\\nspeaker b\\nsequence a -> b")), 100)
    >>> len(space.keys), space.truncated
    (3, False)
    """
    explorer = Explorer(system, like)
    ids: dict[NodeKey, int] = {KICKOFF: 0}
    keys: list[NodeKey] = [KICKOFF]
    parent, dist = [0], [0]
    parent_step: list[Step | None] = [None]
    edges: set[tuple[int, int]] = set()
    fired: set[int] = set()
    first_fired: dict[int, int] = {}
    default_fired = False
    plain_default: dict[int, int] = {}
    ends: list[int] = []
    queue: deque[int] = deque([0])
    truncated, turns = False, 0
    budget = TURNS_PER_STATE * max_states
    horizon: int | None = None
    memory, stopped_by = MemoryGuard(), ""
    recorded = Recorded(system) if record else None
    if recorded is not None:  # (Recorded.add is inlined below for most turns)
        rec_ids, rec_succ, rec_tool, rec_val = recorded.appenders()
    # W221's turns are noted here, on the one pass over every turn (see self_routes)
    cap = system.max_turns
    json_mode = system.json_mode
    self_routes: dict[tuple[int, str | None], tuple[int, Step]] = {}
    turns_of = explorer.turns
    u = 0
    while queue and not truncated:
        u = queue.popleft()
        key = keys[u]
        if key[0] == "end":
            continue
        if recorded is not None:
            recorded.begin(u)
        mover = system.start if u == 0 else key[0]
        late = cap is not None and dist[u] + 1 >= cap  # the run closes on this turn
        for action, after, outcome in turns_of(key):
            turns += 1
            if turns > budget:
                truncated, horizon, stopped_by = True, dist[u], "turns"
                break
            if not turns % TURNS_PER_LOOK and memory.exceeded(recorded, len(edges)):
                truncated, horizon, stopped_by = True, dist[u], "memory"
                break
            if outcome.speaker == mover and not late:
                _self_route(self_routes, u, action, after, outcome, json_mode)
            if outcome.fired >= 0 or outcome.fired == DEFAULT:
                first_fired.setdefault(outcome.fired, u)
            if outcome.fired >= 0:
                fired.add(outcome.fired)
            elif outcome.fired == DEFAULT:
                default_fired = True
                if u != 0 and action.is_plain:
                    plain_default.setdefault(key[0], u)
            # explorer.next_key(step), inlined: this runs on every turn
            who = outcome.speaker
            nxt = ("end", outcome.reason) if who < 0 else (who, None if json_mode else after)
            v = ids.get(nxt)
            if v is None:
                if len(keys) >= max_states:
                    truncated, horizon, stopped_by = True, dist[u], "states"
                    break
                v = len(keys)
                if not v % MEMORY_EVERY and memory.exceeded(recorded, len(edges)):
                    truncated, horizon, stopped_by = True, dist[u], "memory"
                    break
                ids[nxt] = v
                keys.append(nxt)
                parent.append(u)
                parent_step.append(Step(action, after, outcome))
                dist.append(dist[u] + 1)
                if nxt[0] == "end":
                    ends.append(v)
                queue.append(v)
            edges.add((u, v))
            if recorded is not None:
                tool_id = rec_ids.get(action.tool)
                if tool_id is None or json_mode or who < 0:
                    recorded.add(v, action.tool, after)
                else:  # (the successor holds the valuation after the turn: see Recorded)
                    rec_succ(v)
                    rec_tool(tool_id)
                    rec_val(-1)
    if recorded is not None:
        recorded.close(len(keys))
    return StateSpace(
        system=system,
        explorer=explorer,
        graph=networkx_digraph(len(keys), edges),
        keys=keys,
        parent=parent,
        dist=dist,
        truncated=truncated,
        fired=fired,
        default_fired=default_fired,
        plain_default=plain_default,
        ends=ends,
        bound=max_states,
        turns=turns,
        first_fired=first_fired,
        parent_step=parent_step,
        ids=ids,
        horizon=horizon,
        stopped_by=stopped_by,
        memory_budget=memory.budget,
        self_routes=self_routes,
        self_routes_upto=u if truncated else len(keys),
        recorded=recorded,
    )
