"""`flowc view`'s one request that writes: ``POST /api/run/ID/fork/N`` starts a new run
from turn N of a run (as ``flowc fork``), in the same token-protected app; a request from
another site, without our Origin, or that is not JSON is refused, and nothing is written
but the new run."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from flowc.view.server import FORK_BODY_BYTES, ViewSettings, make_app
from tests.view.conftest import ROOT, SCRIPT, TOKEN, flowc

ORIGIN = "http://127.0.0.1:8123"
#: what the fork at turn 3 says instead of "Yes, please."
AFTER = {
    "script": {
        "customer": ["No, keep both: one was a gift card."],
        "billing": [{"tool": "close_ticket", "say": "Understood, nothing changed."}],
    }
}


@pytest.fixture(scope="module")
def parent_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("view-fork")
    (folder / "s.yaml").write_text(SCRIPT, encoding="utf-8")
    db = folder / "runs.db"
    flow = ROOT / "examples" / "context_routing.flow"
    done = flowc("run", str(flow), "--script", "s.yaml", "--db", str(db), cwd=folder)
    assert done.returncode == 0, done.stderr
    return db


def rows(db: Path, run: str | None = None) -> list[tuple[Any, ...]]:
    """Every row of the database (of ``run`` only, when given): WAL, runs, leases."""
    where, given = ("WHERE channel_id = ?", (run,)) if run is not None else ("", ())
    con = sqlite3.connect(db)
    try:
        return [
            *con.execute(f"SELECT * FROM wal {where} ORDER BY seq", given),
            *con.execute(f"SELECT * FROM run {where} ORDER BY number", given),
            *con.execute(f"SELECT * FROM lease {where} ORDER BY channel_id", given),
        ]
    finally:
        con.close()


def test_a_new_run_from_a_turn_through_http(parent_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    shutil.copy(parent_db, db)
    client = TestClient(make_app(ViewSettings(str(db), TOKEN, poll=0.01)), base_url=ORIGIN)  # type: ignore[arg-type]
    runs = client.get(f"/api/runs?token={TOKEN}").json()  # sets the cookie
    assert len(runs) == 1
    parent = runs[0]["run_id"]
    url = f"/api/run/{parent}/fork/3"
    body = json.dumps(AFTER)
    json_type = {"Content-Type": "application/json"}
    before = rows(db)
    parent_rows = rows(db, parent)

    # refused, nothing written: another site's page, no Origin, a form's content type,
    # no token, and a POST anywhere else
    for headers, status in (
        ({**json_type, "Origin": "http://evil.example"}, 403),
        ({**json_type, "Origin": "null"}, 403),
        ({**json_type, "Origin": ORIGIN, "Sec-Fetch-Site": "cross-site"}, 403),
        ({**json_type, "Origin": ORIGIN, "Sec-Fetch-Site": "same-site"}, 403),
        ({**json_type, "Origin": ORIGIN, "Sec-Fetch-Site": "none"}, 403),
        (json_type, 403),
        ({"Origin": ORIGIN, "Content-Type": "text/plain"}, 415),
        ({"Origin": ORIGIN, "Content-Type": "application/x-www-form-urlencoded"}, 415),
    ):
        assert client.post(url, content=body, headers=headers).status_code == status, headers
    same_site = {**json_type, "Origin": ORIGIN}
    assert client.post("/api/runs", content=body, headers=same_site).status_code == 405
    assert client.post(f"/api/run/{parent}", content=body, headers=same_site).status_code == 405
    tokenless = TestClient(make_app(ViewSettings(str(db), TOKEN)), base_url=ORIGIN)  # type: ignore[arg-type]
    assert tokenless.post(url, content=body, headers=same_site).status_code == 403
    # what cannot be forked: nothing written either
    for path, content, status, error in (
        (f"/api/run/{parent}/fork/9", body, 404, "no turn 9"),
        ("/api/run/wf-nope/fork/1", body, 404, "no run 'wf-nope'"),
        (url, "{not json", 422, "the script is not JSON"),
        (url, json.dumps({"kickoff": "hi", **AFTER}), 422, "so it has no kickoff"),
        (url, json.dumps({"script": {"nobody": ["hi"]}}), 422, "the script:"),
        (  # a key only a bare graph takes, refused as `flowc run` refuses it
            url,
            json.dumps({"context_vars": {"x": 1}, **AFTER}),
            422,
            "the script: context_vars: only for a bare JSON graph, not for a .flow, where "
            "`context KEY = VALUE` sets the initial context; drop it from the script",
        ),
        (url, json.dumps({"script": {"x": ["y" * FORK_BODY_BYTES]}}), 413, "too long"),
    ):
        answer = client.post(path, content=content, headers=same_site)
        assert answer.status_code == status, (path, content, answer.text)
        assert error in answer.json()["error"]
    assert rows(db) == before

    made = client.post(url, content=body, headers=same_site)
    assert made.status_code == 201, made.text
    found = made.json()
    new = found["run_id"]
    assert found == {
        "run_id": new,
        "forked_from": {"run_id": parent, "turn": 3},
        "turns": 5,
        "close_reason": "resolved",
        "stalled_on": None,
        "error": None,
    }
    assert rows(db, parent) == parent_rows  # the parent: not a byte changed
    listed = client.get("/api/runs").json()
    assert [r["run_id"] for r in listed] == [parent, new]
    assert "forked_from" not in listed[0]
    assert listed[1]["forked_from"] == {"run_id": parent, "turn": 3}
    assert client.get(f"/api/run/{new}").json()["forked_from"] == {"run_id": parent, "turn": 3}
    assert client.get(f"/api/run/{parent}").json()["forked_from"] is None

    # the same run as `flowc fork` writes, and `flowc log` tells
    log = json.loads(flowc("log", new, "--json", "--db", str(db), cwd=tmp_path).stdout)
    parent_log = json.loads(flowc("log", parent, "--json", "--db", str(db), cwd=tmp_path).stdout)
    assert log["turns"][:3] == parent_log["turns"][:3]
    assert [t["text"] for t in log["turns"][3:]] == [
        "No, keep both: one was a gift card.",
        "Understood, nothing changed.",
    ]
    assert log["forked_from"] == {"run_id": parent, "turn": 3}
