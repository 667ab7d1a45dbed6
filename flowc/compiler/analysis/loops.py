"""Checks on loops that no run can leave: W205 (sticky context loop), W206 (non-termination)."""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from flowc.compiler.analysis.explore import DEFAULT, Step, evaluate
from flowc.compiler.analysis.facts import Facts, Finding
from flowc.compiler.analysis.system import OTHER, UNSET, RuleSpec
from flowc.compiler.quoting import once
from flowc.diagnostics import W205, W206, counted, listing_of
from flowc.dsl.formatter import format_name, format_value


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
        cap = system.max_turns
        if cap is not None and len(run.turns) >= cap:  # the cap closes it before it goes round
            run = attrs.evolve(run.upto(cap), loop_from=None)  # (a run of `cap` turns)
        members = sorted({format_name(system.speakers[facts.space.speaker_of(v)]) for v in comp})
        name = format_name(system.keys[key])
        held = sorted({facts.space.keys[v][1][key] for v in comp})
        value = " or ".join(system.show_value(key, v) for v in held)
        still = (
            "nobody on the loop ({}) can change it"
            if len(held) == 1
            else "nothing anyone on the loop ({}) writes to it stops the rule matching"
        ).format(", ".join(members))
        ends = (
            f"only at `max_turns {system.max_turns}`"
            if system.max_turns
            else "never (there is no `max_turns`)"
        )
        yield Finding(
            facts.diag(
                W205,
                f"sticky context loop: {system.label(rule)} keeps routing while {once(name)} stays {value},"
                f" and {still}; the run ends {ends}",
                span=facts.rule_span(rule),
                notes=(
                    f"a run that enters the loop: {run.shown_under(cap)}",
                    *listing_of(
                        taken.get(rule.index, []),
                        lambda r: f"so {system.label(r)} never fires",
                        more="more rules never fire for the same reason",
                        one="more rule never fires for the same reason",
                    ),
                ),
                help=_sticky_help(facts, comp, rule, key, members[0]),
            ),
            run,
            rule.index,
        )


def _sticky_help(facts: Facts, comp: frozenset[int], rule: RuleSpec, key: int, speaker: str) -> str:
    """W205's fix: a `from` rule first, or a tool whose write to ``key`` stops ``rule``
    matching on every turn it routes in the loop (the key cleared, else set to a value the
    flow compares it with, else to one it does not), checked against the rule's
    condition; when no write does, only the `from` rule."""
    system, space = facts.system, facts.space
    name = format_name(system.keys[key])
    tool, n = "done", 1
    while tool in system.tool_names:  # a tool of its own (a speaker's `done` may clear it)
        n += 1
        tool = f"done_{n}"
    fresh = len(system.tool_names)  # the routing tool of a turn that calls the new tool
    turns = [
        (space.speaker_of(u), step)
        for u in sorted(comp)
        for step in space.explorer.steps(space.keys[u])
        if step.outcome.fired == rule.index
    ]

    def stops(value: int, sender: int, step: Step) -> bool:
        after = (*step.after[:key], value, *step.after[key + 1 :])
        return evaluate(rule.code, sender, fresh, after, dict(step.outcome.assumed)) is False

    for value in (UNSET, *range(2, 2 + len(system.literals[key])), OTHER):
        if turns and all(stops(value, sender, step) for sender, step in turns):
            if value == UNSET:
                write, what = f"clears {name}", "clears it"
            else:
                shown = (
                    format_value(system.value_outside(key))
                    if value == OTHER
                    else system.show_value(key, value)
                )
                write, what = f"sets {name} = {shown}", f"sets it to {shown}"
            return (
                "put a `from` rule for the loop's speaker before this rule, or declare a tool that"
                f" {what} (`tool {format_name(tool)} {write}`) on {speaker}"
            )
    return (
        "put a `from` rule for the loop's speaker before this rule (no write to"
        f" {once(name)} stops the rule matching)"
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
