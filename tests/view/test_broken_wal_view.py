"""`flowc view RUN` of a run whose SQLite WAL was edited by hand into one no hub could
have written: refused before the server starts, in `flowc replay`'s and `flowc log`'s
words and with their exit status, rather than showing a run that never was."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli.cli_runs import flowc
from tests.cli.test_broken_wal_log import NOT_A_PARTICIPANT, _broken_at, _edit, _run


def _view(tmp_path: Path, run_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "flowc", "view", run_id, "--db", "r.db", "--no-open"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_view_refuses_a_record_from_no_participant_as_log_does(tmp_path: Path) -> None:
    run_id = _run(tmp_path)
    _edit(tmp_path, NOT_A_PARTICIPANT)
    replay = flowc(tmp_path, "replay", run_id, "--db", "r.db")
    said = _broken_at(replay.stdout)
    log = flowc(tmp_path, "log", run_id, "--db", "r.db")
    view = _view(tmp_path, run_id)
    try:
        out, err = view.communicate(timeout=60)  # (a server started would never end)
    finally:
        view.kill()
        view.wait()
    assert view.returncode == log.returncode == replay.returncode == 1
    assert out == ""
    assert err == f"flowc view: error: r.db: run {run_id}: {said}\n"
    assert log.stderr == f"flowc log: error: r.db: run {run_id}: {said}\n"


def test_view_of_an_intact_run_serves_it(tmp_path: Path) -> None:
    run_id = _run(tmp_path)
    view = _view(tmp_path, run_id)
    try:
        assert view.stdout is not None
        first = view.stdout.readline()
    finally:
        view.kill()
        view.wait()
    assert first.startswith("flowc view: serving r.db at http://127.0.0.1:")
    assert f"/run/{run_id}?token=" in first
