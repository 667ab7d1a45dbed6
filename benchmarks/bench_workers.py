"""Workers: turns/s with 1, 2 and 4 `flowc worker` processes, and the per-turn latency,
on SQLite and PostgreSQL side by side in one run.

For each database and each worker count: a fresh database, ``--runs`` runs submitted
(a three-speaker scripted loop of ``--turns`` turns each, no model), then the workers
are started and the clock runs until every run has closed. Times come from the WAL
itself (each envelope is stamped when it is admitted), so process start-up is left out:

- turns/s: every turn of every run / (last envelope's stamp - first turn's stamp);
- per-turn latency: within each run, the time from one turn's admission to the next
  (the next speaker's scheduling, its reply and the commit, plus any wait while its
  worker served other runs), p50 and p99 over all turns;
- CPU ms/turn: the workers' CPU time (user + system, from their exit) per turn: what a
  turn costs whatever else runs on the machine.

PostgreSQL runs on a throw-away local cluster (``tests/pgcluster.py``; fsync on, as a
server would run, unless ``--no-fsync``), or on ``--pg-url``. SQLite is one file with
``synchronous=NORMAL`` (the default of the runtime). On the local cluster two more
figures come from the server itself:

- append latency (p99): from a turn's admission (its stamp) to the commit that made it
  durable (``track_commit_timestamp``), over every turn;
- statements and commits per run: what the workers sent the server
  (``pg_stat_statements``, ``pg_stat_database``), per run of ``--turns`` turns, the
  submissions left out.

Every run is checked against a single-process run of the same script (``flowc.run``
on an in-memory store): the same turns (speaker, text, routing) and the same close; a
run that differs stops the benchmark.

``--commit-batch`` and ``--commit-wait`` are given to the workers (their group commit,
PostgreSQL only); ``--flowc-root`` runs the workers from another checkout of flowc (the
numbers of a change, before and after, with the same benchmark).

Run: ``.venv/bin/python benchmarks/bench_workers.py [--runs N] [--turns N]
[--workers 1,2,4] [--concurrency N] [--pg-url URL] [--commit-batch N] [--commit-wait MS]
[--flowc-root PATH]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FLOW = """flow rr "three scripted agents in turn"
speaker a
speaker b
speaker c
start a
max_turns {turns}
when from a then b
when from b then c
when from c then a
"""


def _script(turns: int) -> dict[str, Any]:
    script: dict[str, list[str]] = {"a": [], "b": [], "c": []}
    for i in range(turns):
        script["abc"[i % 3]].append(f"turn {i}")
    return {"script": script}


#: the checkout whose flowc the workers run (``--flowc-root``)
FLOWC_ROOT = [ROOT]

#: the local cluster's statistics: commit times, and the statements each process sends
STATS_SETTINGS = {
    "track_commit_timestamp": "on",
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track": "all",
}


def _flowc(*args: str, stdout: Any = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(FLOWC_ROOT[0])}
    return subprocess.Popen(
        [sys.executable, "-m", "flowc", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=env,
        cwd=FLOWC_ROOT[0],
    )


def _stamp(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def _open_runs(store: Any, ids: list[str]) -> int:
    from flowc.runtime.envelope import EV_CHANNEL_CLOSED

    open_runs = getattr(store, "open_runs", None)
    if open_runs is not None:
        return len(open_runs())
    return sum(
        1 for cid in ids if not any(e.event_type == EV_CHANNEL_CLOSED for e in store.read(cid))
    )


def measure(
    db: str,
    workers: int,
    runs: int,
    turns: int,
    concurrency: int,
    folder: Path,
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    from flowc.runtime.envelope import EV_PACKET, EV_TEXT
    from flowc.runtime.stores import open_store

    flow = folder / "rr.flow"
    flow.write_text(FLOW.format(turns=turns))
    script = folder / "rr.json"
    script.write_text(json.dumps(_script(turns)))
    proc = _flowc(
        "submit",
        str(flow),
        "--script",
        str(script),
        "--db",
        db,
        "--count",
        str(runs),
        stdout=subprocess.PIPE,
    )
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"flowc submit failed: {err.decode()}")
    ids = out.decode().split()
    store = open_store(db)
    stats = db.startswith("postgresql://") and _server_stats(db, reset=True) is not None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    procs = [
        _flowc("worker", "--db", db, "--quiet", "--concurrency", str(concurrency), *extra)
        for _ in range(workers)
    ]
    try:
        deadline = time.monotonic() + 600
        while _open_runs(store, ids):
            for p in procs:
                if p.poll() is not None:
                    raise SystemExit(f"a worker exited: {p.stderr.read().decode()}")  # type: ignore[union-attr]
            if time.monotonic() > deadline:
                raise SystemExit("the runs did not finish in 10 minutes")
            time.sleep(0.1)
        server = _server_stats(db) if stats else None
        first, last = float("inf"), 0.0
        gaps: list[float] = []
        count = 0
        expected = _single_process_run(turns)
        for cid in ids:
            envelopes = list(store.read(cid))
            got = _outcome(envelopes)
            if got != expected:
                raise SystemExit(
                    f"run {cid} differs from a single-process run of its script:\n"
                    f"  workers:        {got}\n  single process: {expected}"
                )
            stamps = [
                _stamp(e.created_at) for e in envelopes if e.event_type in (EV_TEXT, EV_PACKET)
            ]
            count += len(stamps)
            first = min(first, stamps[0])
            last = max(last, stamps[-1])
            gaps.extend(b - a for a, b in itertools.pairwise(stamps))
        appends = _append_latencies(db) if stats else []
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=60)
        store.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    gaps.sort()
    appends.sort()
    return {
        "turns": count,
        "seconds": last - first,
        "turns_per_s": count / (last - first),
        "p50_ms": 1000 * statistics.median(gaps),
        "p99_ms": _p99(gaps) * 1000,
        "append_p99_ms": _p99(appends) * 1000 if appends else None,
        "cpu_ms_per_turn": 1000 * cpu / count,
        "statements_per_run": server[0] / runs if server else None,
        "commits_per_run": server[1] / runs if server else None,
    }


def _p99(values: list[float]) -> float:
    return values[min(len(values) - 1, int(len(values) * 0.99))]


def _outcome(envelopes: list[Any]) -> tuple[Any, ...]:
    """What a run's WAL says happened: each turn (speaker, text, routing) and the close."""
    from flowc.runtime.transcript import transcript

    records, close, state = transcript(envelopes)
    return (
        tuple((r.speaker, r.text, json.dumps(r.routing, sort_keys=True)) for r in records),
        close,
        state.turn_count if state is not None else 0,
    )


def _single_process_run(turns: int) -> tuple[Any, ...]:
    """:func:`_outcome` of the benchmark's script run in one process, in memory."""
    import flowc
    from flowc.runtime.wal import MemoryStore

    store = MemoryStore()
    result = flowc.run(flowc.compile_flow(FLOW.format(turns=turns)), _script(turns), store=store)
    return _outcome(list(store.read(result.channel_id)))


def _server_stats(db: str, *, reset: bool = False) -> tuple[int, int] | None:
    """The statements run and the transactions committed in ``db`` since the last reset
    (``None`` when the server keeps no statement statistics); ``reset``: start counting."""
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            if reset:
                conn.execute("SELECT pg_stat_statements_reset()")
                conn.execute("SELECT pg_stat_reset()")
                return 0, 0
            row = conn.execute(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s "
                "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database() "
                "AND s.query NOT ILIKE '%pg_stat%' AND s.query NOT IN ('BEGIN', 'COMMIT')"
            ).fetchone()
            commits = conn.execute(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
            ).fetchone()
        except psycopg.Error:
            return None
    assert row is not None and commits is not None
    return int(row[0]), int(commits[0])


def _append_latencies(db: str) -> list[float]:
    """For every turn: seconds from its admission to the commit that made it durable."""
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        try:
            rows = conn.execute(
                "SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin))::float8, "
                "envelope::json->>'created_at' FROM flowc_wal "
                "WHERE event_type IN ('ag2.msg.text', 'ag2.packet')"
            ).fetchall()
        except psycopg.Error:
            return []
    return [committed - _stamp(created) for committed, created in rows if committed is not None]


@contextmanager
def _postgres(url: str | None, fsync: bool) -> Iterator[Any]:
    """A callable giving the URL of a fresh empty database for each measurement."""
    if url is not None:
        import psycopg

        counter = iter(range(1_000_000))

        def fresh_given() -> str:
            name = f"bench_workers_{os.getpid()}_{next(counter)}"
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            base, _, _ = url.rpartition("/")
            return f"{base}/{name}"

        yield fresh_given
        return
    from tests.pgcluster import PgCluster

    with PgCluster(fsync=fsync, settings=STATS_SETTINGS) as cluster:
        yield cluster.create_database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--pg-url",
        help="a PostgreSQL server to create databases on (default: a throw-away local cluster)",
    )
    parser.add_argument(
        "--no-fsync",
        action="store_true",
        help="the local cluster without fsync (as the tests run it)",
    )
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    parser.add_argument("--commit-batch", help="the workers' --commit-batch (PostgreSQL)")
    parser.add_argument("--commit-wait", help="the workers' --commit-wait in ms (PostgreSQL)")
    parser.add_argument(
        "--flowc-root", type=Path, help="run the workers from this checkout of flowc"
    )
    args = parser.parse_args()
    if args.flowc_root is not None:
        FLOWC_ROOT[0] = args.flowc_root.resolve()
    extra: list[str] = []
    for option in ("commit_batch", "commit_wait"):
        if getattr(args, option) is not None:
            extra += ["--" + option.replace("_", "-"), getattr(args, option)]
    counts = [int(n) for n in args.workers.split(",")]
    print(
        f"{args.runs} runs x {args.turns} turns, --concurrency {args.concurrency} "
        f"{' '.join(extra)}, workers from {FLOWC_ROOT[0]}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    results: dict[tuple[str, int], dict[str, Any]] = {}
    pg = _postgres(args.pg_url, not args.no_fsync) if args.only != "sqlite" else nullcontext(None)
    with tempfile.TemporaryDirectory() as tmp, pg as fresh_pg:
        for workers in counts:
            for backend in ("sqlite", "postgresql"):
                if args.only and backend != args.only:
                    continue
                folder = Path(tmp) / f"{backend}-{workers}"
                folder.mkdir()
                db = str(folder / "runs.db") if backend == "sqlite" else fresh_pg()
                results[(backend, workers)] = measure(
                    db,
                    workers,
                    args.runs,
                    args.turns,
                    args.concurrency,
                    folder,
                    tuple(extra) if backend == "postgresql" else (),
                )
    print()
    print(
        "| workers | SQLite turns/s | p50 ms | p99 ms | CPU ms/turn "
        "| PostgreSQL turns/s | p50 ms | p99 ms | p99 append ms | CPU ms/turn "
        "| statements/run | commits/run |"
    )
    print(
        "|--------:|---------------:|-------:|-------:|------------:"
        "|-------------------:|-------:|-------:|--------------:|------------:"
        "|---------------:|------------:|"
    )
    for workers in counts:
        cells = [str(workers)]
        for backend in ("sqlite", "postgresql"):
            r = results.get((backend, workers))
            pg = backend == "postgresql"
            if r is None:
                cells += ["-"] * (7 if pg else 4)
                continue
            cells += [
                f"{r['turns_per_s']:,.0f}",
                f"{r['p50_ms']:.1f}",
                f"{r['p99_ms']:.1f}",
            ]
            if pg:
                cells.append("-" if r["append_p99_ms"] is None else f"{r['append_p99_ms']:.1f}")
            cells.append(f"{r['cpu_ms_per_turn']:.2f}")
            if pg:
                for key in ("statements_per_run", "commits_per_run"):
                    cells.append("-" if r[key] is None else f"{r[key]:.1f}")
        print("| " + " | ".join(cells) + " |")
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
