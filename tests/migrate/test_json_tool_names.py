"""Two tools of one name in one AgentChat agent are refused, never merged into one.

AgentChat refuses such an agent (``AssistantAgent``: "Tool names must be unique"; with
workbenches only the first tool of a name is ever called). One ``tool`` line cannot stand
for two tools, so the translation refuses the team with an M001 at the second tool's name,
as it refuses two participants of one name; it used to declare the first tool and drop the
second without a word.
"""

from __future__ import annotations

import json
import re
from typing import Any

from flowc.migrate import MigrateResult, migrate_source
from flowc.source import SourceFile

AGENT = "autogen_agentchat.agents.AssistantAgent"
HELP = (
    'AgentChat refuses such an agent ("Tool names must be unique"), and flowc would have to '
    "drop one of the tools: give each tool of the agent a name of its own"
)


def _tool(name: str, description: str) -> dict[str, Any]:
    return {
        "provider": "autogen_core.tools.FunctionTool",
        "config": {"name": name, "description": description, "source_code": "def f(): pass"},
    }


def _bench(*tools: dict[str, Any]) -> dict[str, Any]:
    return {"provider": "autogen_core.tools.StaticWorkbench", "config": {"tools": list(tools)}}


def _migrate(*agents: dict[str, Any]) -> MigrateResult:
    team = {
        "provider": "autogen_agentchat.teams.RoundRobinGroupChat",
        "component_type": "team",
        "config": {"participants": [*agents, {"provider": AGENT, "config": {"name": "b"}}]},
    }
    return migrate_source(SourceFile("team.json", json.dumps(team)))


def _m001(result: MigrateResult) -> list[tuple[str | None, str, str | None]]:
    return [(d.json_path, d.message, d.help) for d in result.findings if d.code.id == "M001"]


def test_two_tools_of_one_name_in_tools_are_refused_at_the_second() -> None:
    tools = [_tool("search", "the web"), _tool("fetch", "a page"), _tool("search", "the wiki")]
    result = _migrate({"provider": AGENT, "config": {"name": "a", "tools": tools}})
    assert result.text is None
    assert _m001(result) == [
        (
            "config.participants[0].config.tools[2].config.name",
            "two tools of one agent are both named `search`",
            HELP,
        )
    ]


def test_two_tools_of_one_name_in_two_workbenches_are_refused() -> None:
    # (AgentChat 0.7 writes an agent's tools in a workbench list)
    benches = [_bench(_tool("search", "the web")), _bench(_tool("search", "the wiki"))]
    agents = [
        {"provider": AGENT, "config": {"name": "a"}},
        {"provider": AGENT, "config": {"name": "c", "workbench": benches}},
    ]
    result = _migrate(*agents)
    assert result.text is None
    assert _m001(result) == [
        (
            "config.participants[1].config.workbench[1].config.tools[0].config.name",
            "two tools of one agent are both named `search`",
            HELP,
        )
    ]


def test_two_tools_of_one_long_name_are_refused_with_the_name_cut_short() -> None:
    long = "s" * 300
    tools = [_tool(long, "the web"), _tool(long, "the wiki")]
    result = _migrate({"provider": AGENT, "config": {"name": "a", "tools": tools}})
    assert result.text is None
    path = "config.participants[0].config.tools"
    assert _m001(result)[-1] == (
        f"{path}[1].config.name",
        'two tools of one agent are both named "' + "s" * 36 + "... (a name of 300 characters: "
        f"this one and the one at `{path}[0].config.name`)",
        HELP,
    )


def test_tools_of_one_name_in_two_agents_are_two_agents_tools() -> None:
    # the rule is per agent, as AgentChat's: each agent declares its own `search`
    agents = [
        {"provider": AGENT, "config": {"name": "a", "tools": [_tool("search", "the web")]}},
        {"provider": AGENT, "config": {"name": "c", "workbench": _bench(_tool("search", "x"))}},
    ]
    result = _migrate(*agents)
    assert result.text is not None and not _m001(result)
    assert result.text.count("tool search") == 2


def test_a_handoff_named_as_a_tool_is_left_out_not_merged_into_it() -> None:
    """AgentChat refuses an agent whose handoff has a tool's name ("Handoff names must be
    unique from tool names"); the translation keeps the tool as the tool it is (no rule
    routes its calls to the handoff's target) and leaves the handoff out, with an M001
    at it, as it leaves out a second handoff of one name."""
    handoffs = [{"target": "b", "name": "transfer_to_b"}]
    a = {"name": "a", "tools": [_tool("transfer_to_b", "a lookup")], "handoffs": handoffs}
    team = {
        "provider": "autogen_agentchat.teams.Swarm",
        "component_type": "team",
        "config": {
            "participants": [
                {"provider": AGENT, "config": a},
                {"provider": AGENT, "config": {"name": "b", "handoffs": ["a"]}},
            ]
        },
    }
    result = migrate_source(SourceFile("team.json", json.dumps(team)))
    assert result.text is not None
    assert [(path, message) for path, message, _ in _m001(result)] == [
        (
            "config.participants[0].config.handoffs[0]",
            "a handoff named `transfer_to_b` (to `b`) was left out: an agent's handoff names"
            " must differ from its tools'",
        )
    ]
    assert re.search(r"when tool transfer_to_b +then b\b", result.text) is None, result.text
    assert "when tool transfer_to_a" in result.text  # b's own handoff is translated
