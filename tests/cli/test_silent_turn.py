"""A turn that calls a tool but says nothing and routes nothing: the run stops there, as
AG2's does, with the tool's context writes kept (AG2 keeps them), and says why, as
`flowc test` does, rather than that the speaker had no turn."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_runs import REVIEW_FLOW, flowc

SILENT = "{kickoff: hi, script: {drafter: [d], reviewer: [{tool: approve}]}}\n"
NONE_LEFT = "{kickoff: hi, script: {drafter: [d]}}\n"


def test_a_silent_turn_is_said_as_such(tmp_path: Path) -> None:
    (tmp_path / "a.flow").write_text(REVIEW_FLOW)
    (tmp_path / "s.yaml").write_text(SILENT)
    run = flowc(tmp_path, "run", "a.flow", "--script", "s.yaml", "--db", "r.db")
    assert run.returncode == 1, run.stderr
    assert "stalled after 2 turns: reviewer's turn says nothing and routes nothing" in run.stdout, (
        run.stdout
    )
    assert "has no turn to take" not in run.stdout
    assert 'context: {"done": true}' in run.stdout  # written, as AG2 writes it


def test_a_speaker_with_no_turn_left_is_not_silent(tmp_path: Path) -> None:
    (tmp_path / "a.flow").write_text(REVIEW_FLOW)
    (tmp_path / "s.yaml").write_text(NONE_LEFT)
    run = flowc(tmp_path, "run", "a.flow", "--script", "s.yaml", "--db", "r.db")
    assert run.returncode == 1, run.stderr
    assert "stalled: reviewer has no turn to take after 2 turns" in run.stdout, run.stdout
    assert "says nothing" not in run.stdout
