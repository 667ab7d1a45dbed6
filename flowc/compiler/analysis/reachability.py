"""Checks on who speaks and how runs end: W201, W210, W212, W213."""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler import model as m
from flowc.compiler.analysis.declarations import placed_on
from flowc.compiler.analysis.explore import DEFAULT
from flowc.compiler.analysis.facts import DeadRule, Facts, Finding
from flowc.compiler.analysis.rules import (
    capped_dead_rules,
    listed_by_w210,
    reported_dead_rules,
    sample_run,
    stands_for_its_target,
)
from flowc.compiler.analysis.runs import run_to
from flowc.compiler.quoting import once, ticked
from flowc.diagnostics import W201, W210, W212, W213, counted, listing_of
from flowc.dsl import nodes as n


def check_unreachable_speakers(facts: Facts) -> Iterator[Finding]:
    """W201: a declared speaker can never be scheduled to speak."""
    system = facts.system
    if not facts.complete or not facts.sample_known:
        return
    reported_targets = {
        system.index_of(d.rule.then.agent_id)
        for d in reported_dead_rules(facts)
        if isinstance(d.rule.then, m.AgentTarget) and stands_for_its_target(facts, d)
    }
    for speaker in range(len(system.speakers)):
        if speaker in facts.scheduled or speaker in reported_targets:
            continue
        if speaker in facts.unknown_speakers:
            continue  # I301 names it
        who = system.name(speaker)
        sample = sample_run(facts)
        agent = system.ids[speaker]
        dead_to = [  # dead rules routing to it whose own finding is about a tool (W203)
            d.rule
            for d in reported_dead_rules(facts)
            if isinstance(d.rule.then, m.AgentTarget) and d.rule.then.agent_id == agent
        ]
        yield Finding(
            facts.diag(
                W201,
                f"speaker {once(who)} can never be scheduled to speak: no run routes to it",
                span=facts.speaker_span(speaker),
                json_path=facts.mention(speaker),
                notes=(
                    f"{facts.states_seen}; a shortest run: {sample.shown_under(system.max_turns)}",
                    *listing_of(
                        dead_to,
                        lambda r: f"{system.label(r)} routes to it and never fires (W203)",
                    ),
                ),
                help=f"route to it (`when ... then {who}`), or remove the declaration",
            ),
            sample,
        )


def check_unreachable_terminate(facts: Facts) -> Iterator[Finding]:
    """W210: the flow writes a ``terminate`` but no run reaches one: every run ends at ``max_turns``."""
    system, space = facts.system, facts.space
    if space.truncated or space.ends or system.max_turns is None:
        return
    folded = [d for d in capped_dead_rules(facts) if listed_by_w210(facts, d)]
    if not folded:
        return
    # (at the first rule no other finding is about, if any)
    dead = next((d for d in folded if d.cause is None), folded[0])
    first = dead.rule
    loop = facts.lasso(facts.traps[0]) if facts.traps else facts.sample_run
    loop = loop.upto(system.max_turns)  # (no run of the flow is longer than the cap)
    others = listing_of(folded, lambda d: system.label(d.rule))
    yield Finding(
        facts.diag(
            W210,
            f"no `terminate` is reachable: every run ends at `max_turns {system.max_turns}`",
            span=facts.rule_span(first),
            json_path=first.json_path,
            notes=(
                f"a run that never terminates: {loop.shown_under(system.max_turns)}",
                "these conditions hold on no turn of any run: " + ", ".join(others),
            ),
            help=(
                "make the terminate condition reachable: declare the tool that sets its "
                "context key, or route on a tool"
                if dead.cause is None
                else "make a terminate condition hold on some turn: "
                f"{_cause_finding(facts, dead)} says why this one never does"
            ),
        ),
        loop,
        first.index,
    )


def _cause_finding(facts: Facts, dead: DeadRule) -> str:
    """The finding that says why ``dead`` never fires (it follows from another finding,
    :attr:`DeadRule.cause`), with its line where it has one: ``W201 on line 3``. A sender
    no run reaches gets no W201 when a rule that would route to it is reported as never
    firing (W203, W204) and that finding stands for it (:func:`stands_for_its_target`):
    that finding is named then."""
    code, span = dead.cause, None
    system, rule = facts.system, dead.rule
    written = rule.info.rule if rule.info is not None else None
    if code == "W201" and rule.senders:
        sender = min(rule.senders)
        span = facts.speaker_span(sender)
        for other in reported_dead_rules(facts):
            then = other.rule.then
            if (
                isinstance(then, m.AgentTarget)
                and system.index_of(then.agent_id) == sender
                and stands_for_its_target(facts, other)
            ):
                code = "W204" if other.trap is not None else "W203"
                span = facts.rule_span(other.rule)
                break
    elif code is not None and written is not None:
        span = placed_on(facts, code, written)  # (W208, W209: where that finding is)
    return f"{code} on line {span.line}" if span is not None else str(code)


def check_max_turns(facts: Facts) -> Iterator[Finding]:
    """W212: a terminate is reachable, but only after more turns than ``max_turns`` allows."""
    system = facts.system
    cap = system.max_turns
    if cap is None or not facts.cap_before_every_end:
        return
    shortest = min(facts.end_distances.values())
    run = facts.sample_run  # a shortest run to an end: one that terminates
    span = None
    implied = ""
    flow = facts.flow
    if flow is not None:
        written = [st.span for st in flow.statements if isinstance(st, n.MaxTurnsDecl)]
        steps = [st.span for st in flow.statements if isinstance(st, n.SequenceDecl)]
        if written:
            span = written[0]
        elif steps:
            span, implied = steps[0], " (implied by `sequence`)"
    yield Finding(
        facts.diag(
            W212,
            f"`max_turns {cap}`{implied} is smaller than the shortest run that terminates "
            f"({counted(shortest, 'turn')}):"
            " every run ends at the cap",
            span=span,
            json_path="max_turns",
            notes=(f"a shortest run that terminates: {run.render()}",),
            help=f"raise it to at least the shortest run: `max_turns {shortest}`",
        ),
        run,
    )


def check_silent_after_work(facts: Facts) -> Iterator[Finding]:
    """W213: a speaker's only ways out are model-chosen and the fallback is the implicit default."""
    system, space = facts.system, facts.space
    compiled = system.compiled
    if compiled is None or compiled.default_span is not None or compiled.default_implied:
        return
    cap = system.max_turns
    for speaker, node in sorted(space.plain_default.items()):
        if speaker in system.humans or len(system.actions[speaker]) < 2:
            continue
        if cap is not None and space.dist[node] >= cap:
            continue  # its first such turn comes after the cap closed the run (W215 says it)
        who = system.name(speaker)
        final = next(
            step
            for step in space.explorer.steps(space.keys[node])
            if step.action.is_plain and step.outcome.fired == DEFAULT
        )
        run = run_to(space, node, final)
        tools = ", ".join(f"{ticked(t.name)}" for t in compiled.tools_of(system.speakers[speaker]))
        yield Finding(
            facts.diag(
                W213,
                f"if {once(who)}'s model calls none of its tools ({tools}), no rule matches and the run silently"
                ' ends with "after_work"',
                span=facts.speaker_span(speaker),
                notes=(f"a run that reaches such a turn: {run.render()}",),
                help=f"add a rule for its plain replies (`when from {who} then ...`), or write the `otherwise`",
            ),
            run,
        )
