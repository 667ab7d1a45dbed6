"""Network faults between workers and PostgreSQL (issue 31, point 2): three real workers,
each talking to the real server through its own fault proxy on loopback
(tests/pg/faultproxy.py), drive many runs of a script while a fixed-seed random schedule
black-holes, heals and cuts their connections. The independent history checker
(tests/pg/history.py) then judges the database: every run's turns exactly the script's,
in order, closed as the script says, fencing kept, and every lease that changed hands
taken from a worker the schedule cut off; and every run's records are compared with
those of the same script run by one process alone.

Profiles: the fast one (CI) runs each scenario once with seed 0 and 24 runs. Outside
CI, ``FLOWC_FAULT_SEEDS=0-19 FLOWC_FAULT_RUNS=60`` explores seeds 0 to 19 with 60 runs
each (``.venv/bin/python -m pytest tests/pg/test_faults.py``)."""

from __future__ import annotations

import os
import random
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.pg.faultproxy import FaultProxy
from tests.pg.history import Expected, check_history
from tests.runtime.worker_harness import (
    closed_count,
    events,
    kill_left,
    open_db,
    reference,
    start_worker,
    stop_worker,
    submit,
    turns,
    wait_until,
    write_inputs,
)

TURNS = 12
LEASE = 2.0


def _seeds() -> list[int]:
    spec = os.environ.get("FLOWC_FAULT_SEEDS", "0")
    lo, _, hi = spec.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


RUNS = int(os.environ.get("FLOWC_FAULT_RUNS", "24"))


def _expected(run_id: str) -> Expected:
    """The 3-speaker loop's script: t0 ... t11, closed by its ``max_turns``."""
    return [f"t{i}" for i in range(TURNS)], "max_turns"


@contextmanager
def _cluster_of_three(
    pg_cluster: object, folder: Path
) -> Iterator[tuple[str, list[str], list[FaultProxy], list[subprocess.Popen[bytes]], list[Path]]]:
    """A fresh database with RUNS runs submitted (directly), and three workers each
    behind its own proxy."""
    db = pg_cluster.create_database()  # type: ignore[attr-defined]
    port = int(db.split("127.0.0.1:")[1].split("/")[0])
    (_, _), (flow, script) = write_inputs(folder, TURNS)
    ids = submit(db, flow, script, RUNS)
    proxies = [FaultProxy(port) for _ in range(3)]
    logs = [folder / f"worker{i}.log" for i in range(3)]
    procs = [
        start_worker(p.url(db), log, "--concurrency", "4", lease_seconds=LEASE)
        for p, log in zip(proxies, logs, strict=True)
    ]
    try:
        yield db, ids, proxies, procs, logs
    finally:
        for p in proxies:
            p.heal()
        kill_left(procs)
        for p in proxies:
            p.close()


def _finish(db: str, ids: list[str], procs: list[subprocess.Popen[bytes]], timeout: float) -> None:
    store = open_db(db)
    try:
        wait_until(lambda: closed_count(store, ids) == len(ids), timeout, "every run", procs)
    finally:
        store.close()
    for proc in procs:
        stop_worker(proc)


def _same_as_one_process(db: str, ids: list[str], folder: Path) -> None:
    """Every run's records after its opening (each turn's speaker, text, decision and
    context writes, and the close) equal those of the same script run by one process
    alone (``flowc.runtime.script_run`` on a store in memory): the faults changed nothing
    a run recorded."""
    expected = reference(folder / "rr.flow", folder / "rr.json")
    store = open_db(db)
    try:
        differ = [cid for cid in ids if turns(list(store.read(cid))) != expected]
    finally:
        store.close()
    assert not differ, f"{len(differ)} runs differ from a single-process run: {differ[:3]}"


def _held_by(db: str, pid: int) -> set[str]:
    """The open runs whose live lease the worker ``pid`` holds and that it wrote to."""
    import psycopg

    with psycopg.connect(db) as conn:
        rows = conn.execute(
            "SELECT l.channel_id FROM flowc_lease l WHERE l.holder LIKE %s "
            "AND l.expires_at > clock_timestamp() "
            "AND EXISTS (SELECT 1 FROM flowc_wal w WHERE w.channel_id = l.channel_id "
            "AND w.token = l.token) "
            "AND NOT EXISTS (SELECT 1 FROM flowc_wal w WHERE w.channel_id = l.channel_id "
            "AND w.event_type = 'ag2.channel.closed')",
            (f"%:{pid}:%",),
        ).fetchall()
    return {r[0] for r in rows}


@pytest.mark.parametrize("seed", _seeds())
def test_partitions_that_heal(pg_cluster: object, tmp_path: Path, seed: int) -> None:
    """Each worker in turn is black-holed for 0.2-0.8 s (under its lease) and healed,
    until every run is closed."""
    rng = random.Random(seed)
    with _cluster_of_three(pg_cluster, tmp_path) as (db, ids, proxies, procs, _):
        store = open_db(db)
        cut_off: set[int] = set()
        deadline = time.monotonic() + 120
        try:
            while closed_count(store, ids) < len(ids) and time.monotonic() < deadline:
                i = rng.randrange(3)
                cut_off.add(procs[i].pid)
                proxies[i].blackhole()
                time.sleep(rng.uniform(0.2, 0.8))
                proxies[i].heal()
                time.sleep(rng.uniform(0.1, 0.5))
        finally:
            store.close()
        assert cut_off
        _finish(db, ids, procs, 60)
    assert check_history(db, _expected, faulted=cut_off) == []
    _same_as_one_process(db, ids, tmp_path)


@pytest.mark.parametrize("seed", _seeds())
def test_a_partition_that_does_not_heal_in_time(
    pg_cluster: object, tmp_path: Path, seed: int
) -> None:
    """A worker is cut off while it holds runs it has written to, past its lease; the
    other two take its runs over and finish every run; then it is healed, its late
    writes are refused, and its log names each run it lost."""
    rng = random.Random(seed)
    with _cluster_of_three(pg_cluster, tmp_path) as (db, ids, proxies, procs, logs):
        victim = rng.randrange(3)
        pid = procs[victim].pid
        held: set[str] = set()
        deadline = time.monotonic() + 60
        while not held and time.monotonic() < deadline:
            proxies[victim].blackhole()
            held = _held_by(db, pid)
            if not held:
                proxies[victim].heal()
                time.sleep(0.01)
        assert held, "the worker never held a run it had written to"
        others = [p for j, p in enumerate(procs) if j != victim]
        store = open_db(db)
        try:
            wait_until(
                lambda: closed_count(store, ids) == len(ids), 120, "the others to finish", others
            )
        except AssertionError:
            import psycopg

            with psycopg.connect(db) as conn:
                stuck = conn.execute(
                    "SELECT pid, state, wait_event_type, wait_event, xact_start IS NOT NULL, "
                    "left(query, 60), pg_blocking_pids(pid) FROM pg_stat_activity "
                    "WHERE application_name = 'flowc'"
                ).fetchall()
            raise AssertionError(f"held {held}; sessions {stuck}") from None
        finally:
            store.close()
        proxies[victim].heal()
        wait_until(
            lambda: held <= set(events(logs[victim], "lost")) | set(events(logs[victim], "failed")),
            60,
            "the cut-off worker to name each run it lost",
            [procs[victim]],
        )
        _finish(db, ids, procs, 30)
    assert check_history(db, _expected, faulted={pid}) == []
    _same_as_one_process(db, ids, tmp_path)


@pytest.mark.parametrize("seed", _seeds())
def test_commits_whose_answer_is_lost(pg_cluster: object, tmp_path: Path, seed: int) -> None:
    """Now and then a worker's transaction commits on the server and its connection is cut
    before the answer reaches the worker: the retry must recognise what was written (no
    turn twice, none lost)."""
    rng = random.Random(seed)
    with _cluster_of_three(pg_cluster, tmp_path) as (db, ids, proxies, procs, _):
        store = open_db(db)
        deadline = time.monotonic() + 120
        try:
            while closed_count(store, ids) < len(ids) and time.monotonic() < deadline:
                proxies[rng.randrange(3)].cut_commits(1)
                time.sleep(rng.uniform(0.05, 0.3))
        finally:
            store.close()
        _finish(db, ids, procs, 60)
        assert sum(p.commits_cut for p in proxies) > 0
        cut = {procs[i].pid for i, p in enumerate(proxies) if p.commits_cut}
    assert check_history(db, _expected, faulted=cut) == []
    _same_as_one_process(db, ids, tmp_path)


def _session_states(db: str) -> list[tuple[str, str | None]]:
    import psycopg

    with psycopg.connect(db) as conn:
        return conn.execute(  # type: ignore[return-value]
            "SELECT state, wait_event FROM pg_stat_activity WHERE application_name = 'flowc' "
            "AND backend_xid IS NOT NULL"
        ).fetchall()


@pytest.mark.parametrize("batch", [False, True], ids=["append", "group-commit"])
def test_a_holder_cut_off_between_a_statement_and_its_sync(pg_cluster: object, batch: bool) -> None:
    """The server received a holder's fenced append (which locked the run's lease row)
    but not the Sync that ends it, and the connection stays open: the server counts the
    session as running a statement, not idle in its transaction, so no server timeout
    ends it. Once the lease expires, another process's take ends that session (rolling
    the cut-off append back) and takes the run; the cut-off holder's retry is refused."""
    from flowc.runtime.envelope import EV_CHANNEL_OPENED, EV_TEXT, Envelope
    from flowc.runtime.pgstore import PgStore
    from flowc.runtime.wal import LeaseError

    def env(eid: str, event: str = EV_TEXT) -> Envelope:
        data = {"metadata": {}} if event == EV_CHANNEL_OPENED else {"text": eid}
        return Envelope("r", "a", None, event, data, envelope_id=eid)

    db = pg_cluster.create_database()  # type: ignore[attr-defined]
    proxy = FaultProxy(int(db.split("127.0.0.1:")[1].split("/")[0]))
    cut_off, other = PgStore(proxy.url(db)), PgStore(db)
    a, b = "host-a.example:101:5:hub-a", "host-b.example:202:7:hub-b"
    try:
        lease = cut_off.acquire("r", a, 3.0)
        cut_off.append(env("e0", EV_CHANNEL_OPENED), lease)
        proxy.stall_at_sync()
        outcome: list[BaseException | object] = []

        def write() -> None:
            try:
                if batch:
                    outcome.extend(cut_off.append_batch([(env("e1"), lease, "e0")]))
                else:
                    outcome.append(cut_off.append(env("e1"), lease, "e0"))
            except BaseException as err:  # reported below
                outcome.append(err)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        deadline = time.monotonic() + 10
        while ("active", "ClientRead") not in _session_states(db):
            assert time.monotonic() < deadline, _session_states(db)
            time.sleep(0.02)
        assert proxy.syncs_stalled == 1
        with pytest.raises(LeaseError, match="being written by another hub"):
            other.acquire("r", b, 30)  # live: refused on a plain read, nothing ended
        time.sleep(max(0.0, lease.expires_at - time.time()) + 0.3)
        taken = other.acquire("r", b, 30)
        assert taken.token == lease.token + 1
        writer.join(30)
        assert not writer.is_alive()
        (result,) = outcome
        assert isinstance(result, LeaseError), result
        # refused as expired or as taken over, by when the retry ran against the take
        assert re.search(r"lease expired|taken over by another hub \(hub-b", str(result))
        other.append(env("e2"), taken, "e0")
        assert [e.envelope_id for e in other.read("r")] == ["e0", "e2"]
    finally:
        cut_off.close()
        other.close()
        proxy.close()
