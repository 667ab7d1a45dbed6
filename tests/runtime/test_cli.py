"""`flowc run`, `flowc test`, `flowc log`, `flowc replay` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main

ROOT = Path(__file__).resolve().parents[2]

FLOW = """flow review "drafter and reviewer"
speaker user: human
speaker drafter
speaker reviewer { tool approve sets done = true }
start user
max_turns 12
context done = false
when context.done == true then terminate "approved"
when from user then drafter
when from drafter then reviewer
when from reviewer then drafter
"""

SCRIPT_YAML = """kickoff: Write a paragraph on HTTPS
script:
  drafter: [Draft 1, Draft 2]
  reviewer:
    - Tighten the second sentence
    - {tool: approve, say: Approved}
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "review.flow").write_text(FLOW)
    (tmp_path / "script.yaml").write_text(SCRIPT_YAML)
    return tmp_path


def test_run_prints_a_readable_transcript(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = files / "runs.db"
    code = main(
        ["run", str(files / "review.flow"), "--script", str(files / "script.yaml"), "--db", str(db)]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "  1  user      Write a paragraph on HTTPS" in out
    assert "→ reviewer  (rule 3, line 10: when from drafter then reviewer)" in out
    assert "context: done = true" in out
    assert (
        '■ terminate "approved"  (rule 1, line 8: when context.done == true then terminate "approved")'
        in out
    )
    assert out.rstrip().endswith('closed: "approved" after 5 turns\ncontext: {"done": true}')
    assert db.exists()


def test_run_json_and_the_log(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(files / "runs.db")
    assert (
        main(
            [
                "run",
                str(files / "review.flow"),
                "--script",
                str(files / "script.yaml"),
                "--json",
                "--db",
                db,
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert [t["speaker"] for t in out["turns"]] == [
        "user",
        "drafter",
        "reviewer",
        "drafter",
        "reviewer",
    ]
    assert (out["close_reason"], out["context_vars"], out["turn_count"]) == (
        "approved",
        {"done": True},
        5,
    )
    assert main(["log", "--db", db]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert len(listing) == 1 and listing[0].endswith('5 turns  "approved"')
    run_id = listing[0].split()[0]
    assert main(["log", "--db", db, run_id[:8]]) == 0
    shown = capsys.readouterr().out
    assert "→ reviewer  (rule 3, line 10: when from drafter then reviewer)" in shown
    assert main(["replay", "--db", db, "last"]) == 0
    assert 'same close reason "approved", same state (5 turns' in capsys.readouterr().out


def test_replay_detects_a_tampered_wal(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    db = str(files / "runs.db")
    main(["run", str(files / "review.flow"), "--script", str(files / "script.yaml"), "--db", db])
    capsys.readouterr()
    con = sqlite3.connect(db)
    row = con.execute(
        "SELECT seq, envelope FROM wal WHERE event_type = 'ag2.packet' ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    env = json.loads(row[1])
    env["event_data"]["context_updates"]["set"] = {}
    con.execute("UPDATE wal SET envelope = ? WHERE seq = ?", (json.dumps(env), row[0]))
    con.commit()
    con.close()
    assert main(["replay", "--db", db, "last"]) == 1
    assert "diverges" in capsys.readouterr().out


def test_run_stalls_when_the_script_runs_out(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (files / "short.json").write_text(json.dumps({"kickoff": "x", "script": {"drafter": ["d"]}}))
    code = main(
        [
            "run",
            str(files / "review.flow"),
            "--script",
            str(files / "short.json"),
            "--json",
            "--db",
            ":memory:",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["stalled_on"] == "reviewer" and out["close_reason"] is None


def test_run_refuses_a_bad_script_before_running(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (files / "bad.json").write_text(json.dumps({"script": {"reviewer": [{"tool": "reject"}]}}))
    db = files / "none.db"
    assert (
        main(
            [
                "run",
                str(files / "review.flow"),
                "--script",
                str(files / "bad.json"),
                "--db",
                str(db),
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert "reviewer has no tool `reject` (declared: approve)" in err
    assert not db.exists() or (
        main(["log", "--db", str(db)]) == 0 and capsys.readouterr().out == ""
    )


def test_run_refuses_a_bare_graph_with_a_non_participant(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = {
        "initial_speaker": "a",
        "max_turns": None,
        "transitions": [
            {
                "when": {"name": "always", "args": {}},
                "then": {"name": "agent", "args": {"agent_id": "ghost"}},
                "priority": 0,
            }
        ],
        "default_target": {"name": "terminate", "args": {"reason": "x"}},
    }
    (files / "g.json").write_text(json.dumps(graph))
    (files / "s.json").write_text(json.dumps({"kickoff": "hi", "participants": ["a", "b"]}))
    assert (
        main(["run", str(files / "g.json"), "--script", str(files / "s.json"), "--db", ":memory:"])
        == 1
    )
    assert (
        'transitions[0].then.args.agent_id: "ghost" is not a participant (a, b)'
        in capsys.readouterr().err
    )


def test_flowc_test_reports_pass_and_the_first_divergence(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (files / "review.flow").write_text(
        FLOW
        + """
scenario "approval" {
  user: "brief"
  drafter: "d1"
  reviewer calls approve with {}: "ok"
  expect terminate "approved"
}
scenario "wrong order" {
  user: "brief"
  drafter: "d1"
  drafter: "d2"
}
"""
    )
    assert main(["test", str(files)]) == 1
    out = capsys.readouterr().out
    assert "  ok    approval" in out
    assert "  FAIL  wrong order" in out
    assert (
        "turn 3 (line 22): expected drafter, the graph chose reviewer "
        "(rule 3, line 10: when from drafter then reviewer)" in out
    )
    assert out.rstrip().endswith("2 scenarios: 1 passed, 1 failed")


def test_every_example_scenario_passes(capsys: pytest.CaptureFixture[str]) -> None:
    examples = ROOT / "examples"
    if not any(examples.glob("*.flow")):
        pytest.skip("no examples yet")
    code = main(["test", str(examples)])
    out = capsys.readouterr().out
    assert code == 0, out


def test_a_script_without_a_kickoff_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "f.flow"
    flow.write_text("speaker customer: human\nspeaker bot\nwhen from customer then bot\n")
    script = tmp_path / "s.json"
    script.write_text('{"script": {"bot": ["hello"]}}')
    db = tmp_path / "runs.db"  # not the default .flowc/runs.db of the working folder
    assert main(["run", str(flow), "--script", str(script), "--db", str(db)]) == 1
    out = capsys.readouterr().out
    assert "after 0 turns" not in out
    assert (
        "stalled before the first turn: nothing gave customer, the start speaker, a first "
        "turn (the script has no `kickoff` and no turn under `script.customer`)"
    ) in out
