"""One writer per run: leases, fencing, and `flowc replay` on a WAL two writers wrote."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import pytest

from flowc.cli import main
from flowc.runtime import EV_TEXT, Hub, MemoryStore, ProtocolError, SqliteStore
from flowc.runtime.wal import LeaseError, WalStore, holder_alive, holder_id
from tests.pgcluster import DURABLE, STORES, StoreMaker

ROOT = Path(__file__).resolve().parents[2]
AGENTS = Path(__file__).with_name("resume_agents.py")
TURNS = 3000  # long enough (~5 s) for the second process to meet the first one running

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


def _flowc(*args: str, lease_seconds: float | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if lease_seconds is not None:
        env["FLOWC_LEASE_SECONDS"] = str(lease_seconds)
    return subprocess.Popen(
        [sys.executable, "-m", "flowc", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )


def _wait_turns(db: Path, n: int, proc: subprocess.Popen[bytes]) -> None:
    from tests.runtime.test_reliability import _turns

    deadline = time.monotonic() + 30
    while len(_turns(db)) < n:
        assert proc.poll() is None, proc.communicate()[1].decode()
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.01)


def _stop_between_transactions(proc: subprocess.Popen[bytes], db: Path) -> None:
    """SIGSTOP ``proc`` at a moment it holds no SQLite write lock.

    A writer frozen inside a transaction keeps the whole database locked (SQLite has one
    writer per file), so nobody could take its run over whatever the lease says; the case
    under test is a writer paused *between* appends, past its lease. Stop, probe the lock,
    and let it run on a little if it was caught mid-transaction.
    """
    import sqlite3

    for _ in range(200):
        proc.send_signal(signal.SIGSTOP)
        probe = sqlite3.connect(db, timeout=0, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            return
        except sqlite3.OperationalError:
            proc.send_signal(signal.SIGCONT)
            time.sleep(0.002)
        finally:
            probe.close()
    raise AssertionError("the writer held the database lock at every stop")


def _consecutive(db: Path, count: int) -> None:
    from tests.runtime.test_reliability import _turns

    assert _turns(db) == [("abc"[i % 3], f"t{i}") for i in range(count)]


@pytest.fixture
def flow(tmp_path: Path) -> Path:
    path = tmp_path / "rr.flow"
    path.write_text(RR_FLOW.format(max_turns=TURNS))
    return path


def test_a_second_writer_is_refused_naming_the_run_and_the_holder(
    tmp_path: Path, flow: Path
) -> None:
    db = tmp_path / "runs.db"
    first = _flowc("run", str(flow), "--agents", str(AGENTS), "--db", str(db))
    _wait_turns(db, 5, first)
    second = _flowc("resume", "last", "--agents", str(AGENTS), "--db", str(db))
    out, err = second.communicate(timeout=60)
    assert second.returncode == 2, err.decode()
    [cid] = SqliteStore(db).channel_ids()
    message = err.decode()
    assert f"run {cid} is being written by another hub" in message
    assert f"pid {first.pid} on " in message
    assert "Traceback" not in message
    # `flowc log` shows who runs it
    log = _flowc("log", "--db", str(db))
    out, _ = log.communicate(timeout=60)
    if first.poll() is None:
        assert f"pid {first.pid}" in out.decode()
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err.decode()
    _consecutive(db, TURNS)


def test_a_writer_paused_past_its_lease_is_fenced_off(tmp_path: Path, flow: Path) -> None:
    db = tmp_path / "runs.db"
    first = _flowc("run", str(flow), "--agents", str(AGENTS), "--db", str(db), lease_seconds=1)
    _wait_turns(db, 5, first)
    _stop_between_transactions(first, db)
    try:
        time.sleep(1.5)  # past its lease: the run is free to take over
        second = _flowc("resume", "last", "--agents", str(AGENTS), "--db", str(db), lease_seconds=1)
        _wait_turns(db, 60, second)
    finally:
        first.send_signal(signal.SIGCONT)
    # the first writer wakes up mid-turn: its next append is refused, it stops
    out, err = first.communicate(timeout=60)
    assert first.returncode == 1, out.decode()
    assert "was taken over by another hub" in err.decode()
    assert f"pid {second.pid}" in err.decode()
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, out.decode() + err.decode()
    _consecutive(db, TURNS)
    assert main(["replay", "last", "--db", str(db)]) == 0


@pytest.mark.parametrize("kind", STORES)
def test_lease_rules(kind: str, make_store: StoreMaker) -> None:
    store: WalStore = make_store(kind)
    from flowc.runtime.envelope import Envelope

    env = Envelope("r", "a", None, EV_TEXT, {"text": "x"}, envelope_id="e1")
    me, other = holder_id("hub-me"), holder_id("hub-other")
    lease = store.acquire("r", me, 30)
    store.append(env, lease)
    with pytest.raises(LeaseError, match="run r is being written by another hub") as info:
        store.acquire("r", other, 30)
    assert info.value.holder == me and info.value.channel_id == "r"
    assert store.lease_of("r") == lease
    lease = store.renew(lease, 30)
    # an expired lease is free; the old holder's appends are refused, and so are its renewals
    store.renew(lease, -1)
    taken = store.acquire("r", other, 30)
    assert taken.token == lease.token + 1
    with pytest.raises(LeaseError, match="taken over by another hub"):
        store.append(attrs.evolve(env, envelope_id="e2"), lease)
    with pytest.raises(LeaseError, match="taken over"):
        store.renew(lease, 30)
    store.release(lease)  # not current: changes nothing
    assert store.lease_of("r") == taken
    store.append(attrs.evolve(env, envelope_id="e3"), taken)
    assert [e.envelope_id for e in store.read("r")] == ["e1", "e3"]
    store.release(taken)
    assert store.lease_of("r") is None
    again = store.acquire("r", me, 30)
    assert again.token == taken.token + 1  # tokens only grow
    # a lease held by a dead process on this host is free at once
    dead = subprocess.run(
        [
            sys.executable,
            "-c",
            "from flowc.runtime.wal import holder_id;print(holder_id('hub-dead'))",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    ghost = dead.stdout.strip()
    assert holder_alive(ghost) is False and holder_alive(me) is True
    assert holder_alive("elsewhere:1:2:hub-x") is None
    store.acquire("r2", ghost, 30)
    assert store.lease_of("r2") is None
    store.acquire("r2", me, 30)
    store.close()


@pytest.mark.parametrize("kind", DURABLE)
def test_two_hubs_of_one_process_cannot_both_write_a_run(kind: str, make_store: StoreMaker) -> None:
    graph = {
        "initial_speaker": "a",
        "max_turns": 100,
        "transitions": [
            {
                "when": {"name": "always", "args": {}},
                "then": {"name": "round_robin", "args": {}},
                "priority": 0,
            }
        ],
        "default_target": {"name": "terminate", "args": {"reason": "done"}},
    }

    async def main_() -> None:
        one = await Hub.open(make_store(kind))
        a = one.register_human("a")
        one.register_human("b")
        ch = await a.open("workflow", target=["b"], knobs={"graph": graph}, expectations=())
        await ch.send("hi")
        two = await Hub.open(make_store(kind))
        assert await two.hydrate() == []  # left to the hub that holds it
        with pytest.raises(LeaseError, match=f"run {ch.channel_id} is being written"):
            await two.hydrate([ch.channel_id])
        await one.close()
        assert await two.hydrate([ch.channel_id]) == [ch.channel_id]
        two.register_human("b")
        await two.client("b").send(ch.channel_id, "from two")  # type: ignore[union-attr]
        await two.close()

    asyncio.run(main_())


@pytest.mark.parametrize("kind", DURABLE)
@pytest.mark.parametrize("second_writer", ["stale", "unlinked"])
def test_replay_finds_turns_that_do_not_follow_one_another(
    make_store: StoreMaker, capsys: pytest.CaptureFixture[str], second_writer: str, kind: str
) -> None:
    db = make_store.db(kind)
    graph = {
        "initial_speaker": "a",
        "max_turns": 100,
        "transitions": [
            {
                "when": {"name": "always", "args": {}},
                "then": {"name": "round_robin", "args": {}},
                "priority": 0,
            }
        ],
        "default_target": {"name": "terminate", "args": {"reason": "done"}},
    }

    async def write() -> str:
        hub = await Hub.open(make_store(kind))
        users = [hub.register_human(n) for n in "abc"]
        ch = await users[0].open(
            "workflow", target=["b", "c"], knobs={"graph": graph}, expectations=()
        )
        for i in range(6):
            await users[i % 3].send(ch.channel_id, f"t{i}")
        wal = hub.read_wal(ch.channel_id)
        await hub.close()
        store = make_store(kind)
        if second_writer == "stale":
            # a writer whose view of the run ended at t2 writes t3 again (by the
            # speaker the run now waits for: only the link tells it apart)
            store.append(
                attrs.evolve(wal[4], envelope_id="second-writer"), follows=wal[3].envelope_id
            )
        else:
            # a writer that records no link (as flowc did before) writes b's turn again
            store.append(attrs.evolve(wal[5], envelope_id="second-writer"))
        store.close()
        return ch.channel_id

    cid = asyncio.run(write())
    assert main(["replay", cid, "--db", db]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"run {cid}: the WAL is broken at envelope 8 (second-writer)")
    if second_writer == "stale":
        assert "it was written after" in out and "two writers wrote this run" in out
    else:
        assert "turn 7 does not follow the one before" in out
        assert "expects 'a' to speak, got 'b'" in out
    # and resume refuses to continue it
    assert main(["resume", cid, "--db", db]) == 1
    assert "the WAL is broken at envelope 8" in capsys.readouterr().err


async def _two_humans_in_turn(hub: Hub) -> tuple[Any, Any]:
    """A run of humans ``a`` and ``b`` taking turns (10 at most), opened by ``a``: its
    channel (as ``a`` holds it) and ``b``."""
    a, b = hub.register_human("a"), hub.register_human("b")
    graph = {
        "initial_speaker": "a",
        "max_turns": 10,
        "transitions": [],
        "default_target": {"name": "round_robin", "args": {}},
    }
    ch = await a.open("workflow", target=["b"], knobs={"graph": graph}, expectations=())
    return ch, b


def test_hub_stops_a_run_it_lost() -> None:
    async def main_() -> None:
        store = MemoryStore()
        hub = await Hub.open(store)
        ch, b = await _two_humans_in_turn(hub)
        await ch.send("one")
        lease = hub.channel(ch.channel_id).lease
        assert lease is not None
        store.renew(lease, -1)
        store.acquire(ch.channel_id, holder_id("hub-thief"), 30)
        with pytest.raises(ProtocolError, match="taken over by another hub"):
            await b.send(ch.channel_id, "two")
        c = hub.channel(ch.channel_id)
        assert c.done.is_set() and c.error is not None and c.state.turn_count == 1
        await hub.close()

    asyncio.run(main_())


def test_a_beat_renews_every_lease_older_than_a_sixth_and_says_when_it_ran_late(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No lease goes more than half its length without a renewal: a beat renews each
    lease not renewed in the last sixth of a lease, so one an append renewed just after
    the last beat is renewed at this one, not the next (which left a stall of a third of
    a lease enough to lose it); one renewed in the last sixth is left. A beat that runs
    more than a sixth of a lease late logs it. The beats are called directly, on a real
    SQLite file, with the times set as a beat finds them."""

    async def main_() -> None:
        store = SqliteStore(tmp_path / "runs.db")
        hub = await Hub.open(store, lease_seconds=60)
        ch, _ = await _two_humans_in_turn(hub)
        channel = hub.channel(ch.channel_id)

        def renewed_ago(seconds: float) -> None:
            """Make the lease as it is ``seconds`` after its last renewal."""
            assert channel.lease is not None
            channel.lease = store.renew(channel.lease, 60 - seconds)
            channel.renew_at = time.monotonic() + 20 - seconds

        def expiry() -> float:
            lease = store.lease_of(ch.channel_id)
            assert lease is not None
            return lease.expires_at

        # renewed (by an append) a quarter of a lease ago: more than a sixth, less than
        # the third at which an append renews on its own
        renewed_ago(15)
        before = expiry()
        hub._heartbeat()
        assert expiry() > before + 10, "a lease renewed a quarter of a lease ago was left"
        # renewed a twelfth of a lease ago: left for the next beat
        renewed_ago(5)
        before = expiry()
        hub._heartbeat()
        assert expiry() == before
        assert "late" not in caplog.text
        # a beat that runs 15 s after it was due (a sixth of this lease is 10 s)
        hub._beat_due = asyncio.get_running_loop().time() - 15
        with caplog.at_level("WARNING", logger="flowc.runtime.hub"):
            hub._heartbeat()
        assert "the lease heartbeat ran 15" in caplog.text and "s late" in caplog.text
        await hub.close()

    asyncio.run(main_())


def test_a_sqlite_lease_under_wall_clock_jumps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SQLite run database judges leases on its host's wall clock (docs/deployment.md,
    "Lease settings"): set forward, a live holder's run is taken over early, and its next
    write is refused, so nothing is written twice; set back, a live holder keeps its run
    longer, but a holder that died is noticed at once."""
    from flowc.runtime.envelope import Envelope

    store = SqliteStore(str(tmp_path / "runs.db"))
    env = Envelope("r", "a", None, EV_TEXT, {"text": "x"}, envelope_id="e1")
    me, other, third = holder_id("hub-me"), holder_id("hub-other"), holder_id("hub-third")
    real = time.time
    lease = store.acquire("r", me, 30)
    store.append(env, lease)
    monkeypatch.setattr(time, "time", lambda: real() + 60)  # set forward a minute
    taken = store.acquire("r", other, 30)
    assert taken.token == lease.token + 1
    with pytest.raises(LeaseError, match="taken over by another hub"):
        store.append(attrs.evolve(env, envelope_id="e2"), lease)
    store.append(attrs.evolve(env, envelope_id="e3"), taken)
    monkeypatch.setattr(time, "time", lambda: real() - 3600)  # set back an hour
    # the lease taken a minute "ahead" now has an hour and a minute to run
    with pytest.raises(LeaseError, match="being written by another hub"):
        store.acquire("r", third, 30)
    # ... unless its holder is a process of this host that is gone
    ghost = subprocess.run(
        [sys.executable, "-c", "from flowc.runtime.wal import holder_id;print(holder_id('x'))"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    ).stdout.strip()
    monkeypatch.setattr(time, "time", real)
    store.acquire("r2", ghost, 30)
    monkeypatch.setattr(time, "time", lambda: real() - 3600)
    assert store.acquire("r2", third, 30).holder == third
    assert [e.envelope_id for e in store.read("r")] == ["e1", "e3"]
    store.close()
