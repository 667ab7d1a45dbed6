"""Coverage numbers on hand-made flows whose answer is known."""

from __future__ import annotations

import pytest

import flowc
from flowc.compiler.analysis.generate import generate_scenarios
from flowc.compiler.analysis.targets import coverage_targets
from flowc.diagnostics import FlowError
from flowc.runtime.coverage import measure
from flowc.runtime.scenarios import run_scenario
from flowc.runtime.target import RunTarget
from tests.coverage.flows import (
    CAPPED,
    CHOICE,
    GHOST,
    REVIEW,
    REVIEW_DEAD,
    REVIEW_HIT,
    REVIEW_MISSING,
    TYPED,
)


def _targets(src: str) -> dict[str, tuple[bool, str | None]]:
    cov = coverage_targets(flowc.compile_flow(src))
    return {t.name: (t.live, t.code) for t in cov.targets}


def test_review_flow_numbers_match_the_hand_count() -> None:
    flow = flowc.compile_flow(REVIEW)
    results = [run_scenario(RunTarget.from_compiled(flow), sc) for sc in flow.scenarios]
    assert all(r.passed for r in results)
    cov = measure(coverage_targets(flow), results)
    assert (cov.covered, cov.total, cov.percent) == (6, 11, 54.5)
    assert {t.name for t in cov.live if cov.hits.get(t.key)} == REVIEW_HIT
    assert {t.name for t in cov.missing} == REVIEW_MISSING
    assert {t.name: t.code for t in cov.not_coverable} == REVIEW_DEAD


def test_each_from_part_of_an_expanded_rule_is_a_target_on_its_line() -> None:
    cov = coverage_targets(flowc.compile_flow(REVIEW))
    rules = {t.name: t for t in cov.targets if t.kind == "rule"}
    assert len(rules) == 5  # `from user, drafter` compiles to two rules
    assert rules["rule:1"].line == rules["rule:2"].line == 11
    assert rules["rule:1"].label == "rule 2, line 11: when from user then reviewer"
    assert rules["rule:2"].label == "rule 3, line 11: when from drafter then reviewer"


def test_the_live_set_is_what_check_says() -> None:
    # every dead rule carries the code of the finding `flowc check` reports for the flow
    codes = {d.code.id for d in flowc.check(REVIEW)}
    dead_codes = {code for live, code in _targets(REVIEW).values() if not live}
    assert dead_codes <= codes


def test_an_unreachable_speaker_takes_its_tool_rule_and_ending_with_it() -> None:
    got = _targets(GHOST)
    assert got["speaker:ghost"] == (False, "W201")
    assert got["tool:ghost:boo:0"] == (False, "W201")
    assert got["rule:1"] == (False, "W201")
    assert got["end:scared"] == (False, "W201")
    assert got["end:ok"] == (True, None) and got["tool:a:done:0"] == (True, None)
    assert "W201" in {d.code.id for d in flowc.check(GHOST)}


def test_targets_beyond_max_turns_are_not_coverable() -> None:
    cov = coverage_targets(flowc.compile_flow(CAPPED))
    by_name = {t.name: t for t in cov.targets}
    assert by_name["rule:2"].live is False
    assert "max_turns 2" in (by_name["rule:2"].dead or "")
    assert by_name["end:max_turns"].live and cov.distance(("end", "max_turns")) == 2
    assert by_name["speaker:c"].live is False


def test_each_alternative_of_a_tool_is_a_target() -> None:
    got = _targets(CHOICE)
    tools = sorted(k for k in got if k.startswith("tool:"))
    assert tools == ["tool:triage:decide:0", "tool:triage:decide:1", "tool:triage:decide:2"]
    assert all(got[k] == (True, None) for k in tools)
    assert got["end:closed"] == (True, None)


@pytest.mark.parametrize("index,value", [(0, "true"), (1, "1"), (2, "1.0")])
def test_a_call_takes_the_alternative_that_writes_its_very_value(index: int, value: str) -> None:
    """`true`, `1` and `1.0` are equal under `==` (routing cannot tell them apart) but each
    is an alternative of its own: live, and covered by the call that writes that value."""
    got = _targets(TYPED)
    assert [got[f"tool:bot:mark:{i}"] for i in range(3)] == [(True, None)] * 3
    src = TYPED + (
        f'scenario "s" {{\n  user: "go"\n  bot calls mark sets done = {value}: "m"\n'
        '  expect terminate "ok"\n}\n'
    )
    flow = flowc.compile_flow(src)
    [result] = [run_scenario(RunTarget.from_compiled(flow), sc) for sc in flow.scenarios]
    assert result.passed, result.failure
    cov = measure(coverage_targets(flow), [result])
    assert {k for k, n in cov.hits.items() if k[0] == "tool" and n} == {
        ("tool", "bot", "mark", index)
    }


def test_a_failed_scenario_still_counts_what_it_exercised() -> None:
    src = REVIEW.replace('expect terminate "approved"', 'expect terminate "fallback"')
    flow = flowc.compile_flow(src)
    [result] = [run_scenario(RunTarget.from_compiled(flow), sc) for sc in flow.scenarios]
    assert not result.passed
    cov = measure(coverage_targets(flow), [result])
    assert cov.covered == 6


BARE = """
speaker user: human
speaker bot {
  tool decide hands off to user | finishes "done"
  tool note sets seen = true
}
when from user then bot
when from bot then user
scenario "bare steps only" {
  user: "hi"
  bot hands off to user: "back to you"
  user: "again"
  bot sets seen = true: "noted"
  user: "bye"
  bot finishes "done"
  expect terminate "done"
}
"""


def test_a_bare_step_covers_the_alternative_it_takes() -> None:
    """A model speaker's bare step is a call of the alternative doing exactly that (E111
    refuses any other), so coverage counts that alternative, as a `calls` step would."""
    flow = flowc.compile_flow(BARE)
    [result] = [run_scenario(RunTarget.from_compiled(flow), sc) for sc in flow.scenarios]
    assert result.passed, result.failure
    cov = measure(coverage_targets(flow), [result])
    tools = {t.name: cov.hits.get(t.key, 0) for t in cov.targets if t.kind == "tool"}
    assert tools == {"tool:bot:decide:0": 1, "tool:bot:decide:1": 1, "tool:bot:note:0": 1}
    # the same counts as the scenario written with `calls`
    calls = (
        BARE.replace("bot hands off to user:", "bot calls decide hands off to user:")
        .replace("bot sets seen = true:", "bot calls note sets seen = true:")
        .replace('bot finishes "done"', 'bot calls decide finishes "done"')
    )
    flow2 = flowc.compile_flow(calls)
    [result2] = [run_scenario(RunTarget.from_compiled(flow2), sc) for sc in flow2.scenarios]
    assert result2.passed, result2.failure
    assert measure(coverage_targets(flow2), [result2]).hits == cov.hits


def test_a_bare_step_two_tools_make_is_refused_as_ambiguous() -> None:
    """The step does not say which tool it calls (it is a call of one: the `when tool`
    rules and the properties see it), so it is E111 where it is written."""
    src = """
speaker user: human
speaker bot {
  tool back hands off to user
  tool reply hands off to user | finishes "done"
}
when from user then bot
scenario "s" {
  user: "hi"
  bot hands off to user: "back"
}
"""
    with pytest.raises(FlowError) as err:
        flowc.compile_flow(src)
    assert [d.message for d in err.value.diagnostics] == [
        "`bot`'s step hands off to user is ambiguous: its tools `back` and `reply` both do "
        "that, and the step is a call of one of them; write `bot calls back` or `bot calls "
        "reply hands off to user`"
    ]
    # named, it is counted as that tool's alternative
    flow = flowc.compile_flow(
        src.replace("bot hands off to user", "bot calls reply hands off to user")
    )
    [result] = [run_scenario(RunTarget.from_compiled(flow), sc) for sc in flow.scenarios]
    cov = measure(coverage_targets(flow), [result])
    assert {t.name for t in cov.targets if t.kind == "tool" and cov.hits.get(t.key)} == {
        "tool:bot:reply:0"
    }


TWO_TOOLS = """speaker user: human
speaker bot {
  tool yes sets done = true
  tool one sets done = 1
}
start user
max_turns 6
when context.done == 1 and from bot then terminate "ok"
when from user then bot
when from bot then user
"""


@pytest.mark.parametrize("value,tool", [("true", "yes"), ("1", "one"), ("1.0", None)])
def test_a_bare_step_is_a_call_of_the_tool_that_writes_its_very_value(
    value: str, tool: str | None
) -> None:
    """Two tools write values equal under `==`: a bare step is a call of the one that
    writes its very value; when neither does, it could be either, and is refused (E111)."""
    src = TWO_TOOLS + (
        f'scenario "s" {{\n  user: "go"\n  bot sets done = {value}: "m"\n  expect terminate "ok"\n}}\n'
    )
    if tool is None:
        with pytest.raises(FlowError, match="E111"):
            flowc.compile_flow(src)
        return
    flow = flowc.compile_flow(src)
    [result] = [run_scenario(RunTarget.from_compiled(flow), sc) for sc in flow.scenarios]
    assert result.passed, result.failure
    cov = measure(coverage_targets(flow), [result])
    assert {k for k, n in cov.hits.items() if k[0] == "tool" and n} == {("tool", "bot", tool, 0)}


LONG_CAP = """\
speaker user: human
speaker bot
start user
max_turns 1002
when from user then bot
when from bot then user
"""


def test_a_cap_longer_than_the_runs_flowc_builds_is_still_a_target() -> None:
    """Past 1,000 turns flowc builds no run to the cap, but a run reaches it (the flow
    loops): it is a target, missing until a scenario reaches it, never "not coverable"
    (which left it out of the percentage: 100% with the cap never reached)."""
    flow = flowc.compile_flow(LONG_CAP)
    cov = coverage_targets(flow)
    (cap,) = [t for t in cov.targets if t.name == "end:max_turns"]
    assert cap.live and cap.dead is None
    assert measure(cov, []).percent < 100
    turns = "".join('  user: "a"\n  bot: "b"\n' for _ in range(501))
    scenario = f'scenario "to the cap" {{\n{turns}  expect terminate "max_turns"\n}}\n'
    flow = flowc.compile_flow(LONG_CAP + scenario)
    (result,) = [run_scenario(RunTarget.from_compiled(flow), sc) for sc in flow.scenarios]
    assert result.passed
    got = measure(coverage_targets(flow), [result])
    assert got.hits.get(("end", "max_turns")) and got.percent == 100


def test_a_long_cap_no_run_reaches_is_not_coverable() -> None:
    """Every run ends within two turns: the cap of 5,000 is out of reach, and said so."""
    flow = flowc.compile_flow(
        LONG_CAP.replace("max_turns 1002", "max_turns 5000").replace(
            "when from bot then user", 'when from bot then terminate "done"'
        )
    )
    (cap,) = [t for t in coverage_targets(flow).targets if t.name == "end:max_turns"]
    assert not cap.live and cap.dead == "every run ends by itself within the cap"


@pytest.mark.parametrize(("cap", "live"), [(2, True), (3, False)])
def test_a_long_cap_without_a_loop_is_reached_by_the_longest_run(
    cap: int, live: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a loop, the longest run decides (the runs to the cap are not built past
    MAX_CAP_RUN turns: 1 here, so that a chain of three turns is "long")."""
    from flowc.compiler.analysis import facts, targets

    monkeypatch.setattr(facts, "MAX_CAP_RUN", 1)
    monkeypatch.setattr(targets, "MAX_CAP_RUN", 1)
    flow = flowc.compile_flow(
        f"speaker user: human\nspeaker a\nspeaker b\nstart user\nmax_turns {cap}\n"
        'when from user then a\nwhen from a then b\nwhen from b then terminate "done"\n'
    )
    cov = coverage_targets(flow)
    assert cov.cap_walk is None
    (target,) = [t for t in cov.targets if t.name == "end:max_turns"]
    assert target.live is live


#: a rule or a tool that ends the run with "max_turns", the reason the cap writes
MAX_TURNS_WRITTEN = {
    "a rule, no cap": 'speakers a, b\nwhen always then terminate "max_turns"\n',
    "a rule, a cap no run reaches": (
        "speaker u: human\nspeakers a, b\nmax_turns 3\n"
        'when from u then a\nwhen from a then terminate "max_turns"\n'
    ),
    "a tool, and the cap": (
        'speaker u: human\nspeaker a { tool t finishes "max_turns" }\nmax_turns 5\n'
        "when from u then a\nwhen from a then u\n"
    ),
}


@pytest.mark.parametrize("name", list(MAX_TURNS_WRITTEN))
def test_the_reason_max_turns_is_one_target_whoever_writes_it(name: str) -> None:
    """AG2 closes a run cut by the cap with "max_turns", so a rule or a tool writing it
    ends runs the same way: one target, and `flowc scenarios` writes a scenario for it
    (it stopped with an internal error: the target was taken for the cap's)."""
    flow = flowc.compile_flow(MAX_TURNS_WRITTEN[name])
    cov = coverage_targets(flow)
    ends = [t for t in cov.targets if t.name == "end:max_turns"]
    assert len(ends) == 1 and ends[0].live, ends
    written = generate_scenarios(flow).text()
    flow = flowc.compile_flow(MAX_TURNS_WRITTEN[name] + written)
    results = [run_scenario(RunTarget.from_compiled(flow), sc) for sc in flow.scenarios]
    assert results and all(r.passed for r in results), [r.failure for r in results]
    got = measure(coverage_targets(flow), results)
    assert got.hits.get(("end", "max_turns")) and got.percent == 100
