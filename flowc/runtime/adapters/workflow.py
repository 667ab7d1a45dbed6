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
from collections.abc import Callable
from typing import Any

import attrs

from flowc.compiler import model as m
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
from flowc.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope
from flowc.runtime.transitions import TransitionDecision, TransitionRegistry, default_registry

__all__ = [
    "WORKFLOW_TYPE",
    "CompiledGraph",
    "GraphError",
    "WorkflowAdapter",
    "WorkflowState",
    "compile_graph",
]

WORKFLOW_TYPE = "workflow"

#: ``decided_by`` values besides a rule index
DEFAULT, HANDOFF, FINISH = "default", "handoff", "finish"

CondFn = Callable[["WorkflowState", Envelope], bool]
TargetFn = Callable[["WorkflowState", Envelope], tuple[str | None, str]]
#: (transition index, condition or ``None`` for "always", target, static decision or ``None``)
CompiledRule = tuple[int, CondFn | None, TargetFn, tuple[str | None, str] | None]


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


@attrs.frozen(slots=True)
class CompiledGraph:
    """A graph compiled for one channel's participants."""

    graph: m.TransitionGraph
    by_sender: dict[str, tuple[CompiledRule, ...]]
    generic: tuple[CompiledRule, ...]
    default: TargetFn
    max_turns: int | None
    participants: frozenset[str]


# ── compiling ──────────────────────────────────────────────────────────────────

_ALWAYS: Any = object()
_NEVER: Any = object()


def _cond(
    cond: m.Condition, sender: str | None, registry: TransitionRegistry,
    path: str, problems: list[ShapeProblem],
) -> Any:
    """A condition specialised for ``sender``: ``_ALWAYS``, ``_NEVER`` or a function."""
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
            if e.event_type != EV_PACKET:
                return False
            routing = e.event_data.get("routing") or {}
            return isinstance(routing, dict) and routing.get("tool") == tool

        return tool_called
    if isinstance(cond, m.ContextEquals):
        key, value = cond.key, cond.value
        return lambda s, e: bool(s.context_vars.get(key) == value)
    if isinstance(cond, m.AllOf | m.AnyOf):
        parts = [
            _cond(c, sender, registry, f"{path}.args.conditions[{i}]", problems)
            for i, c in enumerate(cond.conditions)
        ]
        absorbing, neutral = (_NEVER, _ALWAYS) if isinstance(cond, m.AllOf) else (_ALWAYS, _NEVER)
        if any(p is absorbing for p in parts):
            return absorbing
        fns = tuple(p for p in parts if p is not neutral)
        if not fns:
            return neutral
        if isinstance(cond, m.AllOf):
            return lambda s, e: all(f(s, e) for f in fns)
        return lambda s, e: any(f(s, e) for f in fns)
    if isinstance(cond, m.Not):
        inner = _cond(cond.condition, sender, registry, f"{path}.args.condition", problems)
        if inner is _ALWAYS:
            return _NEVER
        if inner is _NEVER:
            return _ALWAYS
        return lambda s, e: not inner(s, e)
    cls = registry.condition(cond.name)
    if cls is None:
        problems.append(ShapeProblem(f"{path}.name", f"no condition registered as `{cond.name}`"))
        return _NEVER
    try:
        inst = cls(**cond.args)
    except (TypeError, ValueError) as err:
        problems.append(ShapeProblem(f"{path}.args", f"args do not fit `{cond.name}`: {err}"))
        return _NEVER
    return lambda s, e: bool(inst.evaluate(s, e))


def _from_fn(agent: str) -> CondFn:
    return lambda s, e: e.sender_id == agent


def _static(nxt: str | None, reason: str) -> TargetFn:
    decision = (nxt, reason)

    def fn(s: WorkflowState, e: Envelope) -> tuple[str | None, str]:
        return decision

    fn.decision = decision  # type: ignore[attr-defined]
    return fn


def _target(
    target: m.Target, order: tuple[str, ...], members: frozenset[str],
    registry: TransitionRegistry, path: str, problems: list[ShapeProblem],
) -> TargetFn:
    if isinstance(target, m.AgentTarget):
        agent = target.agent_id
        if agent not in members:
            problems.append(
                ShapeProblem(f"{path}.args.agent_id",
                             f"{describe(agent)} is not a participant ({', '.join(order)})")
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
    cls = registry.target(target.name)
    if cls is None:
        problems.append(ShapeProblem(f"{path}.name", f"no target registered as `{target.name}`"))
        return lambda s, e: (None, "")
    try:
        inst = cls(**target.args)
    except (TypeError, ValueError) as err:
        problems.append(ShapeProblem(f"{path}.args", f"args do not fit `{target.name}`: {err}"))
        return lambda s, e: (None, "")
    name = target.name

    def custom(s: WorkflowState, e: Envelope) -> tuple[str | None, str]:
        decision = inst.resolve(s, e)
        nxt = getattr(decision, "next_speaker", decision)
        reason = getattr(decision, "close_reason", "") or ""
        if nxt is not None and nxt not in members:
            raise ProtocolError(f"target `{name}` chose {nxt!r}, which is not a participant")
        return nxt, str(reason)

    return custom


def compile_graph(
    graph: m.TransitionGraph,
    participant_order: tuple[str, ...],
    registry: TransitionRegistry | None = None,
) -> CompiledGraph:
    """Validate ``graph`` against the participants and build its dispatch table.

    Raises :class:`GraphError` listing every problem with its JSON path.
    """
    reg = registry or default_registry()
    problems: list[ShapeProblem] = []
    members = frozenset(participant_order)
    if graph.initial_speaker not in members:
        problems.append(
            ShapeProblem("initial_speaker",
                         f"{describe(graph.initial_speaker)} is not a participant "
                         f"({', '.join(participant_order)})")
        )
    if graph.max_turns is not None and graph.max_turns < 1:
        problems.append(ShapeProblem("max_turns", f"must be at least 1, got {graph.max_turns}"))
    ordered = sorted(enumerate(graph.transitions), key=lambda it: it[1].priority)
    targets = {
        i: _target(t.then, participant_order, members, reg, f"transitions[{i}].then", problems)
        for i, t in ordered
    }
    default = _target(graph.default_target, participant_order, members, reg, "default_target",
                      problems)

    # A plain `from X` rule can only fire for sender X: file it under X. Every other
    # rule is compiled once and shared. Each sender's list is the merge of the two in
    # priority order, cut after the first rule that always matches.
    shared: list[tuple[int, int, CondFn | None, TargetFn, Any]] = []
    by_from: dict[str, list[tuple[int, int, CondFn | None, TargetFn, Any]]] = {}
    any_sender: list[tuple[int, int, CondFn | None, TargetFn, Any]] = []
    for pos, (i, t) in enumerate(ordered):
        static = getattr(targets[i], "decision", None)
        if isinstance(t.when, m.FromSpeaker):
            by_from.setdefault(t.when.agent_id, []).append((pos, i, None, targets[i], static))
            agent = t.when.agent_id
            any_sender.append((pos, i, _from_fn(agent), targets[i], static))
            continue
        cond = _cond(t.when, None, reg, f"transitions[{i}].when", problems)
        if cond is _NEVER:
            continue
        entry = (pos, i, None if cond is _ALWAYS else cond, targets[i], static)
        shared.append(entry)
        any_sender.append(entry)

    def cut(entries: Any) -> tuple[CompiledRule, ...]:
        out: list[CompiledRule] = []
        for _pos, i, cond, target, static in entries:
            out.append((i, cond, target, static))
            if cond is None:
                break  # nothing after a rule that always matches can fire
        return tuple(out)

    generic = cut(any_sender)
    shared_only = cut(shared)
    by_sender = {
        p: cut(heapq.merge(shared, by_from[p])) if p in by_from else shared_only
        for p in participant_order
    }
    if problems:
        raise GraphError(problems)
    return CompiledGraph(graph, by_sender, generic, default, graph.max_turns, members)


# ── the adapter ────────────────────────────────────────────────────────────────


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
            raise GraphError([ShapeProblem("graph", "the workflow needs knobs['graph'] as an object")])
        context = knobs.get("context_vars", {})
        if context is None:
            context = {}
        if not isinstance(context, dict):
            problems.append(ShapeProblem("context_vars", f"expected an object, got {describe(context)}"))
        try:
            graph = structure_graph(graph_data)
        except ShapeError as err:
            raise GraphError(problems + list(err.problems)) from None
        if problems:
            raise GraphError(problems)
        order = metadata.participant_ids
        return compile_graph(graph, order, self.registry), dict(context)

    def validate_create(self, metadata: ChannelMetadata) -> None:
        if len(metadata.participants) < 2:
            raise ProtocolError(
                f"workflow requires at least 2 participants, got {len(metadata.participants)}"
            )
        self._compile(metadata)

    def initial_state(self, metadata: ChannelMetadata) -> WorkflowState:
        table, context = self._compile(metadata)
        return WorkflowState(
            participant_order=metadata.participant_ids,
            expected_next_speaker=table.graph.initial_speaker,
            creator_id=metadata.creator_id,
            graph_data=metadata.knobs["graph"],
            context_vars=context,
            table=table,
        )

    def validate_send(
        self, metadata: ChannelMetadata, envelope: Envelope, state: WorkflowState
    ) -> None:
        if envelope.event_type != EV_TEXT and envelope.event_type != EV_PACKET:
            return
        expected = state.expected_next_speaker
        if expected and envelope.sender_id != expected:
            raise ProtocolError(
                f"workflow {metadata.channel_id!r} expects {expected!r} to speak, "
                f"got {envelope.sender_id!r}"
            )

    def fold(self, envelope: Envelope, state: WorkflowState) -> WorkflowState:
        et = envelope.event_type
        data = envelope.event_data
        if et == EV_CONTEXT_SET:
            return WorkflowState(
                state.participant_order, state.expected_next_speaker, state.last_speaker_id,
                state.last_envelope_id, state.turn_count, state.pending_close_reason,
                state.creator_id, state.graph_data,
                _context_update(state.context_vars, data, "ag2.context.set"),
                state.decided_by, state.table,
            )
        if et != EV_TEXT and et != EV_PACKET:
            return state
        table = state.table
        assert table is not None, "fold needs a state from initial_state"
        context = state.context_vars
        finish_reason: str | None = None
        pre_resolved: Any = None
        if et == EV_PACKET:
            updates = data.get("context_updates")
            if updates:
                context = _context_update(context, updates, "context_updates")
            routing = data.get("routing")
            if routing:
                if not isinstance(routing, dict):
                    raise ProtocolError("a packet's `routing` must be an object")
                kind = routing.get("kind")
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
            state.participant_order, state.expected_next_speaker, envelope.sender_id,
            envelope.envelope_id, state.turn_count + 1, "", state.creator_id,
            state.graph_data, context, None, table,
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
        for index, cond, target, static in table.by_sender.get(envelope.sender_id, table.generic):
            if cond is None or cond(new, envelope):
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
            return AdapterResult(ChannelState.CLOSED, state.pending_close_reason or "workflow_terminated")
        table = state.table
        max_turns = table.max_turns if table is not None else None
        if max_turns is not None and state.turn_count >= max_turns:
            return AdapterResult(ChannelState.CLOSED, "max_turns")
        return _NOTHING

    def expected_next(self, metadata: ChannelMetadata, state: WorkflowState) -> ExpectedTurn | None:
        if state.expected_next_speaker is None:
            return None
        return ExpectedTurn(state.expected_next_speaker, state.last_envelope_id)

    def snapshot(self, state: WorkflowState) -> dict[str, Any]:
        """What a close envelope records so that ``replay`` can check a re-fold."""
        return snapshot(state)

    def build_round_envelopes(
        self, metadata: ChannelMetadata, state: WorkflowState, sender_id: str, reply: Any,
        name_to_id: dict[str, str],
    ) -> list[Envelope]:
        """An agent's reply as the envelopes AG2 would post for that round."""
        return build_round_envelopes(metadata, state, sender_id, reply, name_to_id)


_NOTHING = AdapterResult()


def decision_of(state: WorkflowState) -> TransitionDecision:
    """The state's routing decision as AG2's ``TransitionDecision``."""
    return TransitionDecision(state.expected_next_speaker, state.pending_close_reason)


def tool_rule_names(graph: m.TransitionGraph) -> frozenset[str]:
    """Tool names a ``tool`` condition routes on, anywhere in a rule's condition.

    AG2 only looks at top-level ``ToolCalled`` rules; flowc's composites (``and``,
    ``not``) may nest one, so the runtime looks inside them too.
    """
    names: set[str] = set()

    def walk(c: m.Condition) -> None:
        if isinstance(c, m.ToolCalled):
            names.add(c.tool_name)
        elif isinstance(c, m.AllOf | m.AnyOf):
            for item in c.conditions:
                walk(item)
        elif isinstance(c, m.Not):
            walk(c.condition)

    for t in graph.transitions:
        walk(t.when)
    return frozenset(names)


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
            return {"kind": "finish", "tool": call.name, "reason": result.reason,
                    "summary": result.summary}
        if isinstance(result, Handoff):
            target = result.target if result.target in known_ids else name_to_id.get(
                result.target, result.target)
            return {"kind": "handoff", "tool": call.name, "reason": result.reason,
                    "target": target}
        if call.name in routing_tools:
            reason = call.args.get("reason", "") if isinstance(call.args, dict) else ""
            return {"kind": "handoff", "tool": call.name,
                    "reason": reason if isinstance(reason, str) else ""}
    return {"kind": "text"}


def snapshot(state: WorkflowState) -> dict[str, Any]:
    return {
        "turn_count": state.turn_count,
        "expected_next_speaker": state.expected_next_speaker,
        "last_speaker_id": state.last_speaker_id,
        "pending_close_reason": state.pending_close_reason,
        "context_vars": state.context_vars,
    }


def build_round_envelopes(
    metadata: ChannelMetadata, state: WorkflowState,
    sender_id: str, reply: Any, name_to_id: dict[str, str],
) -> list[Envelope]:
    """One agent round as envelopes: normally one ``ag2.packet``.

    A round that says nothing and routes nothing makes no packet (as AG2); its
    context writes, if any, still land as one ``ag2.context.set``.
    """
    table = state.table
    tools = tool_rule_names(table.graph) if table is not None else frozenset()
    routing = resolve_routing(reply, tools, name_to_id)
    sets, deletes = merge_context_writes(reply.tool_calls)
    cid = metadata.channel_id
    if routing["kind"] == "text" and not reply.text:
        if sets or deletes:
            return [Envelope(cid, sender_id, None, EV_CONTEXT_SET, {"set": sets, "delete": deletes})]
        return []
    data = {"routing": routing, "context_updates": {"set": sets, "delete": deletes},
            "body": reply.text}
    return [Envelope(cid, sender_id, None, EV_PACKET, data)]

