"""A long run's backlog in one answer (``/api/run/ID/turns``): the turns committed but the
last ``STREAMED_TAIL``, as lines of JSON arrays, the same turns the event stream sends;
the page takes them so and streams only the rest (each turn once, in order, as text), its
transcript in blocks the browser may skip drawing while out of view."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from flowc.view import server as view_server
from tests.view.conftest import COUNT_TURN_EVENTS, TOKEN, ViewServer, flowc, needs_browser
from tests.view.test_view_http import events


def backlog(client: TestClient, run_id: str, after: int) -> list[list[dict[str, Any]]]:
    answer = client.get(f"/api/run/{run_id}/turns?after={after}&token={TOKEN}")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in answer.text.splitlines()]


def test_the_backlog_is_the_streams_turns_but_its_tail(
    client: TestClient, run: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, turns = run[1]["run_id"], run[1]["turns"]
    assert len(turns) >= 4
    streamed = [
        d
        for _, kind, d in events(client.get(f"/api/run/{run_id}/events?token={TOKEN}").text)
        if kind == "turn"
    ]
    # a run of no more turns than the tail has no backlog: the stream brings them all
    assert backlog(client, run_id, 0) == []
    monkeypatch.setattr(view_server, "STREAMED_TAIL", 1)
    sent = [turn for line in backlog(client, run_id, 0) for turn in line]
    assert sent == streamed[:-1]  # the first with the whole context, as the stream's
    # from turn 2 on: its first turn carries the whole context after it
    later = [turn for line in backlog(client, run_id, 2) for turn in line]
    assert [t["n"] for t in later] == [t["number"] for t in turns[2:-1]]
    context_then = [t["context"] for t in streamed[:3] if "context" in t][-1]
    assert later[0]["context"] == context_then
    assert {k: v for k, v in later[0].items() if k != "context"} == {
        k: v for k, v in streamed[2].items() if k != "context"
    }
    # the stream from the backlog's last turn brings the rest: every turn once
    rest = client.get(f"/api/run/{run_id}/events?after={sent[-1]['n']}&token={TOKEN}").text
    tail = [d for _, kind, d in events(rest) if kind == "turn"]
    assert [t["n"] for t in sent + tail] == [t["number"] for t in turns]
    # the token (the cookie the first answer set dropped), an unknown run
    client.cookies.clear()
    assert client.get(f"/api/run/{run_id}/turns").status_code == 403
    assert client.get(f"/api/run/{run_id}/turns?token=wrong").status_code == 403
    assert client.get(f"/api/run/wf-nope/turns?token={TOKEN}").status_code == 404


LONG_TURNS = 150
LONG_FLOW = f"""speaker a
speaker b
start a
max_turns {LONG_TURNS}
when from a then b
when from b then a
"""


def test_a_long_runs_page_takes_its_backlog_in_one_answer(workdir: Path, page: Any) -> None:
    """Of a 150-turn run, only the last 100 turns come as events; every turn is shown
    once, in order, its markup as text, in blocks of 25 entries the browser
    skips drawing while out of view."""
    (workdir / "long.flow").write_text(LONG_FLOW, encoding="utf-8")
    half = LONG_TURNS // 2 + 1
    script = {
        "kickoff": "<img src=x onerror=window.__pwned=1>",
        "script": {
            "a": [f"<img src=x onerror=window.__pwned={i}> a{i}" for i in range(half)],
            "b": [f"<script>window.__pwned={i}</script> b{i}" for i in range(half)],
        },
    }
    (workdir / "long.json").write_text(json.dumps(script), encoding="utf-8")
    db = workdir / "long.db"
    done = flowc("run", "long.flow", "--script", "long.json", "--db", str(db), cwd=workdir)
    assert done.returncode == 0, done.stderr
    log = json.loads(flowc("log", "last", "--json", "--db", str(db), cwd=workdir).stdout)
    assert len(log["turns"]) == LONG_TURNS
    page.add_init_script(COUNT_TURN_EVENTS)
    server = ViewServer(db, log["run_id"], cwd=workdir)
    try:
        page.goto(server.url)
        page.wait_for_selector("body[data-ended=true]")
        shown = page.evaluate(
            """() => Array.from(document.querySelectorAll('#transcript li')).map(li =>
                [Number(li.dataset.n), li.querySelector('.who').textContent,
                 li.querySelector('.text').textContent])"""
        )
        assert shown == [[t["number"], t["speaker"], t["text"]] for t in log["turns"]]
        # the backlog came in one answer: the events brought only the tail
        tail = 100  # the server's STREAMED_TAIL
        assert page.evaluate("window.__turnEvents") == list(
            range(LONG_TURNS - tail + 1, LONG_TURNS + 1)
        )
        blocks = page.evaluate(
            """() => Array.from(document.querySelectorAll('#transcript ol.block')).map(b =>
                [b.children.length, getComputedStyle(b).contentVisibility])"""
        )
        assert blocks == [[25, "auto"]] * (LONG_TURNS // 25)
        # a turn of the backlog selected: its state as the stream would have shown it
        page.click("#turn-3")
        assert page.inner_text("#state-turn") == "3"
        assert page.inner_text("#state-speaker") == log["turns"][2]["speaker"]
        assert page.inner_text("#state-decided") == log["turns"][2]["decided_by"]
        assert json.loads(page.inner_text("#state-context")) == {}
        assert (
            page.evaluate("document.querySelectorAll('#transcript img, #transcript script').length")
            == 0
        )
        page.wait_for_timeout(300)  # an image's error handler would have run by now
        assert page.evaluate("window.__pwned") is None
        assert page.errors == []
        assert tail == view_server.STREAMED_TAIL
    finally:
        server.stop()


for _mark in needs_browser:
    test_a_long_runs_page_takes_its_backlog_in_one_answer = _mark(
        test_a_long_runs_page_takes_its_backlog_in_one_answer
    )


@pytest.mark.parametrize("bad", ["abc", "-1", "1.5", "", "1234567890123", "0x10", "٣"])
@pytest.mark.parametrize("path", ["turns", "events", "ag-ui"])
def test_a_turn_number_that_is_not_one_is_refused(
    client: TestClient, run: tuple[Path, dict[str, Any]], path: str, bad: str
) -> None:
    """``?after=`` or ``Last-Event-ID`` that is no turn number: 400 naming it, never read
    as 0 (which sent the whole run again as if the page had nothing)."""
    run_id = run[1]["run_id"]
    answer = client.get(f"/api/run/{run_id}/{path}", params={"after": bad, "token": TOKEN})
    assert answer.status_code == 400, answer.text[:200]
    assert "?after=" in answer.json()["error"]
    if bad.isascii():  # (a header is ASCII)
        answer = client.get(
            f"/api/run/{run_id}/{path}?token={TOKEN}", headers={"last-event-id": bad or " "}
        )
        assert answer.status_code == 400
        assert "Last-Event-ID" in answer.json()["error"]
    # a good number still works, and an unknown run is still 404 first
    assert client.get(f"/api/run/{run_id}/{path}?after=1&token={TOKEN}").status_code == 200
    assert client.get(f"/api/run/wf-nope/{path}?after={bad}&token={TOKEN}").status_code == 404
