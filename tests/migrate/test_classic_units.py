"""Focused checks of the classic readers on small inline files (the corpus covers whole files)."""

from __future__ import annotations

import textwrap

import pytest

from flowc.migrate import migrate_source
from flowc.migrate.classic_selection import next_agent, successor
from flowc.source import SourceFile

HEADER = """
import autogen
cfg = {"config_list": [{"model": "gpt-4o", "api_key": "sk-test"}]}
user = autogen.UserProxyAgent("user", code_execution_config=False)
a = autogen.AssistantAgent("a", llm_config=cfg)
b = autogen.AssistantAgent("b", llm_config=cfg)
c = autogen.AssistantAgent("c", llm_config=cfg)
"""


def migrate(body: str) -> tuple[str, list[str], list[str]]:
    result = migrate_source(SourceFile("t.py", HEADER + textwrap.dedent(body)))
    assert result.text is not None, [d.message for d in result.findings]
    rules = [line for line in result.text.splitlines() if line.startswith("when ")]
    return result.text, rules, [f"{d.code.id} {d.message}" for d in result.findings]


def test_next_agent_matches_classic_examples() -> None:
    names = ["u", "a", "b", "c"]
    assert next_agent("a", names, None) == "b"
    assert next_agent("c", names, None) == "u"
    assert next_agent("outsider", names, None) == "u"
    assert next_agent("a", names, ["u", "c"]) == "c"
    assert next_agent("c", names, ["a", "b"]) == "a"


def test_successor_traps() -> None:
    names = ["u", "a", "b"]
    graph = {"u": ["a"], "a": [], "b": ["a", "b"]}
    assert successor("u", names, graph, None, "auto").agent == "a"  # one candidate: no LLM
    assert successor("a", names, graph, None, "round_robin").agent == "b"  # [] means everyone
    everyone = successor("a", names, graph, None, "auto")
    assert everyone.kind == "select" and everyone.candidates == ("u", "a", "b")
    assert successor("x", names, graph, None, "round_robin").agent == "u"  # outside the group
    assert successor("b", names, {"u": ["a"]}, None, "auto").kind == "end"  # absent key
    # allow_repeat False: the last speaker leaves the candidates before the graph filter
    assert successor("b", names, graph, False, "auto").agent == "a"


def test_allow_repeat_speaker_list() -> None:
    _, rules, _ = migrate("""
        gc = autogen.GroupChat(agents=[user, a, b], messages=[], max_round=5,
                               speaker_selection_method="random", allow_repeat_speaker=[a])
        m = autogen.GroupChatManager(groupchat=gc)
        user.initiate_chat(m, message="go")
    """)
    joined = "\n".join(rules)
    # candidates keep the group's list order; only `a` may speak twice in a row
    assert 'from a then random_agent(agent_ids = ["user", "a", "b"], allow_repeat = true)' in joined
    assert 'from user then random_agent(agent_ids = ["a", "b"], allow_repeat = true)' in joined
    assert 'from b then random_agent(agent_ids = ["user", "a"], allow_repeat = true)' in joined


def test_selection_function_with_len_guard_and_methods() -> None:
    _, rules, findings = migrate("""
        def pick(last_speaker, groupchat):
            if len(groupchat.messages) <= 3:
                return "round_robin"
            if last_speaker.name == "a":
                return b
            return None
        gc = autogen.GroupChat(agents=[user, a, b], messages=[], max_round=9,
                               speaker_selection_method=pick)
        m = autogen.GroupChatManager(groupchat=gc)
        user.initiate_chat(m, message="go")
    """)
    assert not [f for f in findings if f.startswith("M001")]
    assert "when from user and turn_count_at_most(`turns` = 3) then a" in rules
    assert "when from a and turn_count_at_most(`turns` = 3) then b" in rules
    assert 'when from b then terminate "no_next_speaker"' in rules
    assert "when from a then b" in rules


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ("    for x in groupchat.agents:\n        return x\n", "For"),
        ('    if groupchat.messages[-2]["name"] == "a":\n        return b\n', "recognise"),
        ("    if last_speaker is a:\n        return some_other_thing\n", "not an agent"),
        ("    return random.choice([a, b])\n", "not an agent"),
    ],
)
def test_selection_functions_that_are_not_lowered(body: str, what: str) -> None:
    text, _, findings = migrate(
        "def pick(last_speaker, groupchat):\n"
        + body
        + """
gc = autogen.GroupChat(agents=[user, a, b], messages=[], max_round=9, speaker_selection_method=pick)
m = autogen.GroupChatManager(groupchat=gc)
user.initiate_chat(m, message="go")
"""
    )
    m001 = [f for f in findings if f.startswith("M001")]
    assert len(m001) == 1 and what in m001[0] and "`pick`" in m001[0]
    assert "speaker chat_manager" in text  # the LLM selector stands in


def test_unresolvable_agent_name_is_reported_not_guessed() -> None:
    result = migrate_source(
        SourceFile(
            "t.py",
            HEADER
            + textwrap.dedent("""
        d = autogen.AssistantAgent(name=get_name(), llm_config=cfg)
        gc = autogen.GroupChat(agents=[user, a, d], messages=[], speaker_selection_method="round_robin")
        m = autogen.GroupChatManager(groupchat=gc)
        user.initiate_chat(m, message="go")
    """),
        )
    )
    assert result.text is not None and result.left_out
    finding = next(d for d in result.findings if d.code.id == "M001")
    assert "cannot be read without running the code" in finding.message
    assert finding.span is not None and finding.span.line == 9


def test_default_max_round_and_manager_settings() -> None:
    text, _, findings = migrate("""
        gc = autogen.GroupChat(agents=[user, a], messages=[], speaker_selection_method="round_robin",
                               admin_name="Boss")
        m = autogen.GroupChatManager(groupchat=gc, max_consecutive_auto_reply=2, human_input_mode="ALWAYS")
        user.initiate_chat(m, message="go")
    """)
    assert "max_turns 10" in text  # classic GroupChat.max_round defaults to 10
    assert sum(f.startswith("M003") for f in findings) == 3


def test_group_api_extras_are_reported_not_dropped() -> None:
    source = textwrap.dedent(r"""
        from autogen import ConversableAgent
        from autogen.agentchat import initiate_group_chat
        from autogen.agentchat.group import AgentTarget, RegexGuardrail, UpdateSystemMessage
        from autogen.agentchat.group.patterns import DefaultPattern
        a = ConversableAgent(name="a", update_agent_state_before_reply=[UpdateSystemMessage("x {y}")])
        b = ConversableAgent(name="b")
        g = RegexGuardrail(name="g", condition=r"\d{16}", target=AgentTarget(b))
        p = DefaultPattern(initial_agent=a, agents=[a, b])
        initiate_group_chat(pattern=p, messages="hi", max_rounds=5, safeguard_policy="p.json",
                            exclude_transit_message=True)
    """)
    result = migrate_source(SourceFile("g.py", source))
    assert result.text is not None and result.left_out
    got = sorted((d.code.id, d.span.line if d.span else 0) for d in result.findings)
    assert ("M002", 6) in got  # UpdateSystemMessage
    assert ("M001", 8) in got  # RegexGuardrail
    assert ("M001", 10) in got  # safeguard_policy
    assert ("M003", 11) in got  # exclude_transit_message


@pytest.mark.parametrize("repeat", ["False", "True", "[a]"])
def test_transitions_with_allow_repeat_speaker_is_reported(repeat: str) -> None:
    """ag2 0.9.10 raises ValueError when both are given (found by the differential harness)."""
    _, _, findings = migrate(f"""
        gc = autogen.GroupChat(agents=[user, a, b], messages=[], max_round=5,
                               allowed_or_disallowed_speaker_transitions={{user: [a], a: [b], b: [user]}},
                               speaker_transitions_type="allowed", allow_repeat_speaker={repeat})
        m = autogen.GroupChatManager(groupchat=gc)
        user.initiate_chat(m, message="go")
    """)
    assert [f for f in findings if f.startswith("M002") and "ValueError" in f], findings


def test_transitions_with_allow_repeat_speaker_none_is_not_reported() -> None:
    _, _, findings = migrate("""
        gc = autogen.GroupChat(agents=[user, a, b], messages=[], max_round=5,
                               allowed_or_disallowed_speaker_transitions={user: [a], a: [b], b: [user]},
                               speaker_transitions_type="allowed", allow_repeat_speaker=None)
        m = autogen.GroupChatManager(groupchat=gc)
        user.initiate_chat(m, message="go")
    """)
    assert not [f for f in findings if "ValueError" in f], findings
