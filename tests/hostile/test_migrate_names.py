"""`flowc migrate` on agent names no `.flow` name can hold (issue 11, point 9), under limits.

A backquote or a line break in an agent's name used to end in exit 2 with "this is a bug in
flowc" (MigrateBug); now it is a clean M001 naming the agent. Any other character still
translates, as a backquoted name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.limits import run_limited

CORPUS = Path(__file__).resolve().parents[1] / "migrate" / "corpus"
LIMITS = {"memory_mib": 768, "cpu_seconds": 60, "wall_seconds": 90.0, "output_mib": 8}


def _team(tmp_path: Path, agent: str) -> Path:
    data = json.loads((CORPUS / "agentchat_round_robin.json").read_text(encoding="utf-8"))
    data["config"]["participants"][0]["config"]["name"] = agent
    path = tmp_path / "team.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _classic(tmp_path: Path, agent: str) -> Path:
    path = tmp_path / "chat.py"
    path.write_text(
        "from autogen import ConversableAgent, GroupChat, GroupChatManager\n"
        f"a = ConversableAgent({agent!r}, llm_config=False)\n"
        "b = ConversableAgent('plain', llm_config=False)\n"
        "gc = GroupChat(agents=[a, b], messages=[], max_round=5,\n"
        "               speaker_selection_method='round_robin')\n"
        "m = GroupChatManager(groupchat=gc, llm_config=False)\n"
        "a.initiate_chat(m, message='hi')\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("make", [_team, _classic], ids=["agentchat", "classic"])
@pytest.mark.parametrize("agent", ["we`ird", "line\nbreak"], ids=["backquote", "newline"])
def test_unspellable_agent_name_is_a_clean_m001(tmp_path: Path, make, agent: str) -> None:
    path = make(tmp_path, agent)
    result = run_limited(["migrate", str(path), "--format", "json"], **LIMITS)
    assert not result.timed_out and not result.traceback, result.stderr[-2000:]
    assert result.returncode == 2 and result.stdout == ""
    findings = json.loads(result.stderr)
    assert [f["code"] for f in findings] == ["M001"]
    message = findings[0]["message"]
    assert json.dumps(agent) in message and "no .flow name can hold" in message
    assert "bug in flowc" not in message and findings[0]["filename"] == str(path)


@pytest.mark.parametrize("make", [_team, _classic], ids=["agentchat", "classic"])
def test_any_other_character_translates_as_a_backquoted_name(tmp_path: Path, make) -> None:
    agent = "odd 'name' {50%} \"q\""
    path = make(tmp_path, agent)
    out = tmp_path / "out.flow"
    result = run_limited(["migrate", str(path), "-o", str(out)], **LIMITS)
    assert not result.traceback and result.returncode in (0, 1), result.stderr[-2000:]
    text = out.read_text(encoding="utf-8")
    assert f"speaker `{agent}`" in text
    compiled = run_limited(["compile", str(out)], **LIMITS)
    assert compiled.returncode == 0 and f'"{agent}"'.replace('"q"', '\\"q\\"') in compiled.stdout
