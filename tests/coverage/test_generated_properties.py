"""`flowc scenarios` hands out only scenarios that `flowc test` passes, property monitors
included: a generated scenario is a regression test of the flow's routing, so a target
whose shortest runs break a property gets no scenario (the note names it, the property
and why; `--property NAME` is what writes a violating run), and the self-check runs each
scenario exactly as `flowc test` will before it is printed or written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flowc.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# the shortest run to the refund breaks `refund_approved`; the answer does not
TRIAGE = """speaker customer: human
speaker bot {
  tool answer sets answered = true
  tool refund sets refunded = true
}
start customer
max_turns 6
context answered = false
when context.answered == true then terminate "answered"
when context.refunded == true then terminate "refunded"
when from customer then bot
otherwise customer
property refund_approved: never tool refund
"""


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.flow")))
def test_written_scenarios_pass_flowc_test(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / name
    shutil.copy(EXAMPLES / name, flow)
    assert main(["scenarios", str(flow), "--write"]) == 0
    capsys.readouterr()
    assert main(["test", str(flow)]) == 0, capsys.readouterr().out


def test_a_target_whose_shortest_runs_break_a_property_gets_no_scenario_and_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "approval.flow"
    shutil.copy(EXAMPLES / "approval.flow", flow)
    assert main(["scenarios", str(flow), "--write"]) == 0
    err = capsys.readouterr().err
    assert (
        "1 live target without a scenario, as the shortest runs tried to it break a property" in err
    )
    assert "max_turns 10 (turn 10: property clear_outcome (" in err
    assert "(line " not in err.split("max_turns 10 (")[1]  # no line of the unseen text
    assert 'scenario "generated: max_turns 10"' not in flow.read_text()
    assert main(["test", str(flow)]) == 0


def test_other_targets_are_still_covered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "triage.flow"
    flow.write_text(TRIAGE)
    assert main(["scenarios", str(flow)]) == 0
    out, err = capsys.readouterr()
    assert "bot calls answer" in out
    assert "calls refund" not in out
    assert "bot calls refund (turn 2: property refund_approved" in err
    assert main(["scenarios", str(flow), "--write"]) == 0
    assert main(["test", str(flow)]) == 0


def test_the_self_check_watches_properties(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a generator that hands out a violating run is caught before anything is written
    import flowc.commands.testing as testing

    monkeypatch.setattr(testing, "_property_judge", lambda *_: None, raising=False)
    flow = tmp_path / "triage.flow"
    flow.write_text(TRIAGE)
    assert main(["scenarios", str(flow), "--write"]) == 2
    err = capsys.readouterr().err
    assert "internal error" in err and "property refund_approved" in err
    assert flow.read_text() == TRIAGE


PASSED_THROUGH = """\
speaker user: human { sets k }
speaker x
when from user then x
when from x and context.k == 1 then terminate "r"
when from x then terminate "s"
property p: never from x and context.k != 1
"""


def test_a_target_a_later_scenario_exercises_is_not_said_to_have_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # speaker x's own shortest runs break p (k unset), but the scenario of `terminate "r"`
    # (user sets k = 1) passes through x: x is covered, and the note must not list it
    flow = tmp_path / "through.flow"
    flow.write_text(PASSED_THROUGH)
    assert main(["scenarios", str(flow), "--write"]) == 0
    err = capsys.readouterr().err
    assert "2 live targets without a scenario" in err, err  # rule 3 and its ending
    assert "speaker x" not in err, err
    assert main(["test", str(flow)]) == 0


# the run to `terminate "done"` that exercises the most (bot calls escalate) breaks the
# property; the other shortest run (bot only speaks) exercises the rest and passes
# (formatted as `flowc fmt` writes it, which `--write` does to the whole file)
ESCALATE = """speaker user: human
speaker bot {
  tool escalate
}
start user
when from user then bot
when from bot  then terminate "done"
property no_escalation: never tool escalate
"""


def test_a_refused_run_gives_way_to_the_other_shortest_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first run tried to a target is the shortest that exercises the most; when the
    flow's properties refuse it, the target gets the other shortest run the exploration
    knows, and what that run exercises is covered; only the tool no passing run calls is
    left without a scenario."""
    flow = tmp_path / "escalate.flow"
    flow.write_text(ESCALATE)
    assert main(["scenarios", str(flow), "--write"]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"{flow}: added 1 scenario; 1 scenario for 6 live targets"), err
    assert err.endswith(
        "1 live target without a scenario, as the shortest runs tried to it break a property "
        "(`flowc test` would fail them; `flowc scenarios --property NAME` writes the run that "
        "breaks NAME): bot calls escalate (turn 2: property no_escalation (`never tool "
        "escalate`) is violated: turn 2 has `tool escalate`; the run: user → bot (escalate))\n"
    ), err
    assert flow.read_text() == ESCALATE + (
        '\nscenario "generated: speaker bot" {\n'
        '  user: "turn 1"\n'
        "  expect next bot\n"
        '  bot: "turn 2"\n'
        '  expect terminate "done"\n'
        "}\n"
    )
    assert main(["test", str(flow)]) == 0
