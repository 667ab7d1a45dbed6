"""Faults of the database server itself (issue 31, point 2), on a real PostgreSQL cluster of
the test's own: the whole server killed outright (SIGKILL of every server process, then
started again: crash recovery), and the server frozen (SIGSTOP) for longer than a lease
while a worker is killed (SIGKILL): two faults at once, then thawed (SIGCONT). Each time,
the workers' runs of the counting agents all end with their turns consecutive and each
exactly once, and the independent history checker (tests/pg/history.py) finds fencing
kept and every lease that changed hands explained by the schedule."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tests.pg.history import Expected, check_history
from tests.runtime.worker_harness import (
    AGENTS,
    agent_runs,
    assert_counted,
    closed_count,
    counted_turns,
    database_restarts,
    kill_left,
    open_db,
    open_runs_and_logs,
    start_worker,
    stop_worker,
    wait_until,
)

LEASE = 2.0
TURNS = 90


def _expected(run_id: str) -> Expected:
    """The counting agents' run: t0 ... t89, closed by its ``max_turns``."""
    return [f"t{i}" for i in range(TURNS)], "max_turns"


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie nobody reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def test_the_workers_live_through_a_database_crash(tmp_path: Path) -> None:
    """Every server process SIGKILLed mid-way (no shutdown at all), then the server started
    again on the same folder: it recovers from its own log; the workers reconnect."""
    from tests.pgcluster import PgCluster

    with PgCluster() as cluster:
        db = cluster.create_database()

        def crash() -> None:
            pids = cluster.processes()
            cluster.signal(signal.SIGKILL)
            deadline = time.monotonic() + 30
            while not all(_gone(pid) for pid in pids):
                assert time.monotonic() < deadline, "the server's processes outlived SIGKILL"
                time.sleep(0.05)
            # a postmaster nobody reaped (a container's first process may not) is a zombie
            # whose pid the lock files still name: the server would take it for a live one;
            # they go, as an operator removes them after a crash
            (cluster.data / "postmaster.pid").unlink()
            for lock in cluster.socket_dir.glob(".s.PGSQL.*"):
                lock.unlink()
            cluster.start()

        database_restarts(db, tmp_path, crash)
        # it was a crash, and the server recovered from it (not a shutdown)
        assert "automatic recovery in progress" in cluster.log.read_text(errors="replace")
        assert check_history(db, _expected) == []


def test_a_frozen_database_and_a_killed_worker_at_once(tmp_path: Path) -> None:
    """The server is frozen (SIGSTOP of all its processes) for two and a half leases; while
    it is frozen, one of the two workers is SIGKILLed. Thawed, the database's clock has
    moved on past every lease: the surviving worker takes over the killed one's runs (and
    may have to take its own again), and every run ends exactly once."""
    from tests.pgcluster import PgCluster

    with PgCluster() as cluster:
        db = cluster.create_database()
        runs = 12
        ids = agent_runs(db, tmp_path, TURNS, runs)
        logs = [tmp_path / f"w{i}.log" for i in range(2)]
        procs = [
            start_worker(db, log, "--agents", str(AGENTS), lease_seconds=LEASE) for log in logs
        ]
        store = open_db(db)
        try:
            wait_until(
                lambda: sum(len(counted_turns(store, cid)) for cid in ids) >= runs * TURNS // 4,
                60,
                "a quarter of the turns",
                procs,
            )
            store.close()
            cluster.signal(signal.SIGSTOP)
            try:
                time.sleep(LEASE / 2)
                procs[0].send_signal(signal.SIGKILL)
                procs[0].wait(timeout=30)
                time.sleep(2 * LEASE)
            finally:
                cluster.signal(signal.SIGCONT)
            store = open_db(db)
            wait_until(
                lambda: closed_count(store, ids) == len(ids),
                120,
                "every run to close after the thaw",
                procs[1:],
                explain=lambda: open_runs_and_logs(store, ids, logs),
            )
            for cid in ids:
                assert_counted(store, cid, TURNS)
            stop_worker(procs[1])
            assert procs[1].returncode == 0
        finally:
            kill_left(procs)
            store.close()
        # a frozen server lets every lease run out: any worker may have lost one
        faulted = {p.pid for p in procs}
        assert check_history(db, _expected, faulted=faulted, killed={procs[0].pid}) == []
