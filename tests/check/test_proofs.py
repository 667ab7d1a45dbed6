"""Which printed finding proves each dead rule (``proven``): the indexed lookups against
a plain scan of the findings (the first way it was written, kept here as the reference),
and the editor's check without the proofs."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import attrs
import pytest

from flowc.compiler import model as m
from flowc.compiler.analysis import CheckOptions, check_compiled, facts_of
from flowc.compiler.analysis.facts import DeadRule, Facts, Finding
from flowc.compiler.analysis.proven import _code_of, dead_rule_findings
from flowc.compiler.analysis.rules import capped_dead_rules
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import W203, Diagnostic
from flowc.source import SourceFile, Span
from tests.property_check.strategies import random_flow

ROOT = Path(__file__).resolve().parents[2]


def _reference_pick(facts: Facts, dead: DeadRule, code: str, found: list[Finding]) -> Any:
    rule = dead.rule
    line = facts.system.line_of(rule)
    if code == "W201" and rule.senders:
        names = {f"`{facts.system.speakers[s]}`" for s in rule.senders}
        about = [f for f in found if any(n in f.diagnostic.message for n in names)]
        return about[0] if about else None
    if code == "W205" and dead.taken_by is not None:
        about = [f for f in found if f.rule == dead.taken_by]
        return about[0] if about else (found[0] if len(found) == 1 else None)
    own = [f for f in found if f.rule == rule.index]
    if own:
        return own[0]
    near = [
        f
        for f in found
        if f.rule is None and f.diagnostic.span is not None and f.diagnostic.span.line == line
    ]
    if code in ("W203", "W204"):
        return None
    return near[0] if near else (found[0] if len(found) == 1 else None)


def _reference(facts: Facts, findings: tuple[Finding, ...]) -> dict[int, Finding]:
    by_code: dict[str, list[Finding]] = {}
    for f in findings:
        by_code.setdefault(f.diagnostic.code.id, []).append(f)
    out: dict[int, Finding] = {}
    # (the dead rules as runs within the cap show them: a run past the cap is no run)
    for dead in capped_dead_rules(facts):
        code = _code_of(facts, dead)
        found = _reference_pick(facts, dead, code, by_code.get(code, []))
        if found is not None:
            out[dead.rule.index] = found
    system = facts.system
    changed = True
    while changed:
        changed = False
        for dead in capped_dead_rules(facts):
            rule = dead.rule
            if rule.index in out or _code_of(facts, dead) != "W201" or not rule.senders:
                continue
            ids = {system.ids[s] for s in rule.senders}
            feeding = [
                out[r.index]
                for r in system.rules
                if isinstance(r.then, m.AgentTarget) and r.then.agent_id in ids and r.index in out
            ]
            if feeding:
                out[rule.index] = feeding[0]
                changed = True
    return out


#: ties the index must break as the scan does, by the findings' order: a rule whose two
#: senders each have a W201 (the first printed proves it), and a rule whose sender only
#: two dead rules route to (the first of them in the system's order proves it)
TIES = [
    (
        "two W201s",
        "speaker user: human\nspeaker a\nspeaker b\nspeaker c\nstart user\nmax_turns 5\n"
        "context { k = 1 }\nwhen from user then user\n"
        "when from a, b and context.k == 1 then c\nwhen from c then user\n",
    ),
    (
        "two dead routes",
        "speaker user: human\nspeaker a\nspeaker c\nstart user\nmax_turns 5\n"
        "when from user then a\nwhen from a then user\nwhen from a then c\n"
        "when from user then c\nwhen from c then user\n",
    ),
]


def _texts() -> list[tuple[str, str]]:
    out = [
        (str(p.relative_to(ROOT)), p.read_text()) for p in sorted(ROOT.glob("examples/**/*.flow"))
    ]
    out += TIES
    out += [(f"random {seed}", random_flow(random.Random(seed)).text) for seed in range(300)]
    return out


def test_each_dead_rule_is_proved_by_the_finding_a_scan_of_the_findings_picks() -> None:
    proved = 0
    for name, text in _texts():
        compiled, _ = compile_source(SourceFile("f.flow", text))
        if compiled is None:
            continue
        facts, found = facts_of(system_of_flow(compiled), CheckOptions(), "f.flow")
        want = {k: id(f) for k, f in _reference(facts, found).items()}
        assert {k: id(f) for k, f in dead_rule_findings(facts, found).items()} == want, name
        proved += len(want)
    assert proved > 300  # (the flows have dead rules to prove)


#: a flow with a dead rule (W203), a priority trap (W204) and an unreachable speaker whose
#: rule only a dead rule routes to (W201)
DEAD = """\
speaker user: human
speaker a { tool go sets stage = "go" }
speaker b
speaker c
max_turns 6
when from user then a
when from a then user
when tool go and from a then b priority 5
when from b then c
when from c then user
"""


def test_the_editors_check_is_the_same_findings_without_the_proofs() -> None:
    compiled, diags = compile_source(SourceFile("f.flow", DEAD))
    with_proofs = check_compiled(compiled, diags, filename="f.flow")
    without = check_compiled(compiled, diags, filename="f.flow", proofs=False)
    assert without == with_proofs  # (the same findings: the proofs are not compared)
    assert any(d.dead_rules for d in with_proofs)
    assert not any(d.dead_rules or d.trap_senders for d in without)


def test_proving_keeps_every_other_field() -> None:
    # `proving` names each field: one added to Diagnostic must be added there too; and
    # `with_proofs` makes each Finding anew from its three fields
    assert [a.name for a in attrs.fields(Finding)] == ["diagnostic", "run", "rule"]
    names = [a.name for a in attrs.fields(Diagnostic)]
    assert names[-2:] == ["dead_rules", "trap_senders"]
    values: dict[str, Any] = dict(
        code=W203,
        message="m",
        filename="f.flow",
        span=Span(1, 2, 3, 4, 0, 9),
        notes=("n",),
        help="h",
        json_path="$.x",
        quote_source=False,
        explanation="e",
        run=None,
        dead_rules=(9,),
        trap_senders=("x",),
    )
    assert sorted(values) == sorted(names)
    d = Diagnostic(**values)
    proved = d.proving((1, 2), ("a",))
    assert attrs.evolve(d, dead_rules=(1, 2), trap_senders=("a",)) == proved
    for name in names:
        want = {"dead_rules": (1, 2), "trap_senders": ("a",)}.get(name, values[name])
        assert getattr(proved, name) == want, name


@pytest.mark.parametrize("flag", [True, False])
def test_proofs_flag_reaches_facts_of(flag: bool) -> None:
    compiled, _ = compile_source(SourceFile("f.flow", DEAD))
    assert compiled is not None
    _, found = facts_of(system_of_flow(compiled), CheckOptions(), "f.flow", proofs=flag)
    assert any(f.diagnostic.dead_rules for f in found) is flag


def test_a_terminate_rule_w210_lists_is_proved_by_it_when_its_cause_is_not_printed() -> None:
    """W208 / W209 say why the two terminate rules never fire, and W210 lists both: with
    those two codes ignored, W210 (which is printed) proves them, as it names them."""
    text = (ROOT / "tests/cases/check/undeclared.flow").read_text()
    compiled, _ = compile_source(SourceFile("f.flow", text))
    assert compiled is not None
    system = system_of_flow(compiled)
    facts, found = facts_of(system, CheckOptions(), "f.flow")
    by_cause = dead_rule_findings(facts, found)
    assert {i: by_cause[i].diagnostic.code.id for i in (0, 1)} == {0: "W208", 1: "W209"}
    facts, found = facts_of(system, CheckOptions(ignore=("W208", "W209")), "f.flow")
    assert sorted(f.diagnostic.code.id for f in found) == ["W210"]
    proved = dead_rule_findings(facts, found)
    assert {i: proved[i] for i in (0, 1)} == {0: found[0], 1: found[0]}
