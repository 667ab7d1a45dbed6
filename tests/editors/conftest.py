"""The editor tests run the npm tools of the VS Code extension (``editors/vscode``): the
fixture installs them as ``make setup`` does (``scripts/deps/node-editors.sh``: ``npm ci``
from the committed lock file, only when it changed) and skips only where Node.js is missing."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VSCODE = ROOT / "editors" / "vscode"
BIN = VSCODE / "node_modules" / ".bin"


def run_node_tool(
    args: list[str], *, cwd: Path = VSCODE, timeout: float = 300, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command of the extension's npm tools (or ``node``), output captured as text."""
    return subprocess.run(
        args, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="session")
def npm_tools() -> Path:
    """``editors/vscode/node_modules/.bin``, installed from the lock file."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js/npm are not installed (make setup installs them)")
    proc = subprocess.run(
        ["bash", "scripts/deps/node-editors.sh"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    stamp = VSCODE / "node_modules" / ".flowc-lock.sha256"
    lock = hashlib.sha256((VSCODE / "package-lock.json").read_bytes()).hexdigest()
    installed = stamp.read_text(encoding="utf-8").strip() if stamp.exists() else ""
    assert installed == lock, f"npm ci failed in editors/vscode:\n{proc.stdout}\n{proc.stderr}"
    return BIN
