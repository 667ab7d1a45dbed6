"""The exploration bound: I301."""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler.analysis.explore import DEFAULT, TURNS_PER_STATE
from flowc.compiler.analysis.facts import Facts, Finding
from flowc.compiler.quoting import once
from flowc.diagnostics import I301, counted, listing_of
from flowc.dsl import nodes as n
from flowc.source import NO_SPAN, Span


def check_state_bound(facts: Facts) -> Iterator[Finding]:
    """I301: the state space was larger than the bound, so findings are partial."""
    space = facts.space
    if not space.truncated:
        return
    yield Finding(
        facts.diag(
            I301,
            (
                f"the exploration stopped at {counted(len(space.keys), 'abstract state', grouped=True)},"
                f" at its memory budget ({-(-space.memory_budget // 2**20)} MiB): findings are partial"
                if space.stopped_by == "memory"
                else "the state space is larger than the bound"
                f" ({counted(space.bound, 'abstract state')},"
                f" {counted(TURNS_PER_STATE * space.bound, 'explored turn')}): findings are partial"
            ),
            span=flow_span(facts.flow),
            json_path="" if facts.system.json_mode else None,
            notes=_notes(facts),
            help=(
                "a larger `--max-states` stops at the same memory budget: fewer context keys,"
                " or fewer values per key, make the flow smaller to explore"
                if space.stopped_by == "memory"
                else "raise the bound with `--max-states N` (or `max-states` in `[tool.flowc]`)"
            ),
        )
    )


def _notes(facts: Facts) -> tuple[str, ...]:
    """What is and is not known. With the symbolic count: who can speak, which rules and
    defaults can fire and (when no state is caught in a loop) that no loop traps a run
    are reported for every state; a verdict whose finding is not known is named here
    instead; the other turn limits are not reported."""
    found = facts.symbolic
    if found is None:
        return (
            "unreachable speakers, dead rules and defaults, loops and turn limits are not reported",
        )
    system, space = facts.system, facts.space
    horizon = space.horizon if space.horizon is not None else 0
    notes = [
        f"every state was counted symbolically ({counted(found.states, 'abstract state', grouped=True)});"
        f" explored one by one: {counted(facts.explored, 'state', grouped=True)} (every state"
        f" within {counted(horizon, 'turn')} of the start); a finding's run among them is the one"
        " a complete analysis shows, a longer one is read back from the count (as short, see"
        " `flowc explain I301`)",
    ]
    missing = []
    if not facts.loops_known:
        missing.append("loops (W205, W206, W210)")
    if facts.sample_known:
        reported = [
            "who can speak (W201)",
            "which rules and defaults can fire (W202-W204)",
            "a `max_turns` shorter than every run that terminates (W212)",
            "speakers and rules only a run past the cap reaches (W215)",
            "endings a scenario expects that no run reaches (E111)",
        ]
        if facts.loops_known:
            reported.append("loops no run leaves (W205, W206: there are none)")
        notes.append("reported for every state: " + ", ".join(reported))
        silent = sorted(facts.unknown_speakers)
        if silent:
            notes.append(
                "these speakers can never be scheduled to speak, but whether a rule's finding"
                " says so instead is not known: "
                + ", ".join(listing_of(silent, lambda s: once(system.name(s))))
            )
        unknown_why = "but which finding says so (and its run) is not known"
    else:
        ends = (
            f"every run ends at `max_turns {system.max_turns}`"
            if system.max_turns is not None
            else "no run ends (there is no `max_turns`)"
        )
        notes.append(
            f"no run terminates, finishes or is closed by a custom target: {ends}; the run"
            " that would show each finding below is such a loop, which is not known"
        )
        missing.append("unreachable speakers, dead rules and defaults as findings (W201-W204)")
        notes.append(
            "reported for every state: speakers and rules only a run past the cap reaches"
            " (W215), endings a scenario expects that no run reaches (E111)"
        )
        silent = [s for s in range(len(system.speakers)) if s not in found.scheduled]
        if silent:
            notes.append(
                "these speakers can never be scheduled to speak: "
                + ", ".join(listing_of(silent, lambda s: once(system.name(s))))
            )
        if facts.default_written and not facts.default_fired:
            notes.append(
                f"the default `otherwise {system.describe_target(system.default)}` is never taken"
            )
        unknown_why = "but which finding says so is not known"
    unknown = [r for r in system.rules if r.index in facts.unknown_rules]
    if unknown:
        notes.append(
            f"these rules can never fire, {unknown_why}: "
            + ", ".join(listing_of(unknown, system.label))
        )
    late = sorted(facts.unknown_late)
    if late:
        notes.append(
            "these first fire only after the cap, but whether W215 says so of them or only"
            " of the speaker who would speak then is not known: "
            + ", ".join(
                listing_of(
                    late,
                    lambda f: (
                        f"`otherwise {system.describe_target(system.default)}`"
                        if f == DEFAULT
                        else system.label(system.rules[f])
                    ),
                )
            )
        )
    missing += [
        "a `max_turns` implied by a `sequence` that cuts runs short (W217)",
        "what goes differently on AG2 and plain replies that end the run (W213, W218-W222)"
        " beyond the explored states",
    ]
    notes.append("not reported: " + ", ".join(missing))
    return tuple(notes)


def flow_span(flow: n.Flow | None) -> Span | None:
    """Where a finding about the whole `.flow` file is reported: its ``flow``
    declaration, or else the name of its first speaker (the file's first line when it
    has neither); None for a JSON graph (``flow`` None), whose findings carry a path.

    >>> from flowc.dsl.parser import parse_source
    >>> from flowc.source import SourceFile
    >>> flow, _ = parse_source(SourceFile("f.flow", "# big\\nspeaker a\\nspeaker b\\n"))
    >>> span = flow_span(flow)
    >>> (span.line, span.column, span.end_column)
    (2, 9, 10)
    """
    if flow is None:
        return None
    for st in flow.statements:
        if isinstance(st, n.FlowDecl):
            return st.span
    speakers = flow.speakers()
    if speakers:
        return speakers[0].name.span
    return NO_SPAN
