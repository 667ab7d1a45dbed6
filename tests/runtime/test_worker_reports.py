"""What a `flowc worker` reports is what it did: the properties a run broke are reported by
the worker that drove the run, as its close is, never by a worker that found the run
closed (another worker having run it). Real processes on a real SQLite file."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.cli.cli_runs import REVIEW_FLOW
from tests.runtime.worker_harness import events, start_worker, stop_worker, submit

SCRIPT = "{kickoff: hi, script: {drafter: [d, d2], reviewer: [r1, {tool: approve, say: ok}]}}\n"


def _wait_for(log: Path, done: Callable[[], bool], worker: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, log.read_text()
        assert worker.poll() is None, log.read_text()
        time.sleep(0.05)


def test_a_worker_reports_no_violation_of_runs_it_did_not_run(tmp_path: Path) -> None:
    (tmp_path / "a.flow").write_text(REVIEW_FLOW)
    (tmp_path / "s.yaml").write_text(SCRIPT)
    db = str(tmp_path / "w2.db")
    ids = submit(db, tmp_path / "a.flow", tmp_path / "s.yaml", 3)
    first = tmp_path / "first.log"
    worker = start_worker(db, first, lease_seconds=1.0)
    try:
        _wait_for(first, lambda: len(events(first, "closed")) == 3, worker)
    finally:
        stop_worker(worker)
    assert sorted(events(first, "violated")) == sorted(ids)
    assert "violated " + ids[0] + " property one_draft on turn 4" in first.read_text()
    # a second worker finds every run closed: it ran none, so it reports none of them
    second = tmp_path / "second.log"
    worker = start_worker(db, second, lease_seconds=1.0)
    try:
        _wait_for(second, lambda: " serving " in second.read_text(), worker)
        time.sleep(3.0)  # past two leases: every run it could look at, it has looked at
    finally:
        stop_worker(worker)
    said = second.read_text()
    assert events(second, "violated") == [], said
    assert "stopped: 0 runs closed" in said
