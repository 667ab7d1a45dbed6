"""Scripted runs and scenarios: the script format, refusals before the run, divergences."""

from __future__ import annotations

from typing import Any

import pytest

import flowc
from flowc.compiler.serde import structure_graph
from flowc.dsl import nodes as n
from flowc.runtime.scenarios import run_scenario
from flowc.runtime.script import ScriptError, parse_script
from flowc.runtime.script_run import run_script_sync
from flowc.runtime.target import RunTarget
from tests.runtime.graphs import frm, graph, rule, term, to, tool

TRIAGE = """
flow triage "triage"
speaker user: human { sets draft }
speaker triage {
  tool escalate
  tool lookup
  tool resolve finishes "resolved"
  tool transfer hands off to security
  tool decide hands off to security | finishes "done"
  tool tag sets category = "login", clears draft
}
speaker security
start user
max_turns 10
when tool escalate then security priority -1
when context.category == "login" then security
when from user then triage
when from security then user
when from triage then user
"""

FEEDBACK = """
speaker user: human
speaker drafter
speaker reviewer { tool approve sets done = true }
start user
max_turns 12
context done = false
when context.done == true then terminate "approved"
when from user then drafter
when from drafter then reviewer
when from reviewer then drafter
"""


def target(src: str) -> RunTarget:
    return RunTarget.from_compiled(flowc.compile_flow(src), source_text=src)


def run(src: str, script: dict[str, Any]) -> dict[str, Any]:
    return run_script_sync(target(src), parse_script(script)).to_json()


def test_the_design_brief_example_runs() -> None:
    out = run(
        TRIAGE,
        {
            "kickoff": "Someone logged into my account from abroad.",
            "script": {
                "triage": [
                    {
                        "tool": "escalate",
                        "args": {"reason": "suspicious login"},
                        "say": "Escalating.",
                    },
                    {"tool": "resolve", "say": "Sorted."},
                ],
                "security": ["Account locked; reset link sent."],
                "user": ["Thanks, reset done."],
            },
        },
    )
    run_id = out.pop("run_id")
    assert run_id.startswith("wf-")
    # every turn is whole: its text and tool calls too (issue 10.2)
    assert [(t["number"], t["text"], t["tool_calls"]) for t in out["turns"]] == [
        (1, "Someone logged into my account from abroad.", []),
        (2, "Escalating.", [{"name": "escalate", "args": {"reason": "suspicious login"}}]),
        (3, "Account locked; reset link sent.", []),
        (4, "Thanks, reset done.", []),
        (5, "Sorted.", [{"name": "resolve", "args": {}}]),
    ]
    assert [t["next_speaker"] for t in out["turns"]] == [
        "triage",
        "security",
        "user",
        "triage",
        None,
    ]
    out["turns"] = [{k: t[k] for k in ("speaker", "kind", "routing")} for t in out["turns"]]
    assert out == {
        "turns": [
            {"speaker": "user", "kind": "text", "routing": None},
            {
                "speaker": "triage",
                "kind": "packet",
                "routing": {"kind": "handoff", "tool": "escalate", "reason": "suspicious login"},
            },
            {"speaker": "security", "kind": "packet", "routing": {"kind": "text"}},
            {"speaker": "user", "kind": "text", "routing": None},
            {
                "speaker": "triage",
                "kind": "packet",
                "routing": {
                    "kind": "finish",
                    "tool": "resolve",
                    "reason": "resolved",
                    "summary": "",
                },
            },
        ],
        "close_reason": "resolved",
        "context_vars": {},
        "turn_count": 5,
    }


def test_declared_effects_apply_and_handoff_tools_carry_their_target() -> None:
    out = run(
        TRIAGE,
        {
            "kickoff": "hi",
            "script": {
                "triage": [
                    {
                        "tools": [
                            {"tool": "lookup"},
                            {"tool": "transfer", "args": {"reason": "r"}},
                        ],
                        "say": "Passing on.",
                    },
                    {"tool": "tag", "say": "tagged"},
                ],
                "security": ["s"],
                "user": [{"say": "ok", "set": {"draft": 1}}],
            },
        },
    )
    # the handoff's own reason (none here), not the call's `reason` argument, as AG2
    assert out["turns"][1]["routing"] == {
        "kind": "handoff",
        "tool": "transfer",
        "reason": "",
        "target": "security",
    }
    assert [t["speaker"] for t in out["turns"]] == ["user", "triage", "security", "user", "triage"]
    # `tag` sets category (the context rule then picks security) and clears draft
    assert out["context_vars"] == {"category": "login"}
    assert out["stalled_on"] == "security"


def test_several_alternatives_need_a_choice() -> None:
    with pytest.raises(ScriptError, match="does one of several things"):
        run(TRIAGE, {"kickoff": "hi", "script": {"triage": [{"tool": "decide"}]}})
    out = run(
        TRIAGE, {"kickoff": "hi", "script": {"triage": [{"tool": "decide", "finish": "done"}]}}
    )
    assert out["close_reason"] == "done"


def test_a_script_naming_an_unknown_speaker_is_refused_before_the_run() -> None:
    with pytest.raises(ScriptError, match="`ghost` is not a speaker of this flow"):
        run(TRIAGE, {"kickoff": "hi", "script": {"ghost": ["boo"]}})


def test_an_undeclared_tool_is_refused_for_a_flow() -> None:
    with pytest.raises(ScriptError, match=r"triage has no tool `nuke` \(declared: decide, "):
        run(TRIAGE, {"kickoff": "hi", "script": {"triage": [{"tool": "nuke"}]}})


def test_a_human_cannot_call_tools() -> None:
    with pytest.raises(ScriptError, match="is a human"):
        run(TRIAGE, {"kickoff": "hi", "script": {"user": [{"tool": "x", "say": "y"}]}})


def test_bad_script_shapes() -> None:
    with pytest.raises(ScriptError, match="unknown key"):
        parse_script({"kickof": "x"})
    with pytest.raises(ScriptError, match=r"script.a\[0\]: a turn is a string or an object"):
        parse_script({"script": {"a": [3]}})
    with pytest.raises(ScriptError, match="not both"):
        parse_script({"script": {"a": [{"handoff": "b", "finish": "x"}]}})


def test_a_bare_graph_takes_any_tool_and_the_script_says_what_it_does() -> None:
    g = structure_graph(
        graph(
            "u",
            rule(frm("u"), to("a")),
            rule(tool("anything"), to("b")),
            rule(frm("b"), to("a")),
            default=term("end"),
            max_turns=8,
        )
    )
    t = RunTarget.from_graph(g)
    script = parse_script(
        {
            "kickoff": "go",
            "humans": ["u"],
            "participants": ["u", "a", "b"],
            "context_vars": {"k": 0},
            "script": {
                "a": [
                    {"tool": "anything", "set": {"k": 1}, "say": "1"},
                    {"tools": [{"tool": "x", "delete": "k"}, {"handoff": "u"}]},
                ],
                "b": ["2"],
                "u": [{"say": "bye", "set": {"k": 9}}],
            },
        }
    )
    out = run_script_sync(t, script).to_json()
    assert [x["speaker"] for x in out["turns"]] == ["u", "a", "b", "a", "u"]
    assert out["turns"][3]["routing"] == {
        "kind": "handoff",
        "tool": "handoff",
        "reason": "",
        "target": "u",
    }
    assert out["context_vars"] == {"k": 9} and out["stalled_on"] == "a"


def test_running_out_of_script_stalls_with_stalled_on() -> None:
    out = run(FEEDBACK, {"kickoff": "brief", "script": {"drafter": ["d1"], "reviewer": ["r1"]}})
    assert out["close_reason"] is None and out["stalled_on"] == "drafter"
    assert out["turn_count"] == 3


def test_a_silent_turn_stalls() -> None:
    out = run(FEEDBACK, {"kickoff": "brief", "script": {"drafter": [""]}})
    assert out["stalled_on"] == "drafter" and out["turn_count"] == 1


# ── scenarios ─────────────────────────────────────────────────────────────────


def scenarios(src: str) -> list[tuple[bool, str | None]]:
    flow = flowc.compile_flow(src)
    t = RunTarget.from_compiled(flow, source_text=src)
    return [(r.passed, r.failure) for r in (run_scenario(t, sc) for sc in flow.scenarios)]


def test_a_passing_scenario() -> None:
    src = (
        FEEDBACK
        + """
scenario "approve" {
  user: "brief"
  expect next drafter
  drafter: "d1"
  reviewer: "r1"
  drafter: "d2"
  reviewer sets done = true: "ok"
  expect terminate "approved"
  expect context.done == true
  expect turns 5
}
"""
    )
    assert scenarios(src) == [(True, None)]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'user: "b"\n drafter: "d"\n drafter: "again"',
            "turn 3 (line {l}): expected drafter, the graph chose reviewer "
            "(rule 3, line 10: when from drafter then reviewer)",
        ),
        (
            'user: "b"\n expect next reviewer',
            "line {l}: expected reviewer next, the graph chose drafter "
            "(rule 2, line 9: when from user then drafter)",
        ),
        (
            'user: "b"\n expect terminate "approved"',
            'line {l}: expected the run to end with "approved", but the graph chose drafter '
            "(rule 2, line 9: when from user then drafter)",
        ),
        (
            'user: "b"\n drafter: "d"\n reviewer sets done = true: "ok"\n expect terminate "max_turns"',
            'line {l}: expected the run to end with "max_turns", it ended with "approved"',
        ),
        (
            'user: "b"\n expect context.done == true',
            "line {l}: expected context.done == true, it is false",
        ),
        ('user: "b"\n expect turns 2', "line {l}: expected 2 turns, the run has 1"),
        (
            'user: "b"\n drafter: "d"\n reviewer sets done = true: "ok"\n drafter: "more"',
            'turn 4 (line {l}): expected drafter, but the run had already ended: "approved"',
        ),
    ],
)
def test_first_divergence_in_the_flows_terms(body: str, message: str) -> None:
    src = FEEDBACK + 'scenario "s" {\n ' + body + "\n}\n"
    last_line = src.count("\n") - 1
    [(passed, failure)] = scenarios(src)
    assert not passed
    assert failure == message.format(l=last_line)


def test_scenario_turn_forms_map_to_script_turns() -> None:
    # a model speaker's bare step is a call of the tool whose alternative does just that
    # (`decide` hands off to security too: with it, `triage hands off to security` would
    # not say which tool it calls)
    tools = '  tool close finishes "closed"\n  tool wipe clears draft\n}\nspeaker security\n'
    src = (
        TRIAGE.replace("}\nspeaker security\n", tools, 1).replace(
            '  tool decide hands off to security | finishes "done"\n', "", 1
        )
        + """
scenario "forms" {
  user: "hi"
  triage hands off to security: "over"
  security: "s"
  user: "u"
  triage calls resolve with {"reason": "fixed"}: "done"
  expect terminate "resolved"
}
scenario "finishes" {
  user: "hi"
  triage finishes "closed"
  expect terminate "closed"
}
scenario "clears" {
  user: "hi"
  triage clears draft: "x"
  expect next user
}
"""
    )
    assert scenarios(src) == [(True, None)] * 3


def test_scenario_items_are_the_dsl_nodes() -> None:
    flow = flowc.compile_flow(FEEDBACK + 'scenario "s" { user: "x" expect turns 1 }')
    assert isinstance(flow.scenarios[0].items[0], n.SayTurn)


def test_the_scenarios_of_one_target_read_and_compile_its_graph_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 32: each scenario opens a channel of its own, and its graph was read from
    the knobs and compiled for every one of them (80 s for `flowc scenarios` on a 50 KB
    flow). The runs of one target share its knobs and its adapter: once for all. A flow
    with a custom name gets its class built anew for every run (an instance may keep
    state), so its graph is compiled again, but read once."""
    from flowc.runtime.adapters import workflow

    calls = {"read": 0, "compiled": 0}
    real_read, real_compile = workflow.structure_graph, workflow.compile_graph

    def read(*args: Any, **kwargs: Any) -> Any:
        calls["read"] += 1
        return real_read(*args, **kwargs)

    def compile_graph(*args: Any, **kwargs: Any) -> Any:
        calls["compiled"] += 1
        return real_compile(*args, **kwargs)

    monkeypatch.setattr(workflow, "structure_graph", read)
    monkeypatch.setattr(workflow, "compile_graph", compile_graph)
    scenarios = "".join(
        f'scenario "s{i}" {{\n  user: "hi"\n  drafter: "draft"\n  expect next reviewer\n}}\n'
        for i in range(5)
    )
    flow = flowc.compile_flow(FEEDBACK + scenarios)
    shared = target(FEEDBACK + scenarios)
    assert all(run_scenario(shared, sc).passed for sc in flow.scenarios)
    assert calls == {"read": 1, "compiled": 1}
    # a new target is another graph object: read and compiled again
    assert run_scenario(target(FEEDBACK + scenarios), flow.scenarios[0]).passed
    assert calls == {"read": 2, "compiled": 2}

    custom = FEEDBACK.replace(
        "when from user then drafter",
        "condition urgent()\nwhen urgent() then drafter\nwhen from user then drafter",
    )
    from flowc.compiler.registry import default_registry

    class Urgent:
        name = "urgent"
        built = 0

        def __init__(self) -> None:
            Urgent.built += 1

        def evaluate(self, state: Any, envelope: Any) -> bool:
            return False

    reg = default_registry()
    saved = dict(reg._conditions)
    try:
        reg.register_condition(Urgent)
        flow = flowc.compile_flow(custom + scenarios)
        shared = target(custom + scenarios)
        calls.update(read=0, compiled=0)
        assert all(run_scenario(shared, sc).passed for sc in flow.scenarios)
    finally:
        reg._conditions = saved
    assert calls == {"read": 1, "compiled": len(flow.scenarios)}
    assert Urgent.built == len(flow.scenarios)
