"""What the checks share: the explored state space and the verdicts derived from it.

Verdicts are computed once, lazily, so that a check can see what another check
reports (a finding that follows from another one is not repeated).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterator
from functools import cached_property
from operator import attrgetter
from typing import Any, TypeVar

import attrs
import networkx as nx

from flowc._compat import networkx_successors
from flowc.compiler import model as m
from flowc.compiler.analysis.explore import (
    DEFAULT,
    KICKOFF,
    Candidates,
    StateSpace,
    Step,
    evaluate,
    satisfiable,
)
from flowc.compiler.analysis.matches import first_matches
from flowc.compiler.analysis.runs import Run, run_along, run_beyond, run_to
from flowc.compiler.analysis.symbolic import SymbolicFacts, explore_symbolic
from flowc.compiler.analysis.system import (
    OTHER,
    PLAIN,
    Action,
    CondCode,
    RuleSpec,
    System,
    Valuation,
    code_parts,
)
from flowc.compiler.model import walk_condition
from flowc.diagnostics import OPT_IN, Code, Diagnostic, counted
from flowc.dsl import nodes as n
from flowc.source import Span

#: the default bound on the states explored one by one (``--max-states``), set by measurement
#: (``benchmarks/bench_analysis.py --max-states N``): at 300,000 the family's 200-speaker
#: flows (103,142 states) and its 656,100-state instance (239,921 reached) are explored
#: completely, in 3.2 s / 191 MB and 6.7 s / 361 MB; larger flows are counted symbolically
DEFAULT_MAX_STATES = 300_000

#: the longest run to the cap that is worked out (a run that reaches `max_turns N` has N turns)
MAX_CAP_RUN = 1000

_R = TypeVar("_R")


@attrs.frozen
class CheckOptions:
    """Options of one check run (keyword-only).

    ``select`` / ``ignore`` hold codes or prefixes (``"W2"``); ``strict`` makes
    warnings fail the command.

    >>> CheckOptions(max_states=10).max_states
    10
    """

    max_states: int = attrs.field(default=DEFAULT_MAX_STATES, kw_only=True)
    select: tuple[str, ...] = attrs.field(default=(), kw_only=True)
    ignore: tuple[str, ...] = attrs.field(default=(), kw_only=True)
    strict: bool = attrs.field(default=False, kw_only=True)
    #: where custom condition / target names are looked up (a
    #: :class:`flowc.compiler.registry.TransitionRegistry`); ``None``: the default one
    registry: Any = attrs.field(default=None, kw_only=True, eq=False)
    #: ``"ag2"``: also refuse what a bare AG2 1.2.1 cannot load (E112), as
    #: ``flowc compile --target ag2`` does
    target: str = attrs.field(default="flowc", kw_only=True)
    #: codes of :data:`flowc.diagnostics.OPT_IN` to report although ``select`` does not
    #: name them (a caller that reports every code, then filters by ``select`` itself)
    also: tuple[str, ...] = attrs.field(default=(), kw_only=True)

    def wants(self, code: str) -> bool:
        """Whether ``code`` is reported under ``select`` / ``ignore``. A code of
        :data:`flowc.diagnostics.OPT_IN` only when ``select`` (or ``also``) names it in
        full: no prefix, and no empty selection, stands for it.

        >>> CheckOptions().wants("I307"), CheckOptions(select=("I",)).wants("I307")
        (False, False)
        >>> CheckOptions(select=("W", "I307")).wants("I307")
        True
        """
        if code in OPT_IN and code not in self.select and code not in self.also:
            return False
        if code not in self.also and self.select and not any(map(code.startswith, self.select)):
            return False
        return not any(code.startswith(p) for p in self.ignore)

    @property
    def opted_in(self) -> tuple[str, ...]:
        """The codes of :data:`flowc.diagnostics.OPT_IN` this selection asks for."""
        return tuple(c for c in OPT_IN if c in self.select or c in self.also)


@attrs.frozen
class Finding:
    """A diagnostic and, for the flow-analysis codes, its counterexample run."""

    diagnostic: Diagnostic
    run: Run | None = None
    #: the rule (file index) the finding is about, when it is about one
    rule: int | None = None


@attrs.frozen
class DeadRule:
    """A rule that never fires in any explored run."""

    rule: RuleSpec
    shadowed: bool  # its condition holds on some turn, where an earlier rule fires
    witness: Run | None = None  # a run to a turn where it could match
    taken_by: int | None = None  # the rule (file index) or DEFAULT that fired there
    trap: Run | None = None  # W204: a run to a turn where it would fire in file order
    trap_taken_by: int | None = None
    cause: str | None = None  # a finding it follows from: "W201", "W208", "W209"


#: default targets AG2's factories and its implicit default write
_IMPLIED_REASONS = frozenset({"after_work", "sequence_complete", "round_robin_complete"})


class Facts:
    """The analysis of one flow; checks read it."""

    def __init__(self, system: System, space: StateSpace, filename: str, *, symbolic: bool = True):
        self.system = system
        self.space = space
        self.filename = filename
        #: whether a cut-short exploration is counted symbolically too (see
        #: :func:`flowc.compiler.analysis.facts_of`: not again once CUDD ran out of memory)
        self.counts = symbolic

    # completeness ----------------------------------------------------------------
    #
    # When the explicit exploration stops at its bound, the symbolic explorer still
    # accounts for every state: who can speak, which rules and the default can fire,
    # which endings are reached and whether some state can never reach one (a loop).
    # Each finding then needs its run: the explored nodes up to ``space.horizon`` turns
    # are exactly those a complete exploration finds first (same numbers, same
    # parents), so a run found among them is the one a complete analysis prints. A
    # verdict whose run lies further is not reported, and I301 names it.

    @cached_property
    def complete(self) -> bool:
        """Whether who speaks, which rules and defaults fire and how runs end are known
        for every state (explored one by one, or counted symbolically)."""
        return not self.space.truncated or self.symbolic is not None

    @cached_property
    def explored(self) -> int:
        """How many nodes, in breadth-first order, are those a complete exploration finds
        first: all of them when complete, else those within ``space.horizon`` turns."""
        space = self.space
        if not space.truncated:
            return len(space.keys)
        horizon = space.horizon if space.horizon is not None else -1
        return bisect.bisect_right(space.dist, horizon)

    @property
    def states(self) -> int:
        """The abstract states of the flow (all of them when :attr:`complete`)."""
        if self.space.truncated and self.symbolic is not None:
            return self.symbolic.states
        return len(self.space.keys)

    @cached_property
    def fired(self) -> frozenset[int]:
        """The rules (file indices) that fire on some turn of some run."""
        if self.space.truncated and self.symbolic is not None:
            return frozenset(f for f in self.symbolic.fired if f >= 0)
        return frozenset(self.space.fired)

    @cached_property
    def default_fired(self) -> bool:
        """Whether the default decides some turn of some run."""
        if self.space.truncated and self.symbolic is not None:
            return DEFAULT in self.symbolic.fired
        return self.space.default_fired

    @cached_property
    def has_ends(self) -> bool:
        """Whether some run ends (terminates, finishes or is closed by a custom target)."""
        if self.space.truncated and self.symbolic is not None:
            return bool(self.symbolic.ends)
        return bool(self.space.ends)

    @cached_property
    def loops_known(self) -> bool:
        """Whether the closed loops (``traps``) are all known: explored completely, or
        no state can fail to reach an end (then there are none)."""
        if not self.space.truncated:
            return True
        found = self.symbolic
        return found is not None and found.reach is not None and not found.reach.trapped()

    @cached_property
    def sample_known(self) -> bool:
        """Whether :attr:`sample_run` is known: a shortest run to an end (from the explored
        nodes, or read from the symbolic layers), or, when no run ends, a loop (known only
        when explored completely)."""
        if not self.space.truncated:
            return True
        found = self.symbolic
        return found is not None and bool(found.ends)

    @property
    def unknown_rules(self) -> frozenset[int]:
        """Dead rules (file indices) whose finding is not known: its run lies beyond the
        explored nodes and a loop might explain it instead (see :attr:`dead_rules`)."""
        _ = self.dead_rules
        return frozenset(self._unknown_rules)

    #: (filled by :attr:`dead_rules`)
    @cached_property
    def _unknown_rules(self) -> set[int]:
        return set()

    @property
    def states_seen(self) -> str:
        """How the findings' notes say how many states the verdict covers."""
        if self.space.truncated and self.symbolic is not None:
            return f"counted {counted(self.states, 'state', grouped=True)} symbolically"
        return f"explored {counted(self.states, 'state')}"

    @cached_property
    def unknown_speakers(self) -> frozenset[int]:
        """Speakers that never speak and that a dead rule of :attr:`unknown_rules` routes
        to: a complete analysis may say it in that rule's finding instead of W201."""
        out = set()
        for index in self.unknown_rules:
            then = self.system.rules[index].then
            if isinstance(then, m.AgentTarget):
                speaker = self.system.index_of(then.agent_id)
                if speaker not in self.scheduled:
                    out.add(speaker)
        return frozenset(out)

    @cached_property
    def symbolic(self) -> SymbolicFacts | None:
        """When the exploration stopped at its bound: what the symbolic explorer found
        about every state (None: the exploration was complete, the input is a JSON graph,
        or the symbolic one gave up too)."""
        if not self.space.truncated or self.system.json_mode or not self.counts:
            return None
        return explore_symbolic(self.system)

    # locations -------------------------------------------------------------

    @property
    def flow(self) -> n.Flow | None:
        return self.system.compiled.flow if self.system.compiled is not None else None

    def diag(
        self,
        code: Code,
        message: str,
        *,
        span: Span | None = None,
        json_path: str | None = None,
        notes: tuple[str, ...] = (),
        help: str | None = None,
        explanation: str | None = None,
    ) -> Diagnostic:
        if self.system.json_mode and json_path is not None:
            json_path = self.system.json_path(json_path)
        return Diagnostic(
            code, message, self.filename, span, notes, help, json_path, explanation=explanation
        )

    def rule_span(self, rule: RuleSpec) -> Span | None:
        info = rule.info
        if info is None:
            return None
        if info.rule is not None and info.span == info.rule.cond.span:
            return info.rule.span
        return info.span

    def default_location(self) -> tuple[Span | None, str | None]:
        compiled = self.system.compiled
        if compiled is None:
            return None, "default_target"
        return compiled.default_span, None

    # speakers ----------------------------------------------------------------

    @cached_property
    def first_nodes(self) -> dict[int, int]:
        """Each speaker scheduled in the explored space -> the first node (breadth-first:
        the fewest turns from the kickoff) where it speaks; one walk, kept with the space
        (:meth:`shared`), that what speaks where first is read from (W215's speakers,
        W219's runs, the speakers ever scheduled)."""
        space = self.space

        def first_nodes() -> dict[int, int]:
            first: dict[int, int] = {}
            for node, key in enumerate(space.keys):  # breadth-first: by distance
                if key != KICKOFF and key[0] != "end":
                    first.setdefault(int(key[0]), node)
            return first

        return self.shared(("first node by speaker",), first_nodes)

    @cached_property
    def scheduled(self) -> frozenset[int]:
        if self.space.truncated and self.symbolic is not None:
            return frozenset(self.symbolic.scheduled)
        return frozenset({self.system.start, *self.first_nodes})

    # the turn cap ------------------------------------------------------------
    #
    # Distances are first-reach distances (turns from the kickoff), known for every state
    # explicitly or from the symbolic count. A verdict's run comes from the explored
    # nodes when its turn lies among them (the one a complete analysis shows), else it
    # is read back from the symbolic layers (as short).

    @cached_property
    def after_cap_speakers(self) -> dict[int, int]:
        """Speakers that are scheduled only after ``max_turns`` closed every run (W215):
        speaker -> the distance of the first state where it would speak."""
        cap = self.system.max_turns
        if cap is None or not self.complete:
            return {}
        return {
            s: d for s, d in self._first_scheduled.items() if d >= cap and s != self.system.start
        }

    @cached_property
    def _first_scheduled(self) -> dict[int, int]:
        space = self.space
        if space.truncated:
            assert self.symbolic is not None
            return dict(self.symbolic.scheduled)
        return {s: space.dist[node] for s, node in self.first_nodes.items()}

    @cached_property
    def after_cap_rules(self) -> dict[int, int]:
        """Rules (file index, or ``DEFAULT`` for a written default) that fire only on a turn
        after ``max_turns`` (W215): -> the distance of the state the first such turn is
        taken from."""
        space, cap = self.space, self.system.max_turns
        if cap is None or not self.complete:
            return {}
        if space.truncated:
            assert self.symbolic is not None
            first = {f: d for f, d in self.symbolic.fired.items() if f >= 0 or f == DEFAULT}
        else:
            first = {f: space.dist[v] for f, v in space.first_fired.items()}
        out = {f: d for f, d in first.items() if d >= cap}
        if DEFAULT in out and not self.default_written:
            del out[DEFAULT]
        return out

    def late_speaker_run(self, speaker: int) -> Run:
        """A shortest run to the first state where a speaker of :attr:`after_cap_speakers`
        would speak."""
        space, d = self.space, self.after_cap_speakers[speaker]
        lo = bisect.bisect_left(space.dist, d, hi=self.explored)
        for node in range(lo, self.explored):
            if space.dist[node] != d:
                break
            key = space.keys[node]
            if key != KICKOFF and key[0] != "end" and int(key[0]) == speaker:
                return run_to(space, node)
        assert self.symbolic is not None and self.symbolic.reach is not None
        reach = self.symbolic.reach
        (u,) = [u for s, u in reach.layer(d) if s == speaker]
        node, steps = reach.path_to(d, speaker, reach.pick(u), space.ids.get)
        return run_beyond(space, node, steps)

    def late_rule_turn(self, fired: int) -> tuple[int, Run] | None:
        """The first turn a rule (or the default) of :attr:`after_cap_rules` decides: its
        speaker and a shortest run through it. None when that turn lies beyond the
        explored nodes and, there, speakers of :attr:`after_cap_speakers` and others both
        take one first (which one a complete analysis shows, and so whether W215 says it
        of the rule or only of the speaker, is not known)."""
        return self._late_turns[fired]

    @cached_property
    def _late_turns(self) -> dict[int, tuple[int, Run] | None]:
        """:meth:`late_rule_turn` of every rule of :attr:`after_cap_rules` that W212 does
        not already say (:meth:`folded_into_w212`): one pass over the explored nodes from
        the first such distance, then each layer beyond them asked once."""
        space = self.space
        late = {f: d for f, d in self.after_cap_rules.items() if not self.folded_into_w212(f)}
        out: dict[int, tuple[int, Run] | None] = {}
        if not space.truncated:
            for f in late:
                node = space.first_fired[f]
                steps = space.explorer.steps(space.keys[node])
                step = next(s for s in steps if s.outcome.fired == f)
                out[f] = space.speaker_of(node), run_to(space, node, step)
            return out
        horizon = space.horizon if space.horizon is not None else -1
        near = {f for f, d in late.items() if d <= horizon}
        if near:
            lo = bisect.bisect_left(space.dist, min(late[f] for f in near), hi=self.explored)
            for node in range(lo, self.explored):
                if not near:
                    break
                if space.is_end(node):
                    continue
                for step in space.explorer.steps(space.keys[node]):
                    f = step.outcome.fired
                    if f in near:  # (no explored turn before decides it: this is its first)
                        out[f] = space.speaker_of(node), run_to(space, node, step)
                        near.discard(f)
        far: dict[int, set[int]] = {}
        for f, d in late.items():
            if f not in out:
                far.setdefault(d, set()).add(f)
        if not far:
            return out
        assert self.symbolic is not None and self.symbolic.reach is not None
        reach = self.symbolic.reach
        for d, fired in sorted(far.items()):
            for f, deciders in reach.deciders(fired, d).items():
                if len({s in self.after_cap_speakers for s, _, _ in deciders}) > 1:
                    out[f] = None
                    continue
                speaker, before, turn = deciders[0]
                node, path = reach.path_to(d, speaker, before, space.ids.get)
                out[f] = speaker, run_beyond(space, node, [*path, (speaker, turn)])
        return out

    @property
    def unknown_late(self) -> frozenset[int]:
        """Rules (or DEFAULT) that first fire after the cap, where whether W215 says so of
        the rule or only of its speaker is not known (see :meth:`late_rule_turn`)."""
        return frozenset(f for f, found in self._late_turns.items() if found is None)

    @cached_property
    def end_distances(self) -> dict[str | None, int]:
        """Every reason a run can end with (None: chosen by a custom target) -> the fewest
        turns to such an ending."""
        space = self.space
        if space.truncated:
            assert self.symbolic is not None
            return dict(self.symbolic.ends)
        out: dict[str | None, int] = {}
        for v in space.ends:
            out.setdefault(space.keys[v][1], space.dist[v])
        return out

    @cached_property
    def cap_reached(self) -> bool:
        """Whether some run takes ``max_turns`` turns without ending (the cap closes it)."""
        if (cap := self.system.max_turns) is None:
            return False
        if not self.space.truncated:
            return self.space.runs_to_cap(cap)  # (one pass over the edges, for any cap)
        found = self.symbolic
        assert found is not None and found.reach is not None
        # (a turn at a time: a run still going after MAX_CAP_RUN turns counts as reaching it)
        return found.deepest >= cap or found.reach.lasts(min(cap, MAX_CAP_RUN))

    @cached_property
    def cap_walk(self) -> list[int] | None:
        """The nodes of a run of exactly ``max_turns`` turns that does not end before the
        cap closes it (``None``: every run ends sooner, there is no cap, or it is longer
        than :data:`MAX_CAP_RUN`). Coverage's ``max_turns`` target and W217 show it.

        The nodes a run can be at after k turns (layer k) are computed for k up to the
        cap, and the walk is read backwards from the last layer. Each layer follows from
        the one before alone, so once a layer comes again the layers repeat: layer k is
        then found by its place in the repetition, not computed (a loop of a few states
        under a cap of hundreds of turns costs a few layers, not hundreds).
        """
        space, cap = self.space, self.system.max_turns
        if cap is None or cap > MAX_CAP_RUN or space.truncated:
            return None
        succ = networkx_successors(space.graph)
        pred = space.graph.pred
        ends = bytearray(len(space.keys))
        for v in space.ends:
            ends[v] = 1
        layers: list[frozenset[int]] = [frozenset({0})]
        seen: dict[frozenset[int], int] = {layers[0]: 0}
        first = None  # where the repetition starts
        while len(layers) <= cap:
            nxt = frozenset(v for u in layers[-1] for v in succ[u] if not ends[v])
            if not nxt:
                return None
            first = seen.get(nxt)
            if first is not None:
                break
            seen[nxt] = len(layers)
            layers.append(nxt)
        period = len(layers) - first if first is not None else 0

        def layer(k: int) -> frozenset[int]:
            if k < len(layers):
                return layers[k]
            assert first is not None
            return layers[first + (k - first) % period]

        walk = [min(layer(cap))]
        for k in range(cap - 1, -1, -1):
            here, at = walk[-1], layer(k)
            walk.append(min(u for u in pred[here] if u in at))
        return walk[::-1]

    @cached_property
    def cap_before_every_end(self) -> bool:
        """W212's case: ``max_turns`` is smaller than the shortest run that terminates."""
        cap = self.system.max_turns
        if cap is None or not self.complete or not self.end_distances:
            return False
        return min(self.end_distances.values()) > cap

    def folded_into_w212(self, fired: int) -> bool:
        """A terminate that fires only after the cap, when W212 says every run ends there."""
        if not self.cap_before_every_end:
            return False
        target = self.system.default if fired == DEFAULT else self.system.rules[fired].then
        return isinstance(target, m.TerminateTarget)

    @property
    def default_written(self) -> bool:
        """Whether the default is the flow's own (``otherwise``), not an implied one."""
        compiled = self.system.compiled
        if compiled is not None:
            return compiled.default_span is not None
        default = self.system.default
        return not (isinstance(default, m.TerminateTarget) and default.reason in _IMPLIED_REASONS)

    def speaker_span(self, speaker: int) -> Span | None:
        return self._speaker_spans.get(self.system.speakers[speaker])

    @cached_property
    def _speaker_spans(self) -> dict[str, Span]:
        """Each speaker's name in its (first) declaration."""
        out: dict[str, Span] = {}
        if self.flow is not None:
            for decl in self.flow.speakers():
                out.setdefault(decl.name.value, decl.name.span)
        return out

    def mention(self, speaker: int) -> str | None:
        """In a JSON graph: the path of the first rule that names the speaker's id (in its
        ``from`` or as its target), ``""`` for none; None for a `.flow`."""
        if not self.system.json_mode:
            return None
        return self._mentions.get(self.system.ids[speaker], "")

    @cached_property
    def _mentions(self) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for rule in self.system.rules:
            named = [c.agent_id for c in walk_condition(rule.when) if isinstance(c, m.FromSpeaker)]
            if isinstance(rule.then, m.AgentTarget):
                named.append(rule.then.agent_id)
            for agent in named:
                out.setdefault(agent, rule.json_path)
        return out

    # context and tools -----------------------------------------------------

    @cached_property
    def unset_keys(self) -> frozenset[str]:
        """Keys a condition reads that nothing sets (no initial value, no tool writes them,
        no human declares it writes them)."""
        compiled = self.system.compiled
        if compiled is None:
            return frozenset()
        written = {k for t in compiled.tools for alt in t.alternatives for k, _ in alt.sets}
        written |= {k for keys in compiled.human_writes.values() for k in keys}
        return frozenset(
            k for k in self.system.keys if k not in compiled.context_vars and k not in written
        )

    @cached_property
    def unknown_tools(self) -> frozenset[str]:
        compiled = self.system.compiled
        if compiled is None:
            return frozenset()
        declared = set(compiled.tool_names)
        return frozenset(t for t in self.system.tool_names if t not in declared)

    # turns -------------------------------------------------------------------

    def turns_of(self, node: int) -> Iterator[tuple[int, Any, Valuation]]:
        """(speaker, action, valuation after its writes) for every routed turn from a node."""
        space = self.space
        key = space.keys[node]
        if key[0] == "end":
            return
        speaker = space.speaker_of(node)
        # the kickoff is a plain message, or a human's (which may write its keys): as
        # :meth:`Explorer.steps` takes it
        kickoff = speaker not in self.system.humans
        actions = (PLAIN,) if key == KICKOFF and kickoff else self.system.actions[speaker]
        before = self.system.initial if key == KICKOFF else key[1]
        for action in actions:
            if action.finish is not None or action.handoff is not None:
                continue
            for after in space.explorer.after(before, action, speaker):
                yield speaker, action, after

    def _file_order(self, speaker: int, tool: int | None) -> tuple[RuleSpec, ...]:
        """The rules that may match a turn of ``speaker`` calling ``tool``, in file order."""
        return self._file_cands.of(speaker, tool)

    @cached_property
    def _file_cands(self) -> Candidates:
        return Candidates(self.system.rules, len(self.system.speakers), attrgetter("index"))

    def _traps(self, subjects: list[RuleSpec]) -> dict[int, tuple[int, Step]]:
        """For each rule, the first explored turn (breadth-first) where it would fire in
        file order (:meth:`_traps_now`), worked out once per shape (:meth:`shared`)."""
        return self.shared(
            ("traps", tuple(r.index for r in subjects)), lambda: self._traps_now(subjects)
        )

    def _traps_now(self, subjects: list[RuleSpec]) -> dict[int, tuple[int, Step]]:
        """For each rule, the first explored turn (breadth-first) where it would fire in
        file order: its condition holds and that of every rule before it in the file does not.

        One walk over the file-order rules per turn serves every rule: a rule surely
        false there adds nothing, a rule surely true there hides every later one, and
        only the rules that hang on a custom condition go into the satisfiability check.
        """
        space = self.space
        pending = {r.index for r in subjects}
        out: dict[int, tuple[int, Step]] = {}
        tried: set[tuple[int, int | None, Valuation]] = set()
        last = max(pending, default=-1)  # no rule after the last pending one matters
        for node in range(self.explored):
            if not pending:
                break
            for speaker, action, after in self.turns_of(node):
                tool = action.tool_index
                if (speaker, tool, after) in tried:
                    continue  # as in _first_matches: an equal turn was tried already
                tried.add((speaker, tool, after))
                undecided: list[CondCode] = []  # earlier rules that hang on a custom condition
                for rule in self._file_order(speaker, tool):
                    if rule.index > last:
                        break
                    res = evaluate(rule.code, speaker, tool, after, {})
                    if res is False:
                        continue
                    if rule.index in pending:
                        found = satisfiable(
                            [(rule.code, True), *((c, False) for c in undecided)],
                            speaker,
                            tool,
                            after,
                            {},
                        )
                        if found is not None:
                            assumed = tuple(sorted(found.items()))
                            outcome = space.explorer.route(speaker, tool, after, assumed)[0]
                            out[rule.index] = (node, Step(action, after, outcome))
                            pending.discard(rule.index)
                    if res is True:
                        break  # it fires first whenever it is reached
                    undecided.append(rule.code)
                if not pending:
                    break
                if last not in pending:
                    last = max(pending)
        return out

    @cached_property
    def dead_rules(self) -> tuple[DeadRule, ...]:
        """Every rule that never fires, classified; empty when it is not known (the
        exploration was cut short and the symbolic one gave up too). A rule whose
        classification needs a run beyond the explored nodes goes to :attr:`unknown_rules`."""
        if not self.complete:
            return ()
        causes = {r.index: self._cause(r) for r in self.system.rules if r.index not in self.fired}
        hits = self._first_matches(
            [r for r in self.system.rules if r.index in causes and causes[r.index] is None]
        )
        traps = self._traps(
            [self.system.rules[i] for i in hits if self._written_priority(self.system.rules[i])]
        )
        # (rule -> its witness run and what fires there, found beyond the explored nodes)
        far: dict[int, tuple[Run, int]] = {}
        far_traps: dict[int, tuple[Run, int]] = {}
        if self.space.truncated:
            causes = self._known_dead(causes, hits, traps, far, far_traps)
        out: list[DeadRule] = []
        # rules first matched on the same turn share one witness run
        # (keyed by the step object: a step's values may be JSON lists, which do not hash)
        witnesses: dict[int, tuple[Step, Run]] = {}
        for index, cause in causes.items():
            rule = self.system.rules[index]
            hit = hits.get(index)
            if index in far:
                run, taken_by = far[index]
                dead = DeadRule(rule, True, run, taken_by)
                if index in far_traps:
                    run, taken_by = far_traps[index]
                    dead = attrs.evolve(dead, trap=run, trap_taken_by=taken_by)
                out.append(dead)
                continue
            if hit is None:
                out.append(DeadRule(rule, False, cause=cause))
                continue
            node, step = hit
            shared = witnesses.get(id(step))
            if shared is None:
                shared = witnesses[id(step)] = (step, run_to(self.space, node, step))
            witness = shared[1]
            dead = DeadRule(rule, True, witness, step.outcome.fired)
            trap = traps.get(index)
            if index in far_traps:
                run, taken_by = far_traps[index]
                dead = attrs.evolve(dead, trap=run, trap_taken_by=taken_by)
            elif trap is not None:
                node, step = trap
                dead = attrs.evolve(
                    dead,
                    trap=run_to(self.space, node, step),
                    trap_taken_by=step.outcome.fired,
                )
            out.append(dead)
        return tuple(out)

    def _known_dead(
        self,
        causes: dict[int, str | None],
        hits: dict[int, tuple[int, Step]],
        traps: dict[int, tuple[int, Step]],
        far: dict[int, tuple[Run, int]],
        far_traps: dict[int, tuple[Run, int]],
    ) -> dict[int, str | None]:
        """Of the dead rules, those whose classification and run are known: from the
        explored nodes, else read from the symbolic layers (into ``far`` and ``far_traps``:
        the run to the first turn where its condition holds, or where it would fire in
        file order). The others go to :attr:`unknown_rules`."""
        assert self.symbolic is not None and self.symbolic.reach is not None
        reach = self.symbolic.reach
        unknown = self._unknown_rules
        for index, cause in causes.items():
            if cause is not None:
                continue
            rule = self.system.rules[index]
            if index not in hits:
                # its condition holds on no explored turn: on none at all, or further on
                if reach.matchable(rule):
                    if not self.loops_known:
                        unknown.add(index)  # W205 may take it over: not known without the loops
                        continue
                    found = reach.first_match(rule)
                    assert found is not None
                    far[index] = self._far_run(*found)
                else:  # it holds on no turn at all: its run is the sample (or a call)
                    if not self.sample_known:
                        unknown.add(index)
                    elif self.unrouted_calls(rule) is not None and self.first_call(rule) is None:
                        unknown.add(index)  # the run that calls its tool may lie further on
                    continue
            elif not self.loops_known:
                unknown.add(index)  # W205 may take it over: not known without the loops
                continue
            if (
                self._written_priority(rule)
                and index not in traps
                and reach.fires_in_file_order(rule, self._file_cands)
            ):
                found = reach.first_match(rule, self._file_cands)
                assert found is not None
                far_traps[index] = self._far_run(*found)
        return {i: c for i, c in causes.items() if i not in unknown}

    def _far_run(self, layer: int, speaker: int, before: Valuation, step: Step) -> tuple[Run, int]:
        """The run to a turn read from the symbolic layers, and what fires on it."""
        assert self.symbolic is not None and self.symbolic.reach is not None
        node, steps = self.symbolic.reach.path_to(layer, speaker, before, self.space.ids.get)
        return run_beyond(self.space, node, [*steps, (speaker, step)]), step.outcome.fired

    def first_call(self, rule: RuleSpec) -> Run | None:
        """A shortest run whose last turn calls one of the tools ``rule`` waits for, by a
        speaker it admits (None when no explored run does)."""
        space = self.space
        tools = rule.tools or frozenset()
        for node in range(1, self.explored):  # breadth-first; the kickoff calls no tool
            if space.is_end(node):
                continue
            speaker = space.speaker_of(node)
            if rule.senders is not None and speaker not in rule.senders:
                continue
            for step in space.explorer.steps(space.keys[node]):
                if step.action.tool is not None and step.action.tool_index in tools:
                    return run_to(space, node, step)
        return None

    def unrouted_calls(self, rule: RuleSpec) -> tuple[tuple[str, tuple[Action, ...]], ...] | None:
        """When ``rule`` can match only a turn that calls a tool (``when tool close``, ``when
        tool close and from bot``) and every declared alternative of those tools, on every
        speaker the rule admits, finishes the run or hands the turn off: each tool with
        those alternatives. Such a turn is never routed (the finish or the hand-off decides
        it), so the rule never fires. None otherwise (some call is routed, or none is made).
        """
        if rule.tools is None or self.system.json_mode:
            return None
        senders = range(len(self.system.speakers)) if rule.senders is None else sorted(rule.senders)
        found: dict[str, list[Action]] = {}
        for speaker in senders:
            if not 0 <= speaker < len(self.system.actions):
                continue
            for action in self.system.actions[speaker]:
                if action.tool is None or action.tool_index not in rule.tools:
                    continue
                if action.finish is None and action.handoff is None:
                    return None  # a call that the rules route
                found.setdefault(action.tool, []).append(action)
        if not found:
            return None
        return tuple((tool, tuple(actions)) for tool, actions in found.items())

    def contradiction(self, rule: RuleSpec) -> str | None:
        """Why a rule's condition holds on no turn whatever the run (``None``: it can hold).

        The condition is tried on every sender, routing tool (or none) and abstract value
        of the keys it reads; when nothing satisfies it, the first pair of its ``and``
        parts that cannot hold together (or the part that never holds) is the reason:
        ``from a`` and ``from b`` (a turn has one sender), ``context.k == 1`` and
        ``context.k == 2`` (a key has one value), ``tool x`` and ``tool y``.
        """
        cache = self._contradictions
        if rule.index not in cache:
            cache[rule.index] = self._contradiction(rule)
        return cache[rule.index]

    @cached_property
    def _contradictions(self) -> dict[int, str | None]:
        return {}

    def _contradiction(self, rule: RuleSpec) -> str | None:
        if self._satisfiable_anywhere([rule.code]):
            return None
        parts = list(_conjuncts(rule.when, rule.code))
        for cond, code in parts:
            if not self._satisfiable_anywhere([code]):
                return f"`{self.system.describe_cond(cond)}` never holds"
        for i, (a, code_a) in enumerate(parts):
            for b, code_b in parts[i + 1 :]:
                if not self._satisfiable_anywhere([code_a, code_b]):
                    why = _why_exclusive(a, b)
                    return (
                        f"`{self.system.describe_cond(a)}` and `{self.system.describe_cond(b)}` "
                        f"cannot both hold{why}"
                    )
        return "no sender, tool call and context make it hold"

    #: the most abstract valuations tried for one rule (beyond that, no verdict)
    _MAX_VALUATIONS = 4096

    def _satisfiable_anywhere(self, codes: list[Any]) -> bool:
        # equal conditions share one code: each set of codes is tried once
        key = tuple(map(id, codes))
        found = self._satisfiable.get(key)
        if found is None:
            found = self._satisfiable[key] = self._try_satisfy(codes)
        return found

    @cached_property
    def _satisfiable(self) -> dict[tuple[int, ...], bool]:
        return {}

    def _try_satisfy(self, codes: list[Any]) -> bool:
        system = self.system
        reads = sorted({k for code in codes for k in _code_reads(code)})
        # a condition only asks whether a key's value is one it names: those values, and
        # one it does not name (OTHER), stand for every value (trying all the key's
        # literals made this quadratic in a flow comparing one key with many values)
        named: dict[int, set[int]] = {}
        for code in codes:
            for k, hits in _code_ctx_values(code):
                named.setdefault(k, set()).update(hits)
        domains = [(OTHER, *sorted(named.get(k, set()) - {OTHER})) for k in reads]
        size = 1
        for d in domains:
            size *= len(d)
        if size > self._MAX_VALUATIONS:
            return True  # too many to try: make no claim
        base = list(system.initial)
        # a condition only compares the sender and the tool with the ones it names: those,
        # plus one sender and one tool it does not name, stand for every case
        senders = (*sorted({s for code in codes for s in _code_names(code, "from")}), -2)
        tools = (-1, *sorted({t for code in codes for t in _code_names(code, "tool")}))
        wanted = [(code, True) for code in codes]
        for values in itertools.product(*domains):
            val = list(base)
            for k, v in zip(reads, values, strict=True):
                val[k] = v
            frozen = tuple(val)
            for sender in senders:
                for tool in tools:
                    if satisfiable(wanted, sender, tool, frozen, {}) is not None:
                        return True
        return False

    def _cause(self, rule: RuleSpec) -> str | None:
        """The finding a dead rule follows from, if any."""
        if self._unknown_tool_ids or self._unset_key_ids:
            tools, keys = self._code_mentions(rule.code)
            if tools & self._unknown_tool_ids:
                return "W208"
            if keys & self._unset_key_ids:
                return "W209"
        if rule.senders and not (rule.senders & self.scheduled):
            return "W201"  # (no sender at all is a contradiction, reported as W203)
        return None

    @cached_property
    def _unknown_tool_ids(self) -> frozenset[int]:
        unknown = self.unknown_tools
        return frozenset(i for i, t in enumerate(self.system.tool_names) if t in unknown)

    @cached_property
    def _unset_key_ids(self) -> frozenset[int]:
        unset = self.unset_keys
        return frozenset(i for i, k in enumerate(self.system.keys) if k in unset)

    def _code_mentions(self, code: CondCode) -> tuple[frozenset[int], frozenset[int]]:
        """The tools and keys a compiled condition names anywhere in it (a custom call's
        arguments are not looked into); equal conditions share one code, looked at once."""
        found = self._mention_cache.get(id(code))
        if found is None:
            tools = frozenset(_code_names(code, "tool"))
            found = self._mention_cache[id(code)] = (tools, frozenset(_code_reads(code)))
        return found

    @cached_property
    def _mention_cache(self) -> dict[int, tuple[frozenset[int], frozenset[int]]]:
        return {}

    def once(self, key: str, work: Callable[[], _R]) -> _R:
        """``work()``, kept with these facts under ``key``: for what two checks ask
        about this version (unlike :meth:`shared`, never handed to another version)."""
        memo = self._once
        if key in memo:
            return memo[key]  # type: ignore[no-any-return]
        found = memo[key] = work()
        return found

    @cached_property
    def _once(self) -> dict[str, Any]:
        return {}

    def shared(self, key: tuple[Any, ...], work: Callable[[], _R]) -> _R:
        """``work()``, kept with the state space under ``key``: for what depends on the
        space and on what the rules route by alone (their indices, conditions, senders,
        tools: :meth:`System.shape`), never on where they were written. The language
        server's :class:`~flowc.compiler.analysis.SpaceCache` hands the space of the last
        version to a new version of the same shape (a comment written, lines moved), and
        these results come with it; ``key`` names the question and every argument. A
        result is shared by every version of the shape: callers must not change it."""
        memo = self.space.memo
        if key in memo:
            return memo[key]  # type: ignore[no-any-return]
        found = memo[key] = work()
        return found

    def _first_matches(self, rules: list[RuleSpec]) -> dict[int, tuple[int, Step]]:
        """For each rule, the first explored turn (breadth-first) where its condition holds."""
        return self.shared(
            ("first matches", tuple(r.index for r in rules)),
            lambda: first_matches(self.space, self.turns_of, self.explored, rules),
        )

    def _written_priority(self, rule: RuleSpec) -> bool:
        if rule.info is None:
            return rule.priority != 0
        written = rule.info.rule
        return written is not None and written.priority is not None and written.priority.value != 0

    def describe_fired(self, fired: int | None) -> str:
        if fired is None or fired == DEFAULT:
            return f"the default `otherwise {self.system.describe_target(self.system.default)}`"
        rule = self.system.rules[fired]
        return self.system.label(rule)

    # ends and loops --------------------------------------------------------

    @cached_property
    def can_end(self) -> frozenset[int]:
        """The nodes from which some run ends (one search back from every end at once)."""
        return self.shared(("can end",), self._can_end_now)

    def _can_end_now(self) -> frozenset[int]:
        pred = self.space.graph.pred
        out: set[int] = set(self.space.ends)
        todo = list(out)
        while todo:
            v = todo.pop()
            for u in pred[v]:
                if u not in out:
                    out.add(u)
                    todo.append(u)
        return frozenset(out)

    @cached_property
    def traps(self) -> tuple[frozenset[int], ...]:
        """The closed loops no run can leave (bottom components that cannot reach an end)."""
        return self.shared(("loops",), self._loops_now)

    def _loops_now(self) -> tuple[frozenset[int], ...]:
        if self.space.truncated:
            return ()
        trapped = [v for v in range(len(self.space.keys)) if v not in self.can_end]
        if not trapped:
            return ()
        bottoms = _bottom_components(
            networkx_successors(self.space.graph), trapped, len(self.space.keys)
        )
        dist = self.space.dist
        return tuple(sorted(bottoms, key=lambda comp: min((dist[v], v) for v in comp)))

    def loop_rules(self, comp: frozenset[int]) -> list[int]:
        """What routes the turns inside a loop: rule file indices (or DEFAULT), sorted."""
        found = self._loop_rules.get(comp)
        if found is None:
            space = self.space
            fired: set[int] = set()
            for u in comp:
                for step in space.explorer.steps(space.keys[u]):
                    if space.explorer.next_key(step)[0] != "end":
                        fired.add(step.outcome.fired)
            found = self._loop_rules[comp] = sorted(fired)
        return found

    @cached_property
    def _loop_rules(self) -> dict[frozenset[int], list[int]]:
        return {}

    def sticky(self, comp: frozenset[int]) -> tuple[RuleSpec, int] | None:
        """A context rule routing inside the loop whose key no one on the loop changes for it,
        and a turn it routes comes within the cap (none when the rule can fire in the loop
        only on the cap's last turn or later: the cap closes the run, no run goes round it;
        its counterexample, :meth:`lasso`, is then longer than any run the flow has)."""
        known = self.__dict__.setdefault("_sticky", {})
        if comp not in known:
            known[comp] = None if self.system.json_mode else self._find_sticky(comp)
        return known[comp]  # type: ignore[no-any-return]

    def _find_sticky(self, comp: frozenset[int]) -> tuple[RuleSpec, int] | None:
        vals, cap = [self.space.keys[v][1] for v in comp], self.system.max_turns or 0
        if 0 < cap <= min(self.space.dist[v] for v in comp) + 1:
            return None  # (a node at distance d speaks on turn d + 1; the next turn is cut)
        for fired in (f for f in self.loop_rules(comp) if f >= 0):
            rule = self.system.rules[fired]
            for key in sorted(rule.reads):
                if rule.reads_alike(key, {val[key] for val in vals}) and (
                    not cap or (self.lasso(comp, via=fired).loop_from or 0) + 2 <= cap
                ):
                    return rule, key
        return None

    @cached_property
    def sticky_rules(self) -> frozenset[int]:
        """The rules that W205 reports."""
        out = set()
        for comp in self.traps:
            found = self.sticky(comp)
            if found is not None:
                out.add(found[0].index)
        return frozenset(out)

    def lasso(self, comp: frozenset[int], via: int | None = None) -> Run:
        """A shortest run into the loop ``comp`` and once around it (through rule ``via``).

        Of the turns from the loop's nodes nearest the kickoff (through ``via``), the first
        whose way back to its node is shortest; only its way back is spelt out, by the
        same shortest-path search as always (the lengths come from one breadth-first
        search back from each node tried).
        """
        space = self.space
        best: tuple[tuple[int, int], int, int, Step] | None = None  # rank, entry, succ, step
        for entry in sorted(comp, key=lambda v: (space.dist[v], v)):
            if best is not None and (via is None or space.dist[entry] > best[0][0]):
                break  # no later node can rank before the best found
            back_to: dict[int, int] | None = None
            for step in space.explorer.steps(space.keys[entry]):
                if via is not None and step.outcome.fired != via:
                    continue
                succ = space.ids.get(space.explorer.next_key(step))
                if succ is None or succ not in comp:
                    continue
                if succ == entry:
                    length = 1
                else:
                    if back_to is None:
                        back_to = _distances_to(space.graph, entry, comp)
                    length = back_to[succ] + 2  # [entry, succ, ..., entry]
                rank = (space.dist[entry], length)
                if best is None or rank < best[0]:
                    best = (rank, entry, succ, step)
        assert best is not None
        _, entry, succ, first = best
        if succ == entry:
            cycle = [entry]
        else:
            cycle = [entry, *nx.shortest_path(space.graph.subgraph(comp), succ, entry)]
        prefix = space.path_to(cycle[0])
        return run_along(
            space,
            [*prefix, *(cycle[1:] if len(cycle) > 1 else cycle)],
            loop_from=len(prefix) - 1,
            chosen={len(prefix) - 1: first},
        )

    @cached_property
    def sample_run(self) -> Run:
        """A shortest run to an end, or into a loop when no run ends (see
        :attr:`sample_known` when the exploration was cut short)."""
        assert self.sample_known, "no run is known to end, and the loops are not known"
        found = self.symbolic if self.space.truncated else None
        if found is not None and found.ends and found.reach is not None:
            reason, distance = min(found.ends.items(), key=lambda e: e[1])
            horizon = self.space.horizon if self.space.horizon is not None else -1
            if distance > horizon:  # (nearer, the explored nodes hold the run)
                layer, speaker, before, step = found.reach.first_end(reason, distance)
                return self._far_run(layer, speaker, before, step)[0]
        if self.space.ends:
            end = min(self.space.ends, key=lambda v: (self.space.dist[v], v))
            return run_to(self.space, end)
        if self.traps:
            return self.lasso(self.traps[0])
        return run_along(self.space, [0])  # pragma: no cover - every run ends or loops


def _conjuncts(cond: m.Condition, code: Any) -> Iterator[tuple[m.Condition, Any]]:
    """The parts of a condition's (nested) ``and``, each with its compiled code."""
    if isinstance(cond, m.AllOf) and code[0] == "all":
        for c, k in zip(cond.conditions, code[1], strict=True):
            yield from _conjuncts(c, k)
    else:
        yield cond, code


def _code_ctx_values(code: Any) -> Iterator[tuple[int, frozenset[int]]]:
    """(key, abstract values it holds for) of every context comparison in a code."""
    return ((c[1], c[2]) for c in code_parts(code, "ctx"))


def _code_reads(code: Any) -> Iterator[int]:
    return (c[1] for c in code_parts(code, "ctx"))


def _why_exclusive(a: m.Condition, b: m.Condition) -> str:
    if isinstance(a, m.FromSpeaker) and isinstance(b, m.FromSpeaker):
        return " (a turn has one sender)"
    if isinstance(a, m.ContextEquals) and isinstance(b, m.ContextEquals) and a.key == b.key:
        return " (a context key has one value)"
    if isinstance(a, m.ToolCalled) and isinstance(b, m.ToolCalled):
        return " (a turn routes on one tool call)"
    return ""


def _code_names(code: Any, kind: str) -> Iterator[int]:
    """The speakers (``from``) or tools (``tool``) a compiled condition names."""
    if code[0] == kind:
        yield code[1]
    elif code[0] in ("all", "any"):
        for c in code[1]:
            yield from _code_names(c, kind)
    elif code[0] == "not":
        yield from _code_names(code[1], kind)


def _distances_to(graph: Any, target: int, within: frozenset[int]) -> dict[int, int]:
    """Turns from each node of ``within`` to ``target``, moving inside ``within``."""
    pred = graph.pred
    out = {target: 0}
    frontier = [target]
    while frontier:
        nxt: list[int] = []
        for v in frontier:
            d = out[v] + 1
            for u in pred[v]:
                if u in within and u not in out:
                    out[u] = d
                    nxt.append(u)
        frontier = nxt
    return out


def _bottom_components(succ: Any, nodes: list[int], size: int) -> list[frozenset[int]]:
    """The strongly connected components of ``nodes`` that no edge leaves (``nodes`` is
    closed under ``succ``: what cannot reach an end leads only to what cannot either).
    ``succ[v]`` iterates ``v``'s successors; nodes are the ints ``0 .. size - 1``.

    Tarjan's algorithm, without recursion (a loop may be thousands of nodes long), on
    lists indexed by node rather than dicts (a trapped space may have 160,000 nodes).
    """
    index = [-1] * size
    low = [0] * size
    on_stack = bytearray(size)
    #: an edge leaves the node's component (to one already complete): it is not bottom
    escapes = bytearray(size)
    stack: list[int] = []
    bottoms: list[frozenset[int]] = []
    counter = 0
    for root in nodes:
        if index[root] >= 0:
            continue
        work: list[tuple[int, Iterator[int]]] = [(root, iter(succ[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = 1
        while work:
            v, children = work[-1]
            pushed = False
            for w in children:
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = 1
                    work.append((w, iter(succ[w])))
                    pushed = True
                    break
                if on_stack[w]:  # w reaches v and v reaches w: one component
                    if index[w] < low[v]:
                        low[v] = index[w]
                else:  # w's component is complete, and it is not v's
                    escapes[v] = 1
            if pushed:
                continue
            work.pop()
            if low[v] == index[v]:
                members: list[int] = []
                leaves = False
                while True:
                    w = stack.pop()
                    on_stack[w] = 0
                    leaves = leaves or bool(escapes[w])
                    members.append(w)
                    if w == v:
                        break
                if not leaves:
                    bottoms.append(frozenset(members))
            if work:
                parent = work[-1][0]
                if on_stack[v]:
                    if low[v] < low[parent]:
                        low[parent] = low[v]
                else:  # v's component is complete: the edge parent -> v leaves parent's
                    escapes[parent] = 1
    return bottoms
