"""Turn numbers, ``within N`` and ``at most N`` against ``max_turns``: a run has at most
``max_turns`` turns, so a bound past it is decided at once (a ``turn OP N`` with N past
the cap has one value on every turn; a ``within N`` or ``at most N`` with N at or past
it is never reached), and the answer is the brute force's at, just below and just past
the cap."""

from __future__ import annotations

from typing import Any

import pytest

from flowc import compile_flow
from flowc.compiler import model as m
from flowc.compiler import properties as p
from flowc.compiler.analysis import properties as checker
from tests.property_check.differential import disagreements
from tests.property_check.runs import Runs

F = m.FromSpeaker

LOOP = """\
speaker u: human
speaker a
speaker b {
  tool stop finishes "done"
}
start u
max_turns {cap}
when from u then a
when from a then b
when from b then a
"""

HUGE = 10**30


def _props(n: int) -> list[p.Property]:
    out: list[Any] = []
    for op in ("<", "<=", "==", "!=", ">=", ">"):
        out.append(p.Never(p.TurnIs(op, n)))
        out.append(p.Always(p.TurnIs(op, n)))
        out.append(p.Eventually(p.TurnIs(op, n)))
    if n >= 1:
        out += [
            p.Eventually(p.Ends(), n),
            p.Eventually(m.ToolCalled("stop"), n),
            p.Responds(F("a"), m.ToolCalled("stop"), n),
        ]
    out.append(p.AtMost(F("a"), n))
    out.append(p.AtMost(p.TurnIs(">=", 1), n))  # (true on every turn: broken by cap - 1)
    scoped = [p.Property(f"x{i}", pat, p.Globally()) for i, pat in enumerate(out)]
    return [*scoped, p.Property("y", p.Never(F("b")), p.After(p.TurnIs(">", n)))]


@pytest.mark.parametrize("n", range(0, 7))
def test_bounds_around_the_cap_agree_with_the_brute_force(n: int) -> None:
    text = LOOP.replace("{cap}", "4")
    props = _props(n)
    results = checker.decide(compile_flow(text), props)
    assert disagreements(Runs(text, props), props, results) == []


def test_huge_bounds_past_a_huge_cap_are_decided() -> None:
    # an odd cap: `a` speaks on even turns, so no run is cut with `a` waiting for `b` (with
    # an even cap the response is broken at the cap, by a run as long as the cap)
    text = LOOP.replace("{cap}", str(10**26 + 1))
    cases = [
        (p.Never(p.TurnIs(">=", HUGE)), "holds"),
        (p.Always(p.TurnIs("<", HUGE)), "holds"),
        (p.Never(p.TurnIs("==", HUGE)), "holds"),
        (p.Always(p.TurnIs(">", HUGE)), "violated"),
        (p.AtMost(F("a"), HUGE), "holds"),
        # holds (with an odd cap no run is cut with `a` waiting), but whether a run cut by
        # the cap breaks it is a walk of 10**26 turns: not built, so unknown, never "holds"
        # and never a memory error (both were a MemoryError)
        (p.Responds(F("a"), F("b"), HUGE), "unknown"),
        (p.Eventually(m.ToolCalled("stop")), "unknown"),  # broken at the cap: the same
    ]
    props = [p.Property(f"x{i}", pat, p.Globally()) for i, (pat, _) in enumerate(cases)]
    results = checker.decide(compile_flow(text), props)
    assert [r.verdict for r in results] == [v for _, v in cases]
    for r in results[-2:]:  # says why, and what decides it (not the exploration's bound)
        assert r.note is not None and "not decided: such a run is longer than" in r.note
        assert r.fix == "check the property with a `max_turns` of at most 10,000,000"
