"""An interrupted run's end names the properties its turns broke, as every other end of a
run does: the ``--json`` document and the ``--jsonl`` end line have
``property_violations``, the transcript the ``property violated: ...`` line. A real
``flowc run`` process, interrupted with SIGINT while an agent thinks, on a SQLite file."""

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
max_turns 8
when from user then drafter
when from drafter then reviewer
when from reviewer then drafter
property one_draft: from drafter at most 1 time
"""

#: the reviewer answers once, then thinks until it is interrupted (saying so in a file)
AGENTS = """import asyncio, os
calls = []
async def reviewer(turn):
    calls.append(1)
    if len(calls) == 1:
        return "r1"
    open(os.environ["WAITING_FILE"], "w").close()
    await asyncio.sleep(120)
    return "late"
AGENTS = {"reviewer": reviewer}
"""

#: the options every run of this file has besides the flow and its script
RUN = ("--agents", "agents.py", "--db", "runs.db")

BROKEN = {
    "property": "one_draft",
    "turn": 4,
}


def interrupted_run(tmp_path: Path, *more: str, reviewer: str = "reviewer") -> tuple[str, str]:
    (tmp_path / "a.flow").write_text(FLOW.replace("reviewer", f"`{reviewer}`"))
    (tmp_path / "agents.py").write_text(AGENTS.replace('"reviewer"', repr(reviewer)))
    (tmp_path / "k.yaml").write_text("{kickoff: hi, script: {drafter: [d, d2]}}\n")
    waiting = tmp_path / "waiting"
    waiting.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "flowc", "run", "a.flow", "--script", "k.yaml", *RUN, *more],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "WAITING_FILE": str(waiting)},
    )
    try:
        deadline = time.monotonic() + 60
        while not waiting.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    return out, err


def test_the_json_end_of_an_interrupted_run_names_its_violations(tmp_path: Path) -> None:
    out, _ = interrupted_run(tmp_path, "--json")
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["turn_count"] == 4
    [broken] = doc["property_violations"]
    assert {k: broken[k] for k in BROKEN} == BROKEN
    # the same list as `flowc log --json` of the run
    log = subprocess.run(
        [sys.executable, "-m", "flowc", "log", "last", "--db", "runs.db", "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert json.loads(log.stdout)["property_violations"] == doc["property_violations"]


def test_the_jsonl_end_of_an_interrupted_run_names_its_violations(tmp_path: Path) -> None:
    out, _ = interrupted_run(tmp_path, "--jsonl")
    end = json.loads(out.splitlines()[-1])
    assert end["event"] == "end" and end["interrupted"] is True
    [broken] = end["property_violations"]
    assert {k: broken[k] for k in BROKEN} == BROKEN


def test_the_transcript_of_an_interrupted_run_names_its_violations(tmp_path: Path) -> None:
    out, err = interrupted_run(tmp_path)
    assert out.endswith(
        "property violated: one_draft (turn 4)\ninterrupted: after 4 turns, reviewer to speak next\n"
    ), out
    assert "is open; continue it with" in err


def test_the_interrupted_line_writes_the_next_speakers_name_as_text(tmp_path: Path) -> None:
    # a name in backquotes may hold a terminal control: written as an escape, never sent
    out, _ = interrupted_run(tmp_path, reviewer="rev\x1b[2Jx")
    assert "\x1b" not in out, out
    assert out.endswith("interrupted: after 4 turns, rev\\x1b[2Jx to speak next\n"), out
