"""E111 refuses exactly the close reasons no run can end with (issue 25): a reason the
flow writes but no run reaches (the implicit `otherwise` never taken, a dead rule, a
finishing tool never called, runs longer than `max_turns`) is refused by `check` (and
the editor), `test` and `scenarios`, from the state-space exploration; a reachable one is
accepted (when the exploration is cut short, from the symbolic count of every state); a
partial exploration (the symbolic count gave up too) refuses nothing on that basis. A property test holds the
exploration's endings to concrete runs of the reference stepper, both ways."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowc
from flowc.cli import main
from flowc.compiler.analysis import CheckOptions
from flowc.compiler.analysis.endings import CAP_REASON, ending_reasons, scenario_ending_errors
from flowc.compiler.analysis.explore import explore
from flowc.compiler.analysis.facts import Facts
from flowc.compiler.analysis.runs import Turn
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.analysis.targets import coverage_targets
from flowc.compiler.pipeline import compile_source
from flowc.source import SourceFile
from tests.check.check_replay import replay, stepper_for
from tests.check.check_stepper import call_label
from tests.check.test_check_soundness import flow_text

#: the default is reached only if some turn matches no rule
HEAD = """\
speaker user: human
speaker bot
start user
when from user then bot
"""
#: `after_work` is written only by the implicit `otherwise terminate "after_work"`
SCENARIO = """
scenario "ends" {
  user: "hi"
  bot: "there"
  expect terminate "after_work"
}
"""
#: the bot's turn falls to the default: the run ends with "after_work"
REACHABLE = HEAD + SCENARIO
#: a rule takes the bot's turn too: the default is never reached, no run ends
UNREACHABLE = HEAD + "when from bot then user\n" + SCENARIO
IMPLICIT = (
    'no run of the flow ends with "after_work": the implicit default (`otherwise '
    'terminate "after_work"`, as no `otherwise` is written) is never reached: on every '
    "turn of every run a rule matches"
)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reachable.flow").write_text(REACHABLE, encoding="utf-8")
    (tmp_path / "unreachable.flow").write_text(UNREACHABLE, encoding="utf-8")
    return tmp_path


def test_a_reason_only_the_default_writes_is_accepted_when_the_default_is_reachable(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compile", "reachable.flow"]) == 0
    assert main(["check", "reachable.flow", "--format", "concise"]) == 0
    assert "E111" not in capsys.readouterr().out
    assert main(["test", "reachable.flow"]) == 0
    assert "ok    ends" in capsys.readouterr().out


def test_it_is_refused_when_the_default_is_never_reached(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the syntactic check alone let it through: the flow does write "after_work"
    compiled = flowc.compile_flow(UNREACHABLE)
    assert [d.message for d in scenario_ending_errors(compiled)] == [IMPLICIT]
    # `flowc compile` explores nothing (it loads neither the checker nor the runtime):
    # it refuses only a reason nothing writes
    assert main(["compile", "unreachable.flow", "-o", "out.json"]) == 0
    assert main(["check", "unreachable.flow", "--format", "concise"]) == 1
    assert f"unreachable.flow:10:20: E111 {IMPLICIT}\n" in capsys.readouterr().out
    assert main(["test", "unreachable.flow"]) == 1
    out, err = capsys.readouterr()
    assert (
        "ERROR a scenario expects what no run of the flow does" in out
        and f"error[E111]: {IMPLICIT}" in err
    )
    assert main(["scenarios", "unreachable.flow"]) == 1
    assert f"error[E111]: {IMPLICIT}" in capsys.readouterr().err


def test_what_the_runtime_would_have_said(folder: Path) -> None:
    """The refused scenario is one that could only fail when run."""
    from flowc.runtime.scenarios import run_scenario
    from flowc.runtime.target import RunTarget

    compiled = flowc.compile_flow(UNREACHABLE)
    (result,) = [run_scenario(RunTarget.from_compiled(compiled), sc) for sc in compiled.scenarios]
    assert not result.passed and 'expected the run to end with "after_work"' in (
        result.failure or ""
    )


def test_a_cut_short_exploration_decides_from_the_symbolic_count(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cut short at its bound, the exploration's endings come from the symbolic count of
    every state: the same E111 as a complete check."""
    assert main(["check", "unreachable.flow", "--format", "concise"]) == 1
    whole = capsys.readouterr().out
    assert main(["check", "unreachable.flow", "--max-states", "2", "--format", "concise"]) == 1
    out = capsys.readouterr().out
    assert "I301" in out
    (e111,) = [line for line in whole.splitlines() if " E111 " in line]
    assert e111 in out.splitlines()


def test_a_partial_exploration_refuses_nothing_on_that_basis(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the symbolic count gives up too (past its own budgets), which endings are
    reached is not known: nothing is refused on that basis."""
    monkeypatch.setattr("flowc.compiler.analysis.facts.explore_symbolic", lambda system: None)
    assert main(["check", "unreachable.flow", "--max-states", "2", "--format", "concise"]) == 0
    out = capsys.readouterr().out
    assert "I301" in out and "E111" not in out
    assert main(["test", "unreachable.flow", "--max-states", "2"]) == 1  # it runs, and fails
    assert "FAIL  ends" in capsys.readouterr().out
    # ... and the syntactic check still holds: a reason the flow never writes
    (folder / "typo.flow").write_text(REACHABLE.replace('"after_work"', '"afterwork"'))
    assert main(["check", "typo.flow", "--max-states", "2", "--format", "concise"]) == 1
    assert 'E111 the flow never ends with "afterwork"' in capsys.readouterr().out


CAPPED = """\
speaker user: human
speaker bot {
  tool done finishes "solved"
}
start user
max_turns MAX
when from user then bot
when from bot then user
scenario "s" {
  user: "hi"
  expect terminate "REASON"
}
"""


@pytest.mark.parametrize(
    ("cap", "reason", "refused"),
    [
        (4, "max_turns", None),  # user, bot, user, bot: the cap closes it
        (4, "solved", None),
        (
            1,
            "solved",
            'no run of the flow ends with "solved": the shortest run that would end with '
            "it takes 2 turns, and `max_turns 1` closes every run before",
        ),
        (1, "max_turns", None),
    ],
)
def test_the_cap_counts(cap: int, reason: str, refused: str | None) -> None:
    text = CAPPED.replace("MAX", str(cap)).replace("REASON", reason)
    got = [d.message for d in scenario_ending_errors(flowc.compile_flow(text))]
    assert got == ([refused] if refused else [])


def test_every_run_ending_before_the_cap_refuses_max_turns() -> None:
    text = (
        CAPPED.replace("MAX", "5")
        .replace("REASON", "max_turns")
        .replace("when from bot then user", 'when from bot then terminate "answered"')
    )
    (d,) = scenario_ending_errors(flowc.compile_flow(text))
    assert (
        d.message == 'no run of the flow ends with "max_turns": every run ends by itself within '
        "`max_turns 5` (a run that ends on turn 5 keeps its own reason)"
    )
    assert d.notes == ('its runs end with "answered", "solved"',)


def test_a_dead_rule_and_a_tool_never_called_are_named() -> None:
    text = """\
speaker user: human
speaker bot
speaker ghost {
  tool boo finishes "scared"
}
start user
when from user then bot
when from bot then terminate "answered"
when from bot then terminate "never"
when from ghost then user
scenario "s" {
  user: "hi"
  expect terminate "never"
}
scenario "t" {
  user: "hi"
  expect terminate "scared"
}
"""
    never, scared = scenario_ending_errors(flowc.compile_flow(text))
    assert never.message == (
        'no run of the flow ends with "never": rule 3, line 9 (`when from bot '
        'then terminate "never"`) never fires'
    )
    assert scared.message == (
        'no run of the flow ends with "scared": no run has `ghost` call `boo` (`finishes "scared"`)'
    )
    assert (never.span and never.span.line, scared.span and scared.span.line) == (13, 17)


# ── exactly: the exploration's endings against concrete runs ───────────────────


def concrete_endings(system: object, seed: int, runs: int = 40, turns: int = 12) -> set[str]:
    """The reasons random concrete runs of the reference stepper end with, the cap
    (``max_turns``) applied as the runtime applies it."""
    from flowc.compiler.analysis.system import System

    assert isinstance(system, System)
    rng = random.Random(seed)
    cap = system.max_turns
    labels = sorted({call_label("urgent", {"level": 1}), call_label("urgent", {"level": 2})})
    out: set[str] = set()
    for _ in range(runs):
        stepper = stepper_for(system)
        speaker: str | None = system.ids[system.start]
        for i in range(turns if cap is None else min(turns, cap)):
            assert speaker is not None
            index = system.ids.index(speaker)
            action = system.actions[index][0] if i == 0 else rng.choice(system.actions[index])
            choices = system.custom_results.get("pick")
            options = list(choices) if choices is not None else [*system.speakers, None]
            decision = stepper.step(
                Turn(
                    speaker=speaker,
                    tool=action.tool,
                    sets=action.sets,
                    clears=action.clears,
                    handoff=system.speakers[action.handoff] if action.handoff is not None else None,
                    finish=action.finish,
                    assumed=tuple((label, rng.random() < 0.5) for label in labels),
                    custom_choice=(rng.choice(options),),
                )
            )
            speaker = decision.next
            if speaker is None:
                assert decision.reason is not None
                out.add(decision.reason)
                break
        else:
            if cap is not None and cap <= turns:
                out.add(CAP_REASON)
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=flow_text(), seed=st.integers(0, 2**16))
def test_the_endings_are_exactly_those_of_some_run(text: str, seed: int) -> None:
    compiled, diags = compile_source(SourceFile("gen.flow", text))
    assert compiled is not None, (text, diags)
    system = system_of_flow(compiled)
    facts = Facts(system, explore(system, 5_000), "gen.flow")
    reasons = ending_reasons(facts)
    if reasons is None:  # cut short, or a custom target chooses a reason itself
        return
    # sound: no concrete run ends with a reason E111 would refuse
    assert concrete_endings(system, seed) <= reasons, text
    # complete: each reason it allows ends a run the reference stepper replays
    cov = coverage_targets(compiled, CheckOptions(max_states=5_000))
    for reason in reasons:
        run = cov.witness_run(("end", reason))
        replay(system, run)
        if (
            reason == CAP_REASON
            and system.max_turns is not None
            and ("end", CAP_REASON) not in cov.witnesses
        ):
            assert run.next is not None and len(run.turns) == system.max_turns, text
        else:
            assert run.next is None and run.reason == reason, text
            assert system.max_turns is None or len(run.turns) <= system.max_turns, text
