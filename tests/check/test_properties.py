"""Deciding properties (issue 27): each pattern under each scope on a small flow with a known
answer, the shortest run, partial analyses, custom conditions, the abstraction, runs that
never end, the findings, and a differential test against a reference evaluator written
from the meaning in ``flowc/compiler/properties.py`` (``tests/check/property_reference.py``).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from flowc import compile_flow
from flowc.compiler import model as m
from flowc.compiler.analysis import CheckOptions, SpaceCache, check_compiled
from flowc.compiler.analysis import properties as decider
from flowc.compiler.analysis.explore import explore
from flowc.compiler.analysis.prop_system import comparisons
from flowc.compiler.analysis.properties import (
    decide,
    decide_on,
    property_literals,
    system_for,
)
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.lower import CompiledFlow
from flowc.compiler.monitor import walk
from flowc.compiler.properties import (
    After,
    AfterUntil,
    Always,
    AtMost,
    Before,
    Between,
    Ends,
    Eventually,
    Globally,
    Never,
    OnlyAfter,
    Previous,
    Property,
    Responds,
    TurnIs,
    expressions,
)
from flowc.diagnostics import render_json, render_sarif
from tests.check.check_replay import replay
from tests.check.property_gen import flow_text, prop
from tests.check.property_reference import reference

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_analysis import Shape, generate
from bench_analysis import properties as bench_properties

# The flow of the table below. Its runs: the user opens (turn 1), the bot answers (the
# run ends "answered"), escalates to the agent, or replies plainly to the user; the agent
# and the user always hand back (agent -> user -> bot). `max_turns 6` cuts the others:
#   U B(answer)                          ends "answered" after turn 2
#   U B U B(answer), U B A U B(answer)   ends after turns 4 and 5
#   U B U B U B, U B A U B A, ...        cut at turn 6 ("max_turns")
SUPPORT = """\
speaker user: human
speaker bot { tool escalate tool answer }
speaker agent
max_turns 6
when from user then bot
when tool escalate then agent
when tool answer then terminate "answered"
when from bot then user
when from agent then user
"""

U, B, A = m.FromSpeaker("user"), m.FromSpeaker("bot"), m.FromSpeaker("agent")
ESC, ANS = m.ToolCalled("escalate"), m.ToolCalled("answer")
HOLDS = None

#: (pattern, scope, fewest turns of a run that breaks it or HOLDS, why)
TABLE: list[tuple[Any, Any, int | None, str]] = [
    # ── globally ──
    (Never(ESC), Globally(), 2, "the bot escalates on its first turn"),
    (Always(m.Not(ANS)), Globally(), 2, "the bot answers on its first turn"),
    (Eventually(Ends("answered")), Globally(), 6, "a run that never answers is cut at 6"),
    (AtMost(A, 1), Globally(), 6, "U B(esc) A U B(esc) A: the agent twice, on turn 6"),
    (OnlyAfter(ANS, U), Globally(), HOLDS, "turn 1 is always the user's"),
    (
        Responds(ESC, A, within=1),
        Globally(),
        6,
        "the agent follows an escalation, unless it is on turn 6, the last",
    ),
    # ── before R (R: the first escalation) ──
    (Never(ANS), Before(ESC), HOLDS, "an answer ends the run: no escalation follows it"),
    (Always(m.Not(A)), Before(ESC), HOLDS, "only an escalation brings the agent"),
    (
        Eventually(ANS),
        Before(ESC),
        2,
        "U B(esc): the interval [1, 1] has no answer; broken when R comes, on turn 2",
    ),
    (
        AtMost(B, 1),
        Before(ESC),
        6,
        "U B U B U B(esc): the bot on turns 2 and 4 before the escalation on turn 6",
    ),
    (OnlyAfter(ANS, A), Before(ESC), HOLDS, "no answer is ever followed by an escalation"),
    (
        Responds(B, U, within=1),
        Before(ESC),
        HOLDS,
        "before the first escalation every bot turn is plain, and the user follows it",
    ),
    # ── after Q (Q: the first escalation) ──
    (Never(U), After(ESC), 4, "U B(esc) A U: the user on turn 4"),
    (Never(B), After(ESC), 2, "the interval starts on the escalation: the bot's own turn"),
    (Always(m.Not(ANS)), After(ESC), 5, "U B(esc) A U B(answer)"),
    (Eventually(A), After(ESC), 6, "an escalation on turn 6 has no turn after it"),
    (AtMost(A, 1), After(ESC), 6, "U B(esc) A U B(esc) A"),
    (OnlyAfter(ANS, A), After(ESC), HOLDS, "the agent speaks right after the escalation"),
    (
        Responds(A, ANS),
        After(ESC),
        6,
        "after the agent no answer comes before the cap (every run through it to 6)",
    ),
    # ── after Q before R (Q: an escalation, R: an answer) ──
    (Never(U), Between(ESC, ANS), 5, "U B(esc) A U B(answer): the user on turn 4, R on 5"),
    (Always(m.Not(Ends())), Between(ESC, ANS), HOLDS, "the run goes on until R"),
    (Eventually(A), Between(ESC, ANS), HOLDS, "the agent speaks right after the escalation"),
    (
        AtMost(B, 1),
        Between(ESC, ANS),
        HOLDS,
        "a second bot turn before the answer needs 7 turns: past max_turns 6",
    ),
    (OnlyAfter(U, A), Between(ESC, ANS), HOLDS, "agent, then user, after an escalation"),
    (Responds(ESC, A, within=1), Between(ESC, ANS), HOLDS, "the agent before any answer"),
    # ── after Q until R (Q: an escalation, R: an answer) ──
    (Never(U), AfterUntil(ESC, ANS), 4, "U B(esc) A U: broken at once, R or not"),
    (Always(B), AfterUntil(ESC, ANS), 3, "U B(esc) A"),
    (
        Eventually(ANS),
        AfterUntil(ESC, ANS),
        5,
        "the answer is R itself, never inside: U B(esc) A U B(answer) closes it on 5",
    ),
    (AtMost(A, 1), AfterUntil(ESC, ANS), 6, "U B(esc) A U B(esc) A"),
    (
        OnlyAfter(ESC, A),
        AfterUntil(ESC, ANS),
        2,
        "the interval opens on the escalation itself, with no agent before it",
    ),
    (
        Responds(ESC, U, within=2),
        AfterUntil(ESC, ANS),
        6,
        "an escalation on turn 5 or 6 has no user turn after it before the cap",
    ),
]


@pytest.fixture(scope="module")
def support() -> CompiledFlow:
    return compile_flow(SUPPORT)


@pytest.mark.parametrize(
    ("pattern", "scope", "turns", "why"),
    TABLE,
    ids=[f"{type(p).__name__}-{type(s).__name__}-{i}" for i, (p, s, _, _) in enumerate(TABLE)],
)
def test_each_pattern_under_each_scope(
    support: CompiledFlow, pattern: Any, scope: Any, turns: int | None, why: str
) -> None:
    (result,) = decide(support, [Property("p", pattern, scope)])
    if turns is None:
        assert result.verdict == "holds", (why, result.run and result.run.render())
        assert result.run is None
        assert result.assumed == ("max_turns 6", "tools do what they declare")
    else:
        assert result.verdict == "violated", why
        assert result.run is not None
        assert len(result.run.turns) == turns == result.broken_at, (why, result.run.render())


def test_every_cell_of_the_table_is_there() -> None:
    cells = {(type(p).__name__, type(s).__name__) for p, s, _, _ in TABLE}
    assert len(cells) == 6 * 5
    assert len(TABLE) == 31


def test_the_runs_replay_and_end_where_they_break(support: CompiledFlow) -> None:
    """A violation's run is a real run (it replays on the reference stepper): it stops on
    the turn that breaks the property (who speaks next shown), or ends as the run does."""
    system = system_of_flow(support)
    (never,) = decide(support, [Property("p", Never(ESC))])
    assert never.run is not None
    assert never.run.render() == "user → bot (escalate) → agent"
    replay(system, never.run)
    (cut,) = decide(support, [Property("p", Eventually(Ends("answered")))])
    assert cut.run is not None and cut.run.next is None and cut.run.reason == "max_turns"
    assert cut.run.render() == ('user → bot → user → bot → user → bot → terminate "max_turns"')
    replay(system, attrs.evolve(cut.run, next="user", reason=None))  # the cap cuts it there
    assert cut.why is not None and cut.why.startswith("the run ends after turn 6")


# ── the shortest run ─────────────────────────────────────────────────────────


def test_the_run_shown_is_a_shortest_one() -> None:
    """`publish` can be called on turn 2 by a path that skips the review, or on turn 8 after
    a long loop: the run shown has the fewest turns, and ends on the turn that breaks it."""
    flow = compile_flow(
        """\
speaker user: human
speaker writer { tool publish tool draft }
speaker reviewer { tool approve sets approved = true }
max_turns 10
when tool publish then terminate "published"
when tool draft then reviewer
when from user then writer
when from reviewer then writer
when from writer then user
"""
    )
    approved = m.ContextEquals("approved", True)
    (first,) = decide(flow, [Property("first", OnlyAfter(m.ToolCalled("publish"), approved))])
    assert first.verdict == "violated" and first.run is not None
    assert first.run.render() == 'user → writer (publish) → terminate "published"'
    # with publishing before a review made impossible, the shortest violation is longer
    reviewed = compile_flow(
        """\
speaker user: human
speaker writer { tool publish tool draft }
speaker reviewer { tool approve sets approved = true tool reject sets approved = false }
max_turns 10
context approved = false
when tool publish and context.approved == false then reviewer
when tool publish then terminate "published"
when tool draft then reviewer
when from user then writer
when from reviewer then writer
when from writer then user
"""
    )
    # a run must call publish first (turn 2, refused: to the reviewer), then publish again
    # (turn 4) while approved is still false: no, that is refused too; the first publish
    # that goes through is after an approval. A publish with `approved == false` still
    # breaks the property: turn 2
    (again,) = decide(reviewed, [Property("first", OnlyAfter(m.ToolCalled("publish"), approved))])
    assert again.run is not None and len(again.run.turns) == 2
    # "never twice in a row": the writer speaks twice in a row only through a stay-like
    # path; here it never does
    (double,) = decide(
        reviewed,
        [
            Property(
                "double",
                Never(m.AllOf((m.FromSpeaker("writer"), Previous(m.FromSpeaker("writer"))))),
            )
        ],
    )
    assert double.verdict == "holds"


def test_a_shortest_violation_through_a_loop_is_found_at_its_length() -> None:
    """`ticket` reaches 3 only after three rounds of the loop (turns 2, 4, 6): the first
    run with `context.count == 3` has 6 turns, and no shorter one exists."""
    flow = compile_flow(
        """\
speaker user: human
speaker bot { tool one sets count = 1 tool two sets count = 2 tool three sets count = 3 }
max_turns 12
context count = 0
when from bot and context.count == 0 then user
when from bot and context.count == 1 then user
when from bot and context.count == 2 then user
when from user then bot
"""
    )
    (res,) = decide(flow, [Property("p", Never(m.ContextEquals("count", 3)))])
    assert res.run is not None and len(res.run.turns) == 2  # the bot may call `three` at once
    (res,) = decide(
        flow,
        [
            Property(
                "p",
                Never(
                    m.AllOf(
                        (
                            m.ContextEquals("count", 3),
                            Previous(Previous(m.ContextEquals("count", 2))),
                        )
                    )
                ),
            )
        ],
    )
    # count 2 on some turn t-2 and 3 on t: bot(two) on 2, user 3, bot(three) on 4
    assert res.run is not None and len(res.run.turns) == 4
    assert res.run.render().startswith("user → bot (two) → user → bot (three)")


# ── partial analyses ─────────────────────────────────────────────────────────

WIDE = """\
speaker user: human
speaker worker {
  tool a sets x = 1 | sets x = 2 | sets x = 3
  tool b sets y = 1 | sets y = 2 | sets y = 3
  tool ship
}
start user
max_turns 30
when context.x == 3 and context.y == 3 then terminate "done"
when from user then worker
when from worker then user
"""


def test_a_partial_exploration_gives_unknown_never_holds() -> None:
    flow = compile_flow(WIDE)
    never_done = Property("p", Never(Ends("done")))
    (full,) = decide(flow, [never_done])
    assert full.verdict == "violated" and full.run is not None
    assert len(full.run.turns) == 4  # x = 3 on turn 2, y = 3 on turn 4 (it ends the run)
    (part,) = decide(flow, [never_done], max_states=10)
    assert part.verdict == "unknown" and part.run is None
    assert part.note is not None and "I301" in part.note
    # a property that holds is unknown too, past the bound
    holds = Property("q", Never(m.AllOf((m.FromSpeaker("user"), m.ToolCalled("ship")))))
    assert [r.verdict for r in decide(flow, [holds])] == ["holds"]
    assert [r.verdict for r in decide(flow, [holds], max_states=10)] == ["unknown"]


def test_a_violation_among_the_explored_states_is_reported_when_partial() -> None:
    flow = compile_flow(WIDE)
    (res,) = decide(flow, [Property("p", Never(m.ToolCalled("ship")))], max_states=10)
    assert res.verdict == "violated" and res.run is not None
    assert res.run.render() == "user → worker (ship) → user"


# ── custom conditions and targets ────────────────────────────────────────────


def test_a_custom_condition_is_taken_either_way() -> None:
    flow = compile_flow(
        """\
condition urgent()
speaker user: human
speaker bot
speaker human_agent
max_turns 4
when from user and urgent() then human_agent
when from user then bot
when from bot, human_agent then user
"""
    )
    results = decide(
        flow,
        [
            # urgent() true on turn 1 routes to the agent: some run has it
            Property("no_agent", Never(m.FromSpeaker("human_agent"))),
            # and false routes to the bot: "always the agent" breaks on turn 2
            Property("agent_only", Always(m.Not(m.FromSpeaker("bot")))),
            # either way the user speaks every other turn
            Property("user_back", Responds(m.FromSpeaker("bot"), m.FromSpeaker("user"), 1)),
        ],
    )
    assert [r.verdict for r in results[:2]] == ["violated", "violated"]
    assert results[0].run is not None
    assert results[0].run.render() == "user (urgent() is true) → human_agent → user"
    assert results[1].run is not None
    assert results[1].run.render() == "user (urgent() is false) → bot → user"
    # the bot on turn 4, the cap's turn, has no turn after it: broken at the end
    assert results[2].verdict == "violated" and results[2].broken_at == 4
    flow_free = compile_flow(SUPPORT.replace("max_turns 6", "max_turns 6\ncondition lucky()"))
    (held,) = decide(flow_free, [Property("p", OnlyAfter(ANS, U))])
    assert "custom conditions either way" not in held.assumed  # none is used
    (held,) = decide(flow, [Property("p", OnlyAfter(m.FromSpeaker("bot"), U))])
    assert held.verdict == "holds" and "custom conditions either way" in held.assumed


def test_a_custom_target_may_end_the_run_with_any_reason() -> None:
    flow = compile_flow(
        """\
target decide() -> bot | terminate
speaker user: human
speaker bot
max_turns 4
when from user then decide()
when from bot then user
"""
    )
    results = decide(
        flow,
        [
            Property("approved", Eventually(m.AnyOf((Ends("approved"), Ends("max_turns"))))),
            Property("never_rejected", Never(Ends("rejected"))),
        ],
    )
    # the target may close the run with a reason of its own on turn 1: any of them
    assert [r.verdict for r in results] == ["violated", "violated"]
    assert all(r.run is not None and len(r.run.turns) == 1 for r in results)


# ── the abstraction ──────────────────────────────────────────────────────────

STAGES = """\
speaker user: human
speaker writer {
  tool finish_it sets stage = "final"
  tool begin sets stage = "draft"
  tool shelve sets stage = "shelved"
}
max_turns 6
when context.stage == "draft" then user
when from user then writer
when from writer then user
"""


def test_a_value_no_rule_compares_is_told_apart() -> None:
    """The rules compare `stage` with "draft" only, so the flow's own abstraction lumps
    "final" and "shelved" together as another value; a property that compares "final"
    gets a state space that tells it apart."""
    flow = compile_flow(STAGES)
    final = Property("no_final", Never(m.ContextEquals("stage", "final")))
    (res,) = decide(flow, [final])
    assert res.verdict == "violated" and res.run is not None
    assert res.run.render() == "user → writer (finish_it) → user"
    # the flow's own abstraction cannot tell it: deciding on it is refused
    own = explore(system_of_flow(flow), 1000, record=True)
    with pytest.raises(ValueError, match="does not tell"):
        decide_on(own, [final], 1000)
    # the extended system keeps the rules' values where they were
    extended = system_for(flow, [final])
    assert extended.literals == (("draft", "final"),)
    assert system_for(flow, [Property("d", Never(m.ContextEquals("stage", "draft")))]) == (
        system_of_flow(flow)
    )


def _flows_and_properties(seed: int) -> list[tuple[CompiledFlow, list[Property]]]:
    """40 generated flows with 3 properties each, and one of the benchmark family with 20."""
    rnd = random.Random(seed)
    cases: list[tuple[CompiledFlow, list[Property]]] = []
    for _ in range(40):
        flow = compile_flow(flow_text(rnd))
        cases.append((flow, [prop(rnd, list(flow.speakers), f"p{j}") for j in range(3)]))
    shape = Shape(speakers=8 + seed, keys=3, values=2, rules=2, max_turns=12, custom=0.2)
    bench = compile_flow(generate(shape))
    cases.append((bench, list(bench_properties(shape, 20, seed))))
    return cases


@pytest.mark.parametrize("seed", range(3))
def test_a_system_extended_from_the_flows_own_is_the_one_made_anew(seed: int) -> None:
    """``system_of_flow(flow, values, base=own)`` keeps ``own``'s rules (the check's
    system, so that a flow's properties do not compile its rules twice) and is equal,
    field by field, to the system made from the flow with those values: on generated
    flows and properties, on the benchmark family's, and from a base that has values of
    its own (the new ones then come after them)."""
    cases = _flows_and_properties(seed)
    extended = 0
    for flow, props in cases:
        own = system_of_flow(flow)
        values = property_literals(props)
        made = system_of_flow(flow, values, base=own)
        assert made == system_of_flow(flow, values)
        assert made.rules is own.rules and made.ordered is own.ordered
        extended += made.literals != own.literals
        # two steps: the base's values, then the others after them
        first = dict(list(values.items())[:1])
        rest = {k: v[::-1] for k, v in list(values.items())[1:]}
        step = system_of_flow(flow, rest, base=system_of_flow(flow, first))
        assert step == system_of_flow(flow, {**first, **rest})
    assert extended >= 10  # (most add a value the rules do not compare)
    other = compile_flow("speaker a\nspeaker b\nwhen from a then b")
    with pytest.raises(ValueError, match="another flow"):
        system_of_flow(other, {"k": [1]}, base=system_of_flow(cases[0][0]))


def _same_space(a: Any, b: Any) -> None:
    assert (a.keys, a.parent, a.dist, a.truncated, a.ends) == (
        b.keys,
        b.parent,
        b.dist,
        b.truncated,
        b.ends,
    )
    assert (a.fired, a.first_fired, a.default_fired, a.parent_step) == (
        b.fired,
        b.first_fired,
        b.default_fired,
        b.parent_step,
    )
    ra, rb = a.recorded, b.recorded
    assert (ra.succ, ra.tool, ra.val, ra.start, ra.tools, ra.vals) == (
        rb.succ,
        rb.tool,
        rb.val,
        rb.start,
        rb.tools,
        rb.vals,
    )


@pytest.mark.parametrize("seed", range(3))
def test_the_properties_exploration_shares_the_flows_routing(seed: int) -> None:
    """``check`` explores the system that tells the properties' values apart with the
    routing of the flow's own exploration (``explore(..., like=)``: the rules are the
    same objects, and read the same values): the space is the one explored without it,
    node for node and turn for turn, on generated flows and the benchmark family's, the
    routing explored first by either; a system with other rules does not share it."""
    cases = _flows_and_properties(seed)
    extended = 0
    for flow, props in cases:
        own = system_of_flow(flow)
        wide = system_of_flow(flow, property_literals(props), base=own)
        extended += wide.literals != own.literals
        alone = explore(wide, 5000, record=True)
        # the flow's own space first (as `check` does), then the wider one
        first = explore(own, 5000)
        sharing = explore(wide, 5000, record=True, like=first.explorer)
        assert sharing.explorer._outcomes is first.explorer._outcomes
        _same_space(sharing, alone)
        # the wider one first: the flow's own exploration, sharing it, is as before
        again = explore(wide, 5000, record=True)
        _same_space(
            explore(own, 5000, record=True, like=again.explorer), explore(own, 5000, record=True)
        )
    assert extended >= 10
    # a system of another flow (other rules) routes on its own
    fresh = explore(system_of_flow(cases[0][0]), 5000)
    other = explore(system_of_flow(cases[1][0]), 5000, like=fresh.explorer)
    assert other.explorer._outcomes is not fresh.explorer._outcomes


def test_check_shares_its_routing_across_versions_with_other_properties(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``check`` as the language server runs it (a :class:`SpaceCache` kept from one
    version to the next) explores the properties' wider system with its own space's
    routing; versions of one flow that differ in their properties (other values under
    the same abstract numbers in the routing it keeps) report exactly what a check
    without the cache, or without the sharing, reports."""
    rnd = random.Random(11)
    shared: list[bool] = []
    real = decider.explore

    def spy(system: Any, bound: int, **kw: Any) -> Any:
        space = real(system, bound, **kw)
        like = kw.get("like")
        shared.append(like is not None and space.explorer._outcomes is like._outcomes)
        return space

    def alone(system: Any, bound: int, **kw: Any) -> Any:
        return real(system, bound, record=kw.get("record", False))

    reused = 0
    for _ in range(25):
        flow = compile_flow(flow_text(rnd))
        cache = SpaceCache()
        for _version in range(4):
            props = tuple(prop(rnd, list(flow.speakers), f"p{k}") for k in range(3))
            version = attrs.evolve(flow, properties=props)
            monkeypatch.setattr(decider, "explore", spy)
            cached = render_json(check_compiled(version, (), CheckOptions(), spaces=cache))
            monkeypatch.setattr(decider, "explore", alone)
            assert cached == render_json(check_compiled(version, (), CheckOptions()))
        reused += cache.reused
    assert reused >= 25 and shared.count(True) >= 10


def test_routing_is_shared_only_with_a_system_of_the_same_rules_and_flow() -> None:
    flow = compile_flow(STAGES)
    own = system_of_flow(flow)
    first = explore(own, 1000).explorer
    wide = system_of_flow(flow, {"stage": ["final"]}, base=own)
    assert explore(wide, 1000, like=first).explorer._outcomes is first._outcomes
    # the same flow, its rules made again; the same rules, another flow or default
    other_flow = compile_flow(STAGES + "\n# another version\n")
    for system in (
        system_of_flow(flow, {"stage": ["final"]}),
        attrs.evolve(wide, compiled=other_flow),
        attrs.evolve(wide, default=m.TerminateTarget("other")),
    ):
        assert explore(system, 1000, like=first).explorer._outcomes is not first._outcomes


@pytest.mark.parametrize(
    ("compared", "verdict", "run"),
    [
        # the only value besides "draft" the flow can write: "another value" is it
        ("final", "violated", "user → writer (finish_it) → user"),
        # a value nothing writes: it never holds
        ("gone", "holds", None),
        # null: nothing writes it, so it holds where the key is not set
        (None, "violated", "user → writer"),
    ],
)
def test_a_value_the_flow_alone_decides_needs_no_other_exploration(
    compared: object, verdict: str, run: str | None
) -> None:
    """When the key can hold no value the rules do not compare other than the one the
    property compares (or never that one), the flow's own exploration decides the
    property, with the verdict and run of the exploration that tells the value apart."""
    text = STAGES.replace('  tool shelve sets stage = "shelved"\n', "")
    flow = compile_flow(text)
    if compared is None:
        prop = Property("p", Never(m.ContextEquals("stage", None)))
    else:
        prop = Property("p", Never(m.ContextEquals("stage", compared)))
    assert system_for(flow, [prop]) == system_of_flow(flow)
    own = explore(system_of_flow(flow), 1000, record=True)
    wide = explore(system_of_flow(flow, property_literals([prop])), 1000, record=True)
    assert len(own.keys) == len(wide.keys)
    for space in (own, wide):
        (res,) = decide_on(space, [prop], 1000)
        assert res.verdict == verdict
        assert (res.run.render() if res.run else None) == run


NULLS = """\
speaker user: human
speaker writer {
  tool begin sets stage = "draft"
  tool wipe sets stage = null
}
max_turns 6
context { stage = "draft" }
when context.stage == "draft" and from writer then user
when from user then writer
when from writer then user
"""


@pytest.mark.parametrize(
    ("text", "run"),
    [
        # a tool writes null: the only value besides "draft" the key can get
        (NULLS, "user → writer (wipe) → user"),
        # null from the start
        (
            NULLS.replace("  tool wipe sets stage = null\n", "").replace(
                'context { stage = "draft" }', "context { stage = null }"
            ),
            "user → writer",
        ),
    ],
)
def test_null_written_is_null(text: str, run: str) -> None:
    """`context.stage == null` holds on a key set to null too, not only on one not set;
    decided on the flow's own exploration here, with the verdict and run of the one that
    tracks null as a value of its own."""
    prop = Property("p", Never(m.ContextEquals("stage", None)))
    flow = compile_flow(text)
    assert system_for(flow, [prop]) == system_of_flow(flow)
    (res,) = decide(flow, [prop])
    assert (res.verdict, res.run and res.run.render()) == ("violated", run)
    wide = explore(system_of_flow(flow, property_literals([prop])), 1000, record=True)
    (ref,) = decide_on(wide, [prop], 1000)
    assert (ref.verdict, ref.run and ref.run.render()) == ("violated", run)


def test_a_key_no_rule_reads_and_nothing_writes_is_never_set() -> None:
    """`context.other` is in no rule and no tool writes it: it stays unset on every run,
    decided without tracking it."""
    flow = compile_flow(STAGES)
    unset = Property("u", Always(m.ContextEquals("other", None)))
    some = Property("s", Never(m.ContextEquals("other", 1)))
    assert system_for(flow, [unset, some]) == system_of_flow(flow)
    assert [r.verdict for r in decide(flow, [unset, some])] == ["holds", "holds"]
    # written by a tool, the key must be tracked
    written = compile_flow(STAGES.replace('sets stage = "shelved"', "sets other = 1"))
    assert system_for(written, [some]).keys == ("stage", "other")
    (res,) = decide(written, [some])
    assert res.verdict == "violated" and res.run is not None
    assert res.run.render() == "user → writer (shelve) → user"


def test_flows_without_properties_are_explored_as_before() -> None:
    flow = compile_flow(STAGES)
    assert system_of_flow(flow) == system_of_flow(flow, {})
    assert explore(system_of_flow(flow), 1000).recorded is None


# ── runs that never end ──────────────────────────────────────────────────────

LOOP = """\
speaker user: human
speaker bot { tool done }
when tool done then terminate "done"
when from user then bot
when from bot then user
"""


def test_without_max_turns_a_run_may_never_end() -> None:
    flow = compile_flow(LOOP)
    results = decide(
        flow,
        [
            Property("ends", Eventually(Ends())),
            Property("answered", Responds(m.FromSpeaker("user"), m.ToolCalled("done"))),
            Property("bot_back", Responds(m.FromSpeaker("user"), m.FromSpeaker("bot"))),
            Property("never_twice", Never(m.AllOf((U, Previous(U))))),
        ],
    )
    ends, answered, bot_back, never_twice = results
    # a run that goes round user -> bot for ever never ends
    assert ends.verdict == "violated" and ends.run is not None
    assert ends.run.loop_from is not None and ends.run.render().endswith("…")
    assert ends.why is not None and ends.why.startswith("the run never ends")
    # ... and answers nobody with `done`; but its finite runs end with `done` after the
    # bot's turn, which answers every user turn before it
    assert answered.verdict == "violated" and answered.run is not None
    assert answered.run.loop_from is not None
    # every user turn is followed by the bot's, on every run, also those that never end
    assert bot_back.verdict == "holds"
    assert "no max_turns (runs that never end included)" in bot_back.assumed
    assert never_twice.verdict == "holds"


# ── findings ─────────────────────────────────────────────────────────────────


def with_properties(text: str, *props: Property) -> CompiledFlow:
    return attrs.evolve(compile_flow(text), properties=props)


def test_check_reports_each_property(support: CompiledFlow) -> None:
    flow = attrs.evolve(
        support,
        properties=(
            Property("no_escalation", Never(ESC), text="never tool escalate"),
            Property("user_first", OnlyAfter(ANS, U), text="tool answer only after from user"),
        ),
    )
    found = check_compiled(flow, (), filename="support.flow")
    # (and I304: the bot can route a reply two ways, which AG2 may take differently)
    by_code = {d.code.id: d for d in found if d.code.id != "I304"}
    assert set(by_code) == {"E116", "I306"}
    e116 = by_code["E116"]
    assert e116.message == "property no_escalation is violated (`never tool escalate`)"
    assert e116.notes == (
        "broken on turn 2: turn 2 has `tool escalate`",
        "a shortest run that breaks it: user → bot (escalate) → agent",
    )
    assert e116.help is not None
    i306 = by_code["I306"]
    assert i306.message == "property user_first holds (`tool answer only after from user`)"
    assert i306.notes == (
        "it holds on every run; assumed: max_turns 6, tools do what they declare",
    )
    # unknown past the bound, and `--select` / `--ignore` as for every code
    partial = check_compiled(flow, (), CheckOptions(max_states=2), filename="support.flow")
    assert {d.code.id for d in partial} >= {"I301", "I305"}
    assert [d.code.id for d in check_compiled(flow, (), CheckOptions(select=("I306",)))] == ["I306"]
    assert "E116" not in {
        d.code.id for d in check_compiled(flow, (), CheckOptions(ignore=("E116",)))
    }


def test_findings_in_json_and_sarif(support: CompiledFlow) -> None:
    flow = attrs.evolve(support, properties=(Property("no_escalation", Never(ESC)),))
    found = check_compiled(flow, (), CheckOptions(select=("E116",)), filename="support.flow")
    (item,) = json.loads(render_json(found))
    assert item["code"] == "E116" and item["severity"] == "error"
    assert "a shortest run that breaks it: user → bot (escalate) → agent" in item["notes"]
    sarif = json.loads(render_sarif(found))
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "E116" and result["level"] == "error"
    assert "user → bot (escalate) → agent" in result["message"]["text"]
    assert sarif["runs"][0]["tool"]["driver"]["rules"][0]["name"] == "property-violated"


def test_flows_without_properties_get_no_property_finding(support: CompiledFlow) -> None:
    assert not {"E116", "I305", "I306"} & {d.code.id for d in check_compiled(support, ())}


# ── the reference ────────────────────────────────────────────────────────────


def _reasons(props: list[Property]) -> list[str]:
    return sorted(
        {
            e.reason
            for p in props
            for x in expressions(p)
            for e in walk(x)
            if isinstance(e, Ends) and e.reason is not None
        }
    )


@pytest.mark.parametrize("safety", [False, True], ids=["plain", "safe-states"])
@pytest.mark.parametrize("seed", range(4))
def test_decide_agrees_with_the_reference(
    seed: int, safety: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On generated flows (with `max_turns`: every run is finite) and properties, the
    verdict and the length of the shortest violating run are those of a reference that
    enumerates every run and judges each by the docstring's definitions; with the search
    cut at the monitor states no run can break the property from (done on flows of 2,000
    states or more, forced here) too."""
    if safety:
        monkeypatch.setattr(decider, "_SAFETY_FROM", 0)
    rnd = random.Random(seed)
    for _ in range(25):
        flow = compile_flow(flow_text(rnd))
        props = [prop(rnd, list(flow.speakers), f"p{j}") for j in range(3)]
        results = decide(flow, props)
        # (the reference reads every value the properties compare from a system that
        # tracks each: not the checker's choice of system, which may do without)
        space = explore(system_of_flow(flow, property_literals(props)), 100_000)
        for p, res in zip(props, results, strict=True):
            want = reference(space, p, _reasons(props))
            got = None if res.verdict == "holds" else len(res.run.turns) if res.run else -1
            assert got == want, (p, res.run and res.run.render())


def test_a_value_that_does_not_hash_is_compared_as_a_rule_compares_it() -> None:
    """`context.k == [1, 2]` (a list, an object): told apart, kept as an atom, read by
    `previous` (a generated property once made the checker fail on it)."""
    flow = compile_flow(
        """\
speaker user: human
speaker bot { tool t sets k = [1, 2] }
max_turns 4
when from user then bot
when from bot then user
"""
    )
    listed = m.ContextEquals("k", [1, 2])
    results = decide(
        flow,
        [
            Property("p", Never(listed)),
            Property("q", Never(m.AllOf((m.ContextEquals("k", {"a": 1}), Previous(listed))))),
        ],
    )
    assert [r.verdict for r in results] == ["violated", "holds"]
    assert results[0].run is not None and results[0].run.render() == "user → bot (t) → user"


def test_a_run_that_loops_for_ever_with_an_obligation_pending() -> None:
    """Without `max_turns`: after an escalation the bot may keep talking to the customer
    for ever, never bringing the agent (a loop keeps the obligation pending); with the
    escalation sent straight to the agent, the loops that remain never hold one."""
    looping = compile_flow(
        """\
speaker customer: human
speaker bot { tool escalate sets escalated = true }
speaker agent: human
when from customer and context.escalated == true then bot
when tool escalate then customer
when from customer then bot
when from bot then customer
when from agent then customer
"""
    )
    answered = Property("answered", Responds(m.ToolCalled("escalate"), m.FromSpeaker("agent")))
    # (no run ends: an interval from an escalation stays open for ever)
    until = Property(
        "until", Eventually(m.FromSpeaker("agent")), AfterUntil(m.ToolCalled("escalate"), Ends())
    )
    res, res_until = decide(looping, [answered, until])
    assert res.verdict == "violated" and res.run is not None and res.run.loop_from is not None
    assert res.run.render().startswith("customer → bot (escalate) → customer")
    assert res_until.verdict == "violated" and res_until.run is not None
    assert res_until.run.loop_from is not None
    direct = compile_flow(
        """\
speaker customer: human
speaker bot { tool escalate }
speaker agent: human
when tool escalate then agent
when from customer then bot
when from bot then customer
when from agent then customer
"""
    )
    assert [r.verdict for r in decide(direct, [answered, until])] == ["holds", "holds"]


def test_a_property_no_run_can_break_is_proved_without_the_flow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`ends at most 2 times`: a run ends once; `never ends before turn > 1 ...` cannot
    open an interval after turn 1. Proved from the property's own automaton, with the
    same verdict as the search over the flow."""
    monkeypatch.setattr(decider, "_SAFETY_FROM", 0)
    flow = compile_flow(SUPPORT)
    props = [
        Property("once", AtMost(Ends(), 2)),
        Property("early", Never(Ends("answered")), AfterUntil(m.Not(ESC), TurnIs(">", 1))),
    ]
    table = decider.AtomTable()
    once, early = (decider.Monitor(p, table) for p in props)
    assert decider._Safety(once, table).safe(once.initial, 0)
    # `early` can break on turn 1 (a kickoff that ends the run), but after it, never
    assert not decider._Safety(early, table).safe(early.initial, 0)
    after_one = early.step(early.initial, 0, 1, False).state
    assert decider._Safety(early, table).safe(after_one, 1)
    assert [r.verdict for r in decide(flow, props)] == ["holds", "holds"]
    monkeypatch.setattr(decider, "_SAFETY_FROM", 10**9)
    assert [r.verdict for r in decide(flow, props)] == ["holds", "holds"]
    # not so when a run can break it
    never_answered = decider.Monitor(Property("n", Never(Ends("answered"))), table)
    assert not decider._Safety(never_answered, table).safe(never_answered.initial, 0)


def _recorded_cap_run(search: Any, done: Any) -> Any:
    """The cap's question as it was answered before :meth:`_Search.succ_of` (the
    reference for the test below), on a fresh ``search``: the search keeps each pair's
    successors while it goes (the same layers and parents as ``done``'s, which found no
    violation), and the cap's question reads that map."""
    g, pmask, cap = search.g, search.pmask, search.cap
    start = search.mid(search.mon.initial, 0)
    parent = {start: -1}
    layers: list[list[int]] = []
    succ: dict[int, list[int]] = {}
    frontier = [start]
    t = 0
    while frontier:
        layers.append(frontier)
        if t + 1 >= cap:
            break
        nxt: list[int] = []
        for x in frontier:
            ys: list[int] = []
            for vs, mask in g.edges(x >> decider._SHIFT)[0]:
                r = search.trans(x & decider._MIDS, mask & pmask)
                if r >= 0:
                    y = vs | r >> 1
                    if y not in parent:
                        parent[y] = x
                        nxt.append(y)
                    ys.append(y)
            if ys:
                succ[x] = ys
        frontier = nxt
        t += 1
    assert layers == done.layers and parent == done.parent
    want = cap - 1
    cap_bits = g.cap_bits & pmask
    classes = {mask & pmask for built in g._edges if built for _, mask in built[0]}
    breaking: dict[int, set[int]] = {}
    for mid in range(len(search.mstates)):
        found = {mm for mm in classes if search.ending(mid, mm | cap_bits).kind == "violated"}
        if found:
            breaking[mid] = found
    bad: dict[int, tuple[int, int]] = {}
    for layer in layers[:want]:
        for x in layer:
            wrong = breaking.get(x & decider._MIDS)
            if wrong is None:
                continue
            for vs, mask in g.edges(x >> decider._SHIFT)[0]:
                if mask & pmask in wrong:
                    bad[x] = (vs >> decider._SHIFT, mask | g.cap_bits)
                    break
    if not bad:
        return None

    def walk_to(near: dict[int, int] | None, budget: int | None) -> list[int] | None:
        failed: set[tuple[int, int]] = set()
        path = [start]
        stack = [iter(succ.get(start, ()))]
        steps = 0
        while stack:
            t = len(path) - 1
            if t == want:
                if path[-1] in bad:
                    return path
                failed.add((path[-1], t))
                path.pop()
                stack.pop()
                continue
            steps += 1
            if budget is not None and steps > budget:
                return None
            for y in stack[-1]:
                if (y, t + 1) in failed:
                    continue
                if near is not None and t + 1 + near.get(y, want + 1) > want:
                    continue
                path.append(y)
                stack.append(iter(succ.get(y, ())))
                break
            else:
                failed.add((path[-1], t))
                path.pop()
                stack.pop()
        return None

    path = walk_to(None, decider._QUICK_WALK * cap)
    if path is None:
        pred: dict[int, list[int]] = {}
        for x, ys in succ.items():
            for y in ys:
                pred.setdefault(y, []).append(x)
        near = dict.fromkeys(bad, 0)
        todo = list(bad)
        for y in todo:  # (breadth first: the list grows behind the loop)
            for x in pred.get(y, ()):
                if x not in near:
                    near[x] = near[y] + 1
                    todo.append(x)
        path = walk_to(near, None)
    if path is None:
        return None
    v, mask = bad[path[-1]]
    return tuple(path), v, mask


def _cap_cases() -> list[tuple[CompiledFlow, list[Property]]]:
    """Generated flows and properties, and a few of the benchmark family's (where a
    run cut by the cap is found by walking, not in the search's last layer)."""
    out = []
    for seed in range(40):
        rnd = random.Random(seed)
        flow = compile_flow(flow_text(rnd))
        out.append((flow, [prop(rnd, list(flow.speakers), f"p{j}") for j in range(6)]))
    for params in [(5, 2, 2, 1, 10), (5, 2, 2, 1, 20), (10, 3, 2, 1, 20), (100, 8, 1, 1, 50)]:
        shape = Shape(*params)
        out.append((compile_flow(generate(shape)), list(bench_properties(shape, 20))))
    return out


@pytest.mark.parametrize(
    "quick", [decider._QUICK_WALK, 64, 0], ids=["quick-try", "long-try", "distances"]
)
@pytest.mark.parametrize("safety", [False, True], ids=["plain", "safe-states"])
def test_the_cap_question_reads_the_turns_again_as_a_recording_search_kept_them(
    quick: int, safety: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run cut by `max_turns` is looked for over the pairs' successors read again from
    the graph and the monitor's known steps (:meth:`_Search.succ_of`), not kept by the
    search: the walk found (turns, last pair, the cap's turn) is the one the search that
    kept them found, with the quick try (and without it: the distances to the cap
    counted for every pair)."""
    monkeypatch.setattr(decider, "_QUICK_WALK", quick)
    if safety:
        monkeypatch.setattr(decider, "_SAFETY_FROM", 0)
    asked = found = 0
    for flow, props in _cap_cases():
        space = explore(system_for(flow, props), 100_000, record=True)
        table = decider.AtomTable()
        monitors = [decider.Monitor(p, table) for p in props]  # (every atom, then the graph)
        graph = decider._Graph(space, table, comparisons(space.system, props))
        for mon in monitors:
            search = decider._Search(graph, mon, 10**6)
            if search.run() is not None or not mon.end_sensitive:
                continue
            asked += 1
            got = search.cap_run()
            want = _recorded_cap_run(decider._Search(graph, mon, 10**6), search)
            assert (got and (got.path, got.v, got.mask)) == want, mon.prop
            found += got is not None
    assert asked > 100 and found >= 8, (asked, found)


def test_each_comparison_a_property_makes_is_read_once_per_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """How the flow's abstraction reads each `context.k == v` the properties compare is
    worked out once per check: whether the first exploration serves the properties,
    which system decides them and the search all read the one answer (each scanned the
    flow's writes again before)."""
    from flowc.compiler.analysis import facts_of, prop_system

    asked: list[tuple[str, object]] = []
    hits_on = prop_system.hits_on

    def counting(system: object, key: str, value: object) -> object:
        asked.append((key, value))
        return hits_on(system, key, value)  # type: ignore[arg-type]

    monkeypatch.setattr(prop_system, "hits_on", counting)
    flow = compile_flow(
        'speaker user: human\nspeaker bot { tool set_stage sets stage = "draft" }\n'
        'max_turns 4\nwhen context.stage == "draft" and from bot then user\n'
        "when from user then bot\nwhen from bot then user\n"
        'property p: never context.stage == "draft"\n'
        'property q: never context.stage == "final" before context.stage == "draft"\n'
    )
    _, found = facts_of(system_of_flow(flow), CheckOptions())
    verdicts = sorted(
        f.diagnostic.code.id for f in found if f.diagnostic.code.id in ("E116", "I306")
    )
    assert verdicts == ["E116", "I306"], verdicts
    assert sorted(asked) == [("stage", "draft"), ("stage", "final")], asked


def test_the_first_exploration_keeps_turns_only_when_the_properties_are_decided_on_it() -> None:
    """`check` explores a flow once for its own checks; its properties are decided on
    that exploration when it tells apart every value they compare (then it keeps each
    node's turns), else on a second one that does (then the first keeps none: nothing
    reads them)."""
    from flowc.compiler.analysis import facts_of

    text = (
        'speaker user: human\nspeaker bot { tool set_stage sets stage = "draft" }\n'
        'max_turns 4\nwhen context.stage == "draft" and from bot then user\n'
        "when from user then bot\nwhen from bot then user\n"
    )
    told = compile_flow(text + 'property p: never context.stage == "draft"\n')
    # "final" is never written: the flow's own exploration tells it apart too
    unwritten = compile_flow(text + 'property p: never context.stage == "final"\n')
    other = compile_flow(
        text.replace(
            'sets stage = "draft" }',
            'sets stage = "draft" tool end_it sets stage = "final"'
            ' tool shelve sets stage = "shelved" }',
        )
        + 'property p: never context.stage == "final"\n'
    )
    facts, found = facts_of(system_of_flow(told), CheckOptions())
    assert facts.space.recorded is not None
    assert [f.diagnostic.code.id for f in found if f.diagnostic.code.id == "E116"] == ["E116"]
    facts, found = facts_of(system_of_flow(unwritten), CheckOptions())
    assert facts.space.recorded is not None
    assert [f.diagnostic.code.id for f in found if f.diagnostic.code.id == "I306"] == ["I306"]
    facts, found = facts_of(system_of_flow(other), CheckOptions())
    assert facts.space.recorded is None
    assert [f.diagnostic.code.id for f in found if f.diagnostic.code.id == "E116"] == ["E116"]


def test_a_search_is_freed_without_the_cycle_collector() -> None:
    """A property's search is freed as soon as it is dropped, with the cycle collector
    paused (as `flowc check` runs): nothing it holds refers back to it, so twenty
    searches over a large flow do not all stay in memory until the check ends."""
    import gc
    import weakref

    flow = compile_flow(generate(Shape(10, 3, 2, 1, 20)))
    props = list(bench_properties(Shape(10, 3, 2, 1, 20), 6))
    space = explore(system_for(flow, props), 100_000, record=True)
    table = decider.AtomTable()
    monitors = [decider.Monitor(p, table) for p in props]
    graph = decider._Graph(space, table, comparisons(space.system, props))
    was = gc.isenabled()
    gc.disable()
    try:
        for mon in monitors:
            search = decider._Search(graph, mon, 10**6)
            search.run()
            assert search.rows and any(search.rows)
            gone = weakref.ref(search)
            del search
            assert gone() is None, mon.prop
    finally:
        if was:
            gc.enable()
