"""Two flows explored in lock step: where OLD and NEW first route the same turns differently.

Each side is stepped by its own :class:`~flowc.compiler.analysis.explore.Explorer` (the
checker's); this module only pairs their states. A product state is (OLD's node, NEW's
node) after the same turns. From it, every turn either side allows is taken on both:
the same speaker, the same tool (matched by name; a tool one side does not declare has no
effects there), the same custom-condition results (matched by their text) and, for JSON
graphs, the same context written by the participants. When the two sides then schedule a
different speaker or end differently, the turns so far plus that one are a
*distinguishing run*; breadth-first order makes the first one found a shortest one.

``max_turns`` is not part of a state (as in the checker): a divergence is kept only when
its turn is within both caps, and different caps are compared separately
(:func:`cap_divergence`).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from typing import Any

import attrs

from flowc.compiler.analysis.explore import (
    DEFAULT,
    FINISH,
    HANDOFF,
    KICKOFF,
    Explorer,
    NodeKey,
    Outcome,
    finish_reason,
)
from flowc.compiler.analysis.system import OTHER, PLAIN, UNSET, Action, System, Valuation, _equal

#: the close reason when a run reaches ``max_turns``
MAX_TURNS = "max_turns"
#: at most this many custom conditions are enumerated per turn (2**N assignments)
MAX_ATOMS = 10


@attrs.frozen
class Turn:
    """One turn as both sides see it: who speaks and what the participants did."""

    speaker: str
    tool: str | None = None
    alternative: int = 0  # which of the tool's declared alternatives (effects)
    #: JSON graphs: the context the participants wrote before routing (key, value or
    #: None for unset); for `.flow` files the tools' declared effects say it
    context: tuple[tuple[str, Any], ...] = ()
    #: custom conditions assumed true or false on this turn, by their text
    assumed: tuple[tuple[str, bool], ...] = ()


@attrs.frozen
class Routed:
    """What one side does after a turn."""

    fired: int  # a rule's file index, or DEFAULT / HANDOFF / FINISH (explore's constants)
    next: str | None  # the speaker scheduled next; None when the run ends
    reason: str | None = None  # the close reason when it ends
    choice: str | None = None  # how a custom target resolved

    @property
    def observed(self) -> tuple[str, str | None]:
        return ("end", self.reason) if self.next is None else ("speaker", self.next)


@attrs.frozen
class Divergence:
    """A run after which OLD and NEW route differently."""

    turns: tuple[Turn, ...]  # every turn, the last one is where they differ
    old: Routed
    new: Routed
    #: the product node before the last turn
    node: int
    #: each side's state after the last turn (its explorer's node key)
    old_after: NodeKey = ("end", None)
    new_after: NodeKey = ("end", None)


@attrs.frozen
class Product:
    """The explored product of two systems."""

    old: System
    new: System
    keys: list[tuple[NodeKey, NodeKey]]
    parent: list[int]
    #: the turn (and both sides' routing) that first reached each node
    via: list[tuple[Turn, Routed, Routed] | None]
    dist: list[int]
    #: node -> (successor, the turn, OLD's and NEW's routing) for every agreeing turn
    edges: dict[int, list[tuple[int, Turn, Routed, Routed]]]
    divergences: list[Divergence]
    truncated: bool

    def turns_to(self, node: int) -> list[Turn]:
        out: list[Turn] = []
        while node != 0:
            via = self.via[node]
            assert via is not None
            out.append(via[0])
            node = self.parent[node]
        return out[::-1]

    def path_to(self, node: int) -> list[int]:
        path = [node]
        while path[-1] != 0:
            path.append(self.parent[path[-1]])
        return path[::-1]


_UNSET_VALUE = object()
_OTHER_VALUE = object()


class _Side:
    """One flow's explorer and how turns named by text map onto its indices."""

    def __init__(self, system: System):
        self.system = system
        self.explorer = Explorer(system)
        self.tool_index = {t: i for i, t in enumerate(system.tool_names)}
        #: a tool index no rule reads: a tool this side does not know
        self.unknown_tool = len(system.tool_names) + 1_000_000
        self.atom_label = {a.id: a.label for a in system.atoms}
        self.key_index = {k: i for i, k in enumerate(system.keys)}

    def speaker_of(self, key: NodeKey) -> int:
        return self.system.start if key == KICKOFF else int(key[0])

    def actions(self, key: NodeKey) -> dict[tuple[str | None, int], Action]:
        if key == KICKOFF:
            return {(None, 0): PLAIN}
        out: dict[tuple[str | None, int], Action] = {}
        count: dict[str | None, int] = {}
        for action in self.system.actions[self.speaker_of(key)]:
            n = count.get(action.tool, 0)
            count[action.tool] = n + 1
            out[(action.tool, n)] = action
        return out

    def action_for(self, key: NodeKey, label: tuple[str | None, int]) -> Action:
        """This side's action for a turn labelled by tool name and alternative."""
        mine = self.actions(key)
        if label in mine:
            return mine[label]
        tool, n = label
        same = [a for (t, _), a in mine.items() if t == tool]
        if same:  # fewer alternatives here: the last one
            return same[min(n, len(same) - 1)]
        if tool is None:
            return PLAIN
        return Action(tool, self.tool_index.get(tool, self.unknown_tool))

    def abstract(self, key: str, value: Any) -> int | None:
        k = self.key_index.get(key)
        if k is None:
            return None
        if value is _UNSET_VALUE:
            return UNSET
        if value is _OTHER_VALUE:
            return OTHER
        return self.system.abstract(k, value)

    def routed(self, outcome: Outcome, turn_number: int) -> Routed:
        sys = self.system
        cap = sys.max_turns
        if outcome.speaker < 0:
            return Routed(outcome.fired, None, outcome.reason, outcome.choice)
        if cap is not None and turn_number >= cap:
            return Routed(outcome.fired, None, MAX_TURNS, outcome.choice)
        return Routed(outcome.fired, sys.speakers[outcome.speaker], None, outcome.choice)

    def outcomes(self, key: NodeKey, action: Action, after: Valuation) -> tuple[Outcome, ...]:
        if action.finish is not None:
            return (Outcome((), FINISH, -1, finish_reason(action.finish)),)
        if action.handoff is not None:
            return (Outcome((), HANDOFF, action.handoff),)
        return self.explorer.route(self.speaker_of(key), action.tool_index, after)

    def next_key(self, outcome: Outcome, after: Valuation) -> NodeKey:
        if outcome.speaker < 0:
            return ("end", outcome.reason)
        return (outcome.speaker, None if self.system.json_mode else after)

    def before(self, key: NodeKey) -> Valuation | None:
        return self.system.initial if key == KICKOFF else key[1]


def _json_contexts(old: _Side, new: _Side) -> list[tuple[tuple[tuple[str, Any], ...], Valuation, Valuation]]:
    """JSON graphs: every context the participants may write, as both sides abstract it."""
    keys: dict[str, list[Any]] = {}
    for side in (old, new):
        for k, lits in zip(side.system.keys, side.system.literals, strict=True):
            seen = keys.setdefault(k, [])
            for lit in lits:
                if not any(_equal(lit, x) for x in seen):
                    seen.append(lit)
    names = list(keys)
    domains = [[_UNSET_VALUE, *keys[k], _OTHER_VALUE] for k in names]
    out = []
    seen_pairs: set[tuple[Valuation, Valuation]] = set()
    for values in itertools.product(*domains):
        given = dict(zip(names, values, strict=True))
        vo = tuple(_abstract_or_unset(old, k, given[k]) for k in old.system.keys)
        vn = tuple(_abstract_or_unset(new, k, given[k]) for k in new.system.keys)
        if (vo, vn) in seen_pairs:
            continue
        seen_pairs.add((vo, vn))
        shown = tuple(
            (k, None if v is _UNSET_VALUE else ("another value" if v is _OTHER_VALUE else v))
            for k, v in given.items() if v is not _UNSET_VALUE
        )
        out.append((shown, vo, vn))
    return out


def _abstract_or_unset(side: _Side, key: str, value: Any) -> int:
    found = side.abstract(key, value)
    return UNSET if found is None else found


def _assignments(labels: list[str]) -> Iterator[dict[str, bool]]:
    if len(labels) > MAX_ATOMS:
        labels = labels[:MAX_ATOMS]
    for values in itertools.product((True, False), repeat=len(labels)):
        yield dict(zip(labels, values, strict=True))


def _compatible(outcome: Outcome, labels: dict[int, str], given: dict[str, bool]) -> bool:
    return all(given.get(labels[i], v) == v for i, v in outcome.assumed)


def explore_pair(old: System, new: System, max_states: int, max_divergences: int = 1_000) -> Product:
    """Explore OLD and NEW in lock step, breadth-first, bounded by ``max_states`` product states.

    >>> from flowc import compile_flow
    >>> from flowc.compiler.analysis.system import system_of_flow
    >>> a = system_of_flow(compile_flow("speaker u: human\\nspeaker b\\nspeaker c\\nwhen from u then b"))
    >>> b = system_of_flow(compile_flow("speaker u: human\\nspeaker b\\nspeaker c\\nwhen from u then c"))
    >>> d = explore_pair(a, b, 100).divergences[0]
    >>> [t.speaker for t in d.turns], d.old.next, d.new.next
    (['u'], 'b', 'c')
    """
    so, sn = _Side(old), _Side(new)
    json_mode = old.json_mode or new.json_mode
    contexts = _json_contexts(so, sn) if json_mode else []
    keys: list[tuple[NodeKey, NodeKey]] = [(KICKOFF, KICKOFF)]
    ids = {keys[0]: 0}
    parent = [0]
    via: list[tuple[Turn, Routed, Routed] | None] = [None]
    dist = [0]
    edges: dict[int, list[tuple[int, Turn, Routed, Routed]]] = {}
    divergences: list[Divergence] = []
    truncated = False
    caps = [c for c in (old.max_turns, new.max_turns) if c is not None]
    cap = min(caps) if caps else None
    queue: deque[int] = deque([0])
    if old.speakers[old.start] != new.speakers[new.start]:
        # the kickoff itself differs: no turn is shared
        divergences.append(Divergence(
            (), Routed(DEFAULT, old.speakers[old.start]), Routed(DEFAULT, new.speakers[new.start]), 0,
            KICKOFF, KICKOFF))
        queue.clear()
    while queue and not truncated:
        u = queue.popleft()
        ko, kn = keys[u]
        if ko[0] == "end":
            continue
        turn_number = dist[u] + 1
        if cap is not None and turn_number > cap:
            continue
        speaker = old.speakers[so.speaker_of(ko)]
        labels = list(dict.fromkeys([*so.actions(ko), *sn.actions(kn)]))
        for label in labels:
            ao, an = so.action_for(ko, label), sn.action_for(kn, label)
            if json_mode:
                afters = [(ctx, vo, vn) for ctx, vo, vn in contexts]
            else:
                bo, bn = so.before(ko), sn.before(kn)
                assert bo is not None and bn is not None
                afters = [((), next(so.explorer.after(bo, ao)), next(sn.explorer.after(bn, an)))]
            for ctx, vo, vn in afters:
                outs_o = so.outcomes(ko, ao, vo)
                outs_n = sn.outcomes(kn, an, vn)
                atoms = list(dict.fromkeys(
                    [so.atom_label[i] for o in outs_o for i, _ in o.assumed]
                    + [sn.atom_label[i] for o in outs_n for i, _ in o.assumed]))
                for given in _assignments(atoms):
                    o_here = [o for o in outs_o if _compatible(o, so.atom_label, given)]
                    n_here = [o for o in outs_n if _compatible(o, sn.atom_label, given)]
                    r_old = [(o, so.routed(o, turn_number)) for o in o_here]
                    r_new = [(o, sn.routed(o, turn_number)) for o in n_here]
                    seen_old = {r.observed for _, r in r_old}
                    seen_new = {r.observed for _, r in r_new}
                    used = {so.atom_label[i] for o in o_here for i, _ in o.assumed} | {
                        sn.atom_label[i] for o in n_here for i, _ in o.assumed}
                    turn = Turn(speaker, label[0], label[1], ctx,
                                tuple((k, v) for k, v in given.items() if k in used))
                    if seen_old != seen_new:
                        if len(divergences) < max_divergences:
                            po = [x for x in r_old if x[1].observed not in seen_new] or r_old
                            pn = [x for x in r_new if x[1].observed not in seen_old] or r_new
                            divergences.append(Divergence(
                                (*_turns(parent, via, u), turn), po[0][1], pn[0][1], u,
                                so.next_key(po[0][0], vo), sn.next_key(pn[0][0], vn)))
                        continue
                    for (o1, r1), (o2, r2) in itertools.product(r_old, r_new):
                        if r1.observed != r2.observed or r1.next is None:
                            continue
                        nxt = (so.next_key(o1, vo), sn.next_key(o2, vn))
                        v = ids.get(nxt)
                        if v is None:
                            if len(keys) >= max_states:
                                truncated = True
                                break
                            v = ids[nxt] = len(keys)
                            keys.append(nxt)
                            parent.append(u)
                            via.append((turn, r1, r2))
                            dist.append(dist[u] + 1)
                            queue.append(v)
                        edges.setdefault(u, []).append((v, turn, r1, r2))
    return Product(old, new, keys, parent, via, dist, edges, divergences, truncated)


def _turns(parent: list[int], via: list[tuple[Turn, Routed, Routed] | None], node: int) -> list[Turn]:
    out: list[Turn] = []
    while node != 0:
        step = via[node]
        assert step is not None
        out.append(step[0])
        node = parent[node]
    return out[::-1]


def cap_divergence(product: Product) -> Divergence | None:
    """When the caps differ: a shortest run that reaches the smaller cap with both sides still
    going (so one closes at ``max_turns`` and the other goes on), or None."""
    caps = (product.old.max_turns, product.new.max_turns)
    if caps[0] == caps[1]:
        return None
    limit = min(c for c in caps if c is not None)
    # walks of `limit - 1` shared turns over agreeing edges, then the turn at the cap
    layer: dict[int, tuple[int, Turn] | None] = {0: None}
    back: list[dict[int, tuple[int, Turn] | None]] = [layer]
    for _ in range(limit - 1):
        nxt: dict[int, tuple[int, Turn] | None] = {}
        for u in sorted(layer):
            for v, turn, _, _ in product.edges.get(u, ()):
                nxt.setdefault(v, (u, turn))
        if not nxt:
            return None
        back.append(nxt)
        layer = nxt
    for u in sorted(layer):
        for v, turn, r_old, r_new in product.edges.get(u, ()):
            turns: list[Turn] = []
            node, depth = u, len(back) - 1
            while depth > 0:
                prev = back[depth][node]
                assert prev is not None
                node, step = prev
                turns.append(step)
                depth -= 1
            turns.reverse()
            ko, kn = product.keys[v]
            if caps[0] == limit:
                return Divergence((*turns, turn), Routed(r_old.fired, None, MAX_TURNS), r_new, u,
                                  ("end", MAX_TURNS), kn)
            return Divergence((*turns, turn), r_old, Routed(r_new.fired, None, MAX_TURNS), u,
                              ko, ("end", MAX_TURNS))
    return None
