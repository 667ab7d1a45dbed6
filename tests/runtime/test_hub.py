"""The hub: admission through the WAL, clients, hydrate, expectations, a second adapter."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import attrs
import pytest

from flowc.runtime import (
    EV_CHANNEL_CLOSED,
    EV_CHANNEL_OPENED,
    EV_CONTEXT_SET,
    EV_EXPECTATION_VIOLATED,
    EV_PACKET,
    EV_TEXT,
    AdapterResult,
    ChannelManifest,
    ChannelMetadata,
    ChannelState,
    Envelope,
    Expectation,
    Finish,
    Handoff,
    Hub,
    MemoryStore,
    ProtocolError,
    Reply,
    SqliteStore,
    ToolCall,
    Turn,
)
from flowc.runtime.wal import WalError
from tests.pgcluster import DURABLE, STORES, StoreMaker
from tests.runtime.graphs import always, cond, ctx, frm, graph, rule, term, to, tool

RR3 = graph(
    "a", rule(always(), cond("round_robin")), default=term("round_robin_complete"), max_turns=6
)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ── WAL stores ──────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("kind", STORES)
def test_store_keeps_order_and_refuses_duplicates(kind: str, make_store: StoreMaker) -> None:
    store = make_store(kind)
    for i in range(3):
        store.append(Envelope("c1", "a", None, EV_TEXT, {"i": i}, envelope_id=f"e{i}"))
    store.append(Envelope("c0", "a", ("b",), EV_TEXT, {}, envelope_id="x"))
    with pytest.raises(WalError, match="duplicate"):
        store.append(Envelope("c1", "a", None, EV_TEXT, {}, envelope_id="e1"))
    assert [e.event_data["i"] for e in store.read("c1")] == [0, 1, 2]
    assert store.channel_ids() == ["c1", "c0"]
    assert next(iter(store.read("c0"))).audience == ("b",)


@pytest.mark.parametrize("kind", DURABLE)
def test_a_durable_store_survives_reopening(
    kind: str, make_store: StoreMaker, tmp_path: Path
) -> None:
    store = make_store(kind)
    store.append(Envelope("c", "a", None, EV_TEXT, {"text": "hi"}, envelope_id="e"))
    store.close()
    if kind == "sqlite":
        assert (tmp_path / "wal.db").stat().st_size > 0
    again = make_store(kind)
    assert [e.event_data for e in again.read("c")] == [{"text": "hi"}]
    again.close()


# ── admission ───────────────────────────────────────────────────────────────────


def test_envelope_is_in_the_wal_before_it_is_delivered() -> None:
    async def main() -> list[bool]:
        hub = await Hub.open()
        seen: list[bool] = []
        a, b = hub.register_human("a"), hub.register_human("b")

        @b.on_envelope
        def check(env: Envelope) -> None:
            seen.append(any(e.envelope_id == env.envelope_id for e in hub.read_wal(env.channel_id)))

        ch = await a.open("workflow", target=["b"], knobs={"graph": RR3})
        await ch.send("hello")
        return seen

    assert run(main()) == [True, True]


def test_envelopes_are_stamped_at_admission() -> None:
    async def main() -> Envelope:
        hub = await Hub.open()
        a = hub.register_human("a")
        hub.register_human("b")
        ch = await a.open("workflow", target=["b"], knobs={"graph": RR3})
        return await ch.send("hello")

    env = run(main())
    assert env.envelope_id and env.created_at.endswith("Z")


def test_refusals_change_nothing() -> None:
    async def main() -> None:
        hub = await Hub.open()
        a, b = hub.register_human("a"), hub.register_human("b")
        hub.register_human("outsider")
        ch = await a.open("workflow", target=["b"], knobs={"graph": RR3})
        cid = ch.channel_id
        before_state, before_wal = hub.channel(cid).state, hub.read_wal(cid)
        with pytest.raises(ProtocolError, match="expects 'a' to speak, got 'b'"):
            await b.send(cid, "out of turn")
        with pytest.raises(ProtocolError, match="not a participant"):
            await hub.client("outsider").send(cid, "hi")  # type: ignore[union-attr]
        with pytest.raises(ProtocolError, match="routing"):  # the fold fails
            await a.send(cid, event_type=EV_PACKET, event_data={"routing": "nope", "body": "x"})
        with pytest.raises(ProtocolError, match="handoff to 'ghost'"):
            await a.send(
                cid,
                event_type=EV_PACKET,
                event_data={
                    "routing": {"kind": "handoff", "tool": "t", "target": "ghost"},
                    "body": "x",
                },
            )
        assert hub.channel(cid).state is before_state
        assert hub.read_wal(cid) == before_wal

    run(main())


def test_closed_channel_refuses_sends_and_records_the_close() -> None:
    async def main() -> None:
        hub = await Hub.open()
        a, b = hub.register_human("a"), hub.register_human("b")
        g = graph("a", rule(frm("a"), term("done")))
        ch = await a.open("workflow", target=["b"], knobs={"graph": g})
        await ch.send("bye")
        wal = hub.read_wal(ch.channel_id)
        assert [e.event_type for e in wal] == [EV_CHANNEL_OPENED, EV_TEXT, EV_CHANNEL_CLOSED]
        assert wal[-1].event_data["reason"] == "done"
        with pytest.raises(ProtocolError, match="closed"):
            await b.send(ch.channel_id, "late")

    run(main())


def test_a_bad_graph_is_refused_at_open_and_nothing_is_written() -> None:
    async def main() -> None:
        store = MemoryStore()
        hub = await Hub.open(store)
        a = hub.register_human("a")
        hub.register_human("b")
        with pytest.raises(ProtocolError, match=r"transitions\[0\].then.args.agent_id"):
            await a.open(
                "workflow", target=["b"], knobs={"graph": graph("a", rule(always(), to("ghost")))}
            )
        assert store.channel_ids() == []

    run(main())


# ── clients ─────────────────────────────────────────────────────────────────────


def test_agent_client_replies_with_tool_calls_and_effects() -> None:
    async def main() -> tuple[Any, ...]:
        hub = await Hub.open()
        user = hub.register_human("user")
        seen: list[Turn] = []

        async def triage(turn: Turn) -> Reply:
            seen.append(turn)
            return Reply(
                "Escalating.",
                (
                    ToolCall("note", set={"tier": 2}),
                    ToolCall("lookup", {"q": "x"}),  # routes nothing
                    ToolCall("escalate", {"reason": "login"}, result=Handoff("security", "login")),
                    ToolCall("resolve", result=Finish(reason="resolved")),  # too late: first wins
                ),
            )

        async def security(turn: Turn) -> Reply:
            return Reply("Locked.", (ToolCall("close", result=Finish("all good", "resolved")),))

        hub.register_agent("triage", triage)
        hub.register_agent("security", security, agent_id="sec-7f3a")
        g = graph("user", rule(frm("user"), to("triage")), max_turns=10)
        ch = await user.open("workflow", target=["triage", "sec-7f3a"], knobs={"graph": g})
        await ch.send("My account was hacked")
        await ch.wait(timeout=5)
        packets = [e for e in ch.transcript() if e.event_type == EV_PACKET]
        return (
            seen[0].text,
            packets[0].event_data,
            hub.channel(ch.channel_id).close_reason,
            hub.channel(ch.channel_id).state.context_vars,
        )

    text, data, reason, context = run(main())
    assert text == "My account was hacked"
    assert data["routing"] == {
        "kind": "handoff",
        "tool": "escalate",
        "reason": "login",
        "target": "sec-7f3a",
    }
    assert data["context_updates"] == {"set": {"tier": 2}, "delete": []}
    assert (reason, context) == ("resolved", {"tier": 2})


def test_an_agent_that_says_nothing_stalls_the_run() -> None:
    async def main() -> tuple[str | None, str | None]:
        hub = await Hub.open()
        user = hub.register_human("user")

        async def silent(turn: Turn) -> None:
            return None

        hub.register_agent("bot", silent)
        ch = await user.open(
            "workflow", target=["bot"], knobs={"graph": graph("user", rule(frm("user"), to("bot")))}
        )
        await ch.send("hi")
        await ch.wait(timeout=5)
        c = hub.channel(ch.channel_id)
        return c.stalled_on, c.close_reason

    assert run(main()) == ("bot", None)


def test_stay_prompts_the_same_agent_again() -> None:
    """Deliberate difference: AG2 never re-notifies an agent of its own message, so a
    `stay` stalls there; here the agent is asked again."""

    async def main() -> int:
        hub = await Hub.open()
        user = hub.register_human("user")
        calls: list[int] = []

        async def bot(turn: Turn) -> str:
            calls.append(1)
            return f"part {len(calls)}"

        hub.register_agent("bot", bot)
        g = graph("user", rule(frm("user"), to("bot")), rule(frm("bot"), cond("stay")), max_turns=4)
        ch = await user.open("workflow", target=["bot"], knobs={"graph": g})
        await ch.send("go")
        await ch.wait(timeout=5)
        assert hub.channel(ch.channel_id).close_reason == "max_turns"
        return len(calls)

    assert run(main()) == 3


def test_human_client_next_envelope_and_callbacks() -> None:
    async def main() -> None:
        hub = await Hub.open()
        a, b = hub.register_human("a"), hub.register_human("b")
        got: list[str] = []
        b.on_envelope(lambda e: got.append(e.event_type))

        async def later(env: Envelope) -> None:
            got.append("async:" + env.event_type)

        b.on_envelope(later)
        ch = await a.open("workflow", target=["b"], knobs={"graph": RR3})
        await ch.send("one")
        env = await b.next_envelope(lambda e: e.event_type == EV_TEXT, timeout=1)
        assert env.event_data == {"text": "one"}
        with pytest.raises(TimeoutError):
            await b.next_envelope(lambda e: e.event_type == EV_TEXT, timeout=0.05)
        waiter = asyncio.ensure_future(b.next_envelope(lambda e: e.sender_id == "b", timeout=1))
        await asyncio.sleep(0)
        await b.send(ch.channel_id, "two")
        assert (await waiter).event_data == {"text": "two"}
        await asyncio.sleep(0)
        assert got[0] == EV_CHANNEL_OPENED and "async:" + EV_CHANNEL_OPENED in got
        assert got.count(EV_TEXT) == 2 and got.count("async:" + EV_TEXT) == 2

    run(main())


def test_set_context_from_any_participant_lands_before_routing() -> None:
    async def main() -> str | None:
        hub = await Hub.open()
        a, b = hub.register_human("a"), hub.register_human("b")
        g = graph("a", rule(ctx("route", "done"), term("routed")), rule(always(), to("b")))
        ch = await a.open("workflow", target=["b"], knobs={"graph": g})
        await b.set_context(ch.channel_id, set={"route": "done"})
        await ch.send("go")
        return hub.channel(ch.channel_id).close_reason

    assert run(main()) == "routed"


def test_long_runs_have_no_mailbox_limit() -> None:
    """AG2 fails the 2,999th post of a 3-party channel; here 6,000 posts go through."""

    async def main() -> int:
        hub = await Hub.open()
        users = [hub.register_human(n, buffer=False) for n in ("a", "b", "c")]
        g = graph("a", rule(always(), cond("round_robin")), max_turns=6000)
        ch = await users[0].open("workflow", target=["b", "c"], knobs={"graph": g})
        for i in range(6000):
            users[i % 3].send_nowait(ch.channel_id, f"t{i}")
        return int(hub.channel(ch.channel_id).state.turn_count)

    assert run(main()) == 6000


# ── hydrate and replay ──────────────────────────────────────────────────────────


@pytest.mark.parametrize("kind", DURABLE)
def test_hydrate_refolds_the_wal_and_the_run_continues(kind: str, make_store: StoreMaker) -> None:
    g = graph("a", rule(tool("save"), to("a")), rule(always(), cond("round_robin")), max_turns=5)

    async def first() -> str:
        hub = await Hub.open(make_store(kind))
        a, b = hub.register_human("a"), hub.register_human("b")
        ch = await a.open("workflow", target=["b"], knobs={"graph": g, "context_vars": {"n": 0}})
        await ch.send("one")
        await b.send(
            ch.channel_id,
            event_type=EV_PACKET,
            event_data={
                "routing": {"kind": "handoff", "tool": "save", "reason": ""},
                "context_updates": {"set": {"n": 1}, "delete": []},
                "body": "two",
            },
        )
        await hub.close()  # releases its lease: the run is free to continue
        return ch.channel_id

    cid = run(first())

    async def second() -> None:
        hub = await Hub.open(make_store(kind))
        assert await hub.hydrate() == [cid]
        c = hub.channel(cid)
        assert (c.state.turn_count, c.state.expected_next_speaker, c.state.context_vars) == (
            2,
            "a",
            {"n": 1},
        )
        a, _ = hub.register_human("a"), hub.register_human("b")
        with pytest.raises(ProtocolError):
            await hub.client("b").send(cid, "out of turn")  # type: ignore[union-attr]
        await a.send(cid, "three")
        assert c.state.turn_count == 3
        ids = [e.envelope_id for e in hub.read_wal(cid)]
        assert len(ids) == len(set(ids)) == 4
        hub.store.close()

    run(second())


def test_replay_matches_a_finished_run() -> None:
    async def main() -> None:
        hub = await Hub.open()
        a, b = hub.register_human("a"), hub.register_human("b")
        ch = await a.open("workflow", target=["b"], knobs={"graph": RR3})
        for i in range(6):
            await (a if i % 2 == 0 else b).send(ch.channel_id, f"t{i}")
        result = hub.replay(ch.channel_id)
        assert result.matches and result.close_reason == "max_turns"
        assert result.replayed_state == result.recorded_state
        assert result.recorded_state is not None and result.recorded_state["turn_count"] == 6

    run(main())


# ── turn_within expectations ────────────────────────────────────────────────────


def test_turn_within_warns_then_auto_closes_with_turn_timeout() -> None:
    async def main() -> None:
        hub = await Hub.open()
        a = hub.register_human("a")
        hub.register_human("b")
        exps = [
            Expectation("turn_within", "warn", {"seconds": 0.05}),
            Expectation("turn_within", "auto_close", {"seconds": 0.15}),
        ]
        ch = await a.open("workflow", target=["b"], knobs={"graph": RR3}, expectations=exps)
        await ch.send("your turn, b")  # b never answers
        await ch.wait(timeout=2)
        c = hub.channel(ch.channel_id)
        assert c.close_reason == "turn_timeout"
        kinds = [
            (e.event_type, e.event_data.get("on_violation")) for e in hub.read_wal(c.channel_id)
        ]
        assert kinds[-3:] == [
            (EV_EXPECTATION_VIOLATED, "warn"),
            (EV_EXPECTATION_VIOLATED, "auto_close"),
            (EV_CHANNEL_CLOSED, None),
        ]
        assert c.violations[0]["agent_id"] == "b"

    run(main())


def test_turn_within_resets_on_every_turn() -> None:
    async def main() -> None:
        hub = await Hub.open()
        a, b = hub.register_human("a"), hub.register_human("b")
        exps = [Expectation("turn_within", "auto_close", {"seconds": 0.12})]
        ch = await a.open("workflow", target=["b"], knobs={"graph": RR3}, expectations=exps)
        for i in range(4):
            await asyncio.sleep(0.06)
            await (a if i % 2 == 0 else b).send(ch.channel_id, "on time")
        assert hub.channel(ch.channel_id).is_open
        await ch.wait(timeout=2)
        assert hub.channel(ch.channel_id).close_reason == "turn_timeout"

    run(main())


# ── a second adapter: the BYO page's poll ───────────────────────────────────────


@attrs.frozen
class PollState:
    question_sent: bool = False
    replied: frozenset[str] = frozenset()


class PollAdapter:
    manifest = ChannelManifest(
        type="poll",
        version=1,
        expectations=(Expectation("reply_within", "auto_close", {"seconds": 600}),),
    )

    def initial_state(self, metadata: ChannelMetadata) -> PollState:
        return PollState()

    def validate_create(self, metadata: ChannelMetadata) -> None:
        if len(metadata.participants) < 2:
            raise ProtocolError("poll requires >= 2 participants")

    def validate_send(
        self, metadata: ChannelMetadata, envelope: Envelope, state: PollState
    ) -> None:
        if envelope.event_type != EV_TEXT:
            return
        if not state.question_sent:
            if envelope.sender_id != metadata.creator_id:
                raise ProtocolError("only the initiator can post")
        elif envelope.sender_id == metadata.creator_id:
            raise ProtocolError("initiator already posted")
        elif envelope.sender_id in state.replied:
            raise ProtocolError("already replied")

    def fold(self, envelope: Envelope, state: PollState) -> PollState:
        if envelope.event_type != EV_TEXT:
            return state
        if not state.question_sent:
            return PollState(True, state.replied)
        return PollState(True, state.replied | {envelope.sender_id})

    def on_accepted(
        self, metadata: ChannelMetadata, envelope: Envelope, state: PollState
    ) -> AdapterResult:
        respondents = set(metadata.participant_ids) - {metadata.creator_id}
        if state.question_sent and state.replied >= respondents:
            return AdapterResult(ChannelState.CLOSED, "poll_complete")
        return AdapterResult()


def test_byo_poll_adapter_proves_the_protocol(tmp_path: Path) -> None:
    async def main() -> str:
        hub = await Hub.open(SqliteStore(tmp_path / "poll.db"), adapters=[PollAdapter()])
        pip = hub.register_human("pip")
        rs = [hub.register_human(f"r{i}") for i in range(3)]
        ch = await pip.open("poll", target=[r.agent_id for r in rs])
        with pytest.raises(ProtocolError, match="only the initiator"):
            await rs[0].send(ch.channel_id, "early")
        await ch.send("One-word focus?")
        await rs[0].send(ch.channel_id, "speed")
        with pytest.raises(ProtocolError, match="already replied"):
            await rs[0].send(ch.channel_id, "again")
        await rs[1].send(ch.channel_id, "quality")
        await rs[2].send(ch.channel_id, "focus")
        cid = ch.channel_id
        hub.store.close()
        again = await Hub.open(SqliteStore(tmp_path / "poll.db"), adapters=[PollAdapter()])
        await again.hydrate()
        c = again.channel(cid)
        assert c.state == PollState(True, frozenset({"r0", "r1", "r2"}))
        again.store.close()
        return str(c.close_reason)

    assert run(main()) == "poll_complete"


def test_context_set_from_outside_the_workflow_does_not_advance_turns() -> None:
    async def main() -> None:
        hub = await Hub.open()
        a, b = hub.register_human("a"), hub.register_human("b")
        ch = await a.open("workflow", target=["b"], knobs={"graph": RR3})
        await b.send(ch.channel_id, event_type=EV_CONTEXT_SET, event_data={"set": {"k": 1}})
        st = hub.channel(ch.channel_id).state
        assert (st.turn_count, st.expected_next_speaker, st.context_vars) == (0, "a", {"k": 1})

    run(main())


# ── the hub's waits end (Python 3.12+) ──────────────────────────────────────────


@pytest.mark.parametrize("db", [":memory:", "file"])
def test_a_scripted_run_ends_on_every_python(db: str, tmp_path: Path) -> None:
    """`Hub.idle` waited for its turn tasks by awaiting them over and over until their
    done callbacks took them out of its set; on Python 3.12+ awaiting finished tasks
    gives the loop no turn, so those callbacks never ran and the run span for ever
    after its last turn. Run in a process of its own, so a spin fails the test by
    its time-out instead of hanging the suite."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    where = ":memory:" if db == ":memory:" else str(tmp_path / "runs.db")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowc",
            "run",
            "examples/feedback_loop.flow",
            "--script",
            "examples/scripts/feedback_loop.yaml",
            "--db",
            where,
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert 'terminate "approved"' in done.stdout


def test_a_turn_still_in_an_agents_hands_when_the_run_closes_is_cancelled() -> None:
    """An agent that never answers: `turn_within ... auto_close` closes the run with
    `turn_timeout`, and the turn it still holds is cancelled, so the hub is idle at once.
    Before, `flowc run` waited for the agent after the close (for ever, for one that
    hangs)."""
    held: list[str] = []

    async def b(turn: Any) -> str:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            held.append("cancelled")
            raise
        return "late"

    async def main() -> None:
        hub = await Hub.open()
        a = hub.register_human("a")
        hub.register_agent("b", b)
        exps = [Expectation("turn_within", "auto_close", {"seconds": 0.1})]
        ch = await a.open("workflow", target=["b"], knobs={"graph": RR3}, expectations=exps)
        await ch.send("your turn, b")
        await ch.wait(timeout=5)
        assert hub.channel(ch.channel_id).close_reason == "turn_timeout"
        await asyncio.wait_for(hub.idle(), timeout=30)
        assert held == ["cancelled"]
        await hub.close()

    run(main())
