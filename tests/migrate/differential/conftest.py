"""The throw-away virtual environments of the differential harness.

Each pinned old framework is installed once into ``$FLOWC_DIFF_CACHE`` (default
``~/.cache/flowc-differential``), in a directory named by its pinned requirement, and
reused while its ``.ok`` marker is there. When pip cannot install it (no registry), the
tests fail under ``CI=true`` and are skipped elsewhere, with pip's last words.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLASSIC_PIN = "ag2[openai]==0.9.10"
AGENTCHAT_PIN = "autogen-agentchat==0.7.5 autogen-ext[openai]==0.7.5"

# what the harness measured, shown in the terminal summary
TIMINGS: dict[str, float] = {}


def _cache_root() -> Path:
    env = os.environ.get("FLOWC_DIFF_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "flowc-differential"


def old_framework_python(pin: str) -> Path:
    """The python of a venv holding exactly ``pin``; created on first use (under a file
    lock: two test runs on one machine never build, or remove, the same venv at once)."""
    venv = _cache_root() / re.sub(r"[^A-Za-z0-9.=_-]+", "_", pin)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / (venv.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _made(pin, venv)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _made(pin: str, venv: Path) -> Path:
    python = venv / "bin" / "python"
    ok = venv / ".ok"
    if ok.exists() and python.exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
    if made.returncode == 0:
        made = subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                *pin.split(),
            ],
            capture_output=True,
            text=True,
        )
    if made.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        tail = (made.stderr or made.stdout).strip().splitlines()[-3:]
        reason = f"cannot install {pin} in a throw-away venv: " + " / ".join(tail)
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason)
        pytest.skip(reason)
    ok.write_text(pin + "\n", encoding="utf-8")
    TIMINGS[f"venv {pin}"] = time.monotonic() - started
    return python


@pytest.fixture(scope="session")
def classic_python() -> Path:
    return old_framework_python(CLASSIC_PIN)


@pytest.fixture(scope="session")
def agentchat_python() -> Path:
    return old_framework_python(AGENTCHAT_PIN)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        terminalreporter.write_sep("-", "differential harness timings")
        for name, seconds in TIMINGS.items():
            terminalreporter.write_line(f"{name}: {seconds:.1f}s")
