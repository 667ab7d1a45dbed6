"""Run a flowc script on the real AG2 hub, offline: TestConfig agents, HumanClient seeders.

Every agent speaker is an ``ag2.Agent`` whose model is scripted with ``TestConfig``
events (a list of ``ToolCallEvent`` for a turn's tool calls, then the turn's text);
its tools are real AG2 tools that write context with ``set_context`` /
``delete_context`` and return AG2's ``Handoff`` / ``Finish``. Humans are
``HumanClient``s that post their scripted lines when the workflow expects them.
The result is what :func:`parity` keeps of ``RunResult.to_json()``: each turn's speaker,
kind and routing, the close reason, the context, the turn count and ``stalled_on``.

A run that stops without closing is over once nothing happens for ``quiet`` seconds; with
``settle``, as soon as the WAL has not grown for a few polls while the event loop had
nothing else to run (no agent is thinking, no envelope is on its way: everything here is
in process), which takes a fraction of the time.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.knowledge import MemoryKnowledgeStore
from ag2.network import (
    EV_CHANNEL_CLOSED,
    EV_CONTEXT_SET,
    EV_PACKET,
    EV_TEXT,
    ChannelInject,
    Hub,
    HubClient,
    InboxBlock,
    LimitsBlock,
    LocalLink,
    Passport,
    Resume,
    Rule,
)
from ag2.network import Envelope as AG2Envelope
from ag2.network import Finish as AG2Finish
from ag2.network import Handoff as AG2Handoff
from ag2.network.workflow_helpers import delete_context, set_context
from ag2.testing import TestClient, TestConfig

from flowc.ag2 import open_workflow
from flowc.compiler.lower import CompiledFlow
from flowc.runtime.replies import Finish, Handoff, ToolCall
from flowc.runtime.script import Script, ScriptCall
from flowc.runtime.scripted_replies import check_script, reply_for
from flowc.runtime.target import RunTarget


class ScriptedConfig(TestConfig):
    """A ``TestConfig`` whose script runs on across ``ask`` calls (one client)."""

    __test__ = False

    def __init__(self, *events: Any) -> None:
        super().__init__(*events)
        self._client = TestClient(*events)

    def create(self) -> TestClient:
        return self._client


def _make_tool(
    effects: dict[int, tuple[ScriptCall, ToolCall]],
    names: dict[str, str],
    slow: frozenset[int] = frozenset(),
    waiting: list[int] | None = None,
) -> Any:
    """One real AG2 tool for every scripted call: it writes the call's context and returns
    AG2's ``Finish`` / ``Handoff``, built from what the script says (the handoff's own
    ``reason`` and the finish's ``summary``), so AG2 decides what its routing records. The
    calls numbered in ``slow`` first wait a little, as a tool that waits on I/O does
    (counted in ``waiting[0]`` meanwhile: the run is not over while one waits)."""

    async def tool(k: int, channel: ChannelInject, reason: str = "") -> Any:
        said, call = effects[k]
        if k in slow:
            if waiting is not None:
                waiting[0] += 1
            try:
                await asyncio.sleep(0.05)
            finally:
                if waiting is not None:
                    waiting[0] -= 1
        for key in call.delete:
            await delete_context(channel, key)
        for key, value in call.set.items():
            await set_context(channel, key, value)
        if isinstance(call.result, Finish):
            return AG2Finish(summary=said.summary, reason=call.result.reason)
        if isinstance(call.result, Handoff):
            return AG2Handoff(
                target=names.get(call.result.target, call.result.target), reason=said.reason
            )
        return "ok"

    return tool


def parity(doc: dict[str, Any]) -> dict[str, Any]:
    """The part of a ``RunResult.to_json()`` document that the AG2 runs are compared on."""
    out = {
        "turns": [
            {"speaker": t["speaker"], "kind": t["kind"], "routing": t["routing"]}
            for t in doc["turns"]
        ],
        "close_reason": doc["close_reason"],
        "context_vars": doc["context_vars"],
        "turn_count": doc["turn_count"],
    }
    if "stalled_on" in doc:
        out["stalled_on"] = doc["stalled_on"]
    return out


def _loop_idle() -> bool:
    """Nothing but the caller is ready to run on the event loop."""
    return not asyncio.get_running_loop()._ready  # type: ignore[attr-defined]


async def _settled() -> bool:
    """Whether the loop stays idle through a few rounds (an envelope in flight makes work)."""
    for _ in range(5):
        await asyncio.sleep(0)
        if not _loop_idle():
            return False
    return True


async def run_on_ag2(
    flow: CompiledFlow,
    script: Script,
    *,
    quiet: float = 0.4,
    settle: bool = False,
    inbox_limit: int | None = None,
    slow: frozenset[int] = frozenset(),
    checked: bool = True,
) -> dict[str, Any]:
    """The script's run on AG2's hub (see the module's docstring); ``inbox_limit`` sets
    every client's ``max_pending`` (AG2's default is 1,000); ``slow`` numbers the scripted
    tool calls (0 the first in the script, by speaker and turn) whose tools wait a little
    before they write; ``checked`` false: the script is run without flowc's check of it
    (a reply flowc refuses, to see what AG2 does with it)."""
    rule = (
        Rule(limits=LimitsBlock(inbox=InboxBlock(max_pending=inbox_limit)))
        if inbox_limit is not None
        else None
    )
    target = RunTarget.from_compiled(flow).with_script_facts(script)
    if checked:
        check_script(target, script)
    hub = await Hub.open(MemoryKnowledgeStore(), ttl_sweep_interval=0)
    link = LocalLink(hub)
    clients: dict[str, Any] = {}
    waiting = [0]  # slow tools waiting (see _make_tool)
    effects: dict[int, tuple[ScriptCall, ToolCall]] = {}
    names = target.names
    humans: dict[str, list[Any]] = {}
    for speaker in target.speakers:
        hc = HubClient(link, hub=hub)
        if speaker in target.humans:
            clients[speaker] = await hc.register_human(
                Passport(name=speaker, kind="human"), rule=rule
            )
            humans[speaker] = list(script.turns.get(speaker, ()))
            continue
        events: list[Any] = []
        tools: set[str] = set()
        for turn in script.turns.get(speaker, ()):
            reply = reply_for(target, speaker, turn)
            if reply.tool_calls:
                batch = []
                for said, call in zip(turn.calls, reply.tool_calls, strict=True):
                    k = len(effects)
                    effects[k] = (said, call)
                    tools.add(call.name)
                    args = {"k": k}
                    if isinstance(call.args.get("reason"), str):
                        args["reason"] = call.args["reason"]
                    batch.append(ToolCallEvent(name=call.name, arguments=json.dumps(args)))
                events.append(batch)
            events.append(reply.text)
        agent = Agent(speaker, config=ScriptedConfig(*events))
        for name in sorted(tools):
            agent.tool(
                _make_tool(effects, names, slow, waiting), name=name, description=f"the {name} tool"
            )
        clients[speaker] = await hc.register(
            agent, Passport(name=speaker), Resume(), rule=rule, attach_plugin=False
        )
    channel = await open_workflow(flow, clients, context_vars=script.context_vars)
    cid = channel.channel_id
    ids = {s: clients[s].agent_id for s in target.speakers}
    by_id = {v: k for k, v in ids.items()}

    async def human_turn(speaker: str) -> None:
        queue = humans[speaker]
        if not queue:
            return
        turn = queue.pop(0)
        reply = reply_for(target, speaker, turn)
        for call in reply.tool_calls:
            await clients[speaker].post_envelope(
                AG2Envelope(
                    channel_id=cid,
                    sender_id=ids[speaker],
                    audience=None,
                    event_type=EV_CONTEXT_SET,
                    event_data={"set": dict(call.set), "delete": list(call.delete)},
                )
            )
        await clients[speaker].send(cid, turn.say)

    pending: set[asyncio.Task[None]] = set()

    def driver(speaker: str) -> Any:
        async def on_envelope(env: AG2Envelope) -> None:
            if env.event_type not in (EV_TEXT, EV_PACKET):
                return
            state = hub.adapter_state(cid)
            if state is not None and state.expected_next_speaker == ids[speaker]:
                task = asyncio.ensure_future(human_turn(speaker))
                pending.add(task)
                task.add_done_callback(pending.discard)

        return on_envelope

    for speaker in humans:
        clients[speaker].on_envelope(driver(speaker))

    start = names.get(flow.graph.initial_speaker, flow.graph.initial_speaker)
    if script.kickoff is not None:
        if start in humans:
            await clients[start].send(cid, script.kickoff)
        else:
            await channel.send(script.kickoff)
    closed = False
    seen = -1
    idle = 0.0
    still = 0  # polls in a row with no new envelope and nothing to run
    while idle < quiet:
        wal = await hub.read_wal(cid)
        closed = any(e.event_type == EV_CHANNEL_CLOSED for e in wal)
        if closed:
            break
        if len(wal) == seen:
            idle += 0.02
            quiet_now = settle and not pending and not waiting[0] and await _settled()
            still = still + 1 if quiet_now else 0
            if still >= 3:
                break
        else:
            idle, still = 0.0, 0
        seen = len(wal)
        await asyncio.sleep(0.02)
    wal = await hub.read_wal(cid)
    state = hub.adapter_state(cid)
    turns = []
    for e in wal:
        if e.event_type == EV_TEXT:
            turns.append({"speaker": by_id[e.sender_id], "kind": "text", "routing": None})
        elif e.event_type == EV_PACKET:
            routing = dict(e.event_data.get("routing") or {})
            if "target" in routing:
                routing["target"] = by_id.get(routing["target"], routing["target"])
            turns.append({"speaker": by_id[e.sender_id], "kind": "packet", "routing": routing})
    close = next(
        (e.event_data.get("reason") for e in wal if e.event_type == EV_CHANNEL_CLOSED), None
    )
    out: dict[str, Any] = {
        "turns": turns,
        "close_reason": close,
        "context_vars": dict(state.context_vars) if state is not None else {},
        "turn_count": state.turn_count if state is not None else 0,
    }
    if not closed and state is not None and state.expected_next_speaker:
        out["stalled_on"] = by_id.get(state.expected_next_speaker, state.expected_next_speaker)
    for task in list(pending):
        task.cancel()
    await hub.close()
    return out
