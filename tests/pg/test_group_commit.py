"""Group commit on PostgreSQL: many runs' turns in one transaction, fencing kept per run,
and every turn committed before it is delivered (flowc/runtime/groupcommit.py and
``PgStore.append_batch``)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from flowc.runtime.envelope import EV_PACKET, EV_TEXT, Envelope
from flowc.runtime.groupcommit import GroupCommit
from flowc.runtime.pgstore import NOTIFY_APPEND, PgStore, listen, parse_payload
from flowc.runtime.wal import Lease, LeaseError, StoreUnavailable, WalError

A = "host-a.example:101:5:hub-a"  # holders on other hosts: only expiry frees their leases
B = "host-b.example:202:7:hub-b"

ROOT = Path(__file__).resolve().parents[2]


def _env(cid: str, eid: str) -> Envelope:
    return Envelope(cid, "a", None, EV_TEXT, {"text": eid}, envelope_id=eid)


def _ids(store: PgStore, cid: str) -> list[str]:
    return [e.envelope_id for e in store.read(cid)]


def _take_over(store: PgStore, cid: str) -> Lease:
    """B takes ``cid`` as soon as A's lease on it expires."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return store.acquire(cid, B, 30)
        except LeaseError:
            assert time.monotonic() < deadline
            time.sleep(0.01)


def _xacts(dsn: str) -> set[int]:
    """The transactions that wrote the WAL's rows."""
    with psycopg.connect(dsn) as conn:
        return {int(r[0]) for r in conn.execute("SELECT xmin::text::bigint FROM flowc_wal")}


def test_two_runs_in_one_batch_one_fenced_out_by_a_takeover_the_other_commits(
    pg_dsn: str,
) -> None:
    a, b = PgStore(pg_dsn), PgStore(pg_dsn)
    kept = a.acquire("r1", A, 30)
    lost = a.acquire("r2", A, 0.3)
    a.append(_env("r1", "r1-0"), kept)
    a.append(_env("r2", "r2-0"), lost)
    taken = _take_over(b, "r2")  # A's batch below was made while A held r2
    results = a.append_batch(
        [
            (_env("r1", "r1-1"), kept, "r1-0"),
            (_env("r2", "r2-1"), lost, "r2-0"),
            (_env("r1", "r1-2"), kept, "r1-1"),  # follows an envelope of the same batch
            (_env("r2", "r2-2"), lost, "r2-1"),  # follows the refused one: refused too
        ]
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], LeaseError) and "taken over" in str(results[1])
    assert isinstance(results[3], LeaseError)
    assert _ids(b, "r1") == ["r1-0", "r1-1", "r1-2"]
    assert _ids(b, "r2") == ["r2-0"]  # nothing of A's after the takeover
    b.append(_env("r2", "b-1"), taken, "r2-0")
    assert _ids(a, "r2") == ["r2-0", "b-1"]


def test_a_batch_is_one_transaction_and_checks_each_runs_last_envelope(pg_dsn: str) -> None:
    store = PgStore(pg_dsn)
    leases = {cid: store.acquire(cid, A, 30) for cid in ("r1", "r2", "r3")}
    for cid, lease in leases.items():
        store.append(_env(cid, f"{cid}-0"), lease)
    before = _xacts(pg_dsn)
    results = store.append_batch(
        [
            (_env("r3", "r3-1"), leases["r3"], "r3-0"),
            (_env("r1", "r1-1"), leases["r1"], "r1-0"),
            (_env("r2", "r2-1"), leases["r2"], "stale"),  # not r2's last envelope
            (_env("r2", "r2-2"), leases["r2"], "r2-1"),
        ]
    )
    assert results[:2] == [None, None]
    assert isinstance(results[2], LeaseError) and "another writer" in str(results[2])
    assert isinstance(results[3], LeaseError)
    assert len(_xacts(pg_dsn) - before) == 1  # r1-1 and r3-1: one commit
    assert _ids(store, "r2") == ["r2-0"]


def test_a_batch_tried_again_after_its_commit_recognises_what_it_wrote(pg_dsn: str) -> None:
    """As for a lone append whose answer was lost: the same envelopes again are taken as
    written; an id already used by another envelope is a duplicate."""
    store = PgStore(pg_dsn)
    lease = store.acquire("r", A, 30)
    entries: list[tuple[Envelope, Lease | None, str | None]] = [
        (_env("r", "e1"), lease, None),
        (_env("r", "e2"), lease, "e1"),
    ]
    assert store.append_batch(entries) == [None, None]
    assert store.append_batch(entries) == [None, None]
    other = Envelope("r", "a", None, EV_TEXT, {"text": "else"}, envelope_id="e2")
    (dup,) = store.append_batch([(other, None, None)])
    assert isinstance(dup, WalError) and "duplicate envelope id 'e2'" in str(dup)
    assert _ids(store, "r") == ["e1", "e2"]


def test_appends_notify_only_when_the_store_is_told_to(pg_dsn: str) -> None:
    quiet, loud = PgStore(pg_dsn, notify_appends=False), PgStore(pg_dsn)
    watcher = listen(pg_dsn, NOTIFY_APPEND)
    one, two = quiet.acquire("r1", A, 30), loud.acquire("r2", A, 30)
    quiet.append(_env("r1", "q1"), one)
    quiet.append_batch([(_env("r1", "q2"), one, "q1")])
    loud.append_batch([(_env("r2", "l1"), two, None), (_env("r2", "l2"), two, "l1")])
    got = [parse_payload(n.payload)["envelope"] for n in watcher.notifies(timeout=0.5)]
    assert got == ["l1", "l2"]


def test_the_group_commit_writes_many_runs_turns_in_few_commits(pg_dsn: str) -> None:
    store = PgStore(pg_dsn)
    runs = [f"r{i}" for i in range(8)]
    leases = {cid: store.acquire(cid, A, 30) for cid in runs}

    async def scenario() -> GroupCommit:
        group = GroupCommit(store.writer(), max_batch=5)
        last: dict[str, str | None] = dict.fromkeys(runs)
        futures = []
        for turn in range(3):
            for cid in runs:
                eid = f"{cid}-{turn}"
                futures.append(group.append_later(_env(cid, eid), leases[cid], last[cid]))
                last[cid] = eid
        assert set(await asyncio.gather(*futures)) == {None}
        await group.close()
        return group

    group = asyncio.run(scenario())
    assert group.envelopes == 24
    assert group.commits == 5  # at most 5 a batch: 24 in 5 commits
    for cid in runs:
        assert _ids(store, cid) == [f"{cid}-{t}" for t in range(3)]


def test_a_workers_turns_are_committed_before_they_are_delivered(pg_dsn: str) -> None:
    """Two runs driven together by one worker with group commit, where a scripted agent
    looks at the database each time it is given a turn: the envelope that gave it the
    turn is already committed (read on a connection of its own), and the runs end as a
    single-process run of the same script."""
    import flowc
    from flowc.runtime.clients import Turn
    from flowc.runtime.target import RunTarget
    from flowc.runtime.wal import MemoryStore
    from flowc.runtime.worker import Worker, submit_run

    flow = flowc.compile_flow(
        "speaker a: human\nspeaker b\nspeaker c\nstart a\nmax_turns 9\n"
        "when from a then b\nwhen from b then c\nwhen from c then a\n"
    )
    script = {"kickoff": "hi", "script": {"a": ["a1", "a2"], "c": ["c1", "c2", "c3"]}}
    seen: list[tuple[str, bool]] = []
    reader = psycopg.connect(pg_dsn, autocommit=True)

    both = asyncio.Event()  # b's first turns wait for each other: they share a commit
    arrived: set[str] = set()

    async def agent_b(turn: Turn) -> str:
        row = reader.execute(
            "SELECT 1 FROM flowc_wal WHERE envelope_id = %s", (turn.envelope.envelope_id,)
        ).fetchone()
        seen.append((turn.envelope.envelope_id, row is not None))
        arrived.add(turn.channel_id)
        if len(arrived) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 60)
        return f"b after {turn.text}"

    store = PgStore(pg_dsn)

    async def scenario() -> GroupCommit:
        target = RunTarget.from_compiled(flow)
        ids = [await submit_run(store, target, script) for _ in range(2)]
        group = GroupCommit(store.writer())
        worker = Worker(store, agents={"b": agent_b}, group_commit=group, poll_seconds=0.05)
        task = asyncio.ensure_future(worker.serve())
        deadline = time.monotonic() + 60
        while worker.stats.closed < 2:
            assert not task.done() and time.monotonic() < deadline, worker.stats
            await asyncio.sleep(0.01)
        worker.stop()
        await task
        assert worker.stats.failed == worker.stats.lost == 0
        for cid in ids:
            assert _outcome(list(store.read(cid))) == expected
        return group

    single = MemoryStore()

    async def solo(turn: Turn) -> str:
        return f"b after {turn.text}"

    result = flowc.run(flow, script, store=single, agents={"b": solo})
    expected = _outcome(list(single.read(result.channel_id)))
    group = asyncio.run(scenario())
    assert len(seen) == 6 and all(committed for _, committed in seen), seen
    assert group.commits < group.envelopes  # the two runs' turns shared a commit


def _outcome(envelopes: list[Envelope]) -> list[tuple[str, Any]]:
    return [
        (e.event_type, e.event_data.get("text", e.event_data.get("body")))
        for e in envelopes
        if e.event_type in (EV_TEXT, EV_PACKET)
    ] + [("close", envelopes[-1].event_data.get("reason"))]


def test_a_worker_drops_the_run_taken_from_it_and_its_neighbour_closes(
    pg_dsn: str,
) -> None:
    """One worker with group commit drives two runs whose turns go in the same batches;
    while their agent waits, another holder takes one run over: that run is lost to the
    worker (its turn refused), the other run closes."""
    import flowc
    from flowc.runtime.clients import Turn
    from flowc.runtime.target import RunTarget
    from flowc.runtime.worker import Worker, submit_run

    flow = flowc.compile_flow(
        "speaker a: human\nspeaker b\nstart a\nmax_turns 4\nwhen from a then b\n"
        "when from b then a\n"
    )
    script = {"kickoff": "hi", "script": {"a": ["a1"]}}
    store, other = PgStore(pg_dsn), PgStore(pg_dsn)
    gate = asyncio.Event()
    arrived: set[str] = set()

    async def agent_b(turn: Turn) -> str:
        arrived.add(turn.channel_id)
        await gate.wait()
        return "b"

    events: list[tuple[str, str]] = []
    batches: list[set[tuple[str, str, bool]]] = []

    async def scenario() -> tuple[str, str]:
        target = RunTarget.from_compiled(flow)
        keep, lose = [await submit_run(store, target, script) for _ in range(2)]
        writer = store.writer()
        write = writer.append_batch

        def recorded(entries: Any, releases: Any = ()) -> Any:
            results = write(entries, releases)
            batches.append(
                {
                    (env.channel_id, env.sender_id, r is None)
                    for (env, *_), r in zip(entries, results, strict=True)
                }
            )
            return results

        writer.append_batch = recorded  # type: ignore[method-assign]
        group = GroupCommit(writer)
        worker = Worker(
            store,
            agents={"b": agent_b},
            group_commit=group,
            poll_seconds=0.05,
            lease_seconds=0.5,
            on_event=lambda what, cid, _: events.append((what, cid)),
        )
        task = asyncio.ensure_future(worker.serve())
        deadline = time.monotonic() + 60
        while arrived != {keep, lose}:
            assert time.monotonic() < deadline, arrived
            await asyncio.sleep(0.01)
        # the worker's heartbeat would renew its leases: the taker waits for none to
        # expire, it bumps the token the way a takeover does, with the lease live
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(
                "UPDATE flowc_lease SET holder = %s, token = token + 1, "
                "expires_at = clock_timestamp() + interval '60 seconds' WHERE channel_id = %s",
                (B, lose),
            )
        gate.set()
        while ("closed", keep) not in events or ("lost", lose) not in events:
            assert not task.done() and time.monotonic() < deadline, events
            await asyncio.sleep(0.01)
        worker.stop()
        await task
        return keep, lose

    keep, lose = asyncio.run(scenario())
    assert _ids(other, keep)[-1] != _ids(other, lose)[-1]
    kept = list(other.read(keep))
    assert kept[-1].event_type == "ag2.channel.closed"
    lost = [e.event_type for e in other.read(lose)]
    assert lost == ["ag2.channel.opened", EV_TEXT]  # b's refused turn is not there
    # both b turns were in one batch: the kept one written, the other refused
    assert any({(keep, "b", True), (lose, "b", False)} <= batch for batch in batches), batches


def test_a_bug_in_the_group_commit_is_an_internal_error_not_a_stall(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TypeError out of ``append_batch`` is a bug in flowc, not the database failing: the
    worker's runs end as internal errors (the exception reaches ``on_error``), they are
    not parked as stalled, and no exception is left unretrieved in the event loop."""
    import gc

    import flowc
    from flowc.runtime.envelope import EV_RUN_STALLED
    from flowc.runtime.target import RunTarget
    from flowc.runtime.worker import Worker, submit_run

    flow = flowc.compile_flow(
        "speaker a: human\nspeaker b\nstart a\nmax_turns 4\nwhen from a then b\n"
        "when from b then a\n"
    )
    script = {"kickoff": "hi", "script": {"a": ["a1"]}}
    store = PgStore(pg_dsn)
    errors: list[tuple[str, BaseException]] = []
    loose: list[dict[str, Any]] = []

    def bug(entries: Any, releases: Any = ()) -> Any:
        raise TypeError("a bug in the writer")

    async def scenario() -> tuple[list[str], Worker]:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: loose.append(ctx))
        target = RunTarget.from_compiled(flow)
        ids = [await submit_run(store, target, script) for _ in range(2)]
        writer = store.writer()
        monkeypatch.setattr(writer, "append_batch", bug)
        worker = Worker(
            store,
            agents={"b": lambda turn: "b"},
            group_commit=GroupCommit(writer),
            poll_seconds=0.05,
            on_error=lambda cid, err: errors.append((cid, err)),
        )
        task = asyncio.ensure_future(worker.serve())
        deadline = time.monotonic() + 60
        while len(errors) < 2:
            assert not task.done() and time.monotonic() < deadline, worker.stats
            await asyncio.sleep(0.01)
        worker.stop()
        await task
        gc.collect()  # an exception nobody retrieved is reported as its holder goes
        await asyncio.sleep(0)
        return ids, worker

    ids, worker = asyncio.run(scenario())
    assert sorted(cid for cid, _ in errors) == sorted(ids)
    assert all(type(err) is TypeError and str(err) == "a bug in the writer" for _, err in errors)
    assert (worker.stats.internal, worker.stats.stalled, worker.stats.closed) == (2, 0, 0)
    for cid in ids:  # open, with no stall recorded: `flowc log` does not call them stalled
        assert [e.event_type for e in store.read(cid)][-1] != EV_RUN_STALLED
        assert store.lease_of(cid) is None
    assert loose == []


def test_only_the_databases_errors_are_store_errors() -> None:
    from flowc.runtime.groupcommit import store_error

    lost = LeaseError("x", "r1", B)
    for err in (WalError("x"), lost, OSError("x"), psycopg.OperationalError("x")):
        assert store_error(err), err
    for bug in (TypeError("x"), KeyError("x"), AttributeError("x"), AssertionError("x")):
        assert not store_error(bug), bug


@pytest.mark.parametrize("bad", [0, -1])
def test_the_group_commit_refuses_a_batch_size_below_one(bad: int) -> None:
    with pytest.raises(ValueError, match="max_batch"):
        GroupCommit(None, max_batch=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--commit-batch", "0"], "--commit-batch must be at least 1"),
        (["--commit-wait", "-1"], "--commit-wait must be between 0 and 1000"),
    ],
)
def test_the_workers_commit_options_are_checked(option: list[str], said: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "flowc", "worker", "--db", "postgresql://nowhere/x", *option],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 2 and said in done.stderr, done


def test_a_batch_the_database_failed_is_tried_again_not_recorded_stalled(pg_dsn: str) -> None:
    """A group commit the database failed (it restarted) stops the hubs of the runs in
    the batch; they give the runs back, unrecorded as stalled, and the worker takes them
    again and closes them. Before, each run's stall was written as soon as the database
    was back, and no worker took the run again: the restart test of a CI run timed out
    waiting for it to close."""
    from tests.runtime.worker_harness import a_failed_write

    store = PgStore(pg_dsn)
    writer = store.writer()
    batches: list[list[str]] = []
    real = writer.append_batch

    def fail_once(_: PgStore) -> None:
        def append_batch(entries: Any, releases: Any = ()) -> Any:
            if not batches and any(env.event_type in (EV_TEXT, EV_PACKET) for env, *_ in entries):
                batches.append([env.channel_id for env, *_ in entries])
                # the driver's own error, as the database's going away raises it: the
                # group commit tells it for what it is (StoreUnavailable)
                raise psycopg.OperationalError("server closed the connection unexpectedly")
            return real(entries, releases)

        writer.append_batch = append_batch  # type: ignore[method-assign]

    try:
        ids, worker, seen = a_failed_write(store, fail_once, GroupCommit(writer))
    finally:
        store.close()
    [batch] = batches
    assert set(batch) <= set(ids) and worker.stats.failed == len(batch)
    assert all(("failed", cid) in seen for cid in batch)
    assert (worker.stats.closed, worker.stats.stalled) == (2, 0)


def test_a_renewal_the_database_failed_before_a_turn_is_tried_again(pg_dsn: str) -> None:
    """Under group commit a turn's append first renews the run's lease when a third of it
    is spent; when that renewal fails because the database is unavailable, the run is
    given back and taken again, as when the commit fails, not recorded stalled. Before,
    the error left the agent's turn as it was, and the run's driver stalled the run
    plainly (Hub._schedule), so its stall was written once the database was back."""
    from flowc.runtime.hub import Hub
    from tests.runtime.worker_harness import a_failed_write

    store = PgStore(pg_dsn)
    writer = store.writer()
    turns: list[str] = []
    failed: list[str] = []
    real_later = Hub._append_later
    real_renew = store.renew

    def fail_once(_: PgStore) -> None:
        def append_later(self: Hub, ch: Any, env: Any, then: Any, **kw: Any) -> None:
            if env.event_type in (EV_TEXT, EV_PACKET):
                turns.append(env.channel_id)
            if not failed and len(turns) == 4:  # a scheduled turn, past the kickoff's
                failed.append(ch.channel_id)
                ch.renew_at = 0.0  # the renewal is due

                def renew(lease: Any, seconds: Any = 30) -> Any:
                    store.renew = real_renew  # type: ignore[method-assign]
                    raise StoreUnavailable("the database went away")

                store.renew = renew  # type: ignore[method-assign]
            real_later(self, ch, env, then, **kw)

        Hub._append_later = append_later  # type: ignore[method-assign]

    try:
        _, worker, seen = a_failed_write(store, fail_once, GroupCommit(writer))
    finally:
        Hub._append_later = real_later  # type: ignore[method-assign]
        store.close()
    [cid] = failed
    assert ("failed", cid) in seen and worker.stats.failed == 1
    assert (worker.stats.closed, worker.stats.stalled) == (2, 0)


def test_a_group_commit_failed_with_a_breaking_turn_reports_it_once(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The group commit that holds turn 5, which breaks a property, fails once (the
    database went away): the hub's refusal undoes the monitors' reading of the turn
    (``PropertyGuard.undo``, seen by a spy: the monitors as before the turn, its violation
    forgotten) and gives the run back; taken again, turn 5 is committed with the
    violation, which the WAL and the worker report once (tests/runtime/test_property_undo.py
    for SQLite)."""
    from tests.runtime.test_property_undo import (
        UndoSpy,
        taken_again_after_a_failed_write,
        violations,
    )

    spy = UndoSpy(monkeypatch)
    store = PgStore(pg_dsn)
    writer = store.writer()
    real = writer.append_batch
    turns: list[str] = []
    failed: list[str] = []

    def fail_once(_: PgStore) -> None:
        def append_batch(entries: Any, releases: Any = ()) -> Any:
            if not failed:
                for env, *_ in entries:
                    if env.event_type in (EV_TEXT, EV_PACKET):
                        turns.append(env.envelope_id)
                        if len(turns) == 5:
                            failed.append(str(env.event_data.get("body")))
                if failed:
                    raise psycopg.OperationalError("server closed the connection unexpectedly")
            return real(entries, releases)

        writer.append_batch = append_batch  # type: ignore[method-assign]

    try:
        cid, seen = taken_again_after_a_failed_write(store, fail_once, GroupCommit(writer))
        assert failed == ["t4"]
        assert violations(store, cid) == [(5, "a_twice", 5)]
    finally:
        store.close()
    assert spy.calls == [(["a_twice"], True)]
    assert seen.count(("failed", cid)) == 1 and seen.count(("violated", cid)) == 1
