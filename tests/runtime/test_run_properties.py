"""`flowc run` / `flowc resume` watch the flow's properties on the live run (issue 27).

A turn that breaks a property carries it in the WAL: the transcript shows it under the
turn, ``--json`` / ``--jsonl`` / ``flowc log`` in ``property_violations``, and the
command exits 3. ``--on-violation warn`` (the default) lets the run go on;
``stop`` closes it with ``property_violated:NAME``. A resumed run's monitors are rebuilt
from the turns in its WAL, so a violation that spans the resume is caught, and the
properties come from the WAL, not from the flow file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main
from flowc.runtime.envelope import EV_CHANNEL_CLOSED
from flowc.runtime.stores import open_store
from flowc.runtime.transcript import transcript

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
property approved_in_time: eventually tool approve within 4 turns
property one_draft: from drafter at most 1 time
property drafter_last: after from reviewer, from drafter
property no_user_twice: never from user and previous from user
"""

SHORT = {
    "kickoff": "Write on HTTPS",
    "script": {"drafter": ["Draft 1"], "reviewer": ["Tighten it"]},
}
LONG = {
    "kickoff": "Write on HTTPS",
    "script": {
        "drafter": ["Draft 1", "Draft 2"],
        "reviewer": ["Tighten it", {"tool": "approve", "say": "Approved"}],
    },
}

WHY_4 = "no turn among the first 4 turns, up to turn 4, has `tool approve`"
WHY_DRAFT = "turn 4 is the 2nd turn with `from drafter`"
WHY_5 = (
    "the run ends after turn 5 while a turn with `from reviewer` still waits for a turn"
    " with `from drafter`"
)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "review.flow").write_text(FLOW)
    (tmp_path / "short.json").write_text(json.dumps(SHORT))
    (tmp_path / "long.json").write_text(json.dumps(LONG))
    return tmp_path


def _stalled_run(files: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Turns 1-3, stalled on the drafter: nothing broken yet (the pending `after` is not
    judged: the run has not ended)."""
    db = str(files / "runs.db")
    code = main(["run", str(files / "review.flow"), "--script", str(files / "short.json"),
                 "--db", db, "--json"])  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code == 1, doc
    assert doc["stalled_on"] == "drafter" and "property_violations" not in doc
    return db


def test_warn_is_the_default_and_a_violation_spanning_the_resume_is_caught(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _stalled_run(files, capsys)
    # the flow file is gone: the run's properties come from its WAL
    (files / "review.flow").unlink()
    code = main(["resume", "last", "--script", str(files / "long.json"), "--db", db])
    out = capsys.readouterr().out
    assert code == 3, out
    lines = out.splitlines()
    at4 = lines.index("  4  drafter   Draft 2")
    assert lines[at4 + 1 : at4 + 3] == [
        " " * 14 + "violated: property approved_in_time (`eventually tool approve within 4"
        f" turns`): {WHY_4}",
        " " * 14 + f"violated: property one_draft (`from drafter at most 1 time`): {WHY_DRAFT}",
    ]
    at5 = lines.index("  5  reviewer  Approved")
    assert lines[at5 + 3] == (
        " " * 14 + "violated: property drafter_last (`after from reviewer, from drafter`): " + WHY_5
    )
    assert (
        "3 properties violated: approved_in_time (turn 4), one_draft (turn 4), "
        'drafter_last (turn 5)\nclosed: "approved" after 5 turns'
    ) in out
    # flowc log: the same lines, and the same list in --json, from the WAL
    assert main(["log", "last", "--db", db]) == 0
    logged = capsys.readouterr().out
    assert logged.count("violated: property") == 3 and WHY_5 in logged
    assert main(["log", "last", "--db", db, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    per_turn = [(t["number"], [v["property"] for v in t.get("property_violations", [])])
                for t in doc["turns"]]  # fmt: skip
    assert per_turn == [
        (1, []), (2, []), (3, []), (4, ["approved_in_time", "one_draft"]), (5, ["drafter_last"])
    ]  # fmt: skip
    assert [(v["property"], v["turn"], v["on_violation"]) for v in doc["property_violations"]] == [
        ("approved_in_time", 4, "warn"),
        ("one_draft", 4, "warn"),
        ("drafter_last", 5, "warn"),
    ]
    assert doc["close_reason"] == "approved"
    assert main(["replay", "last", "--db", db]) == 0


def test_stop_closes_the_run_naming_the_property_in_the_wal(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _stalled_run(files, capsys)
    code = main(["resume", "last", "--script", str(files / "long.json"), "--db", db,
                 "--on-violation", "stop", "--jsonl"])  # fmt: skip
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert code == 3
    turns = [x for x in lines if x["event"] == "turn"]
    assert [t["number"] for t in turns] == [1, 2, 3, 4]  # no fifth turn: stopped after 4
    assert [v["property"] for v in turns[-1]["property_violations"]] == [
        "approved_in_time",
        "one_draft",
    ]
    end = lines[-1]
    assert end["event"] == "end" and end["close_reason"] == "property_violated:approved_in_time"
    assert [v["on_violation"] for v in end["property_violations"]] == ["stop", "stop"]
    # committed to the WAL like any close; the stopped run's pending `after` is not judged
    store = open_store(db, readonly=True)
    try:
        (cid,) = store.channel_ids()
        envs = list(store.read(cid))
    finally:
        store.close()
    assert envs[-1].event_type == EV_CHANNEL_CLOSED
    assert envs[-1].event_data["reason"] == "property_violated:approved_in_time"
    records, close, _ = transcript(envs)
    assert close == "property_violated:approved_in_time" and len(records) == 4
    assert main(["log", "--db", db]) == 0
    assert (
        '4 turns  "property_violated:approved_in_time"  violated: approved_in_time, one_draft\n'
    ) in capsys.readouterr().out
    assert main(["log", "--db", db, "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["property_violations"] == ["approved_in_time", "one_draft"]
    assert main(["replay", "last", "--db", db]) == 0
    capsys.readouterr()
    # closed for good: resuming it changes nothing, and still says what it broke
    assert main(["resume", "last", "--script", str(files / "long.json"), "--db", db]) == 3
    assert 'closed: "property_violated:approved_in_time" after 4 turns' in (capsys.readouterr().out)


def test_stop_on_a_fresh_run(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(files / "runs.db")
    code = main(["run", str(files / "review.flow"), "--script", str(files / "long.json"),
                 "--db", db, "--on-violation", "stop"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 3
    assert out.rstrip().endswith(
        "2 properties violated: approved_in_time (turn 4), one_draft (turn 4)\n"
        'closed: "property_violated:approved_in_time" after 4 turns\n'
        'context: {"done": false}'
    )


def test_a_run_that_breaks_nothing_exits_0_without_the_field(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = files / "ok.flow"
    flow.write_text(FLOW.split("property approved_in_time")[0] + (
        "property no_user_twice: never from user and previous from user\n"
        'property ends_approved: eventually ends "approved"\n'
    ))  # fmt: skip
    code = main(["run", str(flow), "--script", str(files / "long.json"), "--db",
                 str(files / "runs.db"), "--json", "--on-violation", "stop"])  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["close_reason"] == "approved"
    assert "property_violations" not in doc
    assert all("property_violations" not in t for t in doc["turns"])


def test_a_property_judged_at_the_end_is_judged_when_the_run_closes(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = files / "end.flow"
    flow.write_text(FLOW.split("property approved_in_time")[0] + (
        'property ends_rejected: eventually ends "max_turns"\n'
    ))  # fmt: skip
    code = main(["run", str(flow), "--script", str(files / "long.json"), "--db",
                 str(files / "runs.db"), "--json"])  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code == 3
    (v,) = doc["property_violations"]
    assert (v["property"], v["turn"]) == ("ends_rejected", 5)
    assert v["why"] == 'the run ends after turn 5, and no turn has `ends "max_turns"`'
    assert doc["turns"][-1]["property_violations"] == [v]


def test_a_bad_on_violation_is_one_line(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", str(files / "review.flow"), "--script", str(files / "long.json"),
              "--on-violation", "halt"])  # fmt: skip
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --on-violation: invalid choice: 'halt' (choose from" in err
    assert "Traceback" not in err


def test_a_worker_watches_the_submitted_run(files: Path) -> None:
    """`flowc submit` stores the properties with the run; `flowc worker --on-violation
    stop` closes it on the violation and says which property, on which turn."""
    _worker_stops_on_violation(files, str(files / "runs.db"))


def test_a_postgresql_worker_stops_on_a_violation_in_the_turns_commit(
    files: Path, pg_dsn: str
) -> None:
    """The same on PostgreSQL, where the worker commits its runs' turns in groups: the
    close that ``--on-violation stop`` writes joins the breaking turn's commit."""
    _worker_stops_on_violation(files, pg_dsn)


def _worker_stops_on_violation(files: Path, db: str) -> None:
    import time

    from tests.runtime.worker_harness import events, flowc, start_worker, stop_worker

    proc = flowc("submit", str(files / "review.flow"), "--script", str(files / "long.json"),
                 "--db", db)  # fmt: skip
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    cid = out.decode().strip()
    log = files / "w.log"
    worker = start_worker(db, log, "--on-violation", "stop", lease_seconds=1.0)
    try:
        deadline = time.monotonic() + 30
        while not events(log, "closed"):
            assert time.monotonic() < deadline and worker.poll() is None, log.read_text()
            time.sleep(0.05)
    finally:
        stop_worker(worker)
    text = log.read_text()
    assert (
        f"violated {cid} property approved_in_time on turn 4; property one_draft on turn 4\n"
        f'closed {cid} "property_violated:approved_in_time" after 4 turns\n'
    ) in text
    store = open_store(db, readonly=True)
    try:
        envs = list(store.read(cid))
    finally:
        store.close()
    assert envs[-1].event_data["reason"] == "property_violated:approved_in_time"


def _rewrite_opening(db: str, rewrite: Callable[[dict[str, Any]], str]) -> None:
    """Replace the stored run's opening record by ``rewrite`` of its JSON (a damaged row)."""
    import sqlite3

    con = sqlite3.connect(db)
    seq, raw = con.execute(
        "SELECT seq, envelope FROM wal WHERE event_type = 'ag2.channel.opened'"
    ).fetchone()
    con.execute("UPDATE wal SET envelope = ? WHERE seq = ?", (rewrite(json.loads(raw)), seq))
    con.commit()
    con.close()


def test_damaged_stored_properties_are_one_line(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _stalled_run(files, capsys)

    def sometimes(env: dict[str, Any]) -> str:
        env["event_data"]["metadata"]["labels"]["properties"][1]["pattern"]["kind"] = "sometimes"
        return json.dumps(env)

    _rewrite_opening(db, sometimes)
    code = main(["resume", "last", "--script", str(files / "long.json"), "--db", db])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    (line,) = err.splitlines()
    assert (
        "is damaged: record 1 (ag2.channel.opened), event_data.metadata.labels.properties: "
        "expected properties flowc wrote (not a property (KeyError: 'sometimes'))"
    ) in line


def test_a_stored_property_count_past_any_number_is_a_damaged_run(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`at most 1e999 times` in the stored opening: int() raised OverflowError, which
    no reader took for a damaged run (an internal error); it is one line saying the
    stored properties are not valid, for `log RUN`, `resume` and the list alike."""
    db = _stalled_run(files, capsys)

    def huge(env: dict[str, Any]) -> str:
        pattern = env["event_data"]["metadata"]["labels"]["properties"][1]["pattern"]
        assert pattern["times"] == 1
        pattern["times"] = "HUGE"
        return json.dumps(env).replace('"HUGE"', "1e999")

    _rewrite_opening(db, huge)
    for argv in (
        ["log", "last"],
        ["resume", "last", "--script", str(files / "long.json")],
        ["log"],
    ):
        code = main([*argv, "--db", db])
        err = capsys.readouterr().err
        assert code == 1 and "Traceback" not in err and "internal error" not in err, err
        (line,) = err.splitlines()
        assert (
            "is damaged: record 1 (ag2.channel.opened), event_data.metadata.labels.properties: "
            "expected properties flowc wrote (not a property (OverflowError: "
        ) in line, line


def test_no_page_says_run_does_not_watch_properties() -> None:
    # the pages `flowc explain` shows and the docs say what the tests above show
    root = Path(__file__).resolve().parents[2]
    pages = [*root.glob("docs/**/*.md"), *root.glob("flowc/docs/*.md"), root / "README.md"]
    stale = re.compile(r"`flowc (run|resume|worker)` (does not|doesn't|never) watch", re.I)
    said = [
        f"{page.relative_to(root)}:{n}"
        for page in pages
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if stale.search(line)
    ]
    assert not said, said
