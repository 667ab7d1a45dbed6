"""The README's picture of `flowc view` (docs/img/view.png), made by this test: the page
of the demo's run (`make demo` runs examples/feedback_loop.flow with its script) in
headless Chromium, with a turn selected and its why panel shown, and the checker's
findings listed under the diagram.

The test always drives the page and takes the picture (into a temporary folder), so a
page that stops rendering fails here. With ``FLOWC_UPDATE_SCREENSHOT=1`` it writes the
picture to docs/img/view.png instead: review it, and commit it like code."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

from tests.view.conftest import ROOT, ViewServer, needs_browser
from tests.view.test_view_browser import finished_run, why_of

pytestmark = needs_browser

SCREENSHOT = ROOT / "docs" / "img" / "view.png"
#: the picture's size in the README, in CSS pixels, and the most bytes it may take
WIDTH, HEIGHT = 1200, 760
MAX_BYTES = 200_000


def test_the_readme_screenshot_of_a_run_page(workdir: Path, page: Any, tmp_path: Path) -> None:
    script = (ROOT / "examples" / "scripts" / "feedback_loop.yaml").read_text(encoding="utf-8")
    # run from a copy beside the database: the page's title is the flow's path as given
    flow = (ROOT / "examples" / "feedback_loop.flow").read_text(encoding="utf-8")
    (workdir / "feedback_loop.flow").write_text(flow, encoding="utf-8")
    db, log = finished_run(workdir, Path("feedback_loop.flow"), script)
    server = ViewServer(db, log["run_id"], cwd=workdir)
    try:
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
        page.goto(server.url)
        page.wait_for_selector("body[data-ended=true]")
        page.wait_for_selector("#diagram svg g.edge.taken")
        # the checker's findings listed and marked (not "Checking the flow...")
        page.wait_for_selector("body[data-findings-marked=true]")
        # turn 4: the reviewer sends the draft back; `context.done == true` did not fire
        shown = why_of(page, 4)
        assert [r["rule"] for r in shown["fired"]] == [log["turns"][3]["rule"]]
        assert shown["checked"] and "was false" in shown["checked"][0]["lines"][0]
        assert page.evaluate("document.querySelectorAll('#diagram g.edge.selected').length") == 1
        assert page.inner_text("#run-flow") == "feedback_loop.flow"
        assert page.errors == []
        update = os.environ.get("FLOWC_UPDATE_SCREENSHOT") == "1"
        out = SCREENSHOT if update else tmp_path / "view.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out))
    finally:
        server.stop()
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (WIDTH, HEIGHT)
    assert len(data) < MAX_BYTES, len(data)
