"""Checks on rules that never fire: W203 (dead rule), W204 (priority trap), W202 (dead default)."""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler import model as m
from flowc.compiler.analysis.facts import DeadRule, Facts, Finding
from flowc.diagnostics import W202, W203, W204, counted

#: default targets AG2's factories and its implicit default write; not reported by W202 in a JSON graph
IMPLIED_DEFAULT_REASONS = frozenset({"after_work", "sequence_complete", "round_robin_complete"})


def reported_dead_rules(facts: Facts) -> tuple[DeadRule, ...]:
    """The dead rules that get their own W203/W204 (not those that follow from another finding)."""
    out = []
    sticky = facts.sticky_rules
    for dead in facts.dead_rules:
        if dead.cause is not None:
            continue
        if dead.shadowed and dead.taken_by in sticky:
            continue  # follows from the sticky loop (W205) of the rule that takes its turns
        if not dead.shadowed and folded_into_w210(facts, dead) \
                and facts.contradiction(dead.rule) is None:
            continue  # W210 lists it; a self-contradiction gets its own W203 with the reason
        out.append(dead)
    return tuple(out)


def folded_into_w210(facts: Facts, dead: DeadRule) -> bool:
    """A terminate rule whose condition never holds is reported by W210 when no run ends."""
    return (
        not dead.shadowed
        and dead.cause is None
        and isinstance(dead.rule.then, m.TerminateTarget)
        and not facts.space.ends
        and facts.system.max_turns is not None
    )


def check_dead_rules(facts: Facts) -> Iterator[Finding]:
    """W203 / W204: a rule can never fire."""
    system = facts.system
    for dead in reported_dead_rules(facts):
        rule = dead.rule
        desc = system.label(rule)
        span = facts.rule_span(rule)
        if dead.trap is not None:
            prio = rule.priority
            yield Finding(
                facts.diag(
                    W204,
                    f"{desc} can never fire: `priority {prio}` sorts it after the rules that take its turns"
                    " (priority sorts ascending: lower numbers run first)",
                    span=span,
                    json_path=rule.json_path,
                    notes=(
                        f"a run that reaches such a turn: {dead.trap.render()}",
                        f"there {facts.describe_fired(dead.trap_taken_by)} fires first; in file order this rule would fire",
                    ),
                    help="lower numbers run first: give this rule `priority -1`, or drop the priority and move it up",
                ),
                dead.trap,
                rule.index,
            )
        elif dead.shadowed:
            assert dead.witness is not None
            yield Finding(
                facts.diag(
                    W203,
                    f"{desc} can never fire: earlier rules (in priority order) take every turn it could match",
                    span=span,
                    json_path=rule.json_path,
                    notes=(
                        f"a run that reaches such a turn: {dead.witness.render()}",
                        f"there {facts.describe_fired(dead.taken_by)} fires first",
                    ),
                    help="remove the rule, or narrow the earlier rule that takes its turns",
                ),
                dead.witness,
                rule.index,
            )
        elif (why := facts.contradiction(rule)) is not None:
            sample = facts.sample_run
            yield Finding(
                facts.diag(
                    W203,
                    f"{desc} can never fire: its condition contradicts itself: {why}",
                    span=span,
                    json_path=rule.json_path,
                    notes=("no sender, tool call or context value makes the whole condition true",
                           f"explored {counted(len(facts.space.keys), 'state')}; a shortest run: {sample.render()}"),
                    help="remove the rule, or join the parts with `or` (or as separate rules) "
                         "if either should route",
                ),
                sample,
                rule.index,
            )
        else:
            sample = facts.sample_run
            yield Finding(
                facts.diag(
                    W203,
                    f"{desc} can never fire: its condition holds on no turn of any run",
                    span=span,
                    json_path=rule.json_path,
                    notes=(
                        f"explored {counted(len(facts.space.keys), 'state')}; a shortest run: {sample.render()}",
                    ),
                    help="remove the rule, or declare the tool or context write its condition waits for",
                ),
                sample,
                rule.index,
            )


def check_dead_default(facts: Facts) -> Iterator[Finding]:
    """W202: a written ``otherwise`` can never be reached."""
    system, space = facts.system, facts.space
    if space.truncated or space.default_fired:
        return
    compiled = system.compiled
    if compiled is not None:
        if compiled.default_span is None:
            return
    elif isinstance(system.default, m.TerminateTarget) and system.default.reason in IMPLIED_DEFAULT_REASONS:
        return
    span, path = facts.default_location()
    sample = facts.sample_run
    target = system.describe_target(system.default)
    yield Finding(
        facts.diag(
            W202,
            f"`otherwise {target}` can never be reached: on every turn of every run some rule matches",
            span=span,
            json_path=path,
            notes=(f"a shortest run: {sample.render()}",),
            help="remove the `otherwise`, or route that case with a rule (e.g. a `context` rule before the `from` rules)",
        ),
        sample,
    )
