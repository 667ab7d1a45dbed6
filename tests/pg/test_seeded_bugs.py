"""Seeded bugs: the store's guards switched off, one at a time, in real worker processes
(the test hook of flowc/runtime/pgstore.py: ``FLOWC_TEST_HOOKS=1`` and
``FLOWC_TEST_DISABLE_GUARD=NAME``), each under the fault schedule that needs it; the
independent history checker (tests/pg/history.py) must reject the history each bug
leaves, and find nothing in the same schedule with every guard on.

The schedule (a stale writer): worker A drives a run of counting agents and holds it at
turn ``HOLD`` (its agent waits for a gate file); A is paused (SIGSTOP) past its lease;
worker B takes the run over and holds it at the same turn (its own gate, not made yet),
so B writes nothing before A goes on; A is continued (SIGCONT) and answers turn
``HOLD``. With the guards on, A's write is refused, A drops the run, B's gate opens and
B finishes it. With the fence off, A's write is accepted under its old token and A
finishes the run as a holder whose lease was taken over.

The schedule without a fault (a slow agent): worker A holds its run at turn ``HOLD``
for several lease lengths (a slow agent, nothing else), worker B idles beside it. With
the guards on, A's heartbeat keeps the lease and B never takes the run. With the lease
expiry check off, B takes a lease A holds live; with the heartbeat off, A's lease
expires under it and B takes the run: either way a lease changed hands with no fault to
explain it.

The schedule of a lost answer: worker A, talking to the database through a fault proxy
(tests/pg/faultproxy.py), holds its run at turn ``HOLD``; worker B idles beside it; the
proxy is told to cut A's next commit's connection once the server has committed it, and
A answers turn ``HOLD``: A's write is in the log and A is told nothing. With the guards
on, A's retry (on a new connection at once) recognises its own envelope and A goes on
with the run: no lease changes hands. With the idempotent retry off (``retry``), A's
retry is refused (its envelope id is taken), A stops the run, its stall record (which
follows the last envelope A was told of) is refused by the previous-envelope check, and
A gives the run back in the middle, to be taken again (by A or B): a lease changed hands
that no fault explains (a lost answer, the connection working again at once, is no
such fault), which the checker finds. No turn is written twice or lost: that is what
the other guards keep.

The schedule of a failing turn whose record's answer is lost: worker A, behind a fault
proxy, holds its run at turn ``HOLD``, whose agent then fails (in every worker); worker
B idles beside it. The proxy cuts the connection of A's write of the failed turn's
record (``flowc.turn.failed``) once the server has done it, and again that of its retry:
the record is in the log, and A is told the database is unavailable. A's hub goes on to
write the run's stall (a failed turn stops the run), naming as the envelope it follows
the last one it was told is written, the turn before. With the guards on, the
previous-envelope check refuses it; A gives the run back, and the worker that takes it
finds the record, tries the turn again, fails again and parks the run: the turns
before ``HOLD``, the run open. With that check off (``follows``), the stall is written
after the record, naming the turn before it: the checker finds a record that does not
follow the one before it."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.pg.faultproxy import FaultProxy
from tests.pg.history import Expected, check_history
from tests.runtime.worker_harness import (
    AGENTS,
    agent_run,
    closed_count,
    counted_turns,
    events,
    holding_at,
    kill_left,
    open_db,
    start_worker,
    stop_worker,
    wait_until,
)

TOTAL, HOLD = 40, 20
LEASE = 1.0


def _expected(run_id: str) -> Expected:
    return [f"t{i}" for i in range(TOTAL)], "max_turns"


def _hook(guard: str | None) -> dict[str, str]:
    return {"FLOWC_TEST_HOOKS": "1", "FLOWC_TEST_DISABLE_GUARD": guard} if guard else {}


def _stale_writer(db: str, folder: Path, guard: str | None) -> tuple[str, Path, Path, int]:
    """The schedule above, with ``guard`` off in both workers; the run, A's and B's logs."""
    cid = agent_run(db, folder, TOTAL)
    log_a, log_b = folder / "a.log", folder / "b.log"
    gate_a, gate_b = folder / "gate-a", folder / "gate-b"
    hook = _hook(guard)
    a = start_worker(
        db,
        log_a,
        "--agents",
        str(AGENTS),
        lease_seconds=LEASE,
        env={**holding_at(HOLD, gate_a), **hook},
    )
    store = open_db(db)
    b = None
    try:
        wait_until(lambda: len(counted_turns(store, cid)) == HOLD, 60, "A to hold the run", [a])
        a.send_signal(signal.SIGSTOP)
        gate_a.touch()  # A answers turn HOLD as soon as it is continued
        b = start_worker(
            db,
            log_b,
            "--agents",
            str(AGENTS),
            lease_seconds=LEASE,
            env={**holding_at(HOLD, gate_b), **hook},
        )
        wait_until(
            lambda: f"claimed {cid} taken over" in log_b.read_text().splitlines(),
            60,
            "B to take the run over",
            [b],
        )
        assert len(counted_turns(store, cid)) == HOLD  # B holds: nothing written since A
        a.send_signal(signal.SIGCONT)
        wait_until(
            lambda: cid in events(log_a, "lost") or cid in events(log_a, "closed"),
            30,
            "A to go on",
            [a],
        )
        gate_b.touch()
        wait_until(
            lambda: (
                closed_count(store, [cid]) == 1
                and (cid in events(log_b, "lost") or cid in events(log_b, "closed"))
            ),
            60,
            "the run to close",
            [a, b],
        )
        for proc in (a, b):
            stop_worker(proc)
    finally:
        kill_left([a, b])
        store.close()
    return cid, log_a, log_b, a.pid


def _slow_agent(db: str, folder: Path, guard: str | None) -> tuple[str, Path, Path, int]:
    """The schedule without a fault, with ``guard`` off in both workers."""
    cid = agent_run(db, folder, TOTAL)
    log_a, log_b = folder / "a.log", folder / "b.log"
    gate_a = folder / "gate-a"
    hook = _hook(guard)
    a = start_worker(
        db,
        log_a,
        "--agents",
        str(AGENTS),
        lease_seconds=LEASE,
        env={**holding_at(HOLD, gate_a), **hook},
    )
    store = open_db(db)
    b = None
    try:
        wait_until(lambda: len(counted_turns(store, cid)) == HOLD, 60, "A to hold the run", [a])
        b = start_worker(db, log_b, "--agents", str(AGENTS), lease_seconds=LEASE, env=hook)
        if guard is None:
            # nothing to wait for: the run must stay A's for several lease lengths
            time.sleep(4 * LEASE)
            assert cid not in events(log_b, "claimed"), log_b.read_text()
        else:
            wait_until(
                lambda: f"claimed {cid} taken over" in log_b.read_text().splitlines(),
                60,
                "B to take the run",
                [b],
            )
        gate_a.touch()
        wait_until(lambda: closed_count(store, [cid]) == 1, 60, "the run to close", [a, b])
        wait_until(
            lambda: cid in events(log_a, "lost") or cid in events(log_a, "closed"),
            30,
            "A to be done with the run",
            [a],
        )
        for proc in (a, b):
            stop_worker(proc)
    finally:
        kill_left([a, b])
        store.close()
    return cid, log_a, log_b, a.pid


def _lost_answer(db: str, folder: Path, guard: str | None) -> tuple[str, Path, Path, int]:
    """The lost answer's schedule, with ``guard`` off in both workers."""
    port = int(db.split("127.0.0.1:")[1].split("/")[0])
    proxy = FaultProxy(port)
    cid = agent_run(db, folder, TOTAL)
    log_a, log_b = folder / "a.log", folder / "b.log"
    gate_a = folder / "gate-a"
    hook = _hook(guard)
    a = start_worker(
        proxy.url(db),
        log_a,
        "--agents",
        str(AGENTS),
        lease_seconds=LEASE,
        env={**holding_at(HOLD, gate_a), **hook},
    )
    store = open_db(db)
    b = None
    try:
        wait_until(lambda: len(counted_turns(store, cid)) == HOLD, 60, "A to hold the run", [a])
        b = start_worker(db, log_b, "--agents", str(AGENTS), lease_seconds=LEASE, env=hook)
        # A is idle: its next commit that appends is turn HOLD's (a claim A makes
        # meanwhile, to look for other runs, also commits: that one is let through)
        proxy.cut_commits(1, after=b'"event_data"')
        gate_a.touch()
        wait_until(lambda: proxy.commits_cut == 1, 30, "A's commit to be cut", [a, b])
        wait_until(lambda: closed_count(store, [cid]) == 1, 60, "the run to close", [a, b])
        time.sleep(LEASE)
        for proc in (a, b):
            stop_worker(proc)
    finally:
        kill_left([a, b])
        store.close()
        proxy.close()
    return cid, log_a, log_b, a.pid


def _expected_failing(run_id: str) -> Expected:
    """The failing turn's schedule: the turns before ``HOLD``, and the run left open
    (stalled on the turn that fails)."""
    return [f"t{i}" for i in range(HOLD)], None


def _stalled_on(store: Any, cid: str) -> bool:
    return [e.event_type for e in store.read(cid)][-1:] == ["flowc.run.stalled"]


def _failing_turn(db: str, folder: Path, guard: str | None) -> tuple[str, Path, Path, int]:
    """The failing turn's schedule, with ``guard`` off in both workers."""
    proxy = FaultProxy(int(db.split("127.0.0.1:")[1].split("/")[0]))
    cid = agent_run(db, folder, TOTAL)
    log_a, log_b = folder / "a.log", folder / "b.log"
    gate_a = folder / "gate-a"
    hook = _hook(guard)
    fails = {"FLOWC_TEST_FAIL_AT": str(HOLD)}  # every worker's agent fails turn HOLD
    a = start_worker(
        proxy.url(db),
        log_a,
        "--agents",
        str(AGENTS),
        lease_seconds=LEASE,
        env={**holding_at(HOLD, gate_a), **fails, **hook},
    )
    store = open_db(db)
    b = None
    try:
        wait_until(lambda: len(counted_turns(store, cid)) == HOLD, 60, "A to hold the run", [a])
        b = start_worker(
            db, log_b, "--agents", str(AGENTS), lease_seconds=LEASE, env={**fails, **hook}
        )
        # the record of A's failed turn, and its retry's, reach the database; the
        # answers do not
        proxy.cut_answers(2, after=b"flowc.turn.failed")
        gate_a.touch()
        wait_until(lambda: proxy.answers_cut == 2, 30, "A's record to be cut twice", [a, b])
        wait_until(lambda: _stalled_on(store, cid), 60, "the run to stall", [a, b])
        for proc in (a, b):
            stop_worker(proc)
    finally:
        kill_left([a, b])
        store.close()
        proxy.close()
    return cid, log_a, log_b, a.pid


def test_with_every_guard_on_the_stale_writer_is_refused_and_the_history_is_clean(
    pg_cluster: object, tmp_path: Path
) -> None:
    db = pg_cluster.create_database()  # type: ignore[attr-defined]
    cid, log_a, log_b, pid_a = _stale_writer(db, tmp_path, None)
    lost = [line for line in log_a.read_text().splitlines() if line.startswith(f"lost {cid}")]
    assert lost and "refused" in lost[0], log_a.read_text()
    assert cid in events(log_b, "closed")
    assert check_history(db, _expected, faulted={pid_a}) == []


def test_with_every_guard_on_a_slow_agent_keeps_its_run_and_the_history_is_clean(
    pg_cluster: object, tmp_path: Path
) -> None:
    db = pg_cluster.create_database()  # type: ignore[attr-defined]
    cid, log_a, _, _ = _slow_agent(db, tmp_path, None)
    assert cid in events(log_a, "closed")
    assert check_history(db, _expected, faulted=set()) == []


def test_with_every_guard_on_a_lost_answer_is_recognised_and_the_history_is_clean(
    pg_cluster: object, tmp_path: Path
) -> None:
    db = pg_cluster.create_database()  # type: ignore[attr-defined]
    cid, log_a, log_b, _ = _lost_answer(db, tmp_path, None)
    assert cid in events(log_a, "closed") and cid not in events(log_a, "lost"), log_a.read_text()
    assert not events(log_b, "claimed"), log_b.read_text()
    # a lost answer, the connection working again at once, is no fault that may cost
    # its writer the run
    assert check_history(db, _expected, faulted=set()) == []


def test_with_every_guard_on_a_failing_turn_unacknowledged_is_parked_and_the_history_is_clean(
    pg_cluster: object, tmp_path: Path
) -> None:
    db = pg_cluster.create_database()  # type: ignore[attr-defined]
    cid, log_a, log_b, pid_a = _failing_turn(db, tmp_path, None)
    lost = [line for line in log_a.read_text().splitlines() if line.startswith(f"lost {cid}")]
    assert lost and "another writer appended" in lost[0], log_a.read_text()
    assert cid in events(log_a, "stalled") + events(log_b, "stalled")
    store = open_db(db)
    try:  # the record of the failed turn, written once by A, once by the worker after it
        kinds = [e.event_type for e in store.read(cid)]
    finally:
        store.close()
    assert kinds[-3:] == ["flowc.turn.failed", "flowc.turn.failed", "flowc.run.stalled"]
    # A's store was unavailable to it (the answer of its retry lost too): it may give
    # the run back
    assert check_history(db, _expected_failing, faulted={pid_a}) == []


#: each schedule's faults (A paused, or cut off: its store unavailable to it), what A's
#: log says of the run with the guard off, and what the run should be
_SCHEDULES: dict[Any, tuple[bool, str | None, Any]] = {
    # the stale writer finished the run: the bug shows
    _stale_writer: (True, "closed", _expected),
    # the slow agent lost it: its write refused after the lease changed hands
    _slow_agent: (False, "lost", _expected),
    # the writer whose answer was lost found its own write refused, and gave the run back
    _lost_answer: (False, "lost", _expected),
    # the failed turn's writer was told its store failed
    _failing_turn: (True, "failed", _expected_failing),
}


@pytest.mark.parametrize(
    ("guard", "schedule", "found"),
    [
        ("fence", _stale_writer, "a holder that lost its lease wrote on"),
        ("expiry", _slow_agent, "while its lease was live, and that process was not killed"),
        ("heartbeat", _slow_agent, "whose lease expired, and no fault touched that process"),
        ("follows", _failing_turn, "but the one before it is"),
        ("retry", _lost_answer, "gave the run back mid-way"),
    ],
)
def test_a_guard_switched_off_leaves_a_history_the_checker_rejects(
    pg_cluster: object, tmp_path: Path, guard: str, schedule: Any, found: str
) -> None:
    db = pg_cluster.create_database()  # type: ignore[attr-defined]
    cid, log_a, _, pid_a = schedule(db, tmp_path, guard)
    paused_or_cut_off, says, expected = _SCHEDULES[schedule]
    if says is not None:
        assert cid in events(log_a, says), log_a.read_text()
    problems = check_history(db, expected, faulted={pid_a} if paused_or_cut_off else set())
    assert any(found in p and cid in p for p in problems), problems


def test_the_hook_is_ignored_unless_test_hooks_are_switched_on(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flowc.runtime.pgstore import PgStore
    from flowc.runtime.wal import WalError

    monkeypatch.setenv("FLOWC_TEST_DISABLE_GUARD", "fence")
    monkeypatch.delenv("FLOWC_TEST_HOOKS", raising=False)
    store = PgStore(pg_dsn)
    assert store._off is None
    store.close()
    monkeypatch.setenv("FLOWC_TEST_HOOKS", "1")
    store = PgStore(pg_dsn)
    assert store._off == "fence"
    store.close()
    monkeypatch.setenv("FLOWC_TEST_DISABLE_GUARD", "fences")
    with pytest.raises(WalError, match="not one of fence, follows, expiry, heartbeat, retry"):
        PgStore(pg_dsn)
