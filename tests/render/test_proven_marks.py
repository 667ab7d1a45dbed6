"""``render --check`` marks exactly what ``flowc check`` proves about rules, and ``test
--coverage`` names the finding check printed for each dead rule: both read the rules a
printed finding proves never fire (:mod:`flowc.compiler.analysis.proven`)."""

from __future__ import annotations

from flowc import compile_flow
from flowc.compiler.analysis.targets import coverage_targets
from flowc.compiler.render.diagram import DEAD, RULE, TRAP
from flowc.compiler.render.rendering import render

BUGGY = """\
flow buggy "deliberate mistakes"
speaker user: human
speaker planner {
  tool plan_done sets planned = true
}
speaker coder
speaker tester
speaker auditor
start user
max_turns 20
when context.ready == true then terminate "shipped"
when context.planned == true then terminate "planned" priority 100
when from user then planner
when from planner then coder
when from coder then tester
when from tester then planner
"""

FOLDED = """\
speaker user: human
speaker bot
speaker lost
start user
max_turns 6
when context.ready == true then terminate "a"
when from bot and context.ready == true then terminate "b"
when from lost then bot
when from user then bot
when from bot then user
"""


def _rule_edges(text: str, rule: int) -> dict[str, str | None]:
    diagram = render(text, check=True).diagram
    names = {x.id: x.key for x in diagram.nodes}
    return {names[e.source]: e.mark for e in diagram.edges if e.kind == RULE and e.rule == rule}


def test_a_rule_an_unset_key_kills_is_dead_on_every_edge() -> None:
    # rule 1 reads `context.ready`, which nothing sets (W209): it never fires from anyone
    marks = _rule_edges(BUGGY, 0)
    assert set(marks) == {"user", "planner", "coder", "tester", "auditor"}
    assert set(marks.values()) == {DEAD}


def test_the_priority_trap_is_drawn_where_the_earlier_rule_takes_the_turn() -> None:
    # rule 2 is trapped by rule 4 (`from planner`), which takes planner's turns
    marks = _rule_edges(BUGGY, 1)
    assert marks.get("planner") == TRAP


def test_a_rule_folded_into_another_lines_finding_is_dead_on_the_diagram() -> None:
    assert set(_rule_edges(FOLDED, 1).values()) == {DEAD}  # W209 of line 6


def test_coverage_names_the_printed_finding_and_its_line() -> None:
    cov = coverage_targets(compile_flow(FOLDED))
    why = {t.key: (t.code, t.dead) for t in cov.targets if t.kind == "rule"}
    assert why[("rule", 0)] == ("W209", "W209: `flowc check` proves it never fires")
    assert why[("rule", 1)] == ("W209", "W209 (line 6): `flowc check` proves it never fires")
    assert why[("rule", 2)] == ("W201", "W201 (line 3): `flowc check` proves it never fires")


SHADOWED_ROUTE = """\
speaker user: human
speaker a
speaker b
condition urgent()
start user
max_turns 10
when from a then terminate "done"
when from user then a
when urgent() and from a then b
when from b then terminate "done"
"""


def test_coverage_never_names_a_code_check_did_not_print() -> None:
    # b is unreachable only because rule 3 is dead (W203); check prints no W201 for b, so
    # rule 4 (`from b`) is proved by that W203, on line 9
    flow = compile_flow(SHADOWED_ROUTE)
    cov = coverage_targets(flow)
    printed = {f.diagnostic.code.id for f in cov.findings}
    assert "W201" not in printed
    rule = next(t for t in cov.targets if t.key == ("rule", 3))
    assert (rule.code, rule.dead) == ("W203", "W203 (line 9): `flowc check` proves it never fires")
    assert set(_rule_edges(SHADOWED_ROUTE, 3).values()) == {DEAD}


TWO_KEYS = """\
speaker user: human
speaker bot
start user
max_turns 6
when context.ready == true then terminate "a"
when context.other == true then terminate "c"
when from bot and context.other == true then terminate "b"
when from user then bot
when from bot then user
"""


def test_coverage_names_no_other_keys_finding() -> None:
    # two W209s (line 5: ready, line 6: other); rule 3 (line 7) reads `other`: it was
    # named as proved by line 5's W209 (the first of its code). Which W209 proves it is not
    # recorded, so no W209 is named rather than another key's line; W210 (no run ends,
    # placed on line 5) lists every terminate rule that never fires, rule 3 among them,
    # and proves it.
    cov = coverage_targets(compile_flow(TWO_KEYS))
    printed = sorted(
        (f.diagnostic.code.id, f.diagnostic.span.line)
        for f in cov.findings
        if f.diagnostic.span is not None
    )
    assert ("W209", 5) in printed and ("W209", 6) in printed, printed
    rule = next(t for t in cov.targets if t.key == ("rule", 2))
    assert "W209" not in (rule.dead or ""), rule.dead
    assert rule.dead == "W210 (line 5): `flowc check` proves it never fires"
    w210 = next(f for f in cov.findings if f.diagnostic.code.id == "W210")
    assert w210.diagnostic.span is not None and w210.diagnostic.span.line == 5
    assert any("rule 3, line 7" in note for note in w210.diagnostic.notes)
