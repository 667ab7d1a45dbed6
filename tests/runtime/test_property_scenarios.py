"""`flowc scenarios FILE --property NAME`: the scenario of a property's violation (the
checker's shortest run that breaks it), which `flowc test` then fails on that property;
refused in one line when the property holds, is not decided, is broken only by runs
that never end, or does not exist.

On generated flows (tests/property_check), every violated property's scenario fails
`flowc test`'s run on that property, on the turn the brute force (which shares no code
with the checker) says the shortest violation breaks it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc import compile_flow
from flowc.cli import main
from flowc.compiler.analysis.generate import GenerationError, violation_scenario
from flowc.compiler.describe import property_text
from flowc.runtime.scenarios import run_scenario
from flowc.runtime.target import RunTarget
from tests.property_check.meaning import violation_turn
from tests.property_check.strategies import case_of_seed

FLOW = """speaker user: human
speaker drafter
speaker reviewer { tool approve sets done = true }
start user
max_turns 12
context done = false
when context.done == true then terminate "approved"
when from user then drafter
when from drafter then reviewer
when from reviewer then drafter
property one_draft: from drafter at most 1 time
property approved_in_time: eventually tool approve within 4 turns
property drafter_last: after from reviewer, from drafter
property no_user_twice: never from user and previous from user
"""

SCENARIO = """scenario "generated: property one_draft is violated" {
  user: "turn 1"
  expect next drafter
  drafter: "turn 2"
  expect next reviewer
  reviewer: "turn 3"
  expect next drafter
  drafter: "turn 4"
  expect next reviewer
}
"""


def test_the_scenario_is_printed_and_test_fails_on_that_property(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "review.flow"
    flow.write_text(FLOW)
    assert main(["scenarios", str(flow), "--property", "one_draft"]) == 0
    out, err = capsys.readouterr()
    assert out == SCENARIO
    assert err == (
        f"{flow}: the scenario breaks property one_draft on turn 4: turn 4 is the 2nd turn "
        "with `from drafter`\n"
    )
    assert main(["scenarios", str(flow), "--property", "one_draft", "--write"]) == 0
    # appended, the file formatted as `--write` leaves it
    assert flow.read_text().endswith("\n\n" + SCENARIO)
    capsys.readouterr()
    assert main(["test", str(flow)]) == 1
    out = capsys.readouterr().out
    # approved_in_time breaks on the same turn: both are named, one_draft among them
    assert (
        "property one_draft (`from drafter at most 1 time`) is violated: turn 4 is the 2nd turn"
        " with `from drafter`"
    ) in out
    line = flow.read_text().splitlines().index('  drafter: "turn 4"') + 1
    assert f"turn 4 (line {line}): property" in out
    # written once
    assert main(["scenarios", str(flow), "--property", "one_draft", "--write"]) == 0
    assert flow.read_text().count("property one_draft is violated") == 1


def test_written_again_it_names_the_line_test_fails_on_in_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--write` of a scenario the file has already writes nothing: the failure it tells
    of is the file's scenario's, at its line, as `flowc test` gives it (not at the line
    a second copy would have had)."""
    flow = tmp_path / "review.flow"
    flow.write_text(
        FLOW.split("property ")[0]
        + "property one_draft: from drafter at most 1 time\n"
        + "property quick: eventually context.done == true within 3 turns\n"
    )
    for _ in range(2):
        assert main(["scenarios", str(flow), "--property", "one_draft", "--write"]) == 0
    err = capsys.readouterr().err.splitlines()[-1]
    lines = flow.read_text().splitlines()
    at = lines.index('scenario "generated: property one_draft is violated" {') + 1
    assert err.startswith(
        f"{flow}: has the scenario 'generated: property one_draft is violated' already"
        f" (line {at}), nothing written; "
    )
    assert flow.read_text().count("property one_draft is violated") == 1
    assert main(["test", str(flow)]) == 1
    out = capsys.readouterr().out
    line = lines.index('  reviewer: "turn 3"') + 1
    said = f"turn 3 (line {line}): property quick "
    assert said in out
    assert err.split("; `flowc test` fails it: ")[1].startswith(said)
    # the property changed so that the file's scenario no longer breaks it: the note says
    # only that (nothing of the run a new scenario would show, which is not written)
    flow.write_text(
        flow.read_text()
        .replace("at most 1 time", "at most 5 times")
        .replace("within 3 turns", "within 30 turns")
    )
    assert main(["scenarios", str(flow), "--property", "one_draft", "--write"]) == 0
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.endswith(f"(line {at}), nothing written; `flowc test` passes it"), err


@pytest.mark.parametrize(
    ("name", "said"),
    [
        (
            "no_user_twice",
            "property no_user_twice (`never from user and previous from user`) holds on every "
            "run: no run violates it, so there is no scenario to write",
        ),
        ("one_drat", "the flow declares no property 'one_drat'; did you mean 'one_draft'?"),
        (
            "zzz",
            "the flow declares no property 'zzz' (its properties: one_draft, approved_in_time, "
            "drafter_last, no_user_twice)",
        ),
    ],
)
def test_refusals_are_one_line(
    name: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "review.flow"
    flow.write_text(FLOW)
    assert main(["scenarios", str(flow), "--property", name]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"{flow}: error: --property {name}: {said}\n"


def test_a_property_broken_only_by_a_run_that_never_ends_is_refused() -> None:
    flow = compile_flow(
        "speaker a\nspeaker b\nwhen from a then b\nwhen from b then a\n"
        "property ends_ok: eventually ends\n"
    )
    with pytest.raises(GenerationError, match="broken only by runs that never end"):
        violation_scenario(flow, "ends_ok")


def test_generated_flows_the_scenario_fails_where_the_brute_force_says() -> None:
    checked = 0
    seed = 0
    while checked < 120:
        seed += 1
        case = case_of_seed(seed, 6)
        if "condition urgent" in case.text:  # a scenario cannot choose a custom outcome
            continue
        text = case.text + "".join(f"{property_text(p)}\n" for p in case.props)
        flow = compile_flow(text)
        target = RunTarget.from_compiled(flow)
        for prop in flow.properties:
            earliest = min(
                (t for run in case.runs.runs() if (t := violation_turn(prop, run)) is not None),
                default=None,
            )
            try:
                sc = violation_scenario(flow, prop.name)
            except GenerationError as err:
                # refused only when the brute force finds no violation either (every
                # generated flow has max_turns: no run goes on for ever)
                assert earliest is None, (text, prop, str(err))
                continue
            assert sc.broken_at == earliest, (text, prop)
            with_sc = compile_flow(text + "\n" + sc.text())
            result = run_scenario(target, with_sc.scenarios[-1], [prop])
            assert not result.passed, (text, sc.text())
            assert result.failure is not None
            assert result.failure.startswith(f"turn {earliest} (line "), result.failure
            assert f"property {prop.name} " in result.failure
            checked += 1
    assert checked >= 120
