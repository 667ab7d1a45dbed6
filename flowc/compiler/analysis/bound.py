"""The exploration bound: I301."""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler.analysis.explore import TURNS_PER_STATE
from flowc.compiler.analysis.facts import Facts, Finding
from flowc.diagnostics import I301
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
            notes=(
                "unreachable speakers, dead rules and defaults, loops and turn limits are not reported",
            ),
            help="raise the bound with `--max-states N` (or `max-states` in `[tool.flowc]`)",
        )
    )


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
