"""`flowc fork RUN N`: a new run in the same database whose first turns are the stored
run's turns 1 to N, linked to it, continued by another script; the stored run is only read.

Checked on real SQLite files, and cross-checked against a fresh `flowc run` of the same
flow whose script is the parent's first N turns followed by the fork's script."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main
from tests.stored_runs import cut_short, run_ids

FLOW = """flow approval "An expense claim"
speaker employee: human
speaker assistant { tool submit }
speaker manager: human { sets decision }
speaker finance { tool pay finishes "paid" }
start employee
max_turns 10
when from finance                  then terminate "paid"
when context.decision == "approve" then finance
when context.decision == "reject"  then terminate "rejected"
when tool submit                   then manager
when from employee                 then assistant
when from assistant                then employee
when from manager                  then assistant
property paid_after_approval: tool pay only after context.decision == "approve"
"""

#: the parent run, turn by turn: (speaker, scripted turn); the first is the kickoff
PARENT: list[tuple[str, Any]] = [
    ("employee", "Taxi to the client, 42 EUR"),
    ("assistant", "Let me see"),
    ("employee", "Yes, submit it"),
    ("assistant", {"tool": "submit", "say": "Submitted"}),
    ("manager", {"say": "Approved", "set": {"decision": "approve"}}),
    ("finance", {"tool": "pay", "say": "Paid"}),
]

#: what each fork does after turn N (turn 0: from the kickoff on)
AFTER: dict[int, list[tuple[str, Any]]] = {
    0: [
        ("employee", "Team dinner, 900 EUR"),
        ("assistant", {"tool": "submit", "say": "Submitted at once"}),
        ("manager", {"say": "Over the limit", "set": {"decision": "reject"}}),
    ],
    1: [
        ("assistant", {"tool": "submit", "say": "Submitted at once"}),
        ("manager", {"say": "Over the limit", "set": {"decision": "reject"}}),
    ],
    4: [("manager", {"say": "No", "set": {"decision": "reject"}})],
    5: [("finance", {"tool": "pay", "say": "Paid by transfer"})],
    6: [],  # the parent closed on its last turn: so does the fork
}


def script_of(turns: list[tuple[str, Any]], *, kickoff: bool) -> dict[str, Any]:
    """The script document that plays ``turns`` in order (the first as the kickoff)."""
    doc: dict[str, Any] = {"script": {}}
    if kickoff and turns:
        doc["kickoff"] = turns[0][1]
        turns = turns[1:]
    for speaker, turn in turns:
        doc["script"].setdefault(speaker, []).append(turn)
    return doc


def flowc(*args: str) -> int:
    return main(list(args))


def rows(db: Path, run: str) -> list[tuple[Any, ...]]:
    """Every stored row of ``run``: its WAL, its number and its lease."""
    con = sqlite3.connect(db)
    try:
        return [
            *con.execute(
                "SELECT seq, channel_id, envelope_id, event_type, envelope, follows FROM wal "
                "WHERE channel_id = ? ORDER BY seq",
                (run,),
            ),
            *con.execute("SELECT * FROM run WHERE channel_id = ?", (run,)),
            *con.execute("SELECT * FROM lease WHERE channel_id = ?", (run,)),
        ]
    finally:
        con.close()


def logged(db: Path, run: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert flowc("log", run, "--db", str(db), "--json") == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def same_turn(turn: dict[str, Any]) -> tuple[Any, ...]:
    return (turn["speaker"], turn["text"], turn["context"], turn["decided_by"])


@pytest.fixture
def parent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    """A database holding the parent run (closed "paid" after 6 turns); its flow file
    deleted afterwards: a fork needs only what the run stored."""
    flow = tmp_path / "approval.flow"
    flow.write_text(FLOW)
    script = tmp_path / "parent.json"
    script.write_text(json.dumps(script_of(PARENT, kickoff=True)))
    db = tmp_path / "runs.db"
    assert flowc("run", str(flow), "--script", str(script), "--db", str(db)) == 0
    flow.unlink()
    capsys.readouterr()
    return db, run_ids(db)[0]


def fork(db: Path, run: str, n: int, after: list[tuple[str, Any]] | None, *more: str) -> int:
    args = ["fork", run, str(n), "--db", str(db), *more]
    if after is not None:
        script = db.parent / f"after-{n}-{len(run_ids(db))}.json"
        script.write_text(json.dumps(script_of(after, kickoff=n == 0)))
        args += ["--script", str(script)]
    return main(args)


@pytest.mark.parametrize("n", sorted(AFTER))
def test_a_fork_keeps_the_first_n_turns_then_plays_its_script(
    parent: tuple[Path, str], n: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, run = parent
    before = rows(db, run)
    shown = logged(db, run, capsys)
    status = 0  # each continuation closes the run
    assert fork(db, run, n, AFTER[n] or None) == status
    err = capsys.readouterr().err
    new = run_ids(db)[-1]
    assert new != run
    assert f"flowc fork: run {new}: forked from {run} at turn {n}" in err
    assert rows(db, run) == before  # the parent: not a byte changed, its lease untouched

    forked = logged(db, new, capsys)
    assert forked["forked_from"] == {"run_id": run, "turn": n}
    assert [same_turn(t) for t in forked["turns"][:n]] == [same_turn(t) for t in shown["turns"][:n]]
    assert [t["text"] for t in forked["turns"][n:]] == [
        t if isinstance(t, str) else t["say"] for _, t in AFTER[n]
    ]

    # cross-check: a fresh run of the same flow, scripted with the parent's first N
    # turns followed by the fork's, takes the same turns and ends the same way
    fresh_flow = tmp_path / "fresh" / "approval.flow"
    fresh_flow.parent.mkdir()
    fresh_flow.write_text(FLOW)
    fresh_script = tmp_path / "fresh" / "script.json"
    fresh_script.write_text(json.dumps(script_of(PARENT[:n] + AFTER[n], kickoff=True)))
    fresh_db = tmp_path / "fresh" / "runs.db"
    assert flowc("run", str(fresh_flow), "--script", str(fresh_script), "--db", str(fresh_db)) == 0
    fresh = logged(fresh_db, run_ids(fresh_db)[0], capsys)
    assert forked["turns"] == fresh["turns"]
    for key in ("close_reason", "context_vars", "turn_count", "next_speaker"):
        assert forked[key] == fresh[key], key
    assert "forked_from" not in fresh

    capsys.readouterr()
    assert flowc("log", new, "--db", str(db)) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[1] == f"forked from {run} at turn {n}"
    assert flowc("replay", new, "--db", str(db)) == 0  # the copy folds as its own run


def test_a_fork_of_a_fork_and_a_fork_resumed(
    parent: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    db, run = parent
    assert fork(db, run, 4, AFTER[4]) == 0  # rejected
    first = run_ids(db)[-1]
    assert logged(db, first, capsys)["close_reason"] == "rejected"
    # forked again at its turn 4, approved this time: the parent's run again
    assert fork(db, first, 4, PARENT[4:], "--run-id", "second") == 0
    again = logged(db, "second", capsys)
    assert again["forked_from"] == {"run_id": first, "turn": 4}
    assert [same_turn(t) for t in again["turns"]] == [
        same_turn(t) for t in logged(db, run, capsys)["turns"]
    ]
    # a fork that stalls is resumed with a longer script of the turns after the fork:
    # the copied turns are not the script's, so none of the script is skipped for them
    assert fork(db, "second", 1, [("assistant", "Which client?")]) == 1
    third = run_ids(db)[-1]
    assert "stalled: employee has no turn to take after 2 turns" in capsys.readouterr().out
    longer = db.parent / "longer.json"
    longer.write_text(
        json.dumps(script_of([("assistant", "Which client?"), *PARENT[2:]], kickoff=False))
    )
    assert flowc("resume", third, "--script", str(longer), "--db", str(db)) == 0
    resumed = logged(db, third, capsys)
    assert [t["text"] for t in resumed["turns"]] == [
        "Taxi to the client, 42 EUR",
        "Which client?",
        "Yes, submit it",
        "Submitted",
        "Approved",
        "Paid",
    ]
    assert resumed["forked_from"] == {"run_id": "second", "turn": 1}
    capsys.readouterr()
    assert flowc("log", "--db", str(db), "--json") == 0
    listed = {r["run_id"]: r.get("forked_from") for r in json.loads(capsys.readouterr().out)}
    assert listed == {
        run: None,
        first: {"run_id": run, "turn": 4},
        "second": {"run_id": first, "turn": 4},
        third: {"run_id": "second", "turn": 1},
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "1"], "flowc fork: error: no run 'nope' in {db} (flowc log lists them)"),
        (["{run}", "7"], "flowc fork: error: run {run} has 6 turns: no turn 7"),
        (
            ["{run}", "-1"],
            "flowc fork: error: N is the run's last turn to keep (0 or more), not '-1'",
        ),
        (
            ["{run}", "two"],
            "flowc fork: error: N is the run's last turn to keep (0 or more), not 'two'",
        ),
        (
            ["{run}", "1", "--run-id", "{run}"],
            "flowc fork: error: --run-id: {db} already has a run '{run}'",
        ),
        (
            ["{run}", "1", "--run-id", "a b"],
            "flowc fork: error: --run-id takes a run id (1 to 200 printable characters, "
            "no spaces), not 'a b'",
        ),
    ],
)
def test_what_cannot_be_forked_is_one_line_and_exit_2(
    parent: tuple[Path, str], args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db, run = parent
    before = rows(db, run)
    argv = [a.format(run=run, db=db) for a in args]
    assert flowc("fork", *argv, "--db", str(db)) == 2
    out, err = capsys.readouterr()
    assert err == message.format(run=run, db=db) + "\n"
    assert out == ""
    assert run_ids(db) == [run] and rows(db, run) == before  # nothing written


def test_a_kickoff_after_turn_0_is_refused_before_anything_is_written(
    parent: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    db, run = parent
    script = db.parent / "kickoff.json"
    script.write_text(json.dumps(script_of(PARENT, kickoff=True)))
    assert flowc("fork", run, "2", "--script", str(script), "--db", str(db)) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{script}: error: the fork goes on from turn 2, so it has no kickoff")
    # a script naming no speaker of the run: refused the same way
    script.write_text(json.dumps({"script": {"nobody": ["hi"]}}))
    assert flowc("fork", run, "2", "--script", str(script), "--db", str(db)) == 1
    assert f"{script}: error:" in capsys.readouterr().err
    assert run_ids(db) == [run]


def test_the_fork_of_a_submitted_run_is_not_left_to_the_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run submitted for the workers holds its script with it, which marks it as theirs
    to take. Its fork does not: the process that forks a run drives it, and a worker woken
    by the copy's lease being given back must not take the fork first (and play the
    parent's script after the copied turns). The parent's own label is left as it was."""
    from flowc.runtime.worker import SCRIPT_LABEL

    flow = tmp_path / "approval.flow"
    flow.write_text(FLOW)
    script = tmp_path / "parent.json"
    script.write_text(json.dumps(script_of(PARENT, kickoff=True)))
    db = tmp_path / "shared.db"
    assert flowc("submit", str(flow), "--script", str(script), "--db", str(db)) == 0
    run = run_ids(db)[0]
    assert flowc("resume", run, "--script", str(script), "--db", str(db)) == 0
    assert fork(db, run, 4, AFTER[4]) == 0
    assert fork(db, run, 6, None) == 0  # no script: the parent closed on turn 6
    plain, empty = run_ids(db)[1:]
    labels = {cid: _opening_md(db, cid)["labels"] for cid in (run, plain, empty)}
    assert labels[run][SCRIPT_LABEL] == script_of(PARENT, kickoff=True)
    assert SCRIPT_LABEL not in labels[plain] and SCRIPT_LABEL not in labels[empty]


def _opening_md(db: Path, run: str) -> dict[str, Any]:
    con = sqlite3.connect(db)
    try:
        row = con.execute(
            "SELECT envelope FROM wal WHERE channel_id = ? ORDER BY seq LIMIT 1", (run,)
        ).fetchone()
    finally:
        con.close()
    metadata: dict[str, Any] = json.loads(row[0])["event_data"]["metadata"]
    return metadata


def test_a_fork_whose_copy_was_cut_short_is_not_continued(
    parent: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The turns are copied one append at a time: a fork killed while it copied holds
    fewer turns than its opening names. Resumed, it would go on from another state than
    the one forked: it is refused, and nothing is written."""
    db, run = parent
    assert fork(db, run, 4, AFTER[4]) == 0
    new = run_ids(db)[-1]
    cut_short(db, new, 2)  # as if killed after turn 2 was copied: turns 3 on, and all after, gone
    capsys.readouterr()
    cut = rows(db, new)
    script = db.parent / "rest.json"
    script.write_text(json.dumps(script_of(AFTER[4], kickoff=False)))
    assert flowc("resume", new, "--script", str(script), "--db", str(db)) == 1
    err = capsys.readouterr().err
    assert (
        f"this run is a fork of run {run} at turn 4, but only 2 of the turns were copied "
        "before the fork stopped: fork the run again"
    ) in err
    assert rows(db, new)[:-1] == cut[:-1]  # nothing written (its lease taken and given back)
    # flowc log says so: in the list, on the run, in JSON; a whole fork says nothing of it
    assert flowc("log", "--db", str(db)) == 0
    listed = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(new)]
    assert listed and listed[0].endswith("open (a fork cut short: 2 turns copied of 4)")
    assert flowc("log", new, "--db", str(db)) == 0
    assert (
        f"forked from {run} at turn 4\ncut short: 2 turns copied of the 4 forked (the fork "
        "stopped before its copy ended, unless it is copying now): not the state forked; "
        "`flowc resume` refuses it, fork the run again\n"
    ) in capsys.readouterr().out
    for form in ("--json", "--jsonl"):
        assert flowc("log", new, "--db", str(db), form) == 0
        assert '"fork_copied_turns":2' in capsys.readouterr().out.replace(" ", "")
    assert fork(db, run, 4, AFTER[4]) == 0
    whole = run_ids(db)[-1]
    capsys.readouterr()
    assert flowc("log", "--db", str(db)) == 0
    listed = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(whole)]
    assert listed and "cut short" not in listed[0]
    assert flowc("log", whole, "--db", str(db), "--json") == 0
    assert "fork_copied_turns" not in capsys.readouterr().out


def test_a_long_copy_keeps_its_lease(
    parent: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy that takes longer than a lease (a large run, a distant database) renews the
    lease as it goes, as a hub does, instead of having its appends refused midway. Here
    the lease lasts 0.3 s and every append of a real SQLite store takes 0.06 s."""
    import time

    from flowc.runtime import fork as forking
    from flowc.runtime.fork import fork_run
    from flowc.runtime.wal import SqliteStore

    db, run = parent
    monkeypatch.setattr(forking, "LEASE_SECONDS", 0.3)
    store = SqliteStore(db)
    real = store.append

    def slow(*args: Any, **kwargs: Any) -> None:
        time.sleep(0.06)
        real(*args, **kwargs)

    monkeypatch.setattr(store, "append", slow)
    try:
        new = fork_run(store, run, 6)  # 6 turns and their records: over a second
    finally:
        store.close()
    copied = [r[3] for r in rows(db, new) if len(r) == 6]
    # every record up to turn 6, its last; the parent's close is not the fork's
    assert copied == [r[3] for r in rows(db, run) if len(r) == 6 and r[3] != "ag2.channel.closed"]


def test_a_parent_two_writers_wrote_is_not_forked(
    parent: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A record of the turns to copy that was written after another record than the one
    before it (a second writer's, whose view of the run was older) breaks the run's WAL,
    though its content re-folds: `flowc fork` refuses the run, as `resume` and `replay`
    do, naming the record and the link, and writes nothing (a copy would drop the link
    and pass off the broken run as whole)."""
    db, run = parent
    con = sqlite3.connect(db)
    try:  # the third record re-linked after the first: its content is left as it was
        ids = [
            r[0]
            for r in con.execute(
                "SELECT envelope_id FROM wal WHERE channel_id = ? ORDER BY seq", (run,)
            )
        ]
        con.execute("UPDATE wal SET follows = ? WHERE envelope_id = ?", (ids[0], ids[2]))
        con.commit()
    finally:
        con.close()
    before = rows(db, run)
    assert fork(db, run, 4, AFTER[4]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"flowc fork: error: {db}: run {run}: the WAL is broken at envelope 3 ({ids[2]}): "
        f"it was written after {ids[0]}, not after the envelope before it ({ids[1]}); "
        "two writers wrote this run\n"
    )
    assert run_ids(db) == [run] and rows(db, run) == before  # nothing written
