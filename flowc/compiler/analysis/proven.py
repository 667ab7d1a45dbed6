"""Which printed finding proves each dead rule never fires: the one place ``render
--check`` and ``test --coverage`` read what ``flowc check`` reports about rules.

A rule reported on its own (W203, W204, W205 ...) is proved by the finding about it; a
rule whose death follows from another finding (an unset key, W209; an unknown tool,
W208; its only senders unreachable, W201; a sticky loop, W205; no run ending, W210) is
proved by that finding, which may sit on another line. A dead rule whose finding was not
printed (not selected), or that cannot be told apart from another of its code, has none:
nothing names a code ``check`` did not print, or another key's line; but a terminate rule
W210 lists (every run ending at the cap) is proved by W210 then.
"""

from __future__ import annotations

from collections.abc import Iterable

from flowc.compiler import model as m
from flowc.compiler.analysis.facts import DeadRule, Facts, Finding
from flowc.compiler.analysis.rules import capped_dead_rules, folded_into_w210, listed_by_w210

__all__ = ["dead_rule_findings", "with_proofs"]


def _code_of(facts: Facts, dead: DeadRule) -> str:
    if dead.cause is not None:
        return dead.cause
    if dead.shadowed and dead.taken_by in facts.sticky_rules:
        return "W205"
    if folded_into_w210(facts, dead) and facts.contradiction(dead.rule) is None:
        return "W210"
    return "W204" if dead.trap is not None else "W203"


class _Printed:
    """The printed findings of one code, indexed the ways :func:`_pick` asks for them
    (each answer the first such finding, in the order ``check`` prints them)."""

    def __init__(self, found: list[Finding]) -> None:
        self.found = found
        self.by_rule: dict[int, Finding] = {}
        self.by_line: dict[int, Finding] = {}
        for f in found:
            if f.rule is not None:
                self.by_rule.setdefault(f.rule, f)
            elif f.diagnostic.span is not None:
                self.by_line.setdefault(f.diagnostic.span.line, f)
        self._quoted: dict[str, int] | None = None

    def naming(self, names: set[str]) -> Finding | None:
        """The first finding whose message quotes (in backticks) one of ``names``."""
        if self._quoted is None:
            # every stretch between two backticks: a name in backticks is in a message
            # exactly when it is one of its stretches (a name holds no backtick)
            self._quoted = {}
            for i, f in enumerate(self.found):
                for part in f.diagnostic.message.split("`")[1:-1]:
                    self._quoted.setdefault(part, i)
        hits = [self._quoted[n] for n in names if n in self._quoted]
        return self.found[min(hits)] if hits else None

    def only(self) -> Finding | None:
        """The one printed finding of the code, or ``None`` when there are several (which
        one is about this rule is not known: none is named, rather than another's line)."""
        return self.found[0] if len(self.found) == 1 else None


def _pick(facts: Facts, dead: DeadRule, code: str, found: _Printed) -> Finding | None:
    """Among the printed findings with ``code``, the one about this rule."""
    rule = dead.rule
    if code == "W201" and rule.senders:  # the finding about one of its senders
        return found.naming({facts.system.speakers[s] for s in rule.senders})
    if code == "W205" and dead.taken_by is not None:
        about = found.by_rule.get(dead.taken_by)
        return about if about is not None else found.only()
    own = found.by_rule.get(rule.index)
    if own is not None:
        return own
    if code in ("W203", "W204"):
        return None
    line = facts.system.line_of(rule)
    near = None if line is None else found.by_line.get(line)
    return near if near is not None else found.only()


def dead_rule_findings(facts: Facts, findings: Iterable[Finding]) -> dict[int, Finding]:
    """Each dead rule (its index) -> the printed finding that proves it never fires."""
    by_code: dict[str, list[Finding]] = {}
    for f in findings:
        by_code.setdefault(f.diagnostic.code.id, []).append(f)
    printed = {code: _Printed(found) for code, found in by_code.items()}
    nothing = _Printed([])
    out: dict[int, Finding] = {}
    waiting: list[DeadRule] = []  # W201s that a rule routing to a sender may prove
    for dead in capped_dead_rules(facts):
        code = _code_of(facts, dead)
        found = _pick(facts, dead, code, printed.get(code, nothing))
        if found is not None:
            out[dead.rule.index] = found
        elif code == "W201" and dead.rule.senders:
            waiting.append(dead)
    # a rule whose senders are unreachable only because the rules routing to them are
    # dead (check folds their W201 into those rules' findings): that finding proves it
    system = facts.system
    # agent id -> the rules that route to it, as (place in the system's order, index)
    routing: dict[str, list[tuple[int, int]]] = {}
    for place, r in enumerate(system.rules):
        if isinstance(r.then, m.AgentTarget):
            routing.setdefault(r.then.agent_id, []).append((place, r.index))
    changed = bool(waiting)
    while changed:
        changed = False
        for dead in waiting:
            rule = dead.rule
            if rule.index in out:
                continue
            feeding = min(
                (
                    f
                    for s in rule.senders or ()
                    for f in routing.get(system.ids[s], ())
                    if f[1] in out
                ),
                default=None,
            )
            if feeding is not None:
                out[rule.index] = out[feeding[1]]
                changed = True
    # a terminate rule that follows from another finding (W208, W209, W201) is listed by
    # W210 too: when no finding of that code is printed (``--ignore``, ``select``), or none
    # can be told to be about this rule (two W209s, of two keys it may read), W210 proves it
    w210 = printed.get("W210")
    if w210 is not None:
        for dead in capped_dead_rules(facts):
            if dead.rule.index not in out and listed_by_w210(facts, dead):
                found = _pick(facts, dead, "W210", w210)
                if found is not None:
                    out[dead.rule.index] = found
    return out


def with_proofs(facts: Facts, findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """The findings, each diagnostic carrying the rules it proves never fire (and, for a
    priority trap, the speakers whose turns an earlier rule takes from the rule)."""
    proves: dict[int, list[int]] = {}
    for index, f in dead_rule_findings(facts, findings).items():
        proves.setdefault(id(f), []).append(index)
    traps = {d.rule.index: d for d in capped_dead_rules(facts) if d.trap is not None}
    out = []
    for f in findings:
        proved = proves.get(id(f))
        if proved is None:
            out.append(f)
            continue
        rules = tuple(sorted(proved))
        senders: list[str] = []
        for index in rules:
            senders += _trap_senders(facts, traps.get(index))
        d = f.diagnostic.proving(rules, tuple(dict.fromkeys(senders)))
        out.append(Finding(d, f.run, f.rule))
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
