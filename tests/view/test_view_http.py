"""`flowc view`'s server at the HTTP level (Starlette's TestClient, and the real command):
the token, cross-site and wrong-host refusals, read-only methods, unknown runs, the
event stream resuming after the last turn a page has, and the command's one-line
errors."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from flowc.runtime.transcript import TurnRecord
from flowc.view.server import ViewSettings, make_app
from tests.view.conftest import ROOT, SCRIPT, TOKEN, flowc


def events(body: str) -> list[tuple[str | None, str, Any]]:
    """``(id, event, data)`` of each event of a stream."""
    out = []
    for block in body.split("\n\n"):
        fields = dict(
            line.split(": ", 1)
            for line in block.splitlines()
            if ": " in line and not line.startswith(":")
        )
        if "event" in fields:
            out.append((fields.get("id"), fields["event"], json.loads(fields["data"])))
    return out


def test_every_request_needs_the_token(
    client: TestClient, run: tuple[Path, dict[str, Any]]
) -> None:
    run_id = run[1]["run_id"]
    for path in ("/", "/api/runs", f"/run/{run_id}", f"/api/run/{run_id}", "/static/run.js"):
        refused = client.get(path)
        assert refused.status_code == 403, path
        assert client.get(path + "?token=wrong" + TOKEN).status_code == 403
        assert "token" in refused.text
    ok = client.get(f"/api/runs?token={TOKEN}")
    assert ok.status_code == 200
    assert [r["run_id"] for r in ok.json()] == [run_id]
    # the first visit with the token sets a cookie the next requests go with
    cookie = ok.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert client.get("/api/runs").status_code == 200
    client.cookies.clear()
    assert client.get("/api/runs").status_code == 403


def test_websockets_are_refused_even_with_the_token(client: TestClient) -> None:
    """No route takes a WebSocket, and one is refused before the token, Host or Origin
    checks could be skipped for it."""
    from starlette.websockets import WebSocketDisconnect

    with (
        pytest.raises(WebSocketDisconnect) as refused,
        client.websocket_connect(f"/api/runs?token={TOKEN}"),
    ):
        pass
    assert refused.value.code == 1008


def test_cross_site_and_wrong_host_requests_are_refused(client: TestClient) -> None:
    url = f"/api/runs?token={TOKEN}"
    assert client.get(url, headers={"Origin": "http://127.0.0.1:8123"}).status_code == 200
    assert client.get(url, headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200
    assert client.get(url, headers={"Sec-Fetch-Site": "none"}).status_code == 200
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "http://127.0.0.1:9999"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Host": "evil.example:8123"},
        {"Host": "127.0.0.1:9999"},
    ):
        assert client.get(url, headers=headers).status_code == 403, headers
    assert client.post(url).status_code == 405
    assert client.delete(url).status_code == 405


def test_answers_forbid_inline_scripts_and_framing(client: TestClient) -> None:
    answer = client.get(f"/?token={TOKEN}")
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["cache-control"] == "no-store"
    assert client.get("/?token=wrong").headers["x-frame-options"] == "DENY"


def test_an_unknown_run_is_a_404(client: TestClient) -> None:
    page = client.get(f"/run/wf-nope<b>?token={TOKEN}")
    assert page.status_code == 404
    assert "<b>" not in page.text and "&lt;b&gt;" in page.text
    assert client.get(f"/api/run/wf-nope?token={TOKEN}").status_code == 404
    assert client.get(f"/api/run/wf-nope/events?token={TOKEN}").status_code == 404


def test_the_stream_sends_every_turn_then_the_end(
    client: TestClient, run: tuple[Path, dict[str, Any]]
) -> None:
    run_id, turns = run[1]["run_id"], run[1]["turns"]
    body = client.get(f"/api/run/{run_id}/events?token={TOKEN}").text
    got = events(body)
    sent = [(i, data) for i, kind, data in got if kind == "turn"]
    assert [i for i, _ in sent] == [str(t["number"]) for t in turns]
    assert [d["text"] for _, d in sent] == [t["text"] for t in turns]
    assert [d["decided_by"] for _, d in sent] == [t["decided_by"] for t in turns]
    assert [d["next_speaker"] for _, d in sent] == [t["next_speaker"] for t in turns]
    assert got[-1][1] == "end" and got[-1][2]["close_reason"] == run[1]["close_reason"]
    # the whole context comes with the turns that changed it
    last_context = [d["context"] for _, d in sent if "context" in d][-1]
    assert last_context == run[1]["context_vars"]


@pytest.mark.parametrize("how", ["header", "query"])
def test_a_reconnection_gets_the_turns_after_its_last_one(
    client: TestClient, run: tuple[Path, dict[str, Any]], how: str
) -> None:
    run_id, turns = run[1]["run_id"], run[1]["turns"]
    url = f"/api/run/{run_id}/events?token={TOKEN}"
    if how == "header":
        body = client.get(url, headers={"Last-Event-ID": "3"}).text
    else:
        body = client.get(url + "&after=3").text
    sent = [(i, d) for i, kind, d in events(body) if kind == "turn"]
    assert [i for i, _ in sent] == [str(t["number"]) for t in turns[3:]]
    # the first turn sent carries the whole context (the page may have missed a change)
    assert sent[0][1]["context"] == run[1]["context_vars"]


def test_the_diagram_is_the_stored_graphs_svg_with_stable_ids(
    client: TestClient, run: tuple[Path, dict[str, Any]]
) -> None:
    run_id = run[1]["run_id"]
    answer = client.get(f"/api/run/{run_id}/diagram.svg?token={TOKEN}")
    if answer.status_code == 503:
        pytest.skip(answer.text)
    assert answer.headers["content-type"].startswith("image/svg+xml")
    ids = set(re.findall(r'<g id="([ne]\d+)" class="(?:node|edge)"', answer.text))
    meta = client.get(f"/api/run/{run_id}?token={TOKEN}").json()
    assert {s["node"] for s in meta["speakers"]} <= ids
    assert meta["initial"]["node"] in ids


def test_the_command_s_errors_are_one_line(
    tmp_path: Path, run: tuple[Path, dict[str, Any]]
) -> None:
    missing = flowc("view", "--db", str(tmp_path / "none.db"), "--no-open", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1 and "no run database" in missing.stderr
    unknown = flowc("view", "wf-nope", "--db", str(run[0]), "--no-open", cwd=tmp_path)
    assert unknown.returncode == 2
    assert unknown.stderr.count("\n") == 1 and "no run 'wf-nope'" in unknown.stderr
    bad_token = flowc(
        "view", "--db", str(run[0]), "--no-open", cwd=tmp_path, env={"FLOWC_VIEW_TOKEN": "short"}
    )
    assert bad_token.returncode == 2 and bad_token.stderr.count("\n") == 1
    assert "Traceback" not in missing.stderr + unknown.stderr + bad_token.stderr


def test_a_port_in_use_is_one_line(tmp_path: Path, run: tuple[Path, dict[str, Any]]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = flowc("view", "--db", str(run[0]), "--no-open", "--port", str(port), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and f"--port {port}: cannot listen" in done.stderr


def test_without_the_extra_the_command_says_how_to_install_it(
    tmp_path: Path, run: tuple[Path, dict[str, Any]]
) -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['starlette'] = None; sys.modules['uvicorn'] = None\n"
        "from flowc.cli import main\n"
        f"sys.exit(main(['view', '--db', {str(run[0])!r}, '--no-open']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr == (
        "flowc view: error: flowc view needs Starlette and uvicorn: pip install "
        "'.[view]' in flowc's checkout (or pip install starlette uvicorn)\n"
    )


def test_a_run_left_waiting_for_a_human_is_listed_as_open_as_flowc_log_lists_it(
    tmp_path: Path,
) -> None:
    # the script has no answer for the customer's second turn: `flowc run` stops with the
    # run open on them. It records no stall (only a worker that gives a run back does),
    # so `flowc log` calls it open, and so does the view (it said "stalled" before)
    (tmp_path / "s.yaml").write_text(SCRIPT.replace('  customer:\n    - "Yes, please."\n', ""))
    db = tmp_path / "runs.db"
    flow = str(ROOT / "examples" / "context_routing.flow")
    assert flowc("run", flow, "--script", "s.yaml", "--db", str(db), cwd=tmp_path).returncode == 1
    log = json.loads(flowc("log", "last", "--json", "--db", str(db), cwd=tmp_path).stdout)
    assert log["close_reason"] is None
    (logged,) = json.loads(flowc("log", "--json", "--db", str(db), cwd=tmp_path).stdout)
    client = TestClient(make_app(ViewSettings(str(db), TOKEN)), base_url="http://127.0.0.1:8125")  # type: ignore[arg-type]
    (listed,) = client.get(f"/api/runs?token={TOKEN}").json()
    assert listed["status"] == logged["status"] == "open" and listed["holder"] is None
    assert listed["stalled_on"] is None
    assert listed["next_speaker"] == log["next_speaker"] == "customer"
    assert listed["turns"] == len(log["turns"]) and listed["close_reason"] is None


def test_the_view_lists_each_run_with_the_status_flowc_log_gives_it(tmp_path: Path) -> None:
    from tests.runtime.worker_harness import RR_FLOW, events, rr_script, start_worker, stop_worker
    from tests.runtime.worker_harness import flowc as spawn

    db = str(tmp_path / "runs.db")
    flow = tmp_path / "rr.flow"
    flow.write_text(RR_FLOW.format(max_turns=12))
    (tmp_path / "full.json").write_text(json.dumps(rr_script(12)))
    (tmp_path / "short.json").write_text(json.dumps(rr_script(5)))  # turn 6, c's, is missing

    def submit(script: str) -> str:
        proc = spawn("submit", str(flow), "--script", str(tmp_path / script), "--db", db)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()
        return out.decode().strip()

    closed, stalled = submit("full.json"), submit("short.json")
    log = tmp_path / "w.log"
    worker = start_worker(db, log, lease_seconds=1.0)
    try:
        deadline = time.monotonic() + 60
        while not (events(log, "closed") and events(log, "stalled")):
            assert time.monotonic() < deadline and worker.poll() is None, log.read_text()
            time.sleep(0.05)
    finally:
        stop_worker(worker)
    waiting = submit("full.json")  # no worker is left to take it: open, no stall record
    logged = {
        r["run_id"]: r for r in json.loads(flowc("log", "--json", "--db", db, cwd=tmp_path).stdout)
    }
    client = TestClient(make_app(ViewSettings(db, TOKEN)), base_url="http://127.0.0.1:8125")  # type: ignore[arg-type]
    listed = {r["run_id"]: r for r in client.get(f"/api/runs?token={TOKEN}").json()}
    want = {closed: "closed", stalled: "stalled", waiting: "open"}
    assert {cid: r["status"] for cid, r in logged.items()} == want
    assert {cid: r["status"] for cid, r in listed.items()} == want
    for cid in want:
        assert listed[cid]["turns"] == logged[cid]["turns"]
        assert listed[cid]["close_reason"] == logged[cid]["close_reason"]
        assert listed[cid]["holder"] is None
    assert listed[stalled]["stalled_on"] == logged[stalled]["stalled_on"] == "c"
    assert listed[waiting]["stalled_on"] is None and listed[closed]["stalled_on"] is None


def test_the_runs_list_follows_a_live_run_from_one_listing_to_the_next(tmp_path: Path) -> None:
    from tests.view.conftest import LIVE_TURNS, start_live_run

    db, run, gate = start_live_run(tmp_path, tmp_path / "runs.db")
    try:
        client = TestClient(
            make_app(ViewSettings(str(db), TOKEN)), base_url="http://127.0.0.1:8126"
        )  # type: ignore[arg-type]
        (first,) = client.get(f"/api/runs?token={TOKEN}").json()
        assert (first["status"], first["turns"]) == ("running", 1)
        assert "pid" in first["holder"]
        for k in range(1, LIVE_TURNS):
            (gate / f"go-{k}").touch()
        assert run.wait(timeout=60) == 0
        (then,) = client.get("/api/runs").json()
        log = json.loads(flowc("log", "last", "--json", "--db", str(db), cwd=tmp_path).stdout)
        assert (then["status"], then["turns"], then["close_reason"]) == (
            "closed",
            len(log["turns"]),
            log["close_reason"],
        )
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()


def test_the_runs_list_keeps_a_bounded_number_of_feeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runs list keeps the feeds of at most ``limit`` runs besides those a page follows
    and those that committed since the last listing, the runs that least recently
    committed more losing theirs first; a closed run keeps only its line. A run whose feed
    was let go is listed from its line while it commits nothing (not read again), and read
    from its start once it commits more: every listing is the one a list keeping every
    feed gives."""
    from flowc.view import server
    from tests.view.conftest import LIVE_TURNS, start_live_run

    db, live, gate = start_live_run(tmp_path, tmp_path / "runs.db")  # the first run
    try:
        flow = str(ROOT / "examples" / "context_routing.flow")
        (tmp_path / "s.yaml").write_text(SCRIPT)
        for _ in range(3):
            done = flowc("run", flow, "--script", "s.yaml", "--db", str(db), cwd=tmp_path)
            assert done.returncode == 0, done.stderr
        settings = ViewSettings(str(db), TOKEN)

        def every_feed_kept() -> list[dict[str, Any]]:
            return server._Listing(settings, limit=1_000).list()

        loaded: list[str] = []
        load = server.RunView.load

        def counted_load(store: Any, run_id: str) -> Any:
            loaded.append(run_id)
            return load(store, run_id)

        monkeypatch.setattr(server.RunView, "load", counted_load)
        listing = server._Listing(settings, limit=0)
        first = listing.list()
        ids = [r["run_id"] for r in first]
        assert first[0]["status"] == "running"
        assert first == every_feed_kept()
        # the closed runs keep only their lines; the live one was read in this listing,
        # so its feed stays past the limit (a listing never reads a live run anew)
        assert list(listing.feeds) == ids[:1]
        assert sorted(listing.lines) == sorted(ids)
        # a page follows the live run: its feed stays though the run is idle
        listing.follow(ids[0])
        loaded.clear()
        assert listing.list() == first  # nothing committed: no run read again
        assert loaded == [] and list(listing.feeds) == ids[:1]
        listing.unfollow(ids[0])  # its page closed: idle and past the limit, let go at once
        assert list(listing.feeds) == [] and not listing.followed
        # the live run commits the rest of its turns: read again, from its start, and the
        # line it gets is the one a listing that kept every feed gives, and flowc log's
        for k in range(1, LIVE_TURNS):
            (gate / f"go-{k}").touch()
        assert live.wait(timeout=60) == 0
        then = listing.list()
        assert loaded == [ids[0]]
        assert then == every_feed_kept()
        log = json.loads(flowc("log", ids[0], "--json", "--db", str(db), cwd=tmp_path).stdout)
        assert (then[0]["status"], then[0]["turns"], then[0]["close_reason"]) == (
            "closed",
            len(log["turns"]),
            log["close_reason"],
        )
        assert then[1:] == first[1:]
        assert list(listing.feeds) == []  # closed now: its line is all the list needs
        loaded.clear()
        assert listing.list() == then and loaded == []
        page = " ".join((ROOT / "docs" / "view.md").read_text().split())
        assert f"of at most {server.LISTED_FEEDS} others" in page
    finally:
        if live.poll() is None:
            live.kill()
        live.communicate()


def test_a_run_is_followed_in_the_runs_list_while_its_stream_is_open(
    run: tuple[Path, dict[str, Any]],
) -> None:
    """The event stream of a run marks it followed in the runs list from its first event
    until it is closed (a page that went away), so its feed there is not let go."""
    import asyncio

    from flowc.runtime.stores import open_store
    from flowc.view import server

    db, log = run
    settings = ViewSettings(str(db), TOKEN)
    store = open_store(str(db), readonly=True)
    try:
        view = server.RunView.load(store, log["run_id"])
    finally:
        store.close()
    assert view is not None
    listing = server._Listing(settings, limit=0)

    async def scenario() -> list[str]:
        stream = server._stream(settings, view, 0, listing)
        said = [await stream.__anext__()]
        assert dict(listing.followed) == {log["run_id"]: 1}
        listing.list()  # no feed kept but the followed run's
        assert list(listing.feeds) == [log["run_id"]]
        said.append(await stream.__anext__())
        await stream.aclose()
        return said

    said = asyncio.run(scenario())
    assert said[0].startswith("retry:") and "event: turn" in said[1]
    assert not listing.followed and not listing.feeds
    assert listing.list()[0]["turns"] == len(log["turns"])


def test_why_and_scenario_answer_what_flowc_log_prints(
    client: TestClient, run: tuple[Path, dict[str, Any]]
) -> None:
    db, log = run
    run_id = log["run_id"]
    for what in ("why", "scenario"):
        refused = client.get(f"/api/run/{run_id}/{what}/1")
        assert refused.status_code == 403 and "token" in refused.text
    for turn in log["turns"]:
        n = turn["number"]
        why = client.get(f"/api/run/{run_id}/why/{n}?token={TOKEN}")
        assert why.status_code == 200
        cli = flowc("log", run_id, "--why", str(n), "--json", "--db", str(db), cwd=db.parent)
        assert why.json() == json.loads(cli.stdout)
        block = client.get(f"/api/run/{run_id}/scenario/{n}")
        assert block.headers["content-type"].startswith("text/plain")
        cli = flowc("log", run_id, "--scenario-upto", str(n), "--db", str(db), cwd=db.parent)
        assert cli.returncode == 0 and block.text == cli.stdout
    turns = len(log["turns"])
    for n in (0, turns + 1):
        for what in ("why", "scenario"):
            missing = client.get(f"/api/run/{run_id}/{what}/{n}?token={TOKEN}")
            assert missing.status_code == 404
            assert missing.json()["error"].endswith(f"no turn {n} (its turns are 1 to {turns})")
    assert client.get(f"/api/run/wf-nope/why/1?token={TOKEN}").status_code == 404
    assert client.get(f"/api/run/{run_id}/why/x?token={TOKEN}").status_code == 404


def test_what_is_kept_for_why_is_bounded_and_holds_no_row(tmp_path: Path) -> None:
    """The why answers keep, per run explained (at most ``limit`` runs), a folded state
    every MARK_TURNS turns, and no row (envelope) of the run: the server's memory does
    not grow with the rows of the runs it explains (issue 28, point 6; it kept up to
    40,000 rows, 1.5 KB each, and read a longer run whole for each answer)."""
    from flowc.runtime.envelope import Envelope
    from flowc.runtime.fork import scenario_upto
    from flowc.runtime.stores import open_store
    from flowc.runtime.why import explain_turn
    from flowc.view.server import EXPLAINED_RUNS, MARK_TURNS, _Explained

    turns = 3 * MARK_TURNS + 10
    flow = f"speaker a\nspeaker b\nstart a\nmax_turns {turns}\nwhen from a then b\nwhen from b then a\n"
    (tmp_path / "long.flow").write_text(flow)
    script = {"kickoff": "go", "script": {s: [f"{s} {i}" for i in range(turns)] for s in "ab"}}
    (tmp_path / "long.json").write_text(json.dumps(script))
    db = tmp_path / "runs.db"
    for _ in range(2):
        done = flowc("run", "long.flow", "--script", "long.json", "--db", str(db), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    store = open_store(str(db), readonly=True)
    try:
        first, second = store.channel_ids()
        envelopes = list(store.read(first))
    finally:
        store.close()
    kept = _Explained(ViewSettings(str(db), TOKEN), limit=1)
    for n in (turns, 1, MARK_TURNS + 1, turns - 1):
        assert kept.explain(first, n) == explain_turn(envelopes, n).to_json(), n
    assert list(kept.runs) == [first]
    assert [m.turns for _, m in kept.runs[first].marks] == [MARK_TURNS * k for k in (1, 2, 3)]
    held = _reachable(kept)
    assert not [o for o in held if isinstance(o, Envelope)]
    # room for one run: the one asked for last is kept
    kept.explain(second, 2)
    assert list(kept.runs) == [second]
    assert kept.scenario(first, 3) == scenario_upto(envelopes, 3)
    page = " ".join((ROOT / "docs" / "view.md").read_text().split())
    assert f"({EXPLAINED_RUNS} of them), the folded state every {MARK_TURNS} turns" in page


def test_why_follows_a_live_run_past_the_envelopes_it_kept(tmp_path: Path) -> None:
    from tests.view.conftest import LIVE_TURNS, start_live_run

    db, run, gate = start_live_run(tmp_path, tmp_path / "runs.db")
    try:
        client = TestClient(
            make_app(ViewSettings(str(db), TOKEN)), base_url="http://127.0.0.1:8127"
        )  # type: ignore[arg-type]
        (listed,) = client.get(f"/api/runs?token={TOKEN}").json()
        run_id = listed["run_id"]
        assert client.get(f"/api/run/{run_id}/why/1").json()["next_speaker"] == "writer"
        assert client.get(f"/api/run/{run_id}/why/2").status_code == 404
        for k in range(1, LIVE_TURNS):
            (gate / f"go-{k}").touch()
        assert run.wait(timeout=60) == 0
        for n in (2, LIVE_TURNS):
            cli = flowc("log", run_id, "--why", str(n), "--json", "--db", str(db), cwd=tmp_path)
            assert client.get(f"/api/run/{run_id}/why/{n}").json() == json.loads(cli.stdout)
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()


def test_why_from_the_kept_marks_equals_why_from_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Explaining a turn from the last folder kept before it (every MARK_TURNS turns)
    gives what folding the run from its start gives, in whatever order turns are asked."""
    import flowc.view.server as server
    from flowc.runtime.stores import open_store
    from flowc.runtime.why import explain_turn

    turns = 40
    flow = f'speaker a: human {{ sets n }}\nspeaker b\nstart a\nmax_turns {turns}\nwhen context.n == 3 then terminate "x"\nwhen from a then b\nwhen from b then a\n'
    (tmp_path / "long.flow").write_text(flow)
    script = {
        "kickoff": "go",
        "script": {
            "a": [{"say": f"a {i}", "set": {"n": i % 3}} for i in range(turns)],
            "b": [f"b {i}" for i in range(turns)],
        },
    }
    (tmp_path / "long.json").write_text(json.dumps(script))
    db = tmp_path / "runs.db"
    done = flowc("run", "long.flow", "--script", "long.json", "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    store = open_store(str(db), readonly=True)
    try:
        (run_id,) = store.channel_ids()
        envelopes = list(store.read(run_id))
    finally:
        store.close()
    monkeypatch.setattr(server, "MARK_TURNS", 7)
    kept = server._Explained(ViewSettings(str(db), TOKEN))
    asked = [turns, 1, 7, 8, 14, 15, 6, 21, 39, 2, 28, 29, 13]
    for n in asked:
        assert kept.explain(run_id, n) == explain_turn(envelopes, n).to_json(), n
    marks = [m for _, m in kept.runs[run_id].marks]
    assert [m.turns for m in marks] == [7, 14, 21, 28, 35]
    # a mark holds no turn record: its size does not grow with the turns before it (each
    # mark held every earlier record before, so the marks grew with the run's square)
    assert [len(m.records) for m in marks] == [0, 0, 0, 0, 0]
    held = [_reachable(m) for m in marks]
    assert [sum(isinstance(o, TurnRecord) for o in h) for h in held] == [0, 0, 0, 0, 0]
    assert max(map(len, held)) - min(map(len, held)) < 50, [len(h) for h in held]


def _reachable(root: object) -> list[object]:
    """The objects ``root`` holds, directly or not (not through a module, a class or a
    function, which every folder shares)."""
    import gc
    import types

    seen: dict[int, object] = {}
    todo = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(
            obj, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
        ):
            continue
        seen[id(obj)] = obj
        todo.extend(gc.get_referents(obj))
    return list(seen.values())


def test_the_command_s_socket_is_tcp_by_name() -> None:
    """asyncio turns Nagle's algorithm off only on connections of a socket whose protocol
    is IPPROTO_TCP; with it on, each small answer waited ~40 ms for the browser's ACK."""
    import asyncio
    import socket

    from flowc.commands.view import _bind

    sock = _bind(0)
    try:
        assert sock.proto == socket.IPPROTO_TCP

        async def accepted_nodelay() -> int:
            found: list[int] = []

            def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                found.append(
                    writer.get_extra_info("socket").getsockopt(
                        socket.IPPROTO_TCP, socket.TCP_NODELAY
                    )
                )
                writer.close()

            server = await asyncio.start_server(on_connect, sock=sock)
            _, writer = await asyncio.open_connection(*sock.getsockname())
            while not found:
                await asyncio.sleep(0.01)
            writer.close()
            server.close()
            return found[0]

        assert asyncio.run(accepted_nodelay()) != 0
    finally:
        sock.close()


BROKEN_FLOW = """flow pingpong "two agents in turn"
speaker a
speaker b
start a
max_turns 4
when from a then b
when from b then a
property quiet_b: never from b
"""


def test_the_properties_a_run_broke_are_listed_and_marked_on_their_turn(tmp_path: Path) -> None:
    (tmp_path / "p.flow").write_text(BROKEN_FLOW)
    (tmp_path / "s.json").write_text(
        json.dumps({"kickoff": "hi", "script": {"a": ["x"], "b": ["p", "q"]}})
    )
    db = str(tmp_path / "runs.db")
    done = flowc("run", "p.flow", "--script", "s.json", "--db", db, cwd=tmp_path)
    assert done.returncode == 3, done.stderr  # a property was violated
    (logged,) = json.loads(flowc("log", "--json", "--db", db, cwd=tmp_path).stdout)
    assert logged["property_violations"] == ["quiet_b"]
    client = TestClient(make_app(ViewSettings(db, TOKEN)), base_url="http://127.0.0.1:8125")  # type: ignore[arg-type]
    (listed,) = client.get(f"/api/runs?token={TOKEN}").json()
    assert listed["property_violations"] == logged["property_violations"]
    body = client.get(f"/api/run/{listed['run_id']}/events?token={TOKEN}").text
    sent = {int(i): d for i, kind, d in events(body) if kind == "turn"}
    assert sorted(sent) == [1, 2, 3, 4]
    # turn 2 is the one that broke it, with the claim and why `flowc log RUN` shows
    (broken,) = sent[2]["property_violations"]
    assert (broken["property"], broken["claim"], broken["turn"]) == ("quiet_b", "never from b", 2)
    assert broken["why"] == "turn 2 has `from b`"
    assert all("property_violations" not in sent[n] for n in (1, 3, 4))


def test_a_run_that_broke_no_property_lists_none(run: tuple[Path, dict[str, Any]]) -> None:
    client = TestClient(
        make_app(ViewSettings(str(run[0]), TOKEN)), base_url="http://127.0.0.1:8125"
    )  # type: ignore[arg-type]
    listed = client.get(f"/api/runs?token={TOKEN}").json()
    assert listed and all("property_violations" not in r for r in listed)
