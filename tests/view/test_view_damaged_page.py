"""A run page of `flowc view`, in a real Chromium, on a run with a damaged record past
its opening: the stream's ``damaged`` event is shown in place of the run's status, in
the words every reader uses, and the page stops reading (it kept reconnecting to a
stream that broke off with nothing said)."""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.stored_runs import rewrite_row, store_run
from tests.view.conftest import ViewServer, needs_browser

pytestmark = needs_browser


def test_a_damaged_record_is_said_on_the_run_page(workdir: Path, page: Any) -> None:
    with ThreadPoolExecutor(1) as other:  # (`flowc run` runs its own event loop)
        db, cid, rows = other.submit(store_run, workdir).result()
    pos, (seq, env) = next(
        (i, row) for i, row in enumerate(rows, 1) if row[1]["event_data"].get("routing")
    )
    env = copy.deepcopy(env)
    env["event_data"]["routing"]["kind"] = 5
    rewrite_row(db, seq, env)
    said = (
        f"run {cid} is damaged: record {pos} (ag2.packet, row {seq}), "
        "event_data.routing.kind: expected a string or null, got 5"
    )
    server = ViewServer(db, cid, cwd=workdir)
    try:
        page.goto(server.url)
        page.wait_for_selector("#run-status.damaged")
        assert page.inner_text("#run-status") == "damaged"
        assert page.inner_text("#run-end") == said
        assert page.inner_text("#run-connection") == ""  # not "(reconnecting…)"
    finally:
        server.stop()
