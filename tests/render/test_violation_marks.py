"""``render --check`` marks the run that breaks a property (E116) on the diagram.

The marks are checked by hand on ``examples/approval.flow`` and small flows, and
cross-checked against the hub runtime, which shares no code with the analysis: the
scenario ``flowc scenarios FILE --property NAME`` writes of the violating run is played
on the runtime (:func:`flowc.runtime.scenarios.run_scenario`), and the edges its turns
take (who spoke, what decided the next turn, who spoke next or how the run closed) must
be exactly the edges marked.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from flowc import compile_flow
from flowc.compiler.analysis.facts import CheckOptions
from flowc.compiler.analysis.generate import GenerationError, violation_scenario
from flowc.compiler.describe import property_text
from flowc.compiler.render.diagram import (
    CAP,
    DEFAULT,
    RULE,
    START_EDGE,
    TOOL,
    VIOLATION,
    Diagram,
    Finding,
    build_diagram,
    json_text,
    mark_findings,
)
from flowc.compiler.render.dot import render_dot
from flowc.compiler.render.page import render_html
from flowc.compiler.render.rendering import render, run_checker
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_name
from flowc.runtime.scenarios import run_scenario
from flowc.runtime.target import RunTarget
from tests.property_check.strategies import random_flow, random_properties

ROOT = Path(__file__).resolve().parents[2]
APPROVAL = ROOT / "examples" / "approval.flow"

#: (source title, target title, kind, the rule's file index or the tool's label)
EdgeKey = tuple[str, str, str, object]
#: generated flows cross-checked (18 of the 60 have a property broken by a finite run)
FLOWS = 80


def _key(diagram: Diagram, edge_id: str) -> EdgeKey:
    e = next(x for x in diagram.edges if x.id == edge_id)
    how: object = e.rule if e.kind == RULE else (e.label[0] if e.kind == TOOL else None)
    return (diagram.node(e.source).title, diagram.node(e.target).title, e.kind, how)


def _violation(diagram: Diagram, name: str) -> Finding:
    (found,) = (
        f
        for f in diagram.findings
        if f.diagnostic.code.id == "E116"
        and f.diagnostic.run is not None
        and f.diagnostic.run.subject == name
    )
    return found


def test_the_approval_example_marks_exactly_its_violating_run() -> None:
    d = render(APPROVAL, check=True).diagram
    f = _violation(d, "clear_outcome")
    # employee → assistant → ... → assistant, cut by `max_turns 10`
    assert {_key(d, e) for e in f.edges} == {
        ("start", "employee", START_EDGE, None),
        ("employee", "assistant", RULE, 4),
        ("assistant", "employee", RULE, 5),
    }
    assert [d.node(n).kind for n in f.nodes] == [CAP]
    assert f.mark == VIOLATION
    assert {e.id for e in d.edges if e.mark == VIOLATION} == set(f.edges)
    assert {n.id for n in d.nodes if n.mark == VIOLATION} == set(f.nodes)
    # the property that holds (I306) marks nothing
    (held,) = (f for f in d.findings if f.diagnostic.code.id == "I306")
    assert (held.nodes, held.edges, held.mark) == ((), (), None)
    assert d.violated == ("clear_outcome",)


def test_a_flow_whose_properties_hold_marks_nothing() -> None:
    text = APPROVAL.read_text().replace(
        'property clear_outcome: eventually ends "paid" or ends "rejected"\n', ""
    )
    d = render(text, check=True, filename="approval.flow").diagram
    assert [f.diagnostic.code.id for f in d.findings] == ["I306"]
    assert d.violated == ()
    assert not any(x.mark for x in (*d.nodes, *d.edges))
    assert "E116" not in render(text, check=True).dot
    assert "violation" not in render(text, check=True).mermaid


def test_an_undecided_property_marks_nothing() -> None:
    # past a tiny bound the property that holds is not decided (I305)
    compiled = compile_flow(APPROVAL.read_text(), filename="approval.flow")
    found = run_checker(compiled, None, CheckOptions(max_states=2))
    assert "I305" in {x.code.id for x in found}
    marked = mark_findings(build_diagram(compiled), found)
    undecided = [f for f in marked.findings if f.diagnostic.code.id == "I305"]
    assert undecided
    assert all((f.nodes, f.edges, f.mark) == ((), (), None) for f in undecided)
    assert "paid_after_approval" not in marked.violated


def test_dot_mermaid_and_the_page_carry_the_violation() -> None:
    r = render(APPROVAL, check=True)
    d = r.diagram
    f = _violation(d, "clear_outcome")
    dot = r.dot
    for edge_id in f.edges:
        (line,) = (x for x in dot.splitlines() if f'[id="{edge_id}"' in x)
        assert 'color="#c2255c"' in line and "penwidth=3" in line, line
    assert "the run that breaks property clear_outcome (E116)" in dot
    mermaid = r.mermaid
    indexes = {i for i, e in enumerate(d.edges) if e.id in f.edges}
    styled = {
        int(x.split()[1])
        for x in mermaid.splitlines()
        if x.startswith("  linkStyle") and "#c2255c" in x
    }
    assert styled == indexes
    assert 'legend_violation["the run that breaks property clear_outcome (E116)"]' in mermaid
    assert "  classDef violation " in mermaid
    page = render_html(d, "<svg></svg>")
    (item,) = (x for x in page.splitlines() if 'data-code="E116"' in x)
    assert f'data-edges="{" ".join(f.edges)}"' in item
    assert f'data-nodes="{" ".join(f.nodes)}"' in item


def test_tool_routes_the_default_and_a_lasso() -> None:
    text = """\
speaker a { tool pass hands off to c | finishes "done" }
speaker b
speaker c
start a
when from b then a
otherwise b
property never_c: never from c
property ends_done: eventually ends "done"
"""
    d = render(text, check=True, filename="f.flow").diagram
    never_c = _violation(d, "never_c")
    # a → b → a (pass) → c → b: the kickoff takes a's first turn, a's second hands c the
    # turn with its tool
    assert {_key(d, e) for e in never_c.edges} == {
        ("start", "a", START_EDGE, None),
        ("a", "b", DEFAULT, None),
        ("b", "a", RULE, 0),
        ("a", "c", TOOL, "tool pass"),
        ("c", "b", DEFAULT, None),
    }
    # a → b → a → b → ... for ever: the lasso's way back is marked too
    ends = _violation(d, "ends_done")
    run = ends.diagnostic.run
    assert run is not None and run.loop_from is not None
    assert {_key(d, e) for e in ends.edges} == {
        ("start", "a", START_EDGE, None),
        ("a", "b", DEFAULT, None),
        ("b", "a", RULE, 0),
    }
    assert not ends.nodes
    assert d.violated == ("never_c", "ends_done")
    assert "the runs that break properties never_c, ends_done (E116)" in render_dot(d)


def test_a_finish_ends_at_its_terminal() -> None:
    text = """speaker user: human
speaker a { tool pass finishes "done" }
when from user then a
when from a then user
property no_done: never ends "done"
"""
    d = render(text, check=True, filename="f.flow").diagram
    assert {_key(d, e) for e in _violation(d, "no_done").edges} == {
        ("start", "user", START_EDGE, None),
        ("user", "a", RULE, 0),
        ("a", 'terminate "done"', TOOL, "tool pass"),
    }


# ── the cross-check on the runtime ──────────────────────────────────────────


def _runtime_edges(text: str, name: str, diagram: Diagram) -> set[EdgeKey] | None:
    """The edges the hub runtime takes when it plays the violating run's scenario; None
    when no scenario can be written for it (a run that never ends)."""
    compiled = compile_flow(text, filename="f.flow")
    try:
        sc = violation_scenario(compiled, name)
    except GenerationError:
        return None
    with_scenario = compile_flow(text + "\n" + sc.text(), filename="f.flow")
    scenario = with_scenario.scenarios[-1]
    result = run_scenario(RunTarget.from_compiled(with_scenario), scenario)
    assert result.passed, (text, sc.text(), result.failure)
    steps = result.steps
    out: set[EdgeKey] = {("start", steps[0].speaker, START_EDGE, None)}
    for i, step in enumerate(steps):
        by = step.decided_by
        if isinstance(by, int):
            kind, how = RULE, by
        elif by == "default":
            kind, how = DEFAULT, None
        else:
            assert by in ("handoff", "finish"), by
            kind, how = TOOL, f"tool {format_name(step.tool or '')}"
        if i + 1 < len(steps):
            targets = [steps[i + 1].speaker]
        elif result.close_reason is None:
            # the run goes on: the scenario's last line names the next speaker, which the
            # runtime confirmed (the scenario passed)
            last = scenario.items[-1]
            assert isinstance(last, n.ExpectNext), sc.text()
            targets = [last.speaker.value]
        elif result.close_reason == "max_turns":
            # the cap closed the run after this turn's routing: wherever its rule leads
            targets = [
                d.node(e.target).title
                for d in (diagram,)
                for e in d.edges
                if e.kind == kind
                and d.node(e.source).title == step.speaker
                and (e.rule if kind == RULE else (e.label[0] if kind == TOOL else None)) == how
            ]
        else:
            targets = [f"terminate {json_text(result.close_reason)}"]
        out |= {(step.speaker, t, kind, how) for t in targets}
    return out


def _cross_check(text: str) -> int:
    """Assert, for each property the flow violates by a finite run, that the edges marked
    are those the runtime takes; the number of properties compared."""
    d = render(text, check=True, filename="f.flow").diagram
    compared = 0
    for name in d.violated:
        f = _violation(d, name)
        taken = _runtime_edges(text, name, d)
        if taken is None:
            continue
        assert {_key(d, e) for e in f.edges} == taken, text
        compared += 1
    return compared


def test_the_approval_run_is_the_one_the_runtime_takes() -> None:
    assert _cross_check(APPROVAL.read_text()) == 1


def _generated(count: int) -> list[str]:
    """Small flows of the property checker's differential test, each with one property
    (a property of its own: the scenario is written from a check of that property alone),
    without custom conditions or targets (a scenario cannot choose their outcomes)."""
    rng = random.Random(27)
    out: list[str] = []
    while len(out) < count:
        flow = random_flow(rng)
        if "pick()" in flow.text or "urgent(" in flow.text:
            continue
        (prop,) = random_properties(flow, rng.getrandbits(64), 1)
        out.append(flow.text + property_text(prop) + "\n")
    return out


@pytest.mark.parametrize("text", _generated(FLOWS))
def test_generated_runs_are_the_ones_the_runtime_takes(text: str) -> None:
    _cross_check(text)


def test_the_generated_flows_break_properties() -> None:
    # the cross-check above compares runs: enough of the flows must have one
    assert sum(_cross_check(text) for text in _generated(FLOWS)) >= 15
