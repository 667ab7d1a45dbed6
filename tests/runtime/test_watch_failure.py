"""A watcher that fails (a turn the transcript cannot print) is never silent: the run goes
on to its end, then the caller hears that the transcript stopped, after which turn and
why, and ``flowc run`` / ``flowc resume`` exit 2 saying so."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import flowc
from flowc.runtime.script import parse_script
from flowc.runtime.script_run import WatchStopped, run_script_sync
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import TurnRecord

ROOT = Path(__file__).resolve().parents[2]
FLOW = "speaker a: human\nspeaker b\nsequence a -> b -> a -> b\n"
SCRIPT = {"kickoff": "hi", "script": {"b": ["b1", "b2"], "a": ["a2"]}}


class FailsAtTurn:
    def __init__(self, bad: int) -> None:
        self.bad = bad
        self.seen: list[int] = []

    def opened(self, run_id: str) -> None:
        pass

    def turn(self, record: TurnRecord, state: Any) -> None:
        if record.number == self.bad:
            raise UnicodeEncodeError("ascii", "\u2192", 0, 1, "cannot print")
        self.seen.append(record.number)


def test_a_failing_watcher_is_dropped_the_run_ends_and_the_caller_hears_why() -> None:
    target = RunTarget.from_compiled(flowc.compile_flow(FLOW))
    watcher = FailsAtTurn(3)
    with pytest.raises(WatchStopped) as stopped:
        run_script_sync(target, parse_script(SCRIPT), watch=watcher)
    stop = stopped.value
    assert watcher.seen == [1, 2]  # nothing after the failing turn was given to it
    assert stop.shown == 2
    assert isinstance(stop.error, UnicodeEncodeError) and stop.__cause__ is stop.error
    assert "the transcript stopped after 2 turn(s): UnicodeEncodeError" in str(stop)
    assert stop.result.close_reason == "max_turns" and stop.result.turn_count == 4


#: a file every write to fails (ENOSPC): the transcript cannot print a turn there
FULL = Path("/dev/full")


def _flowc(*args: str, cwd: Path, full: bool = False) -> subprocess.CompletedProcess[str]:
    """``flowc ARGS``; ``full``: its stdout is :data:`FULL`, so nothing it prints there
    is kept (a character stdout's encoding lacks no longer stops the transcript: it is
    written as an escape, see ``tests/cli/test_unencodable_output.py``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("FLOWC_TRACEBACK", None)
    with contextlib.ExitStack() as stack:
        stdout = stack.enter_context(FULL.open("w")) if full else subprocess.PIPE
        return subprocess.run(
            [sys.executable, "-m", "flowc", *args],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=cwd,
            encoding="utf-8",
            errors="replace",
            timeout=120,
        )


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")
def test_flowc_run_and_resume_say_the_transcript_stopped_and_exit_2(tmp_path: Path) -> None:
    """When stdout refuses every write, the transcript cannot print its turn lines:
    the run still ends (it is in the database whole), stderr says the transcript stopped
    and why, and the exit status is 2, not 0 nor an internal error."""
    (tmp_path / "f.flow").write_text(FLOW)
    (tmp_path / "s.json").write_text(json.dumps(SCRIPT))
    db = str(tmp_path / "runs.db")
    ran = _flowc("run", "f.flow", "--script", "s.json", "--db", db, cwd=tmp_path, full=True)
    assert ran.returncode == 2, ran
    assert "internal error" not in ran.stderr
    line = ran.stderr.strip().splitlines()[-1]
    assert line.startswith("flowc run: the transcript stopped after 0 turns: OSError")
    run_id = line.split("the run itself is unaffected: run ")[1].split()[0]
    assert f'run {run_id} closed "max_turns" after 4 turns' in line
    assert f"`flowc log {run_id} --db {db}`" in line
    stored = _flowc("log", run_id, "--db", db, "--json", cwd=tmp_path)
    assert json.loads(stored.stdout)["turn_count"] == 4  # the run is whole
    # resuming the closed run shows its stored turns: the same failure, said the same way
    resumed = _flowc("resume", run_id, "--db", db, cwd=tmp_path, full=True)
    assert resumed.returncode == 2, resumed
    assert "flowc resume: the transcript stopped after 0 turns" in resumed.stderr
