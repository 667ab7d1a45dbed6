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

Not seeded here: the previous-envelope check (``follows``) guards against a second
writer under the SAME token, which no schedule of whole worker processes makes while
the fence holds (a stale writer is refused by the fence first); and the idempotent
retry, which needs a commit whose answer is lost (a connection cut inside the commit:
the fault proxy's work)."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

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


@pytest.mark.parametrize(
    ("guard", "schedule", "found"),
    [
        ("fence", _stale_writer, "a holder that lost its lease wrote on"),
        ("expiry", _slow_agent, "while its lease was live, and that process was not killed"),
        ("heartbeat", _slow_agent, "whose lease expired, and no fault touched that process"),
    ],
)
def test_a_guard_switched_off_leaves_a_history_the_checker_rejects(
    pg_cluster: object, tmp_path: Path, guard: str, schedule: Any, found: str
) -> None:
    db = pg_cluster.create_database()  # type: ignore[attr-defined]
    cid, log_a, _, pid_a = schedule(db, tmp_path, guard)
    # the schedule's faults: A paused in the stale writer's, none in the slow agent's
    faulted = {pid_a} if schedule is _stale_writer else set()
    # A's log names the run: the stale writer finished it (the bug shows), the slow
    # agent's lost it (its write refused after the lease changed hands)
    assert cid in events(log_a, "closed" if guard == "fence" else "lost"), log_a.read_text()
    problems = check_history(db, _expected, faulted=faulted)
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
    with pytest.raises(WalError, match="not one of fence, follows, expiry, heartbeat"):
        PgStore(pg_dsn)
