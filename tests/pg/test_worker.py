"""`flowc worker` against a real PostgreSQL server (a throw-away cluster, see
tests/pgcluster.py): several workers share one database, take over each other's runs
and are fenced when they lose them."""

from __future__ import annotations

import signal
from pathlib import Path

import psycopg

from tests.runtime.worker_harness import (
    ROOT,
    database_restarts,
    paused_worker_is_fenced,
    stopped_worker_gives_its_run_back,
    three_workers_one_killed,
)


def test_three_workers_200_runs_one_killed_every_run_finishes_as_a_single_process_run(
        pg_dsn: str, tmp_path: Path) -> None:
    three_workers_one_killed(pg_dsn, tmp_path, runs=200)


def test_a_paused_worker_has_its_writes_refused(pg_dsn: str, tmp_path: Path) -> None:
    # a PostgreSQL append is one statement the server finishes on its own: a client
    # paused anywhere holds no lock another worker waits for
    paused_worker_is_fenced(pg_dsn, tmp_path,
                            lambda proc: proc.send_signal(signal.SIGSTOP))


def test_sigterm_gives_the_runs_back_at_once(pg_dsn: str, tmp_path: Path) -> None:
    def lease_row(cid: str) -> tuple[str, bool]:
        with psycopg.connect(pg_dsn) as conn:
            row = conn.execute("SELECT holder, expires_at > clock_timestamp() FROM flowc_lease "
                               "WHERE channel_id = %s", (cid,)).fetchone()
        assert row is not None
        return str(row[0]), bool(row[1])

    stopped_worker_gives_its_run_back(pg_dsn, tmp_path, lease_row)


def test_notifications_wake_an_idle_worker_new_runs_and_released_leases(pg_dsn: str) -> None:
    """The worker never polls here (once every 1,000 s): only PostgreSQL's notifications
    of a new run, then of a lease given back, can make it claim them."""
    import asyncio
    import time

    from flowc.commands.run import load_script, load_target
    from flowc.runtime.pgstore import PgStore
    from flowc.runtime.worker import PgNotifier, Worker, submit_run

    target, _ = load_target((ROOT / "examples" / "feedback_loop.flow").as_posix())
    assert target is not None
    doc = load_script((ROOT / "examples" / "scripts" / "feedback_loop.yaml").as_posix())

    async def scenario() -> None:
        store, other = PgStore(pg_dsn), PgStore(pg_dsn)
        worker = Worker(store, notifier=PgNotifier(pg_dsn), poll_seconds=1000)
        task = asyncio.ensure_future(worker.serve())
        try:
            await asyncio.sleep(1.0)  # its first look is done: it waits
            started = time.monotonic()
            await submit_run(other, target, doc)
            while worker.stats.closed < 1:
                assert time.monotonic() - started < 10, "a new run did not wake the worker"
                await asyncio.sleep(0.02)
            # a run held by a hub on another host, for 600 s: the worker leaves it ...
            held = await submit_run(other, target, doc)
            lease = other.acquire(held, "elsewhere:1:0:hub-x", 600)
            await asyncio.sleep(1.0)
            assert worker.stats.claimed == 1 and worker.active == []
            # ... until that hub gives it back
            started = time.monotonic()
            other.release(lease)
            while worker.stats.closed < 2:
                assert time.monotonic() - started < 10, "a released lease did not wake it"
                await asyncio.sleep(0.02)
        finally:
            worker.stop()
            await task
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
