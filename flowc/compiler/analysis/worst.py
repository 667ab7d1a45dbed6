"""I307: the most turns a run of the flow takes before it ends, or a run that only
``max_turns`` ends (or, without a cap, a run that never ends), with the run that shows it.

A run's turns are the edges of a path from the kickoff (node 0) in the explored state
space, and an end node (a terminate, a finish, a custom target's close) has no turns
after it, so:

- when the nodes that are not ends hold a loop, a run can go around it for as long as
  it likes: the cap closes some run (a run of exactly ``max_turns`` turns that has not
  ended is shown), and without a cap some run never ends (a run into the loop and once
  around it is shown);
- otherwise those nodes form a graph without cycles, and the longest path from the
  kickoff to each node is found in one pass in topological order. Some run reaches the
  cap when a node that is not an end lies ``max_turns`` turns or more from the kickoff on
  such a path; else every run ends by itself, and the longest path to an end is the
  worst case.

This needs every state: when the exploration stopped at its bound (I301), the worst case
is read from the symbolic count (:meth:`flowc.compiler.analysis.symbolic.Reach.longest`:
the states some run is in after exactly 1, 2, ... turns, up to the cap), with a run read
back from it; a run that never ends (no cap, or one past :data:`MAX_CAP_RUN`) is walked
from the kickoff through the states the count finds on a loop or leading to one until
a state comes again (:meth:`~flowc.compiler.analysis.symbolic.Reach.lasso`). When the
count gave up too, or no run can be shown within :data:`MAX_CAP_RUN` turns, it is said
to be unknown, never guessed from the states explored.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import networkx as nx

from flowc._compat import dd_out_of_memory
from flowc.compiler.analysis.bound import flow_span
from flowc.compiler.analysis.cap import cap_label
from flowc.compiler.analysis.facts import MAX_CAP_RUN, Facts, Finding
from flowc.compiler.analysis.runs import Run, run_along, run_beyond
from flowc.compiler.analysis.symbolic import Reach
from flowc.diagnostics import I307, counted

__all__ = ["WorstCase", "check_worst_case", "worst_case"]


@attrs.frozen
class WorstCase:
    """The worst case of a flow's runs (see :func:`worst_case`)."""

    #: "ends": every run ends by itself, the longest after ``turns`` turns; "cap": some
    #: run goes on until ``max_turns`` closes it (``turns`` is the cap); "endless": no
    #: cap, and some run never ends (``turns`` None)
    kind: str
    turns: int | None
    #: a run that shows it: a longest run to an end; a run of ``max_turns`` turns that
    #: has not ended (a loop once around when the cap is past :data:`MAX_CAP_RUN`); a run
    #: into a loop and once around it
    run: Run


def worst_case(facts: Facts) -> WorstCase | None:
    """The worst case of the flow's runs; None when it is not known (the exploration
    stopped at its bound).

    >>> from flowc import compile_flow
    >>> from flowc.compiler.analysis.explore import explore
    >>> from flowc.compiler.analysis.system import system_of_flow
    >>> system = system_of_flow(compile_flow('''
    ... speaker user: human
    ... speaker bot { tool done sets ok = true }
    ... when context.ok == true then terminate "done"
    ... when from user then bot
    ... when from bot then user
    ... max_turns 10
    ... '''))
    >>> found = worst_case(Facts(system, explore(system, 100), "f.flow"))
    >>> found.kind, found.turns, found.run.render()
    ('cap', 10, 'user → bot → user → bot → user → bot → user → bot → user → bot → user')
    """
    found = _worst(facts)
    return found if isinstance(found, WorstCase) else None


def _worst(facts: Facts) -> WorstCase | str:
    """:func:`worst_case`, or why it is not known."""
    space = facts.space
    cap = facts.system.max_turns
    if space.truncated:
        return _from_count(facts)
    found = space.longest()
    if found.loop:
        return _loop_case(facts, found.order)
    deepest = max(found.order, key=lambda v: (found.depth[v], -v))
    if cap is not None and found.depth[deepest] >= cap:
        path = _chain(found.back, deepest)[: cap + 1]
        return WorstCase("cap", cap, run_along(space, path))
    if found.best_end is None:  # pragma: no cover - a turn always goes somewhere
        return "no run ends"
    turns, before, end = found.best_end
    return WorstCase("ends", turns, run_along(space, [*_chain(found.back, before), end]))


#: why the worst case is not known, when the exploration stopped at its bound
_NO_COUNT = "every state is needed to know the longest run"
_PAST = (
    f"the symbolic count follows every run for up to {counted(MAX_CAP_RUN, 'turn', grouped=True)},"
    " and some run goes on past them"
)
_COUNT_MEMORY = (
    "the symbolic count ran out of the memory it is given while following the runs turn by"
    " turn for the longest (its states were counted: see I301)"
)


def _from_count(facts: Facts) -> WorstCase | str:
    """:func:`worst_case` when the exploration stopped at its bound: from the count (or
    why not). A count that runs out of memory here says so, and leaves the findings of
    the other checks as they are (this check is the last)."""
    found = facts.symbolic
    if found is None or found.reach is None:
        return _NO_COUNT
    try:
        return _counted(facts, found.reach)
    except (MemoryError, RuntimeError, ValueError) as error:
        if not dd_out_of_memory(error):
            raise
        return _COUNT_MEMORY


def _counted(facts: Facts, reach: Reach) -> WorstCase | str:
    cap = facts.system.max_turns
    got = reach.longest(cap, MAX_CAP_RUN)
    if got is not None:
        kind, turns, steps = got
        return WorstCase(kind, turns, run_beyond(facts.space, 0, steps))
    if (cap is not None and cap <= MAX_CAP_RUN) or not reach.cyclic():
        return _PAST  # (no loop, but a run longer than MAX_CAP_RUN turns)
    # a run into a loop and once around it (as the explicit case shows past MAX_CAP_RUN)
    lasso = reach.lasso(MAX_CAP_RUN)
    if lasso is None:
        return _PAST
    steps, loop_from = lasso
    run = attrs.evolve(run_beyond(facts.space, 0, steps), loop_from=loop_from)
    return WorstCase("endless" if cap is None else "cap", cap, run)


def _chain(back: list[int], node: int) -> list[int]:
    """The nodes of the longest path from the kickoff to ``node``."""
    out = [node]
    while out[-1] != 0:
        out.append(back[out[-1]])
    return out[::-1]


def _loop_case(facts: Facts, sorted_nodes: list[int]) -> WorstCase:
    """Some nodes that are not ends lie on a loop (or after one)."""
    space, cap = facts.space, facts.system.max_turns
    if cap is not None and cap <= MAX_CAP_RUN:
        walk = facts.cap_walk
        assert walk is not None, "a loop is reached, so a run reaches the cap"
        return WorstCase("cap", cap, run_along(space, walk))
    done = set(sorted_nodes)
    rest = [v for v in range(len(space.keys)) if v not in done and not space.is_end(v)]
    graph = space.graph.subgraph(rest)
    loops = [
        frozenset(comp)
        for comp in nx.strongly_connected_components(graph)
        if len(comp) > 1 or graph.has_edge(next(iter(comp)), next(iter(comp)))
    ]
    dist = space.dist
    nearest = min(loops, key=lambda comp: min((dist[v], v) for v in comp))
    run = facts.lasso(nearest)
    return WorstCase("endless" if cap is None else "cap", cap, run)


def check_worst_case(facts: Facts) -> Iterator[Finding]:
    """I307: the worst case of the flow's runs, or that it is not known."""
    system = facts.system
    cap = system.max_turns
    label, span = cap_label(facts) if cap is not None else ("", None)
    if span is None:
        span = flow_span(facts.flow)
    path = "max_turns" if cap is not None else ("" if system.json_mode else None)
    found = _worst(facts)
    if isinstance(found, str):
        yield Finding(
            facts.diag(
                I307,
                "the most turns a run takes before it ends is not known: the exploration "
                "stopped at its bound (I301)",
                span=span,
                json_path=path,
                notes=(found,),
                help="raise the bound with `--max-states N` (or `max-states` in `[tool.flowc]`)",
            )
        )
        return
    run = found.run
    if found.kind == "ends":
        within = (
            f"; {label} closes no run"
            if cap is not None
            else "; every run ends by itself, with no `max_turns`"
        )
        message = (
            f"the longest run takes {counted(found.turns or 0, 'turn')} before it ends{within}"
        )
        notes = (f"a longest run: {run.render()}",)
    elif found.kind == "cap":
        message = (
            f"some run does not end by itself: {label} closes it after turn {cap}, so a run "
            f"takes at most {counted(cap or 0, 'turn')}"
        )
        if run.loop_from is None:
            notes = (
                f"a run the cap closes: {run.render()} (after turn {cap} the channel closes "
                f'with "max_turns" before `{run.next}` speaks)',
            )
        else:
            notes = (f"a run that goes around a loop until the cap closes it: {run.render()}",)
    else:
        message = "some run never ends: it can go around a loop, and no `max_turns` closes it"
        notes = (f"a run that never ends: {run.render()}",)
    yield Finding(
        facts.diag(
            I307,
            message,
            span=span,
            json_path=path,
            notes=(*notes, f"{facts.states_seen}, so every run of the flow"),
        ),
        run,
    )
