"""Failure classes of issue 29 (round 2 of the side-by-side reading): each with a minimal
input written for the suite, the translation or the finding that names what was lost."""

from __future__ import annotations

from pathlib import Path

from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import has_errors
from flowc.migrate import migrate_source
from flowc.source import SourceFile


def _migrate(src: str, name: str = "chat.py") -> tuple[str, list[tuple[str, str]]]:
    result = migrate_source(SourceFile(name, src))
    assert result.text is not None
    assert not has_errors(compile_source(SourceFile("out.flow", result.text))[1])
    return result.text, [(d.code.id, d.message) for d in result.findings]


def _rules(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.startswith("when ")]


# ── class 6: an agent's own is_termination_msg ────────────────────────────────────────

_OWN_TEST = """\
import autogen
cfg = {"config_list": [{"model": "m", "api_key": "k"}]}
user = autogen.UserProxyAgent("user", code_execution_config=False, human_input_mode="NEVER")
writer = autogen.AssistantAgent("writer", llm_config=cfg)
critic = autogen.AssistantAgent("critic", llm_config=cfg, is_termination_msg=TEST)
gc = autogen.GroupChat(agents=[user, writer, critic], messages=[], max_round=7,
                       speaker_selection_method="METHOD")
manager = autogen.GroupChatManager(groupchat=gc, llm_config=cfg)
user.initiate_chat(manager, message="Draft a slogan.")
"""


def _own(test: str, method: str = "round_robin") -> str:
    return _OWN_TEST.replace("TEST", test).replace("METHOD", method)


def test_own_termination_test_guards_only_the_turn_into_that_agent() -> None:
    """ag2 0.9.10: run_chat selects the next speaker, whose generate_reply runs
    check_termination_and_human_reply on the last message (the one just sent); a None
    reply ends the chat, and max_round is checked before the selection."""
    text, findings = _migrate(_own('lambda m: "APPROVED" in m["content"]'))
    assert _rules(text)[1:] == [
        "when from user then writer",
        'when from writer and text_contains(text = "APPROVED") and turn_count_at_most(`turns` = 6)'
        ' then terminate "is_termination_msg"',
        "when from writer then critic",
        "when from critic then user",
    ]
    assert findings == []


def test_own_termination_that_always_holds_does_not_end_the_flow_at_the_kickoff() -> None:
    text, _ = _migrate(_own("lambda x: True"))
    ends = [r for r in _rules(text) if r.endswith('then terminate "is_termination_msg"')]
    # only when the critic is next (after the writer), never on the kickoff
    assert ends == [
        'when from writer and turn_count_at_most(`turns` = 6) then terminate "is_termination_msg"'
    ]


def test_own_termination_of_an_always_human_agent_is_left_out_with_a_finding() -> None:
    src = _own("None").replace(
        'human_input_mode="NEVER")',
        'is_termination_msg=lambda m: "BYE" in m["content"])',
    )
    text, findings = _migrate(src)
    assert "BYE" not in text
    assert findings == [
        (
            "M001",
            "`user`'s own `is_termination_msg` was left out: with "
            '`human_input_mode="ALWAYS"` classic asks the person at every turn of `user` and '
            "applies this test only when they enter nothing, which no rule of the flow can see",
        )
    ]


def test_own_termination_of_a_terminate_mode_agent_says_a_person_is_asked() -> None:
    src = _own('lambda m: "APPROVED" in m["content"]').replace(
        'critic = autogen.AssistantAgent("critic"', 'critic = autogen.ConversableAgent("critic"'
    )
    text, findings = _migrate(src)
    assert 'when from writer and text_contains(text = "APPROVED")' in "\n".join(_rules(text))
    assert [c for c, m in findings if "`critic`'s own" in m] == ["M002"]
    assert any(
        '`human_input_mode="TERMINATE"` classic then asks a person' in m for _, m in findings
    )


def test_own_termination_under_model_selection_is_approximated_and_says_how() -> None:
    text, findings = _migrate(_own('lambda m: "APPROVED" in m["content"]', "auto"))
    assert (
        'when text_contains(text = "APPROVED") then terminate "is_termination_msg" priority -10'
        in _rules(text)
    )
    (msg,) = [m for c, m in findings if "`critic`'s own" in m]
    assert "the flow also ends where another agent would have been chosen" in msg


# ── class 5: a tool whose returned text is the termination message ───────────────────

_TOOL_TEXT = """\
import autogen
cfg = {"config_list": [{"model": "m", "api_key": "k"}]}
user = autogen.UserProxyAgent("user", code_execution_config=False, human_input_mode="NEVER")
clerk = autogen.AssistantAgent("clerk", llm_config=cfg)


def close_ticket(ticket: str) -> str:
    \"\"\"Closes a ticket.\"\"\"
BODY


autogen.register_function(close_ticket, caller=clerk, executor=user, description="Close it.")
gc = autogen.GroupChat(agents=[user, clerk], messages=[], max_round=8,
                       speaker_selection_method="round_robin")
manager = autogen.GroupChatManager(groupchat=gc, llm_config=cfg)
user.initiate_chat(manager, message="Close ticket 7.")
"""


def test_a_tool_returning_the_termination_text_finishes() -> None:
    """ag2 0.9.10: the executor's reply carries the returned string as its content
    (generate_tool_calls_reply) and run_chat tests it with the manager's is_termination_msg."""
    text, findings = _migrate(_TOOL_TEXT.replace("BODY", '    return "TERMINATE"'))
    assert 'tool close_ticket finishes "is_termination_msg"' in text
    assert [c for c, _ in findings] == ["M002"]  # the executor turn, as before


def test_a_tool_returning_the_termination_text_only_sometimes_says_so() -> None:
    body = '    if ticket == "7":\n        return "TERMINATE"\n    return "not found"'
    text, findings = _migrate(_TOOL_TEXT.replace("BODY", body))
    assert 'tool close_ticket finishes "is_termination_msg"' in text
    assert (
        "M002",
        "tool `close_ticket` returns the termination text at line 10, which ends the chat in "
        "classic (the manager tests the executor's message), and other texts elsewhere; the "
        'flow declares it `finishes "is_termination_msg"` and lists only the calls that finish',
    ) in findings


def test_a_tool_returning_other_text_does_not_finish() -> None:
    text, _ = _migrate(_TOOL_TEXT.replace("BODY", '    return "closed; TERMINATE later"'))
    assert "tool close_ticket\n" in text and "finishes" not in text


# ── class 4: a name bound in both branches of an `if` ─────────────────────────────────

_BRANCHES = """\
import os
import autogen
cfg = {"config_list": [{"model": "m", "api_key": "k"}]}
USE_API = TEST
user = autogen.UserProxyAgent("user", code_execution_config=False, human_input_mode="NEVER")
api = autogen.AssistantAgent("api_caller", llm_config=cfg)
local = autogen.AssistantAgent("local_worker", llm_config=cfg)
if USE_API:
    agents = [user, api]
else:
    agents = [user, local]
gc = autogen.GroupChat(agents=agents, messages=[], max_round=4,
                       speaker_selection_method="round_robin")
manager = autogen.GroupChatManager(groupchat=gc, llm_config=cfg)
user.initiate_chat(manager, message="Fetch the rates.")
"""


def test_a_constant_if_test_takes_the_branch_python_runs() -> None:
    text, findings = _migrate(_BRANCHES.replace("TEST", "True"))
    assert "speaker api_caller" in text and "local_worker" not in text
    assert findings == []
    text, _ = _migrate(_BRANCHES.replace("TEST", "False"))
    assert "speaker local_worker" in text and "api_caller" not in text
    text, _ = _migrate(
        _BRANCHES.replace("TEST", '"api"').replace("if USE_API:", 'if USE_API != "api":')
    )
    assert "speaker local_worker" in text and "api_caller" not in text


def test_an_unknown_if_test_is_reported_at_the_test() -> None:
    result = migrate_source(
        SourceFile("chat.py", _BRANCHES.replace("TEST", 'os.getenv("USE_API") == "1"'))
    )
    (finding,) = [d for d in result.findings if d.code.id == "M002"]
    assert finding.message == (
        "`agents` depends on this `if`, whose test `USE_API` is not known statically: the "
        "translation used its value from line 11, which holds only when the test is false"
    )
    assert finding.span is not None and (finding.span.line, finding.span.column) == (8, 4)


_HANDOFF_VAR = """\
from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import AgentTarget, TerminateTarget
from autogen.agentchat.group.patterns import DefaultPattern

llm_config = LLMConfig(api_type="openai", model="m", api_key="k")
TIER = TIER_VALUE
with llm_config:
    triage = ConversableAgent(name="triage", system_message="Sorts requests.")
    premium = ConversableAgent(name="premium", system_message="Premium desk.")
    standard = ConversableAgent(name="standard", system_message="Standard desk.")
if TIER == "premium":
    after = AgentTarget(premium)
elif TIER == "standard":
    after = AgentTarget(standard)
else:
    after = TerminateTarget()
triage.handoffs.set_after_work(after)
pattern = DefaultPattern(initial_agent=triage, agents=[triage, premium, standard])
initiate_group_chat(pattern=pattern, messages="Help me.", max_rounds=6)
"""


def test_a_handoff_target_chosen_by_a_constant_if_is_the_one_python_runs() -> None:
    text, findings = _migrate(_HANDOFF_VAR.replace("TIER_VALUE", '"standard"'))
    assert "when from triage then standard priority 30" in _rules(text)
    assert not any("depends on this `if`" in m for _, m in findings)


def test_a_handoff_target_chosen_by_an_unknown_if_is_reported() -> None:
    text, findings = _migrate(_HANDOFF_VAR.replace("TIER_VALUE", "input()"))
    assert "when from triage then terminate priority 30" in _rules(text)  # the value used
    assert (
        "M002",
        "`after` depends on this `if`, whose test `TIER == 'standard'` is not known "
        "statically: the translation used its value from line 17, which holds only when the "
        "test is false",
    ) in findings


# ── class 1: AgentChat SelectorGroupChat leaves the previous speaker out ──────────────

_SELECTOR = """\
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import SelectorGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

client = OpenAIChatCompletionClient(model="gpt-4o-mini", api_key="k")
planner = AssistantAgent("planner", model_client=client, description="Plans.")
coder = AssistantAgent("coder", model_client=client, description="Codes.")
tester = AssistantAgent("tester", model_client=client, description="Tests.")
team = SelectorGroupChat([AGENTS], model_client=client,
                         termination_condition=MaxMessageTermination(5)EXTRA)
"""


def _selector(agents: str = "planner, coder, tester", extra: str = "") -> str:
    return _SELECTOR.replace("AGENTS", agents).replace("EXTRA", extra)


def test_selector_leaves_the_previous_speaker_out_by_default() -> None:
    """autogen-agentchat 0.7.5, SelectorGroupChatManager.select_speaker: without
    allow_repeated_speaker (default False) the candidates are the participants minus the
    previous speaker (none after the task)."""
    text, findings = _migrate(_selector(), "team.py")
    assert _rules(text) == [
        "when from user then selector",
        "when from planner then selector_after_planner",
        "when from coder then selector_after_coder",
        "when from tester then selector_after_tester",
        "when tool transfer_to_planner then planner",
        "when tool transfer_to_coder then coder",
        "when tool transfer_to_tester then tester",
        "when from selector, selector_after_planner, selector_after_coder, selector_after_tester"
        ' then terminate "no_speaker_selected"',
    ]
    after_coder = text.split("speaker selector_after_coder {")[1].split("}")[0]
    assert "transfer_to_planner" in after_coder and "transfer_to_tester" in after_coder
    assert "transfer_to_coder" not in after_coder
    assert "max_turns 9" in text  # 4 agent turns, each after a selector turn, and the task
    assert not any("advice" in m for _, m in findings)


def test_selector_with_two_participants_alternates_without_the_model() -> None:
    """A single candidate is chosen without the model (select_speaker)."""
    text, _ = _migrate(_selector("planner, coder"), "team.py")
    assert _rules(text)[:3] == [
        "when from user then selector",
        "when from planner then coder",
        "when from coder then planner",
    ]
    assert "max_turns 6" in text  # the task, one selector turn, 4 agent turns


def test_selector_allowing_repeats_keeps_one_selector() -> None:
    text, findings = _migrate(_selector(extra=", allow_repeated_speaker=True"), "team.py")
    assert "when from user, planner, coder, tester then selector" in _rules(text)
    assert "selector_after" not in text
    assert not any("allow_repeated_speaker" in m for _, m in findings)


def test_selector_func_with_model_turns_reports_the_exclusion_it_cannot_follow() -> None:
    text, findings = _migrate(
        _selector(extra=", selector_func=lambda m: 'coder' if m[-1].source == 'planner' else None"),
        "team.py",
    )
    assert "selector_after" not in text
    (msg,) = [m for c, m in findings if c == "M002" and "allow_repeated_speaker" in m]
    assert "AgentChat removes the speaker the model chose last from the candidates" in msg
    assert "advice" not in msg


def test_candidate_func_reports_the_model_pick_it_cannot_refuse() -> None:
    """0.7.5: with candidate_func the candidates are its list (allow_repeated_speaker does
    not filter them), but _select_speaker still asks again on a pick of the previous one."""
    src = _selector(extra=", candidate_func=cands").replace(
        "team = ",
        'def cands(messages):\n    if messages[-1].source == "user":\n        return ["planner"]\n'
        '    return ["coder", "tester"]\n\n\nteam = ',
    )
    _, findings = _migrate(src, "team.py")
    (msg,) = [m for c, m in findings if c == "M002" and "allow_repeated_speaker" in m]
    assert msg.endswith(
        "AgentChat takes the candidates from `candidate_func`, but still asks the model again "
        "when it names the previous speaker; the selector speaker may pick that speaker among "
        "its transfer tools"
    )


# ── class 8: the default chat is the one the file runs ────────────────────────────────

_TWO_TEAMS = """\
import asyncio
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat, SelectorGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

client = OpenAIChatCompletionClient(model="gpt-4o-mini", api_key="k")
poet = AssistantAgent("poet", model_client=client)
critic = AssistantAgent("critic", model_client=client)
ring = RoundRobinGroupChat([poet, critic], termination_condition=MaxMessageTermination(4))
asyncio.run(ring.run(task="A poem."))

# an illustration of a selector team; not run:
picker = SelectorGroupChat([poet, critic], model_client=client,
                           termination_condition=MaxMessageTermination(4))
# asyncio.run(picker.run_stream(task="A poem."))
"""


def test_the_default_team_is_the_one_the_file_runs() -> None:
    text, findings = _migrate(_TWO_TEAMS, "teams.py")
    assert "RoundRobinGroupChat" in text and "selector" not in text
    assert (
        "M001",
        "this file builds 2 teams; `ring` (line 10) was translated and this one, "
        "`picker` (line 14), was left out",
    ) in findings


_TWO_CHATS = """\
import autogen
cfg = {"config_list": [{"model": "m", "api_key": "k"}]}
user = autogen.UserProxyAgent("user", code_execution_config=False, human_input_mode="NEVER")
a = autogen.AssistantAgent("drafter", llm_config=cfg)
b = autogen.AssistantAgent("editor", llm_config=cfg)
sketch = autogen.GroupChat(agents=[user, a], messages=[], max_round=3,
                           speaker_selection_method="round_robin")
real = autogen.GroupChat(agents=[user, a, b], messages=[], max_round=5,
                         speaker_selection_method="round_robin")
manager = autogen.GroupChatManager(groupchat=real, llm_config=cfg)
user.initiate_chat(manager, message="Draft it.")
"""


def test_the_default_group_chat_is_the_one_initiate_chat_runs() -> None:
    text, findings = _migrate(_TWO_CHATS, "chats.py")
    assert "speaker editor" in text and "max_turns 5" in text
    assert any("`sketch` (line 6), was left out" in m for _, m in findings)


# ── class 3: tool registrations outside functions= / tools= ───────────────────────────

_GROUP_TOOLS = """\
from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import AgentTarget, ContextVariables, ReplyResult
from autogen.agentchat.group.patterns import DefaultPattern
from autogen.tools import Tool

llm_config = LLMConfig(api_type="openai", model="m", api_key="k")
with llm_config:
    desk = ConversableAgent(name="desk", system_message="Takes orders.")
    kitchen = ConversableAgent(name="kitchen", system_message="Cooks.")


@desk.register_for_llm(description="Send the order to the kitchen.")
def send_order(dish: str, context_variables: ContextVariables) -> ReplyResult:
    context_variables["ordered"] = True
    return ReplyResult(message="sent", target=AgentTarget(kitchen), context_variables=context_variables)


def ring_bell() -> str:
    return "ding"


Tool(name="bell", description="Ring the bell.", func_or_tool=ring_bell).register_tool(kitchen)
SearchTool().register_for_llm(kitchen)
pattern = DefaultPattern(initial_agent=desk, agents=[desk, kitchen],
                         context_variables=ContextVariables(data={"ordered": False}))
initiate_group_chat(pattern=pattern, messages="Soup, please.", max_rounds=8)
"""


def test_group_api_tools_registered_on_agents_are_declared() -> None:
    """ag2 0.9.10: register_for_llm appends to ConversableAgent._tools (Tool.register_tool
    calls it too), and the group's tool executor runs every agent's tools
    (group_utils: `for tool in agent.tools`)."""
    text, findings = _migrate(_GROUP_TOOLS, "group.py")
    assert "tool send_order sets ordered = true, hands off to kitchen" in text
    assert "tool bell" in text
    assert (
        "M001",
        "`SearchTool()` is registered as a tool of `kitchen`, but it is not a `Tool(...)` of a "
        "function of this file: its name and what it does are unknown, and it was left out",
    ) in findings


_AC_TOOLS = """\
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.tools import FunctionTool, StaticWorkbench
from autogen_ext.models.openai import OpenAIChatCompletionClient
from autogen_ext.tools.mcp import McpWorkbench, StdioServerParams

client = OpenAIChatCompletionClient(model="gpt-4o-mini", api_key="k")


def lookup(city: str) -> str:
    \"\"\"Looks up a city.\"\"\"
    return city


def convert(amount: float) -> float:
    return amount


finder = AssistantAgent("finder", model_client=client,
                        tools=[FunctionTool(lookup, description="Find a city.", name="find_city")])
banker = AssistantAgent("banker", model_client=client,
                        workbench=StaticWorkbench([FunctionTool(convert, description="Convert.")]))
web = AssistantAgent("web", model_client=client,
                     workbench=McpWorkbench(server_params=StdioServerParams(command="srv")))
team = RoundRobinGroupChat([finder, banker, web], termination_condition=MaxMessageTermination(4))
"""


def test_agentchat_function_tools_and_workbenches_are_declared_or_reported() -> None:
    """autogen-core 0.7.5: FunctionTool(func, description, name=None) is named after the
    function unless `name` is given; AssistantAgent lists a workbench's tools when it runs."""
    text, findings = _migrate(_AC_TOOLS, "team.py")
    assert "tool find_city" in text and "tool convert" in text
    (msg,) = [m for c, m in findings if c == "M001"]
    assert msg.startswith(
        "`web`'s workbench (`McpWorkbench(server_params=StdioServe...`) lists its tools "
        "when the agent runs"
    )


def test_classic_tool_objects_registered_on_an_agent_are_declared() -> None:
    src = _TOOL_TEXT.replace("BODY", '    return "closed"').replace(
        "autogen.register_function(close_ticket, caller=clerk, executor=user, "
        'description="Close it.")',
        "from autogen.tools import Tool\n"
        'Tool(name="close", description="Close it.", func_or_tool=close_ticket)'
        ".register_tool(clerk)",
    )
    text, findings = _migrate(src)
    assert "tool close\n" in text
    assert [c for c, _ in findings] == ["M002"]


# ── class 2: tool effects the reader missed ───────────────────────────────────────────

_TOOL_EFFECTS = """\
from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import AgentTarget, ContextVariables, ReplyResult
from autogen.agentchat.group.patterns import DefaultPattern

llm_config = LLMConfig(api_type="openai", model="m", api_key="k")


def to_kitchen(context_variables: ContextVariables) -> ReplyResult:
    return ReplyResult(message="to the kitchen", target=AgentTarget(kitchen),
                       context_variables=context_variables)


def take_order(dish: str, context_variables: ContextVariables) -> ReplyResult:
    \"\"\"Takes an order.\"\"\"
BODY


with llm_config:
    desk = ConversableAgent(name="desk", system_message="Takes orders.", functions=[take_order])
    kitchen = ConversableAgent(name="kitchen", system_message="Cooks.")
pattern = DefaultPattern(initial_agent=desk, agents=[desk, kitchen],
                         context_variables=ContextVariables(data={"paid": False}))
initiate_group_chat(pattern=pattern, messages="Soup.", max_rounds=8)
"""


def _effects(body: str) -> str:
    text, _ = _migrate(_TOOL_EFFECTS.replace("BODY", body), "group.py")
    (line,) = [x.strip() for x in text.splitlines() if x.strip().startswith("tool take_order")]
    return line


def test_a_context_write_under_an_if_that_does_not_return_is_declared() -> None:
    """In ag2 0.9.10 the tool's context_variables is the group's own object (injected with
    Depends(on(...)) by GroupToolExecutor): a write holds whether or not the tool returns
    right after it."""
    body = (
        '    if dish == "soup":\n'
        '        context_variables["paid"] = True\n'
        '    return ReplyResult(message="ok", target=AgentTarget(kitchen),\n'
        "                       context_variables=context_variables)"
    )
    assert _effects(body) == (
        "tool take_order sets paid = true, hands off to kitchen | hands off to kitchen"
    )


def test_a_tool_returning_a_helper_of_the_file_has_the_helpers_effects() -> None:
    body = '    context_variables["paid"] = True\n    return to_kitchen(context_variables)'
    assert _effects(body) == "tool take_order sets paid = true, hands off to kitchen"


# ── class 7: findings that point at the wrong thing ───────────────────────────────────


def test_an_unnamed_agent_of_another_chat_is_not_said_to_be_migrated() -> None:
    src = _TWO_CHATS.replace(
        "sketch = autogen.GroupChat(agents=[user, a]",
        "helper = autogen.AssistantAgent(make_name(), llm_config=cfg)\n"
        "sketch = autogen.GroupChat(agents=[user, helper]",
    )
    text, findings = _migrate(src, "chats.py")
    assert "agent_" not in text and "helper" not in text.replace("`helper`", "")
    assert not any("migrated as" in m for _, m in findings)
    # the same agent in the translated chat keeps its finding
    text, findings = _migrate(src.replace("agents=[user, a, b]", "agents=[user, a, b, helper]"))
    assert "speaker helper" in text
    assert any(m.endswith("it was migrated as `helper`") for _, m in findings)


_NESTED_GATE = """\
from autogen import ConversableAgent, LLMConfig
from autogen.agentchat.contrib.swarm_agent import ON_CONDITION, initiate_swarm_chat

llm_config = LLMConfig(api_type="openai", model="m", api_key="k")
with llm_config:
    lead = ConversableAgent(name="lead", system_message="Leads.")
    writer = ConversableAgent(name="writer", system_message="Writes.")


def has_sources(agent, messages):
    return True


lead.register_hand_off([
    ON_CONDITION(writer, "Ready to write.", available=has_sources),
    ON_CONDITION({"chat_queue": []}, "Dig deeper.", available=has_sources),
])
initiate_swarm_chat(initial_agent=lead, agents=[lead, writer], messages="Go.", max_rounds=6)
"""


def test_a_handoff_with_an_untranslatable_gate_keeps_its_rule() -> None:
    """ag2 0.9.10: `available` only hides the handoff from the model on turns where it is
    false; the handoff and its target remain (the nested chat's placeholder stays reachable)."""
    text, findings = _migrate(_NESTED_GATE, "swarm.py")
    rules = _rules(text)
    assert "when tool transfer_lead_to_writer then writer" in rules
    assert any(r.endswith("then wrapped_nested_lead_1") for r in rules)
    gate = [m for c, m in findings if c == "M001" and "`available` gate" in m]
    assert (
        gate
        == [
            "this `available` gate (a function) cannot be translated and was left out: the "
            "routing rule is kept without it, so in the flow the handoff is available on every turn"
        ]
        * 2
    )


# ── also: same-file enum constants, reply hooks ───────────────────────────────────────


def test_a_same_file_enum_value_is_a_constant() -> None:
    src = _TOOL_EFFECTS.replace(
        "llm_config = LLMConfig(",
        "from enum import Enum\n\n\nclass Stage(str, Enum):\n"
        '    DRAFTING = "drafting"\n    DONE = "done"\n\n\nllm_config = LLMConfig(',
    ).replace(
        "BODY",
        '    context_variables["stage"] = Stage.DRAFTING.value\n'
        '    context_variables["step"] = Stage.DONE.name\n'
        "    return to_kitchen(context_variables)",
    )
    text, findings = _migrate(src, "group.py")
    assert (
        'tool take_order sets stage = "drafting", sets step = "DONE", hands off to kitchen' in text
    )
    assert not any("computed at run time" in m for _, m in findings)


def test_reply_hooks_are_reported() -> None:
    """ag2 0.9.10: register_reply puts a reply function before the agent's own (a None
    reply ends the group chat); update_agent_state_before_reply runs before each reply."""
    src = (
        _OWN_TEST.replace("TEST", "None")
        .replace("METHOD", "round_robin")
        .replace(
            "gc = autogen.GroupChat(",
            "def polite(recipient, messages, sender, config):\n    return True, 'Thanks.'\n\n\n"
            "writer.register_reply([autogen.Agent, None], polite)\n"
            "gc = autogen.GroupChat(",
        )
    )
    _, findings = _migrate(src)
    assert (
        "M002",
        "`register_reply` adds a reply function that runs before `writer`'s own reply: what it "
        "answers, and a chat it ends by returning no reply, are your agent code, not in the flow",
    ) in findings
    src = _TOOL_EFFECTS.replace("BODY", "    return to_kitchen(context_variables)").replace(
        'ConversableAgent(name="kitchen", system_message="Cooks.")',
        'ConversableAgent(name="kitchen", system_message="Cooks.",\n'
        "                               update_agent_state_before_reply=[to_kitchen])",
    )
    _, findings = _migrate(src, "group.py")
    assert any(
        m.startswith("`update_agent_state_before_reply` runs code before each reply of `kitchen`")
        for c, m in findings
        if c == "M002"
    )


def test_an_imported_participant_keeps_its_place_instead_of_refusing_the_team() -> None:
    src = (
        "from autogen_agentchat.agents import AssistantAgent\n"
        "from autogen_agentchat.conditions import MaxMessageTermination\n"
        "from autogen_agentchat.teams import RoundRobinGroupChat\n"
        "from my_agents import reviewer\n"
        'writer = AssistantAgent("writer", model_client=None)\n'
        "team = RoundRobinGroupChat([writer, reviewer], "
        "termination_condition=MaxMessageTermination(5))\n"
    )
    text, findings = _migrate(src, "team.py")
    assert _rules(text) == [
        "when from user then writer",
        "when from writer then reviewer",
        "when from reviewer then writer",
    ]
    assert "scenario" not in text  # no claim about an agent that is not read
    assert findings == [
        (
            "M002",
            "`reviewer` is not an agent created in this file (imported, or returned by a "
            "function): it takes part as a plain speaker named `reviewer`; its real name, "
            "class and behaviour are not read, and no speaking order is claimed",
        )
    ]


def test_an_agent_name_bound_in_both_branches_is_reported_and_main_is_known() -> None:
    src = (
        _BRANCHES.replace("TEST", "input()")
        .replace(
            'api = autogen.AssistantAgent("api_caller"', "api = autogen.AssistantAgent(api_name"
        )
        .replace(
            "user = autogen.UserProxyAgent(",
            'if USE_API:\n    api_name = "remote"\nelse:\n    api_name = "stub"\n'
            "user = autogen.UserProxyAgent(",
        )
    )
    _, findings = _migrate(src)
    assert any(m.startswith("`api_name` depends on this `if`") for _, m in findings)
    # `if __name__ == "__main__":` runs when the file is run as a script
    src = _BRANCHES.replace("TEST", "True").replace("if USE_API:", 'if __name__ != "__main__":')
    text, findings = _migrate(src)
    assert "speaker local_worker" in text and findings == []


def test_a_tool_registered_twice_on_one_agent_is_read_once() -> None:
    src = (
        _TOOL_EFFECTS.replace(
            "BODY", '    context_variables["paid"] = dish\n    return to_kitchen(context_variables)'
        )
        .replace(
            "from autogen.agentchat.group import",
            "from autogen.tools import Tool\nfrom autogen.agentchat.group import",
        )
        .replace(
            "pattern = ",
            "desk.register_for_llm()(take_order)\n"
            "Tool(name='take_order', func_or_tool=take_order).register_tool(desk)\npattern = ",
        )
    )
    text, findings = _migrate(src, "group.py")
    assert text.count("tool take_order") == 1
    assert [m for _, m in findings].count(
        "tool `take_order` sets `paid` to a value computed at run time; the flow cannot declare "
        "it (the checker will not know the value)"
    ) == 1


def test_an_agents_own_termination_test_in_the_group_api_is_reported() -> None:
    """ag2 0.9.10: group agents keep check_termination_and_human_reply; the group only puts
    _run_oncontextconditions before it (group_utils, position=0). It was dropped silently."""
    src = _HANDOFF_VAR.replace("TIER_VALUE", '"premium"').replace(
        'system_message="Premium desk.")',
        'system_message="Premium desk.",\n'
        '                               is_termination_msg=lambda m: "BYE" in m["content"])',
    )
    _, findings = _migrate(src)
    assert (
        "M001",
        "`premium`'s own `is_termination_msg` was left out: AG2 applies it to the last message "
        "when `premium` is chosen to speak (after its `OnContextCondition`s, which hand off "
        "first), and ends the chat when it holds; the flow has no rule for it",
    ) in findings


def test_a_tool_call_says_classic_goes_on_from_the_executor() -> None:
    """ag2 0.9.10 (found by the differential harness on transitions_chain.py): after a
    model's tool call classic gives the next turn to the tool's executor and picks the
    speaker after that from the executor, so who speaks after a call differs too (there
    Planner -> Executor -> Reviewer, never Coder), not only the turn counts."""
    _, findings = _migrate(_TOOL_TEXT.replace("BODY", '    return "closed"'))
    (msg,) = [m for c, m in findings if "runs inside `clerk`'s turn" in m]
    assert "turn counts differ" in msg
    assert "the speaker after it is picked from the executor" in msg


_NAME_TARGETS = """\
from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import AgentNameTarget, OnContextCondition, ExpressionContextCondition
from autogen.agentchat.group import ContextExpression
from autogen.agentchat.group.patterns import DefaultPattern

llm_config = LLMConfig(api_type="openai", model="m", api_key="k")
with llm_config:
    basic = ConversableAgent(name="basic_agent", system_message="Answers.")
    expert = ConversableAgent(name="expert_agent", system_message="Answers harder ones.")

level = input("level? ")
basic.handoffs.add_context_condition(OnContextCondition(
    target=AgentNameTarget(f"{level}_agent"),
    condition=ExpressionContextCondition(ContextExpression("${hard}"))))
expert.handoffs.add_context_condition(OnContextCondition(
    target=AgentNameTarget("senior_agent"),
    condition=ExpressionContextCondition(ContextExpression("${hard}"))))
pattern = DefaultPattern(initial_agent=basic, agents=[basic, expert])
initiate_group_chat(pattern=pattern, messages="Why?", max_rounds=6)
"""


def test_a_name_target_says_whether_its_name_is_unknown_or_no_agent() -> None:
    """Class 7, findings that point at the wrong thing: a name computed at run time is not
    a name of no agent (the real escalation cookbook builds `f"{level}_agent"`)."""
    _, findings = _migrate(_NAME_TARGETS, "group.py")
    assert (
        "M001",
        "`AgentNameTarget`'s agent cannot be read without running the code; left out",
    ) in findings
    assert (
        "M001",
        "`AgentNameTarget` names `senior_agent`, no agent of this group; left out",
    ) in findings


_MANAGER_ARGS = (Path(__file__).parent / "corpus" / "group_round_robin.py").read_text(
    encoding="utf-8"
)


def _with_manager_args(args: str) -> str:
    return _MANAGER_ARGS.replace(
        "    user_agent=reader,\n", f"    user_agent=reader,\n    group_manager_args={args},\n"
    )


def test_the_managers_default_termination_survives_however_its_arguments_are_written() -> None:
    """ag2 0.9.10: the group manager ends the chat on a message that is exactly "TERMINATE"
    unless its arguments set another ``is_termination_msg``; ``None`` is the default too. A
    ``dict(...)`` call is read as the literal is; arguments that cannot be read keep the
    default, with an M002 (it was dropped silently: a wrong translation without a
    finding)."""
    default = (
        'when text_matches(pattern = "\\\\ATERMINATE\\\\Z") then terminate "is_termination_msg"'
    )
    for args in ("dict(llm_config=llm_config)", '{"is_termination_msg": None}', "{}"):
        text, findings = _migrate(_with_manager_args(args), "group.py")
        assert any(r.startswith(default) for r in _rules(text)), (args, _rules(text))
        assert findings == _migrate(_MANAGER_ARGS, "group.py")[1], args  # nothing lost
    own = 'dict(is_termination_msg=lambda m: "DONE" in m["content"])'
    text, _ = _migrate(_with_manager_args(own), "group.py")
    assert not any(r.startswith(default) for r in _rules(text))
    assert any('text_contains(text = "DONE")' in r for r in _rules(text)), _rules(text)
    text, findings = _migrate(_with_manager_args("make_args()"), "group.py")
    assert any(r.startswith(default) for r in _rules(text)), _rules(text)
    assert (
        "M002",
        "`group_manager_args` cannot be read without running the code: classic's default "
        'test (a message that is exactly "TERMINATE" ends the chat) is assumed; a test of '
        "their own is not",
    ) in findings
