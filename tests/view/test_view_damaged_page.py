"""A run page of `flowc view`, in a real Chromium, on a run with a damaged record past
its opening: the stream's ``damaged`` event is shown in place of the run's status, in
the words every reader uses, and the page stops reading (it kept reconnecting to a
stream that broke off with nothing said). So for a run whose plugin fails on it now
(``plugin-failed``), on its page and in the runs list."""

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


def _plugin_run(workdir: Path) -> str:
    """A run written while its plugin's condition worked; the plugin file then changed to
    raise (the run's records are intact). Its id."""
    import json

    from flowc.cli import main
    from flowc.runtime.stores import open_store
    from tests.plugin_registry import remember_plugins
    from tests.runtime.test_plugin_boundary import FLOW, SCRIPT, plugin

    (workdir / "review.flow").write_text(FLOW)
    (workdir / "routing.py").write_text(plugin())
    (workdir / "script.json").write_text(json.dumps(SCRIPT))
    forget = remember_plugins()
    try:
        argv = ["run", "review.flow", "--script", "script.json", "--db", "runs.db"]
        assert main([*argv, "--plugin", str(workdir / "routing.py")]) == 0
    finally:
        forget()
    (workdir / "routing.py").write_text(plugin(condition="int('many')"))
    store = open_store(str(workdir / "runs.db"), readonly=True)
    try:
        [cid] = store.channel_ids()
    finally:
        store.close()
    return cid


def test_a_plugin_failing_on_a_run_now_is_said_on_its_page_and_in_the_list(
    workdir: Path, page: Any, monkeypatch: Any
) -> None:
    """The run's records are intact, its plugin fails on them now: the page shows
    `plugin-failed` in place of the status with the plugin's failure (the stream broke
    off and the page kept reconnecting), and the runs list shows the same words."""
    monkeypatch.chdir(workdir)
    with ThreadPoolExecutor(1) as other:  # (`flowc run` runs its own event loop)
        cid = other.submit(_plugin_run, workdir).result()
    said = (
        f"run {cid}: the plugin's condition `draft_is_long` failed on it: ValueError: invalid "
        "literal for int() with base 10: 'many' (routing.py:16, in evaluate)"
    )
    server = ViewServer(workdir / "runs.db", cid, "--plugin", "routing.py", cwd=workdir)
    try:
        page.goto(server.url)
        page.wait_for_selector("#run-status.plugin-failed")
        assert page.inner_text("#run-status") == "plugin-failed"
        assert page.inner_text("#run-end") == said
        assert page.inner_text("#run-connection") == ""  # not "(reconnecting…)"
        page.goto(f"{server.base}/")
        page.wait_for_selector("td.status.plugin-failed")
        row = page.inner_text(f'tr[data-run="{cid}"]')
        assert "plugin-failed" in row and said in row, row
    finally:
        server.stop()
