"""The analysis API: JSON graphs, ``flowc.check``, options, determinism, the bound, replay."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

import flowc
from flowc.compiler import model as m
from flowc.compiler.analysis import CheckOptions, analyze, analyze_graph, findings_of
from flowc.compiler.analysis.runs import Run
from flowc.compiler.analysis.system import system_of_flow, system_of_graph
from flowc.compiler.pipeline import LoadedGraph, compile_source, load_graph_json
from flowc.compiler.serde import unstructure_graph
from flowc.source import SourceFile
from tests.check.check_replay import replay, replay_finding

TRAP = (Path(__file__).parent.parent / "cases" / "check" / "priority_trap.flow").read_text()


def frm(a: str) -> m.FromSpeaker:
    return m.FromSpeaker(a)


def graph(
    *transitions: m.Transition,
    default: m.Target | None = None,
    max_turns: int | None = None,
    start: str = "user",
) -> m.TransitionGraph:
    return m.TransitionGraph(start, transitions, default or m.TerminateTarget(), max_turns)


def codes_of_graph(g: m.TransitionGraph, context: dict[str, object] | None = None) -> list[str]:
    loaded = LoadedGraph(g, dict(context or {}), False)
    system = system_of_graph(loaded)
    found = findings_of(system, CheckOptions(), "g.json")
    for f in found:
        replay_finding(system, f)
    return [f.diagnostic.code.id for f in found]


def test_json_priority_trap_is_w204() -> None:
    g = graph(
        m.Transition(m.ContextEquals("approved", True), m.TerminateTarget("approved"), 100),
        m.Transition(frm("user"), m.AgentTarget("drafter")),
        m.Transition(frm("drafter"), m.AgentTarget("reviewer")),
        m.Transition(frm("reviewer"), m.AgentTarget("drafter")),
        max_turns=12,
    )
    assert codes_of_graph(g) == ["I303", "W204"]


def test_json_assumes_any_tool_and_any_write() -> None:
    # in a .flow this tool rule would be W208; in JSON any participant may call it
    g = graph(
        m.Transition(m.ToolCalled("escalate"), m.AgentTarget("security")),
        m.Transition(m.ContextEquals("route", "x"), m.TerminateTarget("routed")),
        m.Transition(frm("user"), m.AgentTarget("bot")),
        m.Transition(frm("security"), m.TerminateTarget("handled")),
        max_turns=10,
    )
    assert codes_of_graph(g) == ["I303"]


def test_json_dead_rule_and_unreachable_id() -> None:
    g = graph(
        m.Transition(frm("user"), m.AgentTarget("bot")),
        m.Transition(frm("bot"), m.TerminateTarget("done")),
        m.Transition(frm("bot"), m.AgentTarget("critic")),
        m.Transition(frm("ghost"), m.AgentTarget("bot")),
    )
    loaded = LoadedGraph(g, {}, False)
    found = analyze_graph(loaded, filename="g.json")
    assert [(d.code.id, d.json_path) for d in found] == [
        ("I303", ""),
        ("W201", "transitions[3]"),
        ("W203", "transitions[2]"),
    ]
    assert "`ghost`" in found[1].message


def test_json_round_robin_default_is_not_w202() -> None:
    g = graph(
        m.Transition(m.Always(), m.RoundRobinTarget()),
        default=m.TerminateTarget("round_robin_complete"),
        max_turns=6,
    )
    # (I304: with one participant `round_robin` comes back to it, where AG2 stalls)
    assert codes_of_graph(g) == ["I303", "I304"]
    g = attrs.evolve(g, max_turns=None)
    assert codes_of_graph(g) == ["I303", "I304", "W206"]


def test_compiled_dict_checks_like_its_flow() -> None:
    compiled, _ = compile_source(SourceFile("t.flow", TRAP))
    assert compiled is not None
    text = json.dumps(compiled.knobs)
    loaded, diags = load_graph_json(SourceFile("t.json", text))
    assert loaded is not None and not diags
    assert [d.code.id for d in analyze_graph(loaded)] == ["I303", "W204"]
    assert [d.code.id for d in analyze(compiled)] == ["W204"]
    assert unstructure_graph(loaded.graph) == compiled.graph_dict


def test_flowc_check_api(tmp_path: Path) -> None:
    assert "check" in flowc.__all__
    path = tmp_path / "trap.flow"
    path.write_text(TRAP)
    by_path = flowc.check(path)
    by_name = flowc.check(str(path))
    by_text = flowc.check(TRAP, filename=str(path))
    assert [d.code.id for d in by_path] == ["W204"]
    assert by_path == by_name == by_text
    assert by_path[0].filename == str(path)
    assert flowc.check(TRAP, options=CheckOptions(ignore=("W2",))) == ()
    assert [d.code.id for d in flowc.check("speaker a\n")] == ["E110"]


def test_output_is_deterministic() -> None:
    compiled, _ = compile_source(SourceFile("t.flow", TRAP))
    assert compiled is not None
    first = analyze(compiled)
    for _ in range(3):
        again, _ = compile_source(SourceFile("t.flow", TRAP))
        assert again is not None
        assert analyze(again) == first


def test_bound_stops_exploration() -> None:
    compiled, _ = compile_source(SourceFile("t.flow", TRAP))
    assert compiled is not None
    found = analyze(compiled, CheckOptions(max_states=2))
    assert [d.code.id for d in found] == ["I301"]
    assert "(2 abstract states, 40 explored turns)" in found[0].message


def test_options_select_ignore_prefixes() -> None:
    opts = CheckOptions(select=("W2",), ignore=("W207",))
    assert opts.wants("W204") and not opts.wants("W207") and not opts.wants("I301")
    assert CheckOptions().wants("X001")


def test_a_tampered_run_does_not_replay() -> None:
    compiled, _ = compile_source(SourceFile("t.flow", TRAP))
    assert compiled is not None
    system = system_of_flow(compiled)
    (finding,) = findings_of(system, CheckOptions(), "t.flow")
    assert finding.run is not None
    replay(system, finding.run)
    turns = list(finding.run.turns)
    # the reviewer does not approve: the run no longer reaches the claimed state
    turns[2] = attrs.evolve(turns[2], tool=None, sets=())
    with pytest.raises(AssertionError):
        replay_finding(system, attrs.evolve(finding, run=Run(tuple(turns), finding.run.next)))
    # a speaker out of turn
    turns = list(finding.run.turns)
    turns[1] = attrs.evolve(turns[1], speaker="reviewer")
    with pytest.raises(AssertionError):
        replay(system, Run(tuple(turns), finding.run.next))


def test_json_graph_with_many_keys_is_bounded() -> None:
    # 14 keys of 2 values: 3**14 possible writes per turn; the turn budget stops it
    transitions = tuple(
        m.Transition(m.AllOf((frm("user"), m.ContextEquals(f"k{i}", v))), m.AgentTarget("bot"))
        for i in range(14)
        for v in (1, 2)
    )
    g = graph(
        m.Transition(frm("user"), m.AgentTarget("bot")),
        *transitions,
        m.Transition(frm("bot"), m.AgentTarget("user")),
        max_turns=5,
    )
    found = analyze_graph(LoadedGraph(g, {}, False), CheckOptions(max_states=50))
    assert [d.code.id for d in found] == ["I301", "I303"]


def test_flowc_check_takes_a_graph_dict() -> None:
    compiled, _ = compile_source(SourceFile("t.flow", TRAP))
    assert compiled is not None
    assert [d.code.id for d in flowc.check(compiled.graph_dict)] == ["I303", "W204"]
    assert [d.code.id for d in flowc.check(compiled.knobs, filename="knobs.json")] == [
        "I303",
        "W204",
    ]
    assert [d.json_path for d in flowc.check({"initial_speaker": 1})] == ["initial_speaker"]
