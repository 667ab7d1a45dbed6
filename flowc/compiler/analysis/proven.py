"""Which printed finding proves each dead rule never fires: the one place ``render
--check`` and ``test --coverage`` read what ``flowc check`` reports about rules.

A rule reported on its own (W203, W204, W205 ...) is proved by the finding about it; a
rule whose death follows from another finding (an unset key, W209; an unknown tool,
W208; its only senders unreachable, W201; a sticky loop, W205; no run ending, W210) is
proved by that finding, which may sit on another line. A dead rule whose finding was not
printed (not selected) has none: nothing names a code ``check`` did not print.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from flowc.compiler import model as m
from flowc.compiler.analysis.facts import DeadRule, Facts, Finding
from flowc.compiler.analysis.rules import folded_into_w210
from flowc.diagnostics import Diagnostic

__all__ = ["dead_rule_findings", "with_proofs"]


def _code_of(facts: Facts, dead: DeadRule) -> str:
    if dead.cause is not None:
        return dead.cause
    if dead.shadowed and dead.taken_by in facts.sticky_rules:
        return "W205"
    if folded_into_w210(facts, dead) and facts.contradiction(dead.rule) is None:
        return "W210"
    return "W204" if dead.trap is not None else "W203"


def _pick(facts: Facts, dead: DeadRule, code: str, found: list[Finding]) -> Finding | None:
    """Among the printed findings with ``code``, the one about this rule."""
    rule = dead.rule
    line = facts.system.line_of(rule)
    if code == "W201" and rule.senders:  # the finding about one of its senders
        names = {f"`{facts.system.speakers[s]}`" for s in rule.senders}
        about = [f for f in found if any(n in f.diagnostic.message for n in names)]
        return about[0] if about else None
    if code == "W205" and dead.taken_by is not None:
        about = [f for f in found if f.rule == dead.taken_by]
        return about[0] if about else _only(found)
    own = [f for f in found if f.rule == rule.index]
    if own:
        return own[0]
    here = [f for f in found if f.rule is None and f.diagnostic.span is not None]
    near = [f for f in here if f.diagnostic.span is not None and f.diagnostic.span.line == line]
    if code in ("W203", "W204"):
        return None
    return near[0] if near else _only(found)


def _only(found: list[Finding]) -> Finding | None:
    """The one printed finding of a code, or ``None`` when there are several (which one
    is about this rule is not known: none is named, rather than another's line)."""
    return found[0] if len(found) == 1 else None


def dead_rule_findings(facts: Facts, findings: Iterable[Finding]) -> dict[int, Finding]:
    """Each dead rule (its index) -> the printed finding that proves it never fires."""
    by_code: dict[str, list[Finding]] = {}
    for f in findings:
        by_code.setdefault(f.diagnostic.code.id, []).append(f)
    out: dict[int, Finding] = {}
    for dead in facts.dead_rules:
        code = _code_of(facts, dead)
        found = _pick(facts, dead, code, by_code.get(code, []))
        if found is not None:
            out[dead.rule.index] = found
    # a rule whose senders are unreachable only because the rules routing to them are
    # dead (check folds their W201 into those rules' findings): that finding proves it
    system = facts.system
    changed = True
    while changed:
        changed = False
        for dead in facts.dead_rules:
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


def with_proofs(facts: Facts, findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """The findings, each diagnostic carrying the rules it proves never fire (and, for a
    priority trap, the speakers whose turns an earlier rule takes from the rule)."""
    proves: dict[int, list[int]] = {}
    for index, f in dead_rule_findings(facts, findings).items():
        proves.setdefault(id(f), []).append(index)
    traps = {d.rule.index: d for d in facts.dead_rules if d.trap is not None}
    out = []
    for f in findings:
        rules = tuple(sorted(proves.get(id(f), ())))
        if not rules:
            out.append(f)
            continue
        senders: list[str] = []
        for index in rules:
            senders += _trap_senders(facts, traps.get(index))
        d: Diagnostic = attrs.evolve(
            f.diagnostic, dead_rules=rules, trap_senders=tuple(dict.fromkeys(senders))
        )
        out.append(attrs.evolve(f, diagnostic=d))
    return tuple(out)


def _trap_senders(facts: Facts, dead: DeadRule | None) -> list[str]:
    """The speakers whose turns the earlier rule takes from a priority-trapped rule."""
    if dead is None or dead.trap is None or not dead.trap.turns:
        return []
    system = facts.system
    taken = dead.trap_taken_by
    taker = system.rules[taken] if taken is not None and taken >= 0 else None
    if taker is not None and taker.senders:
        return [system.speakers[s] for s in sorted(taker.senders) if s in facts.scheduled]
    return [dead.trap.turns[-1].speaker]
