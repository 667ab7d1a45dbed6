"""The PostgreSQL store: fencing between holders, the database's clock, refusals that change
nothing, notifications, tables made once under concurrency, reconnection.

The rules every store shares (order, duplicates, leases, hydrate, replay of a two-writer WAL)
run against PostgreSQL too, in tests/runtime (parametrized over tests.pgcluster.STORES).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Any

import attrs
import psycopg
import pytest

from flowc.runtime.envelope import EV_CHANNEL_OPENED, EV_TEXT, Envelope
from flowc.runtime.pgstore import (
    NOTIFY_APPEND,
    NOTIFY_FREE,
    NOTIFY_RUN,
    PgListener,
    PgStore,
    listen,
)
from flowc.runtime.wal import LeaseBusy, LeaseError, StoreUnavailable, WalError
from tests.pgcluster import PgCluster

A = "host-a.example:101:5:hub-a"  # holders on other hosts: only expiry frees their leases
B = "host-b.example:202:7:hub-b"
C = "host-c.example:303:9:hub-c"


def _env(cid: str, eid: str, event: str = EV_TEXT, **data: Any) -> Envelope:
    return Envelope(cid, "a", None, event, data or {"text": eid}, envelope_id=eid)


def _ids(store: PgStore, cid: str) -> list[str]:
    return [e.envelope_id for e in store.read(cid)]


def _notices(conn: psycopg.Connection[Any], wait: float = 0.3) -> list[tuple[str, str]]:
    return [(n.channel, n.payload) for n in conn.notifies(timeout=wait)]


def test_an_expired_lease_cannot_append_and_a_taken_one_neither(pg_dsn: str) -> None:
    one, two = PgStore(pg_dsn), PgStore(pg_dsn)  # two holders, two connections
    lease = one.acquire("r", A, 0.5)
    one.append(_env("r", "e1"), lease)
    with pytest.raises(LeaseError, match="run r is being written by another hub"):
        two.acquire("r", B, 30)
    time.sleep(0.6)
    # expired, not yet taken: refused all the same
    with pytest.raises(LeaseError, match="lease expired"):
        one.append(_env("r", "e2"), lease, "e1")
    taken = two.acquire("r", B, 30)
    assert taken.token == lease.token + 1
    with pytest.raises(LeaseError, match=r"taken over by another hub \(hub-b, pid 202"):
        one.append(_env("r", "e3"), lease, "e1")
    with pytest.raises(LeaseError, match="taken over"):
        one.renew(lease)
    two.append(_env("r", "e4"), taken, "e1")
    assert _ids(one, "r") == _ids(two, "r") == ["e1", "e4"]
    assert one.lease_of("r") == taken


def test_taking_a_lease_does_not_wait_for_a_session_cut_off_inside_its_own_take(
    pg_dsn: str,
) -> None:
    """A session that locked a run's lease row and then went silent (a worker cut off in
    the middle of its take, or of a batch) keeps the row locked until the server ends it.
    Another process taking that run is refused at once instead of waiting: a worker
    waiting there would stop its event loop and lose every lease it holds."""
    one, two = PgStore(pg_dsn), PgStore(pg_dsn)
    lease = one.acquire("r", A, 0.05)
    one.append(_env("r", "e1"), lease)
    time.sleep(0.1)  # expired: free to take
    with psycopg.connect(pg_dsn, autocommit=True) as frozen:
        frozen.execute("BEGIN")
        frozen.execute("SELECT 1 FROM flowc_lease WHERE channel_id = 'r' FOR UPDATE")
        outcome: list[BaseException | object] = []

        def take() -> None:
            try:
                outcome.append(two.acquire("r", B, 2.0))
            except BaseException as err:  # reported below
                outcome.append(err)

        taker = threading.Thread(target=take, daemon=True)
        taker.start()
        taker.join(30)  # generous: without the lock timeout it waits as long as `frozen`
        assert not taker.is_alive(), "taking the lease waited for the frozen session"
        frozen.execute("ROLLBACK")
    (err,) = outcome
    assert isinstance(err, LeaseBusy), err
    assert str(err) == "run r is being taken by another process right now"
    assert err.holder is None
    # nothing changed, and once the session is gone the run is taken as usual
    assert one.lease_of("r") is None
    taken = two.acquire("r", B, 30)
    assert taken.token == lease.token + 1


def test_a_live_lease_is_refused_without_locking_its_row(pg_dsn: str) -> None:
    """A take of a run another process holds is refused on a plain read, before anything
    is locked: the refusal names the holder even while another session has the row
    locked (a lock the refused process never waits for, and never takes, so it cannot
    hold up the holder's renewals if it is cut off mid-take)."""
    holder, taker = PgStore(pg_dsn), PgStore(pg_dsn)
    lease = holder.acquire("r", A, 30)
    with psycopg.connect(pg_dsn, autocommit=True) as locker:
        locker.execute("BEGIN")
        locker.execute("SELECT 1 FROM flowc_lease WHERE channel_id = 'r' FOR UPDATE")
        with pytest.raises(LeaseError, match=r"being written by another hub \(hub-a"):
            taker.acquire("r", B, 30)
        locker.execute("ROLLBACK")
    assert taker.lease_of("r") == lease


def test_a_writer_racing_a_takeover_is_refused_from_the_takeover_on(pg_dsn: str) -> None:
    """A holder appends as fast as it can while another takes the run over as soon as the
    lease expires: every envelope of the first comes before the taker's first one."""
    first, taker = PgStore(pg_dsn), PgStore(pg_dsn)
    lease = first.acquire("r", A, 0.3)
    first.append(_env("r", "a0"), lease)
    written: list[str] = []
    refused: list[str] = []

    def write() -> None:
        last = "a0"
        for i in range(1, 100_000):
            try:
                first.append(_env("r", f"a{i}"), lease, last)
            except LeaseError as err:
                refused.append(str(err))
                return
            last = f"a{i}"
            written.append(last)

    thread = threading.Thread(target=write)
    thread.start()
    deadline = time.monotonic() + 20
    while True:
        try:
            taken = taker.acquire("r", B, 30)
            break
        except LeaseError:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    thread.join(20)
    assert refused and written
    wal = _ids(taker, "r")
    assert wal == ["a0", *written]  # nothing of the first after its last acknowledged write
    taker.append(_env("r", "b0"), taken, wal[-1])
    assert _ids(taker, "r")[-1] == "b0"


def test_expiry_is_the_databases_clock_not_this_hosts(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PgStore(pg_dsn)
    lease = store.acquire("r", A, 30)
    real = time.time
    # this host's clock runs an hour ahead: the lease is still live for the database
    monkeypatch.setattr(time, "time", lambda: real() + 3600)
    assert store.lease_of("r") == lease
    store.append(_env("r", "e1"), lease)
    with pytest.raises(LeaseError, match="being written by another hub"):
        PgStore(pg_dsn).acquire("r", B, 30)
    # and an hour behind: an expired lease is expired
    monkeypatch.setattr(time, "time", lambda: real() - 3600)
    short = store.acquire("s", A, 0.2)
    time.sleep(0.3)
    assert store.lease_of("s") is None
    with pytest.raises(LeaseError, match="lease expired"):
        store.append(_env("s", "s1"), short)
    now = store._query("SELECT extract(epoch FROM now())::float8", (), None, "x")[0][0]
    assert abs(lease.expires_at - (now + 30)) < 5  # the database's time, not this host's


def test_a_refused_envelope_changes_nothing_and_notifies_nobody(pg_dsn: str) -> None:
    store = PgStore(pg_dsn)
    lease = store.acquire("r", A, 30)
    store.append(_env("r", "e0", EV_CHANNEL_OPENED, metadata={}), lease)
    store.append(_env("r", "e1"), lease, "e0")
    watcher = listen(pg_dsn)
    before = (_ids(store, "r"), store.links("r"), store.channel_ids(), store.lease_of("r"))
    with pytest.raises(WalError, match="duplicate envelope id 'e1'"):
        store.append(_env("r", "e1"), lease, "e1")
    # a stale view of the run: written after e0, but e1 is the last envelope now
    with pytest.raises(
        LeaseError,
        match="was written after e0, but the run's last envelope is e1: another writer appended",
    ):
        store.append(_env("r", "e2"), lease, "e0")
    with pytest.raises(LeaseError):
        store.append(_env("r", "e3"), attrs.evolve(lease, token=lease.token + 7), "e1")
    with pytest.raises(LeaseError):  # a lease of another run
        store.append(_env("r", "e4"), store.acquire("other", A, 30), "e1")
    assert (_ids(store, "r"), store.links("r"), store.channel_ids(), store.lease_of("r")) == before
    assert _notices(watcher) == []
    watcher.close()


def test_notifications_of_a_new_run_an_append_and_a_release(pg_dsn: str) -> None:
    store = PgStore(pg_dsn)
    watcher = listen(pg_dsn)
    runs_only = listen(pg_dsn, NOTIFY_RUN)
    lease = store.acquire("r", A, 30)
    store.append(_env("r", "e0", EV_CHANNEL_OPENED, metadata={}), lease)
    store.append(_env("r", "e1"), lease, "e0")
    store.release(lease)
    store.release(lease)  # released already: nothing happens, nobody is told
    got = _notices(watcher)
    assert [c for c, _ in got] == [NOTIFY_APPEND, NOTIFY_RUN, NOTIFY_APPEND, NOTIFY_FREE]
    first, second = json.loads(got[0][1]), json.loads(got[2][1])
    assert first == {"run": "r", "seq": first["seq"], "envelope": "e0", "event": EV_CHANNEL_OPENED}
    assert second["envelope"] == "e1" and second["seq"] > first["seq"]
    assert got[1][1] == got[3][1] == "r"
    assert _notices(runs_only) == [(NOTIFY_RUN, "r")]


def test_notifications_are_sent_only_when_the_append_commits(pg_dsn: str) -> None:
    store = PgStore(pg_dsn)
    watcher = listen(pg_dsn, NOTIFY_APPEND)
    other = psycopg.connect(pg_dsn, autocommit=True)
    lease = store.acquire("r", A, 30)
    # another session holds the lease row: the append waits for it, unseen until done
    with other.transaction():
        other.execute("SELECT 1 FROM flowc_lease WHERE channel_id = 'r' FOR UPDATE")
        thread = threading.Thread(target=store.append, args=(_env("r", "e1"), lease))
        thread.start()
        time.sleep(0.3)
        assert thread.is_alive() and _notices(watcher, 0.1) == []
    thread.join(10)
    assert [json.loads(p)["envelope"] for _, p in _notices(watcher)] == ["e1"]


def test_tables_are_made_once_by_many_processes_starting_together(pg_dsn: str) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def start() -> None:
        try:
            barrier.wait()
            PgStore(pg_dsn).close()
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    with psycopg.connect(pg_dsn) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE 'flowc%' ORDER BY 1"
        ).fetchall()
    assert tables == [("flowc_lease",), ("flowc_lease_log",), ("flowc_wal",)]


def test_readonly_makes_nothing_and_writes_nothing(pg_dsn: str) -> None:
    reader = PgStore(pg_dsn, readonly=True)
    assert reader.channel_ids() == [] and list(reader.read("r")) == []
    assert reader.lease_of("r") is None and reader.links("r") == []
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT to_regclass('flowc_wal')").fetchone() == (None,)
    writer = PgStore(pg_dsn)
    writer.append(_env("r", "e1"))
    reader = PgStore(pg_dsn, readonly=True)
    assert _ids(reader, "r") == ["e1"]
    with pytest.raises(WalError, match="read-only transaction"):
        reader.append(_env("r", "e2"))


def test_a_damaged_row_is_named(pg_dsn: str) -> None:
    store = PgStore(pg_dsn)
    store.append(_env("r", "e1"))
    store.append(_env("r", "e2"))
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE flowc_wal SET envelope = '{not json' WHERE envelope_id = 'e2'")
    with pytest.raises(
        WalError, match=r"/t_\d+: run r is damaged: record 2 \(row \d+\) is no envelope"
    ):
        list(store.read("r"))


def test_open_runs_lists_the_runs_a_worker_may_take(pg_dsn: str) -> None:
    store = PgStore(pg_dsn)
    live = store.acquire("live", A, 30)
    store.append(_env("live", "l0", EV_CHANNEL_OPENED, metadata={}), live)
    free = store.acquire("free", A, 0.1)
    store.append(_env("free", "f0", EV_CHANNEL_OPENED, metadata={}), free)
    done = store.acquire("done", A, 30)
    store.append(_env("done", "d0", EV_CHANNEL_OPENED, metadata={}), done)
    store.append(_env("done", "d1", "ag2.channel.closed", reason="x"), done, "d0")
    ghost = subprocess.run(
        [
            sys.executable,
            "-c",
            "from flowc.runtime.wal import holder_id;print(holder_id('hub-dead'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()  # a process of this host, now dead
    store.append(
        _env("dead", "x0", EV_CHANNEL_OPENED, metadata={}), store.acquire("dead", ghost, 30)
    )
    store.acquire("empty", A, 30)  # taken, nothing written: no run yet
    time.sleep(0.2)
    assert store.open_runs() == [("live", live), ("free", None), ("dead", None)]


def test_a_restarted_server_fails_the_call_in_flight_and_the_next_reconnects() -> None:
    with PgCluster() as cluster:
        dsn = cluster.create_database()
        store = PgStore(dsn)
        lease = store.acquire("r", A, 60)
        store.append(_env("r", "e1"), lease)
        cluster.stop()
        with pytest.raises(StoreUnavailable) as info:  # a WalError worth trying again
            store.append(_env("r", "e2"), lease, "e1")
        assert str(info.value).startswith(f"{dsn}: run r: cannot write the WAL (")
        with pytest.raises(
            WalError,
            match=r"cannot connect to the database \(connection to "
            r"server at \"127\.0\.0\.1\"",
        ):
            store.read("r")
        cluster.start()
        store.append(_env("r", "e2"), lease, "e1")  # the lease outlived the restart
        assert _ids(store, "r") == ["e1", "e2"]
        # restarted while the store was idle: its next call connects again by itself
        reconnects = store.reconnects
        cluster.stop()
        cluster.start()
        store.append(_env("r", "e3"), lease, "e2")
        assert store.reconnects == reconnects + 1
        assert _ids(store, "r") == ["e1", "e2", "e3"]


def _drop_connection(store: PgStore, dsn: str) -> None:
    """Ends the store's session from the server side, as a network cut would."""
    assert store._conn is not None
    pid = store._conn.info.backend_pid
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_an_append_whose_answer_was_lost_is_not_written_twice(pg_dsn: str) -> None:
    store = PgStore(pg_dsn)
    lease = store.acquire("r", A, 30)
    store.append(_env("r", "e0"), lease)
    # the append of e1 committed, then the connection broke before its answer came back:
    # the hub sees an error and (or a retry) writes e1 again
    other = PgStore(pg_dsn)
    other.append(_env("r", "e1"), lease, "e0")
    _drop_connection(store, pg_dsn)
    store.append(_env("r", "e1"), lease, "e0")  # recognised as written: no error, no copy
    assert _ids(store, "r") == ["e0", "e1"] and store.reconnects == 1
    # unfenced, the same
    other.append(_env("u", "u1"))
    _drop_connection(store, pg_dsn)
    store.append(_env("u", "u1"))
    assert _ids(store, "u") == ["u1"]
    # but another envelope under a taken id is a duplicate, lost connection or not
    _drop_connection(store, pg_dsn)
    with pytest.raises(WalError, match="duplicate envelope id 'u1'") as refused:
        store.append(_env("u", "u1", text="something else"))
    assert not isinstance(refused.value, StoreUnavailable)  # refused again if tried again
    _drop_connection(store, pg_dsn)
    with pytest.raises(LeaseError, match="was written after e0, but the run's last envelope is e1"):
        store.append(_env("r", "e2"), lease, "e0")


def test_a_take_whose_commit_answer_is_lost_is_recognised_when_tried_again(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The take committed, then the connection broke before its answer came: the store
    connects again and tries once more, and finds the lease already its own. Before, it
    took the run a second time from itself (a second take in the lease's history, a token
    more)."""
    store = PgStore(pg_dsn)
    store.append(_env("t", "t0"))  # a run, with its lease row
    real = PgStore._attempt
    lost = [False]

    def attempt(self: PgStore, op: Any, channel_id: Any, what: str, **kw: Any) -> Any:
        if what != "take its lease" or lost[0]:
            return real(self, op, channel_id, what, **kw)

        def committed_then_cut(conn: Any) -> Any:
            out = op(conn)
            if not lost[0]:
                lost[0] = True
                conn.close()  # the answer is lost with the connection
                raise psycopg.OperationalError("server closed the connection unexpectedly")
            return out

        return real(self, committed_then_cut, channel_id, what, **kw)

    monkeypatch.setattr(PgStore, "_attempt", attempt)
    lease = store.acquire("t", A, 30)
    assert lost[0] and store.reconnects == 1
    with psycopg.connect(pg_dsn) as conn:
        takes = conn.execute(
            "SELECT token, holder FROM flowc_lease_log WHERE channel_id = 't' ORDER BY token"
        ).fetchall()
    assert takes == [(lease.token, A)]
    store.append(_env("t", "t1"), lease, "t0")  # the lease it was given is the live one
    assert _ids(store, "t") == ["t0", "t1"]


def test_an_unreachable_server_or_bad_url_is_a_clean_error_without_the_password() -> None:
    with pytest.raises(WalError) as info:
        PgStore("postgresql://alice:hunter2@127.0.0.1:1/runs", connect_timeout=5)
    assert str(info.value).startswith(
        "postgresql://alice@127.0.0.1:1/runs: cannot connect "
        "to the database (connection to server at"
    )
    with pytest.raises(WalError) as info:
        PgStore("postgres://alice:hunter2@[::1/runs")
    assert str(info.value).startswith("postgres://alice@[::1/runs: not a valid database URL")
    assert "hunter2" not in str(info.value)


def _woken(wakes: list[str | None], want: list[str | None], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while wakes != want and time.monotonic() < deadline:
        time.sleep(0.02)
    assert wakes == want


def test_the_notifier_wakes_a_worker_on_new_and_given_up_runs_only(pg_dsn: str) -> None:
    store = PgStore(pg_dsn)
    wakes: list[str | None] = []
    notifier = store.notifier()
    notifier.start(wakes.append)
    try:
        _woken(wakes, [None])  # listening: look at the store now
        lease = store.acquire("r", A, 30)
        store.append(_env("r", "e0", EV_CHANNEL_OPENED, metadata={}), lease)
        _woken(wakes, [None, "r"])
        for i in range(1, 4):  # the run's turns wake nobody
            store.append(_env("r", f"e{i}"), lease, f"e{i - 1}")
        store.release(lease)
        _woken(wakes, [None, "r", "r"])
    finally:
        notifier.stop()
    assert notifier._thread is None


def test_the_notifier_listens_again_after_the_server_restarts() -> None:
    with PgCluster() as cluster:
        dsn = cluster.create_database()
        store = PgStore(dsn)
        wakes: list[str | None] = []
        notifier = PgListener(dsn, retry_seconds=0.1)
        notifier.start(wakes.append)
        try:
            _woken(wakes, [None])
            cluster.stop()
            time.sleep(0.5)
            cluster.start()
            _woken(wakes, [None, None])  # back: look at the store
            lease = store.acquire("r", A, 30)
            store.append(_env("r", "e0", EV_CHANNEL_OPENED, metadata={}), lease)
            _woken(wakes, [None, None, "r"])
        finally:
            notifier.stop()


def test_a_process_frozen_inside_a_transaction_does_not_keep_the_run(pg_dsn: str) -> None:
    """A process stopped between the statements of a transaction that locked the run's
    lease row after the lease expired (a take under way, as SIGSTOP could freeze it):
    another holder's take is refused at once while the row is locked (it neither waits
    nor ends a session that may be a live take), and the server ends the frozen session
    after ``_IDLE_MS``, so the run is then taken."""
    frozen, other = PgStore(pg_dsn), PgStore(pg_dsn)
    frozen.acquire("r", A, 0.1)
    time.sleep(0.2)  # the frozen holder's lease expired: free to take
    assert frozen._conn is not None
    frozen._conn.execute("BEGIN")
    frozen._conn.execute("SELECT 1 FROM flowc_lease WHERE channel_id = 'r' FOR UPDATE")
    with pytest.raises(LeaseError, match="is being taken by another process right now"):
        other.acquire("r", B, 30)
    took: list[object] = []
    deadline = time.monotonic() + 30  # the server ends the session after _IDLE_MS (5 s)
    while not took and time.monotonic() < deadline:
        try:
            took.append(other.acquire("r", B, 30))
        except LeaseError:
            time.sleep(0.2)
    assert took, "the frozen session kept the lease row locked"
    assert other.lease_of("r") == took[0]


def test_a_holder_frozen_inside_its_transaction_since_before_its_lease_expired(
    pg_dsn: str,
) -> None:
    """A holder stopped inside a transaction that locked its run's lease row while the
    lease was live, and still stopped when the lease expires: the next take ends its
    session at once (the transaction is rolled back) rather than waiting for the
    server's idle timeout, and takes the run."""
    frozen, other = PgStore(pg_dsn), PgStore(pg_dsn)
    lease = frozen.acquire("r", A, 1.0)
    assert frozen._conn is not None
    frozen._conn.execute("BEGIN")
    frozen._conn.execute("SELECT 1 FROM flowc_lease WHERE channel_id = 'r' FOR UPDATE")
    time.sleep(max(0.0, lease.expires_at - time.time()) + 0.2)
    taken = other.acquire("r", B, 30)
    assert taken.token == lease.token + 1
    with pytest.raises(psycopg.OperationalError):
        frozen._conn.execute("SELECT 1")  # its session was ended


def test_the_tables_can_live_in_a_schema_of_their_own(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA runs_a")
    # the URL form the docs give
    store = PgStore(f"{pg_dsn}?options=-csearch_path%3Druns_a")
    store.append(_env("r", "e1"))
    assert _ids(store, "r") == ["e1"]
    with psycopg.connect(pg_dsn) as conn:
        found = conn.execute("SELECT schemaname FROM pg_tables WHERE tablename = 'flowc_wal'")
        assert found.fetchall() == [("runs_a",)]
    assert PgStore(pg_dsn, readonly=True).channel_ids() == []  # public holds none


def _opened(store: PgStore, cid: str, holder: str, seconds: float, **labels: Any) -> None:
    """A run ``cid`` opened under a lease of ``holder`` that lasts ``seconds`` (its
    opening labelled ``labels``), the lease left to expire."""
    lease = store.acquire(cid, holder, seconds)
    store.append(_env(cid, f"{cid}0", EV_CHANNEL_OPENED, metadata={"labels": labels}), lease)


def test_a_claim_takes_free_runs_together_skipping_rows_another_session_locked(
    pg_dsn: str,
) -> None:
    """Several runs' leases in one transaction, oldest first: never a run another session
    has locked (it is neither waited for nor refused: left out), nor a live, closed,
    unlabelled or skipped one; each take logged as `acquire` logs it, each run's WAL and
    links as they stand once the lease is held, and the old holder fenced out."""
    store, other = PgStore(pg_dsn), PgStore(pg_dsn)
    for cid in ("r1", "r2", "r3", "r4", "r5"):
        _opened(store, cid, A, 0.1, job=1)
    old = store.acquire("r2", A, 0.1)  # r2's holder, about to be taken over
    store.append(_env("r2", "r2-1"), old, "r20")
    _opened(store, "plain", A, 0.1)  # no label: not a run the claim is for
    _opened(store, "live", A, 600, job=1)
    closed = store.acquire("r5", A, 30)
    store.append(_env("r5", "r5-1", "ag2.channel.closed", reason="x"), closed, "r50")
    store.release(closed)
    time.sleep(0.2)
    locker = psycopg.connect(pg_dsn)
    try:
        locker.execute("SELECT 1 FROM flowc_lease WHERE channel_id = 'r1' FOR UPDATE")
        got: list[Any] = []
        claiming = threading.Thread(
            target=lambda: got.extend(store.claim(B, 2, 30, skip={"r3"}, label="job"))
        )
        claiming.start()
        claiming.join(10)
        assert not claiming.is_alive(), "the claim waited for the row another session locked"
        assert [c.lease.channel_id for c in got] == ["r2", "r4"]
    finally:
        locker.rollback()
        locker.close()
    r2 = got[0]
    assert (r2.lease.holder, r2.lease.token) == (B, old.token + 1)
    assert r2.envelopes == list(store.read("r2")) and r2.links == store.links("r2")
    assert [e.envelope_id for e in r2.envelopes] == ["r20", "r2-1"]
    with pytest.raises(LeaseError):
        store.append(_env("r2", "r2-2"), old, "r2-1")
    with psycopg.connect(pg_dsn) as conn:
        log = conn.execute(
            "SELECT channel_id, token, holder, after_seq = (SELECT MAX(seq) FROM flowc_wal w "
            "WHERE w.channel_id = l.channel_id), previous, previous_state "
            "FROM flowc_lease_log l WHERE holder = %s ORDER BY channel_id",
            (B,),
        ).fetchall()
    assert log == [("r2", old.token + 1, B, True, A, "expired"), ("r4", 2, B, True, A, "expired")]
    # r1 (unlocked now) and r3 are left; the live, closed and unlabelled runs never
    rest = other.claim(C, 10, 30, label="job")
    assert [c.lease.channel_id for c in rest] == ["r1", "r3"]
    assert store.claim(C, 10, 30, skip={"r1", "r3"}, label="job") == []
    store.close()
    other.close()


def test_a_claim_takes_again_the_runs_its_holder_holds_but_does_not_drive(pg_dsn: str) -> None:
    """A claim whose commit went through but whose answer was lost (the connection broke)
    leaves runs leased to its holder that no task drives: the holder's next claim takes
    them again (each with a new token) unless it names them in ``skip`` (those it
    drives); another holder cannot take them while they are live."""
    store = PgStore(pg_dsn)
    for cid in ("q1", "q2", "q3"):
        _opened(store, cid, A, 0.1, job=1)
    time.sleep(0.2)
    first = store.claim(C, 3, 30, label="job")
    assert [c.lease.channel_id for c in first] == ["q1", "q2", "q3"]
    assert store.claim(B, 3, 30, label="job") == []  # live leases of C
    again = store.claim(C, 3, 30, skip={"q2"}, label="job")
    assert [c.lease.channel_id for c in again] == ["q1", "q3"]
    assert [c.lease.token for c in again] == [first[0].lease.token + 1, first[2].lease.token + 1]
    with pytest.raises(LeaseError):  # the lost claim's lease is no longer current
        store.append(_env("q1", "q1-1"), first[0].lease, "q10")
    store.append(_env("q1", "q1-1"), again[0].lease, "q10")
    store.close()
