"""Every run of one flow, by brute force, as concrete turn records.

The stepping is :mod:`tests.diff.brute_force`'s (written from ``docs/language.md`` and
``docs/runtime.md``, sharing no code with ``flowc.compiler.analysis``), used on one
version alone: from the kickoff, on a concrete context, every turn tries every choice -
the speaker posts text, calls each of its tools (each alternative), a human writes any of
its keys (kept, cleared, set to a value some rule or property compares it with, or to
another value) - and every custom condition call true or false and every custom target
call resolved to each of its declared results. ``max_turns`` (which every generated flow
sets) bounds every run.

Two choices that make the same turn record (the tool called, the context after the turn)
and go to the same place (the next speaker, or the end with its reason) lead to the same
runs, so they are one successor; the choices that make it are kept for replaying the
checker's runs.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler import properties as p
from flowc.compiler.describe import condition_text
from tests.diff import brute_force as bf

#: the reason a run ends with when a custom target terminates it without one
#: (docs/language.md)
CUSTOM_END_REASON = "workflow_terminated"
#: a reason no property names
ANOTHER_REASON = "§another reason§"

Frozen = tuple[tuple[str, str], ...]  # a context: (key, JSON of the value), sorted
State = tuple[str, Frozen, int]  # who speaks, the context before the turn, the turn number


@attrs.frozen
class Record:
    """One turn of a run, as a property reads it."""

    number: int
    speaker: str
    tool: str | None
    context: Frozen  # after the turn's writes
    ended: str | None  # the close reason when the run ends after this turn
    next: str | None  # who speaks next (None when it ended)

    @cached_property
    def values(self) -> dict[str, Any]:
        return bf._thaw(self.context)

    def __str__(self) -> str:
        ctx = ", ".join(f"{k}={v}" for k, v in self.context)
        then = f"ends {self.ended!r}" if self.ended is not None else f"-> {self.next}"
        return (
            f"{self.number}:{self.speaker}"
            + (f"({self.tool})" if self.tool else "")
            + (f" [{ctx}]" if ctx else "")
            + f" {then}"
        )


@attrs.frozen
class Successor:
    record: Record
    goes: tuple[str, str | None]  # brute_force's: ("speaker", name) or ("end", reason)
    #: the choices that make it: (label, world)
    choices: tuple[tuple[bf.Label, tuple[tuple[str, Any], ...]], ...]


Run = tuple[Record, ...]


class ReplayError(AssertionError):
    """A run the flow does not have."""


def subexpressions(e: Any) -> Iterator[Any]:
    yield e
    if isinstance(e, m.Not):
        yield from subexpressions(e.condition)
    elif isinstance(e, m.AllOf | m.AnyOf):
        for c in e.conditions:
            yield from subexpressions(c)
    elif isinstance(e, p.Previous):
        yield from subexpressions(e.expr)


def read_by(props: Sequence[p.Property]) -> tuple[dict[str, list[Any]], list[str]]:
    """What the properties read of a run beyond the speakers and tools: key -> the
    values they compare it with, and the close reasons ``ends "r"`` names."""
    values: dict[str, list[Any]] = {}
    reasons: list[str] = []
    for prop in props:
        for top in p.expressions(prop):
            for e in subexpressions(top):
                if isinstance(e, m.ContextEquals):
                    seen = values.setdefault(e.key, [])
                    if not any(bf._j(x) == bf._j(e.value) for x in seen):
                        seen.append(e.value)
                elif isinstance(e, p.Ends) and e.reason is not None and e.reason not in reasons:
                    reasons.append(e.reason)
    return values, reasons


class Runs:
    """The runs of the flow ``text``, as the properties ``props`` read them: a human may
    write the values they compare a key with (though no rule reads them), and a custom
    target that ends the run closes it with each reason they name, or another."""

    def __init__(self, text: str, props: Sequence[p.Property] = ()):
        v = bf.Version.of(text)
        if v.max_turns is None:
            raise ValueError("the enumerator needs max_turns")
        self.version = v
        self.values = bf.compared_values((v,))
        compared, named = read_by(props)
        for key, vals in compared.items():
            seen = self.values.setdefault(key, [])
            seen += [
                x for x in vals if x is not None and not any(bf._j(y) == bf._j(x) for y in seen)
            ]
        # a custom target's terminate may give any reason (a plugin's resolve returns
        # one; none is "workflow_terminated"): each one named, and one named by none
        self.custom_reasons = [*named]
        for r in (CUSTOM_END_REASON, ANOTHER_REASON):
            if r not in self.custom_reasons:
                self.custom_reasons.append(r)
                break
        conds, targets = bf.custom_calls((v,))
        self.worlds = [
            tuple(zip(conds, bools, strict=True)) + tuple(zip(targets, picks, strict=True))
            for bools in itertools.product((True, False), repeat=len(conds))
            for picks in itertools.product(*targets.values())
        ]
        self.targets = list(targets)
        # the checker names a custom condition call as `.flow` writes it
        self.condition_of_text: dict[str, str] = {}
        for call in conds:
            name = call[: call.index("{")]
            args = json.loads(call[len(name) :])
            self.condition_of_text[condition_text(m.CustomCondition(name, args))] = call
        self._successors: dict[State, tuple[Successor, ...]] = {}
        self._counts: dict[State, int] = {}
        self._labels: dict[tuple[str, bool], list[bf.Label]] = {}

    @property
    def initial(self) -> State:
        return (self.version.start, bf._freeze(self.version.context), 1)

    def labels(self, speaker: str, kickoff: bool) -> list[bf.Label]:
        key = (speaker, kickoff)
        if key not in self._labels:
            self._labels[key] = bf.labels((self.version,), speaker, kickoff, self.values)
        return self._labels[key]

    def successors(self, state: State) -> tuple[Successor, ...]:
        found = self._successors.get(state)
        if found is not None:
            return found
        speaker, ctx, turn = state
        kickoff = turn == 1
        by_key: dict[tuple[Any, ...], tuple[Record, tuple[str, str | None], list[Any]]] = {}
        for label in self.labels(speaker, kickoff):
            for world in self.worlds:
                s = bf.step(self.version, speaker, kickoff, label, ctx, turn, dict(world))
                if s.refused is not None:
                    continue
                tool = label.tool if label.kind == "tool" else None
                if label.kind == "write" and speaker not in self.version.humans:
                    raise AssertionError("a model speaker's bare write is not enumerated")
                if s.goes == ("end", bf.CUSTOM_END):
                    endings: list[str | None] = list(self.custom_reasons)
                elif s.goes[0] == "end":
                    endings = [s.goes[1]]
                else:
                    endings = [None]
                for ended in endings:
                    key = (tool, s.context, s.goes, ended)
                    if key not in by_key:
                        rec = Record(
                            turn,
                            speaker,
                            tool,
                            s.context,
                            ended,
                            s.goes[1] if ended is None else None,
                        )
                        by_key[key] = (rec, s.goes, [])
                    by_key[key][2].append((label, world))
        found = tuple(Successor(rec, goes, tuple(ch)) for rec, goes, ch in by_key.values())
        self._successors[state] = found
        return found

    @staticmethod
    def after(succ: Successor) -> State | None:
        rec = succ.record
        return None if rec.next is None else (rec.next, rec.context, rec.number + 1)

    def count(self, state: State | None = None) -> int:
        """How many runs there are from ``state`` (the kickoff by default)."""
        state = state or self.initial
        found = self._counts.get(state)
        if found is None:
            found = 0
            for succ in self.successors(state):
                nxt = self.after(succ)
                found += 1 if nxt is None else self.count(nxt)
            self._counts[state] = found
        return found

    def runs(self, state: State | None = None, prefix: Run = ()) -> Iterator[Run]:
        """Every complete run from ``state`` (the kickoff by default), after ``prefix``."""
        state = state or self.initial
        for succ in self.successors(state):
            run = (*prefix, succ.record)
            nxt = self.after(succ)
            if nxt is None:
                yield run
            else:
                yield from self.runs(nxt, run)

    # ── replaying a run the checker reports ───────────────────────────────────

    def _equivalent(self, a: dict[str, Any], b: dict[str, Any]) -> bool:
        """No rule or property tells the contexts apart."""
        for key, vals in self.values.items():
            for v in (*vals, None):
                if (a.get(key) == v) != (b.get(key) == v):
                    return False
        return True

    def _matches(
        self, turn: Any, label: bf.Label, before: dict[str, Any], after: dict[str, Any]
    ) -> bool:
        v = self.version
        if turn.tool is not None:
            if label.kind != "tool" or label.tool != turn.tool:
                return False
            effect = label.effect or v.tools[(turn.speaker, turn.tool)][0]
            finish = None if turn.finish is None else (turn.finish or "finished")
            wanted = bf.Effect(
                tuple(sorted({k: bf._j(x) for k, x in turn.sets}.items())),
                tuple(sorted(set(turn.clears))),
                turn.handoff,
                finish,
            )
            return effect == wanted
        if label.kind == "tool":
            return False
        if turn.speaker not in v.humans:
            return label.kind == "say" and not turn.sets and not turn.clears
        implied = dict(before)
        for k in turn.clears:
            implied.pop(k, None)
        for k, x in turn.sets:
            implied[k] = x
        return self._equivalent(implied, after)

    def _world_fits(self, turn: Any, world: tuple[tuple[str, Any], ...]) -> bool:
        w = dict(world)
        for text, value in turn.assumed:
            call = self.condition_of_text.get(text)
            if call is None or w[call] != value:
                return False
        if turn.custom_choice is not None:
            (choice,) = turn.custom_choice
            if not any(w[t] == choice for t in self.targets):
                return False
        return True

    def _goes(self, succ: Successor, after: str | None, reason: str | None, last: bool) -> bool:
        """The turn ``succ`` goes where the checker's run does: to ``after``, or (on its
        last turn, ``after`` None) to the end with ``reason``."""
        if after is not None:
            return succ.record.next == after
        if not last:  # pragma: no cover - a turn before the last goes to the next one
            return False
        if reason is None:  # the checker's word for a custom target's terminate
            return succ.goes == ("end", bf.CUSTOM_END)
        # (a custom target may end it with a reason no property names)
        return succ.record.ended == reason or (
            succ.goes == ("end", bf.CUSTOM_END)
            and reason not in self.custom_reasons
            and succ.record.ended == self.custom_reasons[-1]
        )

    def replay(self, turns: Sequence[Any], nxt: str | None, reason: str | None) -> list[Run]:
        """The records of the checker's run (its :class:`Turn` s, then who speaks next or
        the close reason), turn by turn from the kickoff; :class:`ReplayError` when the
        flow has no such run. Several when its last turn ends the run by a custom target
        (the checker's reason None: "with any reason it chooses"), one per reason."""
        if not turns:
            raise ReplayError("a run has its kickoff")
        state: State = self.initial
        out: list[Record] = []
        for i, turn in enumerate(turns):
            last = i + 1 == len(turns)
            after = turns[i + 1].speaker if not last else nxt
            speaker, ctx, number = state
            if turn.speaker != speaker:
                raise ReplayError(f"turn {number}: {turn.speaker} speaks, the flow has {speaker}")
            before = bf._thaw(ctx)
            fitting = [
                succ
                for succ in self.successors(state)
                if self._goes(succ, after, reason, last)
                and any(
                    self._matches(turn, label, before, succ.record.values)
                    and self._world_fits(turn, world)
                    for label, world in succ.choices
                )
            ]
            if turn.custom_choice is not None:
                (choice,) = turn.custom_choice
                fitting = [
                    s
                    for s in fitting
                    if (choice is None and s.goes == ("end", bf.CUSTOM_END))
                    or (
                        choice is not None and s.goes in (("speaker", choice), ("end", "max_turns"))
                    )
                ]
            if not fitting:
                where = f"then {turns[i + 1].speaker}" if not last else f"then {nxt or reason}"
                raise ReplayError(f"turn {number}: no choice of {speaker} makes {turn} {where}")
            if last:
                return [(*out, succ.record) for succ in fitting]
            succ = fitting[0]  # (the others are alike to every rule and property)
            out.append(succ.record)
            nxt_state = self.after(succ)
            assert nxt_state is not None
            state = nxt_state
        raise AssertionError("unreachable")  # pragma: no cover

    def completions(self, prefix: Run) -> Iterator[Run]:
        """Every complete run that begins with ``prefix`` (a replayed run)."""
        last = prefix[-1]
        if last.next is None:
            yield prefix
            return
        yield from self.runs((last.next, last.context, last.number + 1), prefix)
