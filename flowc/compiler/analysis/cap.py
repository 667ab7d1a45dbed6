"""W215: a speaker or rule that only a run longer than ``max_turns`` would reach; W217:
the ``max_turns`` a ``sequence`` implies cuts off runs that go on past its steps.

``max_turns`` is not part of the explored state (see :mod:`.explore`): W201 and W203
ask whether *any* run reaches a speaker or fires a rule. Here the question is whether
a run the cap lets live does: the start speaker's kickoff is turn 1, the turn taken
from a node at distance ``d`` is turn ``d + 1``, and after turn ``max_turns`` the cap
closes every run. Breadth-first exploration finds each speaker's and rule's first
turn, so "first turn > max_turns" is exact. Coverage (``flowc test --coverage``) uses
the same test for its targets, so a rule it calls "not within max_turns" is this
finding's.
"""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler.analysis.explore import DEFAULT
from flowc.compiler.analysis.facts import Facts, Finding
from flowc.compiler.analysis.runs import run_along
from flowc.compiler.quoting import once
from flowc.diagnostics import W215, W217, counted
from flowc.dsl import nodes as n
from flowc.source import Span

__all__ = ["cap_label", "check_after_max_turns", "check_implied_cap"]


def cap_label(facts: Facts) -> tuple[str, Span | None]:
    """``max_turns N`` as the flow writes it (``(implied by `sequence`)``), and where."""
    cap = facts.system.max_turns
    flow = facts.flow
    if flow is not None:
        written = [st.span for st in flow.statements if isinstance(st, n.MaxTurnsDecl)]
        if written:
            return f"`max_turns {cap}`", written[0]
        steps = [st.span for st in flow.statements if isinstance(st, n.SequenceDecl)]
        if steps:
            return f"`max_turns {cap}` (implied by `sequence`)", steps[0]
    return f"`max_turns {cap}`", None


def _implied_by(facts: Facts) -> Span | None:
    """The `sequence` whose ``max_turns`` the flow runs under (it writes none), or None."""
    flow = facts.flow
    if flow is None or facts.system.max_turns is None:
        return None
    if any(isinstance(st, n.MaxTurnsDecl) for st in flow.statements):
        return None
    return next((st.span for st in flow.statements if isinstance(st, n.SequenceDecl)), None)


def check_implied_cap(facts: Facts) -> Iterator[Finding]:
    """W217: a run reaches the ``max_turns`` that a ``sequence`` implies (one per step), so
    the cap closes it with ``"max_turns"``: a rule written beside the sequence (a loop
    back, a retry) routes on from its last step. A plain sequence never gets there (its
    last step ends the run with ``"sequence_complete"``). Said once per flow, with a run
    the cap ends; not when W212 or W215 already say that the cap cuts the runs short."""
    system, space = facts.system, facts.space
    cap = system.max_turns
    span = _implied_by(facts)
    if span is None or cap is None or space.truncated:
        return
    if facts.cap_before_every_end or facts.after_cap_speakers or facts.after_cap_rules:
        return  # W212 / W215 say it
    walk = facts.cap_walk
    if walk is None:
        return
    run = run_along(space, walk)
    last = run.turns[-1]
    label, _ = cap_label(facts)
    routed = (
        f"{system.label(system.rules[last.fired])} routes turn {cap} on to `{run.next}`"
        if last.fired >= 0
        else f"turn {cap} is routed on to `{run.next}`"
    )
    every = not any(space.dist[v] <= cap for v in space.ends)
    if every:
        message = (
            f"{label} ends every run at the cap: no run terminates within "
            f"{counted(cap, 'turn')}, "
            f"and {routed}"
        )
    else:
        message = f"{label} ends some runs at the cap: {routed}, and the cap closes the run"
    yield Finding(
        facts.diag(
            W217,
            message,
            span=span,
            json_path="max_turns",
            notes=(
                f"a run the cap ends: {run.render()} (after turn {cap} the channel closes "
                f'with "max_turns" before `{run.next}` speaks)',
            ),
            help=f"write the cap these runs need (`max_turns N` replaces the implied "
            f"`max_turns {cap}`), or remove what routes on past the sequence's last step",
        ),
        run,
        last.fired if last.fired >= 0 else None,
    )


def check_after_max_turns(facts: Facts) -> Iterator[Finding]:
    """W215: a speaker whose first turn, or a rule whose first firing, comes after the cap."""
    system = facts.system
    cap = system.max_turns
    if cap is None:
        return
    label, _ = cap_label(facts)
    late_speakers = facts.after_cap_speakers
    for speaker, distance in sorted(late_speakers.items()):
        who = system.name(speaker)
        turn = distance + 1
        run = facts.late_speaker_run(speaker)
        yield Finding(
            facts.diag(
                W215,
                f"speaker {once(who)} never speaks: its first turn would be turn {turn}, and {label} "
                f"closes every run after turn {cap}",
                span=facts.speaker_span(speaker),
                json_path=facts.mention(speaker),
                notes=(f"a shortest run to it: {run.render()}",),
                help=f"raise the cap to at least `max_turns {turn}`, or route to {once(who)} sooner",
            ),
            run,
        )
    for fired, distance in sorted(facts.after_cap_rules.items()):
        if facts.folded_into_w212(fired):
            continue  # W212: `max_turns` is smaller than the shortest run that terminates
        found = facts.late_rule_turn(fired)
        if found is None:
            continue  # I301 names it
        speaker, run = found
        if speaker in late_speakers:
            continue  # its speaker never speaks: that finding says it
        turn = distance + 1
        if fired == DEFAULT:
            span, path = facts.default_location()
            what = f"`otherwise {system.describe_target(system.default)}` is never reached"
            index = None
        else:
            rule = system.rules[fired]
            span, path = facts.rule_span(rule), rule.json_path
            what = f"{system.label(rule)} never fires"
            index = rule.index
        yield Finding(
            facts.diag(
                W215,
                f"{what}: the first turn it could route is turn {turn}, and {label} closes every run "
                f"after turn {cap}",
                span=span,
                json_path=path,
                notes=(f"a shortest run to it: {run.render()}",),
                help=f"raise the cap to at least `max_turns {turn}`, or reach this case sooner",
            ),
            run,
            index,
        )
