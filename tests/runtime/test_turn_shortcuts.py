"""The per-turn shortcuts of a run give what the plain computations give.

A run asks who speaks next several times per turn, folds each envelope once for the
hub and hands that fold to the transcript, posts a scripted human's plain text without
building a reply, delivers a broadcast to a kept list of clients and describes each
routing decision once. Each shortcut is checked here against the computation it stands
for, on runs that go through handoffs, finishes, tool calls and context writes.
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

import attrs
import pytest

import flowc
from flowc.commands.run_output import RunPrinter, format_turns, remembered, trailer
from flowc.runtime import EV_TEXT, Envelope, Hub, MemoryStore
from flowc.runtime.adapters.workflow import WorkflowAdapter, WorkflowState, merge_context_writes
from flowc.runtime.envelope import stamped
from flowc.runtime.script import ScriptTurn, parse_script
from flowc.runtime.script_run import run_script_sync
from flowc.runtime.scripted_replies import check_human_turn, reply_for
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import TranscriptFolder, TurnRecord, _record, transcript
from flowc.runtime.watch import WatchedStore

FLOW = """flow shortcuts "every kind of turn"
speaker user: human
speaker drafter {
  tool note sets n = 1
  tool pass_on hands off to reviewer
}
speaker reviewer {
  tool approve sets done = true
  tool stop finishes "stopped"
}
start user
max_turns 40
context done = false
when context.done == true then terminate "approved"
when tool note then reviewer
when from user then drafter
when from drafter then reviewer
when from reviewer then user
"""

SCRIPT = {
    "kickoff": "brief",
    "script": {
        "drafter": [
            "draft 1",
            {"tool": "pass_on", "say": "yours"},
            {"tool": "note", "say": "noted"},
        ],
        "reviewer": [
            "again",
            "more",
            {"tool": "approve", "say": "fine", "args": {"why": "x" * 80}},
        ],
        "user": ["go on", "and\nagain"],
    },
}

#: the same run, ended by the reviewer's `finish` tool instead
FINISHING = {
    "kickoff": "brief",
    "script": {
        "drafter": ["draft 1", {"tool": "note", "say": "noted"}],
        "reviewer": ["again", {"tool": "stop", "say": "enough"}],
        "user": ["go on"],
    },
}


def _target() -> RunTarget:
    return RunTarget.from_compiled(flowc.compile_flow(FLOW), source_text=FLOW)


class _Keep:
    def __init__(self) -> None:
        self.states: list[WorkflowState | None] = []

    def opened(self, run_id: str) -> None:
        pass

    def turn(self, record: Any, state: WorkflowState | None) -> None:
        self.states.append(state)


def test_the_streamed_transcript_is_the_refold_of_the_wal() -> None:
    """The transcript takes the hub's fold of each envelope: it must be what folding
    the stored WAL from the start gives (records, close, final state)."""
    store = MemoryStore()
    watch = _Keep()
    result = run_script_sync(
        _target(), parse_script(SCRIPT), store=store, watch=watch, channel_id="wf-shortcuts"
    )
    records, close, state = transcript(list(store.read("wf-shortcuts")))
    assert result.close_reason == close == "approved"
    assert list(result.turns) == records and len(records) == 9
    assert [(r.routing or {}).get("kind") for r in records] == [
        None,
        "text",
        "text",
        None,
        "handoff",
        "text",
        None,
        "handoff",
        "text",
    ]
    assert records[-1].context_set == {"done": True} and records[-1].closes == "approved"
    assert state is not None and result.context_vars == state.context_vars
    assert result.turn_count == state.turn_count
    # each turn's state as streamed is the re-fold's state after that turn
    folder = TranscriptFolder()
    refolded = []
    for env in store.read("wf-shortcuts"):
        if folder.feed(env) is not None:
            refolded.append(folder.state)
    assert watch.states == refolded


def test_a_hub_adapter_other_than_the_plain_one_is_not_taken_for_the_transcript() -> None:
    """Only a plain workflow adapter's fold stands for the transcript's own: a hub
    whose workflow adapter folds otherwise leaves the transcript folding by itself."""

    class Marking(WorkflowAdapter):
        def fold(self, envelope: Envelope, state: WorkflowState) -> WorkflowState:
            new = super().fold(envelope, state)
            return new if new is state else attrs.evolve(new, decided_by="marked")

    async def go() -> tuple[list[Any], list[Envelope]]:
        watched = WatchedStore(MemoryStore(), _Keep())
        hub = await Hub.open(watched, adapters=[Marking()])
        a, _ = hub.register_human("a"), hub.register_human("b")
        graph = {
            "initial_speaker": "a",
            "max_turns": 3,
            "transitions": [
                {
                    "when": {"name": "always", "args": {}},
                    "then": {"name": "round_robin", "args": {}},
                    "priority": 0,
                }
            ],
            "default_target": {"name": "terminate", "args": {"reason": "done"}},
        }
        ch = await a.open("workflow", target=["b"], knobs={"graph": graph})
        await a.send(ch.channel_id, "hi")
        assert hub.channel(ch.channel_id).state.decided_by == "marked"
        await hub.close()
        return watched.folder.records, hub.read_wal(ch.channel_id)

    records, envs = asyncio.run(go())
    assert records == transcript(envs)[0]
    assert records[0].decided_by == 0


def test_expected_next_without_the_turn_object_agrees_with_the_hook() -> None:
    adapter = WorkflowAdapter()
    folder = TranscriptFolder(adapter)
    store = MemoryStore()
    run_script_sync(_target(), parse_script(SCRIPT), store=store, channel_id="wf-next")
    seen = []
    for env in store.read("wf-next"):
        folder.feed(env)
        state = folder.state
        if state is None:
            continue
        assert folder.metadata is not None
        turn = adapter.expected_next(folder.metadata, state)
        assert adapter.next_speaker_id(state) == (None if turn is None else str(turn.agent_id))
        seen.append(adapter.next_speaker_id(state))
    assert {"user", "drafter", "reviewer"} <= set(seen)


def test_a_text_turn_needs_no_reply() -> None:
    """A scripted turn with no calls is posted (a human's, a kickoff) as its text alone
    and not checked before the run: the general path (check, reply, context writes)
    would give exactly that and refuse nothing."""
    target = _target()
    for say in ("", "hi", "multi\nline"):
        turn = ScriptTurn(say, (), "script.user[0]")
        check_human_turn(target, "user", turn)
        for speaker in target.speakers:
            reply = reply_for(target, speaker, turn)
            assert reply.text == say and reply.tool_calls == ()
            assert merge_context_writes(reply.tool_calls) == ({}, [])


def test_stamped_envelopes_and_records_are_the_frozen_classes() -> None:
    """The hub's and the transcript's cheap builders give objects equal to, as frozen
    as and of the very class of what ``__init__`` builds, with every field set."""
    values: dict[str, Any] = {
        "channel_id": "c",
        "sender_id": "a",
        "audience": ("b",),
        "event_type": EV_TEXT,
        "event_data": {"text": "hi"},
        "envelope_id": "e1",
        "task_id": "t",
        "causation_id": "e0",
        "trace_id": "tr",
        "priority": "urgent",
        "depth": 2,
        "idempotency_key": "k",
        "created_at": "now",
        "ttl_seconds": 5,
    }
    assert [f.name for f in attrs.fields(Envelope)] == list(values)
    env = stamped(*values.values())
    assert type(env) is Envelope and env == Envelope(**values)
    assert attrs.asdict(env) == values and Envelope.__slots__ == ()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        env.sender_id = "x"  # type: ignore[misc]
    fields: dict[str, Any] = {
        "number": 3,
        "speaker": "b",
        "agent_id": "b-id",
        "kind": "packet",
        "routing": {"kind": "text"},
        "text": "t",
        "context_set": {"k": 1},
        "context_delete": ("d",),
        "next_speaker": "a",
        "decided_by": 2,
        "closes": None,
        "tool_calls": ({"name": "n", "args": {}},),
        "warnings": ({"message": "m"},),
        "violated": ({"property": "p", "turn": 3},),
    }
    assert [f.name for f in attrs.fields(TurnRecord)] == list(fields)
    record = _record(*fields.values())
    assert type(record) is TurnRecord and record == TurnRecord(**fields)
    assert attrs.asdict(record, recurse=False) == fields
    assert attrs.evolve(record, closes="x").closes == "x" and TurnRecord.__slots__ == ()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        record.text = "x"  # type: ignore[misc]


@pytest.mark.parametrize("script", [SCRIPT, FINISHING], ids=["approved", "finished"])
def test_printed_turns_are_the_plain_formatting_of_the_wal(script: dict[str, Any]) -> None:
    """What `flowc run` prints as the run goes (decisions described once each) is the
    transcript of the stored run formatted with the target's own descriptions."""
    target = _target()
    out = io.StringIO()
    printer = RunPrinter(target, "text", out=out, err=io.StringIO(), progress=False)
    store = MemoryStore()
    result = run_script_sync(
        target, parse_script(script), store=store, watch=printer, channel_id="wf-print"
    )
    printer.finish(result)
    records, _, _ = transcript(list(store.read("wf-print")))
    width = max(len(s) for s in target.speakers)
    plain = "".join(line + "\n" for line in format_turns(records, target.describe_decision, width))
    plain += "".join(line + "\n" for line, to_err in trailer(result) if not to_err)
    assert out.getvalue() == plain
    if script is SCRIPT:
        assert "calls: approve(why=" in plain and "and\n" in plain and "[pass_on" in plain
    else:
        assert '■ finish "stopped"  (by tool stop)' in plain
    once = remembered(target.describe_decision)
    for by in (*range(len(target.rule_texts)), "default", "handoff", "finish", None, 0):
        assert once(by) == target.describe_decision(by)


def test_a_client_attached_after_the_channel_opened_gets_its_broadcasts() -> None:
    """Broadcasts go to a kept list of the channel's clients: a client attached later
    (a resumed run registers its clients after hydrating) must be on it."""

    async def go() -> list[str]:
        store = MemoryStore()
        first = await Hub.open(store)
        a = first.register_human("a")
        first.register_human("b")
        graph = {
            "initial_speaker": "a",
            "max_turns": None,
            "transitions": [
                {
                    "when": {"name": "always", "args": {}},
                    "then": {"name": "round_robin", "args": {}},
                    "priority": 0,
                }
            ],
            "default_target": {"name": "terminate", "args": {"reason": "done"}},
        }
        ch = await a.open("workflow", target=["b"], knobs={"graph": graph})
        await a.send(ch.channel_id, "one")
        await first.close(close_store=False)
        hub = await Hub.open(store)
        await hub.hydrate([ch.channel_id], schedule=False)
        b = hub.register_human("b", buffer=True)
        hub.admit(Envelope(ch.channel_id, "b", None, EV_TEXT, {"text": "two"}))
        late = hub.register_human("a", buffer=True)
        hub.admit(Envelope(ch.channel_id, "a", None, EV_TEXT, {"text": "three"}))
        got_b = [e.event_data.get("text") for e in list(b._inbox)]
        got_a = [e.event_data.get("text") for e in list(late._inbox)]
        await hub.close()
        return [*got_b, "|", *got_a]

    assert asyncio.run(go()) == ["two", "three", "|", "three"]


RR = """speaker a: human
speaker b: human
speaker c: human
start a
max_turns {turns}
when from a then b
when from b then c
when from c then a
"""


def _rr(turns: int) -> tuple[RunTarget, Any]:
    flow = flowc.compile_flow(RR.format(turns=turns))
    per = turns // 3 + 1
    return RunTarget.from_compiled(flow), parse_script({"script": {s: ["t"] * per for s in "abc"}})


def test_scripted_turns_run_back_to_back_but_the_loop_still_gets_its_rounds() -> None:
    """Scripted humans' turns run several in one loop callback (the relay), yet a long
    scripted stretch never starves the event loop: another task gets a round at
    least every `_Relay.TURNS` turns."""
    from flowc.runtime.script_run import _Relay, run_script

    turns = 20 * _Relay.TURNS
    target, script = _rr(turns)

    async def go() -> tuple[int, int]:
        rounds = 0

        async def count() -> None:
            nonlocal rounds
            while True:
                await asyncio.sleep(0)
                rounds += 1

        counter = asyncio.get_running_loop().create_task(count())
        result = await run_script(target, script)
        counter.cancel()
        return result.turn_count, rounds

    done, rounds = asyncio.run(go())
    assert done == turns
    assert turns // _Relay.TURNS - 2 <= rounds < turns // 4


def test_a_cancelled_run_stops_between_two_turns_at_once() -> None:
    """Cancelling the run's task in the middle of a scripted stretch (what Ctrl-C and a
    closed output do) stops it after the turn in hand, and the run stays open. (Before
    the relay, a scripted human took one more turn in each of the event loop's last
    rounds while `asyncio.run` wound down: 16 turns for a cancel at turn 10.)"""
    from flowc.runtime.script_run import run_script

    target, script = _rr(3000)
    store = MemoryStore()

    class CancelAt:
        def __init__(self) -> None:
            self.task: asyncio.Task[Any] | None = None
            self.seen = 0

        def opened(self, run_id: str) -> None:
            self.task = asyncio.current_task()

        def turn(self, record: Any, state: Any) -> None:
            self.seen += 1
            if record.number == 10 and self.task is not None:
                self.task.cancel()

    watch = CancelAt()

    async def go() -> None:
        await run_script(target, script, store=store, watch=watch, channel_id="wf-cut")

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(go())
    written = [e for e in store.read("wf-cut") if e.event_type == EV_TEXT]
    assert len(written) == 10 and watch.seen == 10
    assert not any(e.event_type.endswith("closed") for e in store.read("wf-cut"))


def _broadcast_hub() -> tuple[Hub, list[Any], str]:
    hub = Hub(MemoryStore())
    humans = [hub.register_human(n, buffer=False) for n in "abc"]
    graph = {
        "initial_speaker": "a",
        "max_turns": None,
        "transitions": [
            {
                "when": {"name": "always", "args": {}},
                "then": {"name": "round_robin", "args": {}},
                "priority": 0,
            }
        ],
        "default_target": {"name": "terminate", "args": {"reason": "done"}},
    }
    ch = hub.open_channel("a", "workflow", ["a", "b", "c"], {"graph": graph})
    return hub, humans, ch.channel_id


def test_a_delivery_that_admits_another_envelope_keeps_the_queue_order() -> None:
    """Broadcasts go straight to the clients when nothing is queued; an envelope admitted
    while one is being delivered still reaches everyone after it, in order."""
    hub, humans, cid = _broadcast_hub()
    seen: list[tuple[str, str]] = []
    for h in humans:

        def record(env: Envelope, name: str = h.name) -> None:
            text = env.event_data.get("text")
            if text is not None:
                seen.append((name, text))
            if name == "a" and text == "one":  # b answers at once, inside the delivery
                hub.admit(Envelope(cid, "b", None, EV_TEXT, {"text": "two"}))

        h.on_envelope(record)
    hub.admit(Envelope(cid, "a", None, EV_TEXT, {"text": "one"}))
    assert seen == [
        ("a", "one"),
        ("b", "one"),
        ("c", "one"),
        ("a", "two"),
        ("b", "two"),
        ("c", "two"),
    ]


def test_a_client_that_fails_on_a_broadcast_leaves_the_others_theirs_for_later() -> None:
    """A client raising in the middle of a broadcast stops the delivery there; the
    clients after it get the envelope first thing at the next delivery (as when every
    delivery went through the queue)."""
    hub, humans, cid = _broadcast_hub()
    seen: list[tuple[str, str]] = []
    failing = [True]
    for h in humans:

        def record(env: Envelope, name: str = h.name) -> None:
            text = env.event_data.get("text")
            if name == "b" and text == "one" and failing[0]:
                failing[0] = False
                raise RuntimeError("b's callback failed")
            if text is not None:
                seen.append((name, text))

        h.on_envelope(record)
    with pytest.raises(RuntimeError):
        hub.admit(Envelope(cid, "a", None, EV_TEXT, {"text": "one"}))
    assert seen == [("a", "one")]
    hub.admit(Envelope(cid, "b", None, EV_TEXT, {"text": "two"}))
    assert seen == [("a", "one"), ("c", "one"), ("a", "two"), ("b", "two"), ("c", "two")]


class _IdOnly:
    """A watcher that wants the run id only (`flowc run --json` away from a terminal)."""

    wants_turns = False

    def opened(self, run_id: str) -> None:
        self.run_id = run_id

    def turn(self, record: Any, state: Any) -> None:
        raise AssertionError("no turn is shown to a watcher that wants none")


def test_a_run_watched_for_its_id_only_keeps_the_transcript_from_the_hubs_folds() -> None:
    """With a watcher that wants no turns, the transcript is still kept from the hub's
    folds (nothing folded twice, no re-fold of the WAL at the end) and is the WAL's."""
    store = MemoryStore()
    watch = _IdOnly()
    result = run_script_sync(
        _target(), parse_script(SCRIPT), store=store, watch=watch, channel_id="wf-id-only"
    )
    assert watch.run_id == "wf-id-only"
    records, close, state = transcript(list(store.read("wf-id-only")))
    assert list(result.turns) == records and result.close_reason == close == "approved"
    assert state is not None and result.context_vars == state.context_vars


def test_the_transcript_starts_from_the_hubs_initial_state() -> None:
    """The opening envelope comes with the hub's initial state: the transcript does not
    compile the graph a second time."""

    async def go() -> tuple[Any, Any]:
        watched = WatchedStore(MemoryStore(), _IdOnly())
        hub = await Hub.open(watched)
        a, _ = hub.register_human("a"), hub.register_human("b")
        graph = {
            "initial_speaker": "a",
            "max_turns": None,
            "transitions": [],
            "default_target": {"name": "terminate", "args": {"reason": "done"}},
        }
        ch = await a.open("workflow", target=["b"], knobs={"graph": graph})
        await hub.close()
        return watched.folder.state, hub.channel(ch.channel_id).state

    mine, hubs = asyncio.run(go())
    assert mine is hubs and mine.table is not None


def test_without_the_hubs_folds_a_run_watched_for_its_id_only_is_re_folded() -> None:
    """A hub adapter whose folds are not the transcript's: a watcher that wants no turns
    makes the transcript give up (it would have to fold every turn), and the run's
    result is the re-fold of its WAL, as before."""

    class Other(WorkflowAdapter):
        pass

    async def go() -> tuple[WatchedStore, list[Envelope]]:
        watched = WatchedStore(MemoryStore(), _IdOnly())
        hub = await Hub.open(watched, adapters=[Other()])
        a, _ = hub.register_human("a"), hub.register_human("b")
        graph = {
            "initial_speaker": "a",
            "max_turns": 2,
            "transitions": [
                {
                    "when": {"name": "always", "args": {}},
                    "then": {"name": "round_robin", "args": {}},
                    "priority": 0,
                }
            ],
            "default_target": {"name": "terminate", "args": {"reason": "done"}},
        }
        ch = await a.open("workflow", target=["b"], knobs={"graph": graph})
        await a.send(ch.channel_id, "hi")
        await hub.close()
        return watched, hub.read_wal(ch.channel_id)

    watched, envs = asyncio.run(go())
    assert watched.partial and watched.folder.records == [] and len(transcript(envs)[0]) == 1


def test_envelope_ids_and_stamps_keep_their_shape() -> None:
    """Ids are the hub's prefix and an 8-digit hex counter, stamps UTC with microseconds."""
    import re

    hub, _, cid = _broadcast_hub()
    hub.admit(Envelope(cid, "a", None, EV_TEXT, {"text": "one"}))
    envs = hub.read_wal(cid)
    prefix = envs[0].envelope_id.split("-")[0]
    assert [e.envelope_id for e in envs] == [f"{prefix}-{i:08x}" for i in (1, 2)]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", e.created_at) for e in envs)


def test_the_routing_tools_are_found_once_per_graph() -> None:
    """An agent round asks which tools route (AG2's ``_resolve_routing``): the compiled
    graph keeps the answer, which is the walk over the graph's rules."""
    from flowc.compiler.serde import structure_graph
    from flowc.runtime.adapters.workflow import compile_graph, tool_rule_names

    def tool(name: str) -> dict[str, Any]:
        return {"name": "tool_called", "args": {"tool_name": name}}

    when = [
        tool("a"),
        {
            "name": "all_of",
            "args": {"conditions": [tool("b"), {"name": "not", "args": {"condition": tool("c")}}]},
        },
        {"name": "from_speaker", "args": {"agent_id": "x"}},
    ]
    graph = structure_graph(
        {
            "initial_speaker": "x",
            "max_turns": None,
            "default_target": {"name": "terminate", "args": {"reason": "done"}},
            "transitions": [
                {"when": w, "then": {"name": "agent", "args": {"agent_id": "y"}}, "priority": 0}
                for w in when
            ],
        }
    )
    table = compile_graph(graph, ("x", "y"))
    assert table.routing_tools == tool_rule_names(graph) == {"a", "b", "c"}
    assert (
        compile_graph(
            structure_graph(
                {
                    **{"initial_speaker": "x", "max_turns": None},
                    "default_target": {"name": "terminate", "args": {"reason": "done"}},
                    "transitions": [],
                }
            ),
            ("x",),
        ).routing_tools
        == set()
    )


def test_name_to_id_follows_the_clients_and_is_the_callers_own() -> None:
    hub = Hub(MemoryStore())
    hub.register_human("a", agent_id="id-a")
    first = hub.name_to_id()
    assert first == {"a": "id-a"}
    first["zz"] = "mutated"
    assert hub.name_to_id() == {"a": "id-a"}
    hub.register_agent("b", lambda turn: None, agent_id="id-b")  # type: ignore[arg-type, return-value]
    assert hub.name_to_id() == {"a": "id-a", "b": "id-b"}
