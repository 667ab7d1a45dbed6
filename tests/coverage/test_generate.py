"""`flowc scenarios`: generated scenarios pass `flowc test` and reach every live target,
on every example and on random flows."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, assume, given, settings

import flowc
from flowc.compiler.analysis.generate import (
    Generation,
    GenerationError,
    generate_scenarios,
)
from flowc.compiler.lower import CompiledFlow
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import has_errors
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_flow
from flowc.runtime.coverage import measure
from flowc.runtime.scenarios import run_scenario
from flowc.runtime.target import RunTarget
from flowc.source import SourceFile
from tests.coverage.flows import CHOICE, REVIEW, TYPED
from tests.dsl.strategies import flows

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.flow"))


def run_generated(src: str, gen: Generation) -> None:
    """Append the generated scenarios, run them, and check they pass and cover everything."""
    before = flowc.compile_flow(src)
    flow = flowc.compile_flow(src + "\n" + gen.text())
    target = RunTarget.from_compiled(flow)
    results = [run_scenario(target, sc) for sc in flow.scenarios[len(before.scenarios) :]]
    assert len(results) == len(gen.scenarios)
    failed = [(r.title, r.failure) for r in results if not r.passed]
    assert failed == [], gen.text()
    cov = measure(gen.coverable, results)
    assert gen.missed == ()
    assert cov.missing == (), [t.label for t in cov.missing]
    assert cov.covered == cov.total == len(gen.coverable.live)
    # what the generator says each scenario exercises is what the run exercised
    from flowc.runtime.coverage import hits_of

    for scenario, result in zip(gen.scenarios, results, strict=True):
        names = {t.key for t in gen.coverable.targets}
        assert {k for k in hits_of(result) if k in names} == set(scenario.hits)
    assert gen.lower_bound <= len(gen.scenarios)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_generated_scenarios_of_every_example_pass_and_cover_every_live_target(path: Path) -> None:
    src = path.read_text(encoding="utf-8")
    gen = generate_scenarios(flowc.compile_flow(src))
    assert gen.scenarios
    run_generated(src, gen)
    assert generate_scenarios(flowc.compile_flow(src)).text() == gen.text()  # deterministic


def test_each_scenario_is_a_shortest_run_to_its_target() -> None:
    gen = generate_scenarios(flowc.compile_flow(REVIEW))
    for s in gen.scenarios:
        assert len(s.run.turns) == gen.coverable.distance(s.target.key)
        # every turn is followed by an expect line for its routing decision
        turns = [i for i, line in enumerate(s.lines) if not line.startswith("expect")]
        assert all(s.lines[i + 1].startswith("expect ") for i in turns)


def test_alternatives_are_named_in_the_generated_calls() -> None:
    gen = generate_scenarios(flowc.compile_flow(CHOICE))
    text = gen.text()
    assert "triage calls decide hands off to billing" in text
    assert "triage calls decide hands off to tech" in text
    assert 'triage calls decide finishes "closed"' in text
    run_generated(CHOICE, gen)


def test_alternatives_equal_under_python_eq_each_get_a_scenario_that_covers_them() -> None:
    gen = generate_scenarios(flowc.compile_flow(TYPED))
    for value in ("true", "1", "1.0"):
        assert f"bot calls mark sets done = {value}:" in gen.text()
    run_generated(TYPED, gen)


def test_custom_conditions_are_refused_with_their_line() -> None:
    src = "speaker user: human\nspeaker bot\ncondition urgent()\nwhen urgent() then bot\n"
    with pytest.raises(GenerationError, match=r"`urgent` \(line 4\)"):
        generate_scenarios(flowc.compile_flow(src))


def test_many_custom_conditions_are_named_once_each_with_a_bounded_list_of_lines() -> None:
    """A large flow that routes on custom conditions in hundreds of rules gets a refusal
    of a few lines' length, not one that lists every use (each name once, its first lines,
    the rest counted)."""
    rules = "".join(f"when urgent() and from bot then s{i % 3}\n" for i in range(300))
    rules += "".join(f"when vip{k}() then bot\n" for k in range(8))
    conditions = "condition urgent()\n" + "".join(f"condition vip{k}()\n" for k in range(8))
    src = "speaker user: human\nspeaker bot\nspeaker s0\nspeaker s1\nspeaker s2\n"
    with pytest.raises(GenerationError) as refused:
        generate_scenarios(flowc.compile_flow(src + conditions + rules))
    message = str(refused.value)
    assert "`urgent` (lines 15, 16, 17, 18, 19, and 295 more)" in message
    assert message.count("`urgent`") == 1
    assert "`vip3` (line 318), and 4 more names)" in message
    assert len(message) < 400


def _built_in(cond: n.Cond) -> n.Cond:
    """A condition with every custom call replaced by `always` (a scenario cannot choose
    a custom condition's outcome)."""
    if isinstance(cond, n.CallCond):
        return n.AlwaysCond(cond.span)
    if isinstance(cond, n.AndCond | n.OrCond):
        return attrs.evolve(cond, items=tuple(_built_in(c) for c in cond.items))
    if isinstance(cond, n.NotCond):
        return attrs.evolve(cond, item=_built_in(cond.item))
    return cond


def _scriptable(flow: n.Flow) -> n.Flow:
    """The flow without custom conditions and targets, and without tools on humans.

    What a human's tool call may do is still undecided (check explores its handoffs and
    finishes, the runtime posts a human's turn as text); that is left to the work on
    humans having one meaning everywhere.
    """
    speakers = [s.name for s in flow.statements if isinstance(s, n.SpeakerDecl)]
    out: list[n.Statement] = []
    for st in flow.statements:
        if isinstance(st, n.SpeakerDecl) and st.human:
            st = attrs.evolve(st, tools=())
        elif isinstance(st, n.Rule):
            st = attrs.evolve(st, cond=_built_in(st.cond))
        if isinstance(st, n.Rule | n.Otherwise) and isinstance(st.target, n.CallTarget):
            st = attrs.evolve(st, target=n.SpeakerTarget(speakers[0], st.target.span))
        out.append(st)
    return attrs.evolve(flow, statements=tuple(out))


def _compiles(flow_ast: object) -> tuple[str, CompiledFlow] | None:
    text = format_flow(flow_ast)  # type: ignore[arg-type]
    compiled, diags = compile_source(SourceFile("gen.flow", text))
    if compiled is None or has_errors(diags):
        return None
    return text, compiled


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flows().map(_scriptable))
def test_generated_scenarios_of_random_flows_pass_and_cover_every_live_target(
    flow_ast: object,
) -> None:
    got = _compiles(flow_ast)
    assume(got is not None)
    assert got is not None
    text, compiled = got
    gen = generate_scenarios(compiled)
    run_generated(text, gen)
