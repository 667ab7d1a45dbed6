"""E111 refuses ``expect terminate "max_turns"`` when every run ends by itself within the
cap, whatever the cap: a complete exploration answers for a cap of thousands of turns as
for one of five, and so does the symbolic count when the exploration stops at its bound
and every run ends within ``MAX_CAP_RUN`` turns (``Facts.cap_reached`` once took any cap
past ``MAX_CAP_RUN`` as reached)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import flowc
from flowc.cli import main
from flowc.compiler.analysis import CheckOptions, facts_of
from flowc.compiler.analysis.endings import scenario_ending_errors
from flowc.compiler.analysis.facts import MAX_CAP_RUN
from flowc.compiler.analysis.system import system_of_flow
from flowc.diagnostics import Diagnostic

#: every run ends on turn 3 (user, bot, helper), unless LAST loops back to the user
FLOW = """\
speaker user: human
speaker bot
speaker helper
start user
max_turns CAP
when from user then bot
when from bot then helper
when from helper then LAST
scenario "capped" {
  user: "hi"
  expect terminate "max_turns"
}
"""
ENDS = 'terminate "done"'
LOOPS = "user"
#: explored states: every one (a complete exploration), or 2 (cut short: the symbolic count)
BOUNDS = pytest.mark.parametrize("bound", [1000, 2], ids=["complete", "cut short"])


def flow_text(cap: int, last: str) -> str:
    return FLOW.replace("CAP", str(cap)).replace("LAST", last)


def cap_reached(text: str, bound: int) -> bool:
    system = system_of_flow(flowc.compile_flow(text))
    facts, _ = facts_of(system, CheckOptions(max_states=bound), "capped.flow")
    assert facts.space.truncated is (bound == 2) and facts.complete
    return facts.cap_reached


#: `flowc check NAME` of a file NAME holding TEXT, its states bounded: its exit code and output
Check = Callable[[str, str, int], tuple[int, str]]


@pytest.fixture
def check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Check:
    """:data:`Check`, the file written in ``tmp_path`` (the working folder)."""
    monkeypatch.chdir(tmp_path)

    def run(name: str, text: str, bound: int) -> tuple[int, str]:
        (tmp_path / name).write_text(text, encoding="utf-8")
        code = main(["check", name, "--max-states", str(bound), "--format", "concise"])
        return code, capsys.readouterr().out

    return run


def ending_errors(text: str, bound: int) -> tuple[Diagnostic, ...]:
    """The E111 errors of the flow ``text``'s scenarios, ``bound`` states explored."""
    return scenario_ending_errors(flowc.compile_flow(text), CheckOptions(max_states=bound))


@BOUNDS
@pytest.mark.parametrize("cap", [5, MAX_CAP_RUN, MAX_CAP_RUN + 1, 5000])
def test_every_run_ending_on_turn_3_refuses_max_turns_under_any_cap(
    cap: int, bound: int, check: Check
) -> None:
    assert (MAX_CAP_RUN, MAX_CAP_RUN + 1) == (1000, 1001)
    text = flow_text(cap, ENDS)
    assert not cap_reached(text, bound)
    (d,) = ending_errors(text, bound)
    assert d.code.id == "E111"
    assert d.message == (
        'no run of the flow ends with "max_turns": every run ends by itself within '
        f"`max_turns {cap}` (a run that ends on turn {cap} keeps its own reason)"
    )
    assert d.notes == ('its runs end with "done"',)
    # `flowc check` reports it too
    code, out = check("capped.flow", text, bound)
    assert code == 1
    assert "E111" in out


@BOUNDS
@pytest.mark.parametrize("cap", [5, MAX_CAP_RUN + 1, 5000])
def test_a_loop_reaches_the_cap_and_max_turns_is_accepted(
    cap: int, bound: int, check: Check
) -> None:
    text = flow_text(cap, LOOPS)
    assert cap_reached(text, bound)
    assert ending_errors(text, bound) == ()
    _, out = check("loops.flow", text, bound)
    assert "E111" not in out
