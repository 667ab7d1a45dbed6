"""A model speaker's bare step (a scenario's `bot sets answered = true`, a script's `set`,
`handoff`, `finish` without `tool`) is a call of the one declared tool whose alternative
does exactly that, everywhere: the routing (`when tool X`), the property monitors, the
transcript and `--json`, and `flowc log --scenario-upto` (which writes it back as the
call). When two of the speaker's tools each do it, the step is refused as ambiguous at
its scenario line or script turn.

Before, `flowc test` counted the bare step as the tool for the properties but not for
the routing, and `flowc run` as neither (`calls: set_context()`), so `check` proved a
property that `run` then reported violated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main

ANSWER = """speaker customer: human
speaker bot {
  tool answer sets answered = true
}
start customer
max_turns 4
when tool answer then terminate "by_tool"
when from customer then bot
otherwise customer
property p: context.answered == true only after tool answer
"""

DECIDE = """speaker user: human
speaker triage {
  tool decide hands off to billing | tech | finishes "done"
  tool note sets seen = true | sets seen = false, sets other = 1
}
speakers billing, tech
start user
max_turns 6
when from user then triage
when from billing, tech then terminate "handled"
when from triage then user
property via_decide: from tech only after tool decide
"""

#: a second tool that hands off to tech too: a bare hand-off to tech names neither
TWO = DECIDE.replace("  tool note", "  tool route hands off to tech\n  tool note")


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_scenario_bare_set_is_the_tools_call_for_routing_and_properties(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = 'scenario "bare set" {\n  customer: "x"\n  bot sets answered = true: "y"\n'
    flow = write(
        tmp_path,
        "tr.flow",
        ANSWER
        + "property no_answer: never tool answer\n"
        + scenario
        + '  expect terminate "by_tool"\n}\n',
    )
    assert main(["test", flow]) == 1
    out = capsys.readouterr().out
    # the routing took the call (the run ended "by_tool"), and so did the monitors
    assert "property no_answer (`never tool answer`) is violated" in out
    assert "graph chose customer" not in out
    flow = write(tmp_path, "tr2.flow", ANSWER + scenario + '  expect terminate "by_tool"\n}\n')
    assert main(["test", flow]) == 0


@pytest.mark.parametrize(
    ("flow", "turn", "tool", "close"),
    [
        (ANSWER, {"set": {"answered": True}, "say": "y"}, "answer", "by_tool"),
        (DECIDE, {"handoff": "tech", "say": "x"}, "decide", "handled"),
        (DECIDE, {"finish": "done"}, "decide", "done"),
        (DECIDE, {"set": {"seen": False, "other": 1}, "say": "n"}, "note", None),
    ],
)
def test_script_bare_step_is_the_tools_call_in_run_json_and_log(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flow: str,
    turn: dict[str, object],
    tool: str,
    close: str | None,
) -> None:
    speaker = "bot" if flow is ANSWER else "triage"
    tech = {} if flow is ANSWER else {"tech": ["ok"]}
    path = write(tmp_path, "f.flow", flow)
    script = write(
        tmp_path,
        "s.json",
        json.dumps({"kickoff": "x", "script": {speaker: [turn], **tech}}),
    )
    db = str(tmp_path / "runs.db")
    code = main(["run", path, "--script", script, "--json", "--db", db])
    said = capsys.readouterr()
    assert said.err == ""
    out = json.loads(said.out)
    assert code == (0 if close else 1)  # no property broken (exit 3), as check proves
    assert out["close_reason"] == close
    assert "property_violations" not in out
    assert [c["name"] for c in out["turns"][1]["tool_calls"]] == [tool]
    assert main(["log", "last", "--db", db, "--scenario-upto", "2"]) == 0
    block = capsys.readouterr().out
    assert f"{speaker} calls {tool}" in block
    # the block runs as the run ran
    assert main(["test", write(tmp_path, "g.flow", flow + block)]) == 0


def test_run_transcript_shows_the_tool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "f.flow", ANSWER)
    script = write(
        tmp_path,
        "s.json",
        json.dumps({"kickoff": "x", "script": {"bot": [{"set": {"answered": True}, "say": "y"}]}}),
    )
    assert main(["run", path, "--script", script]) == 0
    out = capsys.readouterr().out
    assert "calls: answer()" in out
    assert "set_context" not in out
    assert 'terminate "by_tool"' in out


def test_two_tools_doing_the_bare_step_are_refused_as_ambiguous(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = write(
        tmp_path,
        "two.flow",
        TWO + 'scenario "s" {\n  user: "hi"\n  triage hands off to tech: "x"\n}\n',
    )
    assert main(["check", flow]) == 1
    out = capsys.readouterr().out
    assert (
        "error[E111]: `triage`'s step hands off to tech is ambiguous: its tools `decide` and "
        "`route` both do that, and the step is a call of one of them; write `triage calls "
        "decide hands off to tech` or `triage calls route`"
    ) in out
    assert f"{flow}:16:3" in out
    assert "help" not in out  # the message says what to write: no "declare it" help
    script = write(
        tmp_path,
        "s.json",
        json.dumps({"kickoff": "x", "script": {"triage": [{"handoff": "tech"}]}}),
    )
    assert main(["run", write(tmp_path, "two2.flow", TWO), "--script", script]) == 1
    err = capsys.readouterr().err
    assert (
        "script.triage[0]: `triage`'s step hands off to tech is ambiguous: its tools "
        "`decide` and `route` both do that, and the step is a call of one of them; give the call "
        "its `tool` (`tool: decide` or `tool: route`)"
    ) in err


#: a model speaker starts: its kickoff is posted as a plain message (its model never runs)
KICKOFF = """speaker user: human
speaker bot {
  tool lock sets route = "done"
}
start bot
max_turns 6
when tool lock then terminate "by_tool"
when from bot then user
when from user then bot
property p: tool lock only after from user
"""


@pytest.mark.parametrize("step", ['bot sets route = "done": "hi"', 'bot calls lock: "hi"'])
def test_a_call_or_bare_step_on_a_model_speakers_kickoff_is_e111(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], step: str
) -> None:
    # check proves p on the kickoff as a plain message; a call there would break it
    flow = write(tmp_path, "k.flow", KICKOFF + f'scenario "s" {{\n  {step}\n}}\n')
    assert main(["check", flow]) == 1
    out = capsys.readouterr().out
    assert (
        "error[E111]: the run's first turn, by `bot`, is posted as a plain message, as AG2 "
        "does (its model never runs for it): write text only"
    ) in out
    assert f"{flow}:12:3" in out
    # text first, then the call: the scenario is fine
    ok = KICKOFF + 'scenario "s" {\n  bot: "hi"\n  user: "u"\n  bot calls lock\n'
    assert main(["test", write(tmp_path, "ok.flow", ok + '  expect terminate "by_tool"\n}\n')]) == 0


@pytest.mark.parametrize("turn", [{"set": {"route": "done"}, "say": "hi"}, {"tool": "lock"}])
def test_a_call_or_bare_step_on_a_model_speakers_kickoff_script_turn_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], turn: dict[str, object]
) -> None:
    path = write(tmp_path, "k.flow", KICKOFF)
    script = write(tmp_path, "s.json", json.dumps({"script": {"bot": [turn], "user": ["u"]}}))
    db = str(tmp_path / "runs.db")
    assert main(["run", path, "--script", script, "--db", db]) == 1
    said = capsys.readouterr()
    assert said.out == ""
    assert (
        "script.bot[0]: the run's first turn, by `bot`, is posted as a plain message, as AG2 "
        "does (its model never runs for it): write text only"
    ) in said.err
    assert not (tmp_path / "runs.db").exists() or main(["log", "last", "--db", db]) != 0
    capsys.readouterr()
    # after a kickoff text, the script's first turn of bot is a later one: it may call
    with_text = json.dumps({"kickoff": "x", "script": {"bot": [turn], "user": ["u"]}})
    assert main(["run", path, "--script", write(tmp_path, "t.json", with_text)]) == 0


def test_a_fork_past_turn_0_may_call_on_the_start_speakers_first_scripted_turn() -> None:
    # the fork's script holds the turns after turn N: bot's first one is no kickoff
    from flowc import compile_flow
    from flowc.runtime.fork import check_fork_script
    from flowc.runtime.script import ScriptError, parse_script
    from flowc.runtime.target import RunTarget

    target = RunTarget.from_compiled(compile_flow(KICKOFF))
    script = parse_script({"script": {"bot": [{"tool": "lock"}], "user": ["u"]}})
    check_fork_script(target, script, 2)
    with pytest.raises(ScriptError, match=r"script\.bot\[0\]: the run's first turn, by `bot`"):
        check_fork_script(target, script, 0)
