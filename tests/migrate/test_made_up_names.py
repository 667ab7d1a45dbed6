"""Speakers migrate makes up (the person who sends the task, the selector speakers) are
named free of every agent's name and of each other; classic ``manual`` selection reads only
the number; values and files migrate cannot read are refused with what is wrong."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main
from flowc.dsl import nodes as n
from flowc.dsl.parser import parse_source
from flowc.migrate import migrate_source
from flowc.source import SourceFile

CORPUS = Path(__file__).resolve().parent / "corpus"


def _flow(name: str, text: str) -> tuple[n.Flow, Any]:
    result = migrate_source(SourceFile(name, text))
    assert result.text is not None, [d.message for d in result.findings]
    flow, diags = parse_source(SourceFile("out.flow", result.text))
    assert not diags, diags
    return flow, result


def _speakers(flow: n.Flow) -> dict[str, bool]:
    """Each declared speaker (a name declared twice fails here) and whether it is a person."""
    out: dict[str, bool] = {}
    for s in flow.of_type(n.SpeakerDecl):
        assert s.name.value not in out, f"{s.name.value} declared twice"
        out[s.name.value] = s.human
    return out


def _start(flow: n.Flow) -> str:
    (start,) = flow.of_type(n.StartDecl)
    return str(start.speaker.value)


# ── the person who sends the task ─────────────────────────────────────────────

GROUP = """
from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group.patterns import {pattern}

llm = LLMConfig(api_type="openai", model="gpt-4o-mini")
{agents}
pattern = {pattern}(initial_agent=a0, agents=[{names}])
result, ctx, last = initiate_group_chat(pattern=pattern, messages="Hello", max_rounds=6)
"""

SWARM = """
from autogen import ConversableAgent
from autogen.agentchat.contrib.swarm_agent import initiate_swarm_chat, AfterWork, register_hand_off

{agents}
register_hand_off(a0, [AfterWork(a1)])
register_hand_off(a1, [AfterWork(a0)])
result, ctx, last = initiate_swarm_chat(initial_agent=a0, agents=[{names}], messages="Hello", max_rounds=6)
"""


def _group(template: str, names: list[str], pattern: str = "RoundRobinPattern") -> str:
    agents = "\n".join(
        f'a{i} = ConversableAgent(name="{a}", llm_config={{"model": "x"}}, system_message="{a}.")'
        for i, a in enumerate(names)
    )
    listed = ", ".join(f"a{i}" for i in range(len(names)))
    return template.format(agents=agents, names=listed, pattern=pattern)


@pytest.mark.parametrize("template", [GROUP, SWARM], ids=["group", "swarm"])
@pytest.mark.parametrize(
    "names", [["user", "task_user"], ["task_user", "user"], ["user", "task_user", "task_user_"]]
)
def test_the_task_sender_is_no_agent(template: str, names: list[str]) -> None:
    """ag2's temporary ``_User`` sends the task: a person of its own, every agent kept (an
    agent named ``task_user`` used to be replaced by it, and routed as the person)."""
    flow, _ = _flow("t.py", _group(template, names))
    speakers = _speakers(flow)
    start = _start(flow)
    assert start not in names and speakers[start] is True
    assert all(speakers[a] is False for a in names)
    # the task goes to the initial agent, the agents hand over among themselves, nobody
    # hands back to the person (ag2 0.9.10: _User, then the initial agent, then the ring)
    routes = {
        (r.cond.speakers[0].value, r.target.speaker.value)
        for r in flow.of_type(n.Rule)
        if isinstance(r.cond, n.FromCond) and isinstance(r.target, n.SpeakerTarget)
    }
    assert (start, names[0]) in routes and (names[0], names[1]) in routes
    assert not any(to == start for _, to in routes)
    for scenario in flow.of_type(n.Scenario):
        said = [t.speaker.value for t in scenario.items if isinstance(t, n.SayTurn)]
        assert said[:4] == [start, names[0], names[1], names[2 % len(names)]]


def test_the_group_managers_selector_is_no_agent() -> None:
    """AutoPattern's selector speaker beside an agent named ``chat_manager``."""
    flow, _ = _flow("t.py", _group(GROUP, ["chat_manager", "writer"], "AutoPattern"))
    speakers = _speakers(flow)
    assert set(speakers) == {"user", "chat_manager", "writer", "chat_manager_"}
    assert {t.name.value for s in flow.of_type(n.SpeakerDecl) for t in s.tools} >= {
        "transfer_to_chat_manager"
    }


# ── classic selector speakers ─────────────────────────────────────────────────

CLASSIC = """
from autogen import AssistantAgent, UserProxyAgent, GroupChat, GroupChatManager
user = UserProxyAgent("user", human_input_mode="NEVER", code_execution_config=False)
a = AssistantAgent("{a}", llm_config={{"model": "x"}})
b = AssistantAgent("writer", llm_config={{"model": "x"}})
gc = GroupChat(agents=[user, a, b], messages=[], max_round=5, speaker_selection_method="{method}")
manager = GroupChatManager(groupchat=gc, {manager}llm_config={{"model": "x"}})
user.initiate_chat(manager, message="Go.")
"""


@pytest.mark.parametrize(
    ("agent", "manager", "selector"),
    [
        ("chat_manager", "", "chat_manager_"),
        ("planner", 'name="writer", ', "writer_"),
        ("user_", 'name="user", ', "user__"),
    ],
)
@pytest.mark.parametrize("method", ["auto", "manual"])
def test_the_classic_selector_is_no_agent(
    agent: str, manager: str, selector: str, method: str
) -> None:
    """A selector named after the manager, beside an agent of that name."""
    text = CLASSIC.format(a=agent, manager=manager, method=method)
    flow, result = _flow("t.py", text)
    speakers = _speakers(flow)
    assert set(speakers) == {"user", agent, "writer", selector}
    assert speakers[selector] is (method == "manual")
    assert any(f"`{selector}`" in d.message for d in result.findings)


def test_studio_selector_is_no_agent() -> None:
    data = json.loads((CORPUS / "studio_travel.json").read_text(encoding="utf-8"))
    text = json.dumps(data).replace('"travel_planner"', '"chat_manager"')
    flow, _ = _flow("s.json", text)
    assert "chat_manager_" in _speakers(flow) and "chat_manager" in _speakers(flow)


# ── AgentChat selector speakers ───────────────────────────────────────────────


def _selector_team(names: list[str]) -> str:
    agent = "autogen_agentchat.agents.AssistantAgent"
    return json.dumps(
        {
            "provider": "autogen_agentchat.teams.SelectorGroupChat",
            "component_type": "team",
            "config": {
                "participants": [
                    {"provider": agent, "config": {"name": a, "system_message": "x"}} for a in names
                ],
                "termination_condition": {
                    "provider": "autogen_agentchat.conditions.MaxMessageTermination",
                    "config": {"max_messages": 6},
                },
                "selector_prompt": "pick",
                "allow_repeated_speaker": False,
            },
        }
    )


@pytest.mark.parametrize(
    "names",
    [
        ["selector", "user", "team_selector"],
        ["user", "task_user", "selector_after_user"],
        ["user", "task_sender", "writer"],
    ],
)
def test_agentchat_selectors_are_no_agents(names: list[str]) -> None:
    flow, _ = _flow("t.json", _selector_team(names))
    speakers = _speakers(flow)
    made_up = set(speakers) - set(names)
    assert len(speakers) == len(names) + 1 + len(names) + 1  # sender, selectors
    assert all(speakers[a] is False for a in names)
    assert [s for s in made_up if speakers[s]] == [_start(flow)]


# ── classic manual selection reads the number only ────────────────────────────


def test_manual_selection_reads_only_the_number() -> None:
    """ag2 0.9.10 reads ``int(answer)``: ``3`` is the third agent (``writer``) even when
    an agent is named ``3``, and a name is no answer."""
    flow, _ = _flow("m.py", CLASSIC.format(a="3", manager="", method="manual"))
    routes: dict[str, list[str]] = {}
    for r in flow.of_type(n.Rule):
        if isinstance(r.cond, n.AndCond) and isinstance(r.target, n.SpeakerTarget):
            said = r.cond.items[-1]
            assert isinstance(said, n.CallCond)
            pattern = str(said.args[0].value.value)
            for answer in ("1", "2", "3", " 3 ", "+03", "0_3", "user", "writer", "3 3", "x"):
                if re.search(pattern, answer):
                    routes.setdefault(answer, []).append(r.target.speaker.value)
    assert routes == {
        "1": ["user"],
        "2": ["3"],
        "3": ["writer"],
        " 3 ": ["writer"],
        "+03": ["writer"],
        "0_3": ["writer"],
    }


# ── values and files migrate cannot read ──────────────────────────────────────


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[Any]]:
    code = main(["migrate", *args, "--format", "json"])
    out, err = capsys.readouterr()
    return code, out, json.loads(err) if err.strip() else []


def test_an_unknown_selection_method_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ag2 raises ValueError for it: no stand-in, nothing written, the allowed values named."""
    path = tmp_path / "bogus.py"
    path.write_text(CLASSIC.format(a="planner", manager="", method="bogus"), encoding="utf-8")
    code, out, findings = run([str(path)], capsys)
    assert code == 2 and out == ""
    (f,) = findings
    assert f["code"] == "M001" and f["location"] == {"row": 6, "column": 88}
    assert "'bogus'" in f["message"] and "stands in" not in f["message"]
    assert all(repr(m) in f["message"] for m in ("auto", "manual", "random", "round_robin"))


@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_a_yaml_file_is_not_read_as_python(
    suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"team{suffix}"
    path.write_text("provider: autogen_agentchat.teams.RoundRobinGroupChat\n", encoding="utf-8")
    code, out, findings = run([str(path)], capsys)
    assert code == 2 and out == ""
    (f,) = findings
    assert "YAML file, not a format migrate reads" in f["message"]
    assert "Python" in f["message"] and "AgentChat component JSON" in f["message"]
    assert "does not parse" not in f["message"]


@pytest.mark.parametrize(("text", "kind"), [("[]", "an array"), ('"x"', "a string")])
def test_json_that_is_no_object(
    text: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "team.json"
    path.write_text(text, encoding="utf-8")
    code, out, findings = run([str(path)], capsys)
    assert code == 2 and out == ""
    (f,) = findings
    assert f"expected a JSON object at `$` (the top level), got {kind}" in f["message"]
    assert "provider" not in f["message"]
