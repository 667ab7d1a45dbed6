"""Scenarios are part of the flow: what `flowc test` would refuse on every run is an error
in `compile` and `check` too (same code, same place), and an empty scenario fails."""

from __future__ import annotations

import json
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


@pytest.mark.parametrize(
    ("line", "code", "where", "text"),
    [
        ("reviewer calls aprove", "E111", "4:18", "reviewer has no tool `aprove`"),
        (
            "reviewer calls decide",
            "E111",
            "4:3",
            "reviewer's tool `decide` does one of several things",
        ),
        (
            'reviewer calls decide finishes "accepted"',
            "E111",
            "4:3",
            "reviewer's tool `decide` is "
            'declared to do hands off to user | finishes "rejected", not finishes "accepted"',
        ),
        ('expect terminate "aproved"', "E111", "4:20", 'the flow never ends with "aproved"'),
        (
            'reviewer finishes "accepted"',
            "E111",
            "4:3",
            "`reviewer` is a model speaker and none "
            'of its tools finishes "accepted" (declared: approve: sets done = true; decide: hands off '
            'to user | finishes "rejected")',
        ),
        (
            "reviewer sets done = false",
            "E111",
            "4:3",
            "`reviewer` is a model speaker and none of its tools sets done = false",
        ),
        (
            "reviewer clears done",
            "E111",
            "4:3",
            "`reviewer` is a model speaker and none of its tools clears done",
        ),
        ('ghost: "boo"', "E101", "4:3", "the scenario names `ghost`"),
        ("expect next ghost", "E101", "4:15", "the scenario names `ghost`"),
    ],
)
def test_compile_check_and_test_refuse_the_same_line(
    tmp_path: Path, line: str, code: str, where: str, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
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


def test_an_empty_scenario_is_reported_not_passed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "f.flow"
    path.write_text(FLOW + 'scenario "placeholder" {\n}\n')
    assert main(["check", str(path), "--format", "concise"]) == 0
    assert f'{path}:11:10: W214 scenario "placeholder" is empty' in capsys.readouterr().out
    assert main(["test", str(path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  placeholder" in out and "the scenario is empty" in out
    assert "1 scenario: 0 passed, 1 failed" in out
    compiled = flowc.compile_flow(FLOW + 'scenario "placeholder" {\n}\n')
    [result] = [run_scenario(RunTarget.from_compiled(compiled), sc) for sc in compiled.scenarios]
    assert not result.passed


def test_reasons_a_scenario_may_expect(tmp_path: Path) -> None:
    """Every reason some part of the flow writes is allowed (a model speaker's bare
    `finishes` is one of its tools' reasons); a custom target that may end the run allows any."""
    ok = (
        FLOW
        + """scenario "ends" {
  user: "hi"
  reviewer finishes "rejected"
  expect terminate "rejected"
}
scenario "cap" {
  user: "a"
  expect terminate "max_turns"
}
"""
    )
    assert flowc.compile_flow(ok).scenarios
    custom = (
        "speaker user: human\nspeaker bot\ntarget pick() -> bot | terminate\n"
        "when from user then pick()\n"
        'scenario "s" {\n  user: "hi"\n  expect terminate "anything"\n}\n'
    )
    assert flowc.compile_flow(custom).scenarios


def test_a_turn_the_runtime_refuses_names_its_line_once() -> None:
    # the scenario is compiled against one flow and run on another that lacks the tool, so
    # the script error comes from the runtime (it said "turn 2 (line 9): line 9: ...")
    with_tool = flowc.compile_flow(
        "speaker user: human\nspeaker bot { tool t }\nwhen from user then bot\n"
        'scenario "s" {\n  user: "hi"\n  bot calls t: "x"\n}\n'
    )
    without = flowc.compile_flow("speaker user: human\nspeaker bot\nwhen from user then bot\n")
    result = run_scenario(RunTarget.from_compiled(without), with_tool.scenarios[0])
    assert not result.passed
    assert result.failure == "turn 2 (line 6): bot has no tool `t` (it declares none)"


# ── an empty close reason: one rule for compile, check, test and run ───────────────────
#: AG2 1.2.1 never records an empty close reason: its workflow fold reads a tool's
#: ``Finish`` as ``routing.get("reason") or "finished"`` and closes a graph's ``terminate``
#: with ``pending_close_reason or "workflow_terminated"`` (the same runs on the real AG2
#: hub: tests/runtime/test_ag2_fidelity.py)
EMPTY = """\
speaker user: human
speaker bot {
  tool close finishes ""
  tool both hands off to user, finishes "" | hands off to user
  tool mark sets k = 1
}
max_turns 6
when from user then bot
when context.k == 1 then terminate ""
"""


@pytest.mark.parametrize(
    ("turn", "reason"),
    [
        ('bot calls close: "bye"', "finished"),
        ('bot finishes ""', "finished"),
        ('bot calls both hands off to user, finishes "": "bye"', "finished"),
        ('bot sets k = 1: "set"', "workflow_terminated"),
    ],
)
def test_an_empty_reason_closes_as_ag2_closes_it(
    tmp_path: Path, turn: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`expect terminate ""` is refused where it is written, with the reason the run will
    have; that reason is accepted by compile and check and passes in `flowc test`."""
    path = tmp_path / "f.flow"
    path.write_text(EMPTY + f'scenario "s" {{\n  user: "hi"\n  {turn}\n  expect terminate ""\n}}\n')
    assert main(["check", str(path), "--format", "concise"]) == 1
    out = capsys.readouterr().out
    at = f"{path}:{EMPTY.count(chr(10)) + 4}:20"
    assert f'{at}: E111 the flow never ends with "": its runs close with ' in out
    assert main(["check", str(path)]) == 1
    help_line = next(x for x in capsys.readouterr().out.splitlines() if "help:" in x)
    assert (
        'a tool\'s `finishes ""` closes the run as "finished", `terminate ""` as '
        '"workflow_terminated"' in help_line
    )
    assert help_line.endswith('did you mean "finished" or "workflow_terminated"?')
    assert main(["compile", str(path)]) == 1
    assert "error[E111]" in capsys.readouterr().err
    path.write_text(path.read_text().replace('expect terminate ""', f'expect terminate "{reason}"'))
    assert main(["check", str(path), "--format", "concise"]) == 0
    capsys.readouterr()
    assert main(["test", str(path)]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out


def test_an_empty_reason_is_refused_even_where_a_custom_target_may_end_the_run() -> None:
    """A custom target may close a run with any reason, but an empty one is recorded as
    "workflow_terminated": `expect terminate ""` can never hold."""
    custom = (
        "speaker user: human\nspeaker bot\ntarget pick() -> bot | terminate\n"
        "when from user then pick()\n"
        'scenario "s" {\n  user: "hi"\n  expect terminate ""\n}\n'
    )
    with pytest.raises(flowc.FlowError) as refused:
        flowc.compile_flow(custom)
    [diag] = refused.value.diagnostics
    assert (diag.code.id, diag.span and diag.span.line) == ("E111", 7)
    assert diag.message == 'the flow never ends with "": a run never closes with an empty reason'
    assert diag.help is not None and "did you mean" not in diag.help


def test_a_script_handoff_takes_the_alternative_that_only_hands_off() -> None:
    """`both` hands off to user and finishes "" (the finish wins, as in AG2), or only hands
    off: a script's `handoff: user` is the second, its `finish: ""` the first — whichever
    order they are declared in."""
    for text in (
        EMPTY,
        EMPTY.replace(
            'hands off to user, finishes "" | hands off to user',
            'hands off to user | hands off to user, finishes ""',
        ),
    ):
        target = RunTarget.from_compiled(flowc.compile_flow(text))
        handoff = run_script_sync(
            target,
            parse_script(
                {"kickoff": "hi", "script": {"bot": [{"tool": "both", "handoff": "user"}]}}
            ),
        )
        assert (handoff.close_reason, handoff.stalled_on) == (None, "user")
        finish = run_script_sync(
            target,
            parse_script({"kickoff": "hi", "script": {"bot": [{"tool": "both", "finish": ""}]}}),
        )
        assert finish.close_reason == "finished"


def test_a_script_handoff_with_writes_takes_the_alternative_that_makes_them() -> None:
    """`pass` hands off to user, with or without writing k: the script's `set` says which
    (a script without `set` took the first declared, which writes k, so the rule on k
    fired where the script wrote no k)."""
    flow = flowc.compile_flow(
        "speaker user: human\nspeaker bot { tool pass sets k = 1, hands off to user | "
        "hands off to user }\nmax_turns 6\nwhen context.k == 1 then terminate "
        '"k"\nwhen from user then bot\n'
    )
    target = RunTarget.from_compiled(flow)
    call = {"tool": "pass", "handoff": "user", "set": {"k": 1}}
    run = run_script_sync(
        target, parse_script({"kickoff": "hi", "script": {"bot": [call], "user": ["back"]}})
    )
    assert (run.close_reason, len(run.turns)) == ("k", 3)
    run = run_script_sync(
        target,
        parse_script(
            {
                "kickoff": "hi",
                "script": {"bot": [{"tool": "pass", "handoff": "user"}], "user": ["back"]},
            }
        ),
    )
    assert (run.close_reason, run.stalled_on) == (None, "bot")


def test_a_script_s_writes_take_the_alternative_that_makes_most_of_them() -> None:
    """`clears done` and `sets done = null, clears done`: a script that sets and deletes
    `done` takes the second (it was refused as not saying which)."""
    flow = flowc.compile_flow(
        "speaker user: human\nspeaker a {\n  tool approve clears done"
        " | sets done = null, clears done\n}\nwhen from user then a\n"
        'when from a then terminate "ok"\n'
    )
    call = {"tool": "approve", "set": {"done": None}, "delete": ["done"], "say": "ok"}
    run = run_script_sync(
        RunTarget.from_compiled(flow), parse_script({"kickoff": "hi", "script": {"a": [call]}})
    )
    assert run.error is None and run.close_reason == "ok"
    assert run.context_vars == {"done": None}


BARE = """\
speaker user: human
speaker a
speaker b
max_turns 6
when from user then a
when from a then user
when from b then terminate "b spoke"
"""
BARE_SCENARIO = (
    'scenario "bare hand-off" { user: "hi"   a hands off to b: "go"   b: "here"   '
    'expect terminate "b spoke" }\n'
)


def test_a_model_speakers_bare_hand_off_is_refused_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """check's analysis reads a model speaker as acting only through its declared tools (as
    AG2 does: a hand-off is a tool's return), so `b` can never speak; a scenario or a run
    script where `a` hands off with no tool would contradict it, and is refused instead."""
    path = tmp_path / "f.flow"
    path.write_text(BARE + BARE_SCENARIO)
    text = "`a` is a model speaker and none of its tools hands off to b (it declares none)"
    assert main(["compile", str(path)]) == 1
    assert f"error[E111]: {text}" in capsys.readouterr().err
    assert main(["check", str(path), "--format", "concise"]) == 1
    assert f"{path}:8:41: E111 {text}" in capsys.readouterr().out
    assert main(["test", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "ERROR the file does not compile" in out and f"error[E111]: {text}" in err
    # without the scenario, check says what a run can do: b never speaks
    path.write_text(BARE)
    assert main(["check", str(path), "--format", "concise"]) == 0
    assert "W201" in capsys.readouterr().out
    script = tmp_path / "s.json"
    script.write_text(
        '{"kickoff": "hi", "script": {"a": [{"say": "go", "handoff": "b"}], "b": ["here"]}}'
    )
    assert main(["run", "--script", str(script), str(path)]) == 1
    assert f"script.a[0]: {text}" in capsys.readouterr().err
    with pytest.raises(ScriptError, match=r"script\.a\[0\]: `a` is a model speaker"):
        run_script_sync(
            RunTarget.from_compiled(flowc.compile_flow(BARE)),
            parse_script(json.loads(script.read_text())),
        )


def test_a_bare_turn_a_declared_tool_makes_still_runs(tmp_path: Path) -> None:
    """The same bare hand-off is a turn of `a` once a tool of `a` does exactly that."""
    flow = BARE.replace("speaker a\n", "speaker a { tool go hands off to b }\n")
    path = tmp_path / "f.flow"
    path.write_text(flow + BARE_SCENARIO)
    compiled = flowc.compile_flow(path.read_text())
    [result] = [run_scenario(RunTarget.from_compiled(compiled), sc) for sc in compiled.scenarios]
    assert result.passed, result
    script = parse_script(
        {"kickoff": "hi", "script": {"a": [{"say": "go", "handoff": "b"}], "b": ["here"]}}
    )
    run = run_script_sync(RunTarget.from_compiled(flowc.compile_flow(flow)), script)
    assert run.close_reason == "b spoke"
