"""The bridge to AG2 itself — the only module of flowc that imports ``ag2``.

A team writes `.flow`, compiles it, and runs it on AG2 with its real agents:

- :func:`register_composites` / :func:`register_customs` put flowc's composite
  conditions (``all_of`` / ``any_of`` / ``not``) and the team's custom condition and
  target classes into AG2's ``TransitionRegistry``;
- :func:`bind_graph` rewrites a compiled graph's speaker names to the real agent ids
  of registered AG2 clients;
- :func:`open_workflow` does both and opens the ``workflow`` channel with the
  compiled knobs, in one call;
- :func:`agent_callable` lets flowc's own hub (``flowc run --agents``) drive an AG2
  ``Agent``.

Importing this module without ``ag2`` installed raises ``ImportError``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, ClassVar

import attrs
from ag2.network import TransitionRegistry as AG2Registry
from ag2.network.envelope import Envelope as AG2Envelope

from flowc.compiler.compiled import CompiledFlow
from flowc.runtime.clients import Turn
from flowc.runtime.replies import Finish, Handoff, Reply, ToolCall

__all__ = [
    "AllOf",
    "AnyOf",
    "Not",
    "agent_callable",
    "bind_graph",
    "is_agent",
    "open_workflow",
    "register_composites",
    "register_customs",
]


def _registry(registry: AG2Registry | None) -> AG2Registry:
    return registry if registry is not None else AG2Registry.default()


def _build(data: dict[str, Any], registry: AG2Registry | None) -> Any:
    return _registry(registry).condition_from_dict(data)


@dataclass(slots=True)
class AllOf:
    """``all_of``: every nested condition (a ``{"name", "args"}`` dict) holds."""

    conditions: list[dict[str, Any]] = field(default_factory=list)
    name: ClassVar[str] = "all_of"

    def evaluate(self, state: Any, envelope: AG2Envelope) -> bool:
        return all(_build(c, None).evaluate(state, envelope) for c in self.conditions)


@dataclass(slots=True)
class AnyOf:
    """``any_of``: some nested condition holds."""

    conditions: list[dict[str, Any]] = field(default_factory=list)
    name: ClassVar[str] = "any_of"

    def evaluate(self, state: Any, envelope: AG2Envelope) -> bool:
        return any(_build(c, None).evaluate(state, envelope) for c in self.conditions)


@dataclass(slots=True)
class Not:
    """``not``: the nested condition does not hold."""

    condition: dict[str, Any] = field(default_factory=dict)
    name: ClassVar[str] = "not"

    def evaluate(self, state: Any, envelope: AG2Envelope) -> bool:
        return not _build(self.condition, None).evaluate(state, envelope)


def register_composites(registry: AG2Registry | None = None) -> None:
    """Register ``all_of`` / ``any_of`` / ``not`` into AG2's (default) registry.

    >>> register_composites()
    >>> AG2Registry.default().condition_from_dict(
    ...     {"name": "not", "args": {"condition": {"name": "always", "args": {}}}}).name
    'not'
    """
    reg = _registry(registry)
    for cls in (AllOf, AnyOf, Not):
        reg.register_condition(cls)


def register_customs(
    conditions: Iterable[type[Any]] = (),
    targets: Iterable[type[Any]] = (),
    registry: AG2Registry | None = None,
) -> None:
    """Register custom classes (the same ones flowc's runtime uses) into AG2."""
    reg = _registry(registry)
    for cls in conditions:
        reg.register_condition(cls)
    for cls in targets:
        reg.register_target(cls)


def bind_graph(graph: dict[str, Any], ids: Mapping[str, str]) -> dict[str, Any]:
    """A copy of ``graph`` with every speaker name replaced by its agent id.

    >>> g = {"initial_speaker": "a", "transitions": [{"when": {"name": "from_speaker",
    ...      "args": {"agent_id": "a"}}, "then": {"name": "agent", "args": {"agent_id": "b"}},
    ...      "priority": 0}], "default_target": {"name": "terminate", "args": {}},
    ...      "max_turns": None}
    >>> bound = bind_graph(g, {"a": "id-1", "b": "id-2"})
    >>> bound["initial_speaker"], bound["transitions"][0]["then"]["args"]["agent_id"]
    ('id-1', 'id-2')
    """

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            out = {k: walk(v) for k, v in value.items()}
            if value.get("name") in ("from_speaker", "agent") and isinstance(
                value.get("args"), dict
            ):
                agent = value["args"].get("agent_id")
                if isinstance(agent, str):
                    out["args"] = {**out["args"], "agent_id": ids.get(agent, agent)}
            return out
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    bound = walk(graph)
    bound["initial_speaker"] = ids.get(graph["initial_speaker"], graph["initial_speaker"])
    return bound  # type: ignore[no-any-return]


async def open_workflow(
    flow: CompiledFlow,
    clients: Mapping[str, Any],
    *,
    context_vars: Mapping[str, Any] | None = None,
    registry: AG2Registry | None = None,
    custom_classes: Sequence[type[Any]] = (),
) -> Any:
    """Open ``flow`` as an AG2 ``workflow`` channel among registered AG2 clients.

    ``clients`` maps every speaker name to its AG2 ``AgentClient`` / ``HumanClient``;
    the flow's ``initiator`` opens the channel, participants in declaration order.
    Returns AG2's ``Channel``; the start speaker's first send is the kickoff.
    """
    missing = [s for s in flow.speakers if s not in clients]
    if missing:
        raise ValueError(f"no AG2 client for speaker(s): {', '.join(missing)}")
    register_composites(registry)
    conditions = [c for c in custom_classes if callable(getattr(c, "evaluate", None))]
    targets = [c for c in custom_classes if callable(getattr(c, "resolve", None))]
    register_customs(conditions, targets, registry)
    ids = {s: clients[s].agent_id for s in flow.speakers}
    knobs = {
        "graph": bind_graph(flow.graph_dict, ids),
        "context_vars": {**flow.context_vars, **(context_vars or {})},
    }
    opener = clients[flow.initiator]
    return await opener.open(type="workflow", target=[ids[s] for s in flow.speakers], knobs=knobs)


def is_agent(value: Any) -> bool:
    """Whether ``value`` is an AG2 ``Agent`` (what :func:`agent_callable` drives).

    >>> from ag2 import Agent
    >>> is_agent(Agent("a")), is_agent(print)
    (True, False)
    """
    from ag2 import Agent

    return isinstance(value, Agent)


def agent_callable(agent: Any) -> Callable[[Turn], Awaitable[Reply]]:
    """Drive an AG2 ``Agent`` from flowc's hub: one ``agent.ask`` per turn.

    Tool calls, and the ``Handoff`` / ``Finish`` their results carry, become the
    reply's tool calls. Tools that take AG2's ``ChannelInject`` / ``ChannelStateInject``
    work unchanged: ``set_context`` / ``delete_context`` are recorded and land with
    the reply's packet (before routing, as on AG2's hub), and the state shows the
    channel's ``context_vars``. An agent with no model config raises ``ValueError``
    here rather than on every turn.

    >>> from ag2 import Agent
    >>> from ag2.testing import TestConfig
    >>> agent_callable(Agent("bot", config=TestConfig("hello")))  # doctest: +ELLIPSIS
    <function agent_callable.<locals>.take at 0x...>
    >>> agent_callable(Agent("bot"))
    Traceback (most recent call last):
    ...
    ValueError: AG2 Agent 'bot' has no model config (give Agent(..., config=...))
    """
    if not is_agent(agent):
        raise ValueError(f"not an AG2 Agent: {type(agent).__name__}")
    if not getattr(agent, "config", None):
        raise ValueError(
            f"AG2 Agent {agent.name!r} has no model config (give Agent(..., config=...))"
        )
    from ag2.events import DataInput, ToolCallEvent, ToolResultEvent
    from ag2.network import Finish as AG2Finish
    from ag2.network import Handoff as AG2Handoff
    from ag2.network.policies import CHANNEL_DEP, CHANNEL_STATE_DEP
    from ag2.stream import MemoryStream

    async def take(turn: Turn) -> Reply:
        stream = MemoryStream()
        history, prompt = await _ag2_view(turn)
        if history:
            await stream.history.storage.set_history(stream.id, history)
        channel = ContextChannel(turn.channel_id, turn.context)
        reply = await agent.ask(
            *(prompt or [turn.text or "(your turn)"]),
            stream=stream,
            dependencies={CHANNEL_DEP: channel, CHANNEL_STATE_DEP: channel.state},
        )
        events = list(await stream.history.get_events())
        results = {e.parent_id: e for e in events if isinstance(e, ToolResultEvent)}
        calls: list[ToolCall] = []
        ids: list[str | None] = []
        for ev in events:
            if not isinstance(ev, ToolCallEvent):
                continue
            try:
                args = json.loads(ev.arguments or "{}")
            except ValueError:
                args = {}
            outcome: Handoff | Finish | None = None
            res = results.get(ev.id)
            for part in (getattr(res.result, "parts", None) or []) if res is not None else []:
                data = part.data if isinstance(part, DataInput) else None
                if isinstance(data, AG2Finish):
                    outcome = Finish(summary=data.summary, reason=data.reason)
                elif isinstance(data, AG2Handoff):
                    outcome = Handoff(target=data.target, reason=data.reason)
            call = ToolCall(ev.name, args if isinstance(args, dict) else {}, result=outcome)
            calls.append(call)
            ids.append(ev.id if isinstance(ev.id, str) else None)
        if calls and channel.writes:
            if channel.attributable(ids):
                # each call carries the writes its own tool made, so the flow's
                # declarations hold each tool to what it wrote
                calls = [
                    attrs.evolve(c, set=w[0], delete=w[1]) if w[0] or w[1] else c
                    for c, w in zip(calls, (channel.folded(i) for i in ids), strict=True)
                ]
            else:
                # writes the calls cannot be told apart by (or two tools wrote one key,
                # concurrently): folded, in the order they were sent, onto the reply's
                # first call, which gives the same final context
                sets, deletes = channel.folded()
                calls[0] = attrs.evolve(calls[0], set=sets, delete=deletes)
        return Reply(reply.body or "", tuple(calls))

    return take


class ContextChannel:
    """What an AG2 tool's ``ChannelInject`` is on flowc's hub.

    ``ag2.network.workflow_helpers.set_context`` / ``delete_context`` send
    ``ag2.context.set`` envelopes through it; they are recorded and applied with the
    turn's packet. ``state.context_vars`` is the channel's context as the turn began.

    >>> import asyncio
    >>> from ag2.network.workflow_helpers import delete_context, set_context
    >>> ch = ContextChannel("c1", {"route": "billing"})
    >>> asyncio.run(set_context(ch, "done", True)); asyncio.run(delete_context(ch, "route"))
    >>> ch.folded(), ch.state.context_vars
    (({'done': True}, ('route',)), {'route': 'billing'})
    """

    def __init__(self, channel_id: str, context: dict[str, Any]):
        from ag2.network.adapters.workflow import WORKFLOW_TYPE

        self.channel_id = channel_id
        self.metadata = SimpleNamespace(
            channel_id=channel_id, type=WORKFLOW_TYPE, manifest=SimpleNamespace(type=WORKFLOW_TYPE)
        )
        self.state = SimpleNamespace(context_vars=dict(context))
        self.writes: list[dict[str, Any]] = []
        #: the id of the tool call that sent each write (``None``: not known)
        self.senders: list[str | None] = []

    async def send(
        self, text: str = "", *, event_type: str = "", event_data: Any = None, **_: Any
    ) -> None:
        from ag2.network import EV_CONTEXT_SET

        if event_type != EV_CONTEXT_SET:
            raise RuntimeError(
                "on flowc's hub a tool may only write context through its channel "
                f"(set_context / delete_context), not send {event_type or 'text'!r}"
            )
        self.writes.append(dict(event_data or {}))
        self.senders.append(_tool_call_id())

    def attributable(self, call_ids: Sequence[str | None]) -> bool:
        """Whether every write is known to come from one of ``call_ids`` and no key is
        written by two of them (then each call's writes can ride on it)."""
        if not all(s is not None and s in call_ids for s in self.senders):
            return False
        writer: dict[str, str | None] = {}
        for sender, write in zip(self.senders, self.writes, strict=True):
            for key in (*(write.get("delete") or ()), *(write.get("set") or {})):
                if writer.setdefault(key, sender) != sender:
                    return False
        return True

    def folded(self, call_id: str | None = None) -> tuple[dict[str, Any], tuple[str, ...]]:
        """All writes (or those the tool call ``call_id`` sent) as one ``(set, delete)``
        pair (delete applies before set)."""
        sets: dict[str, Any] = {}
        deletes: dict[str, None] = {}
        for sender, write in zip(self.senders, self.writes, strict=True):
            if call_id is not None and sender != call_id:
                continue
            for key in write.get("delete") or ():
                sets.pop(key, None)
                deletes[key] = None
            for key, value in (write.get("set") or {}).items():
                sets[key] = value
                deletes.pop(key, None)
        return sets, tuple(deletes)


def _tool_call_id() -> str | None:
    """The id of the AG2 tool call whose tool runs now, or ``None``.

    AG2 runs each tool call of a turn in a task of its own, as
    ``ag2.tools.executor._execute_call(context, call)``; a tool's ``set_context`` runs
    in that task, whose coroutine holds the call.
    """
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return None
    frame = getattr(task.get_coro(), "cr_frame", None) if task is not None else None
    call = frame.f_locals.get("call") if frame is not None else None
    found = getattr(call, "id", None)
    return found if isinstance(found, str) else None


def _ag2_envelope(env: Any) -> AG2Envelope:
    return AG2Envelope(
        channel_id=env.channel_id,
        sender_id=env.sender_id,
        audience=None if env.audience is None else list(env.audience),
        event_type=env.event_type,
        event_data=dict(env.event_data),
        envelope_id=env.envelope_id,
        causation_id=env.causation_id,
    )


async def _ag2_view(turn: Turn) -> tuple[list[Any], list[Any]]:
    """What AG2's hub hands an agent for this turn: the channel before the trigger,
    projected by the workflow's default view (``NamedWindowedSummary``: the last
    ``max(2 * participants, 4)`` turns, ``[name]: `` on other speakers' lines, a
    compaction line for older ones), and the trigger rendered as the prompt parts.

    Uses AG2 1.2.1's own renderer and view (its agent handler's helpers), so an AG2
    ``Agent`` sees the same conversation on flowc's hub as on AG2's. flowc's hub keeps
    the last ``HISTORY_WINDOW`` turns, so the compaction line counts only those.
    """
    from ag2.network.adapters.workflow import WorkflowAdapter
    from ag2.network.client.handlers import _render_current_input, _renderer
    from ag2.network.views.builtin import NamedWindowedSummary

    adapter: Any = WorkflowAdapter()  # AG2 types it apart from its ChannelAdapter protocol
    view = NamedWindowedSummary(recent_n=max(len(turn.participants) * 2, 4))
    trigger = turn.envelope
    before = [
        _ag2_envelope(e)
        for e in turn.history
        if not trigger.envelope_id or e.envelope_id != trigger.envelope_id
    ]
    history = await view.project(
        before,
        participant_id=turn.agent_id,
        channel=None,  # type: ignore[arg-type]
        render_envelope=_renderer(adapter),
        name_for=turn.name_of,
    )
    prompt = await _render_current_input(
        view,
        _ag2_envelope(trigger),
        adapter,
        turn.agent_id,
        None,  # type: ignore[arg-type]
        turn.name_of,
    )
    return history, list(prompt or [])
