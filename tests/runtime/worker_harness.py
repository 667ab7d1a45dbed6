"""Helpers for the `flowc worker` tests (SQLite here, PostgreSQL in tests/pg): start
worker processes, submit runs, and compare each run's WAL with a single-process run of
the same script."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flowc.runtime.envelope import EV_CHANNEL_CLOSED, Envelope
from flowc.runtime.stores import open_store
from flowc.runtime.wal import WalStore

ROOT = Path(__file__).resolve().parents[2]

RR_FLOW = """flow rr "three agents in turn, one of them calls a tool"
speaker a
speaker b {{
  tool note sets seen = true
}}
speaker c
start a
max_turns {max_turns}
context seen = false
when from a then b
when from b then c
when from c then a
"""


def rr_script(turns: int) -> dict[str, Any]:
    """Every turn says something different (a lost or repeated turn shows); b calls its
    tool on its second turn."""
    script: dict[str, list[Any]] = {"a": [], "b": [], "c": []}
    for i in range(turns):
        who = "abc"[i % 3]
        if who == "b" and i == 4:
            script["b"].append({"tool": "note", "say": f"t{i}"})
        else:
            script[who].append(f"t{i}")
    return {"script": script}


def write_inputs(folder: Path, max_turns: int = 30) -> list[tuple[Path, Path]]:
    """Two (flow, script) pairs: the feedback-loop example, and a 3-speaker loop of
    ``max_turns`` turns."""
    rr = folder / "rr.flow"
    rr.write_text(RR_FLOW.format(max_turns=max_turns))
    rr_json = folder / "rr.json"
    rr_json.write_text(json.dumps(rr_script(max_turns)))
    return [
        (
            ROOT / "examples" / "feedback_loop.flow",
            ROOT / "examples" / "scripts" / "feedback_loop.yaml",
        ),
        (rr, rr_json),
    ]


def flowc(
    *args: str,
    lease_seconds: float | None = None,
    stdout: Any = subprocess.PIPE,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    if lease_seconds is not None:
        full["FLOWC_LEASE_SECONDS"] = str(lease_seconds)
    return subprocess.Popen(
        [sys.executable, "-m", "flowc", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=full,
        cwd=ROOT,
    )


def submit(db: str, flow: Path, script: Path, count: int) -> list[str]:
    proc = flowc("submit", str(flow), "--script", str(script), "--db", db, "--count", str(count))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    ids = out.decode().split()
    assert len(ids) == count and len(set(ids)) == count
    return ids


def start_worker(
    db: str, log: Path, *extra: str, lease_seconds: float = 2.0, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:  # the worker has its own copy of the file once started
        return flowc("worker", "--db", db, *extra, lease_seconds=lease_seconds, stdout=out, env=env)


def serve_and_stop(db: str, *extra: str) -> str:
    """A worker on ``db`` with ``extra`` options, stopped once it serves: its stderr."""
    worker = flowc("worker", "--db", db, *extra)
    assert worker.stdout is not None
    while b"serving" not in (said := worker.stdout.readline()):
        assert said, "the worker ended without serving"
    worker.send_signal(signal.SIGTERM)
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err.decode()  # a warning, not an error
    assert b"stopped: 0 runs closed" in out
    return err.decode()


def holding_at(turn: int, gate: Path | None = None) -> dict[str, str]:
    """The environment of a worker whose counting agents hold their run at ``turn`` (see
    worker_agents.py) until ``gate`` exists (for ever without one)."""
    env = {"FLOWC_TEST_HOLD_AT": str(turn)}
    if gate is not None:
        env["FLOWC_TEST_GATE"] = str(gate)
    return env


def stop_worker(proc: subprocess.Popen[bytes]) -> str:
    """SIGTERM, wait, and the worker's stderr (it must exit 0 with no traceback)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    text = err.decode()
    assert "Traceback" not in text, text
    return text


def reference(flow: Path, script: Path) -> list[tuple[str, str, Any]]:
    """What a single-process run of ``script`` writes after the opening record."""
    from flowc.commands.run import load_script, load_target
    from flowc.runtime.script import parse_script
    from flowc.runtime.script_run import run_script_sync
    from flowc.runtime.wal import MemoryStore

    target, _ = load_target(str(flow))
    assert target is not None
    store = MemoryStore()
    result = run_script_sync(target, parse_script(load_script(str(script))), store=store)
    assert result.close_reason is not None
    return turns(list(store.read(result.channel_id)))


def turns(envs: Sequence[Envelope]) -> list[tuple[str, str, Any]]:
    """(sender, kind, data) of every envelope after the opening: the accepted turns,
    context writes and the close, in order."""
    return [(e.sender_id, e.event_type, e.event_data) for e in envs[1:]]


def closed_count(store: WalStore, ids: Sequence[str]) -> int:
    done = 0
    for cid in ids:
        envs = list(store.read(cid))
        if envs and envs[-1].event_type == EV_CHANNEL_CLOSED:
            done += 1
    return done


def open_runs_and_logs(store: WalStore, ids: Sequence[str], logs: Sequence[Path]) -> str:
    """What a timed-out wait for runs to close can say: each open run's last record and
    lease, and the tail of each worker's log."""
    lines = []
    for cid in ids:
        envs = list(store.read(cid))
        if envs and envs[-1].event_type == EV_CHANNEL_CLOSED:
            continue
        last = envs[-1].event_type if envs else "nothing"
        lines.append(
            f"open: {cid}, {len(envs)} records, the last {last}, lease {store.lease_of(cid)}"
        )
    for log in logs:
        tail = log.read_text().splitlines()[-15:] if log.exists() else []
        lines.append(f"{log.name}:\n  " + "\n  ".join(tail))
    return "\n".join(lines)


def wait_until(
    predicate: Any,
    timeout: float,
    what: str,
    procs: Sequence[subprocess.Popen[bytes]] = (),
    explain: Any = None,
) -> None:
    """Wait for ``predicate()``; on a timeout, fail with ``explain()`` (what the test can
    say about the state it found) when given."""
    deadline = time.monotonic() + timeout
    while not predicate():
        for p in procs:
            if p.poll() is not None:
                raise AssertionError(
                    f"a worker exited ({p.returncode}) while waiting for "
                    f"{what}: {p.stderr.read().decode() if p.stderr else ''}"
                )
        if time.monotonic() > deadline:
            said = f"\n{explain()}" if explain is not None else ""
            raise AssertionError(f"timed out waiting for {what}{said}")
        time.sleep(0.05)


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Wait for a killed worker, its pipes closed (not read: a child of its own could
    keep them open)."""
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    proc.wait(timeout=30)


def kill_left(procs: Sequence[subprocess.Popen[bytes] | None]) -> None:
    """Kill the workers a failed test left running (a paused one is killed too)."""
    for proc in procs:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            _reap(proc)


def writers(envs: Sequence[Envelope]) -> set[str]:
    """The hubs that wrote a run (an envelope id starts with its hub's prefix)."""
    return {e.envelope_id.split("-")[0] for e in envs}


def open_db(db: str) -> WalStore:
    return open_store(db)


def events(log: Path, what: str) -> list[str]:
    """The run ids of a worker's ``what`` lines (claimed, closed, lost, stalled, failed)."""
    if not log.exists():
        return []
    return [line.split()[1] for line in log.read_text().splitlines() if line.startswith(what + " ")]


#: seconds for a server to finish what a stopped worker had sent (the worker is stopped
#: for this and two reads: its leases, renewed once half spent, last a second more)
SETTLE = 0.5


def kill_inside_a_run(
    proc: subprocess.Popen[bytes], log: Path, store: WalStore
) -> dict[str, tuple[int, set[str]]]:
    """SIGKILL ``proc`` at a moment it holds an open run it has written turns to (it is
    stopped first, so what it holds can be read; then killed wherever it stopped).
    Returns those runs, each with how many envelopes it had and who had written them.

    A statement the worker sent just before it stopped may still be on its way through a
    PostgreSQL server (a COMMIT that closes the run lands after the harness read the run
    open): what it holds is read twice, SETTLE seconds apart, and only a run open both
    times counts. A stopped process sends nothing more, so that leaves out what a server
    finishes within SETTLE; one it finishes later still closes a run "held" here, with the
    killed worker's own envelopes only (:func:`continued_by_another`)."""

    def holding() -> dict[str, tuple[int, set[str]]]:
        held = {}
        for cid in set(events(log, "claimed")) - set(events(log, "closed")):
            lease = store.lease_of(cid)
            envs = list(store.read(cid))
            if (
                lease is not None
                and f":{proc.pid}:" in lease.holder
                and len(writers(envs)) > 1
                and envs[-1].event_type != EV_CHANNEL_CLOSED
            ):
                held[cid] = (len(envs), writers(envs))
        return held

    for _ in range(500):
        proc.send_signal(signal.SIGSTOP)
        held = holding()
        if held:
            time.sleep(SETTLE)
            again = holding()
            held = {cid: again[cid] for cid in held if cid in again}
        if held:
            proc.send_signal(signal.SIGKILL)
            _reap(proc)
            return held
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    raise AssertionError("the worker never held a run it had written to")


def continued_by_another(envs: Sequence[Envelope], at_kill: tuple[int, set[str]]) -> bool:
    """Whether a hub that had not written to the run before the kill wrote to it after
    (else every envelope after the kill is the killed worker's: statements it had sent
    before it was stopped, which its server finished after the harness read the run)."""
    count, before = at_kill
    later = writers(envs[count:])
    return bool(later - before)


def three_workers_one_killed(
    db: str, folder: Path, runs: int = 200, lease_seconds: float = 2.0
) -> None:
    """Three workers serve ``runs`` submitted runs; one is SIGKILLed mid-way, holding
    runs. Every run must close, each WAL equal to the single-process run of its script,
    nothing lost, repeated or written by two hubs at once."""
    from flowc.runtime.hub import Hub

    pairs = write_inputs(folder)
    refs = [reference(flow, script) for flow, script in pairs]
    kinds: dict[str, int] = {}
    for k, (flow, script) in enumerate(pairs):
        for cid in submit(db, flow, script, runs // len(pairs)):
            kinds[cid] = k
    logs = [folder / f"worker{i}.log" for i in range(3)]
    procs = [
        start_worker(db, log, "--concurrency", "4", lease_seconds=lease_seconds) for log in logs
    ]
    store = open_db(db)
    try:

        def mid_way() -> bool:
            closed = sum(len(events(log, "closed")) for log in logs)
            held = set(events(logs[0], "claimed")) - set(events(logs[0], "closed"))
            return closed >= runs // 3 and bool(held)

        wait_until(mid_way, 60, "a third of the runs to close", procs)
        held = kill_inside_a_run(procs[0], logs[0], store)
        wait_until(
            lambda: closed_count(store, list(kinds)) == len(kinds),
            120,
            "every run to close",
            procs[1:],
        )
        for proc in procs[1:]:
            stop_worker(proc)
            assert proc.returncode == 0
        for i, log in enumerate(logs):
            assert events(log, "claimed"), f"worker {i} ran no run: runs are not spread"
            assert not events(log, "failed") and not events(log, "stalled")
        assert sorted(store.channel_ids()) == sorted(kinds)  # nothing lost, nothing extra
        hub = Hub(store)
        continued = 0
        for cid, kind in kinds.items():
            envs = list(store.read(cid))
            assert turns(envs) == refs[kind], f"run {cid} differs from a single-process run"
            replay = hub.replay(cid)
            assert replay.broken is None and replay.matches, (cid, replay.broken)
            if cid in held and continued_by_another(envs, held[cid]):
                continued += 1
            elif cid in held:
                # closed by what the killed worker had sent: nobody else wrote to it
                assert writers(envs) == held[cid][1], f"run {cid}: written by {writers(envs)}"
        assert continued, f"no run the killed worker held ({sorted(held)}) was continued"
    finally:
        kill_left(procs)
        store.close()


AGENTS = ROOT / "tests" / "runtime" / "worker_agents.py"


def counted_turns(store: WalStore, cid: str) -> list[tuple[str, str]]:
    """(speaker, text) of a run of the counting agents (each answers t<N+1> to t<N>)."""
    from flowc.runtime.envelope import EV_PACKET, EV_TEXT

    out = []
    for env in store.read(cid):
        if env.event_type in (EV_TEXT, EV_PACKET):
            text = env.event_data.get("text", env.event_data.get("body"))
            out.append((env.sender_id, str(text)))
    return out


def agent_runs(db: str, folder: Path, max_turns: int, count: int) -> list[str]:
    """Submit runs of three counting agents (no script: the workers' --agents)."""
    flow = folder / "agents.flow"
    flow.write_text(RR_FLOW.format(max_turns=max_turns))
    proc = flowc("submit", str(flow), "--db", db, "--count", str(count))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    return out.decode().split()


def agent_run(db: str, folder: Path, max_turns: int) -> str:
    [cid] = agent_runs(db, folder, max_turns, 1)
    return cid


def assert_counted(store: WalStore, cid: str, count: int) -> None:
    from flowc.runtime.hub import Hub

    assert counted_turns(store, cid) == [("abc"[i % 3], f"t{i}") for i in range(count)]
    replay = Hub(store).replay(cid)
    assert replay.broken is None and replay.matches, replay.broken


def paused_worker_is_fenced(db: str, folder: Path, pause: Any, lease_seconds: float = 1.0) -> None:
    """Worker A runs a long run and is paused (``pause(proc)``: SIGSTOP) past its lease;
    worker B takes the run over and finishes it; A, continued, has its writes refused,
    drops the run and serves on. The WAL is one writer's at a time throughout.

    A cannot finish the run before it is paused, however slowly this test is scheduled:
    its agents hold the run ten turns before the end until a gate file exists, and the
    gate is made only once A is paused."""
    turns_total, hold = 300, 290
    cid = agent_run(db, folder, turns_total)
    log_a, log_b = folder / "a.log", folder / "b.log"
    gate = folder / "gate"
    a = start_worker(
        db, log_a, "--agents", str(AGENTS), lease_seconds=lease_seconds, env=holding_at(hold, gate)
    )
    store = open_db(db)
    b = None
    try:
        wait_until(lambda: len(counted_turns(store, cid)) >= 30, 60, "worker A's turns", [a])
        pause(a)
        paused_at = len(counted_turns(store, cid))
        assert paused_at <= hold
        gate.touch()
        b = start_worker(db, log_b, "--agents", str(AGENTS), lease_seconds=lease_seconds)
        wait_until(lambda: cid in events(log_b, "closed"), 60, "worker B to finish the run", [b])
        assert closed_count(store, [cid]) == 1
        assert len(counted_turns(store, cid)) == turns_total > paused_at
        a.send_signal(signal.SIGCONT)
        wait_until(lambda: cid in events(log_a, "lost"), 30, "worker A to drop the run", [a])
        lost = next(
            line for line in log_a.read_text().splitlines() if line.startswith(f"lost {cid}")
        )
        assert "refused" in lost, lost
        assert_counted(store, cid, turns_total)  # nothing A wrote after its pause
        # A serves on: a new run is run by one of the two
        second = agent_run(db, folder, 12)
        wait_until(lambda: closed_count(store, [second]) == 1, 60, "the next run", [a, b])
        assert_counted(store, second, 12)
        for proc in (a, b):
            stop_worker(proc)
            assert proc.returncode == 0
        # B took A's run over; A lost it (the next run, a fresh one, is nobody's takeover)
        assert stopped_line(log_b).endswith(", 0 stalled, 1 taken over, 0 lost, 0 failed")
        assert stopped_line(log_a).endswith(", 0 stalled, 0 taken over, 1 lost, 0 failed")
        assert f"claimed {cid} taken over" in log_b.read_text().splitlines()
    finally:
        kill_left([a, b])
        store.close()


def stopped_line(log: Path) -> str:
    """A worker's last line: ``worker W stopped: N runs closed, ...``."""
    last = log.read_text().splitlines()[-1]
    assert " stopped: " in last, last
    return last


def killed_workers_runs_are_taken_over(db: str, folder: Path, runs: int = 4) -> None:
    """Worker A holds ``runs`` runs mid-way (its agents hold each at turn 10) and is
    SIGKILLed; worker B, on the same host, sees A's process gone, takes every run over at
    once and finishes them. B says so: each claim line ``taken over``, and its last line
    counts them (it said "0 taken over", counting the runs taken from it)."""
    turns_total, hold = 40, 10
    ids = agent_runs(db, folder, turns_total, runs)
    log_a, log_b = folder / "a.log", folder / "b.log"
    a = start_worker(
        db,
        log_a,
        "--agents",
        str(AGENTS),
        "--concurrency",
        str(runs),
        lease_seconds=30,
        env=holding_at(hold),
    )
    store = open_db(db)
    b = None
    try:
        wait_until(
            lambda: all(len(counted_turns(store, cid)) >= hold for cid in ids),
            60,
            "worker A to hold every run",
            [a],
        )
        a.kill()
        _reap(a)
        b = start_worker(db, log_b, "--agents", str(AGENTS), lease_seconds=30)
        wait_until(lambda: closed_count(store, ids) == runs, 60, "worker B to finish them", [b])
        stop_worker(b)
        assert b.returncode == 0
        for cid in ids:
            assert_counted(store, cid, turns_total)
        lines = log_b.read_text().splitlines()
        assert sorted(
            line.split()[1]
            for line in lines
            if line.startswith("claimed ") and line.endswith(" taken over")
        ) == sorted(ids)
        assert stopped_line(log_b).endswith(
            f"stopped: {runs} runs closed, 0 stalled, {runs} taken over, 0 lost, 0 failed"
        )
        # A's own claims were first claims
        assert all(not line.endswith("taken over") for line in log_a.read_text().splitlines())
    finally:
        kill_left([a, b])
        store.close()


def stopped_worker_gives_its_run_back(db: str, folder: Path, lease_row: Any) -> None:
    """A live worker's run is left alone by another; SIGTERM makes the first give it back
    at once (exit 0; ``lease_row(run_id)`` reads the store's lease row as it is: holder,
    and whether it has not expired, whether the holder lives or not) and the second
    finishes it.

    Worker A's agents hold the run at turn 10 for ever (it cannot finish by itself, so
    every check below sees it open and A's), and A runs one run at a time, so the
    newer run B claims shows that B looked at A's run and left it."""
    turns_total, hold = 400, 10
    cid = agent_run(db, folder, turns_total)
    log_a, log_b = folder / "a.log", folder / "b.log"
    a = start_worker(
        db,
        log_a,
        "--agents",
        str(AGENTS),
        "--concurrency",
        "1",
        lease_seconds=30,
        env=holding_at(hold),
    )
    store = open_db(db)
    b = None
    try:
        wait_until(
            lambda: len(counted_turns(store, cid)) >= hold, 60, "worker A to hold the run", [a]
        )
        newer = agent_run(db, folder, 12)
        b = start_worker(db, log_b, "--agents", str(AGENTS), lease_seconds=30)
        # B looks at the runs oldest first: by the time it claims the newer run it has
        # passed A's over
        wait_until(lambda: newer in events(log_b, "closed"), 60, "worker B's first run", [a, b])
        assert cid not in events(log_b, "claimed")  # A's live lease is respected
        assert newer not in events(log_a, "claimed")
        assert len(counted_turns(store, cid)) == hold  # A holds it, mid-turn
        # `flowc log` shows who runs it
        shown = flowc("log", "--db", db)
        out, err = shown.communicate(timeout=60)
        assert shown.returncode == 0, err.decode()
        line = next(x for x in out.decode().splitlines() if x.startswith(cid))
        assert "running (worker-" in line and f"pid {a.pid} on " in line, line
        stopped = time.monotonic()
        stop_worker(a)
        assert a.returncode == 0
        assert "stopped: 0 runs closed" in log_a.read_text()
        holder, unexpired = lease_row(cid)
        assert not unexpired or f":{a.pid}:" not in holder, "A did not release its lease"
        # a 30 s lease, yet B goes on at once: A released it
        wait_until(lambda: cid in events(log_b, "claimed"), 20, "worker B to take the run", [b])
        assert time.monotonic() - stopped < 20
        wait_until(lambda: closed_count(store, [cid]) == 1, 60, "worker B to finish", [b])
        assert_counted(store, cid, turns_total)
        stop_worker(b)
        # the run B took over from A is counted so (the newer one was B's from the start)
        assert stopped_line(log_b).endswith(
            "stopped: 2 runs closed, 0 stalled, 1 taken over, 0 lost, 0 failed"
        )
    finally:
        kill_left([a, b])
        store.close()


def database_restarts(
    db: str, folder: Path, restart: Any, runs: int = 12, turns_each: int = 90
) -> None:
    """Two workers run ``runs`` runs of the counting agents; the database is stopped and
    started again mid-way (``restart()``). The workers live through it, and every run
    ends with its turns consecutive and the WAL one writer's at a time."""
    ids = agent_runs(db, folder, turns_each, runs)
    logs = [folder / f"w{i}.log" for i in range(2)]
    procs = [start_worker(db, log, "--agents", str(AGENTS), lease_seconds=2.0) for log in logs]
    store = open_db(db)
    try:
        wait_until(
            lambda: sum(len(counted_turns(store, cid)) for cid in ids) >= runs * turns_each // 4,
            60,
            "a quarter of the turns",
            procs,
        )
        store.close()
        restart()
        store = open_db(db)  # the test's own connection went with the old server
        wait_until(
            lambda: closed_count(store, ids) == len(ids),
            120,
            "every run to close after the restart",
            procs,
            explain=lambda: open_runs_and_logs(store, ids, logs),
        )
        for cid in ids:
            assert_counted(store, cid, turns_each)
        assert any(events(log, "failed") for log in logs), (
            "no worker saw the database go away: the restart missed the runs"
        )
        for proc in procs:
            stop_worker(proc)
            assert proc.returncode == 0
    finally:
        kill_left(procs)
        store.close()


def stalled_run_is_left_to_later_workers(db: str, folder: Path) -> None:
    """A run that stalls is claimed once: the worker that stalled it leaves it, and so do
    workers started later, until its log grows (`flowc resume`); then it is claimed
    again. A later worker is known to have looked at the stalled run once it has closed
    a run submitted after it (workers look at the open runs oldest first)."""
    flow = folder / "rr.flow"
    flow.write_text(RR_FLOW.format(max_turns=30))
    short, full = folder / "short.json", folder / "full.json"
    short.write_text(json.dumps(rr_script(10)))  # 10 of the 30 turns
    full.write_text(json.dumps(rr_script(30)))
    [stalled] = submit(db, flow, short, 1)
    first = folder / "first.log"
    worker = start_worker(db, first)
    try:
        wait_until(lambda: stalled in events(first, "stalled"), 30, "the run to stall", [worker])
    finally:
        stop_worker(worker)
    for i in range(2):  # workers started after it: none takes it
        log = folder / f"later{i}.log"
        worker = start_worker(db, log)
        try:
            [fresh] = submit(db, flow, full, 1)
            wait_until(
                lambda run=fresh, log=log: run in events(log, "closed"),
                30,
                "a new run to close",
                [worker],
            )
        finally:
            stop_worker(worker)
        assert events(log, "claimed") == [fresh], log.read_text()
    assert events(first, "claimed") == events(first, "stalled") == [stalled]
    # its log grows (a person answers the next turn): workers take it again
    (folder / "eleven.json").write_text(json.dumps(rr_script(11)))
    resumed = flowc("resume", stalled, "--db", db, "--script", str(folder / "eleven.json"))
    _, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 1, err.decode()  # one turn more, and stalled again
    log = folder / "after.log"
    worker = start_worker(db, log)
    try:
        wait_until(
            lambda: stalled in events(log, "stalled"), 30, "the run to stall again", [worker]
        )
    finally:
        stop_worker(worker)
    assert events(log, "claimed") == [stalled]
    store = open_db(db)
    try:
        packets = [e for e in store.read(stalled) if e.event_type in ("ag2.msg.text", "ag2.packet")]
        assert len(packets) == 11  # the kickoff, 9 turns the first worker ran, 1 by hand
    finally:
        store.close()


def a_failed_write(
    store: WalStore, fail_once: Any, group_commit: Any = None, *, transient: bool = True
) -> tuple[list[str], Any, list[tuple[str, str]]]:
    """Two runs of two counting agents in an in-process worker; ``fail_once(store)``
    (called once the runs are submitted) makes one write of the store fail, then the
    store works again. ``transient``: the failure is the store being unavailable (as a
    database that restarts is): no run is recorded stalled, the failed one is given back
    and the worker takes it again, so both close with their turns consecutive. Else a
    refusal (trying again would meet it again): the failed run is recorded stalled and
    left, the other closes. Returns the runs, the worker and its events."""
    import flowc
    from flowc.runtime.envelope import EV_RUN_STALLED
    from flowc.runtime.target import RunTarget
    from flowc.runtime.worker import Worker, submit_run
    from tests.runtime.worker_agents import count

    flow = flowc.compile_flow(
        "speaker a\nspeaker b\nstart a\nmax_turns 8\nwhen from a then b\nwhen from b then a\n"
    )
    seen: list[tuple[str, str]] = []
    when: list[tuple[float, str, str]] = []  # (monotonic time, event, run)

    def stalled(ids: list[str]) -> list[str]:
        return [cid for cid in ids if list(store.read(cid))[-1].event_type == EV_RUN_STALLED]

    async def scenario() -> tuple[list[str], Worker]:
        target = RunTarget.from_compiled(flow)
        ids = [await submit_run(store, target, {}) for _ in range(2)]
        fail_once(store)
        worker = Worker(
            store,
            agents={"a": count, "b": count},
            group_commit=group_commit,
            poll_seconds=0.05,
            # long enough that a slow event loop on a busy machine loses no lease (SQLite
            # refuses a write under an expired lease): only the failure made here counts
            lease_seconds=4.0,
            on_event=lambda what, cid, _: (
                seen.append((what, cid)),
                when.append((time.monotonic(), what, cid)),
            ),
        )
        task = asyncio.ensure_future(worker.serve())
        deadline = time.monotonic() + 60
        # every run closed (or recorded stalled), and the worker done with it (it counts
        # a close as its run's task ends, which can be after the close is in the store)
        while closed_count(store, ids) + len(stalled(ids)) < len(ids) or worker.active:
            assert not transient or not stalled(ids), f"recorded stalled; events: {seen}"
            assert not task.done() and time.monotonic() < deadline, (worker.stats, seen)
            await asyncio.sleep(0.02)
        if not transient:  # a stalled run is left (its lease was given back as it stalled)
            await asyncio.sleep(20 * worker.poll_seconds)
        worker.stop()
        await task
        return ids, worker

    ids, worker = asyncio.run(scenario())
    for cid in ids:
        if cid not in stalled(ids):
            assert counted_turns(store, cid) == [("ab"[i % 2], f"t{i}") for i in range(8)]
    # a run the store failed is left alone a while (a third of a lease) before this
    # worker takes it again: a store failing for a while is not asked again at once
    for t, what, cid in when:
        if what == "failed":
            again = [u for u, w, c in when if c == cid and w == "claimed" and u > t]
            assert not again or again[0] - t >= worker.lease_seconds / 3, (when, t)
    return ids, worker, seen
