"""`flowc resume` never plays again a silent round its run's SQLite WAL holds already.

A scripted turn that says nothing and routes nothing (a silent round) stalls the run, and
its context writes are stored. Resuming with the same script counted only the turns that
posted a message as taken, so the silent turn was played again: each resume appended the
same context write to the WAL once more, and a script that went on after the silent turn
never got past it. Now the stored round takes that scripted turn; a turn written in its
place that speaks (the fix the transcript asks for) is still played."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.cli.cli_runs import REVIEW_FLOW, flowc

#: the reviewer calls `approve` (which sets done = true) and says nothing: a silent round
SILENT = "{kickoff: hi, script: {drafter: [d], reviewer: [{tool: approve}]}}\n"
#: the same, and then a turn that speaks
GOES_ON = "{kickoff: hi, script: {drafter: [d], reviewer: [{tool: approve}, ok]}}\n"
ROUND = {"after_turn": 2, "speaker": "reviewer", "context": {"set": {"done": True}, "delete": []}}


def _rows(db: Path, run_id: str | None = None) -> list[tuple[str, str]]:
    """``(run id, event type)`` of every row of the WAL, in order (of one run, if given)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT channel_id, event_type FROM wal ORDER BY seq").fetchall()
    return [(cid, et) for cid, et in rows if run_id is None or cid == run_id]


def _writes(db: Path, run_id: str | None = None) -> int:
    return sum(1 for _, et in _rows(db, run_id) if et == "ag2.context.set")


def _log(cwd: Path, run: str = "last") -> Any:
    logged = flowc(cwd, "log", run, "--json", "--db", "r.db")
    assert logged.returncode == 0, logged.stderr
    return json.loads(logged.stdout)


def test_resuming_with_the_same_script_writes_nothing_again(tmp_path: Path) -> None:
    (tmp_path / "a.flow").write_text(REVIEW_FLOW)
    (tmp_path / "s.yaml").write_text(SILENT)
    ran = flowc(tmp_path, "run", "a.flow", "--script", "s.yaml", "--db", "r.db")
    assert ran.returncode == 1, ran.stderr
    db = tmp_path / "r.db"
    stored = _rows(db)
    assert _writes(db) == 1
    for _ in range(3):
        resumed = flowc(tmp_path, "resume", "last", "--script", "s.yaml", "--db", "r.db")
        assert resumed.returncode == 1, resumed.stderr
        # the round is shown once, where it happened, and the script has nothing left
        assert resumed.stdout.count("silent round") == 1, resumed.stdout
        assert "stalled: reviewer has no turn to take after 2 turns" in resumed.stdout
    assert _rows(db) == stored  # not a row more
    doc = _log(tmp_path)
    assert doc["silent_rounds"] == [ROUND] and doc["turn_count"] == 2
    assert doc["context_vars"] == {"done": True}


def test_resuming_goes_on_with_the_turn_after_the_silent_one(tmp_path: Path) -> None:
    (tmp_path / "a.flow").write_text(REVIEW_FLOW)
    (tmp_path / "s.yaml").write_text(GOES_ON)
    (tmp_path / "silent.yaml").write_text(SILENT)
    assert (
        flowc(tmp_path, "run", "a.flow", "--script", "silent.yaml", "--db", "r.db").returncode == 1
    )
    resumed = flowc(tmp_path, "resume", "last", "--script", "s.yaml", "--db", "r.db")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "  3  reviewer  ok" in resumed.stdout
    assert 'closed: "approved" after 3 turns' in resumed.stdout
    assert _writes(tmp_path / "r.db") == 1
    doc = _log(tmp_path)
    assert doc["silent_rounds"] == [ROUND]
    assert [t["text"] for t in doc["turns"]] == ["hi", "d", "ok"]


def test_a_fork_resumed_with_its_script_writes_its_round_once(tmp_path: Path) -> None:
    # the fork copies turns 1 and 2, not the parent's round after them: its own silent
    # round is the fork's, taken by the fork's script
    (tmp_path / "a.flow").write_text(REVIEW_FLOW)
    (tmp_path / "s.yaml").write_text(SILENT)
    (tmp_path / "f.yaml").write_text("{script: {reviewer: [{tool: approve}]}}\n")
    assert flowc(tmp_path, "run", "a.flow", "--script", "s.yaml", "--db", "r.db").returncode == 1
    forked = flowc(
        tmp_path, "fork", "last", "2", "--script", "f.yaml", "--run-id", "wf-fork", "--db", "r.db"
    )
    assert forked.returncode == 1, forked.stderr
    db = tmp_path / "r.db"
    assert _writes(db, "wf-fork") == 1
    for _ in range(2):
        resumed = flowc(tmp_path, "resume", "wf-fork", "--script", "f.yaml", "--db", "r.db")
        assert resumed.returncode == 1, resumed.stderr
    assert _writes(db, "wf-fork") == 1
    assert _log(tmp_path, "wf-fork")["silent_rounds"] == [ROUND]


def test_two_silent_rounds_in_a_row_are_two_for_resume_and_log_alike(tmp_path: Path) -> None:
    """A speaker silent twice in a row (resumed in between) wrote twice: `resume` counts
    the two silent turns it played, and `log` (text, `--json`, `--scenario-upto`) shows
    the same two rounds, so a scenario cut from the log replays the run it came from."""
    (tmp_path / "a.flow").write_text(REVIEW_FLOW)
    once = "{kickoff: hi, script: {drafter: [d], reviewer: [{tool: approve}]}}\n"
    twice = (
        "{kickoff: hi, script: {drafter: [d], reviewer: [{tool: approve}, {tool: approve}, ok]}}\n"
    )
    (tmp_path / "once.yaml").write_text(once)
    (tmp_path / "twice.yaml").write_text(twice)
    assert flowc(tmp_path, "run", "a.flow", "--script", "once.yaml", "--db", "r.db").returncode == 1
    second = flowc(tmp_path, "resume", "last", "--script", "twice.yaml", "--db", "r.db")
    assert second.returncode == 1, second.stderr  # the second silent turn: stalled again
    db = tmp_path / "r.db"
    assert _writes(db) == 2
    assert _log(tmp_path)["silent_rounds"] == [ROUND, ROUND]
    third = flowc(tmp_path, "resume", "last", "--script", "twice.yaml", "--db", "r.db")
    assert _writes(db) == 2, third.stdout  # both silent turns taken: `ok` is played
    assert _log(tmp_path)["silent_rounds"] == [ROUND, ROUND]
    upto = flowc(tmp_path, "log", "last", "--db", "r.db", "--scenario-upto", "3")
    assert upto.returncode == 0, upto.stderr
    assert upto.stdout.count("reviewer calls approve") == 2, upto.stdout
    assert 'reviewer: "ok"' in upto.stdout, upto.stdout
