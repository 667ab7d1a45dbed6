"""`flowc view`'s run page in Firefox and WebKit, as the Chromium tests check it there
(tests/view/test_view_browser.py): Debian's Firefox ESR driven over Marionette by
Mozilla's own client (marionette-driver), and WebKitGTK's MiniBrowser driven by
WebKitWebDriver through Selenium under a virtual display (Xvfb). Neither downloads a
browser. Each engine starts once for the module; each test runs against the real
`flowc view` server and runs written by the real `flowc run` (issue 28, point 4).

WebDriver classic cannot see a page error thrown before its first command, so each test
checks that run.js finished its work (the data-* attributes it sets last, every entry
drawn) and counts the errors thrown after load (``window.__errors``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.view.conftest import (
    LIVE_TURNS,
    ROOT,
    SCRIPT,
    ViewServer,
    flowc,
    free_port,
    start_live_run,
)
from tests.view.test_view_browser import (
    HOSTILE_FLOW,
    HOSTILE_KICKOFF,
    HOSTILE_SAY,
    HOSTILE_SCRIPT,
    WHY_SHOWN,
    assert_why_equals_the_cli,
    finished_run,
)

try:
    from marionette_driver.marionette import Marionette
except ImportError:  # pragma: no cover - the dev extra installs it
    Marionette = None

try:
    from selenium import webdriver
    from selenium.webdriver.webkitgtk.options import Options as WebKitOptions
    from selenium.webdriver.webkitgtk.service import Service as WebKitService
except ImportError:  # pragma: no cover - the dev extra installs it
    webdriver = None  # type: ignore[assignment]

FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox")
WEBKIT_DRIVER = shutil.which("WebKitWebDriver")
MINIBROWSER = next(
    (
        str(p)
        for p in sorted(Path("/usr/lib").glob("*/webkit2gtk-4.*/MiniBrowser"))
        + sorted(Path("/usr/lib").glob("webkit2gtk-4.*/MiniBrowser"))
        if p.is_file()
    ),
    None,
)
XVFB = shutil.which("Xvfb")
ROUTING = ROOT / "examples" / "context_routing.flow"

pytestmark = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz `dot` is not installed"
)

#: counts the errors thrown on the page once it is loaded (set after each navigation)
COUNT_ERRORS = """
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });
window.addEventListener('unhandledrejection', function (e) {
    window.__errors.push('rejected: ' + String(e.reason));
});
"""

#: the transcript as the page shows it (as test_view_browser.transcript reads it)
TRANSCRIPT = """return Array.from(document.querySelectorAll('#transcript li')).map(li => ({
    n: Number(li.dataset.n),
    speaker: li.querySelector('.who').textContent,
    text: li.querySelector('.text').textContent,
    rule: li.querySelector('.rule').textContent,
}));"""


class Engine:
    """One browser, the few things these tests ask of it."""

    name: str

    def goto(self, url: str) -> None:
        raise NotImplementedError

    def js(self, script: str, *args: Any) -> Any:
        """The value of ``script`` (a function body: ``return ...``) run in the page."""
        raise NotImplementedError

    def click(self, css: str) -> None:
        raise NotImplementedError

    def open(self, url: str) -> None:
        """Go to ``url`` and count the errors thrown from then on."""
        self.goto(url)
        self.loaded()

    def loaded(self) -> None:
        """Wait for the page to be loaded; count the errors thrown from then on."""
        self.wait(lambda: self.js("return document.readyState") == "complete", "the page loaded")
        self.js(COUNT_ERRORS)

    def wait(self, predicate: Callable[[], Any], what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.05)
        said = self.js(
            "var c = document.getElementById('run-connection');"
            "return {connection: c ? c.textContent : null, errors: window.__errors || null};"
        )
        raise AssertionError(f"{self.name}: timed out waiting for {what}; the page: {said}")

    def wait_css(self, css: str, timeout: float = 30.0) -> None:
        self.wait(
            lambda: self.js("return document.querySelector(arguments[0]) !== null", css),
            f"`{css}`",
            timeout,
        )

    def text(self, css: str) -> str:
        return str(self.js("return document.querySelector(arguments[0]).textContent", css))


class Firefox(Engine):
    name = "firefox"

    def __init__(self, client: Any) -> None:
        self.client = client

    def goto(self, url: str) -> None:
        self.client.navigate(url)

    def js(self, script: str, *args: Any) -> Any:
        # sandbox=None: the page's own window (its expandos, e.g. window.__pwned)
        return self.client.execute_script(script, script_args=list(args), sandbox=None)

    def click(self, css: str) -> None:
        self.client.find_element("css selector", css).click()


class WebKit(Engine):
    name = "webkit"

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def goto(self, url: str) -> None:
        self.driver.get(url)

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def click(self, css: str) -> None:
        found = self.driver.find_element("css selector", css)
        # as a user does: the entry in view, and drawn, before the click. A transcript block
        # off the screen is not drawn (`content-visibility: auto`) until it comes into view,
        # and WebKit's driver checks the click at once: on a loaded machine it found the
        # entry "not interactable" (two frames, or 200 ms if the page draws no frame)
        self.driver.execute_async_script(
            "var done = arguments[arguments.length - 1];"
            "arguments[0].scrollIntoView({block: 'center'});"
            "var ok = false; function end() { if (!ok) { ok = true; done(); } }"
            "requestAnimationFrame(function () { requestAnimationFrame(end); });"
            "setTimeout(end, 200);",
            found,
        )
        found.click()


def _firefox() -> Iterator[Engine]:
    if FIREFOX is None:
        pytest.skip("Firefox is not installed (scripts/deps/browsers-more.sh)")
    if Marionette is None:
        pytest.skip("marionette-driver is not installed (pip install -e '.[dev]')")
    logs = tempfile.TemporaryDirectory(prefix="flowc-gecko-")
    client = Marionette(
        bin=FIREFOX,
        headless=True,
        host="127.0.0.1",
        port=free_port(),
        gecko_log=os.path.join(logs.name, "gecko.log"),  # not the working directory's
    )
    try:
        client.start_session()
        yield Firefox(client)
    finally:
        try:
            client.cleanup()  # ends the session, stops Firefox, removes its profile
        finally:
            logs.cleanup()


def _xvfb() -> tuple[subprocess.Popen[bytes], str]:
    """A virtual display on a free number (Xvfb picks it and writes it to a pipe)."""
    assert XVFB is not None
    read, write = os.pipe()
    proc = subprocess.Popen(
        [XVFB, "-displayfd", str(write), "-nolisten", "tcp", "-screen", "0", "1400x900x24"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    with os.fdopen(read) as pipe:
        number = pipe.readline().strip()
    if not number:
        proc.kill()
        proc.wait()
        raise AssertionError("Xvfb did not start")
    return proc, f":{number}"


def _webkit() -> Iterator[Engine]:
    if WEBKIT_DRIVER is None or MINIBROWSER is None:
        pytest.skip("WebKitWebDriver or MiniBrowser is missing (scripts/deps/browsers-more.sh)")
    if XVFB is None:
        pytest.skip("Xvfb is not installed (scripts/deps/browsers-more.sh)")
    if webdriver is None:
        pytest.skip("selenium is not installed (pip install -e '.[dev]')")
    display, number = _xvfb()
    try:
        options = WebKitOptions()
        options.binary_location = MINIBROWSER
        options.add_argument("--automation")
        env = {**os.environ, "DISPLAY": number}
        service = WebKitService(executable_path=WEBKIT_DRIVER, env=env)
        driver = webdriver.WebKitGTK(options=options, service=service)
        try:
            yield WebKit(driver)
        finally:
            driver.quit()
    finally:
        display.terminate()
        display.wait(timeout=10)


@pytest.fixture(scope="module", params=["firefox", "webkit"])
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    yield from _firefox() if request.param == "firefox" else _webkit()


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="flowc-engines-") as folder:
        yield Path(folder)


def assert_loaded_without_error(engine: Engine, turns: int) -> None:
    """run.js did all it does on load: every turn drawn, the run's end, the diagram in and
    its counts set, the findings shown; and no error was thrown since the page loaded."""
    done = engine.js(
        """return {
            ended: document.body.dataset.ended || null,
            findings: document.body.dataset.findings || null,
            marked: document.body.dataset.findingsMarked || null,
            entries: document.querySelectorAll('#transcript li').length,
            total: document.getElementById('turn-total').textContent,
            edges: document.querySelectorAll('#diagram g.edge').length,
            counted: document.querySelectorAll('#diagram g.edge[data-count]').length,
            errors: window.__errors,
        };"""
    )
    assert done["ended"] == "true", done
    assert done["findings"] in ("clean", "complete"), done
    assert done["marked"] == "true", done
    assert done["entries"] == turns and done["total"] == str(turns), done
    assert done["edges"] > 0 and done["counted"] == done["edges"], done
    assert done["errors"] == [], done


def test_a_finished_run_page_draws_every_turn_and_follows_the_selected_one(
    engine: Engine, workdir: Path
) -> None:
    db, log = finished_run(workdir, ROUTING, SCRIPT)
    turns, run_id = log["turns"], log["run_id"]
    server = ViewServer(db, run_id, cwd=workdir)
    try:
        engine.open(server.url)
        engine.wait_css("body[data-ended=true]")
        engine.wait_css("body[data-findings-marked=true]")
        shown = engine.js(TRANSCRIPT)
        assert [t["n"] for t in shown] == [t["number"] for t in turns]
        assert [t["speaker"] for t in shown] == [t["speaker"] for t in turns]
        assert [t["text"] for t in shown] == [t["text"] for t in turns]
        for row, turn in zip(shown, turns, strict=True):
            assert row["rule"].startswith(turn["decided_by"])
        ending = f"[terminate {json.dumps(log['close_reason'])}]"
        current_title = (
            "var g = document.querySelectorAll('#diagram g.node.current');"
            "return g.length === 1 ? g[0].querySelector('title').textContent : g.length;"
        )
        # the last turn is selected: the run's ending is the current node
        assert engine.js(current_title) == ending
        for turn in turns:
            n = turn["number"]
            engine.click(f"#turn-{n}")
            engine.wait_css(f"#why[data-turn='{n}']")
            assert engine.text("#state-turn") == str(n)
            assert engine.text("#state-speaker") == turn["speaker"]
            assert engine.text("#state-decided") == turn["decided_by"]
            assert engine.js(current_title) == (turn["next_speaker"] or ending)
            shown_why = engine.js(f"return ({WHY_SHOWN})();")
            why = assert_why_equals_the_cli(shown_why, db, run_id, n, workdir)
            assert why["decided_by"] == turn["decided_by"]
        assert_loaded_without_error(engine, len(turns))
    finally:
        server.stop()


def test_hostile_names_and_texts_run_no_script(engine: Engine, workdir: Path) -> None:
    (workdir / "h.flow").write_text(HOSTILE_FLOW, encoding="utf-8")
    db, log = finished_run(workdir, workdir / "h.flow", json.dumps(HOSTILE_SCRIPT), "h.json")
    server = ViewServer(db, cwd=workdir)
    try:
        engine.open(server.url)  # the runs list (and the token's cookie)
        engine.wait_css("#runs tbody tr")
        assert engine.text("#runs tbody td:nth-child(7)") == log["close_reason"]
        assert engine.js("return [typeof window.__pwned, window.__errors]") == ["undefined", []]
        engine.click("#runs a")
        engine.wait(
            lambda: engine.js("return location.pathname") == f"/run/{log['run_id']}",
            "the run's page",
        )
        engine.loaded()
        engine.wait_css("body[data-ended=true]")
        engine.wait_css("body[data-findings-marked=true]")
        shown = engine.js(TRANSCRIPT)
        assert [t["speaker"] for t in shown] == [t["speaker"] for t in log["turns"]]
        assert [t["text"] for t in shown] == [HOSTILE_KICKOFF, HOSTILE_SAY]
        for n in (1, 2):
            engine.click(f"#turn-{n}")
            engine.wait_css(f"#why[data-turn='{n}']")
            assert_why_equals_the_cli(
                engine.js(f"return ({WHY_SHOWN})();"), db, log["run_id"], n, workdir
            )
        names = engine.js(
            "return Array.from(document.querySelectorAll('#diagram g.node title'))"
            ".map(t => t.textContent);"
        )
        assert "<img src=x onerror=window.__pwned=1>" in names
        assert "<iframe srcdoc='<script>parent.__pwned=7</script>'>" in engine.text(
            "#transcript .tools"
        )
        assert (
            engine.js(
                "return document.querySelectorAll('#transcript img, #transcript script, "
                "#transcript svg, #transcript iframe, #transcript a, #diagram img, "
                "#diagram script, #diagram iframe, #state-context *, #why img, #why script, "
                "#why svg, #why iframe, #why a, #why b, #why i').length;"
            )
            == 0
        )
        time.sleep(0.3)  # an image's error handler would have run by now
        assert engine.js("return typeof window.__pwned") == "undefined"
        assert_loaded_without_error(engine, len(log["turns"]))
    finally:
        server.stop()


def test_a_live_run_streams_its_turns_without_reload(engine: Engine, workdir: Path) -> None:
    db, run, gate = start_live_run(workdir, workdir / "runs.db")
    run_id = json.loads(flowc("log", "--json", "--db", str(db), cwd=workdir).stdout)[0]["run_id"]
    server = ViewServer(db, run_id, cwd=workdir)
    numbers = (
        "return Array.from(document.querySelectorAll('#transcript li'))"
        ".map(li => Number(li.dataset.n));"
    )
    try:
        engine.open(server.url)
        engine.wait(lambda: engine.js(numbers) == [1], "the kickoff on the page")
        engine.js("window.__same = 'page';")
        for k in range(1, LIVE_TURNS):
            (gate / f"go-{k}").touch()
            engine.wait(lambda k=k: engine.js(numbers) == list(range(1, k + 2)), f"turn {k + 1}")
            assert engine.text("#state-turn") == str(k + 1)  # following the run
        assert run.wait(timeout=30) == 0
        engine.wait_css("body[data-ended=true]")
        log = json.loads(flowc("log", run_id, "--json", "--db", str(db), cwd=workdir).stdout)
        assert [t["text"] for t in engine.js(TRANSCRIPT)] == [t["text"] for t in log["turns"]]
        assert engine.js("return window.__same") == "page"  # never reloaded
        assert_loaded_without_error(engine, LIVE_TURNS)
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()
        server.stop()
