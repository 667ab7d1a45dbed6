"""`flowc fork --json` / `--jsonl` name the new run's parent as `forked_from`, in the form
`flowc log --json` / `--jsonl` give it for the same run (the document, and the start and
end lines); so does `flowc resume` of a fork. They left it out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.cli_runs import REVIEW_FLOW, flowc

SCRIPT = "{kickoff: hi, script: {drafter: [d], reviewer: [more]}}\n"
#: the turns after turn 1: the drafter's, then nobody's (the run stalls on the reviewer)
FORK_SCRIPT = "{script: {drafter: [d2]}}\n"


def _parent(tmp_path: Path) -> str:
    (tmp_path / "a.flow").write_text(REVIEW_FLOW)
    (tmp_path / "s.yaml").write_text(SCRIPT)
    (tmp_path / "f.yaml").write_text(FORK_SCRIPT)
    ran = flowc(tmp_path, "run", "a.flow", "--script", "s.yaml", "--db", "r.db", "--json")
    assert ran.returncode == 1, ran.stderr  # (the drafter has no second turn)
    run_id: str = json.loads(ran.stdout)["run_id"]
    return run_id


def _fork(tmp_path: Path, parent: str, new: str, how: str) -> Any:
    forked = flowc(
        tmp_path, "fork", parent, "1", "--script", "f.yaml", "--run-id", new, "--db", "r.db", how
    )
    assert forked.returncode == 1, forked.stderr  # stalled on the reviewer
    return forked.stdout


def test_fork_json_carries_forked_from_as_log_does(tmp_path: Path) -> None:
    parent = _parent(tmp_path)
    doc = json.loads(_fork(tmp_path, parent, "wf-child", "--json"))
    assert doc["forked_from"] == {"run_id": parent, "turn": 1}
    assert doc["run_id"] == "wf-child" and doc["turn_count"] == 2
    logged = json.loads(flowc(tmp_path, "log", "wf-child", "--json", "--db", "r.db").stdout)
    assert doc["forked_from"] == logged["forked_from"]
    # resuming the fork says the same
    resumed = flowc(tmp_path, "resume", "wf-child", "--json", "--db", "r.db")
    assert json.loads(resumed.stdout)["forked_from"] == logged["forked_from"]


def test_fork_jsonl_carries_forked_from_on_its_start_and_end_lines(tmp_path: Path) -> None:
    parent = _parent(tmp_path)
    lines = [
        json.loads(line) for line in _fork(tmp_path, parent, "wf-child", "--jsonl").splitlines()
    ]
    logged = flowc(tmp_path, "log", "wf-child", "--jsonl", "--db", "r.db").stdout.splitlines()
    log_lines = [json.loads(line) for line in logged]
    assert [line["event"] for line in lines] == ["start", "turn", "turn", "end"]
    for ours, log in ((lines[0], log_lines[0]), (lines[-1], log_lines[-1])):
        assert ours["forked_from"] == log["forked_from"] == {"run_id": parent, "turn": 1}
    assert all("forked_from" not in line for line in lines[1:-1])


def test_a_run_that_is_no_fork_has_no_forked_from(tmp_path: Path) -> None:
    parent = _parent(tmp_path)
    resumed = flowc(tmp_path, "resume", parent, "--json", "--db", "r.db")
    assert "forked_from" not in json.loads(resumed.stdout)
