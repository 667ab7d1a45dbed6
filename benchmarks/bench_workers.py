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
``synchronous=NORMAL`` (the default of the runtime).

Run: ``.venv/bin/python benchmarks/bench_workers.py [--runs N] [--turns N]
[--workers 1,2,4] [--concurrency N] [--pg-url URL]``.
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


def _flowc(*args: str, stdout: Any = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "flowc", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
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
    db: str, workers: int, runs: int, turns: int, concurrency: int, folder: Path
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
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    procs = [
        _flowc("worker", "--db", db, "--quiet", "--concurrency", str(concurrency))
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
        first, last = float("inf"), 0.0
        gaps: list[float] = []
        count = 0
        for cid in ids:
            stamps = [
                _stamp(e.created_at)
                for e in store.read(cid)
                if e.event_type in (EV_TEXT, EV_PACKET)
            ]
            count += len(stamps)
            first = min(first, stamps[0])
            last = max(last, stamps[-1])
            gaps.extend(b - a for a, b in itertools.pairwise(stamps))
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
    return {
        "turns": count,
        "seconds": last - first,
        "turns_per_s": count / (last - first),
        "p50_ms": 1000 * statistics.median(gaps),
        "p99_ms": 1000 * gaps[min(len(gaps) - 1, int(len(gaps) * 0.99))],
        "cpu_ms_per_turn": 1000 * cpu / count,
    }


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

    with PgCluster(fsync=fsync) as cluster:
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
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    print(
        f"{args.runs} runs x {args.turns} turns, --concurrency {args.concurrency}, "
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
                    db, workers, args.runs, args.turns, args.concurrency, folder
                )
    print()
    print(
        "| workers | SQLite turns/s | p50 ms | p99 ms | CPU ms/turn "
        "| PostgreSQL turns/s | p50 ms | p99 ms | CPU ms/turn |"
    )
    print(
        "|--------:|---------------:|-------:|-------:|------------:"
        "|-------------------:|-------:|-------:|------------:|"
    )
    for workers in counts:
        cells = [str(workers)]
        for backend in ("sqlite", "postgresql"):
            r = results.get((backend, workers))
            cells += (
                ["-"] * 4
                if r is None
                else [
                    f"{r['turns_per_s']:,.0f}",
                    f"{r['p50_ms']:.1f}",
                    f"{r['p99_ms']:.1f}",
                    f"{r['cpu_ms_per_turn']:.2f}",
                ]
            )
        print("| " + " | ".join(cells) + " |")
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
