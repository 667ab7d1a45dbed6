"""Counterexample runs: the turns from the kickoff to the state a finding is about.

A :class:`Run` is concrete enough to replay on a stepper (who spoke, which tool,
which context writes, what custom conditions were assumed) and prints as
``user → drafter → reviewer (approve) → drafter``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any, TypeVar, overload

import attrs

from flowc.compiler.analysis.explore import KICKOFF, StateSpace, Step
from flowc.compiler.analysis.system import OTHER, UNSET, System, Valuation
from flowc.compiler.quoting import ticked
from flowc.diagnostics import RunPath, counted, elide
from flowc.dsl.formatter import format_name, format_value


@attrs.frozen
class Turn:
    """One turn of a run."""

    speaker: str
    tool: str | None = None
    sets: tuple[tuple[str, Any], ...] = ()
    clears: tuple[str, ...] = ()
    handoff: str | None = None
    finish: str | None = None
    #: custom conditions assumed on this turn: (call, value)
    assumed: tuple[tuple[str, bool], ...] = ()
    #: how a custom target resolved on this turn: a speaker, or None for terminate
    custom_choice: tuple[str | None] | None = None
    #: the custom target's call that resolved so (``pick(role = "x")``), with ``custom_choice``
    call: str | None = None
    #: the rule (file index) that routed this turn; -1 default, -2 handoff, -3 finish
    fired: int = -1

    @cached_property
    def shown(self) -> str:
        """The label as a run prints it (cut to a bounded length); a turn object is shared
        by every run through it, so it is formatted once."""
        return elide(self.label())

    def label(self) -> str:
        name = format_name(self.speaker)
        parts: list[str] = []
        if self.tool is not None:
            parts.append(format_name(self.tool))
        if self.tool is None:
            parts += [f"sets {format_name(k)} = {format_value(v)}" for k, v in self.sets]
            parts += [f"clears {format_name(k)}" for k in self.clears]
        parts += [f"{call} is {'true' if value else 'false'}" for call, value in self.assumed]
        return f"{name} ({'; '.join(parts)})" if parts else name


#: a counterexample run longer than this prints its first and last turns only, so
#: that findings on a long chain do not each repeat the whole chain
MAX_SHOWN_TURNS = 30


_T = TypeVar("_T")
_M = TypeVar("_M")


@overload
def shown_turns(turns: Sequence[str]) -> list[str]: ...
@overload
def shown_turns(turns: Sequence[_T], more: Callable[[str], _M]) -> list[_T | _M]: ...
def shown_turns(turns: Sequence[Any], more: Callable[[str], Any] = str) -> list[Any]:
    """A run's turns as shown: past :data:`MAX_SHOWN_TURNS`, its first and last turns only,
    with how many are left out between them (``"(N more turns)"``, made an item by
    ``more``). The turns are kept as they are: a caller that formats them formats only
    the ones shown.

    >>> shown_turns([f"s{i}" for i in range(40)])[14:17]
    ['s14', '(10 more turns)', 's25']
    >>> shown_turns(range(40), str.upper)[14:17]
    [14, '(10 MORE TURNS)', 25]
    """
    if len(turns) <= MAX_SHOWN_TURNS:
        return list(turns)
    half = MAX_SHOWN_TURNS // 2
    left_out = len(turns) - 2 * half
    text = f"({counted(left_out, 'more turn', 'more turns', grouped=True)})"
    return [*turns[:half], more(text), *turns[-half:]]


@attrs.frozen
class Run:
    """A run from the kickoff; ``next`` is who is scheduled after the last turn."""

    turns: tuple[Turn, ...]
    next: str | None  # None: the run ended
    reason: str | None = None  # the close reason when it ended
    #: a lasso: turns[loop_from:] repeat forever
    loop_from: int | None = None

    def upto(self, cap: int | None) -> Run:
        """The run as ``max_turns cap`` closes it: its first ``cap`` turns, the speaker of
        the next one scheduled (itself when it is no longer, or there is no cap). Where
        every end comes after the cap (W212's case), a finding's sample run is this: a
        run a finding shows is one the flow has.

        >>> Run(tuple(Turn(s) for s in "abab"), "a", loop_from=2).upto(3).render()
        'a → b → a → b'
        """
        if cap is None or len(self.turns) <= cap:
            return self
        return Run(self.turns[:cap], self.turns[cap].speaker)

    def shown_under(self, cap: int | None) -> str:
        """:meth:`render`, and when ``max_turns cap`` closes the run (its ``cap`` turns
        taken, no more, and a speaker scheduled next) who it stops: a run a finding shows
        as a sample may stop at the cap before the speaker it ends on speaks.

        >>> Run((Turn("a"), Turn("b")), "c").shown_under(2)
        'a → b → c (`max_turns 2` closes it before `c` speaks)'
        >>> Run((Turn("a"), Turn("b")), "c").shown_under(3), Run((Turn("a"),), None).shown_under(1)
        ('a → b → c', 'a → terminate')
        """
        # (a run longer than the cap is no run of the flow: see upto)
        if self.next is None or self.loop_from is not None or len(self.turns) != cap:
            return self.render()
        return f"{self.render()} (`max_turns {cap}` closes it before {ticked(self.next)} speaks)"

    def path(self, subject: str) -> RunPath:
        """The run as plain values, for a diagram to draw (see :class:`RunPath`).

        >>> Run((Turn("a", fired=0), Turn("b", "t", fired=-3)), None, "done").path("p").steps
        (('a', 0, None), ('b', -3, 't'))
        """
        return RunPath(
            subject,
            tuple((t.speaker, t.fired, t.tool) for t in self.turns),
            self.next,
            self.reason,
            self.loop_from,
        )

    def render(self) -> str:
        """The run as ``a → b (tool) → c``; a long run keeps its start and its end.

        >>> Run(tuple(Turn(f"s{i}") for i in range(100)), "s100").render().count("→")
        31
        """
        return self._text

    @cached_property
    def _text(self) -> str:  # a run is often the evidence of many findings: written once
        items = shown_turns([t.shown for t in self.turns])
        if self.next is not None:
            items.append(format_name(self.next))
        elif self.reason is not None:
            items.append(f"terminate {format_value(self.reason)}")
        else:
            items.append("terminate")
        if self.loop_from is not None:
            items.append("…")
        return " → ".join(items)


def _other_value(literals: tuple[Any, ...]) -> str:
    """A string equal to none of ``literals``: a concrete "another value".

    >>> _other_value(("other", 1))
    'other 2'
    """
    value, i = "other", 1
    while value in literals:
        i += 1
        value = f"other {i}"
    return value


def _turn(system: System, speaker: int, before: Valuation | None, step: Step) -> Turn:
    action = step.action
    sets: tuple[tuple[str, Any], ...] = action.sets
    clears: tuple[str, ...] = action.clears
    if (system.json_mode or action.any_writes) and (before is None or before != step.after):
        # a JSON graph's turn (or a human's) writes whatever differs from the valuation before it
        s: list[tuple[str, Any]] = []
        c: list[str] = []
        for k, value in enumerate(step.after):
            if before is not None and before[k] == value:
                continue
            if value == UNSET:
                c.append(system.keys[k])
            elif value != OTHER:
                s.append((system.keys[k], system.literals[k][value - 2]))
            elif action.any_writes:  # a value no condition compares with
                s.append((system.keys[k], _other_value(system.literals[k])))
        sets, clears = tuple(s), tuple(c)
    out = step.outcome
    atoms = {a.id: a.label for a in system.atoms}
    choice: tuple[str | None] | None = None
    if out.choice is not None:
        choice = (system.speakers[out.speaker] if out.speaker >= 0 else None,)
    return Turn(
        speaker=system.speakers[speaker],
        tool=action.tool,
        sets=sets,
        clears=clears,
        handoff=system.speakers[action.handoff] if action.handoff is not None else None,
        finish=action.finish,
        assumed=tuple((atoms[i], v) for i, v in out.assumed),
        custom_choice=choice,
        call=out.call if choice is not None else None,
        fired=out.fired,
    )


def run_along(
    space: StateSpace,
    path: list[int],
    final: Step | None = None,
    loop_from: int | None = None,
    chosen: dict[int, Step] | None = None,
) -> Run:
    """The run through the nodes of ``path`` (from node 0); ``final`` adds one more turn.

    ``chosen`` fixes the turn taken from ``path[i]`` (otherwise the first that leads on).

    The turns of a breadth-first path (from node 0, along ``parent`` links, none chosen)
    are made once per node and shared by every run through it
    (:attr:`StateSpace.tree_turns`): thousands of findings on one flow share their
    runs' beginnings.
    """
    turns, val = _turns_along(space, path, chosen)
    return _ending(space, tuple(turns), val, path[-1], final, loop_from)


def run_to(space: StateSpace, node: int, final: Step | None = None) -> Run:
    """``run_along(space, space.path_to(node), final)``: the breadth-first (shortest) run
    to ``node``, whose turns are kept per node asked (many findings end at one node, and
    findings on a long chain end at nodes one turn apart: a node's turns are its parent's
    and one more)."""
    found = space.tree_runs.get(node)
    if found is None:
        prev = space.tree_runs.get(space.parent[node]) if node else None
        if prev is not None:
            last, val = _tree_turn(space, space.parent[node], node, prev[1])
            found = (prev[0] + (last,), val)
        else:
            turns, val = _turns_along(space, space.path_to(node), None)
            found = (tuple(turns), val)
        space.tree_runs[node] = found
    return _ending(space, found[0], found[1], node, final, None)


def _tree_turn(
    space: StateSpace, u: int, v: int, val: Valuation | None
) -> tuple[Turn, Valuation | None]:
    """The turn from ``u`` to its child ``v`` on the breadth-first tree (``val``: the
    valuation at ``u`` on the tree path), made once per node."""
    hit = space.tree_turns.get(v)
    if hit is None:
        step = space.step_between(u, v)
        hit = space.tree_turns[v] = (
            _turn(space.system, space.speaker_of(u), val, step),
            step.after,
        )
    return hit[0], hit[1]


def _turns_along(
    space: StateSpace, path: list[int], chosen: dict[int, Step] | None
) -> tuple[list[Turn], Valuation | None]:
    """The turns through ``path`` and the valuation after the last."""
    system = space.system
    turns: list[Turn] = []
    val: Valuation | None = system.initial
    parent = space.parent
    on_tree = bool(path) and path[0] == 0
    # a long run takes the same few turns again and again: each (node, step, valuation
    # before) is made into a turn once (turns are values: a run may hold one twice)
    made: dict[tuple[int, int, Valuation | None], tuple[Step, Turn]] = {}
    for i, (u, v) in enumerate(itertools.pairwise(path)):
        step = chosen.get(i) if chosen else None
        if on_tree and step is None and v and parent[v] == u:
            # the same turn, from the same valuation, on every run down the tree
            turn, val = _tree_turn(space, u, v, val)
            turns.append(turn)
            continue
        on_tree = False
        step = step or space.step_between(u, v)
        # (keyed by the step's id: ``made`` keeps the step, so no other takes its id)
        key = (u, id(step), val)
        hit = made.get(key)
        if hit is None:
            hit = made[key] = (step, _turn(system, space.speaker_of(u), val, step))
        turns.append(hit[1])
        val = step.after
    return turns, val


def _ending(
    space: StateSpace,
    turns: tuple[Turn, ...],
    val: Valuation | None,
    last: int,
    final: Step | None,
    loop_from: int | None,
) -> Run:
    """The run of ``turns`` (ending at node ``last``), with the ``final`` turn if any."""
    system = space.system
    if final is not None:
        turns += (_turn(system, space.speaker_of(last), val, final),)
        out = final.outcome
        nxt = system.speakers[out.speaker] if out.speaker >= 0 else None
        return Run(turns, nxt, out.reason if out.speaker < 0 else None, loop_from)
    key = space.keys[last]
    if key[0] == "end":
        return Run(turns, None, key[1], loop_from)
    who = system.start if key == KICKOFF else int(key[0])
    return Run(turns, system.speakers[who], None, loop_from)


def run_beyond(space: StateSpace, node: int, steps: list[tuple[int, Step]]) -> Run:
    """The breadth-first run to ``node``, then the turns ``steps`` ((speaker, step) each,
    the first from ``node``'s state): a run to a state the exploration did not reach,
    read from the symbolic explorer's layers (:meth:`symbolic.Reach.path_to`)."""
    if not steps:
        return run_to(space, node)
    run_to(space, node)
    turns, val = space.tree_runs[node]
    system = space.system
    more = list(turns)
    for speaker, step in steps:
        more.append(_turn(system, speaker, val, step))
        val = step.after
    out = steps[-1][1].outcome
    nxt = system.speakers[out.speaker] if out.speaker >= 0 else None
    return Run(tuple(more), nxt, out.reason if out.speaker < 0 else None)
