"""Scenarios are part of the flow: what `flowc test` would refuse on every run is an error
in `compile` and `check` too (same code, same place), and an empty scenario fails."""

from __future__ import annotations

from pathlib import Path

import pytest

import flowc
from flowc.cli import main
from flowc.runtime.scenarios import run_scenario
from flowc.runtime.script import ScriptError, parse_script
from flowc.runtime.script_run import run_script_sync
from flowc.runtime.target import RunTarget

FLOW = """\
speaker user: human
speaker reviewer {
  tool approve sets done = true
  tool decide hands off to user | finishes "rejected"
}
start user
max_turns 4
when context.done == true then terminate "approved"
when from user then reviewer
when from reviewer then user
"""


@pytest.mark.parametrize(("line", "code", "where", "text"), [
    ('reviewer calls aprove', "E111", "4:18", "reviewer has no tool `aprove`"),
    ('reviewer calls decide', "E111", "4:3", "reviewer's tool `decide` does one of several things"),
    ('reviewer calls decide finishes "accepted"', "E111", "4:3", "reviewer's tool `decide` is "
     'declared to do hands off to user | finishes "rejected", not finishes "accepted"'),
    ('expect terminate "aproved"', "E111", "4:20", 'the flow never ends with "aproved"'),
    ('ghost: "boo"', "E101", "4:3", "the scenario names `ghost`"),
    ('expect next ghost', "E101", "4:15", "the scenario names `ghost`"),
])
def test_compile_check_and_test_refuse_the_same_line(
        tmp_path: Path, line: str, code: str, where: str, text: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f.flow"
    path.write_text(FLOW + 'scenario "s" {\n  user: "hi"\n  ' + line + "\n}\n")
    lineno, col = where.split(":")
    at = f"{path}:{int(lineno) + FLOW.count(chr(10)) - 1}:{col}"
    assert main(["compile", str(path)]) == 1
    assert f"error[{code}]: {text}" in capsys.readouterr().err
    assert main(["check", str(path), "--format", "concise"]) == 1
    assert f"{at}: {code} {text}" in capsys.readouterr().out
    assert main(["test", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "ERROR the file does not compile" in out and f"error[{code}]: {text}" in err


def test_the_runtime_says_the_same_as_the_compiler() -> None:
    """A script (no scenario) gets the compiler's words for a call it cannot make."""
    with pytest.raises(flowc.FlowError) as compiled:
        flowc.compile_flow(FLOW + 'scenario "s" {\n  user: "hi"\n  reviewer calls decide\n}\n')
    [diag] = compiled.value.diagnostics
    script = parse_script({"kickoff": "hi", "script": {"reviewer": [{"tool": "decide"}]}})
    with pytest.raises(ScriptError) as refused:
        run_script_sync(RunTarget.from_compiled(flowc.compile_flow(FLOW)), script)
    assert str(refused.value) == f"script.reviewer[0]: {diag.message}"


def test_an_empty_scenario_is_reported_not_passed(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f.flow"
    path.write_text(FLOW + 'scenario "placeholder" {\n}\n')
    assert main(["check", str(path), "--format", "concise"]) == 0
    assert f"{path}:11:10: W214 scenario \"placeholder\" is empty" in capsys.readouterr().out
    assert main(["test", str(path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  placeholder" in out and "the scenario is empty" in out
    assert "1 scenario: 0 passed, 1 failed" in out
    compiled = flowc.compile_flow(FLOW + 'scenario "placeholder" {\n}\n')
    [result] = [run_scenario(RunTarget.from_compiled(compiled), sc) for sc in compiled.scenarios]
    assert not result.passed


def test_reasons_a_scenario_may_expect(tmp_path: Path) -> None:
    """Every reason some part of the flow (or the scenario's own `finishes`) writes is allowed;
    a custom target that may end the run allows any."""
    ok = FLOW + """scenario "ends" {
  user: "hi"
  reviewer finishes "gave up"
  expect terminate "gave up"
}
scenario "cap" {
  user: "a"
  expect terminate "max_turns"
}
"""
    assert flowc.compile_flow(ok).scenarios
    custom = ("speaker user: human\nspeaker bot\ntarget pick() -> bot | terminate\n"
              "when from user then pick()\n"
              'scenario "s" {\n  user: "hi"\n  expect terminate "anything"\n}\n')
    assert flowc.compile_flow(custom).scenarios


def test_a_turn_the_runtime_refuses_names_its_line_once() -> None:
    # the scenario is compiled against one flow and run on another that lacks the tool, so
    # the script error comes from the runtime (it said "turn 2 (line 9): line 9: ...")
    with_tool = flowc.compile_flow(
        "speaker user: human\nspeaker bot { tool t }\nwhen from user then bot\n"
        'scenario "s" {\n  user: "hi"\n  bot calls t: "x"\n}\n')
    without = flowc.compile_flow("speaker user: human\nspeaker bot\nwhen from user then bot\n")
    result = run_scenario(RunTarget.from_compiled(without), with_tool.scenarios[0])
    assert not result.passed
    assert result.failure == "turn 2 (line 6): bot has no tool `t` (it declares none)"
