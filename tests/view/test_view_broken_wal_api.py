"""A run whose SQLite WAL was edited by hand into one no hub could have written (a sender
who is no participant, a turn after the close, a turn deleted): `flowc view`'s runs list
shows it `damaged` in `flowc log`'s words, its stream sends the turns before the break
then a `damaged` event, its backlog ends with the same error, and no turn whose records
break is explained (why, scenario), as `flowc log RUN --why N` refuses it. An intact run
is shown as before; the run is checked once per number of records.

Also: a run closed by its turn cap outlines the cap's node on its last turn, as a finish
outlines its ending."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from flowc.cli import main
from flowc.view.server import ViewSettings, make_app
from tests.stored_runs import store_run
from tests.view.test_view_http import events

Rows = list[tuple[int, Any]]


def _ghost(db: Path, rows: Rows) -> None:
    """The third record (a turn) sent by someone who is no participant."""
    seq, env = rows[3]
    _rewrite(db, seq, {**env, "sender_id": "ghost"})


def _after_close(db: Path, rows: Rows) -> None:
    """A copy of a turn written after the close."""
    seq, env = rows[3]
    copy = {**env, "envelope_id": env["envelope_id"] + "x"}
    con = sqlite3.connect(db)
    con.execute(
        "INSERT INTO wal (seq, channel_id, envelope_id, event_type, envelope) "
        "SELECT ?, channel_id, ?, event_type, ? FROM wal WHERE seq = ?",
        (rows[-1][0] + 100, copy["envelope_id"], json.dumps(copy), seq),
    )
    con.commit()
    con.close()


def _deleted_turn(db: Path, rows: Rows) -> None:
    """A turn's record deleted."""
    con = sqlite3.connect(db)
    con.execute("DELETE FROM wal WHERE seq = ?", (rows[2][0],))
    con.commit()
    con.close()


def _rewrite(db: Path, seq: int, env: Any) -> None:
    con = sqlite3.connect(db)
    con.execute("UPDATE wal SET envelope = ? WHERE seq = ?", (json.dumps(env), seq))
    con.commit()
    con.close()


BREAKS: dict[str, Callable[[Path, Rows], None]] = {
    "ghost": _ghost,
    "after_close": _after_close,
    "deleted_turn": _deleted_turn,
}


def _log(capsys: Any, *args: str) -> tuple[int, str]:
    """``flowc log ARGS``: its exit status and its error, as the view words it (without
    the command's and the database's names)."""
    capsys.readouterr()
    code = main(["log", *args])
    err = capsys.readouterr().err
    prefix = "flowc log: error: runs.db: "
    said = err.splitlines()[0].removeprefix(prefix) if err else ""
    return code, said


@pytest.fixture
def broken(
    request: Any, tmp_path: Path, monkeypatch: Any, capsys: Any
) -> tuple[Path, str, TestClient]:
    db, cid, rows = store_run(tmp_path)
    BREAKS[request.param](db, rows)
    monkeypatch.chdir(tmp_path)
    client = _client("runs.db")
    return db, cid, client


T = "?token=" + "t" * 32


def _client(db: str) -> TestClient:
    app = make_app(ViewSettings(db, "t" * 32, poll=0.01))
    return TestClient(app, base_url="http://127.0.0.1:8123")  # type: ignore[arg-type]


@pytest.mark.parametrize("broken", list(BREAKS), indirect=True)
def test_a_broken_wal_is_damaged_in_the_list_stream_and_why(
    broken: tuple[Path, str, TestClient], capsys: Any
) -> None:
    _, cid, client = broken
    code, said = _log(capsys, cid, "--db", "runs.db")
    assert code == 1 and said.startswith(f"run {cid}: the WAL is broken at envelope ")
    # the runs list: damaged, in flowc log's words
    listed = {r["run_id"]: r for r in client.get("/api/runs" + T).json()}
    assert listed[cid] == {"run_id": cid, "status": "damaged", "error": said}
    # the stream: the turns before the break, then `damaged`, and no end
    got = events(client.get(f"/api/run/{cid}/events" + T).text)
    kinds = [kind for _, kind, _ in got]
    assert kinds[-1] == "damaged" and got[-1][2] == {"error": said}
    assert "end" not in kinds
    shown = [int(i) for i, kind, _ in got if kind == "turn" and i is not None]
    assert shown == list(range(1, len(shown) + 1))
    # the backlog ends with the same error
    lines = client.get(f"/api/run/{cid}/turns" + T).text.splitlines()
    assert json.loads(lines[-1]) == {"error": said}
    # why and scenario of each turn: refused where `flowc log RUN --why N` refuses them
    for n in range(1, 6):
        for option, path in (("--why", "why"), ("--scenario-upto", "scenario")):
            code, log_said = _log(capsys, cid, option, str(n), "--db", "runs.db")
            answer = client.get(f"/api/run/{cid}/{path}/{n}" + T)
            if code == 0:
                assert answer.status_code == 200, (option, n, answer.text)
            elif code == 1:
                assert answer.status_code == 422, (option, n, answer.text)
                assert answer.json() == {"error": log_said}
            else:  # (no such turn: a usage error)
                assert answer.status_code == 404, (option, n, answer.text)
        if code == 0:
            assert n in shown  # a turn explained is one the stream shows


@pytest.mark.parametrize("broken", ["ghost"], indirect=True)
def test_a_non_participant_s_turn_is_not_explained(
    broken: tuple[Path, str, TestClient], capsys: Any
) -> None:
    _, cid, client = broken
    answer = client.get(f"/api/run/{cid}/why/3" + T)
    assert answer.status_code == 422
    assert "'ghost' is not a participant" in answer.json()["error"]
    assert client.get(f"/api/run/{cid}/why/2" + T).status_code == 200


def test_an_intact_run_is_checked_once_per_number_of_records(
    tmp_path: Path, monkeypatch: Any
) -> None:
    import flowc.view.broken as broken

    db, cid, rows = store_run(tmp_path)
    checks: list[str] = []
    real = broken._check

    def counted(store: Any, run_id: str) -> Any:
        checks.append(run_id)
        return real(store, run_id)

    monkeypatch.setattr(broken, "_check", counted)
    client = _client(str(db))
    for _ in range(3):
        assert client.get("/api/runs" + T).json()[0]["status"] == "closed"
    got = events(client.get(f"/api/run/{cid}/events" + T).text)
    assert got[-1][1] == "end"
    assert client.get(f"/api/run/{cid}/why/3" + T).status_code == 200
    assert checks == [cid]  # once, for all of them
    _after_close(db, rows)  # a record added: checked again, and now broken
    listed = client.get("/api/runs" + T).json()[0]
    assert listed["status"] == "damaged" and "comes after the run closed" in listed["error"]
    assert checks == [cid, cid]


CAPPED = """speaker a
speaker b
start a
max_turns 3
when from a then b
when from b then a
"""


def test_a_run_closed_by_its_turn_cap_outlines_the_cap(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.flow").write_text(CAPPED)
    (tmp_path / "s.json").write_text(
        json.dumps({"kickoff": "go", "script": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    )
    assert main(["run", "c.flow", "--script", "s.json", "--db", "runs.db"]) in (0, 3)
    client = _client("runs.db")
    [run] = client.get("/api/runs" + T).json()
    assert run["close_reason"] == "max_turns"
    cid = run["run_id"]
    svg = client.get(f"/api/run/{cid}/diagram.svg" + T).text
    turns = [
        d for _, kind, d in events(client.get(f"/api/run/{cid}/events" + T).text) if kind == "turn"
    ]
    last = turns[-1]
    assert last["closes"] == "max_turns"
    assert last["node"] is not None and f'id="{last["node"]}"' in svg
    speakers = {s["node"] for s in client.get(f"/api/run/{cid}" + T).json()["speakers"]}
    assert last["node"] not in speakers  # the cap, not the speaker who would be next
    assert all(t["node"] in speakers for t in turns[:-1])
