"""A silent round (a speaker's answer with no text and no routing: the run stalls, the
context its tool wrote is kept, as AG2 keeps it) is shown where it happened, as a round
of its own, by every reader of the run's SQLite WAL: `flowc run`'s transcript, `--json`
and `--jsonl`, `flowc resume`, `flowc log` (and `--scenario-upto` across it) and the
view's data. Its writes are never a turn's, the next turn of its speaker's least."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flowc.runtime.stores import open_store
from flowc.view.feed import RunView, TurnFeed
from tests.cli.cli_runs import REVIEW_FLOW, flowc

#: the reviewer calls `approve` (which sets done = true) and says nothing: a silent round
SILENT = "{kickoff: hi, script: {drafter: [d], reviewer: [{tool: approve}]}}\n"
#: the turn given to the reviewer afterwards (`flowc resume`)
FIXED = "{kickoff: hi, script: {drafter: [d], reviewer: [ok]}}\n"

ROUND = {"after_turn": 2, "speaker": "reviewer", "context": {"set": {"done": True}, "delete": []}}
NO_WRITES = {"set": {}, "delete": []}


def _stalled(tmp_path: Path, *options: str) -> Any:
    (tmp_path / "a.flow").write_text(REVIEW_FLOW)
    (tmp_path / "s.yaml").write_text(SILENT)
    (tmp_path / "fixed.yaml").write_text(FIXED)
    return flowc(tmp_path, "run", "a.flow", "--script", "s.yaml", "--db", "r.db", *options)


def _resumed(tmp_path: Path, *options: str) -> Any:
    assert _stalled(tmp_path).returncode == 1
    return flowc(tmp_path, "resume", "last", "--script", "fixed.yaml", "--db", "r.db", *options)


def _silent_block(out: str) -> list[str]:
    """The lines of the transcript ``out`` from the silent round's to the next numbered one."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "silent round" in line)
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:3].strip()), len(lines))
    return lines[start:end]


def test_run_shows_the_silent_round_after_the_turn_it_followed(tmp_path: Path) -> None:
    run = _stalled(tmp_path)
    assert run.returncode == 1, run.stderr
    out = run.stdout
    assert out.index("  2  drafter") < out.index("reviewer  (silent round") < out.index("stalled")
    block = _silent_block(out)
    assert block[0].strip().startswith("reviewer  (silent round: no text and no routing")
    assert block[1].strip() == "context: done = true"
    assert "give the turn a text" in out and 'context: {"done": true}' in out


def test_run_json_and_jsonl_have_the_silent_round(tmp_path: Path) -> None:
    doc = json.loads(_stalled(tmp_path, "--json").stdout)
    assert doc["silent_rounds"] == [ROUND]
    assert [t["context"] for t in doc["turns"]] == [NO_WRITES, NO_WRITES]
    lines = [json.loads(line) for line in _stalled(tmp_path, "--jsonl").stdout.splitlines()]
    assert [line["event"] for line in lines] == ["start", "turn", "turn", "silent", "end"]
    assert lines[3] == {"event": "silent", **ROUND}
    assert "silent_rounds" not in lines[-1]  # (said once, where it happened)


def test_resume_does_not_credit_the_round_to_the_next_turn(tmp_path: Path) -> None:
    resumed = _resumed(tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    out = resumed.stdout
    assert out.index("reviewer  (silent round") < out.index("  3  reviewer  ok")
    turn3 = out[out.index("  3  reviewer  ok") :]
    assert "context: done" not in turn3  # the round's write, not turn 3's
    assert 'closed: "approved" after 3 turns' in out
    (tmp_path / "j").mkdir()
    doc = json.loads(_resumed(tmp_path / "j", "--json").stdout)
    assert doc["silent_rounds"] == [ROUND]
    assert doc["turns"][2]["context"] == NO_WRITES


def test_log_shows_the_silent_round_in_place(tmp_path: Path) -> None:
    assert _resumed(tmp_path).returncode == 0
    text = flowc(tmp_path, "log", "last", "--db", "r.db")
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert (
        out.index("  2  drafter")
        < out.index("reviewer  (silent round")
        < out.index("  3  reviewer")
    )
    assert _silent_block(out)[1].strip() == "context: done = true"
    assert "context: done" not in out[out.index("  3  reviewer") :].split("closed:")[0]
    doc = json.loads(flowc(tmp_path, "log", "last", "--json", "--db", "r.db").stdout)
    assert doc["silent_rounds"] == [ROUND]
    assert [t["context"] for t in doc["turns"]] == [NO_WRITES] * 3
    jsonl = flowc(tmp_path, "log", "last", "--jsonl", "--db", "r.db").stdout.splitlines()
    lines = [json.loads(line) for line in jsonl]
    assert [(line["event"], line.get("number")) for line in lines] == [
        ("start", None),
        ("turn", 1),
        ("turn", 2),
        ("silent", None),
        ("turn", 3),
        ("end", None),
    ]
    assert lines[3] == {"event": "silent", **ROUND}


def test_log_of_the_stalled_run_ends_with_its_silent_round(tmp_path: Path) -> None:
    assert _stalled(tmp_path).returncode == 1
    out = flowc(tmp_path, "log", "last", "--db", "r.db").stdout
    assert out.index("reviewer  (silent round") < out.index("open: 2 turns so far")
    doc = json.loads(flowc(tmp_path, "log", "last", "--json", "--db", "r.db").stdout)
    assert doc["silent_rounds"] == [ROUND] and doc["turn_count"] == 2


def test_scenario_upto_writes_the_round_and_flowc_test_replays_it(tmp_path: Path) -> None:
    assert _resumed(tmp_path).returncode == 0
    got = flowc(tmp_path, "log", "last", "--scenario-upto", "3", "--name", "s", "--db", "r.db")
    assert got.returncode == 0, got.stderr
    assert got.stdout == (
        'scenario "s" {\n'
        '  user: "hi"\n'
        "  expect next drafter\n"
        '  drafter: "d"\n'
        "  expect next reviewer\n"
        "  reviewer calls approve\n"
        "  expect next reviewer\n"
        '  reviewer: "ok"\n'
        '  expect terminate "approved"\n'
        "  expect turns 3\n"
        "  expect context.done == true\n"
        "}\n"
    )
    (tmp_path / "b.flow").write_text(REVIEW_FLOW + got.stdout)
    tested = flowc(tmp_path, "test", "b.flow")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "ok    s" in tested.stdout


def test_a_silent_line_with_no_turn_of_its_speaker_after_it_still_fails(tmp_path: Path) -> None:
    scenario = (
        'scenario "s" {\n  user: "hi"\n  drafter: "d"\n  reviewer calls approve\n'
        '  expect terminate "approved"\n}\n'
    )
    (tmp_path / "b.flow").write_text(REVIEW_FLOW + scenario)
    tested = flowc(tmp_path, "test", "b.flow")
    assert tested.returncode == 1
    assert "reviewer's turn says nothing and routes nothing" in tested.stdout


def test_the_view_shows_the_silent_round(tmp_path: Path) -> None:
    assert _stalled(tmp_path).returncode == 1
    store = open_store(str(tmp_path / "r.db"), readonly=True)
    try:
        run_id = store.channel_ids()[-1]
        view = RunView.load(store, run_id)
        assert view is not None
        feed = TurnFeed(view)
        events = feed.poll(store)
        assert [e["n"] for e in events] == [1, 2]
        assert all(not e["context_set"] and "silent_before" not in e for e in events)
        assert feed.silent_after == [ROUND]  # the run stopped after it
    finally:
        store.close()
    assert (
        flowc(tmp_path, "resume", "last", "--script", "fixed.yaml", "--db", "r.db").returncode == 0
    )
    store = open_store(str(tmp_path / "r.db"), readonly=True)
    try:
        feed = TurnFeed(view)
        events = feed.poll(store)
        assert [e["n"] for e in events] == [1, 2, 3]
        assert events[2]["silent_before"] == [ROUND]
        assert events[2]["context_set"] == {} and "silent_before" not in events[1]
        assert feed.silent_after == []
    finally:
        store.close()
