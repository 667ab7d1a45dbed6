"""The brute force (enumerator and meaning together) on hand-written flows, against runs
and verdicts worked out by hand: this branch's check of itself, without the checker.

Each case is (property, the length of the shortest run that shows it broken, or None
when it holds on every run), with the reasoning in a comment.
"""

from __future__ import annotations

from typing import Any

import pytest

from flowc.compiler import model as m
from flowc.compiler import properties as p
from tests.property_check.differential import least_violation
from tests.property_check.runs import Runs

F = m.FromSpeaker


def prop(pattern: Any, scope: Any = None) -> p.Property:
    return p.Property("x", pattern, scope or p.Globally())


def runs_of(text: str, props: list[p.Property]) -> Runs:
    return Runs(text, props)


def shown(runs: Runs) -> set[str]:
    """Each run as ``speaker(tool)`` turns and its ending."""
    return {
        " ".join(r.speaker + (f"({r.tool})" if r.tool else "") for r in run) + f" | {run[-1].ended}"
        for run in runs.runs()
    }


# ── a line: user -> a -> b -> user, cut by the cap ────────────────────────────

LINE = """\
speaker user
speaker a
speaker b
start user
when from user then a
when from a then b
otherwise user
max_turns 4
"""

LINE_CASES = [
    # b speaks turn 3
    (prop(p.Never(F("b"))), 3),
    # the only run is cut by the cap
    (prop(p.Eventually(p.Ends("max_turns"))), None),
    (prop(p.Eventually(p.Ends("after_work"))), 4),
    # a (turn 2) is answered by b on turn 3
    (prop(p.Responds(F("a"), F("b"), 1)), None),
    # b (turn 3) is never answered by a: the run ends after turn 4
    (prop(p.Responds(F("b"), F("a"))), 4),
    # user speaks turns 1 and 4
    (prop(p.AtMost(F("user"), 1)), 4),
    # R (user) holds on turn 1: the interval [1, 0] is empty, and has no b
    (prop(p.Eventually(F("b")), p.Before(F("user"))), 1),
    # from a (turn 2) until the next user (turn 4): [2, 3] has b
    (prop(p.Eventually(F("b")), p.Between(F("a"), F("user"))), None),
    # from b on (turns 3-4), the turn before was a's on turn 3
    (prop(p.Never(p.Previous(F("a"))), p.After(F("b"))), 3),
    (prop(p.Never(p.Previous(F("user"))), p.After(F("b"))), None),
    (prop(p.Always(p.TurnIs("<=", 4))), None),
    (prop(p.Never(m.AllOf((F("a"), p.TurnIs("==", 2))))), 2),
]


def test_a_line_has_one_run() -> None:
    runs = runs_of(LINE, [])
    assert shown(runs) == {"user a b user | max_turns"}


@pytest.mark.parametrize(("the_prop", "expected"), LINE_CASES)
def test_a_line(the_prop: p.Property, expected: int | None) -> None:
    assert least_violation(runs_of(LINE, [the_prop]), the_prop) == expected


# ── a tool that routes two ways, at and before the cap ───────────────────────

ROUTER = """\
speaker a {
  tool route hands off to b | hands off to c
}
speaker b
speaker c
start a
when from b then terminate "b"
when from c then terminate "c"
otherwise a
max_turns 4
"""

ROUTER_CASES = [
    # a a a a: four turns of text and no b or c
    (prop(p.Eventually(m.AnyOf((p.Ends("b"), p.Ends("c"))))), 4),
    # a (kickoff, plain), a (route to c), c
    (prop(p.Never(F("c"))), 3),
    # a route on turn 4 (the cap) has no turn after it; earlier ones always do
    (prop(p.Responds(m.ToolCalled("route"), m.AnyOf((F("b"), F("c"))), 1)), 4),
    # the kickoff is a plain message
    (prop(p.Never(m.AllOf((m.ToolCalled("route"), p.TurnIs("==", 1))))), None),
    # the run that routes to b on turn 2 has b on turn 3
    (prop(p.Always(p.TurnIs("!=", 3)), p.After(F("b"))), 3),
    # every b or c ends the run at once
    (prop(p.AtMost(m.AnyOf((F("b"), F("c"))), 1)), None),
    (prop(p.Never(p.Ends("max_turns")), p.After(F("b"))), None),
]


def test_the_router_runs() -> None:
    # a hand-off on the cap's turn ends the run there ("max_turns"): both hand-offs of
    # turn 4 make the same turn (a called route, the run ends) and count once
    assert shown(runs_of(ROUTER, [])) == {
        "a a(route) b | b",
        "a a(route) c | c",
        "a a a(route) b | b",
        "a a a(route) c | c",
        "a a a a | max_turns",
        "a a a a(route) | max_turns",
    }


@pytest.mark.parametrize(("the_prop", "expected"), ROUTER_CASES)
def test_the_router(the_prop: p.Property, expected: int | None) -> None:
    assert least_violation(runs_of(ROUTER, [the_prop]), the_prop) == expected


# ── an escalation decided by a custom condition ───────────────────────────────

ESCALATION = """\
condition angry()
speaker user
speaker bot
speaker agent
start user
when from user and angry() then agent
when from user then bot
when from bot then user
when from agent then terminate "resolved"
max_turns 6
"""

ESCALATION_CASES = [
    # user bot user bot: no agent among the first 4 turns
    (prop(p.Eventually(F("agent"), 4)), 4),
    # the earliest agent after a bot: user bot user agent
    (prop(p.Never(F("agent")), p.After(F("bot"))), 4),
    # user bot user bot user bot: the third bot speaks turn 6
    (prop(p.AtMost(F("bot"), 2)), 6),
    # no speaker twice in a row: bot and user alternate, agent ends the run
    (
        prop(p.Never(m.AnyOf(tuple(m.AllOf((F(s), p.Previous(F(s)))) for s in ("user", "bot"))))),
        None,
    ),
    # every run ends by the agent ("resolved") or by the cap; an agent on the cap's turn
    # terminated it itself
    (prop(p.Eventually(m.AnyOf((p.Ends("resolved"), p.Ends("max_turns"))))), None),
    (prop(p.Never(m.AllOf((F("agent"), p.Ends("max_turns"))))), None),
    (prop(p.Eventually(p.Ends("resolved"))), 6),
    # the agent only ever answers the user
    (prop(p.Always(p.Previous(F("user"))), p.After(F("agent"))), None),
]


def test_the_escalation_runs() -> None:
    assert shown(runs_of(ESCALATION, [])) == {
        "user agent | resolved",
        "user bot user agent | resolved",
        "user bot user bot user agent | resolved",
        "user bot user bot user bot | max_turns",
    }


@pytest.mark.parametrize(("the_prop", "expected"), ESCALATION_CASES)
def test_the_escalation(the_prop: p.Property, expected: int | None) -> None:
    assert least_violation(runs_of(ESCALATION, [the_prop]), the_prop) == expected


# ── a human writes a value no rule compares ───────────────────────────────────

REFUND = """\
speaker user: human {
  sets status
}
speaker bot {
  tool refund sets status = "refunded"
}
start user
context status = "new"
when from user then bot
when tool refund then terminate "done"
otherwise user
max_turns 3
"""

REFUND_CASES = [
    # no rule compares status with "escalated", but the human may write it on the kickoff
    (prop(p.Never(m.ContextEquals("status", "escalated"))), 1),
    # the status stays "new" until the bot speaks unless the human writes: broken on
    # turn 1, known when the bot speaks (turn 2)
    (prop(p.Always(m.ContextEquals("status", "new")), p.Before(F("bot"))), 2),
    # the human may clear it too (a missing key reads as null)
    (prop(p.Never(m.ContextEquals("status", None))), 1),
    # "refunded" is written by the tool, on turn 2 at the earliest; the human may write
    # it too
    (prop(p.Never(m.ContextEquals("status", "refunded"))), 1),
    (prop(p.Never(m.ToolCalled("refund")), p.Before(F("bot"))), None),
    # a refund ends the run at once ("done")...
    (prop(p.Always(p.Ends("done")), p.After(m.ToolCalled("refund"))), None),
    # ... so no later turn answers it: a response is on a later turn
    (prop(p.Responds(m.ToolCalled("refund"), p.Ends("done"), 1)), 2),
    # a human is asked before a refund: the kickoff is the user's
    (prop(p.OnlyAfter(m.ToolCalled("refund"), F("user"))), None),
    # user bot user: the cap, no refund
    (prop(p.Eventually(m.ToolCalled("refund"))), 3),
]


def test_the_human_writes_values_no_rule_compares() -> None:
    runs = runs_of(REFUND, [p for p, _ in REFUND_CASES])
    # the kickoff: the status kept, cleared, or written "escalated", "refunded" (the
    # properties' values) or another value
    firsts = {run[0].values.get("status") for run in runs.runs()}
    assert {"new", None, "escalated", "refunded"} < firsts and len(firsts) == 5


@pytest.mark.parametrize(("the_prop", "expected"), REFUND_CASES)
def test_the_refund(the_prop: p.Property, expected: int | None) -> None:
    assert least_violation(runs_of(REFUND, [the_prop]), the_prop) == expected


# ── a custom target that may end the run ──────────────────────────────────────

PICK = """\
target pick() -> b | terminate
speaker a
speaker b
start a
when from a then pick()
otherwise terminate "end"
max_turns 3
"""

PICK_CASES = [
    # a | pick ends it, with any reason (a plugin's target gives it; none is
    # "workflow_terminated"); a b | "end"
    (prop(p.Never(p.Ends("workflow_terminated"))), 1),
    (prop(p.Eventually(p.Ends("workflow_terminated"))), 1),  # a | "§another reason§"
    (prop(p.Eventually(m.AnyOf((p.Ends("workflow_terminated"), p.Ends("end"))))), 1),
    (prop(p.Never(p.Ends("max_turns"))), 1),  # even the cap's reason, on turn 1
    (prop(p.Eventually(p.Ends())), None),
    (prop(p.Never(m.AllOf((F("b"), p.Ends("workflow_terminated"))))), None),
    (prop(p.Eventually(F("b"))), 1),
    (prop(p.Always(p.TurnIs("<", 3))), None),
]


def test_the_pick_runs() -> None:
    assert shown(runs_of(PICK, [])) == {"a | workflow_terminated", "a b | end"}
    # the reasons a property names, and one it does not
    named = [prop(p.Eventually(m.AnyOf((p.Ends("workflow_terminated"), p.Ends("x")))))]
    assert shown(runs_of(PICK, named)) == {
        "a | workflow_terminated",
        "a | x",
        "a | §another reason§",
        "a b | end",
    }


@pytest.mark.parametrize(("the_prop", "expected"), PICK_CASES)
def test_the_pick(the_prop: p.Property, expected: int | None) -> None:
    assert least_violation(runs_of(PICK, [the_prop]), the_prop) == expected
