"""Scripted runs: ``flowc run --script`` and the ``scenario`` blocks of ``flowc test``.

A :class:`RunTarget` is what runs (a compiled flow, or a bare graph / knobs dict plus
the script's participant facts); a :class:`Script` is who says what. Scripts are
checked before the run: an unknown speaker, a tool the flow does not declare, or a
handoff to a non-speaker is refused with a :class:`ScriptError` and nothing runs.

>>> import flowc
>>> flow = flowc.compile_flow('''
... speaker user: human
... speaker bot
... sequence user -> bot
... ''')
>>> script = parse_script({"kickoff": "hi", "script": {"bot": ["hello"]}})
>>> result = run_script_sync(RunTarget.from_compiled(flow), script)
>>> result.close_reason, [t.speaker for t in result.turns]
('sequence_complete', ['user', 'bot'])
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.describe import target_text, transition_text
from flowc.compiler.lower import CompiledFlow, ToolEffectInfo
from flowc.compiler.serde import unstructure_graph
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_value
from flowc.runtime.adapters.base import ChannelState, Expectation, ProtocolError
from flowc.runtime.adapters.workflow import (
    DEFAULT,
    WorkflowAdapter,
    WorkflowState,
    merge_context_writes,
)
from flowc.runtime.clients import AgentClient, HumanClient, Turn, envelope_text
from flowc.runtime.envelope import (
    EV_CHANNEL_CLOSED,
    EV_CHANNEL_OPENED,
    EV_CONTEXT_SET,
    EV_PACKET,
    EV_TEXT,
    Envelope,
)
from flowc.runtime.hub import Channel, Hub
from flowc.runtime.replies import Finish, Handoff, Reply, ToolCall
from flowc.runtime.wal import WalStore

__all__ = [
    "RunResult",
    "RunTarget",
    "ScenarioResult",
    "Script",
    "ScriptCall",
    "ScriptError",
    "ScriptTurn",
    "TurnRecord",
    "parse_script",
    "run_scenario",
    "run_script",
    "run_script_sync",
    "transcript",
]


class ScriptError(Exception):
    """A script (or scenario) the runtime refuses before the run starts."""


# ── describing rules in the flow's terms ──────────────────────────────────────


def _rule_texts(compiled: CompiledFlow | None, graph: m.TransitionGraph,
                names: Mapping[str, str], source_text: str | None) -> list[str]:
    out: list[str] = []
    infos = {r.index: r for r in compiled.rules} if compiled is not None else {}
    for i, t in enumerate(graph.transitions):
        info = infos.get(i)
        span = info.statement.span if info is not None else None
        if info is not None and span is not None and source_text is not None \
                and span.end > span.start:
            text = " ".join(source_text[span.start:span.end].split())
            if info.rule is None:  # implied by sequence / round_robin
                text = f"{transition_text(t, names)}, from `{text}`"
            out.append(text)
        else:
            out.append(transition_text(t, names))
    return out


# ── what runs ─────────────────────────────────────────────────────────────────


@attrs.frozen
class RunTarget:
    """A graph ready to run: participants (names, in order), humans, creator, tools."""

    graph: m.TransitionGraph
    context_vars: dict[str, Any]
    speakers: tuple[str, ...]
    humans: frozenset[str]
    creator: str
    ids: dict[str, str]  # speaker name -> agent id
    #: (speaker, tool) -> declared effects; ``None`` for a bare graph (any tool goes)
    tools: dict[tuple[str, str], tuple[ToolEffectInfo, ...]] | None
    rule_texts: tuple[str, ...]
    label: str = ""

    @property
    def names(self) -> dict[str, str]:
        """agent id -> speaker name"""
        return {v: k for k, v in self.ids.items()}

    @property
    def start(self) -> str:
        return self.names.get(self.graph.initial_speaker, self.graph.initial_speaker)

    @property
    def knobs(self) -> dict[str, Any]:
        return {"graph": unstructure_graph(self.graph), "context_vars": dict(self.context_vars)}

    @classmethod
    def from_compiled(cls, flow: CompiledFlow, *, source_text: str | None = None,
                      label: str = "") -> RunTarget:
        """From a compiled `.flow` (``source_text`` lets transcripts quote the rules)."""
        ids = {s: flow.agent_id(s) for s in flow.speakers}
        names = {v: k for k, v in ids.items()}
        tools = {(t.speaker, t.name): t.alternatives for t in flow.tools}
        return cls(flow.graph, dict(flow.context_vars), tuple(flow.speakers),
                   frozenset(flow.humans), flow.initiator, ids, tools,
                   tuple(_rule_texts(flow, flow.graph, names, source_text)), label or (flow.name or ""))

    @classmethod
    def from_graph(cls, graph: m.TransitionGraph, context_vars: Mapping[str, Any] | None = None,
                   *, participants: Sequence[str] | None = None, humans: Sequence[str] = (),
                   creator: str | None = None, label: str = "") -> RunTarget:
        """From a bare graph; participants default to every agent id the graph names."""
        speakers = tuple(dict.fromkeys(participants or m.agent_ids(graph)))
        ids = {s: s for s in speakers}
        return cls(graph, dict(context_vars or {}), speakers, frozenset(humans),
                   creator or graph.initial_speaker, ids, None,
                   tuple(_rule_texts(None, graph, {}, None)), label)

    def with_script_facts(self, script: Script) -> RunTarget:
        """Apply a script's ``participants`` / ``humans`` / ``creator`` / ``context_vars``."""
        speakers = tuple(script.participants) if script.participants is not None else self.speakers
        ids = dict(self.ids)
        for s in speakers:
            ids.setdefault(s, s)
        ids = {k: v for k, v in ids.items() if k in speakers}
        context = dict(self.context_vars)
        if script.context_vars is not None:
            context.update(script.context_vars)
        return attrs.evolve(
            self, speakers=speakers, ids=ids, context_vars=context,
            humans=frozenset(script.humans) if script.humans is not None else self.humans,
            creator=script.creator if script.creator is not None else self.creator,
        )

    def describe_decision(self, decided_by: int | str | None) -> str:
        """``rule 3: when from drafter then reviewer``, ``otherwise``, ..."""
        if isinstance(decided_by, int):
            text = self.rule_texts[decided_by] if decided_by < len(self.rule_texts) else ""
            return f"rule {decided_by + 1}: {text}" if text else f"rule {decided_by + 1}"
        if decided_by == DEFAULT:
            return f"otherwise {target_text(self.graph.default_target, self.names)}"
        if decided_by is None:
            return "start"
        return str(decided_by)


# ── scripts ───────────────────────────────────────────────────────────────────


@attrs.frozen
class ScriptCall:
    """One tool call (or bare effect) of a scripted turn."""

    tool: str | None = None
    args: dict[str, Any] = attrs.field(factory=dict)
    set: dict[str, Any] = attrs.field(factory=dict)
    delete: tuple[str, ...] = ()
    handoff: str | None = None
    finish: str | None = None  # the reason
    summary: str = ""


@attrs.frozen
class ScriptTurn:
    say: str = ""
    calls: tuple[ScriptCall, ...] = ()
    where: str = ""  # for messages: "script.triage[0]" or "line 12"


@attrs.frozen
class Script:
    kickoff: str | None
    turns: dict[str, tuple[ScriptTurn, ...]]
    participants: tuple[str, ...] | None = None
    humans: tuple[str, ...] | None = None
    creator: str | None = None
    context_vars: dict[str, Any] | None = None


_CALL_KEYS = {"tool", "args", "set", "delete", "handoff", "finish", "summary"}


def _parse_call(obj: Mapping[str, Any], where: str) -> ScriptCall:
    extra = set(obj) - _CALL_KEYS
    if extra:
        raise ScriptError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
    tool = obj.get("tool")
    if tool is not None and not isinstance(tool, str):
        raise ScriptError(f"{where}.tool: expected a tool name")
    args = obj.get("args") or {}
    if not isinstance(args, dict):
        raise ScriptError(f"{where}.args: expected an object")
    sets = obj.get("set") or {}
    if not isinstance(sets, dict):
        raise ScriptError(f"{where}.set: expected an object of context keys")
    delete = obj.get("delete") or []
    if isinstance(delete, str):
        delete = [delete]
    if not isinstance(delete, list) or not all(isinstance(k, str) for k in delete):
        raise ScriptError(f"{where}.delete: expected a key or a list of keys")
    handoff = obj.get("handoff")
    if handoff is not None and not isinstance(handoff, str):
        raise ScriptError(f"{where}.handoff: expected a speaker name")
    finish = obj.get("finish")
    if finish is True:
        finish = "finished"
    elif finish is False:
        finish = None
    if finish is not None and not isinstance(finish, str):
        raise ScriptError(f"{where}.finish: expected a reason (a string) or true")
    if handoff is not None and finish is not None:
        raise ScriptError(f"{where}: a call either hands off or finishes, not both")
    summary = obj.get("summary", "")
    if not isinstance(summary, str):
        raise ScriptError(f"{where}.summary: expected a string")
    return ScriptCall(tool, dict(args), dict(sets), tuple(delete), handoff, finish, summary)


def _parse_turn(item: Any, where: str) -> ScriptTurn:
    if isinstance(item, str):
        return ScriptTurn(item, (), where)
    if not isinstance(item, dict):
        raise ScriptError(f"{where}: a turn is a string or an object, got {type(item).__name__}")
    say = item.get("say", "")
    if not isinstance(say, str):
        raise ScriptError(f"{where}.say: expected a string")
    inline = {k: v for k, v in item.items() if k in _CALL_KEYS}
    extra = set(item) - _CALL_KEYS - {"say", "tools"}
    if extra:
        raise ScriptError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
    calls: list[ScriptCall] = []
    if inline:
        calls.append(_parse_call(inline, where))
    tools = item.get("tools")
    if tools is not None:
        if inline:
            raise ScriptError(f"{where}: give one call inline or several in `tools`, not both")
        if not isinstance(tools, list):
            raise ScriptError(f"{where}.tools: expected a list of calls")
        for i, call in enumerate(tools):
            if not isinstance(call, dict):
                raise ScriptError(f"{where}.tools[{i}]: expected an object")
            calls.append(_parse_call(call, f"{where}.tools[{i}]"))
    return ScriptTurn(say, tuple(calls), where)


def parse_script(data: Any) -> Script:
    """Read the script format of ``docs/runtime.md`` (already parsed from JSON/YAML).

    >>> parse_script({"script": {"a": ["hi", {"tool": "t", "say": "ok"}]}}).turns["a"][1].calls[0].tool
    't'
    """
    if not isinstance(data, dict):
        raise ScriptError("a script is an object with `kickoff` and `script`")
    extra = set(data) - {"kickoff", "script", "participants", "humans", "creator", "context_vars"}
    if extra:
        raise ScriptError(f"unknown key(s) {', '.join(sorted(extra))}")
    kickoff = data.get("kickoff")
    if kickoff is not None and not isinstance(kickoff, str):
        raise ScriptError("kickoff: expected a string")
    body = data.get("script") or {}
    if not isinstance(body, dict):
        raise ScriptError("script: expected an object mapping speakers to lists of turns")
    turns: dict[str, tuple[ScriptTurn, ...]] = {}
    for speaker, items in body.items():
        if not isinstance(items, list):
            raise ScriptError(f"script.{speaker}: expected a list of turns")
        turns[str(speaker)] = tuple(
            _parse_turn(item, f"script.{speaker}[{i}]") for i, item in enumerate(items)
        )

    def names(key: str) -> tuple[str, ...] | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ScriptError(f"{key}: expected a list of names")
        return tuple(value)

    creator = data.get("creator")
    if creator is not None and not isinstance(creator, str):
        raise ScriptError("creator: expected a name")
    context = data.get("context_vars")
    if context is not None and not isinstance(context, dict):
        raise ScriptError("context_vars: expected an object")
    return Script(kickoff, turns, names("participants"), names("humans"), creator, context)


# ── turning script turns into replies ─────────────────────────────────────────


def _pick_alternative(alts: tuple[ToolEffectInfo, ...], call: ScriptCall, speaker: str,
                      where: str) -> ToolEffectInfo | None:
    if not alts:
        return None
    if len(alts) == 1 and call.handoff is None and call.finish is None:
        return alts[0]
    for alt in alts:
        if call.handoff is not None and alt.handoff == call.handoff:
            return alt
        if call.finish is not None and alt.finish == call.finish:
            return alt
    options = " | ".join(
        f"hands off to {a.handoff}" if a.handoff else f'finishes "{a.finish}"' if a.finish
        else "sets/clears context" for a in alts
    )
    if call.handoff is None and call.finish is None:
        raise ScriptError(f"{where}: {speaker}'s tool `{call.tool}` does one of several things "
                          f"({options}); say which with `handoff` or `finish`")
    raise ScriptError(f"{where}: {speaker}'s tool `{call.tool}` is declared to do {options}, "
                      f"not what the script says")


def _tool_call(target: RunTarget, speaker: str, call: ScriptCall, where: str) -> ToolCall:
    sets = dict(call.set)
    deletes = list(call.delete)
    handoff, finish = call.handoff, call.finish
    if call.tool is not None and target.tools is not None:
        key = (speaker, call.tool)
        if key not in target.tools:
            declared = sorted(t for s, t in target.tools if s == speaker)
            hint = f" (declared: {', '.join(declared)})" if declared else " (it declares none)"
            raise ScriptError(f"{where}: {speaker} has no tool `{call.tool}`{hint}")
        alt = _pick_alternative(target.tools[key], call, speaker, where)
        if alt is not None:
            deletes = [*alt.clears, *(k for k in deletes if k not in alt.clears)]
            sets = {**dict(alt.sets), **sets}
            handoff, finish = alt.handoff, alt.finish
    if handoff is not None and handoff not in target.ids:
        raise ScriptError(f"{where}: hands off to `{handoff}`, which is not a participant "
                          f"({', '.join(target.speakers)})")
    reason = call.args.get("reason", "")
    result: Handoff | Finish | None = None
    if finish is not None:
        result = Finish(summary=call.summary, reason=finish)
    elif handoff is not None:
        result = Handoff(target=target.ids[handoff], reason=reason if isinstance(reason, str) else "")
    name = call.tool or ("finish" if finish is not None else "handoff" if handoff is not None
                         else "set_context")
    return ToolCall(name, dict(call.args), sets, tuple(deletes), result)


def reply_for(target: RunTarget, speaker: str, turn: ScriptTurn) -> Reply:
    """A scripted turn as the reply an agent would give (declared tool effects applied)."""
    calls: tuple[ToolCall, ...] = tuple(
        _tool_call(target, speaker, c, turn.where) for c in turn.calls
    )
    return Reply(turn.say, calls)


def check_script(target: RunTarget, script: Script) -> None:
    """Refuse, before anything runs, a script the target cannot run."""
    known = set(target.speakers)
    if target.creator not in known:
        raise ScriptError(f"creator `{target.creator}` is not a participant")
    for who in (target.humans or ()):
        if who not in known:
            raise ScriptError(f"humans: `{who}` is not a participant")
    if target.start not in known:
        raise ScriptError(f"the start speaker `{target.start}` is not a participant "
                          f"({', '.join(target.speakers)})")
    for speaker, turns in script.turns.items():
        if speaker not in known:
            raise ScriptError(f"script.{speaker}: `{speaker}` is not a speaker of this flow "
                              f"({', '.join(target.speakers)})")
        for turn in turns:
            if speaker in target.humans and any(
                c.tool is not None or c.handoff is not None or c.finish is not None
                for c in turn.calls
            ):
                raise ScriptError(f"{turn.where}: `{speaker}` is a human; a human's turn is text "
                                  "and context writes (`set` / `delete`), not tool calls")
            reply_for(target, speaker, turn)


# ── results ───────────────────────────────────────────────────────────────────


@attrs.frozen
class TurnRecord:
    """One turn of a run, with the routing decision its fold made."""

    number: int
    speaker: str
    agent_id: str
    kind: str  # "text" or "packet"
    routing: dict[str, Any] | None
    text: str
    context_set: dict[str, Any]
    context_delete: tuple[str, ...]
    next_speaker: str | None
    decided_by: int | str | None
    closes: str | None  # the close reason, when this turn closed the channel


@attrs.frozen
class RunResult:
    channel_id: str
    turns: tuple[TurnRecord, ...]
    close_reason: str | None
    context_vars: dict[str, Any]
    turn_count: int
    stalled_on: str | None = None
    error: str | None = None
    violations: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` shape of ``docs/runtime.md``."""
        out: dict[str, Any] = {
            "turns": [{"speaker": t.speaker, "kind": t.kind, "routing": t.routing}
                      for t in self.turns],
            "close_reason": self.close_reason,
            "context_vars": self.context_vars,
            "turn_count": self.turn_count,
        }
        if self.stalled_on is not None:
            out["stalled_on"] = self.stalled_on
        return out


def transcript(envelopes: Sequence[Envelope], adapter: WorkflowAdapter | None = None
               ) -> tuple[list[TurnRecord], str | None, WorkflowState | None]:
    """Re-fold a workflow channel's WAL into turn records, its close reason and state."""
    from flowc.runtime.adapters.base import ChannelMetadata

    if not envelopes or envelopes[0].event_type != EV_CHANNEL_OPENED:
        return [], None, None
    metadata = ChannelMetadata.from_dict(envelopes[0].event_data["metadata"])
    names = {p.agent_id: (p.name or p.agent_id) for p in metadata.participants}
    ad = adapter or WorkflowAdapter()
    state = ad.initial_state(metadata)
    records: list[TurnRecord] = []
    pending_set: dict[str, Any] = {}
    pending_delete: list[str] = []
    close: str | None = None
    for env in envelopes[1:]:
        if env.event_type == EV_CHANNEL_CLOSED:
            close = env.event_data.get("reason")
            if records and records[-1].closes is None:
                records[-1] = attrs.evolve(records[-1], closes=close)
            break
        state = ad.fold(env, state)
        if env.event_type == EV_CONTEXT_SET:
            for k in env.event_data.get("delete") or []:
                pending_set.pop(k, None)
                pending_delete.append(k)
            pending_set.update(env.event_data.get("set") or {})
            continue
        if env.event_type not in (EV_TEXT, EV_PACKET):
            continue
        routing = env.event_data.get("routing") if env.event_type == EV_PACKET else None
        if env.event_type == EV_PACKET:
            upd = env.event_data.get("context_updates") or {}
            for k in upd.get("delete") or []:
                pending_set.pop(k, None)
                pending_delete.append(k)
            pending_set.update(upd.get("set") or {})
        nxt = state.expected_next_speaker
        records.append(TurnRecord(
            len(records) + 1, names.get(env.sender_id, env.sender_id), env.sender_id,
            "packet" if env.event_type == EV_PACKET else "text", routing, envelope_text(env),
            pending_set, tuple(pending_delete), None if nxt is None else names.get(nxt, nxt),
            state.decided_by, None,
        ))
        pending_set, pending_delete = {}, []
    return records, close, state


# ── running a script ──────────────────────────────────────────────────────────

AgentFn = Callable[[Turn], Awaitable[Any]]


async def run_script(
    target: RunTarget,
    script: Script,
    *,
    store: WalStore | None = None,
    agents: Mapping[str, AgentFn] | None = None,
    ask_human: Callable[[str, Turn | None], Awaitable[str | None]] | None = None,
    expectations: Sequence[Expectation] | None = None,
    labels: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> RunResult:
    """Run ``target`` with scripted speakers (and real ``agents``) on a fresh hub.

    ``agents`` maps speaker names to async callables that take those speakers' turns;
    ``ask_human(name, turn)`` answers for humans that the script does not cover.
    """
    target = target.with_script_facts(script)
    check_script(target, script)
    real = dict(agents or {})
    unknown = sorted(set(real) - set(target.speakers))
    if unknown:
        raise ScriptError(f"--agents names no speaker of this flow: {', '.join(unknown)}")
    both = sorted(s for s in real if script.turns.get(s))
    if both:
        raise ScriptError(f"{', '.join(both)}: both scripted and given as agents; "
                          "a speaker is one or the other")
    hub = await Hub.open(store)
    queues: dict[str, deque[ScriptTurn]] = {s: deque(script.turns.get(s, ())) for s in target.speakers}
    kickoff = script.kickoff
    if kickoff is None and queues[target.start] and target.start not in real:
        first = queues[target.start].popleft()
        kickoff_turn: ScriptTurn | None = first
    else:
        kickoff_turn = None
    ch_box: list[Channel] = []

    def scripted_agent(name: str) -> AgentFn:
        async def take(turn: Turn) -> Reply | None:
            q = queues[name]
            return reply_for(target, name, q.popleft()) if q else None
        return take

    for name in target.speakers:
        aid = target.ids[name]
        if name in real:
            hub.register_agent(name, real[name], agent_id=aid)
        elif name in target.humans:
            human = hub.register_human(name, agent_id=aid, buffer=False)
            human.on_envelope(_human_driver(hub, human, name, target, queues[name], ch_box, ask_human))
        else:
            hub.register_agent(name, scripted_agent(name), agent_id=aid)
    all_labels = {"flow": target.label, "rules": list(target.rule_texts), **(labels or {})}
    ch = hub.open_channel(target.ids[target.creator], "workflow",
                          [target.ids[s] for s in target.speakers], target.knobs,
                          expectations=expectations, labels=all_labels)
    ch_box.append(ch)
    start_id = target.ids[target.start]
    try:
        if kickoff is not None:
            hub.admit(Envelope(ch.channel_id, start_id, None, EV_TEXT, {"text": kickoff}))
        elif kickoff_turn is not None:
            _post_turn(hub, ch, target, target.start, kickoff_turn, kickoff=True)
        else:
            client = hub.client(start_id)
            if isinstance(client, AgentClient):
                await client.take_turn(ch, Envelope(ch.channel_id, start_id, None, EV_TEXT, {}))
            elif isinstance(client, HumanClient) and ask_human is not None:
                text = await ask_human(target.start, None)
                if text is None:
                    hub.stall(ch.channel_id, start_id)
                else:
                    hub.admit(Envelope(ch.channel_id, start_id, None, EV_TEXT, {"text": text}))
            else:
                hub.stall(ch.channel_id, start_id)
        await asyncio.wait_for(ch.done.wait(), timeout)
        await hub.idle()
    except ProtocolError as err:
        ch.error = str(err)
        ch.stalled_on = ch.stalled_on or target.start
    finally:
        await hub.close(close_store=False)
    return _result(hub, ch, target)


def _post_turn(hub: Hub, ch: Channel, target: RunTarget, name: str, turn: ScriptTurn,
               *, kickoff: bool = False) -> bool:
    """Post one scripted turn; ``False`` when it says nothing and routes nothing."""
    aid = target.ids[name]
    if name in target.humans or (kickoff and not turn.calls):
        reply = reply_for(target, name, turn)
        sets, deletes = merge_context_writes(reply.tool_calls)
        if sets or deletes:
            hub.admit(Envelope(ch.channel_id, aid, None, EV_CONTEXT_SET,
                               {"set": sets, "delete": deletes}))
        hub.admit(Envelope(ch.channel_id, aid, None, EV_TEXT, {"text": turn.say}))
        return True
    envs = ch.adapter.build_round_envelopes(  # type: ignore[attr-defined]
        ch.metadata, ch.state, aid, reply_for(target, name, turn), hub.name_to_id())
    for env in envs:
        hub.admit(env)
    return any(e.event_type in (EV_TEXT, EV_PACKET) for e in envs)


def _human_driver(hub: Hub, human: HumanClient, name: str, target: RunTarget,
                  queue: deque[ScriptTurn], ch_box: list[Channel],
                  ask_human: Callable[[str, Turn | None], Awaitable[str | None]] | None,
                  ) -> Callable[[Envelope], None]:
    loop = asyncio.get_running_loop()

    def act() -> None:
        ch = ch_box[0]
        if not ch.is_open or ch.expected_next() != human.agent_id:
            return
        if queue:
            try:
                _post_turn(hub, ch, target, name, queue.popleft())
            except ProtocolError as err:
                hub.stall(ch.channel_id, human.agent_id, str(err))
        elif ask_human is not None:
            async def ask() -> None:
                turn = Turn(ch.channel_id, human.agent_id, name, ch.recent[-1], tuple(ch.recent),
                            dict(ch.state.context_vars))
                text = await ask_human(name, turn)
                if text is None:
                    hub.stall(ch.channel_id, human.agent_id)
                elif ch.is_open:
                    try:
                        hub.admit(Envelope(ch.channel_id, human.agent_id, None, EV_TEXT,
                                           {"text": text}))
                    except ProtocolError as err:
                        hub.stall(ch.channel_id, human.agent_id, str(err))
            task = loop.create_task(ask())
            hub._tasks.add(task)
            task.add_done_callback(hub._tasks.discard)
        else:
            hub.stall(ch.channel_id, human.agent_id)

    def on_envelope(env: Envelope) -> None:
        if env.event_type in (EV_TEXT, EV_PACKET) and ch_box and ch_box[0].is_open:
            loop.call_soon(act)

    return on_envelope


def _result(hub: Hub, ch: Channel, target: RunTarget) -> RunResult:
    records, close, state = transcript(hub.read_wal(ch.channel_id))
    names = target.names
    stalled = None
    if ch.status is not ChannelState.CLOSED:
        who = ch.stalled_on or ch.expected_next()
        stalled = names.get(who, who) if who else None
    return RunResult(
        ch.channel_id, tuple(records), close,
        dict(state.context_vars) if state is not None else {},
        state.turn_count if state is not None else 0, stalled, ch.error, tuple(ch.violations),
    )


def run_script_sync(target: RunTarget, script: Script, **kwargs: Any) -> RunResult:
    """:func:`run_script` in a fresh event loop."""
    return asyncio.run(run_script(target, script, **kwargs))


# ── scenarios ─────────────────────────────────────────────────────────────────


@attrs.frozen
class ScenarioResult:
    title: str
    line: int
    passed: bool
    failure: str | None
    turns: int


def _scenario_turn(item: n.Turn, index: int) -> tuple[str, ScriptTurn]:
    where = f"line {item.span.line}"
    speaker = item.speaker.value
    if isinstance(item, n.SayTurn):
        return speaker, ScriptTurn(item.text.value, (), where)
    text = item.text.value if getattr(item, "text", None) is not None else ""  # type: ignore[union-attr]
    if isinstance(item, n.CallTurn):
        args = item.args.value if item.args is not None else {}
        if not isinstance(args, dict):
            raise ScriptError(f"{where}: `with` takes a JSON object of args")
        return speaker, ScriptTurn(text, (ScriptCall(item.tool.value, dict(args)),), where)
    if isinstance(item, n.SetTurn):
        sets = {a.key.value: a.value.value for a in item.assigns}
        return speaker, ScriptTurn(text, (ScriptCall(set=sets),), where)
    if isinstance(item, n.ClearTurn):
        return speaker, ScriptTurn(text, (ScriptCall(delete=tuple(k.value for k in item.keys)),),
                                   where)
    if isinstance(item, n.HandoffTurn):
        return speaker, ScriptTurn(text, (ScriptCall(handoff=item.target.value),), where)
    reason = item.reason.value if item.reason is not None else "finished"
    return speaker, ScriptTurn("", (ScriptCall(finish=reason),), where)


def _items(sc: n.Scenario) -> Iterator[n.ScenarioItem]:
    yield from sc.items


def run_scenario(target: RunTarget, scenario: n.Scenario) -> ScenarioResult:
    """Run one ``scenario`` block line by line; stop at the first divergence."""
    return asyncio.run(_run_scenario(target, scenario))


async def _run_scenario(target: RunTarget, sc: n.Scenario) -> ScenarioResult:
    hub = await Hub.open()
    names = target.names
    for name in target.speakers:
        hub.register_human(name, agent_id=target.ids[name], buffer=False)
    ch = hub.open_channel(target.ids[target.creator], "workflow",
                          [target.ids[s] for s in target.speakers], target.knobs,
                          expectations=())
    title = sc.title.value
    turn_no = 0

    def chosen() -> str:
        st: WorkflowState = ch.state
        if not ch.is_open:
            return f"the run had already ended: {format_value(ch.close_reason)}"
        nxt = st.expected_next_speaker
        return f"the graph chose {names.get(nxt or '', nxt)} ({target.describe_decision(st.decided_by)})"

    def fail(msg: str) -> ScenarioResult:
        return ScenarioResult(title, sc.span.line, False, msg, turn_no)

    try:
        for item in _items(sc):
            if isinstance(item, n.SayTurn | n.CallTurn | n.SetTurn | n.ClearTurn
                          | n.HandoffTurn | n.FinishTurn):
                turn_no += 1
                speaker, turn = _scenario_turn(item, turn_no)
                where = f"turn {turn_no} (line {item.span.line})"
                if not ch.is_open:
                    return fail(f"{where}: expected {speaker}, but the run had already ended: "
                                f"{format_value(ch.close_reason)}")
                expected = ch.expected_next()
                if expected != target.ids.get(speaker, speaker):
                    return fail(f"{where}: expected {speaker}, {chosen()}")
                try:
                    posted = _post_turn(hub, ch, target, speaker, turn, kickoff=turn_no == 1)
                except (ScriptError, ProtocolError) as err:
                    return fail(f"{where}: {err}")
                if not posted:
                    return fail(f"{where}: {speaker}'s turn says nothing and routes nothing, so "
                                "the run stalls here (as in AG2, a silent round posts no packet; "
                                "context writes alone do not take a turn): give the turn a text")
            elif isinstance(item, n.ExpectNext):
                want = item.speaker.value
                if not ch.is_open or ch.expected_next() != target.ids.get(want, want):
                    return fail(f"line {item.span.line}: expected {want} next, {chosen()}")
            elif isinstance(item, n.ExpectTerminate):
                want_reason = item.reason.value if item.reason is not None else None
                if ch.is_open:
                    return fail(f"line {item.span.line}: expected the run to end"
                                f"{' with ' + format_value(want_reason) if want_reason else ''}, "
                                f"but {chosen()}")
                if want_reason is not None and ch.close_reason != want_reason:
                    return fail(f"line {item.span.line}: expected the run to end with "
                                f"{format_value(want_reason)}, it ended with {format_value(ch.close_reason)}")
            elif isinstance(item, n.ExpectContext):
                key, want_value = item.key.value, item.value.value
                have = ch.state.context_vars.get(key)
                if have != want_value or (want_value is not None and key not in ch.state.context_vars):
                    shown = format_value(have) if key in ch.state.context_vars else "unset"
                    return fail(f"line {item.span.line}: expected context.{key} == "
                                f"{format_value(want_value)}, it is {shown}")
            elif isinstance(item, n.ExpectTurns):
                have_turns = ch.state.turn_count
                if have_turns != item.count.value:
                    return fail(f"line {item.span.line}: expected {item.count.value} turns, "
                                f"the run has {have_turns}")
    finally:
        await hub.close()
    return ScenarioResult(title, sc.span.line, True, None, turn_no)


def run_flow(
    flow: CompiledFlow | Mapping[str, Any],
    script: Script | Mapping[str, Any],
    *,
    store: WalStore | None = None,
    agents: Mapping[str, AgentFn] | None = None,
) -> RunResult:
    """Run a compiled flow, or a graph / knobs dict, with a script (``flowc.run``).

    >>> import flowc
    >>> flow = flowc.compile_flow("speaker a: human\\nspeaker b\\nsequence a -> b")
    >>> flowc.run(flow, {"kickoff": "hi", "script": {"b": ["hello"]}}).close_reason
    'sequence_complete'
    """
    from flowc.compiler.serde import structure_graph, structure_knobs

    if isinstance(flow, CompiledFlow):
        target = RunTarget.from_compiled(flow)
    elif "graph" in flow and "initial_speaker" not in flow:
        knobs = structure_knobs(dict(flow))
        target = RunTarget.from_graph(knobs.graph, knobs.context_vars)
    else:
        target = RunTarget.from_graph(structure_graph(dict(flow)))
    parsed = script if isinstance(script, Script) else parse_script(dict(script))
    return asyncio.run(run_script(target, parsed, store=store, agents=agents))
