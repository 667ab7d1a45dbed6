"""`flowc view` in a real headless Chromium on a PostgreSQL run that changes hands: worker
A drives a run and is SIGKILLed mid-way, worker B takes it over and finishes it, while a
page follows the run. The page must show each turn exactly once and in order (no gap at
the takeover, no turn of A shown twice), who writes the run as it changes (A's process,
then B's), and end with the transcript `flowc log` prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.runtime.worker_harness import (
    AGENTS,
    agent_run,
    counted_turns,
    holding_at,
    kill_left,
    open_db,
    start_worker,
    stop_worker,
    wait_until,
)
from tests.view.conftest import COUNT_TURN_EVENTS, ViewServer, flowc, needs_browser, wait_for

pytestmark = needs_browser

TOTAL, HOLD_A, HOLD_B = 30, 10, 20


def _shown(page: Any) -> list[tuple[int, str]]:
    return [
        (int(n), str(text))
        for n, text in page.evaluate(
            """Array.from(document.querySelectorAll('#transcript li')).map(
                li => [li.dataset.n, li.querySelector('.text').textContent])"""
        )
    ]


def test_a_run_taken_over_by_a_second_worker_shows_every_turn_once(
    pg_dsn: str, workdir: Path, page: Any
) -> None:
    cid = agent_run(pg_dsn, workdir, TOTAL)
    log_a, log_b, gate = workdir / "a.log", workdir / "b.log", workdir / "b.go"
    a = start_worker(
        pg_dsn, log_a, "--agents", str(AGENTS), lease_seconds=30, env=holding_at(HOLD_A)
    )
    store = open_db(pg_dsn)
    b = server = None
    page.add_init_script(COUNT_TURN_EVENTS)
    try:
        wait_until(lambda: len(counted_turns(store, cid)) == HOLD_A, 60, "A to hold the run", [a])
        server = ViewServer(pg_dsn, cid, cwd=workdir)  # type: ignore[arg-type]
        page.goto(server.url)
        first = [(i + 1, text) for i, (_, text) in enumerate(counted_turns(store, cid))]
        wait_for(lambda: _shown(page) == first, what="A's turns on the page")
        wait_for(lambda: f"pid {a.pid}" in page.inner_text("#run-holder"), what="A as the holder")
        a.kill()
        a.wait(timeout=30)
        # B, on the same host, sees A's process gone and takes the run over at once; it
        # holds it at turn HOLD_B until the gate exists
        b = start_worker(
            pg_dsn,
            log_b,
            "--agents",
            str(AGENTS),
            lease_seconds=30,
            env=holding_at(HOLD_B, gate),
        )
        wait_until(lambda: len(counted_turns(store, cid)) == HOLD_B, 60, "B to go on", [b])
        middle = [(i + 1, text) for i, (_, text) in enumerate(counted_turns(store, cid))]
        wait_for(lambda: _shown(page) == middle, what="B's first turns after A's")
        wait_for(lambda: f"pid {b.pid}" in page.inner_text("#run-holder"), what="B as the holder")
        gate.touch()
        page.wait_for_selector("body[data-ended=true]", timeout=60000)
        log = json.loads(flowc("log", cid, "--json", "--db", pg_dsn, cwd=workdir).stdout)
        assert log["close_reason"] == "max_turns" and len(log["turns"]) == TOTAL
        assert _shown(page) == [(t["number"], t["text"]) for t in log["turns"]]
        assert [text for _, text in _shown(page)] == [f"t{i}" for i in range(TOTAL)]
        # every turn came once: none of A's sent again when B's began
        assert page.evaluate("window.__turnEvents") == list(range(1, TOTAL + 1))
        assert page.inner_text("#run-status") == "closed"
        assert page.errors == []
        stop_worker(b)
        assert any(
            line.startswith(f"claimed {cid}") and line.endswith("taken over")
            for line in log_b.read_text().splitlines()
        )
    finally:
        kill_left([a, b])
        store.close()
        if server is not None:
            server.stop()
