"""A folder given where a file is expected (`--agents`, `--plugin`) is said to be a
folder; it used to be reported as `no such file`, though it is there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.limits import run_limited

FLOW = """\
speakers a, b
round_robin a, b
max_turns 2
"""


@pytest.mark.parametrize("option", ["--agents", "--plugin"])
def test_a_folder_given_for_a_file_is_said_to_be_one(tmp_path: Path, option: str) -> None:
    (tmp_path / "f.flow").write_text(FLOW)
    (tmp_path / "s.json").write_text(json.dumps({"kickoff": "hi", "script": {"b": ["ok"]}}))
    (tmp_path / "agents.py").mkdir()
    result = run_limited(
        ["run", "f.flow", "--script", "s.json", option, "agents.py", "--db", ":memory:"],
        cwd=tmp_path,
    )
    assert not result.timed_out and not result.traceback, result.stderr
    assert result.returncode == 2, result.stderr
    label = "agents.py" if option == "--agents" else "--plugin agents.py"
    assert result.stderr == f"flowc run: error: {label}: a folder, not a file\n"
