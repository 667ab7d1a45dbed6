"""Marking the checker's findings on the diagram, from hand-built diagnostics."""

from __future__ import annotations

import attrs

from flowc.compiler.render.diagram import (
    DEAD,
    DEFAULT,
    LOOP,
    RULE,
    TRAP,
    mark_findings,
)
from flowc.compiler.render.dot import render_dot
from flowc.compiler.render.mermaid import render_mermaid
from flowc.compiler.render.options import COLORS
from flowc.diagnostics import I302, W201, W202, W203, W204, W205, W206, Diagnostic
from tests.render.helpers import diagram_of

FLOW = """\
speaker user: human
speaker drafter
speaker reviewer { tool approve sets done = true }
speaker lonely
max_turns 12
context done = false
when from user then drafter
when from drafter then reviewer
when from reviewer and context.done == false then drafter
when context.done == true then terminate "approved" priority 100
when context.done == true then drafter
otherwise terminate "max_revisions"
"""


def test_dead_speaker_greys_it_and_its_edges() -> None:
    compiled, d = diagram_of(FLOW)
    lonely = compiled.flow.speakers()[3]
    marked = mark_findings(d, [Diagnostic(W201, "never speaks", "case.flow", lonely.span)])
    node = marked.speaker_node("lonely")
    assert node.mark == DEAD
    assert [n.title for n in marked.nodes if n.mark] == ["lonely"]
    touching = {e.id for e in marked.edges if node.id in (e.source, e.target)}
    assert touching  # lonely is a sender of the context rules
    assert {e.id for e in marked.edges if e.mark == DEAD} == touching
    assert marked.findings[0].nodes == (node.id,)
    assert marked.findings[0].edges == ()


def test_dead_speaker_by_its_name_span() -> None:
    compiled, d = diagram_of(FLOW)
    name_span = compiled.flow.speakers()[3].name.span
    marked = mark_findings(d, [Diagnostic(W201, "never speaks", "case.flow", name_span)])
    assert marked.speaker_node("lonely").mark == DEAD


def test_dead_rule_and_priority_trap_by_rule_span() -> None:
    compiled, d = diagram_of(FLOW)
    trap_rule, dead_rule = compiled.rules[3], compiled.rules[4]
    marked = mark_findings(
        d,
        [
            Diagnostic(W204, "trap", "case.flow", trap_rule.span),
            Diagnostic(W203, "dead", "case.flow", dead_rule.statement.span),
        ],
    )
    for edge in marked.edges:
        expected = {3: TRAP, 4: DEAD}.get(edge.rule) if edge.kind == RULE else None
        assert edge.mark == expected, edge
    by_code = {f.diagnostic.code.id: f for f in marked.findings}
    assert set(by_code["W204"].edges) == {e.id for e in marked.edges_of_rule(3)}
    assert set(by_code["W203"].edges) == {e.id for e in marked.edges_of_rule(4)}


def test_a_span_inside_the_rule_finds_the_rule() -> None:
    compiled, d = diagram_of(FLOW)
    rule = compiled.rules[3].rule
    assert rule is not None
    marked = mark_findings(d, [Diagnostic(W203, "dead", "case.flow", rule.priority.span)])  # type: ignore[union-attr]
    assert {e.rule for e in marked.edges if e.mark} == {3}


def test_one_alternative_of_an_expanded_rule() -> None:
    compiled, d = diagram_of("speakers a, b, c\nwhen from a, b then c\nwhen from b then a\n")
    second = compiled.rules[1]  # `b` of `from a, b`
    marked = mark_findings(d, [Diagnostic(W203, "dead", "case.flow", second.span)])
    assert [e.rule for e in marked.edges if e.mark == DEAD] == [1]


def test_dead_default() -> None:
    compiled, d = diagram_of(FLOW)
    marked = mark_findings(
        d, [Diagnostic(W202, "dead default", "case.flow", compiled.default_span)]
    )
    defaults = [e for e in marked.edges if e.kind == DEFAULT]
    assert defaults and all(e.mark == DEAD for e in defaults)
    assert all(e.mark is None for e in marked.edges if e.kind != DEFAULT)


def test_loops_in_the_warning_colour() -> None:
    compiled, d = diagram_of(FLOW)
    marked = mark_findings(
        d,
        [
            Diagnostic(W205, "sticky", "case.flow", compiled.rules[4].span),
            Diagnostic(W206, "forever", "case.flow", compiled.flow.speakers()[1].span),
        ],
    )
    assert {e.rule for e in marked.edges if e.mark == LOOP} == {4}
    assert marked.speaker_node("drafter").mark == LOOP


def test_other_codes_are_findings_without_a_mark() -> None:
    compiled, d = diagram_of(FLOW)
    marked = mark_findings(d, [Diagnostic(I302, "info", "case.flow", compiled.rules[0].span)])
    assert not marked.marks
    assert marked.findings[0].mark is None
    assert marked.findings[0].edges == tuple(e.id for e in marked.edges_of_rule(0))


def test_json_paths_mark_json_graphs() -> None:
    _compiled, d = diagram_of(FLOW)
    unspanned = attrs.evolve(d, edges=tuple(attrs.evolve(e, spans=()) for e in d.edges))
    marked = mark_findings(
        unspanned, [Diagnostic(W203, "dead", "g.json", json_path="$.transitions[1]")]
    )
    assert {e.rule for e in marked.edges if e.mark} == {1}


def test_dead_wins_over_loop() -> None:
    compiled, d = diagram_of(FLOW)
    span = compiled.rules[4].span
    marked = mark_findings(
        d,
        [Diagnostic(W205, "loop", "case.flow", span), Diagnostic(W203, "dead", "case.flow", span)],
    )
    assert {e.mark for e in marked.edges_of_rule(4)} == {DEAD}


def test_marks_and_legend_in_dot_and_mermaid() -> None:
    compiled, d = diagram_of(FLOW)
    plain_dot, plain_mmd = render_dot(d), render_mermaid(d)
    assert "legend" not in plain_dot and "legend" not in plain_mmd
    marked = mark_findings(
        d,
        [
            Diagnostic(W201, "x", "case.flow", compiled.flow.speakers()[3].span),
            Diagnostic(W204, "x", "case.flow", compiled.rules[3].span),
        ],
    )
    dot = render_dot(marked)
    assert "subgraph cluster_legend" in dot
    assert "<S><B>lonely</B></S>" in dot  # struck
    trap_edges = [e for e in marked.edges_of_rule(3) if e.mark == TRAP]
    # the edge from the dead speaker is dead: dead wins over the trap
    assert {e.mark for e in marked.edges_of_rule(3)} == {TRAP, DEAD}
    for e in trap_edges:
        line = next(x for x in dot.splitlines() if f'id="{e.id}"' in x)
        assert f'color="{COLORS[TRAP]}"' in line and "<S>" in line
    mmd = render_mermaid(marked)
    assert 'subgraph legend["flowc check"]' in mmd
    lonely = marked.speaker_node("lonely")
    assert f"  class {lonely.id},legend_dead dead" in mmd
    index = next(i for i, e in enumerate(marked.edges) if e.id == trap_edges[0].id)
    assert f"  linkStyle {index} stroke:{COLORS[TRAP]}" in mmd


def test_checked_without_findings_still_draws_the_legend() -> None:
    _, d = diagram_of(FLOW)
    marked = mark_findings(d, [])
    assert marked.checked and not marked.findings
    assert "cluster_legend" in render_dot(marked)


def test_dead_default_greys_the_lone_otherwise_node_too() -> None:
    _, d = diagram_of(
        "speakers a, b\nwhen from a then b\nwhen from b then a\notherwise terminate\n"
    )
    marked = mark_findings(d, [Diagnostic(W202, "dead default", "case.flow")])
    assert [(n.kind, n.mark) for n in marked.nodes if n.mark] == [("otherwise", DEAD)]
    assert [e.mark for e in marked.edges if e.kind == DEFAULT] == [DEAD]


REVIEW = """\
flow review
speaker drafter
speaker reviewer {
  tool approve sets done = true
}
max_turns 12
context done = false
when context.done == true  then terminate "approved" priority 100
when from drafter          then reviewer
when from reviewer         then drafter
otherwise terminate "max_revisions"
"""


def test_the_real_checker_findings_land_on_the_diagram() -> None:
    import flowc

    rendering = flowc.render(REVIEW, check=True, filename="review.flow")
    by_code = {f.diagnostic.code.id: f for f in rendering.diagram.findings}
    assert {"W204", "W202"} <= set(by_code)
    trap = by_code["W204"]
    assert trap.mark == TRAP
    assert {e.id for e in rendering.diagram.edges_of_rule(0)} == set(trap.edges)
    assert all(e.mark == TRAP for e in rendering.diagram.edges_of_rule(0))
    assert by_code["W202"].edges and by_code["W202"].mark == DEAD


TRAP_FROM_GHOST = """\
speaker user: human
speaker drafter
speaker reviewer { tool approve sets approved = true }
speaker ghost { tool approve sets approved = true }
start user
max_turns 12
when context.approved == true then terminate "approved" priority 100
when from user then drafter
when from drafter then reviewer
when from reviewer then drafter
"""


def test_a_trap_the_rules_draw_only_from_an_unreachable_speaker_is_drawn_where_it_is() -> None:
    # the real checker: ghost is unreachable (W201) and rule 1 a priority trap (W204); the
    # rules alone draw the trap's edge only from ghost, whose grey would hide the trap
    from flowc.compiler.render.rendering import render

    r = render(TRAP_FROM_GHOST, check=True, filename="trap.flow")
    codes = {f.diagnostic.code.id for f in r.diagram.findings}
    assert {"W201", "W204"} <= codes
    trap_edges = r.diagram.edges_of_rule(0)
    ghost = r.diagram.speaker_node("ghost")
    # drawn from ghost (the rules alone leave it that sender) and from reviewer, whose
    # turns rule 4 (`from reviewer`) takes: where the checker found the trap
    reviewer = r.diagram.speaker_node("reviewer")
    assert {e.source for e in trap_edges} == {ghost.id, reviewer.id}
    marks = {e.source: e.mark for e in trap_edges}
    assert marks == {reviewer.id: TRAP, ghost.id: DEAD}  # ghost's edges stay grey
    assert ghost.mark == DEAD
    # ghost's other edges (its fall-through to the default) stay grey
    others = [e for e in r.diagram.edges if e.source == ghost.id and e.rule != 0]
    assert others and all(e.mark == DEAD for e in others)
    trap_edge = next(e for e in trap_edges if e.source == reviewer.id)
    dot_edge = next(line for line in r.dot.splitlines() if f'id="{trap_edge.id}"' in line)
    assert f'color="{COLORS["trap"]}"' in dot_edge
