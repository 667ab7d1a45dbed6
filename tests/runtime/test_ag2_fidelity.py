"""The same scripted runs on flowc's hub and on the real ``ag2==1.2.1`` hub, offline.

AG2 is driven with ``TestConfig``-scripted ``Agent``s (real AG2 tools that call
``set_context`` and return ``Handoff`` / ``Finish``) and ``HumanClient`` seeders
(``tests/runtime/ag2_harness.py``). Each case asserts identical turns (speaker, kind,
routing), close reason, context and turn count. The deliberate differences are
separate tests that state them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import flowc
from flowc.runtime.adapters.workflow import GraphError
from flowc.runtime.script import parse_script
from flowc.runtime.script_run import run_script_sync
from flowc.runtime.target import RunTarget

pytest.importorskip("ag2.network")
from tests.runtime.ag2_harness import run_on_ag2

CASES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "sequence": (
        """
        speaker user: human
        speakers researcher, writer, editor
        sequence user -> researcher -> writer -> editor
        """,
        {"kickoff": "Topic: HTTPS",
         "script": {"researcher": ["three facts"], "writer": ["a paragraph"],
                    "editor": ["the final text"]}},
        {"close_reason": "sequence_complete", "turn_count": 4},
    ),
    "round robin with humans": (
        """
        speakers alice: human, bot, carol: human
        round_robin alice, bot, carol
        max_turns 7
        """,
        {"kickoff": "Topic?",
         "script": {"alice": ["a2", "a3"], "bot": ["b1", "b2", "b3"], "carol": ["c1", "c2"]}},
        {"close_reason": "max_turns", "turn_count": 7},
    ),
    "feedback loop with a context tool": (
        """
        speaker user: human
        speaker drafter
        speaker reviewer { tool approve sets done = true }
        start user
        max_turns 12
        context done = false
        when context.done == true then terminate "approved"
        when from user then drafter
        when from drafter then reviewer
        when from reviewer then drafter
        """,
        {"kickoff": "Write on HTTPS",
         "script": {"drafter": ["Draft 1", "Draft 2"],
                    "reviewer": ["Tighten it",
                                 {"tool": "approve", "args": {"reason": "good"}, "say": "Approved"}]}},
        {"close_reason": "approved", "turn_count": 5, "context_vars": {"done": True}},
    ),
    "tool routing back to the initiator": (
        """
        speaker user: human
        speaker coordinator { tool ask_research  tool ask_analysis }
        speaker researcher { tool report }
        speaker analyst
        start user
        initiator coordinator
        max_turns 10
        when tool ask_research then researcher
        when tool ask_analysis then analyst
        when tool report then initiator
        when from analyst then initiator
        when from user then coordinator
        when from coordinator then terminate "done"
        """,
        {"kickoff": "Compare three GPU clouds",
         "script": {
             "coordinator": [
                 {"tool": "ask_research", "args": {"reason": "need prices"}, "say": "Research"},
                 {"tool": "ask_analysis", "say": "Analyse"}, "The report"],
             "researcher": [{"tool": "report", "args": {"reason": "found"}, "say": "Prices"}],
             "analyst": ["Cheapest is B"]}},
        {"close_reason": "done", "turn_count": 6},
    ),
    "handoff bypasses a priority -100 rule; several calls in one reply": (
        """
        speaker user: human
        speaker triage {
          tool lookup
          tool note sets seen = true
          tool transfer hands off to security
          tool close finishes "resolved"
        }
        speaker security { tool lock finishes "secured" }
        start user
        max_turns 20
        when context.seen == true then user priority -100
        when from user then triage
        when from triage then user
        when from security then user
        """,
        {"kickoff": "My account was hacked",
         "script": {
             "triage": [{"tools": [{"tool": "note"}, {"tool": "lookup", "args": {"q": "acct"}},
                                   {"tool": "transfer", "args": {"reason": "hacked"}},
                                   {"tool": "close"}],
                         "say": "Transferring you."}],
             "security": [{"tool": "lock", "say": "Locked."}]}},
        {"close_reason": "secured", "turn_count": 3, "context_vars": {"seen": True}},
    ),
    "sticky context runs to max_turns": (
        """
        speaker user: human
        speaker bot { tool chat_mode sets mode = "chat" }
        speaker critic
        start user
        max_turns 7
        when context.mode == "chat" then next
        when from user then bot
        when from bot then terminate "answered"
        """,
        {"kickoff": "Hi",
         "script": {"bot": [{"tool": "chat_mode", "say": "Let's chat"}, "b2"],
                    "critic": ["c1", "c2"], "user": ["u2", "u3"]}},
        {"close_reason": "max_turns", "turn_count": 7, "context_vars": {"mode": "chat"}},
    ),
    "priority ties keep list order": (
        """
        speaker user: human
        speakers a, b
        start user
        max_turns 5
        when from user then b priority 1
        when always then a priority 1
        when from a then b priority 0
        when from b then terminate "tied" priority 1
        when always then user priority 2
        """,
        {"kickoff": "go", "script": {"a": ["a1", "a2"], "b": ["b1", "b2"]}},
        {"close_reason": "max_turns", "turn_count": 5},
    ),
    "composites registered into AG2's registry by the bridge": (
        """
        speaker user: human
        speakers triage, security
        start user
        max_turns 6
        context vip = true
        when from user and context.vip == true then security
        when from user then triage
        when not context.vip == true then terminate "regular"
        when from security then user
        when from triage then user
        """,
        {"kickoff": "help", "script": {"security": ["on it"], "user": ["thanks"]},
         "context_vars": {"vip": True}},
        {"close_reason": None, "turn_count": 3, "stalled_on": "security"},
    ),
    "a round that only writes context posts no packet and stalls": (
        """
        speaker customer: human
        speaker triage { tool route_tech sets category = "tech" }
        speaker tech
        start customer
        max_turns 20
        when from tech then customer
        when context.category == "tech" then tech
        when from customer then triage
        when from triage then customer
        """,
        {"kickoff": "It does not work.",
         "script": {"triage": ["What does not work?", {"tool": "route_tech"}],
                    "customer": ["The app crashes on start."], "tech": ["Fixed."]}},
        {"close_reason": None, "turn_count": 3, "stalled_on": "triage",
         "context_vars": {"category": "tech"}},
    ),
    "a finish on the first routing call, a handoff after it ignored": (
        """
        speaker user: human
        speaker agent { tool stop finishes "stopped"  tool pass hands off to user }
        start user
        max_turns 4
        when from user then agent
        """,
        {"kickoff": "go",
         "script": {"agent": [{"tools": [{"tool": "stop"}, {"tool": "pass"}], "say": ""}]}},
        {"close_reason": "stopped", "turn_count": 2},
    ),
}


def both(src: str, script_data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    flow = flowc.compile_flow(src)
    script = parse_script(script_data)
    ours = run_script_sync(RunTarget.from_compiled(flow), script).to_json()
    theirs = asyncio.run(run_on_ag2(flow, script))
    return ours, theirs


def several_calls_in_one_reply(script_data: dict[str, Any]) -> bool:
    turns = [t for ts in script_data["script"].values() for t in ts]
    return any(isinstance(t, dict) and len(t.get("tools", ())) > 1 for t in turns)


#: Deliberate difference, measured: among several routing tool calls in one reply AG2
#: means "the first call wins" (``_resolve_routing`` walks the stream history), but its
#: tools run as concurrent tasks and the history order can follow scheduling: on this
#: machine the "finish, then handoff" case picked the handoff in 0 of 20 runs at idle
#: and 2 of 20 with the CPUs busy. flowc always takes the first call in the reply. So for
#: those cases AG2 is sampled a few times and one identical run is required; ours must be
#: the same every time.
AG2_SAMPLES = 5


@pytest.mark.parametrize("name", list(CASES))
def test_same_run_on_both_runtimes(name: str) -> None:
    src, script, expect = CASES[name]
    ours, theirs = both(src, script)
    if ours != theirs and several_calls_in_one_reply(script):
        flow, parsed = flowc.compile_flow(src), parse_script(script)
        for _ in range(AG2_SAMPLES - 1):
            assert run_script_sync(RunTarget.from_compiled(flow), parsed).to_json() == ours
            theirs = asyncio.run(run_on_ag2(flow, parsed))
            if theirs == ours:
                break
    assert ours == theirs
    for key, value in expect.items():
        assert ours[key] == value, key


def test_stay_is_a_deliberate_difference() -> None:
    """AG2 never re-notifies an agent of its own message, so `stay` stalls the channel
    there; flowc prompts the same speaker again (runtime.md, "Differ, on purpose")."""
    src = """
    speaker user: human
    speaker bot
    start user
    max_turns 4
    when from user then bot
    when from bot then stay
    """
    ours, theirs = both(src, {"kickoff": "go", "script": {"bot": ["p1", "p2", "p3"]}})
    assert [t["speaker"] for t in theirs["turns"]] == ["user", "bot"]
    assert theirs["close_reason"] is None and theirs["stalled_on"] == "bot"
    assert [t["speaker"] for t in ours["turns"]] == ["user", "bot", "bot", "bot"]
    assert ours["close_reason"] == "max_turns"
    # up to where AG2 stalls, the two agree
    assert ours["turns"][:2] == theirs["turns"]


def test_bad_graphs_are_a_deliberate_difference() -> None:
    """AG2 loads a graph with a wrong-typed priority or a non-participant target and
    fails (or stalls) mid-run; flowc refuses it when the channel opens, with paths."""
    from ag2.network import TransitionGraph

    bad = {"initial_speaker": "a", "max_turns": None,
           "transitions": [{"when": {"name": "always", "args": {}},
                            "then": {"name": "agent", "args": {"agent_id": "ghost"}},
                            "priority": "high"}],
           "default_target": {"name": "terminate", "args": {"reason": "x"}}}
    TransitionGraph.loads(bad)  # AG2 accepts it
    from flowc.runtime.adapters.base import ChannelMetadata, Participant
    from flowc.runtime.adapters.workflow import WorkflowAdapter

    md = ChannelMetadata("c", "workflow", 1, "a", (Participant("a", 0), Participant("b", 1)),
                         {"graph": bad})
    with pytest.raises(GraphError) as err:
        WorkflowAdapter().validate_create(md)
    assert [p.path for p in err.value.problems] == ["transitions[0].priority"]
