"""The same scripted runs on flowc's hub and on the real ``ag2==1.2.1`` hub, offline.

AG2 is driven with ``TestConfig``-scripted ``Agent``s (real AG2 tools that call
``set_context`` and return ``Handoff`` / ``Finish``) and ``HumanClient`` seeders
(``tests/runtime/ag2_harness.py``). Each case asserts identical turns (speaker, kind,
routing), close reason, context and turn count. The deliberate differences are
separate tests that state them.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
from typing import Any

import pytest

import flowc
from flowc.compiler.analysis import CheckOptions, check_source
from flowc.compiler.analysis.ag2diff import inbox_failure
from flowc.runtime.adapters.workflow import GraphError
from flowc.runtime.script import ScriptError, parse_script
from flowc.runtime.script_run import run_script_sync
from flowc.runtime.target import RunTarget
from flowc.source import SourceFile

pytest.importorskip("ag2.network")
from tests.runtime.ag2_harness import parity, run_on_ag2

CASES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "sequence": (
        """
        speaker user: human
        speakers researcher, writer, editor
        sequence user -> researcher -> writer -> editor
        """,
        {
            "kickoff": "Topic: HTTPS",
            "script": {
                "researcher": ["three facts"],
                "writer": ["a paragraph"],
                "editor": ["the final text"],
            },
        },
        {"close_reason": "sequence_complete", "turn_count": 4},
    ),
    "round robin with humans": (
        """
        speakers alice: human, bot, carol: human
        round_robin alice, bot, carol
        max_turns 7
        """,
        {
            "kickoff": "Topic?",
            "script": {"alice": ["a2", "a3"], "bot": ["b1", "b2", "b3"], "carol": ["c1", "c2"]},
        },
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
        {
            "kickoff": "Write on HTTPS",
            "script": {
                "drafter": ["Draft 1", "Draft 2"],
                "reviewer": [
                    "Tighten it",
                    {"tool": "approve", "args": {"reason": "good"}, "say": "Approved"},
                ],
            },
        },
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
        {
            "kickoff": "Compare three GPU clouds",
            "script": {
                "coordinator": [
                    {"tool": "ask_research", "args": {"reason": "need prices"}, "say": "Research"},
                    {"tool": "ask_analysis", "say": "Analyse"},
                    "The report",
                ],
                "researcher": [{"tool": "report", "args": {"reason": "found"}, "say": "Prices"}],
                "analyst": ["Cheapest is B"],
            },
        },
        {"close_reason": "done", "turn_count": 6},
    ),
    "handoff bypasses a priority -100 rule; a helper call beside it": (
        """
        speaker user: human
        speaker triage {
          tool lookup
          tool note sets seen = true
          tool transfer hands off to security
        }
        speaker security { tool lock finishes "secured" }
        start user
        max_turns 20
        when context.seen == true and from triage then user priority -100
        when from user then triage
        when from triage then user
        when from security then user
        """,
        {
            "kickoff": "My account was hacked",
            "script": {
                "triage": [
                    {"tool": "note", "say": "Noted."},
                    {
                        "tools": [
                            {"tool": "lookup", "args": {"q": "acct"}},
                            {"tool": "transfer", "args": {"reason": "hacked"}},
                        ],
                        "say": "Transferring you.",
                    },
                ],
                "user": ["It was this morning"],
                "security": [{"tool": "lock", "say": "Locked."}],
            },
        },
        {"close_reason": "secured", "turn_count": 5, "context_vars": {"seen": True}},
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
        {
            "kickoff": "Hi",
            "script": {
                "bot": [{"tool": "chat_mode", "say": "Let's chat"}, "b2"],
                "critic": ["c1", "c2"],
                "user": ["u2", "u3"],
            },
        },
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
        {
            "kickoff": "help",
            "script": {"security": ["on it"], "user": ["thanks"]},
        },
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
        {
            "kickoff": "It does not work.",
            "script": {
                "triage": ["What does not work?", {"tool": "route_tech"}],
                "customer": ["The app crashes on start."],
                "tech": ["Fixed."],
            },
        },
        {
            "close_reason": None,
            "turn_count": 3,
            "stalled_on": "triage",
            "context_vars": {"category": "tech"},
        },
    ),
    "finish and handoff as objects; a handoff's routing reason is its own": (
        """
        speaker user: human
        speaker triage {
          tool escalate hands off to security
          tool close finishes "resolved"
        }
        speaker security
        start user
        max_turns 10
        when from user then triage
        when from triage then user
        when from security then user
        """,
        {
            "kickoff": "Someone logged in from abroad",
            "script": {
                "triage": [
                    {
                        "tool": "escalate",
                        "args": {"reason": "suspicious login"},
                        "handoff": {"target": "security", "reason": "security review"},
                        "say": "Escalating.",
                    },
                    {
                        "tool": "close",
                        "finish": {"reason": "resolved", "summary": "account locked"},
                        "say": "Done.",
                    },
                ],
                "security": ["Locked."],
                "user": ["Thanks"],
            },
        },
        {"close_reason": "resolved", "turn_count": 5},
    ),
    "a handoff without a reason records none, whatever the call's reason argument": (
        """
        speaker user: human
        speaker triage { tool escalate hands off to security }
        speaker security { tool done finishes }
        start user
        max_turns 6
        when from user then triage
        when from security then terminate "secured"
        """,
        {
            "kickoff": "hacked",
            "script": {
                "triage": [
                    {
                        "tool": "escalate",
                        "args": {"reason": "hacked"},
                        "handoff": "security",
                        "say": "Escalating.",
                    }
                ],
                "security": [{"finish": {"summary": "locked"}, "say": "Locked."}],
            },
        },
        {"close_reason": "finished", "turn_count": 3},
    ),
    'an empty finish reason closes the run as "finished"': (
        """
        speaker user: human
        speaker bot { tool close finishes "" }
        start user
        max_turns 6
        when from user then bot
        """,
        {"kickoff": "go", "script": {"bot": [{"tool": "close", "say": "bye"}]}},
        {"close_reason": "finished", "turn_count": 2},
    ),
    "an alternative that hands off and finishes: the finish wins": (
        """
        speaker user: human
        speaker bot { tool both hands off to user, finishes "" | hands off to user }
        start user
        max_turns 6
        when from user then bot
        """,
        {"kickoff": "go", "script": {"bot": [{"tool": "both", "finish": "", "say": "bye"}]}},
        {"close_reason": "finished", "turn_count": 2},
    ),
    'an empty terminate reason closes the run as "workflow_terminated"': (
        """
        speaker user: human
        speaker bot
        start user
        max_turns 6
        when from user then bot
        when from bot then terminate ""
        """,
        {"kickoff": "go", "script": {"bot": ["done"]}},
        {"close_reason": "workflow_terminated", "turn_count": 2},
    ),
}


def both(src: str, script_data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    flow = flowc.compile_flow(src)
    script = parse_script(script_data)
    ours = parity(run_script_sync(RunTarget.from_compiled(flow), script).to_json())
    theirs = asyncio.run(run_on_ag2(flow, script))
    return ours, theirs


@pytest.mark.parametrize("name", list(CASES))
def test_same_run_on_both_runtimes(name: str) -> None:
    src, script, expect = CASES[name]
    ours, theirs = both(src, script)
    assert json.dumps(ours, sort_keys=True) == json.dumps(theirs, sort_keys=True)
    for key, value in expect.items():
        assert ours[key] == value, key


#: routing back to the speaker who just spoke: AG2 delivers a broadcast packet to every
#: participant but its sender (``Hub`` notify: ``p.agent_id != envelope.sender_id``), so
#: that speaker is never told it has the turn again and the channel stalls; flowc
#: prompts it again (docs/runtime.md, "Deliberate differences from AG2")
SELF_ROUTING: dict[str, tuple[str, dict[str, Any]]] = {
    "stay": (
        """
        speaker user: human
        speaker bot
        start user
        max_turns 4
        when from user then bot
        when from bot then stay
        """,
        {"kickoff": "go", "script": {"bot": ["p1", "p2", "p3"]}},
    ),
    "agent X on X's own turn": (
        """
        speaker user: human
        speaker bot
        start user
        max_turns 4
        when from user then bot
        when from bot then bot
        """,
        {"kickoff": "go", "script": {"bot": ["p1", "p2", "p3"]}},
    ),
    "initiator when the initiator just spoke": (
        """
        speaker user: human
        speaker bot
        start user
        initiator bot
        max_turns 4
        when from user then bot
        when from bot then initiator
        """,
        {"kickoff": "go", "script": {"bot": ["p1", "p2", "p3"]}},
    ),
    "a handoff to oneself": (
        """
        speaker user: human
        speaker bot { tool again hands off to bot }
        start user
        max_turns 4
        when from user then bot
        when from bot then terminate "done"
        """,
        {"kickoff": "go", "script": {"bot": [{"tool": "again", "say": "p1"}, "p2", "p3"]}},
    ),
}


def ag2_findings(src: str, code: str) -> list[Any]:
    """What ``flowc check --target ag2`` reports of ``code`` for ``src``."""
    found = check_source(SourceFile("f.flow", textwrap.dedent(src)), CheckOptions(target="ag2"))
    return [d for d in found if d.code.id == code]


@pytest.mark.parametrize("name", list(SELF_ROUTING))
def test_routing_back_to_the_speaker_is_a_deliberate_difference(name: str) -> None:
    src, script = SELF_ROUTING[name]
    ours, theirs = both(src, script)
    assert [t["speaker"] for t in theirs["turns"]] == ["user", "bot"]
    assert theirs["close_reason"] is None and theirs["stalled_on"] == "bot"
    assert [t["speaker"] for t in ours["turns"]][:3] == ["user", "bot", "bot"]
    assert ours["close_reason"] in ("max_turns", "done") and "stalled_on" not in ours
    # up to where AG2 stalls, the two agree
    assert ours["turns"][:2] == theirs["turns"]
    # and `check --target ag2` says so (W221), with the run and where AG2 stops
    [finding] = ag2_findings(src, "W221")
    assert finding.notes[0].startswith("a run that shows it: user → bot")
    assert (
        f"the run stops after turn {theirs['turn_count']}, open, waiting for `bot` "
        "(`stalled_on: bot`)" in finding.notes[1]
    )


#: AG2's ``_resolve_routing`` makes a call a routing call only when a top-level
#: ``ToolCalled`` rule names it; a `tool` condition inside `and` / `not` (flowc's
#: composites) then never sees it. flowc counts the nested names too.
NESTED_TOOL = {
    "tool T and from X": (
        """
        speaker user: human
        speaker bot { tool escalate }
        speaker security
        start user
        max_turns 6
        when tool escalate and from bot then security
        when from user then bot
        when from bot then terminate "answered"
        when from security then terminate "secured"
        """,
        {
            "kickoff": "go",
            "script": {"bot": [{"tool": "escalate", "say": "Escalating"}], "security": ["ok"]},
        },
        ("secured", "answered"),
    ),
    "from X and not tool T": (
        """
        speaker user: human
        speaker bot { tool chat }
        speaker security
        start user
        max_turns 6
        when from bot and not tool chat then security
        when from user then bot
        when from bot then terminate "chatted"
        when from security then terminate "secured"
        """,
        {
            "kickoff": "go",
            "script": {"bot": [{"tool": "chat", "say": "hello"}], "security": ["ok"]},
        },
        ("chatted", "secured"),
    ),
}


@pytest.mark.parametrize("name", list(NESTED_TOOL))
def test_a_tool_condition_inside_a_composite_routes_a_deliberate_difference(name: str) -> None:
    src, script, (mine, ag2s) = NESTED_TOOL[name]
    ours, theirs = both(src, script)
    assert ours["close_reason"] == mine and theirs["close_reason"] == ag2s
    bot = next(t["routing"] for t in ours["turns"] if t["speaker"] == "bot")
    assert bot["kind"] == "handoff" and bot["tool"] in ("escalate", "chat")
    assert next(t["routing"] for t in theirs["turns"] if t["speaker"] == "bot") == {"kind": "text"}
    # `check --target ag2` says so (W218), with where AG2 routes that turn
    [finding] = ag2_findings(src, "W218")
    after = [t["speaker"] for t in theirs["turns"]][2:]  # who AG2 gave the turn after bot's
    where = after[0] if after else f'terminate "{ag2s}"'
    assert f"routes as a plain reply: → {where} (" in finding.notes[1]


def test_a_run_past_the_inbox_limit_stops_on_ag2_where_check_says() -> None:
    """W220's turn is AG2's: with every client's inbox limit at 10 (instead of 1,000), AG2
    refuses the post of the turn that :func:`inbox_failure` computes, and the run stops."""
    for src in (
        """
        speaker user: human
        speakers writer, critic
        start user
        max_turns 40
        when from user then writer
        when from writer then critic
        when from critic then writer
        """,
        """
        speakers user: human, alice, bob
        round_robin user, alice, bob
        max_turns 40
        """,
    ):
        flow = flowc.compile_flow(src)
        n = 40
        script = parse_script(
            {"kickoff": "go", "script": {s: [f"{s}{i}" for i in range(n)] for s in flow.speakers}}
        )
        ours = parity(run_script_sync(RunTarget.from_compiled(flow), script).to_json())
        theirs = asyncio.run(run_on_ag2(flow, script, settle=True, inbox_limit=10))
        assert ours["close_reason"] == "max_turns" and ours["turn_count"] == n
        speakers = [t["speaker"] for t in ours["turns"]]
        turn, full = inbox_failure(speakers, list(flow.speakers), None, limit=10)
        assert theirs["turn_count"] == turn - 1 and theirs["close_reason"] is None
        assert theirs["stalled_on"] == speakers[turn - 1], (turn, full)
        assert theirs["turns"] == ours["turns"][: turn - 1]


def test_a_reply_with_two_calls_the_flow_sees_is_refused_and_races_on_ag2() -> None:
    """A reply that clears `j` and then sets it: flowc refuses it before the run (a reply
    makes one call the flow can see: the contract every verdict rests on). AG2 1.2.1
    takes it and runs the two calls as concurrent tasks, each writing when it gets there:
    with the first call's tool slower (as one that waits on I/O is), `j` ends unset, not
    as the reply's order would leave it (measured without the delay: the first call's
    write stayed in 2 runs of 30 with the CPUs busy). `check --target ag2` says so (W222),
    with a run to the reply."""
    src = textwrap.dedent(
        """
        speaker user: human
        speaker a {
          tool t1 clears j
          tool t3 sets j = 1
        }
        start user
        initiator user
        max_turns 3
        when from user then a
        when from a then user
        """
    )
    flow = flowc.compile_flow(src)
    script = parse_script(
        {
            "kickoff": "go",
            "script": {
                "user": ["u0"],
                "a": [{"tools": [{"tool": "t1"}, {"tool": "t3"}], "say": "done"}],
            },
        }
    )
    with pytest.raises(ScriptError, match=r"made 2 calls in one reply that the flow can see"):
        run_script_sync(RunTarget.from_compiled(flow), script)
    theirs = asyncio.run(run_on_ag2(flow, script, settle=True, slow=frozenset({0}), checked=False))
    assert theirs["context_vars"] == {} and theirs["turn_count"] == 3
    [finding] = ag2_findings(src, "W222")
    assert "user → a, whose reply calls `t1`, then `t3`" in finding.notes[0]
    assert "on AG2 1.2.1 it may end with j unset" in finding.notes[0]


def test_bad_graphs_are_a_deliberate_difference() -> None:
    """AG2 loads a graph with a wrong-typed priority or a non-participant target and
    fails (or stalls) mid-run; flowc refuses it when the channel opens, with paths."""
    from ag2.network import TransitionGraph

    bad = {
        "initial_speaker": "a",
        "max_turns": None,
        "transitions": [
            {
                "when": {"name": "always", "args": {}},
                "then": {"name": "agent", "args": {"agent_id": "ghost"}},
                "priority": "high",
            }
        ],
        "default_target": {"name": "terminate", "args": {"reason": "x"}},
    }
    TransitionGraph.loads(bad)  # AG2 accepts it
    from flowc.runtime.adapters.base import ChannelMetadata, Participant
    from flowc.runtime.adapters.workflow import WorkflowAdapter

    md = ChannelMetadata(
        "c", "workflow", 1, "a", (Participant("a", 0), Participant("b", 1)), {"graph": bad}
    )
    with pytest.raises(GraphError) as err:
        WorkflowAdapter().validate_create(md)
    assert [p.path for p in err.value.problems] == ["transitions[0].priority"]


def test_the_routing_records_the_handoffs_reason_and_the_finishs_summary() -> None:
    """AG2's ``_resolve_routing`` records a returned ``Handoff``'s own ``reason`` (empty
    when it has none; the call's ``reason`` argument is only used for a tool a rule routes
    on) and a ``Finish``'s ``reason`` and ``summary``: both runtimes, same records."""
    for name, expected in (
        (
            "finish and handoff as objects; a handoff's routing reason is its own",
            [
                {
                    "kind": "handoff",
                    "tool": "escalate",
                    "reason": "security review",
                    "target": "security",
                },
                {
                    "kind": "finish",
                    "tool": "close",
                    "reason": "resolved",
                    "summary": "account locked",
                },
            ],
        ),
        (
            "a handoff without a reason records none, whatever the call's reason argument",
            [
                {"kind": "handoff", "tool": "escalate", "reason": "", "target": "security"},
                {"kind": "finish", "tool": "done", "reason": "finished", "summary": "locked"},
            ],
        ),
    ):
        src, script, _ = CASES[name]
        ours, theirs = both(src, script)
        for run in (ours, theirs):
            routed = [
                t["routing"]
                for t in run["turns"]
                if t["routing"] and t["routing"]["kind"] != "text"
            ]
            assert routed == expected, (name, run)
