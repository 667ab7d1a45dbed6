"""W218-W222 and I304: where a run on AG2 1.2.1 goes differently from flowc's (the claims
are checked against the real AG2 in ``tests/runtime/test_ag2_fidelity.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.compiler.analysis import CheckOptions, check_source, findings_of
from flowc.compiler.analysis.ag2diff import inbox_failure
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import Diagnostic
from flowc.source import SourceFile
from tests.check.check_replay import replay_finding

AG2 = CheckOptions(target="ag2")


def found(text: str, options: CheckOptions = AG2, name: str = "f.flow") -> list[Diagnostic]:
    source = SourceFile(name, text)
    out = list(check_source(source, options))
    if not name.endswith(".json"):  # every run replays on the reference stepper
        compiled, _ = compile_source(source)
        assert compiled is not None
        system = system_of_flow(compiled)
        for finding in findings_of(system, AG2, name):
            replay_finding(system, finding)
    return out


def codes(text: str, options: CheckOptions = AG2) -> list[tuple[int, str]]:
    return [(d.span.line if d.span else 0, d.code.id) for d in found(text, options)]


HEAD = "speaker user: human\nspeaker bot {\n  tool think\n}\nstart user\n"


@pytest.mark.parametrize(
    "rule",
    [
        "when tool think then stay",
        "when from bot then bot",
        "when tool think then initiator",
    ],
)
def test_a_turn_routed_back_to_its_speaker_is_w217(rule: str) -> None:
    text = (
        HEAD
        + "initiator bot\nmax_turns 6\nwhen from user then bot\n"
        + rule
        + '\nwhen from bot then terminate "done"\n'
    )
    [d] = [d for d in found(text) if d.code.id == "W221"]
    assert d.span is not None and d.span.line == 9
    assert "gives the turn back to `bot`" in d.message
    assert "a run that shows it: user → bot" in d.notes[0] and d.notes[0].endswith("→ bot")
    assert "stops after turn 2" in d.notes[1] and "`stalled_on: bot`" in d.notes[1]


def test_a_handoff_to_its_own_speaker_is_w217_at_the_tool() -> None:
    text = (
        HEAD.replace("tool think", "tool again hands off to bot")
        + 'max_turns 6\nwhen from user then bot\nwhen from bot then terminate "done"\n'
    )
    [d] = [d for d in found(text) if d.code.id == "W221"]
    assert d.span is not None and d.span.line == 3  # `tool again hands off to bot`
    assert "`again` hands off to `bot` itself" in d.message


def test_a_default_and_a_custom_target_routing_back_are_w217() -> None:
    text = (
        "speaker user: human\nspeaker a\nspeaker b\ntarget pick() -> a | b\nstart user\n"
        "max_turns 6\nwhen from user then a\nwhen from a then pick()\notherwise stay\n"
    )
    got = found(text)
    lines = sorted(d.span.line for d in got if d.code.id == "W221" and d.span)
    assert lines == [8, 9]
    assert any("when `pick` resolves to `a`" in d.message for d in got)


def test_no_w217_when_the_turn_back_is_the_last_one_max_turns_allows() -> None:
    text = "speaker user: human\nspeaker bot\nstart user\nmax_turns 2\nwhen from user then bot\nwhen from bot then stay\n"
    assert "W221" not in {c for _, c in codes(text)}
    assert "W221" in {c for _, c in codes(text.replace("max_turns 2", "max_turns 3"))}


NESTED = """speaker user: human
speaker bot {
  tool escalate
}
speaker security
start user
max_turns 6
when tool escalate and from bot then security
when from user then bot
when from bot then terminate "answered"
when from security then terminate "secured"
"""


def test_a_nested_tool_condition_is_w218_with_ag2s_routing() -> None:
    [d] = [d for d in found(NESTED) if d.code.id == "W218"]
    assert d.span is not None and (d.span.line, d.span.column) == (8, 6)
    assert "inside `and` never sees a call" in d.message
    assert d.notes[0] == "a run that shows it: user → bot (escalate) → security"
    assert 'routes as a plain reply: → terminate "answered" (rule 3, line 10' in d.notes[1]
    # a rule of its own makes AG2 route on the tool too
    assert "W218" not in {c for _, c in codes(NESTED + "when tool escalate then user priority 9\n")}
    # nobody calls it: nothing differs
    assert "W218" not in {
        c for _, c in codes(NESTED.replace("  tool escalate\n", "  tool other\n"))
    }


def test_a_nested_tool_in_a_json_graph_is_w218_at_its_path() -> None:
    compiled, _ = compile_source(SourceFile("f.flow", NESTED))
    assert compiled is not None
    got = found(json.dumps(compiled.knobs), name="g.json")
    [d] = [d for d in got if d.code.id == "W218"]
    assert d.json_path == "graph.transitions[0].when.args.conditions[0]"


WRITES = (
    "speaker user: human\nspeaker reviewer {\n  tool approve sets approved = true\n"
    "  tool reject clears approved\n  tool note sets seen = 1\n}\nstart user\nmax_turns 10\n"
    'when context.approved == true then terminate "approved"\n'
    "when from user then reviewer\nwhen from reviewer then user\n"
)


def test_two_calls_that_write_a_key_differently_are_w222() -> None:
    [d] = [d for d in found(WRITES) if d.code.id == "W222"]
    assert d.span is not None and d.span.line == 2
    assert d.message.startswith(
        "`reviewer`'s calls write `approved` differently (`approve` sets it to true, `reject` "
        "clears it)"
    )
    assert d.notes == (
        "a run that shows it: user → reviewer, whose reply calls `approve`, then `reject`: "
        "on AG2 1.2.1 it may end with approved = true; flowc refuses it (under `--contracts "
        "warn` it ends with approved unset)",
    )
    # a key no rule reads is still the run's context: written two ways, it differs too
    unread = WRITES.replace('when context.approved == true then terminate "approved"\n', "")
    assert "W222" in {c for _, c in codes(unread)}
    # one tool whose alternatives write the key differently: one reply may call it twice
    one = WRITES.replace(
        "  tool approve sets approved = true\n  tool reject clears approved\n",
        "  tool decide sets approved = true | sets approved = false\n",
    )
    [d] = [d for d in found(one) if d.code.id == "W222"]
    assert "(two calls of `decide`: one sets it to true, the other sets it to false)" in d.message
    # values equal in Python but not in the run's context (`1` and `true`) differ too
    json_only = WRITES.replace("tool reject clears approved", "tool reject sets approved = 1")
    [d] = [d for d in found(json_only) if d.code.id == "W222"]
    assert "(`approve` sets it to true, `reject` sets it to 1)" in d.message


@pytest.mark.parametrize(
    "change",
    [
        # the same write twice: either order leaves the same value
        ("tool reject clears approved", "tool reject sets approved = true"),
        # different keys
        ("tool reject clears approved", "tool reject clears other"),
        # a human's writes are posted one after another, not run as tasks
        (
            "speaker reviewer {\n  tool approve sets approved = true\n  tool reject clears "
            "approved\n  tool note sets seen = 1\n}",
            "speaker reviewer: human {\n  sets approved, seen\n}",
        ),
        # no run reaches the speaker
        ("when from user then reviewer\n", "when from user then user\n"),
    ],
)
def test_calls_that_cannot_race_on_a_key_are_not_w222(change: tuple[str, str]) -> None:
    text = WRITES.replace(*change)
    assert text != WRITES
    assert "W222" not in {c for _, c in codes(text)}


def test_several_routing_calls_are_w219() -> None:
    text = (
        "speaker user: human\nspeaker triage {\n  tool escalate hands off to security\n"
        '  tool resolve finishes "resolved"\n}\nspeaker security\nstart user\nmax_turns 10\n'
        "when from user then triage\nwhen from triage then user\n"
        'when from security then terminate "secured"\n'
    )
    [d] = [d for d in found(text) if d.code.id == "W219"]
    assert d.span is not None and d.span.line == 2
    assert (
        "(it hands off: → security)" in d.notes[0]
        and '(it finishes: terminate "resolved")' in d.notes[0]
    )
    # one tool whose alternatives route differently: two calls of it can race too
    one = text.replace(
        '  tool escalate hands off to security\n  tool resolve finishes "resolved"\n',
        '  tool route hands off to security | finishes "resolved"\n',
    )
    assert "W219" in {c for _, c in codes(one)}
    # one routing call, and a tool that only writes context
    single = text.replace('tool resolve finishes "resolved"', "tool resolve sets resolved = true")
    assert "W219" not in {c for _, c in codes(single)}


LOOP = """speaker user: human
speaker writer
speaker critic
start user
when from user then writer
when from writer then critic
when from critic then writer
"""


def test_a_run_past_the_inbox_limit_is_w220() -> None:
    [d] = [d for d in found(LOOP) if d.code.id == "W220"]
    assert "stops at turn 1,002" in d.message and "no `max_turns`" in d.message
    assert "`user` has 1,000 unanswered posts before turn 1,002" in d.notes[1]
    assert d.span is not None and d.span.line == 6  # the rule of the loop's first turn
    capped = LOOP.replace("start user\n", "start user\nmax_turns 5000\n")
    [d] = [d for d in found(capped) if d.code.id == "W220"]
    assert d.span is not None and d.span.line == 5  # at `max_turns`
    for safe in (
        LOOP.replace("start user\n", "start user\nmax_turns 1001\n"),
        "speaker user: human\nspeaker bot\nstart user\nwhen from user then bot\n"
        "when from bot then user\n",
    ):
        assert "W220" not in {c for _, c in codes(safe)}


def test_a_three_party_round_robin_stops_at_turn_2999() -> None:
    [d] = [
        d
        for d in found("speakers user: human, alice, bob\nround_robin user, alice, bob\n")
        if d.code.id == "W220"
    ]
    assert "stops at turn 2,999" in d.message


def test_inbox_failure_counts_as_ag2_does() -> None:
    # the kickoff, then a and b in turn: the user's count grows by one a post
    assert inbox_failure(["user", "a", "b"], ["user", "a", "b"], 1, limit=1000) == (1002, "user")
    assert (
        inbox_failure(["user", "a", "b"], ["user", "a", "b"], 1, limit=1000, max_turns=1001) is None
    )
    # a round robin: everyone answers one post in three
    assert inbox_failure(["u", "a", "b"], ["u", "a", "b"], 0, limit=1000) == (2999, "b")
    # two who alternate never fill up; a run that ends does not either
    assert inbox_failure(["a", "b"], ["a", "b"], 0, limit=3) is None
    assert inbox_failure(["a", "b", "c"], ["a", "b", "c"], None, limit=1) == (2, "c")


STAY = """speaker user: human
speaker bot {
  tool think
}
start user
max_turns 6
when from user then bot
when tool think then stay
when from bot then terminate "done"
"""


def test_without_target_ag2_a_file_gets_one_i304_listing_the_places() -> None:
    text = (
        STAY.replace("  tool think\n", "  tool think\n  tool ask\n")
        + "when tool ask and from bot then user priority -1\n"
    )
    got = found(text, CheckOptions())
    assert [d.code.id for d in got] == ["I304"]
    note = got[0]
    assert note.span is not None and note.span.line == 2  # the first place
    assert "(3 places;" in note.message
    assert note.notes == (
        "line 2: W219: a speaker can route a reply in several ways, and AG2 1.2.1 may route on "
        "another of its calls",
        "line 9: W221: a turn is routed back to the speaker who just spoke, where AG2 1.2.1 stalls",
        "line 11: W218: a `tool` condition inside `and` / `not` / `or`, which AG2 1.2.1 never routes on",
    )
    assert [c for _, c in codes(text)] == ["W219", "W221", "E112", "W218"]


def test_an_ignore_comment_holds_with_and_without_the_target() -> None:
    ignored = STAY.replace("then stay", "then stay  # flowc: ignore[W221]")
    for options in (CheckOptions(), AG2):
        assert codes(ignored, options) == []
    noted = STAY.replace("then stay", "then stay  # flowc: ignore[I304]")
    assert codes(noted, CheckOptions()) == []
    # with the target the warning shows; the comment for the note is not "unused" (X001)
    assert codes(noted, AG2) == [(8, "W221")]
    # the note names the places left: one silenced is not listed
    two = STAY.replace("then stay", "then stay  # flowc: ignore[W221]").replace(
        "  tool think\n", "  tool think\n  tool again hands off to bot\n"
    )
    [note] = found(two, CheckOptions())
    assert "(2 places;" in note.message and [n[:13] for n in note.notes] == [
        "line 2: W219:",
        "line 4: W221:",
    ]


def test_check_cli_target_ag2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "stay.flow"
    path.write_text(STAY)
    assert main(["check", str(path), "--target", "ag2", "--format", "concise"]) == 0
    out = capsys.readouterr().out
    assert f"{path}:8:1: W221 on AG2 1.2.1 the run stalls here" in out
    assert main(["check", str(path), "--target", "ag2", "--strict"]) == 1
    capsys.readouterr()
    assert main(["check", str(path), "--format", "json"]) == 0
    [item] = json.loads(capsys.readouterr().out)
    assert item["code"] == "I304" and item["severity"] == "info"
