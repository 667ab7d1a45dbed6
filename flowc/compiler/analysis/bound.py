"""The exploration bound: I301."""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler.analysis.explore import DEFAULT, TURNS_PER_STATE
from flowc.compiler.analysis.facts import Facts, Finding
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
            f"the state space is larger than the bound ({space.bound} abstract states,"
            f" {TURNS_PER_STATE * space.bound} explored turns): findings are partial",
            span=flow_span(facts.flow),
            json_path="" if facts.system.json_mode else None,
            notes=_notes(facts),
            help="raise the bound with `--max-states N` (or `max-states` in `[tool.flowc]`)",
        )
    )


def _notes(facts: Facts) -> tuple[str, ...]:
    """What is and is not known: with a complete symbolic count, who speaks, which rules
    fire and how runs end, for every state; the rest was not reported."""
    found = facts.symbolic
    partial = (
        "unreachable speakers, dead rules and defaults, loops and turn limits are not reported"
    )
    if found is None:
        return (partial,)
    system = facts.system
    notes = [
        f"every state was counted symbolically: {counted(found.states, 'abstract state', grouped=True)}"
        f" (the bound explored {counted(len(facts.space.keys), 'state', grouped=True)} one by one,"
        " which the findings, runs and coverage are built from)"
    ]
    silent = [s for s in range(len(system.speakers)) if s not in found.scheduled]
    if silent:
        notes.append(
            "these speakers can never be scheduled to speak: "
            + ", ".join(listing_of(silent, lambda s: f"`{system.name(s)}`"))
        )
    else:
        notes.append(f"every speaker can be scheduled ({len(system.speakers)})")
    dead = [r for r in system.rules if r.index not in found.fired]
    if dead:
        notes.append("these rules can never fire: " + ", ".join(listing_of(dead, system.label)))
    else:
        notes.append(f"every rule can fire ({counted(len(system.rules), 'rule')})")
    if facts.default_written and DEFAULT not in found.fired:
        notes.append(
            f"the default `otherwise {system.describe_target(system.default)}` is never taken"
        )
    if found.ends:
        ends = sorted(found.ends.items(), key=lambda e: (e[1], str(e[0])))
        notes.append(
            "runs can end: "
            + ", ".join(
                listing_of(
                    ends,
                    lambda e: (
                        (f'"{e[0]}"' if e[0] is not None else "by a custom target")
                        + f" after at least {counted(e[1], 'turn')}"
                    ),
                )
            )
        )
    else:
        notes.append("no run ends before `max_turns`" if system.max_turns else "no run ends")
    notes.append("loops and turn limits are not reported")
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
