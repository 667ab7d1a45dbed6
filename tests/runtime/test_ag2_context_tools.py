"""AG2 tools that write context through ``ChannelInject`` work on flowc's hub."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("ag2.network")

from flowc.cli import main

AGENTS = Path(__file__).parent / "agents"


def test_set_context_in_an_ag2_tool_routes_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "kickoff.json"
    script.write_text(json.dumps({"kickoff": "Write a haiku on TLS"}))
    code = main(
        [
            "run",
            str(AGENTS / "review_plain.flow"),
            "--agents",
            str(AGENTS / "ag2_context.py"),
            "--script",
            str(script),
            "--json",
            "--db",
            ":memory:",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert [t["speaker"] for t in out["turns"]] == ["user", "drafter", "reviewer"]
    # the drafter's tool read the state (rounds 0 -> 1) and deleted a key; the reviewer's
    # `approve` wrote done = true, which the first rule routed on in the same fold
    assert out["context_vars"] == {"done": True, "rounds": 1}
    assert out["close_reason"] == "approved"
    assert out["turn_count"] == 3
