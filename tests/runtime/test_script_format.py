"""The script format's object forms of `handoff` and `finish` (AG2's `Handoff` /
`Finish`), and the reason a handoff records."""

from __future__ import annotations

from typing import Any

import pytest

import flowc
from flowc.runtime.replies import Finish, Handoff
from flowc.runtime.script import ScriptError, parse_script
from flowc.runtime.script_run import run_script_sync
from flowc.runtime.scripted_replies import reply_for
from flowc.runtime.target import RunTarget

FLOW = flowc.compile_flow("""
speaker user: human
speaker triage {
  tool escalate hands off to security
  tool close finishes "resolved"
  tool route hands off to security | finishes "routed"
  tool done finishes
}
speaker security
start user
max_turns 8
when from user then triage
when from triage then user
when from security then user
""")
TARGET = RunTarget.from_compiled(FLOW)


def result(turn: Any) -> Any:
    script = parse_script({"script": {"triage": [turn]}})
    return reply_for(TARGET, "triage", script.turns["triage"][0]).tool_calls[0].result


@pytest.mark.parametrize(
    ("turn", "expected"),
    [
        (
            {"tool": "escalate", "handoff": {"target": "security", "reason": "review"}},
            Handoff("security", "review"),
        ),
        ({"tool": "escalate", "handoff": {"target": "security"}}, Handoff("security", "")),
        # the call's `reason` argument is not the handoff's reason
        ({"tool": "escalate", "args": {"reason": "hacked"}}, Handoff("security", "")),
        (
            {"tool": "escalate", "args": {"reason": "hacked"}, "handoff": "security"},
            Handoff("security", ""),
        ),
        (
            {"tool": "close", "finish": {"reason": "resolved", "summary": "locked"}},
            Finish("locked", "resolved"),
        ),
        (
            {"tool": "close", "finish": "resolved", "summary": "locked"},
            Finish("locked", "resolved"),
        ),
        ({"tool": "close"}, Finish("", "resolved")),
        ({"finish": {}}, Finish("", "finished")),
        ({"finish": {"summary": "bye"}}, Finish("bye", "finished")),
        ({"finish": True}, Finish("", "finished")),
        (
            {"tool": "route", "handoff": {"target": "security", "reason": "r"}},
            Handoff("security", "r"),
        ),
        ({"tool": "route", "finish": {"reason": "routed", "summary": "s"}}, Finish("s", "routed")),
    ],
)
def test_object_and_short_forms(turn: dict[str, Any], expected: Any) -> None:
    assert result(turn) == expected


def test_a_bare_step_is_a_call_of_the_one_tool_that_does_it() -> None:
    """A model speaker's bare ``handoff`` / ``finish`` is a call of the one tool whose
    alternative does exactly that (the routing's ``when tool`` and the properties see
    that tool); when two tools do it (``escalate`` and ``route`` both hand off to
    security), the turn is refused as ambiguous."""
    flow = flowc.compile_flow(
        "speaker user: human\nspeaker triage {\n  tool escalate hands off to security\n"
        '  tool close finishes "resolved"\n}\nspeaker security\nstart user\n'
        "when from user then triage\nwhen from triage then user\n"
        "when from security then user\n"
    )
    target = RunTarget.from_compiled(flow)
    turns = [{"handoff": {"target": "security", "reason": "why"}}, {"finish": "resolved"}]
    script = parse_script({"script": {"triage": turns}})
    calls = [reply_for(target, "triage", t).tool_calls[0] for t in script.turns["triage"]]
    assert [(c.name, c.result) for c in calls] == [
        ("escalate", Handoff("security", "why")),
        ("close", Finish("", "resolved")),
    ]
    with pytest.raises(ScriptError) as err:
        result({"handoff": {"target": "security", "reason": "why"}})
    assert str(err.value) == (
        "script.triage[0]: `triage`'s step hands off to security is ambiguous: its tools "
        "`escalate` and `route` both do that, and the step is a call of one of them; give "
        "the call its `tool` (`tool: escalate` or `tool: route`)"
    )


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        (
            {"handoff": {"reason": "x"}},
            "script.triage[0].handoff: a handoff object needs `target` (a speaker name)",
        ),
        (
            {"handoff": {"target": "security", "why": "x"}},
            "script.triage[0].handoff: unknown key(s) why (an object here has `target` and `reason`)",
        ),
        (
            {"handoff": {"target": "security", "reason": 3}},
            "script.triage[0].handoff.reason: expected a string",
        ),
        ({"handoff": 5}, "script.triage[0].handoff: expected a speaker name or {target, reason}"),
        (
            {"finish": {"reason": "r", "summary": "s"}, "summary": "t"},
            "script.triage[0]: give the summary once, inside `finish` or beside it",
        ),
        (
            {"finish": {"reasons": "r"}},
            "script.triage[0].finish: unknown key(s) reasons (an object here has `reason` and `summary`)",
        ),
        ({"finish": {"summary": ["x"]}}, "script.triage[0].finish.summary: expected a string"),
        (
            {"finish": 3},
            "script.triage[0].finish: expected a reason (a string), true, or {reason, summary}",
        ),
        (
            {"finish": {"reason": "r"}, "handoff": {"target": "security"}},
            "script.triage[0]: a call either hands off or finishes, not both",
        ),
    ],
)
def test_malformed_object_forms_name_the_place(turn: dict[str, Any], message: str) -> None:
    with pytest.raises(ScriptError) as err:
        parse_script({"script": {"triage": [turn]}})
    assert str(err.value) == message


def test_a_run_records_the_handoffs_reason_and_the_finishs_summary() -> None:
    script = parse_script(
        {
            "kickoff": "help",
            "script": {
                "triage": [
                    {
                        "tool": "escalate",
                        "args": {"reason": "hacked"},
                        "handoff": {"target": "security", "reason": "review"},
                        "say": "On it.",
                    },
                    {"tool": "close", "finish": {"reason": "resolved", "summary": "locked"}},
                ],
                "security": ["Locked."],
                "user": ["Thanks"],
            },
        }
    )
    out = run_script_sync(TARGET, script).to_json()
    routed = [t["routing"] for t in out["turns"] if t["routing"] and t["routing"]["kind"] != "text"]
    assert routed == [
        {"kind": "handoff", "tool": "escalate", "reason": "review", "target": "security"},
        {"kind": "finish", "tool": "close", "reason": "resolved", "summary": "locked"},
    ]
    assert out["close_reason"] == "resolved"


def test_plain_text_turns_are_built_without_the_frozen_init(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pickle
    import weakref

    import attrs

    from flowc.runtime.script import ScriptTurn

    built = ScriptTurn("hi", (), "script.a[1]")  # by its __init__
    inits: list[object] = []
    real_init = ScriptTurn.__init__
    monkeypatch.setattr(
        ScriptTurn, "__init__", lambda self, *a, **k: (inits.append(a), real_init(self, *a, **k))[1]
    )
    script = parse_script({"script": {"a": ["yo", "hi", {"say": "ok"}]}})
    assert len(inits) == 1  # only the object turn went through ScriptTurn.__init__
    turn = script.turns["a"][1]
    # equal to, and as frozen as, the one __init__ builds
    assert type(turn) is ScriptTurn and turn == built and hash(turn) == hash(built)
    assert repr(turn) == "ScriptTurn(say='hi', calls=(), where='script.a[1]')"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        turn.say = "changed"  # type: ignore[misc]
    assert attrs.evolve(turn, say="x") == ScriptTurn("x", (), "script.a[1]")
    assert pickle.loads(pickle.dumps(turn)) == built and weakref.ref(turn)() is turn
