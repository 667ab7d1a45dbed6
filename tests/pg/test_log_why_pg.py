"""`flowc log --why` and `--scenario-upto` on a run stored in PostgreSQL: the same
explanation and the same scenario as for the same run stored in SQLite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main
from tests.runtime.test_log_why import FLOW, SCRIPT


def test_why_and_the_scenario_are_the_same_from_postgresql_and_sqlite(
    tmp_path: Path, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    flow, script = tmp_path / "review.flow", tmp_path / "script.json"
    flow.write_text(FLOW)
    script.write_text(json.dumps(SCRIPT))
    sqlite = str(tmp_path / "runs.db")
    counts = []
    for db in (sqlite, pg_dsn):
        assert main(["run", str(flow), "--script", str(script), "--db", db, "--json"]) == 0
        counts.append(json.loads(capsys.readouterr().out)["turn_count"])
    assert counts == [8, 8]
    turns = counts[0]
    for n in range(1, turns + 1):
        docs = []
        for db in (sqlite, pg_dsn):
            assert main(["log", "last", "--why", str(n), "--json", "--db", db]) == 0
            doc = json.loads(capsys.readouterr().out)
            assert doc["turn"] == n and doc["agrees"]
            docs.append({k: v for k, v in doc.items() if k != "run_id"})
        assert docs[0] == docs[1]
        blocks = []
        for db in (sqlite, pg_dsn):
            argv = ["log", "last", "--scenario-upto", str(n), "--name", "fork", "--db", db]
            assert main(argv) == 0
            blocks.append(capsys.readouterr().out)
        assert blocks[0] == blocks[1] and f"  expect turns {n}\n" in blocks[0]
