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
AGENTS = """import os, threading, time
def drafter(turn):
    return "draft on " + threading.current_thread().name
def reviewer(turn):
    if os.environ.get("BLOCK"):
        open(os.environ["WAITING_FILE"], "w").close()
        time.sleep(600)
    return "fine"
AGENTS = {"drafter": drafter, "reviewer": reviewer}
"""

#: the options every run of this file has besides the flow and what it prints
AGENT_ARGS = ("--agents", "agents.py", "--script", "k.yaml", "--db", "runs.db")


def _start(tmp_path: Path, block: bool, *more: str) -> subprocess.Popen[str]:
    (tmp_path / "a.flow").write_text(FLOW)
    (tmp_path / "agents.py").write_text(AGENTS)
    (tmp_path / "k.yaml").write_text("{kickoff: hi}\n")
    env = {**os.environ, "WAITING_FILE": str(tmp_path / "waiting")}
    if block:
        env["BLOCK"] = "1"
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
        while not (tmp_path / "waiting").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)  # once: the run stops, the sleeping thread is left
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["turn_count"] == 2
    assert doc["next_speaker"] == "reviewer"
    assert "Traceback" not in err
