"""Per-append latency of the WAL stores, side by side: SQLite and PostgreSQL.

What a hub pays per accepted envelope before it may deliver it: one fenced append (the run's
lease checked and the row written in one committed transaction, ``follows`` recorded). For
each store: p50, p99 and mean wall time of ``--appends`` appends to one run, after a warm-up;
then the per-turn latency of a whole hub (3 humans taking turns in a round robin: admission,
routing and the append), :func:`turn_latencies`.

- SQLite: a file in a temporary folder, ``synchronous=NORMAL`` (flowc's default: survives a
  killed process) and ``FULL`` (also a power cut: an fsync per commit);
- PostgreSQL: a throw-away cluster of Debian's server (tests/pgcluster.py) over TCP on
  127.0.0.1 and over its unix socket, with ``fsync=on`` (the server's default, comparable to
  SQLite FULL) and ``fsync=off`` (comparable to NORMAL: nothing is lost when a process dies).

``--whole-run`` measures only the SQLite store's share of a whole ``flowc run`` of 2,400 turns
(no PostgreSQL needed): a child process opens a new file, takes the lease, makes the 2,402
fenced appends of such a run and closes the file (its checkpoint included), in CPU seconds,
best of ``--rounds``, with the ``-wal`` frames (pages) an append writes: the count that the kernel's share (two writes a frame,
six lock calls a commit) and the close's checkpoint follow.

Run: ``.venv/bin/python benchmarks/bench_store.py [--appends N] [--whole-run [--rounds N]]``.
Other benchmarks may import :func:`append_latencies` and :func:`percentiles` (e.g. the
workers' benchmark).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flowc.runtime.envelope import EV_TEXT, Envelope
from flowc.runtime.wal import PAGE_SIZE, SqliteStore, WalStore

__all__ = ["append_latencies", "percentiles", "turn_latencies"]

RR3 = {
    "initial_speaker": "a",
    "max_turns": None,
    "transitions": [
        {
            "when": {"name": "always", "args": {}},
            "then": {"name": "round_robin", "args": {}},
            "priority": 0,
        }
    ],
    "default_target": {"name": "terminate", "args": {"reason": "done"}},
}


def append_latencies(
    store: WalStore,
    n: int,
    *,
    run: str = "bench",
    warmup: int = 50,
    holder: str = "bench-host:1:0:hub-bench",
) -> list[float]:
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


def turn_latencies(store: WalStore, n: int, *, warmup: int = 50) -> list[float]:
    """Wall seconds of each of ``n`` turns of a 3-party round robin on a hub over ``store``
    (after ``warmup`` uncounted turns): from the send to the turn being admitted, its
    envelope committed and routed."""
    import asyncio

    from flowc.runtime.hub import Hub

    async def go() -> list[float]:
        hub = await Hub.open(store)
        users = {name: hub.register_human(name, buffer=False) for name in "abc"}
        ch = await users["a"].open(
            "workflow", target=["b", "c"], knobs={"graph": RR3}, expectations=()
        )
        out = []
        clock = time.perf_counter
        for i in range(warmup + n):
            start = clock()
            users["abc"[i % 3]].send_nowait(ch.channel_id, "turn")
            took = clock() - start
            if i >= warmup:
                out.append(took)
        await hub.close(close_store=False)
        return out

    return asyncio.run(go())


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50, p99 and mean of ``samples``, in microseconds."""
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {
        "p50": pick(0.50) * 1e6,
        "p99": pick(0.99) * 1e6,
        "mean": statistics.fmean(ordered) * 1e6,
    }


#: the store's share of a 2,400-turn run, in a child process (argv: file, appends)
WHOLE_RUN = """
import json, os, sys, time
from flowc.runtime.envelope import EV_CHANNEL_OPENED, EV_TEXT, Envelope
from flowc.runtime.wal import SqliteStore, holder_id
path, n = sys.argv[1], int(sys.argv[2])
run = "wf-0123456789ab"
envelopes = [Envelope(run, "a", None, EV_CHANNEL_OPENED, {"metadata": {"participants": "abc"}},
                      envelope_id="0c4697fe-00000000", created_at="2026-01-01T00:00:00.000000Z")]
envelopes += [Envelope(run, "abc"[i % 3], None, EV_TEXT, {"text": "turn"},
                       envelope_id=f"0c4697fe-{i:08x}",
                       created_at=f"2026-01-01T00:00:{i % 60:02d}.{i:06d}Z")
              for i in range(1, n)]
start = time.process_time()
store = SqliteStore(path)
lease = store.acquire(run, holder_id("hub-bench"))
last = None
for envelope in envelopes:
    store.append(envelope, lease, last)
    last = envelope.envelope_id
wal = os.path.getsize(path + "-wal")
store.release(lease)
store.close()
print(json.dumps({"cpu": time.process_time() - start, "wal": wal}))
"""


def whole_run(rounds: int, appends: int = 2402) -> None:
    """Print the SQLite store's share of a whole run (see the module's text)."""
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    best: tuple[float, int] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            path = Path(tmp) / "runs.db"
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            done = subprocess.run(
                [sys.executable, "-c", WHOLE_RUN, str(path), str(appends)],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            got = json.loads(done.stdout)
            if best is None or got["cpu"] < best[0]:
                best = (got["cpu"], got["wal"])
    assert best is not None
    print(
        f"SQLite store's share of a {appends - 2:,}-turn run: open, {appends} fenced appends, "
        f"close (CPU ms, best of {rounds}; load {os.getloadavg()[0]:.1f})"
    )
    cpu, wal = best
    # each commit writes the pages it changed as frames (24-byte header + page) after the
    # -wal file's 32-byte header: two writes and a checksum each
    frames = (wal - 32) // (24 + PAGE_SIZE)
    print(
        f"  {'a new file':<44} {cpu * 1000:6.1f} ms   -wal {wal / 1e6:5.1f} MB "
        f"({cpu / appends * 1e6:4.1f} µs, {frames / appends:.2f} frames an append)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=3000)
    parser.add_argument(
        "--whole-run", action="store_true", help="only the SQLite store's share of a 2,400-turn run"
    )
    parser.add_argument("--rounds", type=int, default=9, help="rounds of --whole-run")
    args = parser.parse_args()
    if args.whole_run:
        whole_run(args.rounds)
        return
    from flowc.runtime.pgstore import PgStore
    from tests.pgcluster import PgCluster

    rows: list[tuple[str, dict[str, float], dict[str, float]]] = []

    def measure(name: str, open_store: Callable[[], WalStore]) -> None:
        store = open_store()
        appends = percentiles(append_latencies(store, args.appends))
        store.close()
        store = open_store()
        turns = percentiles(turn_latencies(store, args.appends))
        store.close()
        rows.append((name, appends, turns))

    with tempfile.TemporaryDirectory() as tmp:
        for sync in ("NORMAL", "FULL"):
            measure(
                f"SQLite synchronous={sync}",
                lambda sync=sync: SqliteStore(Path(tmp) / f"{sync}.db", synchronous=sync),
            )
    for fsync in (False, True):
        with PgCluster(fsync=fsync) as cluster:
            tcp = cluster.create_database()
            sock = cluster.socket_dsn(cluster.create_database().rpartition("/")[2])
            for how, dsn in (("TCP", tcp), ("unix socket", sock)):
                measure(
                    f"PostgreSQL fsync={'on' if fsync else 'off'}, {how}",
                    lambda dsn=dsn: PgStore(dsn),
                )
    print(
        f"latency in µs (wall time), {args.appends} fenced appends to one run / "
        f"{args.appends} turns of a hub run"
    )
    print(
        f"{'store':<36} {'append p50':>10} {'p99':>7} {'mean':>7} "
        f"{'turn p50':>9} {'p99':>7} {'mean':>7}"
    )
    for name, a, t in rows:
        print(
            f"{name:<36} {a['p50']:>10.0f} {a['p99']:>7.0f} {a['mean']:>7.0f} "
            f"{t['p50']:>9.0f} {t['p99']:>7.0f} {t['mean']:>7.0f}"
        )


if __name__ == "__main__":
    main()
