"""Checks on loops that no run can leave: W205 (sticky context loop), W206 (non-termination)."""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler.analysis.explore import DEFAULT
from flowc.compiler.analysis.facts import Facts, Finding
from flowc.compiler.analysis.system import RuleSpec
from flowc.diagnostics import W205, W206, counted, listing_of
from flowc.dsl.formatter import format_name


def check_sticky_loops(facts: Facts) -> Iterator[Finding]:
    """W205: a context condition keeps routing into a loop nobody on it can leave."""
    system = facts.system
    seen: set[int] = set()
    taken: dict[int, list[RuleSpec]] = {}  # sticky rule -> the dead rules it takes
    for d in facts.dead_rules:
        if d.shadowed and d.cause is None and d.taken_by is not None:
            taken.setdefault(d.taken_by, []).append(d.rule)
    for comp in facts.traps:
        found = facts.sticky(comp)
        if found is None:
            continue
        rule, key = found
        if rule.index in seen:
            continue
        seen.add(rule.index)
        run = facts.lasso(comp, via=rule.index)
        members = sorted({format_name(system.speakers[facts.space.speaker_of(v)]) for v in comp})
        name = format_name(system.keys[key])
        value = system.show_value(key, facts.space.keys[min(comp)][1][key])
        ends = (
            f"only at `max_turns {system.max_turns}`"
            if system.max_turns
            else "never (there is no `max_turns`)"
        )
        yield Finding(
            facts.diag(
                W205,
                f"sticky context loop: {system.label(rule)} keeps routing while `{name}` stays {value},"
                f" and nobody on the loop ({', '.join(members)}) can change it; the run ends {ends}",
                span=facts.rule_span(rule),
                notes=(
                    f"a run that enters the loop: {run.render()}",
                    *listing_of(
                        taken.get(rule.index, []),
                        lambda r: f"so {system.label(r)} never fires",
                        more="more rules never fire for the same reason",
                        one="more rule never fires for the same reason",
                    ),
                ),
                help=f"put a `from` rule for the loop's speaker before this rule, or declare a tool that"
                f" clears it (`tool done clears {name}`) on {members[0]}",
            ),
            run,
            rule.index,
        )


def check_non_termination(facts: Facts) -> Iterator[Finding]:
    """W206: a reachable loop has no exit and there is no ``max_turns``."""
    system = facts.system
    if system.max_turns is not None:
        return
    loops = [comp for comp in facts.traps if facts.sticky(comp) is None]
    if not loops:
        return
    comp = loops[0]
    run = facts.lasso(comp)
    fired = facts.loop_rules(comp)
    rules = [system.rules[f] for f in fired if f >= 0]
    span, path = (
        (facts.rule_span(rules[0]), rules[0].json_path) if rules else facts.default_location()
    )
    if DEFAULT in fired and not rules:
        span, path = facts.default_location()
    notes = [f"a run that never ends: {run.render()}"]
    if len(loops) > 1:
        notes.append(f"{counted(len(loops) - 1, 'more loop')} without an exit")
    yield Finding(
        facts.diag(
            W206,
            "the flow may never terminate: a reachable loop has no exit and there is no `max_turns`",
            span=span,
            json_path=path,
            notes=tuple(notes),
            help="add `max_turns 20`, or a rule that terminates the loop",
        ),
        run,
        rules[0].index if rules else None,
    )
