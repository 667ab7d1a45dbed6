"""Checks on rules that never fire: W203 (dead rule), W204 (priority trap), W202 (dead default)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import attrs

from flowc.compiler import model as m
from flowc.compiler.analysis.facts import DeadRule, Facts, Finding
from flowc.compiler.analysis.runs import Run
from flowc.compiler.analysis.system import Action, RuleSpec
from flowc.compiler.quoting import once, ticked
from flowc.diagnostics import W202, W203, W204, Code
from flowc.dsl.formatter import format_name, format_value

#: default targets AG2's factories and its implicit default write; not reported by W202 in a JSON graph
IMPLIED_DEFAULT_REASONS = frozenset({"after_work", "sequence_complete", "round_robin_complete"})


def trap_priority(others: Iterable[int]) -> int:
    """The priority that sorts a priority-trapped rule (W204) first, given the priorities
    written on the other rules: ``-1``, or one below the lowest of them when that is
    lower (a rule is tried after every rule of a lower priority, wherever it is written).
    ``flowc check``'s help and the language server's quick fix both say this one.

    >>> trap_priority([100, 0]), trap_priority([-5, -5, 3])
    (-1, -6)
    """
    return min([0, *others]) - 1


def trap_help(others: Iterable[int]) -> str:
    """W204's help: the priority of :func:`trap_priority`; dropping the priority and moving
    the rule up sorts it first only when no other rule has a priority below 0.

    >>> trap_help([-5])
    'lower numbers run first: give this rule `priority -6`, below the lowest priority written (`priority -5`)'
    """
    value = trap_priority(others)
    if value == -1:
        return "lower numbers run first: give this rule `priority -1`, or drop the priority and move it up"
    return (
        f"lower numbers run first: give this rule `priority {value}`, below the lowest "
        f"priority written (`priority {value + 1}`)"
    )


def _other_priorities(facts: Facts, rule: RuleSpec) -> list[int]:
    """The priorities of the rules other than ``rule`` (of a `.flow`: written on other
    statements; a rule written with `or` is one statement)."""
    written = rule.info.rule if rule.info is not None else None
    return [
        r.priority
        for r in facts.system.rules
        if r.index != rule.index
        and (written is None or r.info is None or r.info.rule is not written)
    ]


def sample_run(facts: Facts) -> Run:
    """:attr:`Facts.sample_run` as the cap closes it (:meth:`Run.upto`): where every end
    comes after the cap (W212's case), its first ``max_turns`` turns, never a run longer
    than the flow has; the sample run of W201, W202 and W203."""
    return facts.sample_run.upto(facts.system.max_turns)


def capped_dead_rules(facts: Facts) -> tuple[DeadRule, ...]:
    """:attr:`Facts.dead_rules` as the runs within ``max_turns`` show them (a run longer
    than the cap is no run of the flow): a priority trap whose turn comes after the cap
    is a plain shadowed rule (within the cap the priority takes nothing from it); a rule
    whose condition first holds after the cap holds on no turn of any run (still W203,
    never shown with a run the cap cuts off)."""
    cap = facts.system.max_turns
    if cap is None:
        return facts.dead_rules
    return facts.once(
        "capped dead rules", lambda: tuple(_within_cap(d, cap) for d in facts.dead_rules)
    )


def _within_cap(dead: DeadRule, cap: int) -> DeadRule:
    if dead.witness is not None and len(dead.witness.turns) > cap:
        return attrs.evolve(
            dead, shadowed=False, witness=None, taken_by=None, trap=None, trap_taken_by=None
        )
    if dead.trap is not None and len(dead.trap.turns) > cap:
        return attrs.evolve(dead, trap=None, trap_taken_by=None)
    return dead


def reported_dead_rules(facts: Facts) -> tuple[DeadRule, ...]:
    """The dead rules that get their own W203/W204 (not those that follow from another
    finding); worked out once per check run (W201 asks too)."""
    return facts.once("reported dead rules", lambda: _reported_dead_rules(facts))


def _reported_dead_rules(facts: Facts) -> tuple[DeadRule, ...]:
    out = []
    sticky = facts.sticky_rules
    for dead in capped_dead_rules(facts):
        if dead.cause is not None:
            continue
        if dead.shadowed and dead.taken_by in sticky:
            continue  # follows from the sticky loop (W205) of the rule that takes its turns
        if (
            not dead.shadowed
            and folded_into_w210(facts, dead)
            and facts.contradiction(dead.rule) is None
        ):
            continue  # W210 lists it; a self-contradiction gets its own W203 with the reason
        out.append(dead)
    return tuple(out)


def stands_for_its_target(facts: Facts, dead: DeadRule) -> bool:
    """Whether the finding of a reported dead rule that routes to a speaker no run reaches
    says why that speaker never speaks (W201 is folded into it then). Not when its
    condition waits for calls of tools that always hand the turn off or end the run: the
    turn goes where the tool says, the W203 is about the tool, and that the rule's target
    is left with no run that routes to it is a finding of its own (W201)."""
    rule = dead.rule
    return (
        dead.shadowed
        or dead.trap is not None
        or facts.contradiction(rule) is not None
        or facts.unrouted_calls(rule) is None
        or _called_late(facts, rule)
    )


def folded_into_w210(facts: Facts, dead: DeadRule) -> bool:
    """A terminate rule whose condition never holds, in a flow where no run ends, that no
    other finding is about (:attr:`DeadRule.cause`): W210 reports it, and it gets no W203
    of its own unless its condition contradicts itself. (One that follows from another
    finding gets no W203 either: that finding reports it, and W210 lists it too,
    :func:`listed_by_w210`.)"""
    return dead.cause is None and listed_by_w210(facts, dead)


def listed_by_w210(facts: Facts, dead: DeadRule) -> bool:
    """A terminate rule whose condition holds on no turn, in a flow with a cap where no run
    ends: W210 lists it, also when that follows from another finding (an unset key, W209;
    an unknown tool, W208; senders no run reaches, W201), which says why, not that every
    run then ends at the cap."""
    return (
        not dead.shadowed
        and isinstance(dead.rule.then, m.TerminateTarget)
        and not facts.has_ends
        and facts.system.max_turns is not None
    )


def check_dead_rules(facts: Facts) -> Iterator[Finding]:
    """W203 / W204: a rule can never fire."""
    for dead in reported_dead_rules(facts):
        rule = dead.rule
        if dead.trap is not None:
            prio = rule.priority
            why = (
                f"`priority {prio}` sorts it after the rules that take its turns"
                " (priority sorts ascending: lower numbers run first)"
            )
            yield _never_fires(
                facts,
                rule,
                W204,
                why,
                dead.trap,
                (
                    f"a run that reaches such a turn: {dead.trap.render()}",
                    f"there {facts.describe_fired(dead.trap_taken_by)} fires first; in file order this rule would fire",
                ),
                trap_help(_other_priorities(facts, rule)),
            )
        elif dead.shadowed:
            assert dead.witness is not None
            yield _never_fires(
                facts,
                rule,
                W203,
                "earlier rules (in priority order) take every turn it could match",
                dead.witness,
                (
                    f"a run that reaches such a turn: {dead.witness.render()}",
                    f"there {facts.describe_fired(dead.taken_by)} fires first",
                ),
                "remove the rule, or narrow the earlier rule that takes its turns",
            )
        elif (parts := facts.contradiction(rule)) is not None:
            sample = sample_run(facts)
            yield _never_fires(
                facts,
                rule,
                W203,
                f"its condition contradicts itself: {parts}",
                sample,
                (
                    "no sender, tool call or context value makes the whole condition true",
                    f"{facts.states_seen}; a shortest run: {sample.shown_under(facts.system.max_turns)}",
                ),
                "remove the rule, or join the parts with `or` (or as separate rules) "
                "if either should route",
            )
        elif (calls := facts.unrouted_calls(rule)) is not None and not _called_late(facts, rule):
            call = facts.first_call(rule)
            why, help = _unrouted(facts, rule, calls)
            sample = call or sample_run(facts)
            note = (
                f"a shortest run that calls it: {sample.shown_under(facts.system.max_turns)}"
                if call is not None
                else f"{facts.states_seen}; a shortest run: {sample.shown_under(facts.system.max_turns)}"
            )
            yield _never_fires(facts, rule, W203, why, sample, (note,), help)
        else:
            sample = sample_run(facts)
            yield _never_fires(
                facts,
                rule,
                W203,
                "its condition holds on no turn of any run",
                sample,
                (
                    f"{facts.states_seen}; a shortest run: {sample.shown_under(facts.system.max_turns)}",
                ),
                "remove the rule, or declare the tool or context write its condition waits for",
            )


def _called_late(facts: Facts, rule: RuleSpec) -> bool:
    """Whether the tools ``rule`` routes on are called only after ``max_turns`` closed
    every run (then its condition holds on no turn of any run)."""
    call, cap = facts.first_call(rule), facts.system.max_turns
    return call is not None and cap is not None and len(call.turns) > cap


def _never_fires(
    facts: Facts,
    rule: RuleSpec,
    code: Code,
    why: str,
    run: Run,
    notes: tuple[str, ...],
    help: str,
) -> Finding:
    """W203 or W204 on ``rule``: "RULE can never fire: WHY", with the run that shows it
    (``notes`` say what happens on it) and what to do about it (``help``)."""
    return Finding(
        facts.diag(
            code,
            f"{facts.system.label(rule)} can never fire: {why}",
            span=facts.rule_span(rule),
            json_path=rule.json_path,
            notes=notes,
            help=help,
            explanation=why,
        ),
        run,
        rule.index,
    )


def _unrouted(
    facts: Facts, rule: RuleSpec, calls: tuple[tuple[str, tuple[Action, ...]], ...]
) -> tuple[str, str]:
    """W203's explanation and help for a rule that waits for calls of tools that always
    finish the run or hand the turn off (:meth:`Facts.unrouted_calls`): such a turn is
    decided by the tool's effect, and the rules are not tried on it."""
    system = facts.system
    effects: dict[str, None] = {}
    finishes = handoffs = False
    for _, actions in calls:
        for action in actions:
            if action.finish is not None:
                finishes = True
                effects[f"`finishes {format_value(action.finish)}`"] = None
            else:
                assert action.handoff is not None
                handoffs = True
                effects[f"`hands off to {system.name(action.handoff)}`"] = None
    names = " or ".join(f"{ticked(tool)}" for tool, _ in calls)
    does = (
        "ends the run or hands the turn off"
        if finishes and handoffs
        else "ends the run"
        if finishes
        else "hands the turn off"
    )
    why = (
        f"every call of {names} {does} ({', '.join(effects)}) before the rules are tried, "
        "so no rule ever sees such a turn"
    )
    first = format_name(calls[0][0])
    if finishes and len(calls) == 1 and isinstance(rule.then, m.TerminateTarget) and not handoffs:
        reason = format_value(rule.then.reason)
        help = (
            f"remove the rule: the tool's `finishes` effect already closes the run; to close it "
            f"with {reason}, declare `tool {first} finishes {reason}`"
        )
    else:
        effect = (
            "`finishes`"
            if finishes and not handoffs
            else "`hands off to`"
            if not finishes
            else "`finishes` / `hands off to`"
        )
        help = (
            f"remove the rule, or, if the rules should route calls of {once(first)}, give it an "
            f"alternative without {effect}"
        )
    return why, help


def check_dead_default(facts: Facts) -> Iterator[Finding]:
    """W202: a written ``otherwise`` can never be reached."""
    system = facts.system
    if not facts.complete or facts.default_fired or not facts.sample_known:
        return
    compiled = system.compiled
    if compiled is not None:
        if compiled.default_span is None:
            return
    elif (
        isinstance(system.default, m.TerminateTarget)
        and system.default.reason in IMPLIED_DEFAULT_REASONS
    ):
        return
    span, path = facts.default_location()
    sample = sample_run(facts)
    target = system.describe_target(system.default)
    yield Finding(
        facts.diag(
            W202,
            f"`otherwise {target}` can never be reached: on every turn of every run some rule matches",
            span=span,
            json_path=path,
            notes=(f"a shortest run: {sample.shown_under(facts.system.max_turns)}",),
            help="remove the `otherwise`, or route that case with a rule (e.g. a `context` rule before the `from` rules)",
        ),
        sample,
    )
