"""Many pages on one `flowc view` server (issue 28, point 6): concurrent event-stream
clients of one run, each connected while the run is written by `flowc run` in another
process, each get every turn exactly once, as `flowc log` has it, and the end.

The real server (uvicorn in a subprocess) and httpx: the run ends, so every stream
ends, and each client reads its answer to the end."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
import httpx

from tests.view.conftest import LIVE_TURNS, ViewServer, flowc, start_live_run, wait_for
from tests.view.test_view_http import events

CLIENTS = 20


class Client(threading.Thread):
    """One client of the run's event stream: it connects, reads up to the first turn
    (``ready`` is set then), then reads the stream to its end (``events``)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.ready = threading.Event()
        self.body = ""
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            with httpx.stream("GET", self.url, timeout=60) as answer:
                answer.raise_for_status()
                for chunk in answer.iter_text():
                    self.body += chunk
                    if "event: turn" in self.body:
                        self.ready.set()
        except Exception as err:  # the test reports it
            self.error = err
        finally:
            self.ready.set()


def test_every_client_of_a_live_run_gets_every_turn_once(workdir: Path) -> None:
    db, run, gate = start_live_run(workdir, workdir / "runs.db")
    run_id = json.loads(flowc("log", "--json", "--db", str(db), cwd=workdir).stdout)[0]["run_id"]
    server = ViewServer(Path(db), cwd=workdir)
    try:
        url = f"{server.base}/api/run/{run_id}/events?after=0&token={server.token}"
        clients = [Client(url) for _ in range(CLIENTS)]
        for client in clients:
            client.start()
        # every client has the kickoff (turn 1) before the agents take their turns
        for client in clients:
            assert client.ready.wait(60)
        for k in range(1, LIVE_TURNS):
            (gate / f"go-{k}").touch()
            # each turn committed before the next is let go: the clients read it live
            wait_for(
                lambda k=k: all(c.body.count("event: turn") > k for c in clients),
                what=f"turn {k + 1} on every stream",
            )
        assert run.wait(timeout=60) == 0
        for client in clients:
            client.join(timeout=60)
            assert not client.is_alive()
    finally:
        server.stop()
        if run.poll() is None:
            run.kill()
            run.wait()
        for stream in (run.stdout, run.stderr):
            if stream is not None:
                stream.close()
    log = json.loads(flowc("log", run_id, "--json", "--db", str(db), cwd=workdir).stdout)
    want: list[Any] = [[t["number"], t["speaker"], t["text"]] for t in log["turns"]]
    assert len(want) == LIVE_TURNS
    for client in clients:
        assert client.error is None
        got = events(client.body)
        turns = [data for _, name, data in got if name == "turn"]
        # every turn once, in order, each with its id; then the end, once, last
        assert [[t["n"], t["speaker"], t["text"]] for t in turns] == want
        assert [i for i, name, _ in got if name == "turn"] == [str(t[0]) for t in want]
        assert [name for _, name, _ in got].count("end") == 1
        assert got[-1][1] == "end"
        assert got[-1][2] == {"turns": LIVE_TURNS, "close_reason": log["close_reason"]}
