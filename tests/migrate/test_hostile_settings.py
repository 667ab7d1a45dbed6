"""Settings of the wrong kind or value in an input of `flowc migrate` (a name holding a
carriage return, a bool where a number is expected, an edge or a handoff AgentChat would
refuse): each is a finding with its place, or a correct translation, never an internal
error and never dropped in silence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main
from flowc.migrate import MigrateResult, migrate_source
from flowc.source import SourceFile

CORPUS = Path(__file__).resolve().parent / "corpus"


def _json(name: str) -> Any:
    return json.loads((CORPUS / name).read_text(encoding="utf-8"))


def _migrate(name: str, text: str) -> MigrateResult:
    return migrate_source(SourceFile(name, text))


def _m001(result: MigrateResult) -> list[tuple[str, str | None, int | None]]:
    """Each M001: its message, JSON path and line."""
    return [
        (d.message, d.json_path, d.span.line if d.span is not None else None)
        for d in result.findings
        if d.code.id == "M001"
    ]


CLASSIC = """\
from autogen import AssistantAgent, GroupChat, GroupChatManager
w = AssistantAgent(name={name}, llm_config={{}})
r = AssistantAgent(name="reviewer", llm_config={{}})
gc = GroupChat(agents=[w, r], messages=[], max_round={cap}, speaker_selection_method="round_robin")
m = GroupChatManager(groupchat=gc, llm_config=False)
w.initiate_chat(m, message="hi")
"""


# ── names no .flow can write ──────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("written", "name"),
    [
        ('"wr\\\\riter"', "wr\\riter"),
        ('"wr\\\\r\\\\niter"', "wr\\r\\niter"),
        ('"wr`iter"', "wr`iter"),
        ('"wr\\\\ud800iter"', "wr\\ud800iter"),
    ],
    ids=["carriage return", "crlf", "backquote", "lone surrogate"],
)
def test_a_python_name_no_flow_can_write_is_an_m001_at_its_line_and_column(
    written: str, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = CLASSIC.format(name=written.replace("\\\\", "\\"), cap=5)
    result = _migrate("team.py", text)
    assert result.text is None
    [finding] = result.findings
    assert finding.code.id == "M001"
    assert f"the agent name {json.dumps(json.loads(chr(34) + name + chr(34)))}" in finding.message
    surrogate = "ud800" in name
    assert ("a lone surrogate is half of a character" in (finding.help or "")) == surrogate
    assert ("replace the backquote or line break" in (finding.help or "")) != surrogate
    assert finding.span is not None
    assert (finding.span.line, finding.span.column) == (2, 25)  # the string after `name=`


def test_a_json_name_with_a_carriage_return_is_an_m001_at_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _json("agentchat_round_robin.json")
    data["config"]["participants"][0]["config"]["name"] = "a\rb"
    path = tmp_path / "team.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["migrate", str(path), "--format", "json"]) == 2
    out, err = capsys.readouterr()
    [finding] = json.loads(err)
    assert out == "" and finding["code"] == "M001"
    assert finding["json_path"] == "config.participants[0].config.name"
    assert '"a\\rb"' in finding["message"]


# ── a bool or a bad number where a count is expected ─────────────────────────


AGENTCHAT_PY = """\
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_agentchat.conditions import MaxMessageTermination
a = AssistantAgent("a", model_client=None)
b = AssistantAgent("b", model_client=None)
team = RoundRobinGroupChat([a, b], termination_condition=MaxMessageTermination({messages}){more})
"""


def test_a_bool_max_messages_in_python_is_an_m001() -> None:
    result = _migrate("team.py", AGENTCHAT_PY.format(messages="True", more=""))
    assert result.text is not None
    assert [(m, line) for m, _, line in _m001(result)] == [
        ("MaxMessageTermination without a readable `max_messages`", 6)
    ]
    assert "max_turns" not in result.text


@pytest.mark.parametrize("value", [True, 0, -1, 2.5, "3"])
def test_a_json_max_messages_that_is_no_count_is_an_m001(value: object) -> None:
    data = _json("agentchat_round_robin.json")
    data["config"]["termination_condition"] = {
        "provider": "autogen_agentchat.conditions.MaxMessageTermination",
        "config": {"max_messages": value},
    }
    result = _migrate("team.json", json.dumps(data))
    assert result.text is not None
    assert _m001(result) == [
        (
            "MaxMessageTermination without a readable `max_messages`",
            "config.termination_condition",
            None,
        )
    ]


@pytest.mark.parametrize("value", [0, -2, True, "4", 1.5])
def test_a_team_max_turns_that_is_no_count_is_an_m001_and_not_claimed(value: object) -> None:
    data = _json("agentchat_round_robin.json")
    data["config"]["max_turns"] = value
    result = _migrate("team.json", json.dumps(data))
    assert result.text is not None and result.left_out
    assert _m001(result) == [
        (
            f"the team's `max_turns` ({json.dumps(value)}) is not a whole number of 1 or more; "
            "left out",
            "config.max_turns",
            None,
        )
    ]
    assert "team max_turns=" not in result.text  # the header claims no cap it did not use


def test_a_python_team_max_turns_that_is_no_count_is_an_m001() -> None:
    result = _migrate("team.py", AGENTCHAT_PY.format(messages="3", more=", max_turns=-2"))
    assert result.text is not None
    assert [m for m, _, _ in _m001(result)] == [
        "the team's `max_turns` (-2) is not a whole number of 1 or more; left out"
    ]
    assert "team max_turns=" not in result.text and "max_turns 3" in result.text


def test_a_null_team_max_turns_is_agentchat_s_default() -> None:
    data = _json("agentchat_round_robin.json")
    data["config"]["max_turns"] = None
    assert _m001(_migrate("team.json", json.dumps(data))) == []


def test_a_bool_turn_count_in_a_selection_function_is_a_finding() -> None:
    text = (CORPUS / "real_selection_partial.py").read_text(encoding="utf-8")
    assert "if len(messages) <= 1:" in text
    result = _migrate("sel.py", text.replace("if len(messages) <= 1:", "if len(messages) <= True:"))
    assert result.text is not None
    assert any(
        "`len(messages) <= True`" in message and line == 27 for message, _, line in _m001(result)
    )


@pytest.mark.parametrize(
    ("cap", "says"),
    [
        ("0", "`max_round` is 0, not a whole number of 1 or more; the flow has no turn cap"),
        ("True", "`max_round` is True, not a whole number of 1 or more; the flow has no turn cap"),
        ("rounds()", "`max_round` cannot be read statically; the flow has no turn cap"),
    ],
)
def test_a_max_round_that_is_no_count_says_what_it_is(cap: str, says: str) -> None:
    result = _migrate("team.py", CLASSIC.format(name='"writer"', cap=cap))
    assert result.text is not None
    assert [(m, line) for m, _, line in _m001(result)] == [(says, 4)]


# ── what AgentChat itself would refuse ───────────────────────────────────────


def test_an_always_true_text_test_in_a_selector_func_is_translated() -> None:
    text = (CORPUS / "agentchat_selector_func.py").read_text(encoding="utf-8")
    old = '"REVISE" in messages[-1].content'
    assert old in text
    result = _migrate("team.py", text.replace(old, '"" in messages[-1].content'))
    assert result.text is not None and _m001(result) == []


@pytest.mark.parametrize("value", [[], {}, None, 7, "most"])
def test_an_edge_activation_condition_that_is_neither_all_nor_any_is_an_m001(
    value: object,
) -> None:
    data = _json("agentchat_graphflow.json")
    edges = data["config"]["graph"]["nodes"]["A"]["edges"]
    assert edges[0]["activation_condition"] == "all"
    edges[0]["activation_condition"] = value
    result = _migrate("graph.json", json.dumps(data))
    assert result.text is not None
    assert _m001(result) == [
        (
            f"the edge `A` -> `B` has the `activation_condition` {json.dumps(value)}, neither "
            '"all" nor "any"; read as "all", AgentChat\'s default',
            "config.graph.nodes.A.edges[0].activation_condition",
            None,
        )
    ]


def test_two_handoffs_of_one_name_are_an_m001() -> None:
    data = _json("agentchat_json_swarm.json")
    handoffs = data["config"]["participants"][0]["config"]["handoffs"]
    assert [h["name"] for h in handoffs] == ["transfer_to_payer", "transfer_to_user"]
    handoffs[1]["name"] = "transfer_to_payer"
    result = _migrate("swarm.json", json.dumps(data))
    assert result.text is not None
    assert (
        "a second handoff named `transfer_to_payer` (to `user`) was left out: an agent's "
        "handoff names must be unique",
        "config.participants[0].config.handoffs[1]",
        None,
    ) in _m001(result)


@pytest.mark.parametrize("text", ["None", "5", "['x']"])
def test_a_text_mention_without_a_string_in_a_python_graph_is_an_m001(text: str) -> None:
    source = (CORPUS / "agentchat_graph_groups.py").read_text(encoding="utf-8")
    old = 'TextMentionTermination("SHIP IT", '
    assert old in source
    result = _migrate("graph.py", source.replace(old, f"TextMentionTermination({text}, "))
    assert result.text is not None
    assert [m for m, _, _ in _m001(result)] == ["TextMentionTermination without a `text`"]


# ── names bound as Python binds them ─────────────────────────────────────────


def test_a_group_chat_imported_under_another_name_is_read() -> None:
    text = CLASSIC.format(name='"writer"', cap=5)
    text = text.replace(
        "from autogen import AssistantAgent, GroupChat, GroupChatManager",
        "from autogen import AssistantAgent, GroupChat as GC, GroupChatManager as Manager",
    )
    text = text.replace("gc = GroupChat(", "gc = GC(").replace("GroupChatManager(", "Manager(")
    result = _migrate("team.py", text)
    assert result.text is not None, [d.message for d in result.findings]
    assert "when from writer then reviewer" in result.text
    assert "max_turns 5" in result.text


def test_an_alias_bound_again_is_not_followed() -> None:
    text = (
        CLASSIC.format(name='"writer"', cap=5)
        .replace(
            "from autogen import AssistantAgent, GroupChat, GroupChatManager",
            "from autogen import AssistantAgent, GroupChat as GC, GroupChatManager\nGC = dict",
        )
        .replace("gc = GroupChat(", "gc = GC(")
    )
    result = _migrate("team.py", text)
    assert result.text is None
    assert "no classic group chat found" in result.findings[0].message


def test_a_group_chat_class_of_the_file_s_own_is_not_ag2_s() -> None:
    text = (
        "from autogen import AssistantAgent\n"
        "class GroupChat:\n"
        "    def __init__(self, **kw): pass\n"
        "a = AssistantAgent(name='a', llm_config=False)\n"
        "b = AssistantAgent(name='b', llm_config=False)\n"
        "gc = GroupChat(agents=[a, b], messages=[], max_round=3)\n"
    )
    result = _migrate("team.py", text)
    assert result.text is None
    [finding] = result.findings
    assert finding.message == (
        "no classic group chat found: this `GroupChat` is a class the file defines itself, "
        "not AG2's"
    )
    assert finding.span is not None and finding.span.line == 6
