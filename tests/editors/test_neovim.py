"""One real editor: Neovim, headless (Debian's package, 0.7 or later), set up exactly as
``docs/editors.md`` says (its Lua block is the ``init.lua``: the file type, then the built-in
LSP client attached to ``flowc lsp``), opens a flow with a priority trap and receives the W204
warning on the rule's line, with the findings ``flowc check`` reports for the same file
(``tests/editors/nvim/report.lua`` waits for them and writes them out)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPORT = Path(__file__).resolve().parent / "nvim" / "report.lua"

#: `priority 100` sorts the terminate rule after the others, which always match: it never fires
TRAP = """\
speaker user: human
speaker drafter
speaker reviewer {
  tool approve sets approved = true
}
start user
max_turns 12
when from user     then drafter
when context.approved == true then terminate "approved" priority 100
when from drafter  then reviewer
when from reviewer then drafter
"""
TRAP_LINE = 8  # 0-based, as Neovim counts

WARN = 2  # vim.diagnostic.severity.WARN


@pytest.fixture(scope="module")
def nvim() -> str:
    path = shutil.which("nvim")
    if path is None:
        pytest.skip("Neovim is not installed (make setup installs it: scripts/deps/neovim.sh)")
    return path


def documented_init() -> str:
    """The first Lua block of the Neovim section of docs/editors.md."""
    doc = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Neovim") :]
    section = section[: section.index("\n## ", 1)]
    match = re.search(r"```lua\n(.*?)```", section, re.S)
    assert match, "docs/editors.md: no Lua block in the Neovim section"
    return match.group(1)


def run_nvim(nvim: str, tmp_path: Path, flow: Path) -> dict[str, object]:
    out = tmp_path / "diagnostics.json"
    init = tmp_path / "init.lua"
    init.write_text(documented_init(), encoding="utf-8")
    flowc = Path(sys.executable).parent / "flowc"  # the `flowc` the documented set-up runs
    assert flowc.exists(), f"no flowc program beside {sys.executable}"
    env = {
        **os.environ,
        "PATH": f"{flowc.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "FLOWC_NVIM_OUT": str(out),
        # nothing of the user's Neovim set-up is read, and nothing is written outside tmp_path
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    proc = subprocess.run(
        [
            nvim,
            "--headless",
            "-u",
            str(init),
            "-i",
            "NONE",
            "-n",
            "-c",
            f"luafile {REPORT}",
            str(flow),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert out.exists(), (
        f"nvim wrote nothing (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    )
    result: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
    return result


def test_neovim_shows_the_priority_trap(nvim: str, tmp_path: Path) -> None:
    flow = tmp_path / "trap.flow"
    flow.write_text(TRAP, encoding="utf-8")
    result = run_nvim(nvim, tmp_path, flow)
    assert result.get("arrived") is True, result
    assert result["filetype"] == "flow" and result["commentstring"] == "# %s"
    assert result["clients"] == ["flowc"]
    diagnostics = result["diagnostics"]
    assert isinstance(diagnostics, list)
    (trap,) = [d for d in diagnostics if d["code"] == "W204"]
    assert trap["lnum"] == TRAP_LINE and trap["col"] == 0
    assert trap["end_col"] == len(TRAP.splitlines()[TRAP_LINE])
    assert trap["severity"] == WARN and trap["source"] == "flowc"
    # what `flowc check` finds in the same file, no more, no less, in the same words
    check = subprocess.run(
        [sys.executable, "-m", "flowc", "check", "--format", "json", str(flow)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = json.loads(check.stdout)
    assert sorted(str(d["code"]) for d in diagnostics) == sorted(f["code"] for f in report)
    (expected,) = [f for f in report if f["code"] == "W204"]
    assert expected["location"]["row"] == TRAP_LINE + 1
    assert expected["message"] in str(trap["message"])
