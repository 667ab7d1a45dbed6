"""A run's SQLite WAL edited by hand into one no hub could have written (a record's sender
no participant of the run, a turn after the close): `flowc log` refuses it as `flowc replay`
does, naming the record, with replay's exit status, rather than printing the run."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from tests.cli.cli_runs import REVIEW_FLOW, flowc

SCRIPT = "{kickoff: hi, script: {drafter: [d1, d2], reviewer: [again, {tool: approve, say: ok}]}}\n"


def _run(tmp_path: Path) -> str:
    (tmp_path / "a.flow").write_text(REVIEW_FLOW)
    (tmp_path / "s.yaml").write_text(SCRIPT)
    run = flowc(tmp_path, "run", "a.flow", "--script", "s.yaml", "--db", "r.db")
    assert run.returncode in (0, 3), run.stdout + run.stderr  # (it drafts twice: one_draft)
    listed = json.loads(flowc(tmp_path, "log", "--json", "--db", "r.db").stdout)
    run_id: str = listed[0]["run_id"]
    return run_id


def _edit(tmp_path: Path, sql: str) -> None:
    with sqlite3.connect(tmp_path / "r.db") as db:
        db.execute(sql)
    db.close()


#: the second turn (drafter's first packet) sent by someone who is no participant
NOT_A_PARTICIPANT = (
    "UPDATE wal SET envelope = json_set(envelope, '$.sender_id', 'mallory') "
    "WHERE seq = (SELECT seq FROM wal WHERE event_type = 'ag2.packet' ORDER BY seq LIMIT 1)"
)


def _broken_at(replay_out: str) -> str:
    found = re.search(r"the WAL is broken at envelope \d+ \([^)]*\)[^\n]*", replay_out)
    assert found is not None, replay_out
    return found.group(0)


@pytest.mark.parametrize("mode", [(), ("--json",), ("--jsonl",)], ids=["text", "json", "jsonl"])
def test_log_refuses_a_record_from_no_participant_as_replay_does(
    tmp_path: Path, mode: tuple[str, ...]
) -> None:
    run_id = _run(tmp_path)
    _edit(tmp_path, NOT_A_PARTICIPANT)
    replay = flowc(tmp_path, "replay", run_id, "--db", "r.db")
    assert replay.returncode == 1
    said = _broken_at(replay.stdout)
    assert said.endswith("'mallory' is not a participant")
    log = flowc(tmp_path, "log", run_id, "--db", "r.db", *mode)
    assert log.returncode == replay.returncode
    assert log.stdout == ""
    assert log.stderr == f"flowc log: error: r.db: run {run_id}: {said}\n"


def test_log_of_every_run_lists_it_as_damaged(tmp_path: Path) -> None:
    run_id = _run(tmp_path)
    _edit(tmp_path, NOT_A_PARTICIPANT)
    said = _broken_at(flowc(tmp_path, "replay", run_id, "--db", "r.db").stdout)
    listed = flowc(tmp_path, "log", "--db", "r.db")
    assert listed.returncode == 1
    assert listed.stdout == f"{run_id}  damaged\n"
    assert f"run {run_id}: {said}" in listed.stderr


def test_why_and_scenario_refuse_a_turn_after_the_break_only(tmp_path: Path) -> None:
    run_id = _run(tmp_path)
    _edit(tmp_path, NOT_A_PARTICIPANT)
    said = _broken_at(flowc(tmp_path, "replay", run_id, "--db", "r.db").stdout)
    for option in ("--why", "--scenario-upto"):
        refused = flowc(tmp_path, "log", run_id, option, "3", "--db", "r.db")
        assert refused.returncode == 1 and said in refused.stderr, refused.stderr
        # the turn before the break is one a hub wrote (as `flowc fork RUN 1` copies it)
        assert flowc(tmp_path, "log", run_id, option, "1", "--db", "r.db").returncode == 0


def test_log_refuses_a_turn_after_the_close(tmp_path: Path) -> None:
    run_id = _run(tmp_path)
    with sqlite3.connect(tmp_path / "r.db") as db:
        # the close and the last turn change places
        (close,) = db.execute(
            "SELECT seq FROM wal WHERE event_type = 'ag2.channel.closed'"
        ).fetchone()
        (last,) = db.execute("SELECT max(seq) FROM wal WHERE event_type = 'ag2.packet'").fetchone()
        db.execute("UPDATE wal SET seq = -1 WHERE seq = ?", (close,))
        db.execute("UPDATE wal SET seq = ? WHERE seq = ?", (close, last))
        db.execute("UPDATE wal SET seq = ? WHERE seq = -1", (last,))
    db.close()
    replay = flowc(tmp_path, "replay", run_id, "--db", "r.db")
    assert replay.returncode == 1
    said = _broken_at(replay.stdout)
    log = flowc(tmp_path, "log", run_id, "--db", "r.db")
    assert log.returncode == 1 and log.stdout == ""
    assert log.stderr == f"flowc log: error: r.db: run {run_id}: {said}\n"


def test_an_intact_run_is_logged_as_before(tmp_path: Path) -> None:
    run_id = _run(tmp_path)
    assert "re-folded" in flowc(tmp_path, "replay", run_id, "--db", "r.db").stdout
    log = flowc(tmp_path, "log", run_id, "--db", "r.db")
    assert log.returncode == 0 and 'closed: "approved" after 5 turns' in log.stdout
