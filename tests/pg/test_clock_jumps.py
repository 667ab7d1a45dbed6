"""Clock jumps on the workers (issue 31, point 2): three real workers drive many runs on
the real PostgreSQL while the wall clock of two of them jumps forward and back by up to
two hours on a fixed-seed random schedule (tests/pg/clockjump/sitecustomize.py shifts
each one's ``time.time``). The runs wait at turn 6 until the schedule is over, so that
every jump falls while the workers hold runs (and must keep renewing their leases); the
first jump sets a clock back an hour for two and a half leases. Leases are decided by the database's clock, so no decision
may depend on a worker's: every run is exactly its script, and no lease changes hands
at all (the independent history checker, tests/pg/history.py, is told that no worker
was faulted). A worker that timed its lease renewals on the wall clock stops renewing
for as long as its clock is set back, and loses its runs to the others.

Profiles: seed 0 in CI; ``FLOWC_FAULT_SEEDS=0-19 FLOWC_FAULT_RUNS=60`` explores more."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from tests.pg.history import check_history
from tests.pg.test_faults import LEASE, RUNS, TURNS, _expected, _finish, _seeds
from tests.runtime.worker_harness import (
    AGENTS,
    ROOT,
    agent_runs,
    events,
    holding_at,
    kill_left,
    start_worker,
)

SHIMS = Path(__file__).parent / "clockjump"
#: the turn the runs wait at, and how many random jumps follow the two first ones
HOLD = 6
SCHEDULED = 6
#: the jumps, in seconds (back and forth by minutes and hours, and back to the truth)
JUMPS = (-7200.0, -3600.0, -600.0, -60.0, 0.0, 60.0, 600.0, 3600.0, 7200.0)


@pytest.mark.parametrize("seed", _seeds())
def test_clock_jumps_change_no_lease_decision(
    pg_cluster: object, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    db = pg_cluster.create_database()  # type: ignore[attr-defined]
    ids = agent_runs(db, tmp_path, TURNS, RUNS)  # the workers' counting agents speak
    clocks = [tmp_path / f"clock{i}" for i in range(2)]
    for clock in clocks:
        clock.write_text("0")
    logs = [tmp_path / f"worker{i}.log" for i in range(3)]
    gate = tmp_path / "go"
    procs = []
    for i, log in enumerate(logs):
        env = holding_at(HOLD, gate)
        if i < len(clocks):
            env |= {"PYTHONPATH": f"{ROOT}:{SHIMS}", "FLOWC_TEST_CLOCK_FILE": str(clocks[i])}
        procs.append(
            start_worker(
                db,
                log,
                "--agents",
                str(AGENTS),
                "--concurrency",
                "8",
                lease_seconds=LEASE,
                env=env,
            )
        )
    # first an hour back on worker 0 for 2.5 leases, an hour ahead on worker 1, then random
    schedule = [(0, -3600.0, 2.5 * LEASE), (1, 3600.0, LEASE)]
    schedule += [
        (rng.randrange(len(clocks)), rng.choice(JUMPS), rng.uniform(0.2, 2 * LEASE))
        for _ in range(SCHEDULED)
    ]
    try:
        for i, offset, held in schedule:
            clocks[i].write_text(str(offset))
            time.sleep(held)
        for clock in clocks:
            clock.write_text("0")
        gate.touch()
        _finish(db, ids, procs, 90)
    finally:
        kill_left(procs)
    # the shifted clock was in force in both workers (not skipped by another sitecustomize)
    loaded = {int(Path(f"{clock}.loaded").read_text()) for clock in clocks}
    assert loaded == {procs[0].pid, procs[1].pid}
    lost = {str(log.name): events(log, "lost") for log in logs}
    assert not any(lost.values()), f"runs lost to a clock jump: {lost}"
    # no worker was faulted: a lease that changed hands at all is an anomaly
    assert check_history(db, _expected, faulted=set()) == []
