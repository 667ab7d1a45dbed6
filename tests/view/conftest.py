"""Fixtures of the `flowc view` tests: run databases written by the real `flowc run`, the
real `flowc view` server in a subprocess, and Debian's chromium driven by Playwright (as
in tests/render/test_browser.py: no browser download)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# the view tests' token, and a script of examples/context_routing.flow (a tool that
# routes, a human's reply, a tool that ends the run)
from tests.stored_runs import SCRIPT as SCRIPT
from tests.stored_runs import TOKEN as TOKEN

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts" / "view"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_playwright = None  # type: ignore[assignment]

needs_browser = [
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium is not installed (scripts/deps/browser.sh)"
    ),
    pytest.mark.skipif(
        sync_playwright is None, reason="playwright is not installed (pip install -e '.[dev]')"
    ),
    pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed"),
]


def flowc(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m flowc ARGS`` in ``cwd``, with this worktree's flowc."""
    return subprocess.run(
        [sys.executable, "-m", "flowc", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ViewServer:
    """`flowc view --no-open` in a subprocess; ``url`` is the URL it printed."""

    def __init__(
        self, db: Path, *args: str, port: int = 0, token: str | None = None, cwd: Path
    ) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("DISPLAY", None)
        if token is not None:
            env["FLOWC_VIEW_TOKEN"] = token
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flowc",
                "view",
                "--db",
                str(db),
                "--no-open",
                "--port",
                str(port),
                *args,
            ],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:(\d+)(/\S*)\?token=(\S+))", line)
        if found is None:
            self.stop()
            raise AssertionError(f"flowc view printed {line!r}; stderr: {self.proc.stderr.read()}")  # type: ignore[union-attr]
        self.url = found.group(1)
        self.port = int(found.group(2))
        self.token = found.group(4)
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="flowc-view-") as folder:
        yield Path(folder)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if sync_playwright is None or CHROMIUM is None:
        pytest.skip("chromium or playwright is missing")
    with tempfile.TemporaryDirectory(prefix="flowc-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.errors = errors
    try:
        yield page
    finally:
        page.close()


def wait_for(predicate: Any, timeout: float = 20.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


#: a flow whose two agents take turns until the cap; each turn waits for the test
LIVE_FLOW = """speaker user: human
speaker writer
speaker critic
start user
max_turns 9
when from user then writer
when from writer then critic
when from critic then writer
"""
LIVE_TURNS = 9

#: each agent's turn k (1, 2, ... over both agents) waits for the file go-k
LIVE_AGENTS = """
import asyncio, os
from pathlib import Path

GATE = Path(os.environ["GATE_DIR"])
taken = 0

async def _wait():
    global taken
    taken += 1
    while not (GATE / f"go-{taken}").exists():
        await asyncio.sleep(0.02)
    return taken

async def writer(turn):
    k = await _wait()
    return f"draft {k}"

async def critic(turn):
    k = await _wait()
    return f"critique {k}"

AGENTS = {"writer": writer, "critic": critic}
"""


def start_live_run(workdir: Path, db: Path | str) -> tuple[Path | str, subprocess.Popen[str], Path]:
    """A `flowc run` of :data:`LIVE_FLOW` in a subprocess writing ``db``; each agent turn k
    waits for the file ``gate/go-k``. Returns once the kickoff is in the store."""
    gate = workdir / "gate"
    gate.mkdir()
    (workdir / "live.flow").write_text(LIVE_FLOW, encoding="utf-8")
    (workdir / "agents.py").write_text(LIVE_AGENTS, encoding="utf-8")
    (workdir / "live.yaml").write_text('kickoff: "write a poem"\n', encoding="utf-8")
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flowc",
            "run",
            "live.flow",
            "--script",
            "live.yaml",
            "--agents",
            "agents.py",
            "--db",
            str(db),
        ],
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GATE_DIR": str(gate)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # the run's first turn (the kickoff) is committed before any agent waits
    wait_for(
        lambda: (
            flowc("log", "--json", "--db", str(db), cwd=workdir).stdout.strip() not in ("", "[]")
        ),
        what="the run to begin",
    )
    return db, run, gate


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A finished run of :data:`SCRIPT` written by the real `flowc run`, and its `flowc log
    --json`."""
    import json

    folder = tmp_path_factory.mktemp("view-run")
    (folder / "s.yaml").write_text(SCRIPT, encoding="utf-8")
    db = folder / "runs.db"
    flow = ROOT / "examples" / "context_routing.flow"
    done = flowc("run", str(flow), "--script", "s.yaml", "--db", str(db), cwd=folder)
    assert done.returncode == 0, done.stderr
    log = json.loads(flowc("log", "last", "--json", "--db", str(db), cwd=folder).stdout)
    return db, log


@pytest.fixture
def client(run: tuple[Path, dict[str, Any]]) -> Any:
    """Starlette's test client of a `flowc view` app on :func:`run`'s database."""
    from starlette.testclient import TestClient

    from flowc.view.server import ViewSettings, make_app

    app = make_app(ViewSettings(str(run[0]), TOKEN, poll=0.01))
    return TestClient(app, base_url="http://127.0.0.1:8123")  # type: ignore[arg-type]


#: a page script that counts every turn event the page receives, duplicates included
#: (in ``window.__turnEvents``, by event id)
COUNT_TURN_EVENTS = """(() => {
    const Real = window.EventSource;
    window.__turnEvents = [];
    window.EventSource = function (url) {
        const source = new Real(url);
        source.addEventListener('turn', ev => window.__turnEvents.push(Number(ev.lastEventId)));
        return source;
    };
    window.EventSource.prototype = Real.prototype;
    Object.assign(window.EventSource, {CONNECTING: 0, OPEN: 1, CLOSED: 2});
})()"""
