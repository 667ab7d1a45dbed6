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
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
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
            await hub.close()

        asyncio.run(check(acknowledged))


# ── kill, then `flowc resume`, again and again ───────────────────────────────

RR_FLOW = """flow rr "three agents in turn"
speaker a
speaker b
speaker c
start a
max_turns {max_turns}
when from a then b
when from b then c
when from c then a
"""


def _turns(db: Path) -> list[tuple[str, str]]:
    """(sender, text) of every turn in the WAL, read as another process would."""
    import json
    import sqlite3

    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        rows = con.execute(
            "SELECT envelope FROM wal WHERE event_type IN (?, ?) ORDER BY seq",
            (EV_TEXT, "ag2.packet"),
        ).fetchall()
    except sqlite3.OperationalError:  # the table is not there yet
        return []
    finally:
        con.close()
    out = []
    for (row,) in rows:
        env = json.loads(row)
        data = env["event_data"]
        out.append((env["sender_id"], data.get("body", data.get("text", ""))))
    return out


def _flowc(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "flowc", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )


def _kill_once_past(proc: subprocess.Popen[bytes], db: Path, at_least: int) -> None:
    """SIGKILL ``proc`` once the WAL holds ``at_least`` turns; fail if it never does."""
    deadline = time.monotonic() + 30
    while len(_turns(db)) < at_least:
        if proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(f"the run ended before turn {at_least}: {err.decode()}")
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise AssertionError(
                f"no progress: the WAL stayed at {len(_turns(db))} turns, expected {at_least}"
            )
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()


def _script(per_speaker: int) -> str:
    import json

    return json.dumps({"script": {s: [f"{s}{i}" for i in range(per_speaker)] for s in "abc"}})


def _kill_resume_cycles(tmp_path: Path, mode: str, max_turns: int, cycles: int) -> None:
    flow = tmp_path / "rr.flow"
    flow.write_text(RR_FLOW.format(max_turns=max_turns))
    db = tmp_path / "runs.db"
    if mode == "agents":
        drive = ["--agents", str(Path(__file__).with_name("resume_agents.py"))]
    else:
        (tmp_path / "script.json").write_text(_script(max_turns // 3 + 1))
        drive = ["--script", str(tmp_path / "script.json")]
    rng = random.Random()
    proc = _flowc("run", str(flow), *drive, "--db", str(db))
    seen = 0
    for cycle in range(cycles):
        _kill_once_past(proc, db, seen + rng.randint(1, 40))
        turns = _turns(db)
        assert len(turns) > seen, f"cycle {cycle}: the resumed run made no progress"
        seen = len(turns)
        # the next speaker of a run killed mid-turn is an agent: resume must give it its turn
        proc = _flowc("resume", "last", *drive, "--db", str(db))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert b'closed: "max_turns"' in out
    turns = _turns(db)
    # nothing accepted lost, nothing duplicated: the WAL is the uninterrupted run
    if mode == "agents":
        expected = [("abc"[i % 3], f"t{i}") for i in range(max_turns)]
    else:
        expected = [("abc"[i % 3], f"{'abc'[i % 3]}{i // 3}") for i in range(max_turns)]
    assert turns == expected
    replay = _flowc("replay", "last", "--db", str(db))
    out, err = replay.communicate(timeout=60)
    assert replay.returncode == 0, out.decode() + err.decode()


def test_kill_and_resume_agents_make_progress_and_lose_nothing(tmp_path: Path) -> None:
    _kill_resume_cycles(tmp_path, "agents", max_turns=900, cycles=6)


def test_kill_and_resume_scripted_speakers_skip_what_they_said(tmp_path: Path) -> None:
    _kill_resume_cycles(tmp_path, "script", max_turns=3000, cycles=5)


def test_hydrate_gives_the_pending_turn_to_an_agent(tmp_path: Path) -> None:
    """A run whose next speaker is an agent continues once hydrated, whether the agent
    is registered before or after ``hydrate``, after a clean close of the first hub."""

    def rule(frm: str, to: str) -> dict[str, object]:
        return {
            "when": {"name": "from_speaker", "args": {"agent_id": frm}},
            "then": {"name": "agent", "args": {"agent_id": to}},
            "priority": 0,
        }

    graph = {
        "initial_speaker": "a",
        "max_turns": 12,
        "transitions": [rule("a", "b"), rule("b", "c"), rule("c", "b")],
        "default_target": {"name": "terminate", "args": {"reason": "done"}},
    }
    db = tmp_path / "h.db"
    stop_after = 4

    async def first() -> str:
        hub = await Hub.open(SqliteStore(db))
        said = 0

        async def bot(turn: object) -> str | None:
            nonlocal said
            said += 1
            return f"turn {said}" if said <= stop_after else None  # then the process "dies"

        user = hub.register_human("a")
        hub.register_agent("b", bot)
        hub.register_agent("c", bot)
        ch = await user.open("workflow", target=["b", "c"], knobs={"graph": graph}, expectations=())
        await ch.send("go")
        await ch.wait(timeout=10)
        await hub.idle()
        assert hub.channel(ch.channel_id).stalled_on in ("b", "c")
        await hub.close()
        return ch.channel_id

    cid = asyncio.run(first())

    async def later(register_first: bool) -> tuple[int, str | None]:
        hub = await Hub.open(SqliteStore(db))

        async def bot(turn: object) -> str:
            return "again"

        def register() -> None:
            hub.register_human("a")
            hub.register_agent("b", bot)
            hub.register_agent("c", bot)

        if register_first:
            register()
        [reopened] = await hub.hydrate()
        assert reopened == cid
        if not register_first:
            register()
        ch = hub.channel(reopened)
        # nothing but the hydrated hub gives the agents their turns
        await asyncio.wait_for(ch.done.wait(), 10)
        await hub.idle()
        count, reason = ch.state.turn_count, ch.close_reason
        await hub.close()
        return count, reason

    # copy the stalled WAL so both orders start from the same point
    import shutil

    shutil.copy(db, tmp_path / "stalled.db")
    assert asyncio.run(later(True)) == (12, "max_turns")
    shutil.copy(tmp_path / "stalled.db", db)
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    assert asyncio.run(later(False)) == (12, "max_turns")
