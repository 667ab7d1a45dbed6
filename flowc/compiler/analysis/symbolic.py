"""The symbolic explorer: the same abstract system as :mod:`explore`, with the valuations
of each speaker held as one set (a binary decision diagram) instead of one node each.

Why this representation: a flow's conditions compare context keys with finitely many
literals, its tools write constants, and a turn's routing depends on the speaker, the
tool and the keys its rules read. The valuations a speaker can be reached with are
then few *shapes* (every key free but one, say) even when they are millions of points:
a 200-speaker flow with ten three-valued keys has 11.8 million abstract states, but
each speaker's set is a diagram of a few dozen nodes. Speakers stay explicit (a flow's
rules are indexed by sender), only valuations are symbolic.

The exploration is breadth-first by layers (the layer of a state is its distance from
the kickoff, as in :func:`explore.explore`): layer ``d + 1`` is what the turns from
layer ``d`` reach that no earlier layer did. What it records is what the explicit
explorer records about the whole space: the states (their number), which speakers are
scheduled and from which layer, which rules and the default fire and from which
layer, which endings are reached and at which distance. A differential test holds the
two explorers to the same answers on every flow the explicit one completes
(``tests/check/test_symbolic.py``).

Custom conditions are variables of the diagram, free on every turn and quantified away
once the turn is routed, so each may be true or false on each turn, and the same call is
the same value within one turn (as the explicit explorer's assumptions).

The diagrams come from ``dd`` (CUDD through its compiled module where the wheel has
one, else its pure-Python one).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import Any

import attrs

from flowc._compat import dd_out_of_memory
from flowc.compiler import model as m
from flowc.compiler.analysis.explore import (
    DEFAULT,
    FINISH,
    HANDOFF,
    KICKOFF,
    Candidates,
    Explorer,
    NodeKey,
    Step,
    address_space_left,
    satisfiable,
)
from flowc.compiler.analysis.system import (
    PLAIN,
    UNSET,
    Action,
    CondCode,
    RuleSpec,
    System,
    Valuation,
)
from flowc.compiler.tool_effects import finish_reason, terminate_reason

__all__ = ["UNSET", "Symbolic", "SymbolicFacts", "explore_symbolic"]

#: CUDD's memory, for the two managers a check may make (each gets half, its tables sized
#: for that half): an operation that would take more fails (the exploration then gives
#: up, see :func:`explore_symbolic`) instead of the process growing past its bound. The
#: diagrams of the largest flows measured use a few MiB (``benchmarks/bench_analysis.py``:
#: the 200-speaker, 3.8-million-state instance fits in 32 MiB); diagrams that outgrow it
#: belong to a flow whose sets have no small description, where the count would run for
#: minutes (60 speakers and 40 two-valued keys, 4 context rules a speaker, the shape of
#: ``tests/hostile/test_memory_shapes.py``: `flowc check` gives up in 17 s of CPU with
#: this ceiling; with 512 MiB it was still counting after 120 s)
_CUDD_MAX_MEMORY = 64 * 2**20
#: each reordering of the variables (CUDD's group sifting, started when the diagrams
#: have doubled) moves at most this many variables, by at most this many swaps in all:
#: one reordering on such a flow otherwise ran past 50 s inside a single operation
_SIFT_MAX_VARS = 20
_SIFT_MAX_SWAPS = 500


def _manager() -> Any:
    """A new diagram manager: CUDD's where ``dd`` was built with it (its wheels are), else
    ``dd``'s own. Imported here, not with the module: loading CUDD takes about 0.1 s,
    which only a flow too large to explore one state at a time should pay.

    All of CUDD's memory is at most :data:`_CUDD_MAX_MEMORY`, a quarter of the machine's,
    and a third of what an address-space limit (``RLIMIT_AS``) leaves; a check makes two
    managers at most (the exploration's, and one that explores the layers again for
    runs), each given half."""
    try:  # pragma: no cover - which one depends on how dd was installed
        from dd.cudd import BDD
    except ImportError:  # pragma: no cover
        from dd.autoref import BDD

        return BDD()
    ceiling = _CUDD_MAX_MEMORY
    physical = _physical_memory()
    if physical is not None:
        ceiling = min(ceiling, physical // 4)
    left = address_space_left()
    if left is not None:
        ceiling = min(ceiling, left // 3)
    ceiling //= 2
    # (dd refuses, and prints, an estimate above the physical memory: the ceiling is under it)
    bdd = BDD(memory_estimate=max(2**20, ceiling))
    bdd.configure(
        reordering=True,
        max_memory=max(2**20, ceiling),
        max_vars=_SIFT_MAX_VARS,
        max_swaps=_SIFT_MAX_SWAPS,
    )
    return bdd


def _physical_memory() -> int | None:
    """Bytes of physical memory (None: not known)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        return None


@attrs.frozen
class SymbolicFacts:
    """What a complete symbolic exploration found (distances in turns from the kickoff)."""

    #: abstract states, counted as the explicit explorer counts its nodes: the kickoff,
    #: every (speaker, valuation) and every ending (one per terminate reason)
    states: int
    #: speaker index -> the layer of its first state (the start speaker: its kickoff, 0)
    scheduled: dict[int, int]
    #: rule file index, DEFAULT, HANDOFF or FINISH -> the layer of the first turn it decides
    fired: dict[int, int]
    #: terminate reason (None: chosen by a custom target) -> the distance of that ending
    ends: dict[str | None, int]
    #: speaker -> the layer of the first turn where its plain message fell to the default
    plain_default: dict[int, int]
    #: the number of layers (the greatest distance of a state, plus one)
    layers: int
    #: the greatest distance of a state that is not an ending
    deepest: int
    #: the states themselves, for questions about all of them (None in a comparison)
    reach: Reach | None = attrs.field(default=None, eq=False, repr=False)


class Reach:
    """Every reachable state, as each speaker's set of valuations: questions about all
    of them (``Facts`` asks these when the explicit exploration stopped at its bound)."""

    def __init__(
        self,
        sym: Symbolic,
        kickoff: tuple[Action, ...],
        reached: list[Any],
    ):
        self.sym = sym
        self.kickoff = kickoff
        self.reached = reached
        self._layers: list[list[tuple[int, Any]]] | None = None
        self._again: Symbolic | None = None
        self._more: Iterator[list[tuple[int, Any]]] | None = None
        self._turns: list[tuple[int, Action, Any]] | None = None
        self._explorer: Explorer | None = None
        self._edge_cache: tuple[list[tuple[int, Action, int, Any]], list[Any]] | None = None
        self._on: list[Any] | None = None

    # concrete runs ------------------------------------------------------------------
    #
    # A run to a state the explicit exploration did not reach is read backwards through
    # the layers: a state of layer d has a turn from some state of layer d - 1. Of those,
    # the first speaker (in declaration order), its first action and one valuation (the
    # diagram's first, CUDD's ``pick``) is taken: a shortest run, though not necessarily
    # the one a complete breadth-first exploration would have found first.

    def layer(self, d: int) -> list[tuple[int, Any]]:
        """Layer ``d``: (speaker, the valuations first reached there); layer 0 is the
        kickoff. The layers are explored again (in a manager of their own, in the
        variable order the first exploration found), only as far as asked."""
        if self._layers is None:
            order = dict(self.sym.bdd.var_levels) if hasattr(self.sym.bdd, "reorder") else None
            self._again = Symbolic(self.sym.system, order)
            self._layers = []
            self._more = _layers(self._again, self.kickoff)
        assert self._more is not None
        while len(self._layers) <= d:
            nxt = next(self._more, None)
            if nxt is None:
                raise IndexError(d)  # pragma: no cover - asked only for layers that exist
            self._layers.append(nxt)
        return self._layers[d]

    def layers(self) -> Iterator[tuple[int, list[tuple[int, Any]]]]:
        """Every layer, in order, explored again as far as the caller reads."""
        d = 0
        while True:
            try:
                yield d, self.layer(d)
            except IndexError:
                return
            d += 1

    @property
    def explorer(self) -> Explorer:
        if self._explorer is None:
            self._explorer = Explorer(self.sym.system)
        return self._explorer

    @property
    def again(self) -> Symbolic:
        """The manager the layers live in (made by the first :meth:`layer`)."""
        self.layer(0)
        assert self._again is not None
        return self._again

    def pick(self, u: Any) -> Valuation:
        """One valuation of the set ``u`` (not empty; a set of the layers' manager)."""
        sym = self.again
        found = sym.bdd.pick(u, care_vars=set(sym.key_vars))
        assert found is not None
        return tuple(
            sum(1 << b for b, name in enumerate(names) if found[name]) for names in sym.bits
        )

    def actions_on(self, layer: int, speaker: int) -> tuple[Action, ...]:
        return self.kickoff if layer == 0 else self.sym.system.actions[speaker]

    def key_of(self, layer: int, speaker: int, val: Valuation) -> NodeKey:
        return KICKOFF if layer == 0 else (speaker, val)

    def step_to(self, layer: int, speaker: int, val: Valuation) -> tuple[int, Valuation, Step]:
        """A turn from a state of ``layer - 1`` to ``(speaker, val)``: that state's speaker
        and valuation, and the turn."""
        sym, explorer = self.again, self.explorer
        y = sym.point(val)
        for s, u in self.layer(layer - 1):
            for action in self.actions_on(layer - 1, s):
                pre = u & sym.before(y, action)
                if pre == sym.bdd.false:
                    continue
                before = self.pick(pre)
                key = self.key_of(layer - 1, s, before)
                for step in explorer.steps(key):
                    if (
                        step.action == action
                        and step.after == val
                        and step.outcome.speaker == speaker
                    ):
                        return s, before, step
        raise LookupError("no turn into a state of its layer")  # pragma: no cover

    def path_to(
        self, layer: int, speaker: int, val: Valuation, known: Callable[[NodeKey], int | None]
    ) -> tuple[int, list[tuple[int, Step]]]:
        """A shortest run to the state ``(speaker, val)`` of ``layer``: the first state on
        it (going backwards) that ``known`` numbers, and the turns (speaker, step) from
        there. ``known`` numbers at least the kickoff (0)."""
        steps: list[tuple[int, Step]] = []
        while True:
            node = known(self.key_of(layer, speaker, val))
            if node is not None:
                return node, steps[::-1]
            speaker, val, step = self.step_to(layer, speaker, val)
            layer -= 1
            steps.append((speaker, step))

    def concrete(
        self, layer: int, s: int, u: Any, action: Action, v: Any, wanted: Callable[[Step], bool]
    ) -> tuple[Valuation, Step] | None:
        """One turn of speaker ``s`` taking ``action`` from a valuation of ``u`` (a set of
        ``layer``) into ``v`` (what :meth:`Symbolic.outcomes` gave for that action), as the
        explicit explorer takes it: the valuation before it and the first of its steps
        that ``wanted`` accepts (its routing, under the custom outcomes that make it so)."""
        sym = self.again
        before = self.pick(u & sym.before(sym.point(self.pick(v)), action))
        for step in self.explorer.steps(self.key_of(layer, s, before)):
            if step.action == action and wanted(step):
                return before, step
        return None

    def longest(
        self, cap: int | None, limit: int
    ) -> tuple[str, int, list[tuple[int, Step]]] | None:
        """The worst case of the flow's runs (:mod:`flowc.compiler.analysis.worst`), read
        from the count: ``("cap", cap, turns)`` when some run takes ``cap`` turns without
        ending (``turns``: such a run), else ``("ends", n, turns)`` when every run ends by
        itself, the longest after ``n`` turns (``turns``: one, its last turn the ending);
        None past ``limit`` turns, or with no cap when some run never ends.

        Unlike the layers (where a state is first reached), level ``t`` here holds every
        state some run is in after exactly ``t`` turns: a run's length is not its
        distance (a state first reached after ``cap`` turns gives the cap's case at once:
        its shortest run)."""
        sym = self.again
        false = sym.bdd.false
        system = sym.system
        if cap is None and self.cyclic():
            return None
        if cap is not None and cap <= limit:
            try:  # a state first reached after ``cap`` turns: its shortest run is one
                deep = self.layer(cap)
            except IndexError:
                deep = []
            if deep:
                s, u = deep[0]
                _, turns = self.path_to(cap, s, self.pick(u), _only_the_kickoff)
                return "cap", cap, turns
        horizon = limit if cap is None else min(cap, limit)
        levels: list[list[tuple[int, Any]]] = [[(system.start, sym.point(system.initial))]]
        #: the first turn (in order) of the last level with one that ends the run
        ending: tuple[int, int, Any, Action, Any] | None = None
        while len(levels) - 1 < horizon:
            t = len(levels) - 1
            found = [false] * len(system.speakers)
            for s, u in levels[t]:
                for action in self.actions_on(t, s):
                    for _, nxt, _, v in sym.outcomes(s, action, u):
                        if nxt >= 0:
                            found[nxt] |= v
                        elif ending is None or ending[0] < t:
                            ending = (t, s, u, action, v)
            level = [(s, u) for s, u in enumerate(found) if u != false]
            if not level:
                break
            levels.append(level)
        else:
            if cap is None or cap > limit:
                return None  # some run goes on past the limit
            s, u = levels[cap][0]  # some run takes ``cap`` turns without ending
            return "cap", cap, self._back(levels, cap, s, self.pick(u), [])
        assert ending is not None, "every run ends, so some turn ends one"
        t, s, u, action, v = ending
        found_end = self.concrete(t, s, u, action, v, lambda step: step.outcome.speaker < 0)
        assert found_end is not None
        before, step = found_end
        return "ends", t + 1, self._back(levels, t, s, before, [(s, step)])

    def _back(
        self,
        levels: list[list[tuple[int, Any]]],
        t: int,
        speaker: int,
        val: Valuation,
        after: list[tuple[int, Step]],
    ) -> list[tuple[int, Step]]:
        """The turns of a run that is in ``(speaker, val)`` after exactly ``t`` turns (read
        backwards through ``levels``, as :meth:`step_to` reads the layers), then ``after``."""
        sym, explorer = self.again, self.explorer
        turns: list[tuple[int, Step]] = []
        while t > 0:
            y = sym.point(val)
            found: tuple[Valuation, Step] | None = None
            for s, u in levels[t - 1]:
                for action in self.actions_on(t - 1, s):
                    pre = u & sym.before(y, action)
                    if pre == sym.bdd.false:
                        continue
                    before = self.pick(pre)
                    for step in explorer.steps(self.key_of(t - 1, s, before)):
                        if (
                            step.action == action
                            and step.after == val
                            and step.outcome.speaker == speaker
                        ):
                            found = before, step
                            break
                    if found is not None:
                        break
                if found is not None:
                    break
            else:  # pragma: no cover - a state of a level has a turn into it
                raise LookupError("no turn into a state of its level")
            assert found is not None
            turns.append((s, found[1]))
            speaker, val, t = s, found[0], t - 1
        return [*turns[::-1], *after]

    def first_end(self, reason: str | None, distance: int) -> tuple[int, int, Valuation, Step]:
        """A turn that ends a run with ``reason`` from a state of layer ``distance - 1``:
        (layer, speaker, valuation, the turn)."""
        layer = distance - 1

        def ends(step: Step) -> bool:
            return step.outcome.speaker < 0 and step.outcome.reason == reason

        for s, u in self.layer(layer):
            for action in self.actions_on(layer, s):
                for _, nxt, why, v in self.again.outcomes(s, action, u):
                    if nxt < 0 and why == reason:
                        found = self.concrete(layer, s, u, action, v, ends)
                        if found is not None:
                            return layer, s, *found
        raise LookupError("no turn ends there")  # pragma: no cover

    def deciders(self, fired: set[int], layer: int) -> dict[int, list[tuple[int, Valuation, Step]]]:
        """For each of ``fired`` (rule file indices, or DEFAULT): each speaker (in
        declaration order) with a turn from a state of ``layer`` that it decides, with the
        valuation before the turn and the turn."""
        out: dict[int, list[tuple[int, Valuation, Step]]] = {f: [] for f in fired}
        for s, u in self.layer(layer):
            done: set[int] = set()
            for action in self.actions_on(layer, s):
                for decided, _, _, v in self.again.outcomes(s, action, u):
                    if decided not in out or decided in done:
                        continue
                    found = self.concrete(layer, s, u, action, v, _decides(decided))
                    if found is not None:
                        out[decided].append((s, *found))
                        done.add(decided)
        return out

    def lasts(self, turns: int) -> bool:
        """Whether some run takes ``turns`` turns without ending: the states ``k`` turns
        from the kickoff (by any run, not only the shortest) are followed up to ``turns``."""
        if self.cyclic():
            return True
        sym, system = self.sym, self.sym.system
        false = sym.bdd.false
        work = [(system.start, self.kickoff, sym.point(system.initial))]
        for _ in range(turns):
            found = [false] * len(system.speakers)
            for s, actions, u in work:
                for action in actions:
                    for _, nxt, _, v in sym.outcomes(s, action, u):
                        if nxt >= 0:
                            found[nxt] |= v
            work = [(s, system.actions[s], u) for s, u in enumerate(found) if u != false]
            if not work:
                return False
        return True

    def first_match(
        self, rule: RuleSpec, order: Candidates | None = None
    ) -> tuple[int, int, Valuation, Step] | None:
        """The first layer with a turn where the rule's condition holds (and, with
        ``order``, no rule before it in that order does): (layer, speaker, valuation before
        the turn, the turn as the rules route it under assumptions that make it hold)."""
        sym = self.again
        bdd = sym.bdd
        for layer, states in self.layers():
            for s, u in states:
                if rule.senders is not None and s not in rule.senders:
                    continue
                for action in self.actions_on(layer, s):
                    if action.finish is not None or action.handoff is not None:
                        continue
                    tool = action.tool_index
                    after = sym.after(u, action)
                    hit = after & sym.cond(rule.code, s, tool)
                    wanted: list[tuple[CondCode, bool]] = [(rule.code, True)]
                    if order is not None and hit != bdd.false:
                        for other in order.of(s, tool):
                            if other.index == rule.index:
                                break
                            hit &= ~sym.cond(other.code, s, tool)
                            wanted.append((other.code, False))
                    if hit == bdd.false:
                        continue
                    if sym.atom_vars:
                        hit = bdd.exist(sym.atom_vars, hit)
                    y = self.pick(hit)
                    before = self.pick(u & sym.before(sym.point(y), action))
                    assumed = satisfiable(wanted, s, tool, y, {})
                    assert assumed is not None
                    outcome = self.explorer.route(s, tool, y, tuple(sorted(assumed.items())))[0]
                    return layer, s, before, Step(action, y, outcome)
        return None

    def turns(self) -> list[tuple[int, Action, Any]]:
        """Every routed turn: (speaker, action, the valuations after its writes), the
        kickoff's first; a finish or a hand-off is decided without the rules."""
        if self._turns is None:
            sym, system = self.sym, self.sym.system
            out: list[tuple[int, Action, Any]] = []
            sources = [(system.start, self.kickoff, sym.point(system.initial))]
            sources += [
                (s, system.actions[s], u) for s, u in enumerate(self.reached) if u != sym.bdd.false
            ]
            for speaker, actions, u in sources:
                for action in actions:
                    if action.finish is None and action.handoff is None:
                        after = sym.after(u, action)
                        if after != sym.bdd.false:
                            out.append((speaker, action, after))
            self._turns = out
        return self._turns

    def matchable(self, rule: RuleSpec) -> bool:
        """Whether the rule's condition holds on some turn of some run (whatever fires)."""
        sym = self.sym
        for speaker, action, after in self.turns():
            if rule.senders is not None and speaker not in rule.senders:
                continue
            if after & sym.cond(rule.code, speaker, action.tool_index) != sym.bdd.false:
                return True
        return False

    def fires_in_file_order(self, rule: RuleSpec, order: Candidates) -> bool:
        """Whether, on some turn of some run, the rule's condition holds and that of no
        rule before it in ``order`` (the file order) does."""
        sym = self.sym
        false = sym.bdd.false
        for speaker, action, after in self.turns():
            if rule.senders is not None and speaker not in rule.senders:
                continue
            tool = action.tool_index
            remaining = after
            for other in order.of(speaker, tool):
                c = sym.cond(other.code, speaker, tool)
                if other.index == rule.index:
                    if remaining & c != false:
                        return True
                    break
                remaining &= ~c
                if remaining == false:
                    break
        return False

    def _edges(self) -> tuple[list[tuple[int, Action, int, Any]], list[Any]]:
        """Every turn between reachable states: (speaker, action, next speaker, the
        valuations after), and per speaker the valuations from which a turn ends the run."""
        if self._edge_cache is None:
            sym, system = self.sym, self.sym.system
            edges: list[tuple[int, Action, int, Any]] = []
            ending = [sym.bdd.false] * len(system.speakers)
            for s, u in enumerate(self.reached):
                if u == sym.bdd.false:
                    continue
                for action in system.actions[s]:
                    for _, nxt, _, v in sym.outcomes(s, action, u):
                        if nxt < 0:
                            ending[s] |= u & sym.before(v, action)
                        else:
                            edges.append((s, action, nxt, v))
            self._edge_cache = (edges, ending)
        return self._edge_cache

    def cyclic(self) -> bool:
        """Whether some run can go on for ever (were there no ``max_turns``): some
        reachable state lies on a loop of turns, or leads to one. The states with a turn to
        such a state are found by shrinking the reachable ones to a fixpoint (a speaker's
        set is computed again only when a set its turns lead to shrank)."""
        return any(u != self.sym.bdd.false for u in self._looping())

    def _looping(self) -> list[Any]:
        """Per speaker, the reachable valuations on a loop of turns or leading to one
        (:meth:`cyclic`), worked out once."""
        if self._on is not None:
            return self._on
        sym = self.sym
        false = sym.bdd.false
        edges, _ = self._edges()
        out: list[list[tuple[Action, int, Any]]] = [[] for _ in self.reached]
        into: list[set[int]] = [set() for _ in self.reached]
        for s, action, nxt, v in edges:
            out[s].append((action, nxt, v))
            into[nxt].add(s)
        on = list(self.reached)
        dirty = {s for s, u in enumerate(on) if u != false}
        while dirty:
            s = dirty.pop()
            keep = false
            for action, nxt, v in out[s]:
                keep |= sym.before(v & on[nxt], action)
            keep &= on[s]
            if keep != on[s]:
                on[s] = keep
                dirty |= into[s]
        self._on = on
        return on

    def lasso(self, limit: int) -> tuple[list[tuple[int, Step]], int] | None:
        """A run that never ends (were there no ``max_turns``): from the kickoff, each
        turn the first (in the explorer's order) into a state on a loop or leading to one
        (:meth:`_looping`: from each such state some turn leads to another), until a
        state comes again. Its turns (speaker, turn) and the turn the loop starts from;
        None when no run goes on for ever, or no state comes again within ``limit``
        turns."""
        on = self._looping()
        sym, explorer, system = self.sym, self.explorer, self.sym.system
        false = sym.bdd.false
        key: NodeKey = KICKOFF
        speaker = system.start
        seen: dict[NodeKey, int] = {}
        turns: list[tuple[int, Step]] = []
        while key not in seen:
            if len(turns) >= limit:
                return None
            seen[key] = len(turns)
            for step in explorer.steps(key):
                nxt = step.outcome.speaker
                if nxt >= 0 and sym.point(step.after) & on[nxt] != false:
                    break
            else:
                return None  # (the kickoff leads to no loop: no run goes on for ever)
            turns.append((speaker, step))
            key, speaker = explorer.next_key(step), nxt
        return turns, seen[key]

    def trapped(self) -> bool:
        """Whether some reachable state cannot reach an end (a loop no run leaves): the
        states that can are found backwards from the turns that end a run, each step from
        only what the last one added."""
        sym = self.sym
        false = sym.bdd.false
        edges, ending = self._edges()
        into: list[list[tuple[int, Action, Any]]] = [[] for _ in self.reached]
        for s, action, nxt, v in edges:
            into[nxt].append((s, action, v))
        can = list(ending)
        new = {s: u for s, u in enumerate(can) if u != false}
        while new:  # one step back from all that the last step added, per speaker together
            found: dict[int, Any] = {}
            for t, added in new.items():
                for s, action, v in into[t]:
                    back = sym.before(v & added, action) & self.reached[s] & ~can[s]
                    if back != false:
                        found[s] = found.get(s, false) | back
            for s, u in found.items():
                can[s] |= u
            new = found
        return any(u & ~c != false for u, c in zip(self.reached, can, strict=True))


def _only_the_kickoff(key: NodeKey) -> int | None:
    """:meth:`Reach.path_to`'s ``known`` for a run read back to the kickoff (node 0)."""
    return 0 if key == KICKOFF else None


def _decides(fired: int) -> Callable[[Step], bool]:
    """Whether a step's routing is decided by ``fired`` (a rule's file index, or DEFAULT)."""
    return lambda step: step.outcome.fired == fired


class Symbolic:
    """Explores a :class:`System` of a `.flow` symbolically; see :func:`explore_symbolic`."""

    def __init__(self, system: System, order: dict[str, int] | None = None):
        if system.json_mode:
            raise ValueError("a JSON graph's writes are not declared: explore it explicitly")
        self.system = system
        self.bdd = bdd = _manager()
        #: per key: its bit variables (least significant first) and its domain size
        self.bits: list[tuple[str, ...]] = []
        self.sizes: list[int] = []
        for k, lits in enumerate(system.literals):
            size = 2 + len(lits)
            width = max(1, (size - 1).bit_length())
            names = tuple(f"k{k}_{b}" for b in range(width))
            bdd.declare(*names)
            self.bits.append(names)
            self.sizes.append(size)
        self.key_vars = [v for names in self.bits for v in names]
        self.atom_vars = [f"a{atom.id}" for atom in system.atoms]
        if self.atom_vars:
            bdd.declare(*self.atom_vars)
        if order is not None and hasattr(bdd, "reorder"):  # an order found before: kept
            bdd.reorder(order)
            bdd.configure(reordering=False)
        self._values: dict[tuple[int, int], Any] = {}
        self._domains: dict[int, Any] = {}
        self._conds: dict[tuple[int, int, int], Any] = {}
        self._candidates = Candidates(system.ordered, len(system.speakers), attrgetter("rank"))

    # sets of valuations -------------------------------------------------------

    def value(self, key: int, value: int) -> Any:
        """The valuations where ``key`` has the abstract ``value``."""
        found = self._values.get((key, value))
        if found is None:
            bdd = self.bdd
            found = bdd.true
            for b, name in enumerate(self.bits[key]):
                var = bdd.var(name)
                found &= var if value >> b & 1 else ~var
            self._values[(key, value)] = found
        return found

    def domain(self, key: int) -> Any:
        """The valuations where ``key`` has one of its abstract values (unset, another
        value, or a literal the flow compares it with): what a human may write."""
        found = self._domains.get(key)
        if found is None:
            found = self.bdd.false
            for v in range(self.sizes[key]):
                found |= self.value(key, v)
            self._domains[key] = found
        return found

    def point(self, val: tuple[int, ...]) -> Any:
        """One valuation."""
        out = self.bdd.true
        for k, v in enumerate(val):
            out &= self.value(k, v)
        return out

    def count(self, u: Any) -> int:
        """The number of valuations in ``u``."""
        if u == self.bdd.false:
            return 0
        return int(self.bdd.count(u, nvars=len(self.key_vars)))

    def before(self, v: Any, action: Action) -> Any:
        """The valuations from which ``action``'s writes lead into ``v``."""
        bdd = self.bdd
        keys = action.any_writes or tuple(k for k, _ in action.writes)
        if action.any_writes:
            for k in keys:
                v = bdd.exist(self.bits[k], v & self.domain(k)) & self.domain(k)
            return v
        # the last write of a key is what stays; the value before it is free
        final: dict[int, int] = {}
        for k, value in action.writes:
            final[k] = value
        for k, value in final.items():
            v = bdd.exist(self.bits[k], v & self.value(k, value)) & self.domain(k)
        return v

    def after(self, u: Any, action: Action) -> Any:
        """The valuations after ``action``'s writes, from those in ``u``."""
        bdd = self.bdd
        if action.any_writes:
            for k in action.any_writes:
                u = bdd.exist(self.bits[k], u) & self.domain(k)
            return u
        for k, v in action.writes:
            u = bdd.exist(self.bits[k], u) & self.value(k, v)
        return u

    # conditions -----------------------------------------------------------------

    def cond(self, code: CondCode, sender: int, tool: int) -> Any:
        """Where a compiled condition holds on a turn of ``sender`` calling ``tool``."""
        key = (id(code), sender, tool)
        found = self._conds.get(key)
        if found is None:
            found = self._conds[key] = self._cond(code, sender, tool)
        return found

    def _cond(self, code: CondCode, sender: int, tool: int) -> Any:
        bdd = self.bdd
        kind = code[0]
        if kind == "T":
            return bdd.true
        if kind == "from":
            return bdd.true if code[1] == sender else bdd.false
        if kind == "tool":
            return bdd.true if code[1] == tool else bdd.false
        if kind == "ctx":
            out = bdd.false
            for v in sorted(code[2]):
                if v < self.sizes[code[1]]:
                    out |= self.value(code[1], v)
            return out
        if kind == "custom":
            return bdd.var(f"a{code[1].id}")
        if kind == "not":
            return ~self.cond(code[1], sender, tool)
        parts = [self.cond(c, sender, tool) for c in code[1]]
        if kind == "all":
            out = bdd.true
            for p in parts:
                out &= p
            return out
        out = bdd.false
        for p in parts:
            out |= p
        return out

    # turns -----------------------------------------------------------------------

    def outcomes(self, speaker: int, action: Action, u: Any) -> Iterator[tuple[int, int, Any, Any]]:
        """The turns of ``speaker`` taking ``action`` from the valuations ``u``:
        (what decided, next speaker or -1, terminate reason, the valuations after)."""
        after = self.after(u, action)
        if after == self.bdd.false:
            return
        if action.finish is not None:
            yield FINISH, -1, finish_reason(action.finish), after
            return
        if action.handoff is not None:
            yield HANDOFF, action.handoff, None, after
            return
        bdd = self.bdd
        tool = action.tool_index
        remaining = after
        for rule in self._candidates.of(speaker, tool):
            c = self.cond(rule.code, speaker, tool)
            hit = remaining & c
            if hit != bdd.false:
                if self.atom_vars:
                    hit = bdd.exist(self.atom_vars, hit)
                yield from self._resolve(rule.then, rule.index, speaker, hit)
                remaining &= ~c
                if remaining == bdd.false:
                    return
        if self.atom_vars:
            remaining = bdd.exist(self.atom_vars, remaining)
        yield from self._resolve(self.system.default, DEFAULT, speaker, remaining)

    def _resolve(
        self, target: m.Target, fired: int, sender: int, u: Any
    ) -> Iterator[tuple[int, int, Any, Any]]:
        sys = self.system
        if isinstance(target, m.AgentTarget):
            yield fired, sys.index_of(target.agent_id), None, u
        elif isinstance(target, m.RoundRobinTarget):
            yield fired, (sender + 1) % len(sys.speakers), None, u
        elif isinstance(target, m.StayTarget):
            yield fired, sender, None, u
        elif isinstance(target, m.RevertToInitiatorTarget):
            yield fired, sys.initiator, None, u
        elif isinstance(target, m.TerminateTarget):
            yield fired, -1, terminate_reason(target.reason), u
        else:
            results = sys.custom_results.get(target.name)
            options = results if results is not None else (*sys.speakers, None)
            for res in options:
                if res is None:
                    yield fired, -1, None, u
                else:
                    yield fired, sys.speaker_index(res), None, u


#: the most speaker-layers (one speaker's new states on one layer, whose turns are worked
#: out together) an exploration steps through before it gives up: the 200-speaker,
#: 3.8-million-state instance of ``benchmarks/bench_analysis.py`` takes 22,400
WORK_BUDGET = 100_000


def explore_symbolic(
    system: System,
    budget: int = WORK_BUDGET,
    *,
    order: dict[str, int] | None = None,
) -> SymbolicFacts | None:
    """Explore every state of a `.flow`'s system, breadth-first by layers; None when the
    work took more than ``budget`` speaker-layers, or the diagrams more memory than CUDD
    was given (see :func:`_manager`: an operation then fails). CUDD's own node count is
    not read: it walks every node (10 ms a call on the largest flows measured).

    ``order`` is a variable order to keep instead of reordering dynamically.

    >>> from flowc import compile_flow
    >>> from flowc.compiler.analysis.system import system_of_flow
    >>> flow = compile_flow('''speaker u: human
    ... speaker b { tool go sets k = 1 }
    ... start u
    ... when context.k == 1 then terminate "done"
    ... when from u then b
    ... when from b then u''')
    >>> facts = explore_symbolic(system_of_flow(flow))
    >>> facts.states, sorted(facts.scheduled.items()), facts.ends
    (4, [(0, 0), (1, 1)], {'done': 2})
    """
    try:
        return _explore(system, budget, order)
    except (MemoryError, RuntimeError, ValueError) as error:
        if dd_out_of_memory(error):  # CUDD's memory ceiling: an operation failed
            return None
        raise


def _explore(system: System, budget: int, order: dict[str, int] | None) -> SymbolicFacts | None:
    sym = Symbolic(system, order)
    bdd = sym.bdd
    n = len(system.speakers)
    reached = [bdd.false] * n
    scheduled: dict[int, int] = {system.start: 0}
    fired: dict[int, int] = {}
    ends: dict[str | None, int] = {}
    plain_default: dict[int, int] = {}
    kickoff_actions: tuple[Action, ...] = (PLAIN,)
    if system.start in system.humans:  # a human's kickoff may write its keys too
        kickoff_actions = system.actions[system.start]
    # layer 0 is the kickoff alone; its turns are the start speaker's, from the initial values
    work: list[tuple[int, tuple[Action, ...], Any]] = [
        (system.start, kickoff_actions, sym.point(system.initial))
    ]
    layer = 0
    states = 1
    spent = 0
    while work:
        spent += len(work)
        if spent > budget:
            return None
        found = [bdd.false] * n
        for speaker, actions, u in work:
            for action in actions:
                for decided, nxt, reason, v in sym.outcomes(speaker, action, u):
                    fired.setdefault(decided, layer)
                    if decided == DEFAULT and layer and action.is_plain:
                        plain_default.setdefault(speaker, layer)
                    if nxt < 0:
                        if reason not in ends:
                            ends[reason] = layer + 1
                            states += 1
                    else:
                        found[nxt] |= v
        layer += 1
        work = []
        for s in range(n):
            before = reached[s]
            new = found[s] & ~before
            if new != bdd.false:
                reached[s] = before | new
                scheduled.setdefault(s, layer)
                states += sym.count(new)
                work.append((s, system.actions[s], new))
    # the variable order is found: the questions asked of these sets later (loops, runs
    # that last) are 4-7 times slower while CUDD keeps reordering
    bdd.configure(reordering=False)
    return SymbolicFacts(
        reach=Reach(sym, kickoff_actions, reached),
        states=states,
        scheduled=scheduled,
        fired=fired,
        ends=ends,
        plain_default=plain_default,
        layers=max([layer, *(d + 1 for d in ends.values())]),
        deepest=layer - 1,
    )


def _layers(sym: Symbolic, kickoff: tuple[Action, ...]) -> Iterator[list[tuple[int, Any]]]:
    """The layers of the breadth-first exploration again (as :func:`explore_symbolic`
    steps through them), each kept by :meth:`Reach.layer` for the runs read back
    through it."""
    system, bdd = sym.system, sym.bdd
    n = len(system.speakers)
    reached = [bdd.false] * n
    first = [(system.start, sym.point(system.initial))]
    yield first
    work: list[tuple[int, tuple[Action, ...], Any]] = [(system.start, kickoff, first[0][1])]
    while work:
        found = [bdd.false] * n
        for speaker, actions, u in work:
            for action in actions:
                for _, nxt, _, v in sym.outcomes(speaker, action, u):
                    if nxt >= 0:
                        found[nxt] |= v
        work = []
        for s in range(n):
            new = found[s] & ~reached[s]
            if new != bdd.false:
                reached[s] |= new
                work.append((s, system.actions[s], new))
        if work:
            yield [(s, u) for s, _, u in work]
