"""The differential test's comparison (:func:`tests.property_check.differential.disagreements`)
accepts a correct checker and catches a wrong one, on generated cases and hand-written
flows: the checker here is the brute force itself (:func:`brute_force_results`), as told
and then spoiled - a verdict turned, an "unknown", a run one turn too long or too short, a
turn the flow does not have, a custom condition assumed the other way.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs
from hypothesis import given, settings

from flowc.compiler import model as m
from flowc.compiler import properties as p
from tests.property_check.differential import (
    BruteResult,
    brute_force_results,
    disagreements,
    least_violation,
    turns_of,
)
from tests.property_check.runs import Runs
from tests.property_check.strategies import Case, cases
from tests.property_check.test_hand_flows import ESCALATION, REFUND, ROUTER

SPOILED = Counter[str]()


def _caught(case: Case, i: int, told: Any, words: str) -> None:
    """The comparison finds the checker's ``told`` result on property ``i`` wrong."""
    found = disagreements(case.runs, [case.props[i]], [told])
    assert len(found) == 1 and words in found[0].what, found


@settings(max_examples=60)
@given(case=cases(10))
def test_the_brute_force_as_checker_agrees_and_spoiled_is_caught(case: Case) -> None:
    results = brute_force_results(case.runs, case.props)
    assert disagreements(case.runs, case.props, results) == []
    for i, res in enumerate(results):
        if res.verdict == "holds":
            _caught(case, i, attrs.evolve(res, verdict="violated"), "says violated")
            SPOILED["holds said violated"] += 1
            continue
        _caught(case, i, attrs.evolve(res, verdict="holds"), "says holds")
        _caught(case, i, attrs.evolve(res, verdict="unknown", run=None), "says unknown")
        SPOILED["violated said holds or unknown"] += 1
        least = len(res.run.turns)
        assert least == least_violation(case.runs, case.props[i])
        prefix = case.runs.replay(res.run.turns, res.run.next, res.run.reason)[0]
        longer = next((r for r in case.runs.completions(prefix) if len(r) > least), None)
        if longer is not None:  # a real run that shows the violation, one turn too long
            too_long = turns_of(case.runs, longer[: least + 1])
            _caught(case, i, attrs.evolve(res, run=too_long), "the shortest")
            SPOILED["a run too long"] += 1
        if least > 1:  # a real run that does not show it yet
            too_short = turns_of(case.runs, prefix[:-1])
            _caught(case, i, attrs.evolve(res, run=too_short), "does not show")
            SPOILED["a run too short"] += 1
        wrong = next(s for s in case.runs.version.speakers if s != res.run.turns[0].speaker)
        turns = (attrs.evolve(res.run.turns[0], speaker=wrong), *res.run.turns[1:])
        _caught(
            case, i, attrs.evolve(res, run=attrs.evolve(res.run, turns=turns)), "not the flow's"
        )
        SPOILED["a turn the flow does not have"] += 1


def test_the_spoiled_checkers_were_tried() -> None:
    """The generated cases spoiled each way often enough (run after the test above)."""
    if not SPOILED:  # run alone: the generated test did not run in this session
        test_the_brute_force_as_checker_agrees_and_spoiled_is_caught()
    for kind in (
        "holds said violated",
        "violated said holds or unknown",
        "a run too long",
        "a run too short",
        "a turn the flow does not have",
    ):
        assert SPOILED[kind] >= 20, SPOILED


def _one(text: str, prop: p.Property) -> tuple[Case, BruteResult]:
    runs = Runs(text, [prop])
    case = Case(text, (prop,), runs)
    (res,) = brute_force_results(runs, [prop])
    assert res.verdict == "violated" and res.run is not None
    return case, res


def test_a_custom_condition_assumed_the_other_way_is_caught() -> None:
    # the shortest run to an agent: user (angry() true) -> agent
    case, res = _one(ESCALATION, p.Property("x", p.Never(m.FromSpeaker("agent"))))
    assert res.run is not None and res.run.turns[0].assumed == (("angry()", True),)
    assert disagreements(case.runs, case.props, [res]) == []
    flipped = attrs.evolve(res.run.turns[0], assumed=(("angry()", False),))
    spoiled = attrs.evolve(res, run=attrs.evolve(res.run, turns=(flipped, *res.run.turns[1:])))
    (found,) = disagreements(case.runs, case.props, [spoiled])
    assert "is not the flow's" in found.what


def test_an_alternative_the_tool_does_not_have_is_caught() -> None:
    case, res = _one(ROUTER, p.Property("x", p.Never(m.FromSpeaker("b"))))
    assert res.run is not None and res.run.turns[1].handoff == "b"
    for wrong in ("c", "a"):  # c: the other alternative, which goes to c; a: none
        turn = attrs.evolve(res.run.turns[1], handoff=wrong)
        turns = (res.run.turns[0], turn, *res.run.turns[2:])
        spoiled = attrs.evolve(res, run=attrs.evolve(res.run, turns=turns))
        (found,) = disagreements(case.runs, case.props, [spoiled])
        assert "is not the flow's" in found.what


def test_a_human_writing_another_value_does_not_show_the_violation() -> None:
    case, res = _one(REFUND, p.Property("x", p.Never(m.ContextEquals("status", "escalated"))))
    assert res.run is not None and res.run.turns[0].sets == (("status", "escalated"),)
    other = attrs.evolve(res.run.turns[0], sets=(("status", "other"),))
    spoiled = attrs.evolve(res, run=attrs.evolve(res.run, turns=(other,)))
    (found,) = disagreements(case.runs, case.props, [spoiled])
    assert "does not show" in found.what


def test_a_custom_target_end_is_named_any_way() -> None:
    """A run ended by a custom target: the checker's Run says reason None (any reason
    the target chooses); the runtime's word for none, "workflow_terminated", or another
    reason are the flow's runs too; a custom target resolving where it may not is not."""
    from tests.property_check.test_hand_flows import PICK

    case, res = _one(PICK, p.Property("x", p.Eventually(m.FromSpeaker("b"))))
    assert res.run is not None and res.run.next is None and res.run.reason is None
    assert res.run.turns[-1].custom_choice == (None,)
    for reason in (None, "workflow_terminated", "anything"):
        told = attrs.evolve(res, run=attrs.evolve(res.run, reason=reason))
        assert disagreements(case.runs, case.props, [told]) == [], reason
    (found,) = disagreements(
        case.runs, case.props, [attrs.evolve(res, run=attrs.evolve(res.run, next="a"))]
    )
    assert "is not the flow's" in found.what


def test_a_disagreement_is_shrunk() -> None:
    """A checker wrong on every `never` whose expression reads a speaker: the shrunk
    example still disagrees, and is no larger than the case it came from."""

    def reads_a_speaker(e: Any) -> bool:
        if isinstance(e, m.FromSpeaker):
            return True
        inner = getattr(e, "conditions", None) or [
            getattr(e, a) for a in ("condition", "expr") if hasattr(e, a)
        ]
        return any(reads_a_speaker(c) for c in inner)

    def wrong(text: str, props: Any) -> list[BruteResult]:
        runs = Runs(text, list(props))
        out = brute_force_results(runs, props)
        return [
            attrs.evolve(r, verdict="holds", run=None)
            if isinstance(r.prop.pattern, p.Never) and reads_a_speaker(r.prop.pattern.p)
            else r
            for r in out
        ]

    from tests.property_check.differential import minimize
    from tests.property_check.strategies import case_of_seed

    seed = 0
    while True:
        case = case_of_seed(seed, 20)
        found = disagreements(case.runs, case.props, wrong(case.text, case.props))
        if found:
            break
        seed += 1
    text, prop, why = minimize(case.text, found[0].prop, wrong)
    assert disagreements(Runs(text, [prop]), [prop], wrong(text, [prop])) == [why]
    assert len(text) <= len(case.text) and "says holds" in why.what
    assert isinstance(prop.pattern, p.Never) and prop.pattern.p == m.FromSpeaker(
        prop.pattern.p.agent_id
    )
    assert isinstance(prop.scope, p.Globally)
    assert text.count("\n") <= 5, text  # the speakers, the start, the cap
