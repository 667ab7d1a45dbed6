"""The pre-commit hook runs `flowc check` on staged `.flow` files."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from flowc.cli import COMMAND_MODULES, main

HOOKS = Path(__file__).parent.parent.parent / ".pre-commit-hooks.yaml"


def test_hook_runs_flowc_check(tmp_path: Path) -> None:
    (hook,) = yaml.safe_load(HOOKS.read_text())
    assert hook["id"] == "flowc-check" and hook["language"] == "python"
    program, command = shlex.split(hook["entry"])
    assert program == "flowc"
    assert command in COMMAND_MODULES
    assert re.search(hook["files"], "flows/review.flow") and not re.search(
        hook["files"], "setup.py"
    )
    flow = tmp_path / "ok.flow"
    flow.write_text("speaker user: human\nspeaker bot\nwhen from user then bot\n")
    # pre-commit appends the staged file names to entry + args
    assert main([command, *hook["args"], str(flow)]) == 0
