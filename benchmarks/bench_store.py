"""Per-append latency of the WAL stores, side by side: SQLite and PostgreSQL.

What a hub pays per accepted envelope before it may deliver it: one fenced append (the run's
lease checked and the row written in one committed transaction, ``follows`` recorded). For
each store: p50, p99 and mean wall time of ``--appends`` appends to one run, after a warm-up.

- SQLite: a file in a temporary folder, ``synchronous=NORMAL`` (flowc's default: survives a
  killed process) and ``FULL`` (also a power cut: an fsync per commit);
- PostgreSQL: a throw-away cluster of Debian's server (tests/pgcluster.py) over TCP on
  127.0.0.1 and over its unix socket, with ``fsync=on`` (the server's default, comparable to
  SQLite FULL) and ``fsync=off`` (comparable to NORMAL: nothing is lost when a process dies).

Run: ``.venv/bin/python benchmarks/bench_store.py [--appends N]``. Other benchmarks may import
:func:`append_latencies` and :func:`percentiles` (e.g. the workers' benchmark).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flowc.runtime.envelope import EV_TEXT, Envelope
from flowc.runtime.wal import SqliteStore, WalStore

__all__ = ["append_latencies", "percentiles"]


def append_latencies(store: WalStore, n: int, *, run: str = "bench", warmup: int = 50,
                     holder: str = "bench-host:1:0:hub-bench") -> list[float]:
    """Wall seconds of each of ``n`` fenced appends to one run of ``store`` (after
    ``warmup`` appends that are not counted), each following the one before."""
    lease = store.acquire(run, holder, 600)
    last: str | None = None
    out: list[float] = []
    body = {"text": "x" * 200}
    clock = time.perf_counter
    for i in range(warmup + n):
        env = Envelope(run, "a", None, EV_TEXT, body, envelope_id=f"{run}-{i}")
        start = clock()
        store.append(env, lease, last)
        took = clock() - start
        last = env.envelope_id
        if i >= warmup:
            out.append(took)
    store.release(lease)
    return out


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50, p99 and mean of ``samples``, in microseconds."""
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p50": pick(0.50) * 1e6, "p99": pick(0.99) * 1e6,
            "mean": statistics.fmean(ordered) * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=3000)
    args = parser.parse_args()
    from flowc.runtime.pgstore import PgStore
    from tests.pgcluster import PgCluster

    rows: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for sync in ("NORMAL", "FULL"):
            store = SqliteStore(Path(tmp) / f"{sync}.db", synchronous=sync)
            rows.append((f"SQLite synchronous={sync}",
                         percentiles(append_latencies(store, args.appends))))
            store.close()
    for fsync in (False, True):
        with PgCluster(fsync=fsync) as cluster:
            for how, dsn in (("TCP", cluster.create_database()),
                             ("unix socket", cluster.socket_dsn(cluster.create_database()
                                                                .rpartition("/")[2]))):
                store = PgStore(dsn)
                rows.append((f"PostgreSQL fsync={'on' if fsync else 'off'}, {how}",
                             percentiles(append_latencies(store, args.appends))))
                store.close()
    print(f"per-append latency, {args.appends} fenced appends to one run (µs, wall time)")
    print(f"{'store':<38} {'p50':>8} {'p99':>8} {'mean':>8}")
    for name, p in rows:
        print(f"{name:<38} {p['p50']:>8.0f} {p['p99']:>8.0f} {p['mean']:>8.0f}")


if __name__ == "__main__":
    main()
