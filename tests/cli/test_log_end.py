"""`flowc log RUN` prints a run's transcript as `flowc run` printed it, its end included:
the properties the run broke, how it ended, and its context."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_runs import REVIEW_FLOW, flowc


def test_log_ends_the_transcript_as_run_printed_it(tmp_path: Path) -> None:
    (tmp_path / "a.flow").write_text(REVIEW_FLOW)
    (tmp_path / "s.yaml").write_text(
        "{kickoff: hi, script: {drafter: [d, d2], reviewer: [r1, {tool: approve, say: ok}]}}\n"
    )
    run = flowc(tmp_path, "run", "a.flow", "--script", "s.yaml", "--db", "r.db")
    assert run.returncode == 3, run.stderr  # a property broken
    log = flowc(tmp_path, "log", "last", "--db", "r.db")
    assert log.returncode == 0, log.stderr
    # the log's first line names the run; the rest is the run's transcript, whole
    assert log.stdout.split("\n", 1)[1] == run.stdout
    assert log.stdout.endswith(
        'property violated: one_draft (turn 4)\nclosed: "approved" after 5 turns\n'
        'context: {"done": true}\n'
    )


def test_the_log_of_an_open_run_ends_with_its_context(tmp_path: Path) -> None:
    (tmp_path / "a.flow").write_text(REVIEW_FLOW)
    (tmp_path / "s.yaml").write_text("{kickoff: hi, script: {drafter: [d, d2], reviewer: [r1]}}\n")
    run = flowc(tmp_path, "run", "a.flow", "--script", "s.yaml", "--db", "r.db")
    assert run.returncode == 3, run.stderr  # stalled, a property broken
    assert "stalled: reviewer has no turn to take after 4 turns" in run.stdout
    log = flowc(tmp_path, "log", "last", "--db", "r.db")
    assert log.stdout.endswith(
        "property violated: one_draft (turn 4)\nopen: 4 turns so far, reviewer to speak next\n"
        'context: {"done": false}\n'
    )
