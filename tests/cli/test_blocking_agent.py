"""A plain (blocking) agent function holds up nothing: Ctrl-C stops the run at once while
it waits (one SIGINT, exit 130, the turns so far kept), the process does not wait for
it to return, and its turns are what it returns. Real ``flowc run`` processes on a
SQLite file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

FLOW = """speaker user: human
speaker drafter
speaker reviewer
start user
max_turns 6
when from user then drafter
when from drafter then reviewer
when from reviewer then terminate "done"
"""

#: plain functions: the drafter answers; the reviewer (when told to) blocks in
#: `time.sleep`, saying so in a file, and keeps the thread it runs in
AGENTS = """import os, signal, threading, time
def drafter(turn):
    return "draft on " + threading.current_thread().name
def reviewer(turn):
    if os.environ.get("STOP"):
        raise StopIteration  # (no future holds it: the turn's failure all the same)
    if os.environ.get("BLOCK"):  # (the file names the thread, as the kernel knows it,
        # and whether Ctrl-C is blocked in it: left to the main thread)
        blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        open(os.environ["WAITING_FILE"], "w").write(f"{threading.get_native_id()} {blocked}")
        time.sleep(600)
    return "fine"
AGENTS = {"drafter": drafter, "reviewer": reviewer}
"""

#: the options every run of this file has besides the flow and what it prints
AGENT_ARGS = ("--agents", "agents.py", "--script", "k.yaml", "--db", "runs.db")


def _start(tmp_path: Path, block: bool, *more: str, stop: bool = False) -> subprocess.Popen[str]:
    (tmp_path / "a.flow").write_text(FLOW)
    (tmp_path / "agents.py").write_text(AGENTS)
    (tmp_path / "k.yaml").write_text("{kickoff: hi}\n")
    env = {**os.environ, "WAITING_FILE": str(tmp_path / "waiting")}
    if block:
        env["BLOCK"] = "1"
    if stop:
        env["STOP"] = "1"
    return subprocess.Popen(
        [sys.executable, "-m", "flowc", "run", "a.flow", *AGENT_ARGS, *more],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        env=env,
    )


def test_a_plain_agent_runs_its_turns(tmp_path: Path) -> None:
    proc = _start(tmp_path, False, "--json")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    texts = [t["text"] for t in doc["turns"]]
    # (in a thread of its own: the event loop is never held)
    assert texts == ["hi", "draft on flowc-agent", "fine"], texts
    assert doc["close_reason"] == "done"


def test_one_ctrl_c_stops_a_run_while_a_plain_agent_blocks(tmp_path: Path) -> None:
    proc = _start(tmp_path, True, "--json")
    try:
        deadline = time.monotonic() + 60
        waiting = tmp_path / "waiting"
        while not (waiting.exists() and waiting.read_text()):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        # once: the run stops, the sleeping thread is left. The kernel hands a process's
        # signal to any thread that does not block it: sent by way of the agent's thread
        # (Linux), as it happened under load, it must reach the main thread all the same
        # (it waited for the function before: a minute, in CI)
        thread, blocked = waiting.read_text().split()
        os.kill(int(thread) if sys.platform == "linux" else proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    # (not blocked there, it waited for the main thread's next wake: ten seconds here, more
    # than a minute under load)
    assert blocked == "True"
    assert proc.returncode == 130, err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["turn_count"] == 2
    assert doc["next_speaker"] == "reviewer"
    assert "Traceback" not in err


def test_a_plain_agent_raising_stop_iteration_fails_its_turn(tmp_path: Path) -> None:
    proc = _start(tmp_path, False, stop=True)
    out, err = proc.communicate(timeout=120)  # (it waited for ever: a future refuses it)
    assert proc.returncode == 1, err
    assert "turn 3 failed (reviewer): the agent raised StopIteration (agents.py:" in out


def test_a_cancelled_turn_drops_the_coroutine_its_function_returns_later() -> None:
    """The turn is cancelled while the function blocks; the coroutine it then returns is
    closed, never left un-awaited (no RuntimeWarning), and never run."""
    import asyncio
    import gc
    import threading
    import warnings

    from flowc.runtime.blocking import in_thread

    started, release, returned = threading.Event(), threading.Event(), threading.Event()
    ran = []

    async def later() -> str:
        ran.append(1)
        return "late"

    def agent(turn: object) -> object:
        started.set()
        release.wait(10)
        coro = later()
        returned.set()
        return coro

    async def main() -> None:
        task = asyncio.ensure_future(in_thread(agent)(None))
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        release.set()
        while not returned.is_set():
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.05)  # (the thread's outcome reaches the loop)
        assert task.cancelled()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
        gc.collect()
    assert ran == []
    assert not [w for w in caught if "never awaited" in str(w.message)], caught
