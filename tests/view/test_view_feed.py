"""The reading side of `flowc view` without a browser: a run followed in a PostgreSQL
database while another process writes it (and its event stream), and a feed's memory,
which does not grow with the length of the run it reads."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from flowc.runtime.stores import open_store
from flowc.view.feed import RunView, TurnFeed, run_summary
from tests.view.conftest import LIVE_TURNS, flowc, start_live_run, wait_for


def test_a_run_is_followed_live_in_postgresql(tmp_path: Path, pg_dsn: str) -> None:
    _, run, gate = start_live_run(tmp_path, pg_dsn)
    try:
        run_id = json.loads(flowc("log", "--json", "--db", pg_dsn, cwd=tmp_path).stdout)[0][
            "run_id"
        ]
        store = open_store(pg_dsn, readonly=True)
        try:
            view = RunView.load(store, run_id)
            assert view is not None
            feed = TurnFeed(view)
            got: list[dict[str, Any]] = feed.poll(store)
            assert [e["n"] for e in got] == [1]
            summary = run_summary(store, run_id)
            assert summary is not None and summary["status"] == "running" and summary["holder"]
            for k in range(1, LIVE_TURNS):
                (gate / f"go-{k}").touch()

                def more(k: int = k) -> bool:
                    got.extend(feed.poll(store))
                    return len(got) == k + 1

                wait_for(more, what=f"turn {k + 1} in PostgreSQL")
            run.wait(timeout=30)
            wait_for(lambda: bool(got.extend(feed.poll(store))) or feed.closed is not None)
            log = json.loads(flowc("log", run_id, "--json", "--db", pg_dsn, cwd=tmp_path).stdout)
            assert [e["n"] for e in got] == [t["number"] for t in log["turns"]]
            assert [e["text"] for e in got] == [t["text"] for t in log["turns"]]
            assert [e["decided_by"] for e in got] == [t["decided_by"] for t in log["turns"]]
            assert feed.closed == log["close_reason"] == "max_turns"
            assert got[-1]["node"] is not None  # the turn cap's node
            summary = run_summary(store, run_id)
            assert summary is not None and summary["status"] == "closed"
        finally:
            store.close()
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()


def test_the_server_streams_a_postgresql_run(tmp_path: Path, pg_dsn: str) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from flowc.view.server import ViewSettings, make_app
    from tests.view.conftest import SCRIPT
    from tests.view.test_view_http import events

    (tmp_path / "s.yaml").write_text(SCRIPT, encoding="utf-8")
    flow = str(Path(__file__).resolve().parents[2] / "examples" / "context_routing.flow")
    assert flowc("run", flow, "--script", "s.yaml", "--db", pg_dsn, cwd=tmp_path).returncode == 0
    log = json.loads(flowc("log", "last", "--json", "--db", pg_dsn, cwd=tmp_path).stdout)
    token = "pg-token-0123456789abcdef"
    client = TestClient(
        make_app(ViewSettings(pg_dsn, token, poll=0.01)), base_url="http://127.0.0.1:8124"
    )  # type: ignore[arg-type]
    runs = client.get(f"/api/runs?token={token}").json()
    assert [(r["run_id"], r["status"], r["turns"]) for r in runs] == [
        (log["run_id"], "closed", len(log["turns"]))
    ]
    body = client.get(
        f"/api/run/{log['run_id']}/events?token={token}", headers={"Last-Event-ID": "2"}
    ).text
    sent = [d for _, kind, d in events(body) if kind == "turn"]
    assert [d["n"] for d in sent] == [t["number"] for t in log["turns"][2:]]


def _long_run(folder: Path, turns: int) -> tuple[str, str]:
    """A scripted run of ``turns`` turns, two speakers taking turns until the cap."""
    flow = f"speaker a\nspeaker b\nstart a\nmax_turns {turns}\nwhen from a then b\nwhen from b then a\n"
    (folder / "long.flow").write_text(flow, encoding="utf-8")
    half = turns // 2 + 1
    script = {
        "kickoff": "go",
        "script": {
            "a": [f"a says {i} " + "x" * 200 for i in range(half)],
            "b": [f"b says {i} " + "y" * 200 for i in range(half)],
        },
    }
    (folder / "long.json").write_text(json.dumps(script), encoding="utf-8")
    db = folder / "runs.db"
    done = flowc("run", "long.flow", "--script", "long.json", "--db", str(db), "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    return str(db), json.loads(done.stdout)["run_id"]


def _peak_of_reading(db: str, run_id: str) -> tuple[int, int]:
    """The peak memory that following the whole run takes, and the turns it read."""
    store = open_store(db, readonly=True)
    try:
        view = RunView.load(store, run_id)
        assert view is not None
        feed = TurnFeed(view)
        tracemalloc.start()
        try:
            count = 0
            while True:
                before = feed.after
                count += len(feed.poll(store))  # each page's events are handed out, then dropped
                if feed.after == before:
                    break
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert feed.folder.records == []
        return peak, count
    finally:
        store.close()


def test_a_feed_s_memory_does_not_grow_with_the_run(tmp_path: Path) -> None:
    (tmp_path / "short").mkdir()
    (tmp_path / "long").mkdir()
    short = _peak_of_reading(*_long_run(tmp_path / "short", 600))
    long = _peak_of_reading(*_long_run(tmp_path / "long", 6000))
    assert (short[1], long[1]) == (600, 6000)
    # ten times the turns, about the same memory: one page of rows at a time
    assert long[0] < 1.5 * short[0], (short, long)
