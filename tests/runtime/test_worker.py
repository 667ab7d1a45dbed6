"""`flowc submit` and `flowc worker` on a SQLite file (workers on one host); the
PostgreSQL versions, the subject of these commands, are in tests/pg."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from flowc.runtime.wal import SqliteStore
from tests.runtime.test_leases import _stop_between_transactions
from tests.runtime.worker_harness import (
    AGENTS,
    RR_FLOW,
    a_failed_write,
    events,
    flowc,
    killed_workers_runs_are_taken_over,
    paused_worker_is_fenced,
    rr_script,
    serve_and_stop,
    stalled_run_is_left_to_later_workers,
    start_worker,
    stop_worker,
    stopped_worker_gives_its_run_back,
    three_workers_one_killed,
)


def test_three_workers_one_killed_every_run_finishes_as_a_single_process_run(
    tmp_path: Path,
) -> None:
    three_workers_one_killed(str(tmp_path / "runs.db"), tmp_path, runs=200)


def test_a_paused_worker_has_its_writes_refused(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    paused_worker_is_fenced(str(db), tmp_path, lambda proc: _stop_between_transactions(proc, db))


def test_a_killed_workers_runs_are_taken_over_and_counted(tmp_path: Path) -> None:
    killed_workers_runs_are_taken_over(str(tmp_path / "runs.db"), tmp_path)


def test_sigterm_gives_the_runs_back_at_once(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"

    def lease_row(cid: str) -> tuple[str, bool]:
        con = sqlite3.connect(db)
        try:
            row = con.execute(
                "SELECT holder, expires_at FROM lease WHERE channel_id = ?", (cid,)
            ).fetchone()
        finally:
            con.close()
        assert row is not None
        return str(row[0]), float(row[1]) > time.time()

    stopped_worker_gives_its_run_back(str(db), tmp_path, lease_row)


def test_a_run_that_stalls_is_parked_not_retried(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    flow = tmp_path / "rr.flow"
    flow.write_text(RR_FLOW.format(max_turns=30))
    script = tmp_path / "short.json"
    import json

    script.write_text(json.dumps(rr_script(10)))  # 10 of the 30 turns
    proc = flowc("submit", str(flow), "--script", str(script), "--db", str(db))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    cid = out.decode().strip()
    log = tmp_path / "w.log"
    worker = start_worker(str(db), log, lease_seconds=1.0)
    try:
        deadline = time.monotonic() + 30
        while not events(log, "stalled"):
            assert time.monotonic() < deadline and worker.poll() is None
            time.sleep(0.05)
        time.sleep(2.0)  # four polls: the parked run is not tried again
        assert events(log, "stalled") == [cid]
        assert events(log, "claimed") == [cid]
        assert f"stalled {cid} on b" in log.read_text()  # turn 11 is b's
        store = SqliteStore(db)
        assert store.lease_of(cid) is None  # left for `flowc resume` (or a human)
        assert sum(1 for e in store.read(cid) if e.event_type == "ag2.packet") == 9
        store.close()
        # `flowc log` says so: stalled, waiting for b (not merely "open")
        listed = flowc("log", "--db", str(db))
        out, err = listed.communicate(timeout=60)
        assert listed.returncode == 0, err.decode()
        [line] = [x for x in out.decode().splitlines() if x.startswith(cid)]
        assert line.endswith("stalled (waits for b)"), line
        listed = flowc("log", "--db", str(db), "--json")
        out, err = listed.communicate(timeout=60)
        [run] = [r for r in json.loads(out) if r["run_id"] == cid]
        assert (run["status"], run["stalled_on"]) == ("stalled", "b"), run
    finally:
        stop_worker(worker)


def test_a_stalled_run_is_left_to_later_workers_until_its_log_grows(tmp_path: Path) -> None:
    stalled_run_is_left_to_later_workers(str(tmp_path / "runs.db"), tmp_path)


def test_submit_checks_the_script_and_writes_nothing_when_it_is_wrong(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    flow = tmp_path / "rr.flow"
    flow.write_text(RR_FLOW.format(max_turns=30))
    script = tmp_path / "bad.json"
    script.write_text('{"script": {"zed": ["hi"]}}')
    proc = flowc("submit", str(flow), "--script", str(script), "--db", str(db))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "zed" in err.decode() and "Traceback" not in err.decode()
    assert not db.exists()  # refused before the database is opened: not even created
    # a database that exists is left as it was
    assert flowc("submit", str(flow), "--db", str(db)).wait(timeout=60) == 0
    before = db.read_bytes()
    proc = flowc("submit", str(flow), "--script", str(script), "--db", str(db))
    assert proc.wait(timeout=60) == 1
    assert db.read_bytes() == before and len(SqliteStore(db).channel_ids()) == 1


def test_worker_usage_errors(tmp_path: Path) -> None:
    for args, message in [
        (["--db", ":memory:"], "keeps the runs in this process"),
        (["--db", str(tmp_path / "r.db"), "--concurrency", "0"], "at least 1"),
        (["--db", str(tmp_path / "r.db"), "--agents", str(tmp_path / "none.py")], "no such file"),
    ]:
        proc = flowc("worker", *args)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, (args, err.decode())
        assert message in err.decode() and "Traceback" not in err.decode()


def test_ctrl_c_stops_the_worker_cleanly(tmp_path: Path) -> None:
    log = tmp_path / "w.log"
    worker = start_worker(str(tmp_path / "runs.db"), log)
    deadline = time.monotonic() + 30
    while "serving" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    worker.send_signal(signal.SIGINT)
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err.decode()
    assert "stopped: 0 runs closed" in log.read_text()
    assert isinstance(worker, subprocess.Popen)


def test_a_worker_stopped_as_soon_as_it_says_serving_stops_cleanly(tmp_path: Path) -> None:
    """The `serving` line is printed once SIGTERM and Ctrl-C stop the worker cleanly: a
    supervisor (or a test) may stop it the moment it reads that line. (Printed before the
    handlers were set, the signal killed about half such workers outright.)"""
    for i, sig in enumerate([signal.SIGTERM, signal.SIGINT] * 3):
        worker = flowc("worker", "--db", str(tmp_path / "runs.db"))
        assert worker.stdout is not None
        while b"serving" not in (said := worker.stdout.readline()):
            assert said, "the worker ended without serving"
        worker.send_signal(sig)
        out, err = worker.communicate(timeout=30)
        assert worker.returncode == 0, (i, sig, worker.returncode, err.decode())
        assert b"stopped: 0 runs closed" in out and b"Traceback" not in err


def test_a_run_started_by_flowc_run_is_left_to_its_owner(tmp_path: Path) -> None:
    """An interrupted `flowc run` stays open for `flowc resume`: a worker, even one with
    agents for its speakers, does not take it."""
    import json

    db = tmp_path / "runs.db"
    flow = tmp_path / "rr.flow"
    flow.write_text(RR_FLOW.format(max_turns=30))
    script = tmp_path / "short.json"
    script.write_text(json.dumps(rr_script(4)))
    run = flowc("run", str(flow), "--script", str(script), "--db", str(db))
    _, err = run.communicate(timeout=60)
    assert run.returncode == 1, err.decode()  # stalled on b, open
    [cid] = SqliteStore(db).channel_ids()
    submitted = flowc("submit", str(flow), "--db", str(db))
    out, err = submitted.communicate(timeout=60)
    assert submitted.returncode == 0, err.decode()
    log = tmp_path / "w.log"
    worker = start_worker(str(db), log, "--agents", str(AGENTS))
    try:
        deadline = time.monotonic() + 30
        while out.decode().strip() not in events(log, "closed"):
            assert time.monotonic() < deadline and worker.poll() is None
            time.sleep(0.05)
        time.sleep(1.0)  # two polls more
    finally:
        stop_worker(worker)
    assert cid not in log.read_text()
    store = SqliteStore(db)
    assert sum(1 for e in store.read(cid) if e.event_type in ("ag2.msg.text", "ag2.packet")) == 4
    store.close()


def test_every_event_is_one_line_whatever_its_message_holds(tmp_path: Path) -> None:
    """An agent's error over several lines (as a database's often is), and a speaker whose
    name holds a control character: each event is still one line of the worker's log,
    its line breaks written as ``\\n`` (a tab stays a tab)."""
    import json

    db = tmp_path / "runs.db"
    flow = tmp_path / "two.flow"
    flow.write_text("speaker a: human\nspeaker `b \x1b[2J`\nwhen from a then `b \x1b[2J`\n")
    agents = tmp_path / "agents.py"
    agents.write_text(
        "async def fail(turn):\n"
        "    raise RuntimeError('cannot answer\\nDETAIL:  the model went away\\n\\tHINT: later')\n"
        "AGENTS = {'b \\x1b[2J': fail}\n"
    )
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"kickoff": "hi", "script": {}}))
    proc = flowc("submit", str(flow), "--script", str(script), "--db", str(db))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    cid = out.decode().strip()
    log = tmp_path / "w.log"
    worker = start_worker(str(db), log, "--agents", str(agents))
    try:
        deadline = time.monotonic() + 30
        while not events(log, "stalled"):
            assert time.monotonic() < deadline and worker.poll() is None, log.read_text()
            time.sleep(0.05)
    finally:
        stop_worker(worker)
    lines = log.read_text().splitlines()
    assert all(line.split(" ", 1)[0] in ("worker", "claimed", "stalled") for line in lines), lines
    [stalled] = [line for line in lines if line.startswith("stalled ")]
    assert stalled.startswith(f"stalled {cid} on b \\x1b[2J: RuntimeError: cannot answer\\n")
    assert "DETAIL:  the model went away\\n\tHINT: later" in stalled


def test_postgresql_only_options_given_on_sqlite_are_warned_about_once(tmp_path: Path) -> None:
    """Group commit and per-turn notifications are PostgreSQL's: a worker on a SQLite file
    given --commit-batch or --notify-appends says once, on stderr, that they do nothing
    here, naming the options given (and only those), and serves as it would without them.
    Left to their defaults, nothing is said."""
    db = tmp_path / "runs.db"
    err = serve_and_stop(str(db), "--commit-batch", "8", "--notify-appends")
    assert err.splitlines() == [
        "flowc worker: warning: --commit-batch and --notify-appends apply to a PostgreSQL "
        "run database only: SQLite commits each turn on its own and sends no notifications"
    ]
    assert serve_and_stop(str(db), "--concurrency", "2") == ""


def test_which_worker_options_are_warned_about() -> None:
    """The decision, on the parsed command line: given (even at its default value) on
    SQLite, warned; left out, or given on PostgreSQL, not; the options left out get their
    defaults either way."""
    from flowc import cli
    from flowc.commands import worker
    from flowc.commands.worker import _resolve_defaults, postgres_only_warning

    parser = cli.build_parser([worker])
    pg = "postgresql://flowc@db.example/runs"

    def decide(*argv: str) -> tuple[str | None, tuple[int, float, bool]]:
        args = parser.parse_args(["worker", *argv])
        warning = postgres_only_warning(args.db, _resolve_defaults(args))
        return warning, (args.commit_batch, args.commit_wait, args.notify_appends)

    assert decide("--db", "runs.db") == (None, (64, 0.0, False))
    assert decide("--db", pg, "--commit-batch", "8", "--commit-wait", "2", "--notify-appends") == (
        None,
        (8, 2.0, True),
    )
    assert decide("--db", pg.replace("postgresql", "postgres")) == (None, (64, 0.0, False))
    assert decide("--db", "runs.db", "--commit-batch", "64") == (
        "flowc worker: warning: --commit-batch applies to a PostgreSQL run database only: "
        "SQLite commits each turn on its own",
        (64, 0.0, False),
    )
    assert decide("--db", "runs.db", "--commit-wait", "0", "--commit-batch", "1")[0] == (
        "flowc worker: warning: --commit-batch and --commit-wait apply to a PostgreSQL run "
        "database only: SQLite commits each turn on its own"
    )
    every = decide(
        "--db", "runs.db", "--commit-wait", "1", "--commit-batch", "1", "--notify-appends"
    )
    assert every[0] is not None
    assert "--commit-batch, --commit-wait and --notify-appends apply" in every[0]
    assert every[1] == (1, 1.0, True)


@pytest.mark.parametrize("transient", [True, False], ids=["unavailable", "refused"])
def test_a_write_the_store_could_not_make_is_tried_again_not_recorded_stalled(
    tmp_path: Path, transient: bool
) -> None:
    """A write that fails because the store is unavailable (the database went away)
    stops the run's hub, which gives the run back: the run is not recorded as stalled
    (workers would leave it for good), so the worker takes it again and it closes.
    Before, the stall was written as soon as the store worked again, and the run stayed
    open for ever (a CI run of the database-restart test timed out so). A write the
    store refuses (as it would again) is a stall, recorded: the run is left, not run
    again and again."""
    from flowc.runtime.envelope import EV_PACKET, EV_RUN_STALLED, EV_TEXT
    from flowc.runtime.wal import StoreUnavailable, WalError

    failed: list[str] = []

    def fail_once(store: SqliteStore) -> None:
        real = store.append

        def append(envelope: Any, lease: Any = None, follows: Any = None) -> None:
            if not failed and envelope.event_type in (EV_TEXT, EV_PACKET):
                failed.append(envelope.channel_id)
                raise (StoreUnavailable if transient else WalError)("the write failed")
            real(envelope, lease, follows)

        store.append = append  # type: ignore[method-assign]

    store = SqliteStore(str(tmp_path / "runs.db"))
    try:
        ids, worker, seen = a_failed_write(store, fail_once, transient=transient)
        [cid] = failed
        assert cid in ids and ("failed", cid) in seen and worker.stats.failed == 1
        assert seen.count(("claimed", cid)) == (2 if transient else 1)
        assert (worker.stats.closed, worker.stats.stalled) == ((2, 0) if transient else (1, 0))
        last = [e.event_type for e in store.read(cid)][-1]
        assert (last == EV_RUN_STALLED) is not transient
    finally:
        store.close()


def test_an_agents_own_store_error_is_its_failure_recorded_not_a_store_stop(
    tmp_path: Path,
) -> None:
    """An agent whose own code raises a store error (it uses a database of its own, which
    is busy) failed its turn: the failure is recorded (`flowc log` shows it) and the run
    stalls, recorded, as for any exception of an agent; it is not taken for the worker's
    store being unavailable, which would give the run back to be run again and again."""
    import asyncio

    import flowc
    from flowc.runtime.envelope import EV_RUN_STALLED, EV_TURN_FAILED
    from flowc.runtime.target import RunTarget
    from flowc.runtime.wal import StoreUnavailable
    from flowc.runtime.worker import Worker, submit_run
    from tests.runtime.worker_agents import count

    async def busy(turn: Any) -> str:
        raise StoreUnavailable("the agent's own database is locked")

    flow = flowc.compile_flow(
        "speaker a\nspeaker b\nstart a\nmax_turns 8\nwhen from a then b\nwhen from b then a\n"
    )
    store = SqliteStore(str(tmp_path / "runs.db"))
    seen: list[tuple[str, str]] = []

    async def scenario() -> tuple[str, Worker]:
        cid = await submit_run(store, RunTarget.from_compiled(flow), {})
        worker = Worker(
            store,
            agents={"a": count, "b": busy},
            poll_seconds=0.05,
            lease_seconds=4.0,
            on_event=lambda what, run, _: seen.append((what, run)),
        )
        task = asyncio.ensure_future(worker.serve())
        deadline = time.monotonic() + 60
        while ("stalled", cid) not in seen or worker.active:
            assert not task.done() and time.monotonic() < deadline, seen
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.5)  # ten polls: the run is not claimed again
        worker.stop()
        await task
        return cid, worker

    try:
        cid, worker = asyncio.run(scenario())
        kinds = [e.event_type for e in store.read(cid)]
        assert EV_TURN_FAILED in kinds and kinds[-1] == EV_RUN_STALLED
        assert seen == [("claimed", cid), ("stalled", cid)]
        assert (worker.stats.failed, worker.stats.stalled) == (0, 1)
    finally:
        store.close()
