"""Crash safety: SIGKILL a run at random points; hydrate rebuilds what the WAL implies."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from flowc.runtime import EV_CONTEXT_SET, EV_TEXT, Hub, SqliteStore

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("crash_child.py")


def _kill_after(db: Path, delay: float) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(CHILD), str(db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=ROOT)
    deadline = time.monotonic() + 20
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    chunks: list[bytes] = []
    started = None
    while time.monotonic() < deadline:
        data = proc.stdout.read()
        if data:
            chunks.append(data)
            if started is None:
                started = time.monotonic()
        if started is not None and time.monotonic() - started >= delay:
            break
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode() if proc.stderr else "child died")
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    os.set_blocking(proc.stdout.fileno(), True)
    rest = proc.stdout.read()
    chunks.append(rest)
    text = b"".join(chunks).decode()
    # a line cut by the kill was not acknowledged: only complete lines count
    lines = text.split("\n")[:-1]
    assert lines, "the child accepted nothing before the kill"
    return lines


def test_sigkill_at_random_points_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    rng = random.Random()
    acknowledged: list[str] = []
    for _round in range(4):
        acknowledged += _kill_after(db, rng.uniform(0.05, 0.4))

        async def check(acknowledged: list[str]) -> None:
            hub = await Hub.open(SqliteStore(db))
            [cid] = await hub.hydrate()
            wal = hub.read_wal(cid)
            ids = [e.envelope_id for e in wal]
            assert len(ids) == len(set(ids)), "an envelope is in the WAL twice"
            assert set(acknowledged) <= set(ids), "an acknowledged envelope was lost"
            # the state the WAL implies, computed here without the adapter
            turns = [e for e in wal if e.event_type == EV_TEXT]
            context: dict[str, int] = {}
            for e in wal:
                if e.event_type == EV_CONTEXT_SET:
                    context.update(e.event_data["set"])
            st = hub.channel(cid).state
            assert st.turn_count == len(turns)
            assert st.expected_next_speaker == "abc"[len(turns) % 3]
            assert st.last_speaker_id == (turns[-1].sender_id if turns else None)
            assert st.context_vars == context
            # and the run continues from there
            users = {n: hub.register_human(n) for n in "abc"}
            who = hub.channel(cid).expected_next()
            assert who is not None
            await users[who].send(cid, "after the crash")
            assert hub.channel(cid).state.turn_count == len(turns) + 1
            hub.store.close()

        asyncio.run(check(acknowledged))
