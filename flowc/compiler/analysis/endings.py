"""E111 from the exploration: a scenario that expects a close reason no run ends with.

Compiling a flow (``flowc.compiler.scenario_checks``) refuses ``expect terminate
"REASON"`` when the flow writes REASON nowhere. A reason the flow does write may still end no run: the
rule that writes it never fires, the (implicit) ``otherwise`` is never reached, the tool
that finishes with it is never called, or every such run is longer than ``max_turns``. Such a scenario could only fail when it
runs, so the reasons some run really ends with are checked too (for every state: when
the exploration stopped at its bound, I301, the symbolic count says which endings are
reached and after how many turns). When that count gave up too, or a custom target may
close a run with a reason of its own choosing, nothing is refused on that basis.

>>> from flowc import compile_flow
>>> flow = compile_flow('''
... speaker user: human
... speaker bot
... start user
... when from user then bot
... when from bot then user
... scenario "ends" {
...   user: "hi"
...   expect terminate "after_work"
... }
... ''')
>>> [(d.code.id, d.span.line) for d in scenario_ending_errors(flow)]
[('E111', 9)]
"""

from __future__ import annotations

from collections.abc import Iterator

from flowc._compat import dd_out_of_memory
from flowc.compiler import model as m
from flowc.compiler.analysis.explore import explore
from flowc.compiler.analysis.facts import CheckOptions, Facts, Finding
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.quoting import ticked
from flowc.compiler.tool_effects import finish_reason, terminate_reason
from flowc.diagnostics import E111, Diagnostic, counted
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_value

__all__ = [
    "CAP_REASON",
    "NO_RUN_ENDS",
    "check_scenario_endings",
    "ending_reasons",
    "scenario_ending_errors",
]

#: how the exploration's E111 begins (compiling's E111s, which stop the check, never do):
#: what tells them apart for :func:`flowc.compiler.analysis.check_status`
NO_RUN_ENDS = "no run of the flow ends with "

#: the reason a run closed by ``max_turns`` ends with
CAP_REASON = "max_turns"


def expected_reasons(compiled: CompiledFlow) -> list[n.ExpectTerminate]:
    """Every ``expect terminate "REASON"`` of the flow's scenarios that names a reason
    (an empty one is refused when the flow is compiled)."""
    return [
        item
        for sc in compiled.scenarios
        for item in sc.items
        if isinstance(item, n.ExpectTerminate)
        and item.reason is not None
        and item.reason.value != ""
    ]


def ending_reasons(facts: Facts) -> frozenset[str] | None:
    """Every reason some run of the flow ends with (within ``max_turns``, which is
    ``"max_turns"`` when a run reaches the cap); None when that is not known: the
    exploration stopped at its bound and the symbolic count gave up too, or a custom
    target chooses a reason itself."""
    if not facts.complete:
        return None
    cap = facts.system.max_turns
    out: set[str] = set()
    for reason, distance in facts.end_distances.items():
        if reason is None:
            return None  # a custom target's terminate: any reason
        if cap is None or distance <= cap:
            out.add(reason)
    if facts.cap_reached:
        out.add(CAP_REASON)
    return frozenset(out)


def check_scenario_endings(facts: Facts) -> Iterator[Finding]:
    """E111: ``expect terminate "REASON"`` where the flow writes REASON but no run ends with it."""
    compiled = facts.system.compiled
    if compiled is None:
        return
    expects = expected_reasons(compiled)
    if not expects:
        return
    reasons = ending_reasons(facts)
    if reasons is None:
        return
    listed = ", ".join(format_value(r) for r in sorted(reasons))
    for item in expects:
        assert item.reason is not None
        want = item.reason.value
        if want in reasons:
            continue
        yield Finding(
            facts.diag(
                E111,
                f"{NO_RUN_ENDS}{format_value(want)}: {_why_not(facts, want)}",
                span=item.reason.span,
                notes=(f"its runs end with {listed}" if listed else "no run of the flow ends",),
                help="expect a reason a run ends with, or `expect terminate` with no reason "
                "(`flowc check` shows what keeps the others from firing)",
            )
        )


def _why_not(facts: Facts, reason: str) -> str:
    """Why no run ends with ``reason``, which the flow writes."""
    system = facts.system
    cap = system.max_turns
    parts: list[str] = []
    if reason == CAP_REASON and cap is not None:
        # a run may end on the cap's own turn: a terminate there keeps its own reason
        parts.append(
            f"every run ends by itself within `max_turns {cap}` (a run that ends on turn "
            f"{cap} keeps its own reason)"
        )
    longer = facts.end_distances.get(reason)
    if longer is not None:  # some run would end with it, after the cap
        parts.append(
            f"the shortest run that would end with it takes {counted(longer, 'turn')}, and "
            f"`max_turns {cap}` closes every run before"
        )
        return "; ".join(parts)
    compiled = system.compiled
    assert compiled is not None
    for rule in system.rules:
        if (
            isinstance(rule.then, m.TerminateTarget)
            and terminate_reason(rule.then.reason) == reason
        ):
            parts.append(f"{system.label(rule)} never fires")
    default = system.default
    if isinstance(default, m.TerminateTarget) and terminate_reason(default.reason) == reason:
        written = f"`otherwise {system.describe_target(default)}`"
        if compiled.default_span is None:
            parts.append(
                f"the implicit default ({written}, as no `otherwise` is written) is never "
                "reached: on every turn of every run a rule matches"
            )
        else:
            parts.append(
                f"{written} (line {compiled.default_span.line}) is never reached: on "
                "every turn of every run a rule matches"
            )
    for tool in compiled.tools:
        for alt in tool.alternatives:
            if alt.finish is not None and finish_reason(alt.finish) == reason:
                parts.append(
                    f"no run has {ticked(tool.speaker)} call {ticked(tool.name)} "
                    f"(`finishes {format_value(alt.finish)}`)"
                )
    return "; ".join(dict.fromkeys(parts)) or "nothing closes a run with it"


def scenario_ending_errors(
    compiled: CompiledFlow, options: CheckOptions | None = None, *, filename: str = "<input>"
) -> tuple[Diagnostic, ...]:
    """The E111 errors :func:`check_scenario_endings` finds, for a command that does not
    otherwise explore the flow before it runs its scenarios (``flowc test``,
    ``scenarios``): the flow is explored only when a scenario expects a close reason."""
    if not expected_reasons(compiled):
        return ()
    system = system_of_flow(compiled)
    space = explore(system, (options or CheckOptions()).max_states)
    try:
        return tuple(f.diagnostic for f in check_scenario_endings(Facts(system, space, filename)))
    except (MemoryError, RuntimeError, ValueError) as error:
        if not space.truncated or not dd_out_of_memory(error):
            raise  # (the symbolic count ran out of memory: decided from the explored states)
    facts = Facts(system, space, filename, symbolic=False)
    return tuple(f.diagnostic for f in check_scenario_endings(facts))
