"""The brute force's reading of a property on hand-made runs, against verdicts worked out
by hand from the docstring of :mod:`flowc.compiler.properties`.

A run is written as its speakers, one letter a turn (``"q p r"``: q speaks turn 1, p turn
2, r turn 3), and ends after its last turn (with ``"done"`` unless said). The atoms are
P = ``from p``, S = ``from s``, Q = ``from q``, R = ``from r``. Each case gives the turn at
which the violation is definite (:mod:`tests.property_check.meaning`), or None when the
property holds on the run.
"""

from __future__ import annotations

from typing import Any

import pytest

from flowc.compiler import model as m
from flowc.compiler import properties as p
from tests.property_check.meaning import T, holds, intervals, violation_turn

P, S, Q, R = (m.FromSpeaker(x) for x in "psqr")


def run(spec: str, reason: str = "done", **contexts: Any) -> list[T]:
    """``contexts``: ``t3={"k": 1}`` is the context after turn 3 (and later, until the next)."""
    names = spec.split()
    out: list[T] = []
    ctx: dict[str, Any] = {}
    for i, name in enumerate(names, 1):
        ctx = contexts.get(f"t{i}", ctx)
        out.append(T(name, values=dict(ctx), ended=reason if i == len(names) else None))
    return out


G = p.Globally()
B = p.Before(R)
A = p.After(Q)
BT = p.Between(Q, R)
U = p.AfterUntil(Q, R)

# (pattern, scope, run, violation turn or None)
CASES: list[tuple[Any, Any, list[T], int | None]] = [
    # ── globally: the interval [1, n] ──
    (p.Never(P), G, run("a p b"), 2),
    (p.Never(P), G, run("a b"), None),
    (p.Always(P), G, run("p p a"), 3),
    (p.Always(P), G, run("p p"), None),
    (p.Eventually(P), G, run("a b c"), 3),  # known when the run ends, after turn 3
    (p.Eventually(P), G, run("a p c"), None),
    (p.Eventually(P, 2), G, run("a b p"), 2),  # the first 2 turns passed without p
    (p.Eventually(P, 3), G, run("a b p"), None),
    # within N at the run's end: cut by max_turns before N turns, "eventually" fails then
    (p.Eventually(P, 5), G, run("a b", "max_turns"), 2),
    (p.AtMost(P, 1), G, run("p a p p"), 3),  # the second p
    (p.AtMost(P, 0), G, run("a"), None),
    (p.AtMost(P, 2), G, run("p p a"), None),
    (p.OnlyAfter(P, S), G, run("s a p"), None),
    (p.OnlyAfter(P, S), G, run("p s p"), 1),
    (p.OnlyAfter(P, P), G, run("a p"), None),  # S on P's own turn counts
    (p.Responds(P, S), G, run("p s p"), 3),  # the last p has no later turn: known at the end
    (p.Responds(P, S), G, run("p a s"), None),
    (p.Responds(P, S, 1), G, run("p a s"), 2),  # s was due by turn 1 + 1
    (p.Responds(P, S, 2), G, run("p a s"), None),
    (p.Responds(P, S, 3), G, run("a p a"), 3),  # the run ends before turn 2 + 3
    # ── before R: [1, r - 1] for the first r; none without an R ──
    (p.Never(P), B, run("p a r"), 3),  # p at 1, but the interval exists once r comes
    (p.Never(P), B, run("p a"), None),  # no R: no interval
    (p.Never(P), B, run("a r p"), None),  # p after the interval
    (p.Never(P), B, run("r p"), None),  # [1, 0]: empty
    (p.Always(P), B, run("p a r"), 3),
    (p.Always(P), B, run("r a"), None),  # empty: every turn of it has p
    (p.Eventually(P), B, run("r"), 1),  # empty: no turn of it has p
    (p.Eventually(P), B, run("a r p"), 2),
    (p.Eventually(P), B, run("a p r"), None),
    (p.Eventually(P, 1), B, run("a p r"), 3),  # failed at turn 1, known when r comes
    (p.AtMost(P, 0), B, run("a p r"), 3),
    (p.AtMost(P, 1), B, run("p a r p"), None),
    (p.OnlyAfter(P, S), B, run("p r"), 2),
    (p.OnlyAfter(P, S), B, run("s p r"), None),
    (p.Responds(P, S), B, run("s p r s"), 3),  # the s after r is outside [1, 2]
    (p.Responds(P, S, 1), B, run("p a a r"), 4),  # due at 2, known at r = 4
    (p.Responds(P, S, 1), B, run("p s a r"), None),
    # ── after Q: [q, n] for the first q ──
    (p.Never(P), A, run("p q a p"), 4),
    (p.Never(P), A, run("p a"), None),  # no Q
    (p.Never(P), A, run("p q a"), None),
    (p.Always(P), A, run("a q p"), 2),  # q's own turn is in the interval
    (p.Always(m.AnyOf((P, Q))), A, run("a q p q"), None),
    (p.Eventually(P), A, run("q a"), 2),
    (p.Eventually(P), A, run("p q"), 2),  # [2, 2] has no p
    (p.Eventually(P, 1), A, run("q a p"), 1),  # the first turn of [1, 3] has no p
    (p.Eventually(P, 2), A, run("a q p"), None),
    (p.AtMost(P, 1), A, run("p p q p p"), 5),
    (p.AtMost(P, 1), A, run("p p q p a"), None),
    (p.OnlyAfter(P, S), A, run("s q p"), 3),  # the s before q is outside [2, 3]
    (p.OnlyAfter(P, S), A, run("q s p"), None),
    (p.Responds(P, S), A, run("p q s"), None),  # the p before q is outside
    (p.Responds(P, S, 2), A, run("q p a a s"), 4),
    # ── between Q and R: [q, r - 1] for every q (not R) that an R follows ──
    (p.Never(P), BT, run("q p r"), 3),
    (p.Never(P), BT, run("q p a"), None),  # no R follows q: no interval (unclosed)
    (p.Never(P), BT, run("q r p"), None),  # [1, 1]
    (p.Never(P), p.Between(m.AnyOf((Q, R)), R), run("r p r"), None),  # Q with R opens none
    (p.Never(P), BT, run("q q p r"), 4),  # [1, 3] and [2, 3]
    (p.Always(P), BT, run("q p p r"), 4),  # q's turn has no p
    (p.Always(P), p.Between(P, R), run("p p r a"), None),
    (p.Eventually(P), BT, run("q a r"), 3),
    (p.Eventually(P), BT, run("q p r q a r"), 6),  # the second interval [4, 5]
    (p.Eventually(P), BT, run("q a a"), None),  # unclosed
    (p.Eventually(P, 1), BT, run("q a p r"), 4),
    (p.AtMost(P, 1), BT, run("q p p r"), 4),
    (p.AtMost(P, 1), BT, run("q p r p"), None),
    (p.OnlyAfter(P, S), BT, run("q s p r"), None),
    (p.OnlyAfter(P, S), BT, run("s q p r"), 4),
    (p.Responds(P, S), BT, run("q p r s"), 3),
    (p.Responds(P, S), BT, run("q p s r"), None),
    (p.Responds(P, S, 1), BT, run("q p a a r"), 5),
    # ── after Q until R: as between, and a q no R follows opens [q, n] ──
    (p.Never(P), U, run("q p a"), 2),  # unclosed: [1, 3], known from q on
    (p.Never(P), U, run("q r p"), None),
    (p.Never(P), U, run("a p"), None),  # no Q
    (p.Always(P), U, run("q r"), 1),
    (p.Always(P), p.AfterUntil(P, R), run("a p p"), None),
    (p.Eventually(P), U, run("q a a"), 3),  # unclosed: known at the end
    (p.Eventually(P), U, run("q a r"), 3),
    (p.Eventually(P, 2), U, run("q a a r"), 2),
    (p.Eventually(P, 3), U, run("q a r"), 3),  # r closes [1, 2] before its third turn
    (p.Eventually(P, 2), U, run("q p r q p a"), None),  # [1, 2] and [4, 6]
    (p.AtMost(P, 0), U, run("a p q p"), 4),
    (p.AtMost(P, 0), U, run("q r p"), None),
    (p.OnlyAfter(P, S), U, run("q p s r"), 2),
    (p.OnlyAfter(P, S), U, run("q s p"), None),
    (p.Responds(P, S), U, run("q p r s"), 3),
    (p.Responds(P, S), U, run("q p a", "max_turns"), 3),  # unclosed, cut by the cap
    (p.Responds(P, S, 1), U, run("q p a s"), 3),
    (p.Responds(P, S, 1), U, run("q p s r p"), None),  # the last p is after r
]


@pytest.mark.parametrize(("pattern", "scope", "turns", "expected"), CASES)
def test_the_meaning_on_hand_made_runs(
    pattern: Any, scope: Any, turns: list[T], expected: int | None
) -> None:
    prop = p.Property("x", pattern, scope)
    assert violation_turn(prop, turns) == expected
    assert holds(prop, turns) is (expected is None)


def test_every_pattern_under_every_scope_has_cases() -> None:
    """6 patterns x 5 scopes: each is held and broken by some hand-made run."""
    kinds = {(type(pat), type(sc), exp is None) for pat, sc, _, exp in CASES}
    for pat in (p.Never, p.Always, p.Eventually, p.AtMost, p.OnlyAfter, p.Responds):
        for sc in (p.Globally, p.Before, p.After, p.Between, p.AfterUntil):
            assert (pat, sc, True) in kinds, (pat, sc)
            assert (pat, sc, False) in kinds, (pat, sc)


def test_intervals_of_each_scope() -> None:
    turns = run("q a r q r a q")
    got = {
        type(sc).__name__: [(iv.a, iv.b) for iv in intervals(sc, turns)] for sc in (G, B, A, BT, U)
    }
    assert got == {
        "Globally": [(1, 7)],
        "Before": [(1, 2)],
        "After": [(1, 7)],
        "Between": [(1, 2), (4, 4)],  # the q at 7 has no R after it
        "AfterUntil": [(1, 2), (4, 4), (7, 7)],
    }
    assert [(iv.a, iv.b) for iv in intervals(B, run("r a"))] == [(1, 0)]  # empty


# ── expressions ──────────────────────────────────────────────────────────────


def _at(expr: Any, turns: list[T]) -> list[int]:
    """The turns where ``expr`` holds (read through ``never``: its violation turn is the first)."""
    out = []
    for t in range(1, len(turns) + 1):
        if violation_turn(p.Property("x", p.Never(expr), p.After(p.TurnIs("==", t))), turns) == t:
            out.append(t)
    return out


def test_previous_never_holds_on_the_kickoff() -> None:
    turns = run("a b a")
    assert _at(p.Previous(m.FromSpeaker("a")), turns) == [2]
    assert _at(m.Not(p.Previous(m.FromSpeaker("z"))), turns) == [1, 2, 3]
    assert _at(p.Previous(m.Not(m.FromSpeaker("z"))), turns) == [2, 3]  # not on turn 1
    assert _at(p.Previous(p.Previous(m.FromSpeaker("a"))), turns) == [3]
    # no speaker twice in a row
    twice = p.Property("x", p.Never(m.AllOf((m.FromSpeaker("b"), p.Previous(m.FromSpeaker("b"))))))
    assert holds(twice, run("b a b"))
    assert violation_turn(twice, run("a b b a")) == 3


def test_ends_with_and_without_a_reason() -> None:
    turns = run("a b", "max_turns")
    assert _at(p.Ends(), turns) == [2]
    assert _at(p.Ends("max_turns"), turns) == [2]
    assert _at(p.Ends("done"), turns) == []
    # a run cut by max_turns has ended: "eventually" is not met by a turn it never has
    assert violation_turn(p.Property("x", p.Eventually(p.Ends("done"))), turns) == 2
    assert holds(p.Property("x", p.Eventually(p.Ends())), turns)


@pytest.mark.parametrize(
    ("op", "number", "expected"),
    [
        ("==", 2, [2]),
        ("!=", 2, [1, 3]),
        ("<", 2, [1]),
        ("<=", 2, [1, 2]),
        (">", 2, [3]),
        (">=", 2, [2, 3]),
        (">", 3, []),
        ("<", 1, []),
    ],
)
def test_turn_numbers_count_the_kickoff_as_1(
    op: p.TurnOp, number: int, expected: list[int]
) -> None:
    assert _at(p.TurnIs(op, number), run("a b c")) == expected


def test_context_is_compared_as_a_rule_compares_it() -> None:
    turns = run("a b c", t1={}, t2={"j": 1, "k": "x"}, t3={"j": True})
    assert _at(m.ContextEquals("k", None), turns) == [1, 3]  # a missing key reads as null
    assert _at(m.ContextEquals("k", "x"), turns) == [2]
    assert _at(m.ContextEquals("j", True), turns) == [2, 3]  # Python's equality: 1 == True
    assert _at(m.ContextEquals("j", 1.0), turns) == [2, 3]
    assert _at(m.ContextEquals("j", "1"), turns) == []
    assert _at(m.Not(m.ContextEquals("k", "x")), turns) == [1, 3]


def test_tools_speakers_and_composites() -> None:
    turns = [T("a"), T("b", tool="t1"), T("a", tool="t2"), T("b", ended="done")]
    assert _at(m.ToolCalled("t1"), turns) == [2]
    assert _at(m.AnyOf((m.FromSpeaker("a"), m.FromSpeaker("c"))), turns) == [1, 3]
    assert _at(m.AllOf((m.FromSpeaker("b"), m.Not(m.ToolCalled("t1")))), turns) == [4]
    assert _at(m.AllOf((m.FromSpeaker("b"), m.ToolCalled("t1"), p.TurnIs(">", 2))), turns) == []


def test_an_approval_before_publishing() -> None:
    """``publish only after approve``: the same turn counts, and a scope confines it."""
    prop = p.Property("x", p.OnlyAfter(m.ToolCalled("publish"), m.ToolCalled("approve")))
    ok = [T("u"), T("r", tool="approve"), T("w", tool="publish", ended="done")]
    bad = [T("u"), T("w", tool="publish"), T("r", tool="approve", ended="done")]
    assert holds(prop, ok)
    assert violation_turn(prop, bad) == 2
