"""A name `flowc migrate` reads from JSON holds at most 256 characters, as from Python.

AgentChat component JSON and AutoGen Studio workflows name their agents, tools, handoffs
and teams; the translation repeats an agent's name in each rule and scenario line that
names it (a SelectorGroupChat in each selector's transfer tools: once per pair of
participants). Before this bound, one 1 MiB participant name made 14 MB of .flow out of a
1 MB file, and twenty 50 KB names in a SelectorGroupChat 48 MB. A name past the bound is
an M001 at its JSON path, and the translation goes on: a participant takes part under a
name made from its position (``participant_<i>``, ``agent_<i>`` in a Studio group), which
every reference to it follows; a tool under its function's name; a handoff under
AgentChat's default name. The hostile cases run in a child process under resource limits
(:data:`LIMITS`), which bound their time and memory: the tests assert on what the
translation wrote, never on how long it took.
"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import Any

import flowc.migrate.agentchat_graph
from flowc.migrate import MigrateResult, migrate_source
from flowc.migrate.studio import lower_studio
from flowc.source import SourceFile
from tests.hostile.limits import Limited, run_limited

#: what bounds each hostile translation (its child past one fails the test): the output
#: must fit in `output_mib`; CPU time and address space are capped well above what each
#: translation needs (under a second, ~35 MiB resident); the wall clock allows for a shared
#: machine
LIMITS = {"memory_mib": 384, "cpu_seconds": 10, "wall_seconds": 30.0, "output_mib": 4}
AGENT = "autogen_agentchat.agents.AssistantAgent"
CAP = {
    "provider": "autogen_agentchat.conditions.MaxMessageTermination",
    "config": {"max_messages": 6},
}
#: the M001 on a participant's name past the bound, for ``participant_0``
REFUSED = (
    "this name is not used: it is a name of more than 256 characters; the participant takes "
    "part as `participant_0`"
)


def _agent(name: str, **config: Any) -> dict[str, Any]:
    return {"provider": AGENT, "config": {"name": name, **config}}


def _team(kind: str, participants: list[dict[str, Any]], **config: Any) -> dict[str, Any]:
    return {
        "provider": f"autogen_agentchat.teams.{kind}",
        "component_type": "team",
        "config": {"participants": participants, "termination_condition": CAP, **config},
    }


def _limited(tmp_path: Path, data: dict[str, Any]) -> tuple[Limited, list[dict[str, Any]], int]:
    path = tmp_path / "team.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = run_limited(["migrate", str(path), "--format", "json"], **LIMITS)
    assert not result.timed_out and not result.traceback, result.stderr[-2000:]
    findings = json.loads(result.stderr) if result.stderr.strip() else []
    return result, findings, path.stat().st_size


def _migrate(data: dict[str, Any], name: str = "team.json") -> MigrateResult:
    return migrate_source(SourceFile(name, json.dumps(data)))


def _m001(result: MigrateResult) -> list[tuple[str | None, str]]:
    return [(d.json_path, d.message) for d in result.findings if d.code.id == "M001"]


def _tool(name: str, code: str | None) -> dict[str, Any]:
    cfg = {"name": name, "description": "Looks it up."}
    return {
        "provider": "autogen_core.tools.FunctionTool",
        "config": {**cfg, "source_code": code} if code else cfg,
    }


def _calls(name: str) -> dict[str, Any]:
    return {
        "provider": "autogen_agentchat.conditions.FunctionCallTermination",
        "config": {"function_name": name},
    }


def _studio(members: list[str], sender: str) -> dict[str, Any]:
    def member(name: str) -> dict[str, Any]:
        return {"type": "assistant", "config": {"name": name, "llm_config": {}}}

    return {
        "name": "w",
        "type": "groupchat",
        "sender": {"type": "userproxy", "config": {"name": sender}},
        "receiver": {
            "type": "groupchat",
            "config": {"name": "group_chat_manager"},
            "groupchat_config": {
                "max_round": 4,
                "speaker_selection_method": "round_robin",
                "agents": [member(x) for x in members],
            },
        },
    }


def test_a_1mib_participant_name_is_refused_and_the_output_stays_small(tmp_path: Path) -> None:
    data = _team("RoundRobinGroupChat", [_agent("x" * (1 << 20)), _agent("b")])
    result, findings, size = _limited(tmp_path, data)
    assert size > 1 << 20
    assert result.returncode == 1  # an M001: something was not carried
    assert len(result.stdout.encode()) < 4096, len(result.stdout)
    bound = [f for f in findings if f["code"] == "M001"]
    assert [(f["json_path"], f["message"]) for f in bound] == [
        ("config.participants[0].config.name", REFUSED)
    ]
    # the agent takes part under the name made from its position, in the ring and scenario
    assert "speaker participant_0\n" in result.stdout
    assert "when from b             then participant_0\n" in result.stdout
    assert 'participant_0: "participant_0, turn 2"' in result.stdout


def test_long_names_in_a_selector_team_keep_the_output_linear(tmp_path: Path) -> None:
    # each participant is named in the transfer tools of every other one's selector: the
    # names times the participants, squared
    names = [f"{i}" + "y" * 20_000 for i in range(12)]
    result, findings, size = _limited(
        tmp_path, _team("SelectorGroupChat", [_agent(x) for x in names])
    )
    assert len(result.stdout.encode()) < size // 4, (len(result.stdout), size)
    bound = [f["json_path"] for f in findings if f["code"] == "M001"]
    assert bound == [f"config.participants[{i}].config.name" for i in range(12)]
    assert "speaker selector_after_participant_11 {\n" in result.stdout
    assert "y" * 257 not in result.stdout


def test_every_reference_follows_the_participant_it_names() -> None:
    long = "g" * 300
    graph = {
        "nodes": {
            long: {"name": long, "edges": [{"target": "b", "condition": None}]},
            "b": {"name": "b", "edges": [{"target": long, "condition": "again"}]},
        },
        "default_start_node": long,
    }
    sources = {
        "provider": "autogen_agentchat.conditions.SourceMatchTermination",
        "config": {"sources": [long]},
    }
    either = {
        "provider": "autogen_agentchat.conditions.OrTerminationCondition",
        "config": {"conditions": [CAP, sources]},
    }
    data = _team("GraphFlow", [_agent(long), _agent("b")], graph=graph)
    data["config"]["termination_condition"] = either
    result = _migrate(data)
    assert result.text is not None and long not in result.text
    assert _m001(result) == [("config.participants[0].config.name", REFUSED)]
    assert "when from user then participant_0" in result.text
    assert "when from participant_0 then b" in result.text
    assert 'when from b and text_contains(text = "again") then participant_0' in result.text
    assert 'when from participant_0 then terminate "source_match" priority -10' in result.text


def test_a_swarm_handoff_follows_the_renamed_target_and_a_long_handoff_name_is_defaulted() -> None:
    long = "z" * 300
    a = _agent("a", handoffs=[long, {"target": "a", "name": "h" * 300}])
    result = _migrate(_team("Swarm", [a, _agent(long, handoffs=["a"])]))
    assert result.text is not None and long not in result.text and "h" * 257 not in result.text
    assert _m001(result) == [
        (
            "config.participants[0].config.handoffs[1].name",
            "this name is not used: it is a name of more than 256 characters; the handoff is "
            "named `transfer_to_a`, AgentChat's default",
        ),
        (
            "config.participants[1].config.name",
            "this name is not used: it is a name of more than 256 characters; the participant "
            "takes part as `participant_1`",
        ),
    ]
    rules = " ".join(result.text.split())  # (rules are aligned in columns)
    assert "when tool transfer_to_participant_1 then participant_1" in rules
    assert "when tool transfer_to_a then a" in rules


def test_the_made_up_name_is_free_of_the_others_and_a_name_at_the_bound_is_carried() -> None:
    team = [_agent("q" * 257), _agent("participant_0"), _agent("y" * 256)]
    result = _migrate(_team("RoundRobinGroupChat", team))
    assert result.text is not None
    assert f"speaker participant_0_\nspeaker participant_0\nspeaker {'y' * 256}\n" in result.text
    assert _m001(result) == [
        (
            "config.participants[0].config.name",
            "this name is not used: it is a name of more than 256 characters; the participant "
            "takes part as `participant_0_`",
        )
    ]


def test_a_long_tool_name_falls_back_to_its_function_and_the_termination_follows() -> None:
    long = "t" * 300
    a = _agent("a", tools=[_tool(long, "def lookup(q: str) -> str:\n    return q\n")])
    b = _agent("b", tools=[_tool("u" * 300, None)])
    result = _migrate(_team("RoundRobinGroupChat", [a, b], termination_condition=_calls(long)))
    assert result.text is not None and long not in result.text and "u" * 257 not in result.text
    assert _m001(result) == [
        (
            "config.participants[0].config.tools[0].config.name",
            "this name is not used: it is a name of more than 256 characters; the tool is "
            "declared under its function's name, `lookup`",
        ),
        (
            "config.participants[1].config.tools[0].config.name",
            "this name is not used: it is a name of more than 256 characters; the tool was "
            "left out (no `def` in its `source_code` names it)",
        ),
    ]
    assert "tool lookup" in result.text
    assert 'when tool lookup then terminate "function_call" priority -10' in result.text


def test_a_long_team_name_does_not_title_the_flow() -> None:
    result = _migrate(
        _team("RoundRobinGroupChat", [_agent("a"), _agent("b")], name="n" * 300), "crew.json"
    )
    assert result.text is not None and "n" * 257 not in result.text
    assert "flow crew\n" in result.text
    assert _m001(result) == [
        (
            "config.name",
            "this name is not used: it is a name of more than 256 characters; the flow is "
            "titled after the file",
        )
    ]


def test_a_long_studio_agent_name_is_reported_at_its_json_path(tmp_path: Path) -> None:
    def member(name: str) -> dict[str, Any]:
        return {"type": "assistant", "config": {"name": name, "llm_config": {}}}

    workflow = {
        "name": "w" * 300,
        "type": "groupchat",
        "sender": {"type": "userproxy", "config": {"name": "s" * 300}},
        "receiver": {
            "type": "groupchat",
            "config": {"name": "group_chat_manager"},
            "groupchat_config": {
                "max_round": 4,
                "speaker_selection_method": "round_robin",
                "agents": [member("m" * (1 << 20)), member("b")],
            },
        },
    }
    result, findings, _ = _limited(tmp_path, workflow)
    assert result.returncode == 1 and len(result.stdout.encode()) < 4096, len(result.stdout)
    assert "speaker agent_0\n" in result.stdout and "speaker sender: human\n" in result.stdout
    assert "flow team\n" in result.stdout
    assert [(f["json_path"], f["message"]) for f in findings if f["code"] == "M001"] == [
        (
            "name",
            "this name is not used: it is a name of more than 256 characters; the flow is "
            "titled after the file",
        ),
        (
            "receiver.groupchat_config.agents[0].config.name",
            "this name is not used: it is a name of more than 256 characters; the agent takes "
            "part as `agent_0`",
        ),
        (
            "sender.config.name",
            "this name is not used: it is a name of more than 256 characters; the agent takes "
            "part as `sender`",
        ),
    ]


def test_a_crowded_selector_team_gets_one_selector_and_stays_linear(tmp_path: Path) -> None:
    # names at the bound: one selector per previous speaker would write each name once per
    # other participant (200 participants: 68 KB of JSON gave 22.6 MB of .flow)
    names = [f"{i:03}" + "z" * 253 for i in range(200)]
    half, _, half_size = _limited(
        tmp_path, _team("SelectorGroupChat", [_agent(x) for x in names[:100]])
    )
    result, findings, size = _limited(
        tmp_path, _team("SelectorGroupChat", [_agent(x) for x in names])
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # twice the participants, about twice the output (not four times): linear in the input
    grown = len(result.stdout.encode()) / len(half.stdout.encode())
    assert 1.8 < size / half_size < 2.2 and grown < 2.2, (size / half_size, grown)
    assert len(result.stdout.encode()) < 8 * size, (len(result.stdout), size)
    crowded = [f for f in findings if "one selector speaker per previous speaker" in f["message"]]
    assert [(f["code"], f["json_path"]) for f in crowded] == [("M002", "config.participants")]
    assert crowded[0]["message"] == (
        "`allow_repeated_speaker` is false (AgentChat's default), but with 200 participants"
        " one selector speaker per previous speaker would name every participant once per"
        " other participant, in about 21.4 MiB of selector speakers (such selectors are"
        " written only up to 1 MiB): the selector speaker `selector` keeps every participant"
        " a candidate, the previous speaker included"
    )
    assert "selector_after_" not in result.stdout
    assert result.stdout.count("speaker selector") == 1


def test_a_selector_team_at_the_bound_keeps_a_selector_per_speaker() -> None:
    result = _migrate(_team("SelectorGroupChat", [_agent(f"a{i}") for i in range(32)]))
    assert result.text is not None
    assert "speaker selector_after_a31 {" in result.text
    assert not [d for d in result.findings if "per previous speaker" in d.message]


def test_a_function_call_termination_on_a_long_handoff_name_follows_the_handoff() -> None:
    # with a short name, `when tool go then terminate` is written: the long one follows its
    # new name, as a long tool name does
    a = _agent("a", handoffs=[{"target": "b", "name": "h" * 300}])
    data = _team("Swarm", [a, _agent("b")], termination_condition=_calls("h" * 300))
    result = _migrate(data)
    assert result.text is not None
    assert [path for path, _ in _m001(result)] == ["config.participants[0].config.handoffs[0].name"]
    rules = " ".join(result.text.split())
    assert 'when tool transfer_to_b then terminate "function_call" priority -10' in rules
    assert "when tool transfer_to_b then b" in rules


def test_two_participants_of_one_long_name_are_refused_as_two_of_one_short_name_are() -> None:
    short = _migrate(_team("RoundRobinGroupChat", [_agent("x"), _agent("x"), _agent("b")]))
    assert short.text is None
    assert _m001(short) == [
        ("config.participants[1].config.name", "two participants are both named `x`")
    ]
    long = "x" * 300
    result = _migrate(_team("RoundRobinGroupChat", [_agent(long), _agent(long), _agent("b")]))
    assert result.text is None
    # each takes part under the name of its own position; the refusal shows the name the
    # file writes (cut short), never a name made up for it
    assert _m001(result) == [
        ("config.participants[0].config.name", REFUSED),
        ("config.participants[1].config.name", REFUSED.replace("participant_0", "participant_1")),
        (
            "config.participants[1].config.name",
            'two participants are both named "' + "x" * 36 + "... (a name of 300 characters: "
            "this one and the one at `config.participants[0].config.name`)",
        ),
    ]


def test_studio_members_of_one_long_name_are_refused_as_two_of_one_short_name_are() -> None:
    long = "x" * 300
    short = _migrate(_studio(["x", "x", "b"], "s"), "w.json")
    assert short.text is None
    assert [m for _, m in _m001(short)] == ["two agents of the group chat are both named `x`"]
    result = _migrate(_studio([long, long, "b"], "s"), "w.json")
    assert result.text is None
    assert _m001(result) == [
        (
            "receiver.groupchat_config.agents[1].config.name",
            'two agents of the group chat are both named "' + "x" * 36 + "... (a name of 300 "
            "characters: this one and the one at "
            "`receiver.groupchat_config.agents[0].config.name`)",
        )
    ]


def test_a_studio_sender_of_a_members_long_name_is_that_member() -> None:
    # as with a short name (`speaker x`, `start x`): one speaker, not `sender` beside it
    long = "x" * 300
    shared = _migrate(_studio(["x", "b"], "x"), "w.json")
    assert shared.text is not None and "speaker x\nspeaker b\n\nstart x\n" in shared.text
    result = _migrate(_studio([long, "b"], long), "w.json")
    assert (
        result.text is not None and "speaker agent_0\nspeaker b\n\nstart agent_0\n" in result.text
    )
    assert [(path, m.rsplit("; ", 1)[1]) for path, m in _m001(result)] == [
        ("receiver.groupchat_config.agents[0].config.name", "the agent takes part as `agent_0`"),
        ("sender.config.name", "the agent takes part as `agent_0`"),
    ]


def test_a_long_tool_name_whose_fallback_names_another_tool_stays_a_tool_of_its_own() -> None:
    # `lookup` is the name of the agent's other tool: the long-named one is not folded
    # into it, and a FunctionCallTermination on the long name ends on it alone
    long = "t" * 300
    tools = [
        _tool(long, "def lookup(q: str) -> str:\n    return q\n"),
        _tool("lookup", "def search(q: str) -> str:\n    return q\n"),
    ]
    data = _team("RoundRobinGroupChat", [_agent("a", tools=tools), _agent("b")])
    data["config"]["termination_condition"] = _calls(long)
    result = _migrate(data)
    assert result.text is not None
    assert "  tool lookup_\n" in result.text and "  tool lookup\n" in result.text
    assert 'when tool lookup_ then terminate "function_call" priority -10' in result.text
    assert _m001(result) == [
        (
            "config.participants[0].config.tools[0].config.name",
            "this name is not used: it is a name of more than 256 characters; the tool is "
            "declared as `lookup_`: its function's name, `lookup`, names another of the "
            "agent's tools or handoffs",
        )
    ]


def test_a_long_handoff_name_whose_default_names_another_handoff_stays_a_handoff() -> None:
    # the second handoff is AgentChat's default `transfer_to_b`: the first one, renamed,
    # must not take its name (it was left out as a second handoff of one name)
    a = _agent("a", handoffs=[{"target": "b", "name": "h" * 300}, "b"])
    result = _migrate(_team("Swarm", [a, _agent("b")]))
    assert result.text is not None
    assert "  tool transfer_to_b_\n" in result.text and "  tool transfer_to_b\n" in result.text
    assert _m001(result) == [
        (
            "config.participants[0].config.handoffs[0].name",
            "this name is not used: it is a name of more than 256 characters; the handoff is "
            "named `transfer_to_b_`: AgentChat's default, `transfer_to_b`, names another of "
            "the agent's tools or handoffs",
        )
    ]


def test_lower_studio_is_always_given_the_list_its_findings_go_to() -> None:
    # without one it renamed an agent and dropped the M001 that says so
    assert inspect.signature(lower_studio).parameters["findings"].default is inspect._empty


def test_the_json_name_bound_has_a_module_of_its_own() -> None:
    # (not the GraphFlow builder's module; imported here, as the module is what is tested)
    names = importlib.import_module("flowc.migrate.json_names")
    assert callable(names.bound_names) and names.LEFT_OUT is not None
    assert not hasattr(flowc.migrate.agentchat_graph, "bound_names")
    assert not hasattr(flowc.migrate.agentchat_graph, "_NameBounds")
