"""Failure classes of issue 12 beyond the corpus goldens: options and exact messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.cli import main
from flowc.migrate import migrate_source
from flowc.source import SourceFile

CORPUS = Path(__file__).resolve().parent / "corpus"


def _migrate(name: str, pick: str | None = None) -> tuple[str | None, list[tuple[str, str]]]:
    path = CORPUS / name
    result = migrate_source(SourceFile(name, path.read_text(encoding="utf-8")), pick=pick)
    return result.text, [(d.code.id, d.message) for d in result.findings]


def test_several_teams_each_dropped_one_is_reported_and_can_be_picked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text, findings = _migrate("real_several_teams.py")
    assert text is not None and "speaker selector" in text  # the last team, by default
    assert (
        "M001",
        "this file builds 2 teams; `selector_team` (line 28) was translated and this one, "
        "`team` (line 18), was left out",
    ) in findings
    text, findings = _migrate("real_several_teams.py", pick="team")
    assert text is not None and "speaker selector" not in text
    assert 'when text_contains(text = "APPROVE") then terminate' in text
    assert any("`selector_team` (line 28), was left out" in m for _, m in findings)
    assert _migrate("real_several_teams.py", pick="28")[0] == _migrate("real_several_teams.py")[0]
    # the command line
    assert main(["migrate", str(CORPUS / "real_several_teams.py"), "--pick", "nope"]) == 2
    err = capsys.readouterr().err
    assert (
        "no team is named `nope`; the file has `team` (line 18), `selector_team` (line 28)" in err
    )


def test_an_unreadable_default_chat_falls_back_to_the_next_one() -> None:
    src = (
        "import autogen\n"
        "sketch = autogen.GroupChat(agents=make_agents(), messages=[])\n"
        "a = autogen.AssistantAgent('a')\nb = autogen.AssistantAgent('b')\n"
        "real = autogen.GroupChat(agents=[a, b], messages=[], max_round=3,"
        " speaker_selection_method='round_robin')\n"
    )
    result = migrate_source(SourceFile("two.py", src))
    assert result.text is not None and "speaker a" in result.text
    left_out = [d.message for d in result.findings if d.code.id == "M001"]
    assert len(left_out) == 1 and "`sketch` (line 2), was left out" in left_out[0]


def test_unknown_agent_classes_take_part_and_are_reported() -> None:
    text, findings = _migrate("real_unknown_agents.py")
    assert text is not None and "speaker location_specialist" in text and "speaker planner" in text
    assert [c for c, _ in findings] == ["M002", "M002"]
    text, findings = _migrate("real_agentchat_unknown_agents.py")
    assert text is not None and "speaker web_surfer" in text and "speaker counter" in text
    assert sum("an agent class flowc does not model" in m for _, m in findings) == 2
    # no claim of a statically known order when a class is not modelled
    assert "scenario" not in text


def _rules(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.startswith("when ")]


def test_selection_function_with_one_unlowerable_branch_keeps_the_others() -> None:
    """Class 10, reduction of AutoGen's agentchat_groupchat_customized notebook. Expected rules
    read from the Python: `len(messages) <= 1` (the kickoff alone) -> Planner for every
    previous speaker; Admin: "Approve" -> Engineer, else the `messages[-2]` chain (Planner,
    Scientist, or falling off the function: None, the chat ends); Planner -> Admin; Engineer:
    a python block -> Executor, else Engineer; Executor: "exitcode: 1" -> Engineer, else
    Scientist; Scientist -> Admin. The `else: "random"` branch serves no agent of the group."""
    result = migrate_source(
        SourceFile(
            "real_selection_partial.py",
            (CORPUS / "real_selection_partial.py").read_text(encoding="utf-8"),
        )
    )
    assert result.text is not None and result.left_out
    firsts = [
        f"when from {s} and turn_count_at_most(`turns` = 1) then Planner"
        for s in ("Admin", "Engineer", "Scientist", "Planner", "Executor")
    ]
    assert _rules(result.text)[1:] == [
        *firsts,
        'when from Admin and text_contains(text = "Approve") then Engineer',
        "when from Admin then chat_manager",
        "when from Planner then Admin",
        'when from Engineer and text_contains(text = "```python") then Executor',
        "when from Engineer then Engineer",
        'when from Executor and text_contains(text = "exitcode: 1") then Engineer',
        "when from Executor then Scientist",
        "when from Scientist then Admin",
        "when tool transfer_to_Scientist then Scientist",
        "when tool transfer_to_Planner then Planner",
        'when from chat_manager then terminate "no_speaker_selected"',
    ]
    left_out = [d for d in result.findings if d.code.id == "M001"]
    assert len(left_out) == 1  # exactly the branch that cannot be lowered
    assert left_out[0].span is not None and (left_out[0].span.line, left_out[0].span.column) == (
        33,
        14,
    )
    assert "`messages[-2]['name'] == 'Planner'`" in left_out[0].message
    assert (
        "after `Admin`" in left_out[0].message
        and "among `Scientist`, `Planner` (or nobody" in left_out[0].message
    )
    # no claim about the speaking order
    assert "scenario" not in result.text and "read statically" not in result.text


def test_a_test_of_the_last_speaker_against_a_string_is_false_as_in_python() -> None:
    """Class 10, reduction of AutoGen's customized_speaker_selection page (StateFlow). Read from
    the Python: `last_speaker == "Scientist"` compares an agent object with a string (never
    equal: agents define no `__eq__`), so after Research_Action_1 the function falls off its
    end and returns None — the chat ends (the recorded classic run agrees:
    real_selection_string_speaker.classic.json)."""
    result = migrate_source(
        SourceFile(
            "real_selection_string_speaker.py",
            (CORPUS / "real_selection_string_speaker.py").read_text(encoding="utf-8"),
        )
    )
    assert result.text is not None and not result.left_out
    assert _rules(result.text)[1:] == [
        "when from Init then Retrieve_Action_1",
        "when from Retrieve_Action_1 then Retrieve_Action_2",
        'when from Retrieve_Action_2 and text_matches(pattern = "\\\\Aexitcode: 1\\\\Z") then Retrieve_Action_1',
        "when from Retrieve_Action_2 then Research_Action_1",
        'when from Research_Action_1 then terminate "no_next_speaker"',
    ]
    assert [(d.code.id, d.span.line if d.span else None) for d in result.findings] == [("M003", 34)]


HEADER = """
import autogen
cfg = {"config_list": [{"model": "gpt-4o", "api_key": "sk-test"}]}
user = autogen.UserProxyAgent("user", code_execution_config=False)
a = autogen.AssistantAgent("a", llm_config=cfg)
b = autogen.AssistantAgent("b", llm_config=cfg)
c = autogen.AssistantAgent("c", llm_config=cfg)
"""
FOOTER = """
gc = autogen.GroupChat(agents=[user, a, b, c], messages=[], max_round=9, speaker_selection_method=pick)
m = autogen.GroupChatManager(groupchat=gc)
user.initiate_chat(m, message="go")
"""


def _partial(body: str) -> tuple[list[str], list[tuple[str, int | None, str]], str]:
    result = migrate_source(SourceFile("t.py", HEADER + body + FOOTER))
    assert result.text is not None
    return (
        _rules(result.text),
        [
            (d.code.id, d.span.line if d.span else None, d.message)
            for d in result.findings
            if d.code.id in ("M001", "M003")
        ],
        result.text,
    )


def test_each_unlowerable_part_is_reported_once_with_its_own_stand_in() -> None:
    rules, findings, text = _partial(
        "def pick(last_speaker, groupchat):\n"
        "    if last_speaker is a:\n"
        "        for m in groupchat.messages:\n"  # line 10: a statement it cannot follow
        "            return b\n"
        "        return c\n"
        "    if last_speaker is b:\n"
        "        return groupchat.agent_by_name('c')\n"  # line 14: not an agent of this file
        "    if last_speaker is c:\n"
        "        return user\n"
        "    return a\n"
    )
    assert [(code, line) for code, line, _ in findings] == [("M001", 10), ("M001", 14)]
    assert "`For` statement" in findings[0][2] and "after `a`" in findings[0][2]
    assert "among `b`, `c`" in findings[0][2]  # what the loop and the lines after it may return
    assert "not an agent of the group" in findings[1][2] and "after `b`" in findings[1][2]
    assert "when from c then user" in rules and "when from user then a" in rules
    # two candidate sets: two selector speakers, each offering only its own set
    assert "when from a then chat_manager" in rules and "when from b then chat_manager_2" in rules
    assert "speaker order read statically" not in text


def test_a_branch_that_returns_one_agent_or_falls_off_keeps_the_end() -> None:
    rules, findings, _ = _partial(
        "def pick(last_speaker, groupchat):\n"
        "    if last_speaker is a:\n"
        "        if groupchat.messages[-2]['name'] == 'b':\n"
        "            return c\n"
        "        return None\n"
        "    return a\n"
    )
    assert [(code, line) for code, line, _ in findings] == [("M001", 10)]
    assert "among `c` (or nobody: the chat ends)" in findings[0][2]
    assert "when from a then chat_manager" in rules
    assert 'when from chat_manager then terminate "no_speaker_selected"' in rules


def test_message_counts_through_a_local_name_are_lowered() -> None:
    """Reduction of build-with-ag2 tech-decision-debate: `turn = len(groupchat.messages) - 1`."""
    rules, findings, text = _partial(
        "def pick(last_speaker, groupchat):\n"
        "    turn = len(groupchat.messages) - 1\n"
        "    if turn == 0:\n        return a\n"
        "    elif turn == 1:\n        return b\n"
        "    return None\n"
    )
    assert findings == []
    assert "when from user and turn_count_at_most(`turns` = 1) then a" in rules
    assert (
        "when from a and (turn_count_at_most(`turns` = 2) and not turn_count_at_most(`turns` = 1)) "
        "then b"
    ) in rules
    assert 'when from b then terminate "no_next_speaker"' in rules
    assert "speaker chat_manager" not in text


def test_handoffs_registered_in_a_loop_are_unrolled_as_python_runs_them() -> None:
    """Reduction of AG2's swarm notebook: `for agent in [flight_cancel, lost_baggage]:
    register_hand_off(agent=agent, hand_to=OnCondition(triage_agent, ...))` registers the
    handoff on each of the two agents (read from the Python: the loop runs once per element)."""
    text, findings = _migrate("real_loop_handoffs.py")
    assert text is not None and not any(code == "M001" for code, _ in findings)
    for desk in ("Flight_Cancel_Traversal", "Lost_Baggage_Traversal"):
        assert (
            f"speaker {desk} {{\n  # Call this when the customer asks about something else.\n"
            f"  tool transfer_{desk}_to_Triage_Agent\n}}" in text
        )
        assert f"when tool transfer_{desk}_to_Triage_Agent then Triage_Agent" in _rules(text)


def test_group_api_handoffs_in_loops_unrolled_or_reported() -> None:
    """Read from the Python: the (agent, topic) tuple loop adds one LLM condition per desk to
    triage, the list loop sets each desk's after work to triage, and the loop over `sorted(...)`
    (a value computed at run time) cannot be unrolled: one M001 naming it, nothing guessed."""
    text, findings = _migrate("real_loop_handoffs_group.py")
    assert text is not None
    rules = _rules(text)
    assert "when tool transfer_to_billing_1 then billing" in rules
    assert "when tool transfer_to_tech_2 then tech" in rules
    assert "# The request is about a technical problem.\n  tool transfer_to_tech_2" in text
    assert "when from billing then triage priority 30" in rules
    assert "when from tech then triage priority 30" in rules
    left_out = [m for code, m in findings if code == "M001"]
    assert len(left_out) == 1
    assert (
        "inside `for agent in sorted([billing, tech], key=lambda a: a.name):` (line 25)"
        in left_out[0]
    )
    # nothing of the loop that was not unrolled reached the flow (the desks have no tools)
    assert "speaker billing\n" in text and "speaker tech\n" in text


def test_a_handoff_on_something_that_is_not_an_agent_is_reported_not_skipped() -> None:
    """Seen in AG2 docs whose snippets call `.handoffs.*` / `register_hand_off` on an agent
    defined only in a later code block: Python stops there (NameError); the handoffs are not
    in the flow and each call is an M001 at the owner."""
    group = (
        "from autogen import ConversableAgent\n"
        "from autogen.agentchat import initiate_group_chat\n"
        "from autogen.agentchat.group import AgentTarget\n"
        "from autogen.agentchat.group.patterns import DefaultPattern\n"
        "support.handoffs.set_after_work(AgentTarget(b))\n"
        "a = ConversableAgent(name='a')\nb = ConversableAgent(name='b')\n"
        "p = DefaultPattern(initial_agent=a, agents=[a, b])\n"
        "initiate_group_chat(pattern=p, messages='hi', max_rounds=5)\n"
    )
    swarm = (
        "from autogen import ConversableAgent, OnCondition, initiate_swarm_chat, register_hand_off\n"
        "register_hand_off(agent=responder, hand_to=[OnCondition(b, 'go to b')])\n"
        "a = ConversableAgent(name='a')\nb = ConversableAgent(name='b')\n"
        "initiate_swarm_chat(initial_agent=a, agents=[a, b], messages='hi', max_rounds=5)\n"
    )
    for src, owner, line in ((group, "support", 5), (swarm, "responder", 2)):
        result = migrate_source(SourceFile("t.py", src))
        assert (
            result.text is not None
            and "priority 30" not in result.text
            and "tool " not in result.text
        )
        left_out = [d for d in result.findings if d.code.id == "M001"]
        assert len(left_out) == 1 and "not an agent created in this file" in left_out[0].message, (
            src
        )
        assert left_out[0].span is not None and left_out[0].span.line == line
        assert result.text.count(owner) == 0


def test_context_changed_in_place_by_a_tool_is_reported() -> None:
    """Reduction of AG2's swarm snippet: `record_review` decrements `reviews_left`, which an
    `available=` gate reads, and appends to a list; both are writes computed at run time."""
    src = (
        "from autogen import ConversableAgent, OnCondition, SwarmResult, initiate_swarm_chat, register_hand_off\n"
        "def record_review(review: str, context_variables: dict) -> SwarmResult:\n"
        "    context_variables['lesson_reviews'].append(review)\n"
        "    context_variables['reviews_left'] -= 1\n"
        "    return SwarmResult(context_variables=context_variables)\n"
        "a = ConversableAgent(name='a', functions=[record_review])\nb = ConversableAgent(name='b')\n"
        "register_hand_off(a, [OnCondition(target=b, condition='go', available='reviews_left')])\n"
        "initiate_swarm_chat(initial_agent=a, agents=[a, b], messages='hi', max_rounds=5,\n"
        "                    context_variables={'lesson_reviews': [], 'reviews_left': 2})\n"
    )
    result = migrate_source(SourceFile("t.py", src))
    assert result.text is not None
    computed = sorted(
        d.message.split("`")[3]
        for d in result.findings
        if d.code.id == "M002" and "computed at run time" in d.message
    )
    assert computed == ["lesson_reviews", "reviews_left"]
