"""The exploration bound: I301."""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler.analysis.explore import TURNS_PER_STATE
from flowc.compiler.analysis.facts import Facts, Finding
from flowc.diagnostics import I301


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
            json_path="" if facts.system.json_mode else None,
            notes=(
                "unreachable speakers, dead rules and defaults, loops and turn limits are not reported",
            ),
            help="raise the bound with `--max-states N` (or `max-states` in `[tool.flowc]`)",
        )
    )
