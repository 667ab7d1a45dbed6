"""Real agents: `flowc run --agents MODULE.py`, humans at the terminal, the AG2 bridge."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

import flowc
from flowc.cli import main
from flowc.runtime.script import parse_script
from flowc.runtime.script_run import run_script
from flowc.runtime.target import RunTarget

FLOW = """
speaker user: human
speaker drafter
speaker reviewer { tool approve sets done = true }
start user
max_turns 8
context done = false
when context.done == true then terminate "approved"
when from user then drafter
when from drafter then reviewer
when from reviewer then user
"""

AGENTS = """
from flowc.runtime import Reply, ToolCall

async def drafter(turn):
    return f"draft for: {turn.text}"

async def reviewer(turn):
    if "again" in turn.history[0].event_data.get("text", "") or len(turn.history) > 3:
        return Reply("Approved", (ToolCall("approve", set={"done": True}),))
    return "Needs work"

AGENTS = {"drafter": drafter, "reviewer": reviewer}
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "f.flow").write_text(FLOW)
    (tmp_path / "agents.py").write_text(AGENTS)
    (tmp_path / "kick.json").write_text(json.dumps({"kickoff": "Write on TLS"}))
    return tmp_path


class TerminalInput(io.StringIO):
    """Typed lines, as a terminal (``isatty``) would give them."""

    def isatty(self) -> bool:
        return True


def test_agents_module_with_a_human_at_the_terminal(
    files: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", TerminalInput("Try again\n"))
    code = main(
        [
            "run",
            str(files / "f.flow"),
            "--agents",
            str(files / "agents.py"),
            "--script",
            str(files / "kick.json"),
            "--json",
            "--db",
            ":memory:",
        ]
    )
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert code == 0, captured.err
    assert [t["speaker"] for t in out["turns"]] == [
        "user",
        "drafter",
        "reviewer",
        "user",
        "drafter",
        "reviewer",
    ]
    assert out["close_reason"] == "approved" and out["context_vars"] == {"done": True}
    assert "user> " in captured.err and "Needs work" in captured.err


def test_with_a_script_an_unscripted_human_stalls_the_run_when_stdin_is_no_terminal(
    files: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # piped input is not a person: with --script, a human with no scripted turn left is
    # asked only at a terminal; otherwise the run stops on them (stalled_on)
    monkeypatch.setattr("sys.stdin", io.StringIO("Try again\n"))
    code = main(
        [
            "run",
            str(files / "f.flow"),
            "--agents",
            str(files / "agents.py"),
            "--script",
            str(files / "kick.json"),
            "--json",
            "--db",
            ":memory:",
        ]
    )
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert code == 1
    assert [t["speaker"] for t in out["turns"]] == ["user", "drafter", "reviewer"]
    assert out["stalled_on"] == "user" and out["close_reason"] is None
    assert "user> " not in captured.err


def test_scripted_and_real_speakers_combine(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (files / "s.json").write_text(
        json.dumps({"kickoff": "Write on TLS", "script": {"user": ["again please"]}})
    )
    code = main(
        [
            "run",
            str(files / "f.flow"),
            "--agents",
            str(files / "agents.py"),
            "--script",
            str(files / "s.json"),
            "--json",
            "--db",
            ":memory:",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [t["speaker"] for t in out["turns"]] == [
        "user",
        "drafter",
        "reviewer",
        "user",
        "drafter",
        "reviewer",
    ]
    assert out["close_reason"] == "approved"


def test_a_speaker_is_scripted_or_real_not_both(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (files / "s.json").write_text(json.dumps({"kickoff": "x", "script": {"drafter": ["d"]}}))
    assert (
        main(
            [
                "run",
                str(files / "f.flow"),
                "--agents",
                str(files / "agents.py"),
                "--script",
                str(files / "s.json"),
                "--db",
                ":memory:",
            ]
        )
        == 1
    )
    assert "drafter: both scripted and given as agents" in capsys.readouterr().err


def test_agents_module_must_define_agents(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "none.py").write_text("X = 1\n")
    assert (
        main(["run", str(files / "f.flow"), "--agents", str(files / "none.py"), "--db", ":memory:"])
        == 2
    )
    assert "define AGENTS" in capsys.readouterr().err


def test_the_ag2_bridge_drives_an_ag2_agent_on_flowcs_hub() -> None:
    pytest.importorskip("ag2.network")
    from ag2 import Agent
    from ag2.events import ToolCallEvent
    from ag2.network import Handoff as AG2Handoff

    from flowc.ag2 import agent_callable
    from tests.runtime.ag2_harness import ScriptedConfig

    src = """
    speaker user: human
    speaker triage { tool escalate hands off to security }
    speaker security
    start user
    when from user then triage
    when from security then terminate "secured"
    """
    triage = Agent(
        "triage",
        config=ScriptedConfig(
            [ToolCallEvent(name="escalate", arguments='{"reason": "hacked"}')], "Escalating."
        ),
    )

    @triage.tool
    async def escalate(reason: str = "") -> AG2Handoff:
        return AG2Handoff(target="security", reason=reason)

    security = Agent("security", config=ScriptedConfig("Locked."))
    flow = flowc.compile_flow(src)
    result = asyncio.run(
        run_script(
            RunTarget.from_compiled(flow),
            parse_script({"kickoff": "My account"}),
            agents={"triage": agent_callable(triage), "security": agent_callable(security)},
        )
    )
    out = result.to_json()
    assert [t["speaker"] for t in out["turns"]] == ["user", "triage", "security"]
    assert out["turns"][1]["routing"] == {
        "kind": "handoff",
        "tool": "escalate",
        "reason": "hacked",
        "target": "security",
    }
    assert out["close_reason"] == "secured"
