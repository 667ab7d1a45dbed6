"""The ``workflow`` adapter: AG2's orchestrated N-party channel, driven by a graph.

It folds exactly as AG2 1.2.1's ``WorkflowAdapter``: context writes before routing,
a ``finish`` routing ends the run, a ``handoff`` with a target bypasses every rule,
then the rules in ascending priority (ties in list order), then the default target;
``on_accepted`` closes on a terminate decision (keeping its reason) and otherwise on
``max_turns``.

Unlike AG2, the graph is validated and compiled once per channel into a dispatch
table keyed by sender: a ``from X`` rule is resolved at compile time for every
sender, rules after one that always matches are dropped, and choosing the next
speaker never re-reads or re-sorts the graph.

>>> from flowc.compiler.serde import structure_graph
>>> g = structure_graph({"initial_speaker": "a", "transitions": [
...     {"when": {"name": "from_speaker", "args": {"agent_id": "a"}},
...      "then": {"name": "agent", "args": {"agent_id": "b"}}, "priority": 0}],
...     "default_target": {"name": "terminate", "args": {"reason": "done"}}, "max_turns": None})
>>> table = compile_graph(g, ("a", "b"))
>>> table.by_sender["a"][0][0], table.by_sender["b"]
(0, ())
"""

from __future__ import annotations

import heapq
import reprlib
import sys
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.registry import build_custom
from flowc.compiler.serde import ShapeError, ShapeProblem, describe, structure_graph
from flowc.runtime.adapters.base import (
    AdapterResult,
    ChannelManifest,
    ChannelMetadata,
    ChannelState,
    Expectation,
    ExpectedTurn,
    ParticipantSchema,
    ProtocolError,
)
from flowc.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope, stamped
from flowc.runtime.failures import PluginFailed, describe_exception
from flowc.runtime.transitions import TransitionDecision, TransitionRegistry, default_registry

__all__ = [
    "WORKFLOW_TYPE",
    "CompiledGraph",
    "ConditionTrace",
    "GraphError",
    "WorkflowAdapter",
    "WorkflowState",
    "compile_graph",
    "context_holds",
    "priority_order",
    "routing_tool",
    "rule_state",
    "senders_of",
    "trace_condition",
]

WORKFLOW_TYPE = "workflow"

#: ``decided_by`` values besides a rule index
DEFAULT, HANDOFF, FINISH = "default", "handoff", "finish"

CondFn = Callable[["WorkflowState", Envelope], bool]
TargetFn = Callable[["WorkflowState", Envelope], tuple[str | None, str]]
#: (transition index, condition or ``None`` for "always", target, static decision or
#: ``None``, position in priority order)
CompiledRule = tuple[int, CondFn | None, TargetFn, tuple[str | None, str] | None, int]


class GraphError(ProtocolError):
    """A graph refused when its channel opens; ``problems`` carry JSON paths."""

    def __init__(self, problems: list[ShapeProblem]):
        self.problems = problems
        super().__init__("invalid workflow graph: " + "; ".join(str(p) for p in problems))


@attrs.define(slots=True)
class WorkflowState:
    """AG2's ``WorkflowState`` fields, plus which rule made the last decision.

    ``decided_by`` is the index of the transition that chose ``expected_next_speaker``,
    or ``"default"``, ``"handoff"``, ``"finish"`` (``None`` before the first turn).
    States are never mutated after a fold returns them.
    """

    participant_order: tuple[str, ...]
    expected_next_speaker: str | None
    last_speaker_id: str | None = None
    last_envelope_id: str | None = None
    turn_count: int = 0
    pending_close_reason: str = ""
    creator_id: str = ""
    graph_data: dict[str, Any] = attrs.field(factory=dict, eq=False, repr=False)
    context_vars: dict[str, Any] = attrs.field(factory=dict)
    decided_by: int | str | None = None
    table: CompiledGraph | None = attrs.field(default=None, eq=False, repr=False)
    #: positions of the context-only rules that hold for ``context_vars``, and the first
    ctx_true: frozenset[int] = attrs.field(default=frozenset(), eq=False, repr=False)
    ctx_first: int = attrs.field(default=sys.maxsize, eq=False, repr=False)


@attrs.frozen(slots=True)
class CompiledGraph:
    """A graph compiled for one channel's participants."""

    graph: m.TransitionGraph
    by_sender: dict[str, tuple[CompiledRule, ...]]
    generic: tuple[CompiledRule, ...]
    default: TargetFn
    max_turns: int | None
    participants: frozenset[str]
    #: tool name -> rules that need that tool called, in priority order
    by_tool: dict[str, tuple[CompiledRule, ...]] = attrs.field(factory=dict)
    #: position -> a rule that reads only the context, and its test of the context
    ctx_rules: dict[int, CompiledRule] = attrs.field(factory=dict)
    ctx_fns: dict[int, Callable[[dict[str, Any]], bool]] = attrs.field(factory=dict)
    #: context key -> positions of the context rules that read it (other than those
    #: in ``ctx_eq``)
    ctx_by_key: dict[str, tuple[int, ...]] = attrs.field(factory=dict)
    #: context key -> value -> positions of the rules ``context.key == value`` (a
    #: hashable value): when the key changes only the rules of its old and new value
    #: can change
    ctx_eq: dict[str, dict[Any, tuple[int, ...]]] = attrs.field(factory=dict)
    #: the tool names a ``tool`` condition routes on (:func:`tool_rule_names` of the
    #: graph, found once: every agent round asks)
    routing_tools: frozenset[str] = frozenset()


# ── compiling ──────────────────────────────────────────────────────────────────

_ALWAYS: Any = object()
_NEVER: Any = object()


def _cond(
    cond: m.Condition,
    sender: str | None,
    registry: TransitionRegistry,
    path: str,
    problems: list[ShapeProblem],
    seen: dict[str, ConditionTrace] | None = None,
) -> Any:
    """A condition specialised for ``sender``: ``_ALWAYS``, ``_NEVER`` or a function.

    With ``seen`` (:func:`trace_condition`) it is a function, nothing is folded, and
    each part's function, when the evaluation reaches it, files its
    :class:`ConditionTrace` in ``seen`` under its path. The trace is then what the
    dispatch's own ``and``/``or``/``not`` evaluated, not a second reading of them.
    """
    parts = _parts(cond, path)
    fn = _compile_cond(cond, parts, sender, registry, path, problems, seen)
    return fn if seen is None else _traced(cond, parts, fn, path, seen)


def _parts(cond: m.Condition, path: str) -> list[tuple[m.Condition, str]]:
    """The parts of a composite (``and``, ``or``, ``not``) with their JSON paths, in
    order; none for a leaf."""
    if isinstance(cond, m.AllOf | m.AnyOf):
        return [(c, f"{path}.args.conditions[{i}]") for i, c in enumerate(cond.conditions)]
    if isinstance(cond, m.Not):
        return [(cond.condition, f"{path}.args.condition")]
    return []


def _traced(
    cond: m.Condition,
    parts: list[tuple[m.Condition, str]],
    fn: Any,
    path: str,
    seen: dict[str, ConditionTrace],
) -> CondFn:
    """``fn`` (``cond`` compiled, or a constant) filing its trace in ``seen``.

    A part the evaluation did not reach filed nothing: it is reported not evaluated.
    Each composite takes its parts' traces out of ``seen``, so after an evaluation
    ``seen`` holds only the outermost one.
    """
    if fn is _ALWAYS or fn is _NEVER:
        value = fn is _ALWAYS

        def constant(s: WorkflowState, e: Envelope) -> bool:
            return value

        fn = constant

    def traced(s: WorkflowState, e: Envelope) -> bool:
        holds = bool(fn(s, e))
        seen[path] = ConditionTrace(
            cond,
            holds,
            tuple(seen.pop(p) if p in seen else ConditionTrace(c, None) for c, p in parts),
        )
        return holds

    return traced


def _compile_cond(
    cond: m.Condition,
    parts: list[tuple[m.Condition, str]],
    sender: str | None,
    registry: TransitionRegistry,
    path: str,
    problems: list[ShapeProblem],
    seen: dict[str, ConditionTrace] | None,
) -> Any:
    """:func:`_cond` without its tracing; ``parts`` are :func:`_parts` of ``cond``,
    compiled by ``_cond``."""
    if isinstance(cond, m.Always):
        return _ALWAYS
    if isinstance(cond, m.FromSpeaker):
        if sender is None:
            agent = cond.agent_id
            return lambda s, e: e.sender_id == agent
        return _ALWAYS if cond.agent_id == sender else _NEVER
    if isinstance(cond, m.ToolCalled):
        tool = cond.tool_name

        def tool_called(s: WorkflowState, e: Envelope) -> bool:
            return e.event_type == EV_PACKET and routing_tool(e) == tool

        return tool_called
    if isinstance(cond, m.ContextEquals):
        key, value = cond.key, cond.value
        return lambda s, e: context_holds(s.context_vars, key, value)
    if isinstance(cond, m.AllOf | m.AnyOf):
        compiled = [_cond(c, sender, registry, p, problems, seen) for c, p in parts]
        # traced parts are never constants: nothing folds, a trace keeps every part
        absorbing, neutral = (_NEVER, _ALWAYS) if isinstance(cond, m.AllOf) else (_ALWAYS, _NEVER)
        if any(p is absorbing for p in compiled):
            return absorbing
        fns = tuple(p for p in compiled if p is not neutral)
        if not fns:
            return neutral
        if isinstance(cond, m.AllOf):
            return lambda s, e: all(f(s, e) for f in fns)
        return lambda s, e: any(f(s, e) for f in fns)
    if isinstance(cond, m.Not):
        ((part, part_path),) = parts
        inner = _cond(part, sender, registry, part_path, problems, seen)
        if inner is _ALWAYS:
            return _NEVER
        if inner is _NEVER:
            return _ALWAYS
        return lambda s, e: not inner(s, e)
    inst, found = build_custom("condition", cond.name, dict(cond.args), registry, path)
    if found:
        problems.extend(found)
        return _NEVER
    name = cond.name
    if _own(inst):  # flowc's vocabulary: its failure is flowc's, not a plugin's
        return lambda s, e: bool(inst.evaluate(s, e))

    def custom(s: WorkflowState, e: Envelope) -> bool:
        try:  # (bool() runs the plugin's answer's own code too)
            return bool(inst.evaluate(s, e))
        except Exception as err:  # the plugin's failure, not flowc's: said as such
            raise PluginFailed("condition", name, describe_exception(err)) from err

    return custom


def _own(inst: Any) -> bool:
    """Whether ``inst`` is of flowc's own vocabulary (:mod:`flowc.runtime.vocabulary`),
    whose code is flowc's: only the other custom classes are a plugin's, called inside the
    :class:`PluginFailed` boundary (a subclass of a vocabulary class is a plugin's)."""
    from flowc.runtime.vocabulary import VOCABULARY_CONDITIONS, VOCABULARY_TARGETS

    return type(inst) in VOCABULARY_CONDITIONS or type(inst) in VOCABULARY_TARGETS


def routing_tool(e: Envelope) -> Any:
    """The tool a packet's routing names (what ``tool T`` tests), or ``None``."""
    if e.event_type != EV_PACKET:
        return None
    routing = e.event_data.get("routing") or {}
    return routing.get("tool") if isinstance(routing, dict) else None


def context_holds(context: dict[str, Any], key: str, value: Any) -> bool:
    """``context.KEY == VALUE`` (AG2's ``ContextEquals``: an unset key reads as ``None``)."""
    return bool(context.get(key) == value)


def _from_fn(agent: str) -> CondFn:
    return lambda s, e: e.sender_id == agent


def _static(nxt: str | None, reason: str) -> TargetFn:
    decision = (nxt, reason)

    def fn(s: WorkflowState, e: Envelope) -> tuple[str | None, str]:
        return decision

    fn.decision = decision  # type: ignore[attr-defined]
    return fn


def _target(
    target: m.Target,
    order: tuple[str, ...],
    members: frozenset[str],
    registry: TransitionRegistry,
    path: str,
    problems: list[ShapeProblem],
) -> TargetFn:
    if isinstance(target, m.AgentTarget):
        agent = target.agent_id
        if agent not in members:
            problems.append(
                ShapeProblem(
                    f"{path}.args.agent_id",
                    f"{describe(agent)} is not a participant ({', '.join(order)})",
                )
            )
        return _static(agent, "")
    if isinstance(target, m.TerminateTarget):
        return _static(None, target.reason)
    if isinstance(target, m.StayTarget):
        return lambda s, e: (s.last_speaker_id or e.sender_id, "")
    if isinstance(target, m.RevertToInitiatorTarget):
        return lambda s, e: (s.creator_id, "")
    if isinstance(target, m.RoundRobinTarget):
        if not order:
            return lambda s, e: (None, "no_participants")
        following = {p: order[(i + 1) % len(order)] for i, p in enumerate(order)}
        first = order[0]
        return lambda s, e: (following.get(s.last_speaker_id or e.sender_id, first), "")
    inst, found = build_custom("target", target.name, dict(target.args), registry, path)
    if found:
        problems.extend(found)
        return lambda s, e: (None, "")
    name = target.name
    if _own(inst):  # flowc's vocabulary: its failure is flowc's, not a plugin's

        def own(s: WorkflowState, e: Envelope) -> tuple[str | None, str]:
            nxt, reason, wrong = _decided(inst, s, e)
            if wrong is not None:
                raise TypeError(f"target `{name}` chose {wrong}, which is no agent's id")
            if nxt is not None and nxt not in members:
                raise ProtocolError(f"target `{name}` chose {nxt!r}, which is not a participant")
            return nxt, reason

        return own

    def custom(s: WorkflowState, e: Envelope) -> tuple[str | None, str]:
        try:  # (reading the decision runs the plugin's objects' own code too)
            nxt, reason, wrong = _decided(inst, s, e)
        except Exception as err:  # the plugin's failure, not flowc's: said as such
            raise PluginFailed("target", name, describe_exception(err)) from err
        if wrong is not None:
            raise PluginFailed(
                "target", name, f"chose {wrong}, which is neither an agent's id (a string) nor None"
            )
        if nxt is not None and nxt not in members:  # the plugin's choice, not the WAL's fault
            raise PluginFailed("target", name, f"chose {nxt!r}, which is not a participant")
        return nxt, reason

    return custom


def _decided(inst: Any, s: WorkflowState, e: Envelope) -> tuple[Any, str, str | None]:
    """A custom target's decision on ``e``: (the speaker it chose, the close reason, the
    choice shown if it is neither a string nor ``None``, else ``None``)."""
    decision = inst.resolve(s, e)
    nxt = getattr(decision, "next_speaker", decision)
    reason = str(getattr(decision, "close_reason", "") or "")
    return nxt, reason, None if nxt is None or isinstance(nxt, str) else reprlib.repr(nxt)


def compile_graph(
    graph: m.TransitionGraph,
    participant_order: tuple[str, ...],
    registry: TransitionRegistry | None = None,
) -> CompiledGraph:
    """Validate ``graph`` against the participants and build its dispatch table.

    Raises :class:`GraphError` listing every problem with its JSON path (in the order of
    the steps: the first speaker and the cap, the targets, the default, the conditions).
    """
    reg = registry or default_registry()
    members = frozenset(participant_order)
    problems = _header_problems(graph, participant_order, members)
    ordered = priority_order(graph)
    targets = {
        i: _target(t.then, participant_order, members, reg, f"transitions[{i}].then", problems)
        for i, t in ordered
    }
    default = _target(
        graph.default_target, participant_order, members, reg, "default_target", problems
    )
    filed = _file_rules(ordered, targets, members, reg, problems)
    # Each sender's list is the merge of its `from` rules and the shared ones in
    # priority order, cut after the first rule that always matches.
    shared_only = _cut(filed.shared)
    by_sender = {
        p: _cut(heapq.merge(filed.shared, filed.by_from[p], key=_by_pos))
        if p in filed.by_from
        else shared_only
        for p in participant_order
    }
    if problems:
        raise GraphError(problems)
    return CompiledGraph(
        graph,
        by_sender,
        _cut(filed.any_sender),
        default,
        graph.max_turns,
        members,
        {k: tuple(v) for k, v in filed.by_tool.items()},
        filed.ctx_rules,
        filed.ctx_fns,
        {k: tuple(v) for k, v in filed.ctx_by_key.items()},
        {k: {v: tuple(ps) for v, ps in vs.items()} for k, vs in filed.ctx_eq.items()},
        tool_rule_names(graph),
    )


def _header_problems(
    graph: m.TransitionGraph, participant_order: tuple[str, ...], members: frozenset[str]
) -> list[ShapeProblem]:
    """The problems of the graph's first speaker (not a participant) and its cap (below 1)."""
    problems: list[ShapeProblem] = []
    if graph.initial_speaker not in members:
        problems.append(
            ShapeProblem(
                "initial_speaker",
                f"{describe(graph.initial_speaker)} is not a participant "
                f"({', '.join(participant_order)})",
            )
        )
    if graph.max_turns is not None and graph.max_turns < 1:
        problems.append(ShapeProblem("max_turns", f"must be at least 1, got {graph.max_turns}"))
    return problems


@attrs.define
class _Filed:
    """The rules of a graph filed by what they can fire on (:func:`_file_rules`), each
    list in priority order; :func:`compile_graph` builds its dispatch table from them."""

    #: rules every sender scans (custom conditions, mixed composites)
    shared: list[CompiledRule] = attrs.Factory(list)
    #: sender -> its `from X` rules (and composites filed per sender)
    by_from: dict[str, list[CompiledRule]] = attrs.Factory(dict)
    #: every rule but the tool and context ones (a `from X` rule testing its sender): the
    #: list for a sender that is not a participant
    any_sender: list[CompiledRule] = attrs.Factory(list)
    #: the others as in :class:`CompiledGraph`, in lists
    by_tool: dict[str, list[CompiledRule]] = attrs.Factory(dict)
    ctx_rules: dict[int, CompiledRule] = attrs.Factory(dict)
    ctx_fns: dict[int, Callable[[dict[str, Any]], bool]] = attrs.Factory(dict)
    ctx_by_key: dict[str, list[int]] = attrs.Factory(dict)
    ctx_eq: dict[str, dict[Any, list[int]]] = attrs.Factory(dict)


def _file_rules(
    ordered: list[tuple[int, m.Transition]],
    targets: dict[int, TargetFn],
    members: frozenset[str],
    reg: TransitionRegistry,
    problems: list[ShapeProblem],
) -> _Filed:
    """File each rule (in priority order) by what it can fire on, compiling its condition.

    Rules are filed so that a fold only looks at rules that can match its envelope
    (AG2's order is kept by comparing sorted positions):

    - a plain `from X` rule under sender X;
    - a rule that needs tool T (`tool T`, or `and` of it with built-in parts)
      under T: a turn without a tool call skips them all;
    - a rule that reads only the context (`context`, composites of it) under the
      keys it reads: it is re-evaluated when one of those keys changes and the
      state carries the set of those rules that hold;
    - everything else (custom conditions, mixed composites) is shared by every
      sender and scanned in order, up to the best indexed candidate.
    """
    filed = _Filed()
    for pos, (i, t) in enumerate(ordered):
        static = getattr(targets[i], "decision", None)
        when = t.when
        if isinstance(when, m.FromSpeaker):
            filed.by_from.setdefault(when.agent_id, []).append((i, None, targets[i], static, pos))
            filed.any_sender.append((i, _from_fn(when.agent_id), targets[i], static, pos))
            continue
        cond = _cond(when, None, reg, f"transitions[{i}].when", problems)
        if cond is _NEVER:
            continue
        entry: CompiledRule = (i, None if cond is _ALWAYS else cond, targets[i], static, pos)
        tool = _required_tool(when)
        if tool is not None:
            filed.by_tool.setdefault(tool, []).append(
                (i, None if isinstance(when, m.ToolCalled) else entry[1], targets[i], static, pos)
            )
            continue
        keys = _context_keys(when) if cond is not _ALWAYS else None
        if keys:
            filed.ctx_rules[pos] = entry
            filed.ctx_fns[pos] = _context_fn(when)
            if isinstance(when, m.ContextEquals) and _hashable(when.value):
                filed.ctx_eq.setdefault(when.key, {}).setdefault(when.value, []).append(pos)
                continue
            for key in sorted(keys):
                filed.ctx_by_key.setdefault(key, []).append(pos)
            continue
        senders = _senders(when)
        if senders is not None:  # `from X and ...`, `from X or from Y`: filed per sender
            for p in senders:
                if p not in members:
                    continue
                mine = _cond(when, p, reg, f"transitions[{i}].when", [])
                if mine is not _NEVER:
                    filed.by_from.setdefault(p, []).append(
                        (i, None if mine is _ALWAYS else mine, targets[i], static, pos)
                    )
            filed.any_sender.append(entry)
            continue
        filed.shared.append(entry)
        filed.any_sender.append(entry)
    return filed


def _cut(entries: Iterable[CompiledRule]) -> tuple[CompiledRule, ...]:
    """``entries`` up to the first rule that always matches: nothing after it can fire."""
    out: list[CompiledRule] = []
    for entry in entries:
        out.append(entry)
        if entry[1] is None:
            break
    return tuple(out)


def _by_pos(rule: CompiledRule) -> int:
    """A compiled rule's position in priority order (to merge lists that keep it)."""
    return rule[4]


def priority_order(graph: m.TransitionGraph) -> list[tuple[int, m.Transition]]:
    """The rules as AG2 checks them: ascending priority, ties in list order."""
    return sorted(enumerate(graph.transitions), key=lambda it: it[1].priority)


# ── explaining a decision ──────────────────────────────────────────────────────


@attrs.frozen
class ConditionTrace:
    """One condition evaluated on a turn, with each part it evaluated.

    ``holds`` is ``None`` for a part that was not evaluated: an ``and`` stops at its
    first false part and an ``or`` at its first true one, as the dispatch does.
    ``parts`` are the parts of a composite (``and``, ``or``, ``not``), in order.
    """

    condition: m.Condition
    holds: bool | None
    parts: tuple[ConditionTrace, ...] = ()


def trace_condition(
    cond: m.Condition,
    state: WorkflowState,
    envelope: Envelope,
    registry: TransitionRegistry | None = None,
) -> ConditionTrace:
    """``cond`` evaluated on ``state`` (:func:`rule_state`) and the turn's envelope,
    part by part, by the dispatch's own compiled condition (:func:`_cond`, not
    specialised for a sender, with its tracing on): the same tests and the same
    short-circuit, so a part after the one that decided is not evaluated. A custom
    condition the registry cannot build never holds (its channel could not open).

    >>> from flowc.runtime.envelope import EV_TEXT
    >>> st = WorkflowState(("a", "b"), "b", context_vars={"ok": False})
    >>> env = Envelope("c", "a", None, EV_TEXT, {"text": "hi"})
    >>> t = trace_condition(m.AllOf((m.FromSpeaker("a"), m.ContextEquals("ok", True),
    ...                              m.ToolCalled("t"))), st, env)
    >>> t.holds, [p.holds for p in t.parts]
    (False, [True, False, None])
    """
    seen: dict[str, ConditionTrace] = {}
    _cond(cond, None, registry or default_registry(), "when", [], seen)(state, envelope)
    return seen.pop("when")


def rule_state(before: WorkflowState, after: WorkflowState) -> WorkflowState:
    """The state a turn's rules were evaluated on, from the states before and after
    its :meth:`WorkflowAdapter.fold`: the turn counted and its context writes applied,
    the decision not made yet (as ``fold`` builds it before it decides)."""
    return attrs.evolve(
        after,
        expected_next_speaker=before.expected_next_speaker,
        pending_close_reason="",
        decided_by=None,
    )


def senders_of(cond: m.Condition) -> frozenset[str] | None:
    """The senders a rule's condition can hold for when it says (``from X``, ``from X
    and ...``, ``from X or from Y``), else ``None`` (see :func:`compile_graph`)."""
    return _senders(cond)


def _required_tool(cond: m.Condition) -> str | None:
    """The tool a condition needs called (``tool T``, or an ``and`` holding it whose
    other parts are built-in, so they can be evaluated in any order), else ``None``."""
    if isinstance(cond, m.ToolCalled):
        return cond.tool_name
    if isinstance(cond, m.AllOf) and all(_is_builtin(c) for c in cond.conditions):
        for c in cond.conditions:
            if isinstance(c, m.ToolCalled):
                return c.tool_name
    return None


def _senders(cond: m.Condition) -> frozenset[str] | None:
    """The senders a condition can hold for, when it says (``from X``, ``from X and C``,
    ``from X or from Y``), else ``None``. Parts other than ``from`` are evaluated only
    for those senders, so they must be built-in (custom conditions keep their place)."""
    if isinstance(cond, m.FromSpeaker):
        return frozenset((cond.agent_id,))
    if not _is_builtin(cond):
        return None
    if isinstance(cond, m.AllOf):
        found = [s for s in (_senders(c) for c in cond.conditions) if s is not None]
        return frozenset.intersection(*found) if found else None
    if isinstance(cond, m.AnyOf):
        parts = [_senders(c) for c in cond.conditions]
        if not parts or any(p is None for p in parts):
            return None
        return frozenset().union(*(p for p in parts if p is not None))
    return None


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _is_builtin(cond: m.Condition) -> bool:
    if isinstance(cond, m.AllOf | m.AnyOf):
        return all(_is_builtin(c) for c in cond.conditions)
    if isinstance(cond, m.Not):
        return _is_builtin(cond.condition)
    return isinstance(cond, m.Always | m.FromSpeaker | m.ToolCalled | m.ContextEquals)


def _context_keys(cond: m.Condition) -> frozenset[str] | None:
    """The context keys a condition reads, or ``None`` if it reads anything else."""
    if isinstance(cond, m.ContextEquals):
        return frozenset((cond.key,))
    if isinstance(cond, m.Always):
        return frozenset()
    parts: list[m.Condition]
    if isinstance(cond, m.AllOf | m.AnyOf):
        parts = list(cond.conditions)
    elif isinstance(cond, m.Not):
        parts = [cond.condition]
    else:
        return None
    out: frozenset[str] = frozenset()
    for c in parts:
        keys = _context_keys(c)
        if keys is None:
            return None
        out |= keys
    return out


def _context_fn(cond: m.Condition) -> Callable[[dict[str, Any]], bool]:
    """A condition that reads only the context, as a function of the context."""
    if isinstance(cond, m.ContextEquals):
        key, value = cond.key, cond.value
        return lambda ctx: context_holds(ctx, key, value)
    if isinstance(cond, m.Always):
        return lambda ctx: True
    if isinstance(cond, m.Not):
        inner = _context_fn(cond.condition)
        return lambda ctx: not inner(ctx)
    assert isinstance(cond, m.AllOf | m.AnyOf)
    fns = tuple(_context_fn(c) for c in cond.conditions)
    if isinstance(cond, m.AllOf):
        return lambda ctx: all(f(ctx) for f in fns)
    return lambda ctx: any(f(ctx) for f in fns)


#: ``ctx_first`` when no context rule holds
NO_RULE = sys.maxsize


def context_rules_after(
    table: CompiledGraph,
    holding: frozenset[int],
    context: dict[str, Any],
    keys: Iterable[str] | None,
    before: dict[str, Any] | None = None,
) -> tuple[frozenset[int], int]:
    """The context rules that hold after ``keys`` changed (all rules when ``None``), and
    the first of them in priority order (``NO_RULE`` when none holds). ``before`` is
    the context before the change: a key whose value did not change is skipped."""
    fns = table.ctx_fns
    if keys is None:
        now = {pos for pos in table.ctx_rules if fns[pos](context)}
        return frozenset(now), min(now, default=NO_RULE)
    affected: set[int] = set()
    gone: set[int] = set()
    came: set[int] = set()
    eq = table.ctx_eq
    by_key = table.ctx_by_key
    for key in keys:
        new = context.get(key)
        if before is not None:
            old = before.get(key)
            if old is new or (type(old) is type(new) and old == new):
                continue  # written, not changed
        else:
            old = None
        positions = by_key.get(key)
        if positions:
            affected.update(positions)
        values = eq.get(key)
        if values:
            if before is None:  # the old value is unknown: test every value of the key
                for ps in values.values():
                    affected.update(ps)
                continue
            if _hashable(old):
                gone.update(values.get(old, ()))
            if _hashable(new):
                came.update(pos for pos in values.get(new, ()) if fns[pos](context))
    if not affected and not gone and not came:
        return holding, min(holding, default=NO_RULE)
    now = {pos for pos in affected if fns[pos](context)}
    out = (holding - affected - gone) | now | came
    return frozenset(out), min(out, default=NO_RULE)


# ── the adapter ────────────────────────────────────────────────────────────────


def _changed_keys(data: dict[str, Any]) -> list[str]:
    """The keys a (valid, non-empty) context write touches."""
    return [*(data.get("delete") or ()), *(data.get("set") or {})]


def _context_update(current: dict[str, Any], data: Any, what: str) -> dict[str, Any]:
    if not data:
        return current
    if not isinstance(data, dict):
        raise ProtocolError(f"{what} must be an object with `set` / `delete`")
    deletes = data.get("delete") or []
    sets = data.get("set") or {}
    if not isinstance(deletes, list | tuple) or not isinstance(sets, dict):
        raise ProtocolError(f"{what}: `delete` must be a list and `set` an object")
    if not deletes and not sets:
        return current
    out = dict(current)
    for key in deletes:
        out.pop(key, None)
    out.update(sets)
    return out


#: the graphs a :class:`WorkflowAdapter` keeps for the channels it opens next
_KEPT_GRAPHS = 8


def _has_customs(graph: m.TransitionGraph) -> bool:
    """Whether a condition (at any depth) or a target of ``graph`` is a custom one."""

    targets = [t.then for t in graph.transitions] + [graph.default_target]
    return any(
        isinstance(c, m.CustomCondition)
        for t in graph.transitions
        for c in m.walk_condition(t.when)
    ) or any(isinstance(t, m.CustomTarget) for t in targets)


class WorkflowAdapter:
    """Orchestrated multi-party channel. Knobs: ``{"graph": ..., "context_vars": ...}``."""

    manifest = ChannelManifest(
        type=WORKFLOW_TYPE,
        version=1,
        participants=ParticipantSchema(min=2),
        knobs_schema={"graph": "TransitionGraph", "context_vars": "object"},
        expectations=(
            Expectation("turn_within", "warn", {"seconds": 120}),
            Expectation("turn_within", "auto_close", {"seconds": 600}),
        ),
    )

    def __init__(self, registry: TransitionRegistry | None = None) -> None:
        self.registry = registry
        self._last: tuple[ChannelMetadata, CompiledGraph, dict[str, Any]] | None = None
        #: the graphs read (and, with no custom condition or target, compiled) for earlier
        #: channels, by the knobs' graph object and the participant order: a caller that
        #: opens many channels on one graph object (``flowc test``, ``flowc scenarios``:
        #: one channel per scenario, on one adapter) has it read and compiled once. The
        #: graph object is kept, so its id is not reused while it is here; a custom name's
        #: class is built anew for every channel (its instance may keep state).
        self._graphs: dict[
            tuple[int, tuple[str, ...]],
            tuple[dict[str, Any], m.TransitionGraph, CompiledGraph | None],
        ] = {}

    def _compile(self, metadata: ChannelMetadata) -> tuple[CompiledGraph, dict[str, Any]]:
        # validate_create and initial_state get the same metadata object when a
        # channel opens: compile it once
        cached = self._last
        if cached is not None and cached[0] is metadata:
            return cached[1], dict(cached[2])
        table, context = self._compile_new(metadata)
        self._last = (metadata, table, context)
        return table, dict(context)

    def _compile_new(self, metadata: ChannelMetadata) -> tuple[CompiledGraph, dict[str, Any]]:
        knobs = metadata.knobs
        graph_data = knobs.get("graph")
        problems: list[ShapeProblem] = []
        if not isinstance(graph_data, dict):
            raise GraphError(
                [ShapeProblem("graph", "the workflow needs knobs['graph'] as an object")]
            )
        # as AG2: an absent `context_vars` is `{}`, but a present one must be an object
        # (AG2 refuses `None` when the channel opens)
        context = knobs.get("context_vars", {})
        if not isinstance(context, dict):
            problems.append(
                ShapeProblem("context_vars", f"expected an object, got {describe(context)}")
            )
        order = metadata.participant_ids
        key = (id(graph_data), order)
        hit = self._graphs.get(key)
        if hit is not None and hit[0] is graph_data and not problems:
            _, graph, table = hit
            if table is None:
                table = compile_graph(graph, order, self.registry)
            return table, dict(context)
        try:
            graph = structure_graph(graph_data)
        except ShapeError as err:
            raise GraphError(problems + list(err.problems)) from None
        if problems:
            raise GraphError(problems)
        table = compile_graph(graph, order, self.registry)
        if len(self._graphs) >= _KEPT_GRAPHS:
            self._graphs.clear()
        self._graphs[key] = (graph_data, graph, None if _has_customs(graph) else table)
        return table, dict(context)

    def validate_create(self, metadata: ChannelMetadata) -> None:
        if len(metadata.participants) < 2:
            raise ProtocolError(
                f"workflow requires at least 2 participants, got {len(metadata.participants)}"
            )
        self._compile(metadata)

    def initial_state(self, metadata: ChannelMetadata) -> WorkflowState:
        table, context = self._compile(metadata)
        holding, first = context_rules_after(table, frozenset(), context, None)
        return WorkflowState(
            participant_order=metadata.participant_ids,
            expected_next_speaker=table.graph.initial_speaker,
            creator_id=metadata.creator_id,
            graph_data=metadata.knobs["graph"],
            context_vars=context,
            table=table,
            ctx_true=holding,
            ctx_first=first,
        )

    def validate_send(
        self, metadata: ChannelMetadata, envelope: Envelope, state: WorkflowState
    ) -> None:
        if envelope.event_type != EV_TEXT and envelope.event_type != EV_PACKET:
            return
        expected = state.expected_next_speaker
        if expected and envelope.sender_id != expected:
            raise ProtocolError(
                f"the run expects {expected!r} to speak, got {envelope.sender_id!r}"
            )

    def fold(self, envelope: Envelope, state: WorkflowState) -> WorkflowState:
        et = envelope.event_type
        data = envelope.event_data
        if et == EV_CONTEXT_SET:
            context = _context_update(state.context_vars, data, "ag2.context.set")
            holding, first = state.ctx_true, state.ctx_first
            table = state.table
            if context is not state.context_vars and table is not None and table.ctx_rules:
                holding, first = context_rules_after(
                    table, holding, context, _changed_keys(data), state.context_vars
                )
            return WorkflowState(
                state.participant_order,
                state.expected_next_speaker,
                state.last_speaker_id,
                state.last_envelope_id,
                state.turn_count,
                state.pending_close_reason,
                state.creator_id,
                state.graph_data,
                context,
                state.decided_by,
                state.table,
                holding,
                first,
            )
        if et != EV_TEXT and et != EV_PACKET:
            return state
        table = state.table
        assert table is not None, "fold needs a state from initial_state"
        context = state.context_vars
        holding, first = state.ctx_true, state.ctx_first
        finish_reason: str | None = None
        pre_resolved: Any = None
        tool: Any = None
        if et == EV_PACKET:
            updates = data.get("context_updates")
            if updates:
                context = _context_update(context, updates, "context_updates")
                if context is not state.context_vars and table.ctx_rules:
                    holding, first = context_rules_after(
                        table, holding, context, _changed_keys(updates), state.context_vars
                    )
            routing = data.get("routing")
            if routing:
                if not isinstance(routing, dict):
                    raise ProtocolError("a packet's `routing` must be an object")
                kind = routing.get("kind")
                tool = routing.get("tool")
                if kind == "finish":
                    finish_reason = routing.get("reason") or "finished"
                elif kind == "handoff":
                    pre_resolved = routing.get("target")
                    if pre_resolved and pre_resolved not in table.participants:
                        raise ProtocolError(
                            f"handoff to {pre_resolved!r}, which is not a participant "
                            "of this channel"
                        )
        new = WorkflowState(
            state.participant_order,
            state.expected_next_speaker,
            envelope.sender_id,
            envelope.envelope_id,
            state.turn_count + 1,
            "",
            state.creator_id,
            state.graph_data,
            context,
            None,
            table,
            holding,
            first,
        )
        if finish_reason is not None:
            new.expected_next_speaker = None
            new.pending_close_reason = str(finish_reason)
            new.decided_by = FINISH
            return new
        if pre_resolved:
            new.expected_next_speaker = pre_resolved
            new.decided_by = HANDOFF
            return new
        # the best indexed candidate: the first context rule that holds, or an
        # earlier rule on the tool this packet called; then the sender's rules
        # before it, in order (see compile_graph)
        bound = first
        best = table.ctx_rules[first] if first != NO_RULE else None
        if tool is not None and isinstance(tool, str) and table.by_tool:
            for rule in table.by_tool.get(tool, ()):
                if rule[4] >= bound:
                    break
                cond = rule[1]
                if cond is None or cond(new, envelope):
                    bound, best = rule[4], rule
                    break
        for rule in table.by_sender.get(envelope.sender_id, table.generic):
            if rule[4] >= bound:
                break
            cond = rule[1]
            if cond is None or cond(new, envelope):
                best = rule
                break
        if best is not None:
            index, _, target, static, _ = best
            nxt, reason = static if static is not None else target(new, envelope)
            new.expected_next_speaker = nxt
            new.pending_close_reason = reason
            new.decided_by = index
            return new
        nxt, reason = table.default(new, envelope)
        new.expected_next_speaker = nxt
        new.pending_close_reason = reason
        new.decided_by = DEFAULT
        return new

    def on_accepted(
        self, metadata: ChannelMetadata, envelope: Envelope, state: WorkflowState
    ) -> AdapterResult:
        if envelope.event_type != EV_TEXT and envelope.event_type != EV_PACKET:
            return _NOTHING
        if state.expected_next_speaker is None:
            return AdapterResult(
                ChannelState.CLOSED, state.pending_close_reason or "workflow_terminated"
            )
        table = state.table
        max_turns = table.max_turns if table is not None else None
        if max_turns is not None and state.turn_count >= max_turns:
            return AdapterResult(ChannelState.CLOSED, "max_turns")
        return _NOTHING

    def expected_next(self, metadata: ChannelMetadata, state: WorkflowState) -> ExpectedTurn | None:
        if state.expected_next_speaker is None:
            return None
        return ExpectedTurn(state.expected_next_speaker, state.last_envelope_id)

    def next_speaker_id(self, state: WorkflowState) -> str | None:
        """``expected_next(...).agent_id`` (or ``None``) without building the turn: the
        hub asks it several times per turn (see ``Channel.expected_next``)."""
        return state.expected_next_speaker

    def snapshot(self, state: WorkflowState) -> dict[str, Any]:
        """What a close envelope records so that ``replay`` can check a re-fold."""
        return snapshot(state)

    def build_round_envelopes(
        self,
        metadata: ChannelMetadata,
        state: WorkflowState,
        sender_id: str,
        reply: Any,
        name_to_id: dict[str, str],
    ) -> list[Envelope]:
        """One agent round as envelopes: normally one ``ag2.packet``.

        A round that says nothing and routes nothing makes no packet (as AG2); its
        context writes, if any, still land as one ``ag2.context.set``.
        A value JSON cannot hold (a set in the args, ``NaN``) is kept as it is, for the
        hub to refuse (:func:`flowc.runtime.stored.admissible`), never turned into text.
        """
        table = state.table
        tools = table.routing_tools if table is not None else frozenset()
        routing = resolve_routing(reply, tools, name_to_id)
        sets, deletes = merge_context_writes(reply.tool_calls)
        cid = metadata.channel_id
        if routing["kind"] == "text" and not reply.text:
            if sets or deletes:
                return [_template(cid, sender_id, EV_CONTEXT_SET, {"set": sets, "delete": deletes})]
            return []
        data: dict[str, Any] = {
            "routing": routing,
            "context_updates": {"set": sets, "delete": deletes},
            "body": reply.text,
        }
        if reply.tool_calls:
            # flowc's addition to AG2's packet (AG2's fold ignores the key): what the agent
            # called, so transcripts, `--json` and `flowc log` can show it
            data["tool_calls"] = [
                {"name": str(c.name), "args": dict(c.args or {})} for c in reply.tool_calls
            ]
        return [_template(cid, sender_id, EV_PACKET, data)]


_NOTHING = AdapterResult()


def decision_of(state: WorkflowState) -> TransitionDecision:
    """The state's routing decision as AG2's ``TransitionDecision``."""
    return TransitionDecision(state.expected_next_speaker, state.pending_close_reason)


def tool_rule_names(graph: m.TransitionGraph) -> frozenset[str]:
    """Tool names a ``tool`` condition routes on, anywhere in a rule's condition.

    AG2 only looks at top-level ``ToolCalled`` rules; flowc's composites (``and``,
    ``not``) may nest one, so the runtime looks inside them too.
    """
    return frozenset(
        c.tool_name
        for t in graph.transitions
        for c in m.walk_condition(t.when)
        if isinstance(c, m.ToolCalled)
    )


def merge_context_writes(calls: Any) -> tuple[dict[str, Any], list[str]]:
    """Net ``(set, delete)`` of several calls' writes, applied in order.

    Applying the result delete-then-set gives the same context as applying each
    call's writes one after the other.

    >>> from flowc.runtime.replies import ToolCall
    >>> merge_context_writes([ToolCall("a", set={"x": 1}), ToolCall("b", delete=["x"])])
    ({}, ['x'])
    """
    sets: dict[str, Any] = {}
    deletes: list[str] = []
    for call in calls:
        for key in call.delete:
            if not isinstance(key, (list, dict)):  # (no key it sets: refused as written)
                sets.pop(key, None)
            if key not in deletes:
                deletes.append(key)
        sets.update(call.set)
    return sets, deletes


def resolve_routing(
    reply: Any, routing_tools: frozenset[str], name_to_id: dict[str, str]
) -> dict[str, Any]:
    """AG2's ``_resolve_routing``: the first tool call that routes wins.

    For each call in order: a ``Finish`` result, then a ``Handoff`` result (its target
    resolved name -> id, an exact id winning), then a call whose name a ``tool`` rule
    routes on; otherwise ``{"kind": "text"}``.
    """
    from flowc.runtime.replies import Finish, Handoff

    known_ids = set(name_to_id.values())
    for call in reply.tool_calls:
        result = call.result
        if isinstance(result, Finish):
            return {
                "kind": "finish",
                "tool": call.name,
                "reason": result.reason,
                "summary": result.summary,
            }
        if isinstance(result, Handoff):
            target = (
                result.target
                if result.target in known_ids
                else name_to_id.get(result.target, result.target)
            )
            return {"kind": "handoff", "tool": call.name, "reason": result.reason, "target": target}
        if call.name in routing_tools:
            reason = call.args.get("reason", "") if isinstance(call.args, dict) else ""
            return {
                "kind": "handoff",
                "tool": call.name,
                "reason": reason if isinstance(reason, str) else "",
            }
    return {"kind": "text"}


def snapshot(state: WorkflowState) -> dict[str, Any]:
    return {
        "turn_count": state.turn_count,
        "expected_next_speaker": state.expected_next_speaker,
        "last_speaker_id": state.last_speaker_id,
        "pending_close_reason": state.pending_close_reason,
        "context_vars": state.context_vars,
    }


def _template(cid: str, sender_id: str, event_type: str, data: dict[str, Any]) -> Envelope:
    """``Envelope(cid, sender_id, None, event_type, data)``, built the cheap way (see
    :func:`~flowc.runtime.envelope.stamped`): the hub stamps it when it is admitted."""
    return stamped(
        cid, sender_id, None, event_type, data, "", None, None, None, "normal", 0, None, "", None
    )
