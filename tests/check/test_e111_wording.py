"""E111's words for `expect terminate "max_turns"` when no run reaches the cap are true
both when every run ends before the cap's turn and when a run ends on that very turn (the
last allowed turn keeps its own reason, so that run does not end with "max_turns")."""

from __future__ import annotations

from pathlib import Path

import pytest

import flowc
from flowc.cli import main
from flowc.compiler.analysis.endings import scenario_ending_errors

FLOW = """\
speakers user: human, a, b
max_turns CAP
when from user then a
when from a then b
when from b then terminate "done"
scenario "to the cap" {
  user: "hi"
  a: "x"
  b: "y"
  expect terminate "max_turns"
}
"""


def message(cap: int) -> str:
    return (
        'no run of the flow ends with "max_turns": every run ends by itself within '
        f"`max_turns {cap}` (a run that ends on turn {cap} keeps its own reason)"
    )


@pytest.mark.parametrize(
    "cap",
    [
        3,  # the only run terminates on turn 3, the last one the cap allows
        5,  # the only run terminates on turn 3, two turns before the cap
    ],
)
def test_the_message_is_true_on_the_cap_turn_and_before_it(cap: int) -> None:
    flow = flowc.compile_flow(FLOW.replace("CAP", str(cap)))
    (d,) = scenario_ending_errors(flow)
    assert d.code.id == "E111"
    assert d.message == message(cap)
    assert d.notes == ('its runs end with "done"',)


def test_flowc_check_prints_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "capped.flow").write_text(FLOW.replace("CAP", "3"), encoding="utf-8")
    assert main(["check", "capped.flow"]) == 1
    out = capsys.readouterr()
    assert f"error[E111]: {message(3)}" in out.out + out.err
    assert "before `max_turns" not in out.out + out.err
