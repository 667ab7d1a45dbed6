"""A turn the store does not write is not read by the run's property monitors.

The hub reads each turn with the monitors before writing it (its violations go into
the turn's own envelope, :mod:`flowc.runtime.guard`); when the write fails (a refused
append, a failed group commit, a failed lease renewal) ``PropertyGuard.undo`` puts the
monitors back and forgets the turn's violations. So the run that goes on past the
failure reports each violation once, at the turn that really was written: not at the
unwritten one, not twice, and not never (a monitor that already took the unwritten turn
as the one that broke it would say nothing of the written one).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import flowc
from flowc.runtime import Hub, ProtocolError
from flowc.runtime.envelope import EV_PACKET, EV_TEXT, Envelope
from flowc.runtime.guard import PropertyGuard
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import PROPERTY_KEY
from flowc.runtime.wal import SqliteStore, StoreUnavailable, WalError, WalStore

#: three humans in turn; `quiet` breaks on the reviewer's first turn (turn 3), and
#: `one_review` on its second (turn 6): a monitor that also counted an unwritten turn 3
#: would break it at the written turn 3
FLOW = """speaker user: human
speaker bot: human
speaker reviewer: human
start user
max_turns 9
when from user then bot
when from bot then reviewer
when from reviewer then user
property quiet: never from reviewer
property one_review: from reviewer at most 1 time
"""


def fail_once(store: SqliteStore, turn: int, error: type[WalError] = WalError) -> list[str]:
    """Make ``store``'s append of the ``turn``-th turn (text or packet) fail once; the
    list returned gets the failed envelope's text."""
    real = store.append
    seen: list[Envelope] = []
    failed: list[str] = []

    def append(envelope: Envelope, lease: Any = None, follows: Any = None) -> None:
        if envelope.event_type in (EV_TEXT, EV_PACKET):
            if not failed and len(seen) + 1 == turn:
                failed.append(_text(envelope))
                raise error("the write failed")
            seen.append(envelope)
        real(envelope, lease, follows)

    store.append = append  # type: ignore[method-assign]
    return failed


def violations(store: WalStore, cid: str) -> list[tuple[int, str, int]]:
    """(the turn's place in the WAL, the property, the turn it names) for each violation
    the WAL's turns carry."""
    turns = [e for e in store.read(cid) if e.event_type in (EV_TEXT, EV_PACKET)]
    return [
        (n, v["property"], v["turn"])
        for n, env in enumerate(turns, 1)
        for v in env.event_data.get(PROPERTY_KEY, ())
    ]


def texts(store: WalStore, cid: str) -> list[str]:
    return [_text(e) for e in store.read(cid) if e.event_type in (EV_TEXT, EV_PACKET)]


def _text(env: Envelope) -> str:
    """What a turn said (a human's text, an agent's packet's body)."""
    return str(env.event_data.get("text", env.event_data.get("body")))


def test_a_refused_append_leaves_the_monitors_as_they_were(tmp_path: Path) -> None:
    """On SQLite, the append of exactly the turn that breaks `quiet` is refused: nothing of
    it is in the WAL nor among the guard's violations. The reviewer posts the turn again;
    it is written with `quiet`'s violation, and `one_review` breaks at turn 6, once each."""
    target = RunTarget.from_compiled(flowc.compile_flow(FLOW))
    store = SqliteStore(str(tmp_path / "runs.db"))
    try:
        hub = Hub(store)
        ids = {name: hub.register_human(name, agent_id=target.ids[name]).agent_id
               for name in target.speakers}  # fmt: skip
        ch = hub.open_channel(
            ids["user"], "workflow", [ids[s] for s in target.speakers], target.knobs
        )
        guard = ch.guard = PropertyGuard.of(target)
        assert guard is not None
        cid = ch.channel_id
        failed = fail_once(store, 3)

        def say(name: str, text: str) -> None:
            hub.admit_fields(cid, ids[name], EV_TEXT, {"text": text})

        say("user", "t1")
        say("bot", "t2")
        with pytest.raises(ProtocolError, match="the write failed"):
            say("reviewer", "t3 (not written)")
        assert failed == ["t3 (not written)"]
        assert texts(store, cid) == ["t1", "t2"]
        assert violations(store, cid) == []
        forgotten = list(guard.reported)
        # the run goes on: the reviewer's turn again, written this time
        say("reviewer", "t3")
        for i, name in enumerate(["user", "bot", "reviewer"], 4):
            say(name, f"t{i}")
        assert texts(store, cid) == [f"t{i}" for i in range(1, 7)]
        assert violations(store, cid) == [(3, "quiet", 3), (6, "one_review", 6)]
        assert forgotten == []
        assert [(v["property"], v["turn"]) for v in guard.reported] == [
            ("quiet", 3),
            ("one_review", 6),
        ]
    finally:
        store.close()


#: two counting agents (tests/runtime/worker_agents.py: turn N says ``t<N-1>``); `a_twice`
#: breaks on a's third turn, turn 5
AGENT_FLOW = """speaker a
speaker b
start a
max_turns 8
when from a then b
when from b then a
property a_twice: from a at most 2 times
"""


class UndoSpy:
    """Wraps ``PropertyGuard.undo``: each call's violations, and whether it left the
    monitors as they were before the unwritten turn and its violations forgotten."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[list[str], bool]] = []
        real = PropertyGuard.undo

        def undo(guard: PropertyGuard, broken: list[dict[str, Any]]) -> None:
            before = guard._saved
            real(guard, broken)
            restored = (
                before is not None
                and guard.watch.states is before
                and not any(any(v is b for v in guard.reported) for b in broken)
            )
            self.calls.append(([v["property"] for v in broken], restored))

        monkeypatch.setattr(PropertyGuard, "undo", undo)


def taken_again_after_a_failed_write(
    store: Any, fail: Any, group_commit: Any = None
) -> tuple[str, list[tuple[str, str]]]:
    """One run of :data:`AGENT_FLOW` submitted to ``store``; ``fail(store)`` (called once
    it is submitted) makes the write of its turn 5 fail once, as an unavailable store
    does; an in-process worker runs it to its close (taking it again after the failure).
    Returns the run and the worker's events."""
    from flowc.runtime.envelope import EV_CHANNEL_CLOSED
    from flowc.runtime.worker import Worker, submit_run
    from tests.runtime.worker_agents import count

    target = RunTarget.from_compiled(flowc.compile_flow(AGENT_FLOW))
    seen: list[tuple[str, str]] = []

    async def scenario() -> str:
        cid = await submit_run(store, target, {})
        fail(store)
        worker = Worker(
            store,
            agents={"a": count, "b": count},
            group_commit=group_commit,
            poll_seconds=0.05,
            lease_seconds=4.0,  # no lease lost on a busy machine: only the failure made here
            on_event=lambda what, run, _: seen.append((what, run)),
        )
        task = asyncio.ensure_future(worker.serve())
        deadline = asyncio.get_running_loop().time() + 60
        while list(store.read(cid))[-1].event_type != EV_CHANNEL_CLOSED or worker.active:
            assert not task.done() and asyncio.get_running_loop().time() < deadline, seen
            await asyncio.sleep(0.02)
        worker.stop()
        await task
        return cid

    return asyncio.run(scenario()), seen


def test_a_run_taken_again_after_a_failed_write_reports_the_violation_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite, the append of turn 5, which breaks `a_twice`, fails (the store is
    unavailable): the hub undoes the monitors' reading of it (the spy: the monitors as
    before the turn, its violation forgotten) and gives the run back; the worker takes it
    again, and turn 5, written then, carries the violation: once, at turn 5, and the
    worker says so once. (The hub that takes the run again rebuilds its monitors from
    the WAL, so here only the spy sees what ``undo`` did; the test above is the run that
    goes on in the same hub.)"""
    spy = UndoSpy(monkeypatch)
    store = SqliteStore(str(tmp_path / "runs.db"))
    try:
        failed: list[list[str]] = []
        cid, seen = taken_again_after_a_failed_write(
            store, lambda s: failed.append(fail_once(s, 5, StoreUnavailable))
        )
        assert failed == [["t4"]]
        assert texts(store, cid) == [f"t{i}" for i in range(8)]
        assert violations(store, cid) == [(5, "a_twice", 5)]
    finally:
        store.close()
    assert spy.calls == [(["a_twice"], True)]
    assert seen.count(("failed", cid)) == 1 and seen.count(("violated", cid)) == 1
