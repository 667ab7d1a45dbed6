"""What a change to a flow changes: ``flowc diff OLD NEW``.

*Structural* changes are matched by meaning, not by line: speakers, tools and their
effects, context defaults, rules (a rule is the same rule when its condition and target
are; then a new priority or position is a move), the default, the cap and the start.

*Behavioural* changes come from exploring both flows (the checker's explorer, and
:mod:`flowc.compiler.analysis.lockstep` pairing the two): speakers that become reachable
or unreachable, rules that become dead or live, endings added, removed or no longer
reachable, loops that appear or disappear (W205/W206), the shortest ending beyond the cap
(W212). Each comes with a shortest *distinguishing run*: the turns after which OLD and
NEW route differently. Behaviour is "the same" when no run routes differently, "changed"
when a run does whatever custom conditions and targets decide, and "unknown" when only
runs that depend on what they decide do, the exploration stopped at its bound, or the
checker could not decide a property both versions have in one of them (I305) and the
exploration does not show its verdict the same in both (:mod:`.undecided`).

A JSON graph does not carry the declarations (humans, tools, humans' keys), its
participants or its initiator: what only one side carries is not compared, what the graph
lacks is taken from the other side, and :attr:`FlowDiff.notes` says both.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from functools import cached_property
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.analysis import undecided as und
from flowc.compiler.analysis.cap_loops import loop_came, loop_gone_by_cap
from flowc.compiler.analysis.explore import NodeKey
from flowc.compiler.analysis.facts import CheckOptions
from flowc.compiler.analysis.lockstep import (
    MAX_TURNS,
    CapOutOfReach,
    Divergence,
    Product,
    Routed,
    Turn,
    cap_divergence,
    explore_pair,
    turns_of_run,
)
from flowc.compiler.analysis.runs import Run
from flowc.compiler.analysis.system import System, system_of_flow, system_of_graph
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.describe import condition_text, property_text, rule_ref, target_text
from flowc.compiler.monitor import claim_text
from flowc.compiler.pipeline import LoadedGraph
from flowc.compiler.properties import Property
from flowc.compiler.quoting import name_piece, written_piece
from flowc.diagnostics import counted, elide
from flowc.dsl.formatter import format_name, format_value
from flowc.escaping import Code, Phrase, Quoted, as_phrase, phrase
from flowc.source import SourceFile


@attrs.frozen
class Version:
    """One side of a diff: a compiled `.flow` or a JSON graph, and the name to show."""

    label: str
    compiled: CompiledFlow | None = None
    loaded: LoadedGraph | None = None
    source: SourceFile | None = attrs.field(default=None, eq=False)

    @property
    def graph(self) -> m.TransitionGraph:
        if self.compiled is not None:
            return self.compiled.graph
        assert self.loaded is not None
        return self.loaded.graph

    @property
    def context(self) -> dict[str, Any]:
        if self.compiled is not None:
            return dict(self.compiled.context_vars)
        assert self.loaded is not None
        return dict(self.loaded.context_vars)


@attrs.frozen
class Change:
    """One change; ``kind`` is a stable identifier (JSON), ``phrase`` the sentence shown:
    flowc's words and the pieces of the flows it quotes, as :attr:`text` or as Markdown."""

    kind: str
    phrase: Phrase = attrs.field(converter=as_phrase)
    subject: str = ""  # what it is about (a speaker, a rule, a key, ...)
    run: tuple[Turn, ...] | None = None  # the distinguishing run (behavioural changes)
    old: Routed | None = None  # how each side routes after the run's last turn
    new: Routed | None = None
    #: after the divergence: how the changed side goes on to the event, one step a phrase
    then: tuple[Phrase, ...] = ()
    then_side: str = ""  # "old" or "new"
    #: a property's run that goes round a loop for ever (a lasso): ``run[loop_from:]``
    #: repeat, and after the last turn the run goes back to ``run[loop_from]``
    loop_from: int | None = None

    @property
    def text(self) -> str:
        """The sentence as text (the names and rules it quotes in backquotes)."""
        return str(self.phrase)


SAME, CHANGED, UNKNOWN = "same", "changed", "unknown"


@attrs.frozen
class FlowDiff:
    old: Version
    new: Version
    structural: tuple[Change, ...]
    behavioural: tuple[Change, ...]
    #: the first distinguishing run: a shortest certain one when the behaviour changed; when
    #: it is unknown, a shortest run that routes differently if custom conditions or targets
    #: decide so (None when there is none); None when the behaviour is the same, or
    #: changed only in a property's verdict (no run routes differently)
    first: Change | None
    #: an exploration hit the state bound: the lists of changes may be incomplete
    truncated: bool
    #: `.flow` against a JSON graph: both compared as graphs (no declared tools)
    as_graphs: bool
    #: SAME, CHANGED or UNKNOWN (the exploration could not decide)
    verdict: str = SAME
    #: why the verdict is UNKNOWN
    reason: str = ""
    #: what could not be compared, and what was assumed for what a side does not carry
    notes: tuple[Phrase, ...] = ()

    @property
    def behaviour_changed(self) -> bool | None:
        """True or False; None when the exploration could not decide."""
        return None if self.verdict == UNKNOWN else self.verdict == CHANGED


# ── the sides ─────────────────────────────────────────────────────────────────


@attrs.frozen
class _RuleView:
    index: int
    when: str
    then: str
    priority: int
    rank: int
    where: str  # "line 12" or "transitions[3]"

    @property
    def number(self) -> str:
        return f"rule {self.index + 1}, {self.where}"

    def text(self) -> str:
        prio = f" priority {self.priority}" if self.priority else ""
        return elide(f"when {self.when} then {self.then}{prio}")


@attrs.frozen
class _Assumed:
    """What a JSON graph does not carry, taken from the other side: its participants (in
    order), its initiator and, for a bare graph dict, its initial context."""

    participants: tuple[str, ...] = ()
    initiator: str | None = None
    context: dict[str, Any] | None = None


class _Side:
    def __init__(
        self,
        version: Version,
        as_graph: bool,
        options: CheckOptions,
        assumed: _Assumed | None = None,
    ):
        from flowc.compiler.analysis import facts_of

        self.version = version
        compiled = version.compiled
        if compiled is not None and not as_graph:
            self.system: System = system_of_flow(compiled)
        elif compiled is not None:
            # a .flow as a graph: still its own participants, initiator and context
            self.system = system_of_graph(
                LoadedGraph(compiled.graph, dict(compiled.context_vars), True),
                tuple(compiled.agent_id(s) for s in compiled.speakers),
                compiled.agent_id(compiled.initiator),
            )
        else:
            assert version.loaded is not None
            loaded = version.loaded
            assumed = assumed or _Assumed()
            if not loaded.is_knobs and assumed.context is not None:
                loaded = LoadedGraph(loaded.graph, dict(assumed.context), False)
            self.system = system_of_graph(loaded, assumed.participants, assumed.initiator)
        self.facts, self.findings = facts_of(self.system, options, version.label)
        self.names: dict[str, str] = (
            {compiled.agent_id(s): s for s in compiled.speakers}
            if compiled is not None and not as_graph
            else {}
        )
        graph = version.graph
        order = sorted(range(len(graph.transitions)), key=lambda i: graph.transitions[i].priority)
        rank = {i: r for r, i in enumerate(order)}
        self.rules = [
            _RuleView(
                i,
                condition_text(t.when, self.names),
                target_text(t.then, self.names),
                t.priority,
                rank[i],
                f"line {compiled.rules[i].line}" if compiled is not None else f"transitions[{i}]",
            )
            for i, t in enumerate(graph.transitions)
        ]

    def speaker_names(self) -> list[str]:
        return list(self.system.speakers)

    @property
    def reachable(self) -> set[str]:
        """The speakers that speak in some run (not those whose turn would come only
        after the cap closed every run: W215)."""
        late = self.facts.after_cap_speakers
        return {self.system.speakers[i] for i in self.facts.scheduled if i not in late}

    def fired(self) -> set[int] | None:
        """The rules (file index) that fire in some run, the cap's turn included (not
        those that would fire only after it: W215); None when the exploration stopped."""
        space = self.facts.space
        return None if space.truncated else set(space.fired) - set(self.facts.after_cap_rules)

    @property
    def ends(self) -> set[str]:
        space = self.facts.space
        cap = self.system.max_turns
        return {
            str(space.keys[v][1])
            for v in space.ends
            if space.keys[v][1] is not None and (cap is None or space.dist[v] <= cap)
        }

    def shortest_end(self) -> int | None:
        space = self.facts.space
        return min((space.dist[v] for v in space.ends), default=None)

    @cached_property
    def firing(self) -> dict[int, set[int]]:
        """Rule (file index) -> the nodes from which some turn fires it."""
        space = self.facts.space
        out: dict[int, set[int]] = {}
        for u, key in enumerate(space.keys):
            if key[0] == "end":
                continue
            for step in space.explorer.steps(key):
                out.setdefault(step.outcome.fired, set()).add(u)
        return out

    @cached_property
    def reverse(self) -> Any:
        return self.facts.space.graph.reverse(copy=False)

    def node_of(self, key: NodeKey) -> int | None:
        space = self.facts.space
        if not hasattr(self, "_ids"):
            self._ids = {k: i for i, k in enumerate(space.keys)}
        return self._ids.get(key)


# ── structure ─────────────────────────────────────────────────────────────────


def _humans(side: _Side) -> set[str]:
    compiled = side.version.compiled
    if compiled is None:
        return set()
    return {compiled.agent_id(h) if not side.names else h for h in compiled.humans}


def _human_writes(side: _Side) -> dict[str, tuple[str, ...]]:
    """human -> the context keys it may write (sorted)."""
    compiled = side.version.compiled
    if compiled is None:
        return {}
    return {
        compiled.agent_id(h) if not side.names else h: tuple(
            sorted(compiled.human_writes.get(h, ()))
        )
        for h in compiled.humans
    }


def _tools(version: Version) -> dict[tuple[str, str], str]:
    """(speaker, tool) -> its effects as written."""
    compiled = version.compiled
    if compiled is None:
        return {}
    return {
        (t.speaker, t.name): " | ".join(a.text() for a in t.alternatives) or "(no effects)"
        for t in compiled.tools
    }


def _show(value: Any) -> Quoted:
    return Quoted(format_value(value))


def _names(names: list[str] | tuple[str, ...], empty: str = "") -> Phrase:
    """Names as a `.flow` writes them, joined by commas (``empty`` for none)."""
    if not names:
        return phrase(empty)
    return phrase(", ").join(phrase(Quoted(format_name(n))) for n in names)


def structural_changes(
    old: _Side, new: _Side, declarations: bool = True, context: bool = True
) -> Iterator[Change]:
    """The changes matched by meaning; ``declarations``: compare speaker kinds and tools
    (both sides carry them), ``context``: compare the initial context (both carry one).

    Each kind of change is one step below, run in the order the changes are shown."""
    yield from _speaker_changes(old, new, declarations)
    yield from _tool_changes(old, new, declarations)
    yield from _context_changes(old, new, context)
    yield from rule_changes(old.rules, new.rules)
    yield from _setting_changes(old, new)
    yield from property_changes(old.version, new.version)


def _speaker_changes(old: _Side, new: _Side, declarations: bool) -> Iterator[Change]:
    """Speakers added, removed or reordered, and (with ``declarations``, which only
    both sides of two `.flow` files carry) those that became a human or a model agent
    and the keys a human writes."""
    o_sp, n_sp = old.speaker_names(), new.speaker_names()
    for s in n_sp:
        if s not in o_sp:
            yield Change("speaker-added", phrase("speaker ", name_piece(s), " added"), s)
    for s in o_sp:
        if s not in n_sp:
            yield Change("speaker-removed", phrase("speaker ", name_piece(s), " removed"), s)
    common_o, common_n = [s for s in o_sp if s in n_sp], [s for s in n_sp if s in o_sp]
    if common_o != common_n:
        yield Change(
            "speakers-reordered",
            phrase(
                "speaker order (the order ",
                Code("next"),
                " goes round): ",
                _names(o_sp),
                " → ",
                _names(n_sp),
            ),
        )
    oh, nh = _humans(old), _humans(new)
    for s in o_sp if declarations else ():
        if s in n_sp:
            was, now = s in oh, s in nh
            if was != now:
                yield Change(
                    "speaker-changed",
                    phrase(
                        "speaker ",
                        name_piece(s),
                        f" is now {'a human' if now else 'a model agent'}",
                    ),
                    s,
                )
    o_w, n_w = (_human_writes(old), _human_writes(new)) if declarations else ({}, {})
    for s in o_sp:
        if s in n_sp and s in oh and s in nh and o_w.get(s, ()) != n_w.get(s, ()):
            before = _names(o_w.get(s, ()), "nothing")
            after = _names(n_w.get(s, ()), "nothing")
            yield Change(
                "speaker-writes",
                phrase("human ", name_piece(s), " writes: ", before, " → ", after),
                s,
            )


def _tool_changes(old: _Side, new: _Side, declarations: bool) -> Iterator[Change]:
    """Tools added, removed or with other effects, by speaker and tool name; only with
    ``declarations`` (a JSON graph carries no tools)."""
    o_t, n_t = (_tools(old.version), _tools(new.version)) if declarations else ({}, {})
    for key in [*n_t, *(key for key in o_t if key not in n_t)]:
        who, tool = key
        name = phrase("tool ", name_piece(tool), " of ", name_piece(who))
        if key not in o_t:
            yield Change(
                "tool-added", phrase(name, " added (", Quoted(n_t[key]), ")"), f"{who}.{tool}"
            )
        elif key not in n_t:
            yield Change("tool-removed", phrase(name, " removed"), f"{who}.{tool}")
        elif o_t[key] != n_t[key]:
            change = phrase(name, ": ", Quoted(o_t[key]), " → ", Quoted(n_t[key]))
            yield Change("tool-changed", change, f"{who}.{tool}")


def _context_changes(old: _Side, new: _Side, context: bool) -> Iterator[Change]:
    """Initial context keys added, removed or with another default; only with
    ``context``. A default of another type is changed even when equal (``1`` and
    ``True``, ``1`` and ``1.0``)."""
    oc, nc = (old.version.context, new.version.context) if context else ({}, {})
    for k, v in nc.items():
        if k not in oc:
            yield Change(
                "context-added",
                phrase("context ", name_piece(k), " = ", _show(v), " added"),
                k,
            )
        elif oc[k] != v or type(oc[k]) is not type(v):
            yield Change(
                "context-changed",
                phrase("context ", name_piece(k), ": ", _show(oc[k]), " → ", _show(v)),
                k,
            )
    for k in oc:
        if k not in nc:
            yield Change(
                "context-removed",
                phrase("context ", name_piece(k), " = ", _show(oc[k]), " removed"),
                k,
            )


def _setting_changes(old: _Side, new: _Side) -> Iterator[Change]:
    """The flow-wide settings: the default target, the cap (``max_turns``), the
    initiator and the start speaker."""
    so, sn = old.system, new.system
    od, nd = target_text(so.default, old.names), target_text(sn.default, new.names)
    if od != nd:
        yield Change(
            "default-changed",
            phrase("default: ", Code(f"otherwise {od}"), " → ", Code(f"otherwise {nd}")),
        )
    if so.max_turns != sn.max_turns:
        yield Change(
            "cap-changed", f"max_turns: {so.max_turns or 'none'} → {sn.max_turns or 'none'}"
        )
    for what, o_i, n_i in (
        ("initiator", so.initiator, sn.initiator),
        ("start", so.start, sn.start),
    ):
        was, now = so.speakers[o_i], sn.speakers[n_i]
        if was != now:
            change = phrase(f"{what}: ", name_piece(was), " → ", name_piece(now))
            yield Change(f"{what}-changed", change)


def property_changes(old: Version, new: Version) -> Iterator[Change]:
    """The ``property`` statements added, removed or changed (by name; a property is
    changed when what it claims is, not merely how it is written). A JSON graph has
    none to compare."""
    if old.compiled is None or new.compiled is None:
        return
    o_p = {p.name: p for p in old.compiled.properties}
    n_p = {p.name: p for p in new.compiled.properties}
    for name, prop in n_p.items():
        was = o_p.get(name)
        if was is None:
            yield Change(
                "property-added",
                phrase("property ", name_piece(name), " added (", _claim(prop), ")"),
                name,
            )
        elif (was.pattern, was.scope) != (prop.pattern, prop.scope):
            yield Change(
                "property-changed",
                phrase("property ", name_piece(name), ": ", _claim(was), " → ", _claim(prop)),
                name,
            )
    for name, prop in o_p.items():
        if name not in n_p:
            yield Change(
                "property-removed",
                phrase("property ", name_piece(name), " removed (", _claim(prop), ")"),
                name,
            )


def _claim(prop: Property) -> Code:
    return Code(claim_text(prop if prop.text else attrs.evolve(prop, text=property_text(prop))))


#: the behavioural changes of a property's verdict: each comes with the run that breaks the
#: property (NEW's, or OLD's for one that holds again) and is a change of behaviour: a
#: run breaks it on one side only, even when no run routes differently
PROPERTY_FLIPS = ("property-violated", "property-holds")
#: a property of both versions that the checker could not decide (I305) in one or both:
#: whether its verdict is the same in both is not known, so the behaviour is not "the same"
PROPERTY_UNKNOWN = "property-unknown"


def property_verdict_changes(old: _Side, new: _Side) -> Iterator[Change]:
    """A property of both versions that held in OLD and is violated in NEW (with NEW's
    shortest run that breaks it), or the other way round (with OLD's).

    The run is the checker's (:class:`~flowc.compiler.analysis.runs.Run`), carried as a
    distinguishing run's turns (:func:`~flowc.compiler.analysis.lockstep.turns_of_run`)
    with where the breaking side goes after its last turn (``new``, or ``old``; the other
    side is None: it need not take the run) and ``loop_from`` for a run that breaks it
    for ever. One the checker could not decide in either version is a
    :data:`PROPERTY_UNKNOWN` change, with the checker's note on why (and no run)."""
    vo, vn = (und.property_verdicts(s.version.compiled, s.findings) for s in (old, new))
    for name, (now, found) in vn.items():
        was = vo.get(name)
        if was is None:
            continue
        if UNKNOWN in (was[0], now):
            yield Change(PROPERTY_UNKNOWN, und.undecided_text(name, was, (now, found)), name)
        elif was[0] == "holds" and now == "violated":
            why = found.diagnostic.notes[0] if found.diagnostic.notes else ""
            run = found.run
            yield _with_property_run(
                Change(
                    "property-violated",
                    phrase(
                        "property ",
                        name_piece(name),
                        " held in OLD and is violated in NEW: ",
                        Quoted(why),
                        f"; {_breaks(run)}: ",
                        Quoted("" if run is None else run.render()),
                    ),
                    name,
                ),
                new,
                run,
                "new",
            )
        elif was[0] == "violated" and now == "holds":
            run = was[1].run
            shown: tuple[Any, ...] = (
                () if run is None else (f"; in OLD, {_breaks(run)}: ", Quoted(run.render()))
            )
            yield _with_property_run(
                Change(
                    "property-holds",
                    phrase(
                        "property ",
                        name_piece(name),
                        " was violated in OLD and holds in NEW",
                        *shown,
                    ),
                    name,
                ),
                old,
                run,
                "old",
            )


def _breaks(run: Run | None) -> str:
    return (
        "a run that breaks it for ever"
        if run is not None and run.loop_from is not None
        else "a shortest run that breaks it"
    )


def _with_property_run(change: Change, side: _Side, run: Run | None, which: str) -> Change:
    """``change`` with ``run`` (the side ``which``'s run that breaks the property) as its
    turns, where that side goes after them, and where its loop starts."""
    if run is None:
        return change
    turns, after = turns_of_run(side.system, run)
    return attrs.evolve(
        change,
        run=turns,
        old=after if which == "old" else None,
        new=after if which == "new" else None,
        loop_from=run.loop_from,
    )


def match_rules(
    old: list[_RuleView], new: list[_RuleView]
) -> tuple[list[tuple[_RuleView, _RuleView]], list[_RuleView], list[_RuleView]]:
    """Pairs of the same rule (same condition and target, then the same condition, then the
    same target in turn), and the rules only OLD or only NEW has."""
    pairs: list[tuple[_RuleView, _RuleView]] = []
    left, right = list(old), list(new)
    for key in (
        lambda r: (r.when, r.then, r.priority),
        lambda r: (r.when, r.then),
        lambda r: (r.when,),
        lambda r: (r.then,),
    ):
        pool: dict[Any, list[_RuleView]] = {}
        for r in right:
            pool.setdefault(key(r), []).append(r)
        rest = []
        for r in left:
            found = pool.get(key(r))
            if found:
                mate = found.pop(0)
                pairs.append((r, mate))
                right.remove(mate)
            else:
                rest.append(r)
        left = rest
    return sorted(pairs, key=lambda p: p[1].index), left, right


def rule_changes(old: list[_RuleView], new: list[_RuleView]) -> Iterator[Change]:
    pairs, removed, added = match_rules(old, new)
    # a move changes evaluation order when two matched rules swap places in it
    for o, n in pairs:
        subject = f"rule {n.index + 1}"
        if o.when != n.when:
            yield Change(
                "rule-condition",
                phrase(
                    f"{n.number}: condition ",
                    Code(elide(o.when)),
                    " → ",
                    Code(elide(n.when)),
                    " (",
                    Code(f"then {elide(n.then)}"),
                    ")",
                ),
                subject,
            )
        if o.then != n.then:
            yield Change(
                "rule-target",
                phrase(
                    f"{n.number}: ",
                    Code(f"when {elide(n.when)}"),
                    " now goes to ",
                    written_piece(elide(n.then)),
                    " (was ",
                    written_piece(elide(o.then)),
                    ")",
                ),
                subject,
            )
        if o.priority != n.priority:
            yield Change(
                "rule-priority",
                phrase(f"{n.number}: priority {o.priority} → {n.priority} (", Code(n.text()), ")"),
                subject,
            )
    order_old = [o.index for o, _ in sorted(pairs, key=lambda p: p[0].rank)]
    order_new = [o.index for o, _ in sorted(pairs, key=lambda p: p[1].rank)]
    moved_in_eval = order_old != order_new
    for o, n in pairs:
        if (
            o.index != n.index
            and o.when == n.when
            and o.then == n.then
            and o.priority == n.priority
        ):
            shifted = sum(1 for r in removed if r.index < o.index) - sum(
                1 for r in added if r.index < n.index
            )
            if o.index - shifted != n.index:
                yield Change(
                    "rule-moved",
                    phrase(
                        f"{n.number}: ",
                        Code(n.text()),
                        f" moved from {o.where}",
                        "" if moved_in_eval else " (evaluation order kept)",
                    ),
                    f"rule {n.index + 1}",
                )
    for r in added:
        yield Change(
            "rule-added", phrase(f"{r.number}: ", Code(r.text()), " added"), f"rule {r.index + 1}"
        )
    for r in removed:
        yield Change(
            "rule-removed",
            phrase(Code(r.text()), f" ({r.where} of OLD) removed"),
            f"old rule {r.index + 1}",
        )


# ── behaviour ─────────────────────────────────────────────────────────────────


def _events(side: _Side, fired: int) -> set[int]:
    """The nodes of ``side``'s state space from which some turn fires rule ``fired``."""
    return side.firing.get(fired, set())


def _speaker_nodes(side: _Side, name: str) -> set[int]:
    space, sys = side.facts.space, side.system
    if name not in sys.speakers:
        return set()
    who = sys.speaker_index(name)
    return {u for u in range(len(space.keys)) if not space.is_end(u) and space.speaker_of(u) == who}


def _end_nodes(side: _Side, reason: str) -> set[int]:
    space = side.facts.space
    return {v for v in space.ends if space.keys[v][1] == reason}


class _Witness:
    """Chooses, for a behavioural change, the shortest distinguishing run that leads to it."""

    def __init__(self, old: _Side, new: _Side, divergences: list[Divergence]):
        self.sides = {"old": old, "new": new}
        self.divergences = divergences

    def find(
        self, side: str, targets: set[int], fired: int | None = None, reason: str | None = None
    ) -> tuple[Divergence, tuple[Phrase, ...]] | None:
        me = self.sides[side]
        if not targets and fired is None and reason is None:
            return None
        best: tuple[int, Divergence, int | None] | None = None
        # multi-source breadth-first search backwards from the targets: distance to the nearest
        dist_to: dict[int, int] = dict.fromkeys(targets, 0)
        frontier = list(targets)
        while frontier:
            nxt = []
            for v in frontier:
                for u in me.reverse.successors(v):
                    if u not in dist_to:
                        dist_to[u] = dist_to[v] + 1
                        nxt.append(u)
            frontier = nxt
        for d in self.divergences:
            routed = d.old if side == "old" else d.new
            after = d.old_after if side == "old" else d.new_after
            node: int | None = None
            if (fired is not None and routed.fired == fired) or (
                reason is not None and routed.reason == reason
            ):
                cost = len(d.turns)
            else:
                node = me.node_of(after)
                if node is None or node not in dist_to:
                    continue
                cost = len(d.turns) + dist_to[node]
            if best is None or cost < best[0]:
                best = (cost, d, node)
        if best is None:
            return None
        _, d, node = best
        return d, (self._continuation(me, node, targets) if node is not None else ())

    def _continuation(self, side: _Side, node: int, targets: set[int]) -> tuple[Phrase, ...]:
        space = side.facts.space
        # breadth-first from the node to the nearest target
        parent: dict[int, int] = {node: node}
        frontier, found = [node], node if node in targets else None
        while frontier and found is None:
            nxt = []
            for u in frontier:
                for v in sorted(space.graph.successors(u)):
                    if v not in parent:
                        parent[v] = u
                        if v in targets:
                            found = v
                            break
                        nxt.append(v)
                if found is not None:
                    break
            frontier = nxt
        if found is None:
            return ()
        path = [found]
        while path[-1] != node:
            path.append(parent[path[-1]])
        path.reverse()
        out = []
        for u, v in itertools.pairwise(path):
            step = space.step_between(u, v)
            who = Quoted(format_name(side.system.speakers[space.speaker_of(u)]))
            out.append(
                phrase(who, " (", Quoted(format_name(step.action.tool)), ")")
                if step.action.tool
                else phrase(who)
            )
        key = space.keys[path[-1]]
        out.append(
            phrase("terminate ", Quoted(format_value(key[1])))
            if key[0] == "end"
            else phrase(Quoted(format_name(side.system.speakers[space.speaker_of(path[-1])])))
        )
        return tuple(out)


def _with_run(
    change: Change, found: tuple[Divergence, tuple[Phrase, ...]] | None, side: str
) -> Change:
    if found is None:
        return change
    d, rest = found
    return attrs.evolve(change, run=d.turns, old=d.old, new=d.new, then=rest, then_side=side)


def behavioural_changes(
    old: _Side, new: _Side, product: Product, divergences: list[Divergence]
) -> Iterator[Change]:
    w = _Witness(old, new, divergences)
    # speakers
    ro, rn = old.reachable, new.reachable
    for s in sorted(rn - ro, key=new.system.speakers.index):
        yield _with_run(
            Change("speaker-reachable", phrase(name_piece(s), " now speaks in some runs"), s),
            w.find("new", _speaker_nodes(new, s)),
            "new",
        )
    for s in sorted(ro - rn, key=old.system.speakers.index):
        yield _with_run(
            Change(
                "speaker-unreachable",
                phrase(name_piece(s), " no longer speaks in any run"),
                s,
            ),
            w.find("old", _speaker_nodes(old, s)),
            "old",
        )
    # rules
    pairs, _, added = match_rules(old.rules, new.rules)
    live_o, live_n = old.fired(), new.fired()
    if live_o is not None and live_n is not None:
        for o, n in pairs:
            if o.index in live_o and n.index not in live_n:
                yield _with_run(
                    Change(
                        "rule-dead",
                        phrase(f"{n.number}: ", Code(n.text()), " can no longer fire"),
                        f"rule {n.index + 1}",
                    ),
                    w.find("old", _events(old, o.index), fired=o.index),
                    "old",
                )
            elif o.index not in live_o and n.index in live_n:
                yield _with_run(
                    Change(
                        "rule-live",
                        phrase(f"{n.number}: ", Code(n.text()), " now fires in some runs"),
                        f"rule {n.index + 1}",
                    ),
                    w.find("new", _events(new, n.index), fired=n.index),
                    "new",
                )
        for n in added:
            if n.index not in live_n:
                yield Change(
                    "rule-dead",
                    phrase(f"{n.number}: the added rule ", Code(n.text()), " can never fire"),
                    f"rule {n.index + 1}",
                )
    # endings
    eo, en = old.ends, new.ends
    declared_new = _declared_reasons(new)
    for reason in sorted(en - eo):
        yield _with_run(
            Change("ending-added", phrase("runs can now end with ", _reason(reason)), reason),
            w.find("new", _end_nodes(new, reason), reason=reason),
            "new",
        )
    for reason in sorted(eo - en):
        gone = "is no longer reachable" if reason in declared_new else "is gone"
        yield _with_run(
            Change("ending-removed", phrase("ending ", _reason(reason), f" {gone}"), reason),
            w.find("old", _end_nodes(old, reason), reason=reason),
            "old",
        )
    yield from _loop_changes(old, new, w)
    yield from property_verdict_changes(old, new)
    if product.old.max_turns != product.new.max_turns:
        cap = next((d for d in divergences if MAX_TURNS in (d.old.reason, d.new.reason)), None)
        if cap is not None:
            side = "old" if cap.old.reason == MAX_TURNS else "new"
            yield Change(
                "cap-reached",
                f"with max_turns {product.old.max_turns or 'none'} → "
                f"{product.new.max_turns or 'none'}, {side.upper()} stops runs that the other "
                "goes on with",
                "max_turns",
                cap.turns,
                cap.old,
                cap.new,
            )


def _loop_changes(old: _Side, new: _Side, w: _Witness) -> Iterator[Change]:
    """Loops and the cap, as the checker reports them (W205, W206, W212), that one
    version has and the other has not, each with a run into the loop, or (W212) the run
    where the version whose ending fits in its cap goes on to it and the other stops."""
    sides = {"old": old, "new": new}
    for code, what in (
        ("W205", "a sticky context loop"),
        ("W206", "a loop with no exit and no max_turns"),
        ("W212", "the shortest ending is beyond max_turns"),
    ):
        was, now = _finding(old, code), _finding(new, code)
        if (was is None) == (now is None):
            continue
        if code == "W212":
            kind, side = ("cap-too-small", "old") if was is None else ("cap-fits", "new")
            targets = set(sides[side].facts.space.ends)
            fits = f"is now longer than max_turns {new.system.max_turns}" if was is None else ""
            text = phrase(
                f"the shortest run to an ending ({_turns(new.shortest_end())}) "
                f"{fits or 'now fits in max_turns'} ({code})"
            )
        else:
            kind, side = ("loop-added", "new") if was is None else ("loop-removed", "old")
            traps = sides[side].facts.traps
            targets = set(traps[0]) if traps else set()
            text = (
                loop_came(old.facts, new.facts, code, what, now)
                if now is not None
                else loop_gone_by_cap(old.facts, new.facts, code, was or "")
                or phrase(f"{what} is gone ({code})")
            )
        yield _with_run(Change(kind, text, code), w.find(side, targets), side)


def _declared_reasons(side: _Side) -> set[str]:
    out = set()
    for t in (
        *side.version.graph.transitions,
        m.Transition(m.Always(), side.version.graph.default_target),
    ):
        if isinstance(t.then, m.TerminateTarget):
            out.add(t.then.reason or "workflow_terminated")
    return out


def _turns(n: int | None) -> str:
    """A run's length in turns ("1 turn"), or ``none`` for no run."""
    return "none" if n is None else counted(n, "turn")


def _reason(reason: str) -> Code:
    return Code("max_turns" if reason == MAX_TURNS else f"terminate {format_value(reason)}")


def _finding(side: _Side, code: str) -> str | None:
    for f in side.findings:
        if f.diagnostic.code.id == code:
            return f.diagnostic.message
    return None


def _bare(version: Version) -> bool:
    """A `.flow` that declares nothing beyond its graph (no tool, no human, no custom
    target's list of results), as ``flowc decompile`` writes one."""
    c = version.compiled
    return (
        c is not None and not c.tools and not c.humans and all(d.results is None for d in c.customs)
    )


def _lacking(old: Version, new: Version) -> str:
    """``OLD (a JSON graph) does not carry``, ``OLD and NEW (both JSON graphs) do not
    carry``: the sides that carry no declarations, as the subject of the note."""
    kinds = {
        _side_name(v, old): ("JSON graph", "JSON graphs")
        if v.compiled is None
        else (".flow that declares none", ".flow files that declare none")
        for v in (old, new)
        if v.compiled is None or _bare(v)
    }
    if len(kinds) == 1:
        ((name, (one, _)),) = kinds.items()
        return f"{name} (a {one}) does not carry"
    (a, (one_a, many)), (b, (one_b, _)) = kinds.items()
    if one_a == one_b:
        return f"{a} and {b} (both {many}) do not carry"
    return f"{a} (a {one_a}) and {b} (a {one_b}) do not carry"


def diff_versions(
    old: Version, new: Version, options: CheckOptions | None = None, *, as_graphs: bool = False
) -> FlowDiff:
    """Compare two versions of a flow.

    Both are compared as graphs (under the checker's assumptions for graphs without
    declarations, any participant may call any tool and write any context; and, as any tool
    of a graph may return a ``Handoff``, hand off to any participant, which the checker
    leaves out and says so) when
    ``as_graphs`` is set, when either is a JSON graph, or when one declares tools or humans
    and the other declares neither (a decompiled graph): then only the routing is compared.
    A custom target's ``-> a | b`` list counts as a declaration: a graph does not carry it.

    >>> from flowc import compile_flow
    >>> a = compile_flow("speaker u: human\\nspeaker b\\nspeaker c\\nwhen from u then b\\nwhen from b then c")
    >>> b = compile_flow("speaker u: human\\nspeaker b\\nspeaker c\\nwhen from u then c\\nwhen from b then c")
    >>> d = diff_versions(Version("old", a), Version("new", b))
    >>> d.behaviour_changed, [c.kind for c in d.behavioural]
    (True, ['speaker-unreachable', 'rule-dead'])
    """
    options = options or CheckOptions()
    implicit = old.compiled is None or new.compiled is None or _bare(old) != _bare(new)
    as_graphs = as_graphs or implicit
    notes: list[Phrase] = []
    assumed = {
        "old": _assumed_for(old, new, "NEW", notes),
        "new": _assumed_for(new, old, "OLD", notes),
    }
    so, sn = (
        _Side(old, as_graphs, options, assumed["old"]),
        _Side(new, as_graphs, options, assumed["new"]),
    )
    declarations = not implicit
    if implicit:
        notes.insert(
            0,
            phrase(
                "not compared: speaker kinds (human or model), tool declarations and humans' "
                f"writes, which {_lacking(old, new)}; both are compared as graphs (any "
                "participant may call any tool, write any context and hand off to any "
                "participant)"
            ),
        )
    context = all(
        v.compiled is not None or (v.loaded is not None and v.loaded.is_knobs) for v in (old, new)
    )
    product = explore_pair(so.system, sn.system, options.max_states)
    divergences = list(product.divergences)
    capped = any(MAX_TURNS in (d.old.reason, d.new.reason) for d in divergences if d.certain)
    extra = None if capped else cap_divergence(product, options.max_states)
    out_of_reach = extra if isinstance(extra, CapOutOfReach) and not product.truncated else None
    divergences += [extra] if isinstance(extra, Divergence) else []
    divergences.sort(key=lambda d: (not d.certain, len(d.turns)))
    certain = [d for d in divergences if d.certain]
    first = None
    verdict, reason = SAME, ""
    if certain:
        verdict = CHANGED
        d = certain[0]
        first = Change(
            "routing", "OLD and NEW route this run differently", "", d.turns, d.old, d.new
        )
    elif divergences or product.truncated or product.partial or out_of_reach:
        verdict = UNKNOWN
        reasons = []
        if divergences:
            d = divergences[0]
            first = Change(
                "routing-possible",
                "OLD and NEW route this run differently if custom conditions "
                "or targets decide as assumed",
                "",
                d.turns,
                d.old,
                d.new,
            )
            reasons.append(
                "OLD and NEW route a run differently only when custom conditions or targets "
                "decide so, and flowc cannot tell whether they ever do"
            )
        if product.truncated and product.stopped_by == "memory":
            reasons.append(
                f"the exploration stopped at "
                f"{counted(len(product.keys), 'state', grouped=True)}, at its memory budget "
                f"({-(-product.memory_budget // 2**20)} MiB; a larger --max-states stops there "
                "too: fewer context keys, or fewer values per key, make the pair smaller)"
            )
        elif product.truncated:
            reasons.append(
                f"the exploration stopped at its bound of "
                f"{counted(options.max_states, 'state', grouped=True)} (raise --max-states)"
            )
        if product.partial:
            reasons.append(f"the exploration is partial: {product.partial}")
        if out_of_reach is not None:
            reasons.append(out_of_reach.text(options.max_states))
        reason = "; ".join(reasons)
    behavioural = behavioural_changes(so, sn, product, certain if certain else divergences)
    changes, verdict, reason = _weigh_properties(so, sn, behavioural, verdict, reason, notes)
    return FlowDiff(
        old,
        new,
        tuple(structural_changes(so, sn, declarations, context)),
        changes,
        first,
        any((product.truncated, so.facts.space.truncated, sn.facts.space.truncated, out_of_reach)),
        as_graphs,
        verdict,
        reason,
        tuple(notes),
    )


def _weigh_properties(
    so: _Side,
    sn: _Side,
    behavioural: Iterator[Change],
    verdict: str,
    reason: str,
    notes: list[Phrase],
) -> tuple[tuple[Change, ...], str, str]:
    """The behavioural changes, the verdict and its reason, with the verdicts of the
    properties both versions have weighed in (``verdict`` and ``reason``: the routing's)."""
    # a complete comparison that no run told apart decides some (undecided.py says why)
    undecided, agreed = und.weigh(
        so.version.compiled, so.findings, sn.version.compiled, sn.findings, verdict == SAME
    )
    notes += agreed
    changes = tuple(c for c in behavioural if c.kind != PROPERTY_UNKNOWN or c.subject in undecided)
    if verdict == SAME and any(c.kind in PROPERTY_FLIPS for c in changes):
        # no run routes differently, but a run breaks a property on one side only: the
        # behaviour changed all the same (a gate on the exit status must not pass it)
        verdict = CHANGED
    if undecided and verdict != CHANGED:
        # its verdict may differ: "the same" would be a guess (a change stays a change)
        why = und.undecided_reason(list(undecided.items()))
        reason = f"{reason}; {why}" if reason else f"no run routes differently, but {why}"
        verdict = UNKNOWN
    return changes, verdict, reason


def _side_name(version: Version, old: Version) -> str:
    return "OLD" if version is old else "NEW"


def _assumed_for(
    version: Version, other: Version, other_name: str, notes: list[Phrase]
) -> _Assumed | None:
    """For a JSON graph: what it does not carry, taken from the other side when that is a
    `.flow` (or a knobs dict, for the context), with a note saying so."""
    loaded = version.loaded
    if loaded is None or version.compiled is not None:
        return None
    me = "OLD" if other_name == "NEW" else "NEW"
    ids = m.agent_ids(loaded.graph)
    participants: tuple[str, ...] = ()
    initiator = None
    compiled = other.compiled
    if compiled is not None:
        participants = tuple(compiled.agent_id(s) for s in compiled.speakers)
        initiator = compiled.agent_id(compiled.initiator)
        full = tuple(dict.fromkeys([*participants, *ids]))
        if full != ids:
            notes.append(
                phrase(
                    f"{me} is a graph, which does not carry the channel's participants: it is "
                    f"run with {other_name}'s (",
                    _names(participants),
                    ", in that order); a run of it needs them as its script's ",
                    Code("participants"),
                )
            )
        if initiator != loaded.graph.initial_speaker and _routes_to_initiator(loaded.graph):
            notes.append(
                phrase(
                    f"{me} is a graph, which does not carry the initiator: it is run with "
                    f"{other_name}'s, ",
                    name_piece(initiator),
                    " (a run of it needs it as its script's ",
                    Code("creator"),
                    ")",
                )
            )
    context = None
    if not loaded.is_knobs:
        other_context = (
            other.context
            if (other.compiled is not None or (other.loaded is not None and other.loaded.is_knobs))
            else {}
        )
        if other_context:
            context = other_context
            notes.append(
                phrase(
                    f"{me} is a graph dict without ",
                    Code("context_vars"),
                    f": it is run with {other_name}'s initial context, and the initial "
                    "context is not compared",
                )
            )
    if not participants and initiator is None and context is None:
        return None
    return _Assumed(participants, initiator, context)


def _routes_to_initiator(graph: m.TransitionGraph) -> bool:
    return any(
        isinstance(t, m.RevertToInitiatorTarget)
        for t in (*(tr.then for tr in graph.transitions), graph.default_target)
    )


# ── output ────────────────────────────────────────────────────────────────────


def rule_labels(version: Version) -> dict[int, str]:
    compiled = version.compiled
    if compiled is None:
        return {i: f"rule {i + 1}, transitions[{i}]" for i in range(len(version.graph.transitions))}
    return {i: rule_ref(i, info.line) for i, info in enumerate(compiled.rules)}
