"""A run page of `flowc view`, in a real Chromium, on a run whose WAL no hub could have
written (a turn sent by someone who is no participant), reached from the runs list: the
list shows it `damaged` in `flowc log`'s words, and the page shows the turns before the
break, then `damaged` in place of the run's status with the same words."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.stored_runs import rewrite_row, store_run
from tests.view.conftest import ViewServer, needs_browser

pytestmark = needs_browser


def test_a_broken_wal_is_damaged_in_the_list_and_on_its_page(workdir: Path, page: Any) -> None:
    with ThreadPoolExecutor(1) as other:  # (`flowc run` runs its own event loop)
        db, cid, rows = other.submit(store_run, workdir).result()
    seq, env = rows[3]
    rewrite_row(db, seq, {**env, "sender_id": "ghost"})
    said = (
        f"run {cid}: the WAL is broken at envelope 4 ({env['envelope_id']}): "
        "'ghost' is not a participant"
    )
    server = ViewServer(db, cwd=workdir)
    try:
        page.goto(server.url)
        row = page.locator(f"tr:has(a[href*='{cid}'])")
        row.wait_for()
        page.wait_for_function(
            "cid => Array.from(document.querySelectorAll('tr')).some("
            "tr => tr.textContent.includes(cid) && tr.textContent.includes('damaged'))",
            arg=cid,
        )
        assert said in row.inner_text()
        page.goto(f"{server.base}/run/{cid}")
        page.wait_for_selector("#run-status.damaged")
        assert page.inner_text("#run-status") == "damaged"
        assert page.inner_text("#run-end") == said
        shown = page.evaluate(
            "Array.from(document.querySelectorAll('#transcript li')).map(li => li.dataset.n)"
        )
        assert shown == ["1", "2"]  # the turns before the break only
        assert page.errors == []
    finally:
        server.stop()
