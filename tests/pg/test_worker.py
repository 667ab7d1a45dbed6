"""`flowc worker` against a real PostgreSQL server (a throw-away cluster, see
tests/pgcluster.py): several workers share one database, take over each other's runs
and are fenced when they lose them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from tests.runtime.worker_harness import (
    ROOT,
    database_restarts,
    killed_workers_runs_are_taken_over,
    paused_worker_is_fenced,
    serve_and_stop,
    stalled_run_is_left_to_later_workers,
    stopped_worker_gives_its_run_back,
    three_workers_one_killed,
)

if TYPE_CHECKING:
    from flowc.runtime.worker import Worker


def _rewrite_row(dsn: str, cid: str, change: Callable[[Any], object]) -> int:
    """The stored row of the submitted run ``cid`` (its opening, its one row) as
    ``change`` leaves it; the row's seq."""
    with psycopg.connect(dsn) as conn:
        seq, raw = conn.execute(
            "SELECT seq, envelope FROM flowc_wal WHERE channel_id = %s", (cid,)
        ).fetchone()  # type: ignore[misc]
        env = json.loads(raw)
        change(env)
        conn.execute("UPDATE flowc_wal SET envelope = %s WHERE seq = %s", (json.dumps(env), seq))
    return int(seq)


@contextlib.asynccontextmanager
async def serving(worker: Worker) -> AsyncIterator[None]:
    """``worker`` serving (a task) for the body of the ``with``; then stopped, and its
    task awaited (what it raised, raised)."""
    task = asyncio.ensure_future(worker.serve())
    try:
        yield
    finally:
        worker.stop()
        await task


def test_three_workers_200_runs_one_killed_every_run_finishes_as_a_single_process_run(
    pg_dsn: str, tmp_path: Path
) -> None:
    three_workers_one_killed(pg_dsn, tmp_path, runs=200)


def test_a_paused_worker_has_its_writes_refused(pg_dsn: str, tmp_path: Path) -> None:
    # a PostgreSQL append is one statement the server finishes on its own: a client
    # paused anywhere holds no lock another worker waits for
    paused_worker_is_fenced(pg_dsn, tmp_path, lambda proc: proc.send_signal(signal.SIGSTOP))


def test_a_killed_workers_runs_are_taken_over_and_counted(pg_dsn: str, tmp_path: Path) -> None:
    killed_workers_runs_are_taken_over(pg_dsn, tmp_path)


def test_a_stalled_run_is_left_to_later_workers_until_its_log_grows(
    pg_dsn: str, tmp_path: Path
) -> None:
    stalled_run_is_left_to_later_workers(pg_dsn, tmp_path)


def test_the_postgresql_only_options_bring_no_warning_on_postgresql(pg_dsn: str) -> None:
    """--commit-batch, --commit-wait and --notify-appends act on PostgreSQL: given there,
    nothing is said of them (on SQLite the worker warns: tests/runtime/test_worker.py)."""
    extra = ("--commit-batch", "8", "--commit-wait", "1", "--notify-appends")
    assert serve_and_stop(pg_dsn, *extra) == ""


def test_sigterm_gives_the_runs_back_at_once(pg_dsn: str, tmp_path: Path) -> None:
    def lease_row(cid: str) -> tuple[str, bool]:
        with psycopg.connect(pg_dsn) as conn:
            row = conn.execute(
                "SELECT holder, expires_at > clock_timestamp() FROM flowc_lease "
                "WHERE channel_id = %s",
                (cid,),
            ).fetchone()
        assert row is not None
        return str(row[0]), bool(row[1])

    stopped_worker_gives_its_run_back(pg_dsn, tmp_path, lease_row)


def test_notifications_wake_an_idle_worker_new_runs_and_released_leases(pg_dsn: str) -> None:
    """The worker never polls here (once every 1,000 s): only PostgreSQL's notifications
    of a lease given back, then of a new run, can make it claim them. The test waits for
    each thing it expects (the listener's first wake-up and the look at the store it
    brings, each run closed), within 10 s, never for a fixed time."""

    from flowc.commands.run import load_script, load_target
    from flowc.runtime.pgstore import Claimed, PgStore
    from flowc.runtime.wal import Lease
    from flowc.runtime.worker import PgNotifier, Worker, submit_run

    target, _ = load_target((ROOT / "examples" / "feedback_loop.flow").as_posix())
    assert target is not None
    doc = load_script((ROOT / "examples" / "scripts" / "feedback_loop.yaml").as_posix())

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        changed = asyncio.Event()  # set whenever something the test waits for happens
        looks = [0]  # the workers' looks for runs to claim (each on the loop, at once)
        closed: list[str] = []

        class CountingStore(PgStore):
            def open_runs(self) -> list[tuple[str, Lease | None]]:
                looks[0] += 1
                changed.set()
                return super().open_runs()

            def claim(self, *args: Any, **kwargs: Any) -> list[Claimed]:
                looks[0] += 1  # (a worker's pass claims what it can first)
                changed.set()
                return super().claim(*args, **kwargs)

        class TellingNotifier(PgNotifier):
            """Hands each wake-up to the worker on the loop, noting the looks made
            before the first: a look after that one is the one the wake-up brings."""

            listening_at: int | None = None

            def start(self, wake: Callable[[str | None], None]) -> None:
                def on_loop(run_id: str | None) -> None:
                    wake(run_id)  # the worker's look comes after this, on the loop
                    if self.listening_at is None:
                        self.listening_at = looks[0]
                        changed.set()

                def in_thread(run_id: str | None) -> None:
                    loop.call_soon_threadsafe(on_loop, run_id)

                super().start(in_thread)

        def on_event(what: str, run_id: str, detail: str) -> None:
            if what == "closed":
                closed.append(run_id)
                changed.set()

        async def until(cond: Callable[[], bool], what: str) -> None:
            async def wait() -> None:
                while not cond():
                    changed.clear()
                    await changed.wait()

            try:
                await asyncio.wait_for(wait(), 10)
            except TimeoutError:
                raise AssertionError(f"not within 10 s: {what}") from None

        @contextlib.asynccontextmanager
        async def idle_worker() -> AsyncIterator[Worker]:
            """A worker that listens and has looked at the store since: it waits, and
            only a notification wakes it (stopped at the end of the ``with``)."""
            notifier = TellingNotifier(pg_dsn)
            worker = Worker(store, notifier=notifier, poll_seconds=1000, on_event=on_event)

            def looked_since() -> bool:
                return notifier.listening_at is not None and looks[0] > notifier.listening_at

            async with serving(worker):
                await until(looked_since, "the worker listens, then looks at the store")
                yield worker

        store, other = CountingStore(pg_dsn), PgStore(pg_dsn)
        try:
            # a run held by a hub on another host, for 600 s: the worker leaves it ...
            held = await submit_run(other, target, doc)
            lease = other.acquire(held, "elsewhere:1:0:hub-x", 600)
            async with idle_worker() as worker:
                assert worker.stats.claimed == 0 and worker.active == []
                # ... until that hub gives it back
                other.release(lease)
                await until(lambda: closed == [held], "a released lease woke the worker")
            # a new run
            async with idle_worker() as worker:
                new = await submit_run(other, target, doc)
                await until(lambda: closed == [held, new], "a new run woke the worker")
                assert worker.stats.claimed == 1 and worker.stats.failed == 0
        finally:
            store.close()
            other.close()

    asyncio.run(scenario())


def test_a_run_another_process_is_taking_is_left_alone_for_a_while(pg_dsn: str) -> None:
    """A run whose lease row another session has locked (a process cut off in the middle
    of taking it) is refused at once; the worker does not try it again on the pass its
    refusal wakes, nor on any other within a third of its lease (it would spin, waiting for
    the lock each time), only once that has passed, and then takes it. The test waits for events (a take, a look
    at the store, the run closed), never asserts on a duration."""

    from flowc.commands.run import load_script, load_target
    from flowc.runtime.pgstore import Claimed, PgStore
    from flowc.runtime.wal import Lease
    from flowc.runtime.worker import Worker, submit_run

    target, _ = load_target((ROOT / "examples" / "feedback_loop.flow").as_posix())
    assert target is not None
    doc = load_script((ROOT / "examples" / "scripts" / "feedback_loop.yaml").as_posix())
    takes, looks, closed = [0], [0], []

    class CountingStore(PgStore):
        def open_runs(self) -> list[tuple[str, Lease | None]]:
            looks[0] += 1
            return super().open_runs()

        def acquire(self, channel_id: str, holder: str, seconds: float = 30) -> Lease:
            takes[0] += 1
            return super().acquire(channel_id, holder, seconds)

        def claim(self, *args: Any, **kwargs: Any) -> list[Claimed]:
            # a claim skips a run whose row is locked: a look, and a take of what it got
            looks[0] += 1
            got = super().claim(*args, **kwargs)
            takes[0] += len(got)
            return got

    async def until(cond: Callable[[], bool], what: str) -> None:
        for _ in range(1000):
            if cond():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"not within 10 s: {what}")

    async def scenario() -> None:
        store, other = CountingStore(pg_dsn), PgStore(pg_dsn)
        frozen = psycopg.connect(pg_dsn, autocommit=True)
        try:
            cid = await submit_run(other, target, doc)
            frozen.execute("BEGIN")
            frozen.execute("SELECT 1 FROM flowc_lease WHERE channel_id = %s FOR UPDATE", (cid,))
            worker = Worker(
                store,
                poll_seconds=1000,
                lease_seconds=12,
                on_event=lambda what, run_id, _: (
                    closed.append(run_id) if what == "closed" else None
                ),
            )
            async with serving(worker):
                await until(lambda: takes[0] == 1 and not worker.active, "the take refused")
                # a pass of our own, after the refusal (the one the refusal itself wakes may
                # have come and gone already): it must leave the run alone
                seen = looks[0]
                worker.wake(cid)
                await until(lambda: looks[0] > seen, "the pass woken after the refusal")
                await until(lambda: not worker.active, "that pass done")
                assert takes[0] == 1, "the run was tried again at once"
                frozen.execute("ROLLBACK")
                await asyncio.sleep(4.0)  # the third of the lease the run is left alone
                worker.wake(cid)
                await until(lambda: closed == [cid], "the run taken and finished")
                assert takes[0] == 2
        finally:
            frozen.close()
            store.close()
            other.close()

    asyncio.run(scenario())


def test_the_workers_live_through_a_database_restart(tmp_path: Path) -> None:
    import time

    from tests.pgcluster import PgCluster

    with PgCluster() as cluster:  # its own cluster: the session's is not stopped
        db = cluster.create_database()

        def restart() -> None:
            cluster.stop(mode="fast")
            time.sleep(1.0)
            cluster.start()

        database_restarts(db, tmp_path, restart)


def test_the_workers_listener_reports_a_lost_connection_in_one_line(
    pg_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The server ends the worker's listening connection: psycopg's message runs over
    several lines (and may hold the URL); the warning is one line, naming the database as
    every message does (no password), and the listener listens again."""
    import logging
    import time

    from flowc.runtime.worker import PgNotifier

    wakes: list[str | None] = []
    notifier = PgNotifier(pg_dsn)
    caplog.set_level(logging.WARNING, logger="flowc")
    notifier.start(wakes.append)
    try:
        deadline = time.monotonic() + 10
        while wakes != [None]:
            assert time.monotonic() < deadline, "the listener never listened"
            time.sleep(0.02)
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            ended = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE query LIKE 'LISTEN%%' AND pid <> pg_backend_pid()"
            ).fetchall()
        assert ended == [(True,)]
        while wakes != [None, None]:  # listening again: look at the store
            assert time.monotonic() < deadline + 10, "the listener did not listen again"
            time.sleep(0.02)
    finally:
        notifier.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings, "the lost connection was not said"
    from flowc.runtime.pgstore import redact

    for message in warnings:
        assert "\n" not in message and message.startswith(redact(pg_dsn)), message


def test_a_worker_claims_its_runs_together_and_reads_none_again(pg_dsn: str) -> None:
    """Six runs submitted, a worker with room for eight: one claim takes them all (in one
    transaction, with their WAL); no run's lease is taken one by one, and no run's WAL is
    read again before its turns (a claim used to cost each run a dozen round trips on the
    worker's event loop: a listing, a lease read, a take, two reads of the WAL, ...)."""

    from flowc.commands.run import load_script, load_target
    from flowc.runtime.pgstore import Claimed, PgStore
    from flowc.runtime.wal import Lease
    from flowc.runtime.worker import Worker, submit_run

    target, _ = load_target((ROOT / "examples" / "feedback_loop.flow").as_posix())
    assert target is not None
    doc = load_script((ROOT / "examples" / "scripts" / "feedback_loop.yaml").as_posix())
    claims: list[list[str]] = []
    calls = {"acquire": 0, "read": 0, "links": 0}

    class CountingStore(PgStore):
        def claim(self, *args: Any, **kwargs: Any) -> list[Claimed]:
            got = super().claim(*args, **kwargs)
            claims.append([c.lease.channel_id for c in got])
            return got

        def acquire(self, channel_id: str, holder: str, seconds: float = 30) -> Lease:
            calls["acquire"] += 1
            return super().acquire(channel_id, holder, seconds)

        def read(self, channel_id: str) -> Any:
            calls["read"] += 1
            return super().read(channel_id)

        def links(self, channel_id: str) -> list[tuple[str, str | None]]:
            calls["links"] += 1
            return super().links(channel_id)

    async def scenario() -> None:
        store, other = CountingStore(pg_dsn), PgStore(pg_dsn)
        try:
            runs = [await submit_run(other, target, doc) for _ in range(6)]
            worker = Worker(store, poll_seconds=1000)
            async with serving(worker):
                for _ in range(1000):
                    if worker.stats.closed == 6:
                        break
                    await asyncio.sleep(0.01)
                assert worker.stats.closed == 6 and worker.stats.failed == 0
            assert claims[0] == runs  # oldest first, all at once
            assert calls == {"acquire": 0, "read": 0, "links": 0}
        finally:
            store.close()
            other.close()

    asyncio.run(scenario())


def test_a_worker_woken_often_still_polls_every_poll_seconds(pg_dsn: str) -> None:
    """The one-by-one look at every open run (a run held by a dead process on this host,
    one a take under way had locked) comes every ``poll_seconds`` however often the worker
    is woken: a busy worker is woken by every run that ends or is submitted, and it used
    to poll only after a wait with no wake-up at all, so never."""

    from flowc.runtime.pgstore import PgStore
    from flowc.runtime.worker import Worker

    looks: list[float] = []

    class CountingStore(PgStore):
        def open_runs(self) -> Any:
            looks.append(time.monotonic())
            return super().open_runs()

    async def scenario() -> None:
        store = CountingStore(pg_dsn)
        try:
            worker = Worker(store, poll_seconds=0.2)
            async with serving(worker):
                started = time.monotonic()
                while time.monotonic() - started < 1.5:
                    worker.wake()  # far more often than every 0.2 s
                    await asyncio.sleep(0.02)
        finally:
            store.close()

    asyncio.run(scenario())
    # at start, then about every 0.2 s: 8 in 1.5 s on an idle machine; 3 leaves room
    assert len(looks) >= 3, looks


def test_a_damaged_run_in_a_claim_does_not_hold_up_the_others(pg_dsn: str) -> None:
    """Two runs claimed together, one with a damaged row: the other is driven to its end,
    the damaged one fails, and its lease (300 s) is given back at once, so that another
    worker could take it right away. (A damaged row made the whole claim fail: the runs
    claimed with it stayed held by a worker that drove none of them, claim after claim.)"""

    from flowc.commands.run import load_script, load_target
    from flowc.runtime.pgstore import Claimed, PgStore
    from flowc.runtime.worker import Worker, submit_run

    target, _ = load_target((ROOT / "examples" / "feedback_loop.flow").as_posix())
    assert target is not None
    doc = load_script((ROOT / "examples" / "scripts" / "feedback_loop.yaml").as_posix())
    seen: list[tuple[str, str, str]] = []
    claims: list[list[str] | BaseException] = []

    class Claims(PgStore):
        def claim(self, *args: Any, **kwargs: Any) -> list[Claimed]:
            try:
                got = super().claim(*args, **kwargs)
            except BaseException as err:
                claims.append(err)
                raise
            claims.append([c.lease.channel_id for c in got])
            return got

    async def scenario() -> None:
        store, other = Claims(pg_dsn), PgStore(pg_dsn)
        try:
            bad_row, good = [await submit_run(other, target, doc) for _ in range(2)]
            # an audience that is not a list: the row is no envelope
            seq = _rewrite_row(pg_dsn, bad_row, lambda env: env.update(audience=5))
            worker = Worker(
                store,
                poll_seconds=1000,
                lease_seconds=300,
                on_event=lambda what, cid, detail: seen.append((what, cid, detail)),
            )
            async with serving(worker):
                for _ in range(1000):
                    if worker.stats.closed == 1 and worker.stats.failed >= 1:
                        break
                    await asyncio.sleep(0.01)
                assert claims and claims[0] == [bad_row, good], claims  # one claim took both
                assert worker.stats.closed == 1, seen
                assert [cid for what, cid, _ in seen if what == "closed"] == [good]
                failed = [detail for what, cid, detail in seen if what == "failed"]
                assert (
                    failed
                    and f"run {bad_row} is damaged: record 1 (ag2.channel.opened, row {seq}), audience"
                    in failed[0]
                )
                assert store.lease_of(bad_row) is None  # given back while the worker serves
                lease = other.acquire(bad_row, "another-worker", 30)
                assert lease.holder == "another-worker"
                other.release(lease)
        finally:
            store.close()
            other.close()

    asyncio.run(scenario())


def test_a_worker_reads_the_odd_values_it_wrote_and_fails_a_damaged_turn_limit_once(
    pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Real PostgreSQL. A submitted run whose agent replies with a list as its text, an
    object, a number, and a tool call deleting the key 7 (all admitted by the hub): the
    worker drives it to its end, and every reader (the worker's own read on resume,
    `flowc log RUN`, `replay`) reads it back, never "damaged" (the reverted check
    refused each of these and the worker failed the run). A second run whose stored
    turn_within is not a number (the hub's float() raised ValueError on it) is failed
    once, as damaged with its record and JSON path: not an internal error, not a store
    failure tried again."""

    import flowc
    from flowc.cli import main
    from flowc.runtime import Reply, ToolCall
    from flowc.runtime.pgstore import PgStore
    from flowc.runtime.script_run import resume_script
    from flowc.runtime.target import RunTarget
    from flowc.runtime.worker import Worker, submit_run

    flow = (
        "speaker user: human\nspeaker bot {\n  tool note\n}\nstart user\nmax_turns 6\n"
        "when from user then bot\nwhen from bot then user\n"
    )
    target = RunTarget.from_compiled(flowc.compile_flow(flow))
    doc = {"kickoff": "hello", "script": {"user": ["more", "again"]}}
    answers: list[Any] = [
        Reply(["a list", {"as": "text"}]),  # type: ignore[arg-type]
        Reply({"k": [1, None]}, (ToolCall("note", set={"é": 2.5}, delete=[7]),)),  # type: ignore[arg-type, list-item]
        Reply(2.5),  # type: ignore[arg-type]
    ]

    async def bot(turn: Any) -> Reply:
        return answers.pop(0) if answers else Reply("done")

    seen: list[tuple[str, str, str]] = []
    errors: list[tuple[str, BaseException]] = []

    async def scenario() -> tuple[str, str, int]:
        store = PgStore(pg_dsn)
        try:
            odd, limit = [await submit_run(store, target, doc) for _ in range(2)]
            seq = _rewrite_row(
                pg_dsn,
                limit,
                lambda env: env["event_data"]["expectations"][0]["params"].update(seconds="soon"),
            )
            worker = Worker(
                store,
                agents={"bot": bot},
                contracts="warn",
                poll_seconds=0.05,
                on_event=lambda what, cid, detail: seen.append((what, cid, detail)),
                on_error=lambda cid, err: errors.append((cid, err)),
            )
            async with serving(worker):
                for _ in range(3000):
                    if worker.stats.closed + worker.stats.failed >= 2:
                        break
                    await asyncio.sleep(0.01)
                await asyncio.sleep(0.3)  # (a damaged run is not tried again)
            assert (worker.stats.closed, worker.stats.failed, worker.stats.internal) == (1, 1, 0)
            # failed once and never tried again: not backed off as a store failure would be
            assert limit in worker._unrunnable and limit in worker._done
            again = await resume_script(store, odd)  # the read a worker makes of a run
            assert again.close_reason is not None and again.error is None
            return odd, limit, seq
        finally:
            store.close()

    odd, limit, seq = asyncio.run(scenario())
    assert [cid for what, cid, _ in seen if what == "closed"] == [odd]
    failed = [(cid, detail) for what, cid, detail in seen if what == "failed"]
    assert failed == [
        (
            limit,
            f"{failed[0][1].split(': run ')[0]}: run {limit} is damaged: record 1 "
            f"(ag2.channel.opened, row {seq}), event_data.expectations[0].params.seconds: "
            'expected a finite number of seconds, not negative, got "soon"',
        )
    ], failed
    capsys.readouterr()
    for argv in (["log", odd], ["log", odd, "--json"], ["replay", odd], ["log"]):
        code = main([*argv, "--db", pg_dsn])
        out, err = capsys.readouterr()
        if argv == ["log"]:  # (the run with the damaged turn limit is listed as damaged)
            assert code == 1 and f"{odd}  " in out and f"{limit}  damaged" in out, out
            continue
        assert code == 0 and "damaged" not in out + err and "internal error" not in err, err
