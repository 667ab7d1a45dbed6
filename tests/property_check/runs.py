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
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.describe import condition_text
from tests.diff import brute_force as bf

#: the reason a run ends with when a custom target resolves to terminate (docs/language.md)
CUSTOM_END_REASON = "workflow_terminated"

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


def _merge(values: dict[str, list[Any]], more: Mapping[str, Sequence[Any]]) -> None:
    for key, vals in more.items():
        seen = values.setdefault(key, [])
        for v in vals:
            if v is not None and not any(bf._j(x) == bf._j(v) for x in seen):
                seen.append(v)


class Runs:
    """The runs of the flow ``text``. ``extra_values``: key -> values the properties
    compare it with (a human may write those too, though no rule reads them)."""

    def __init__(self, text: str, extra_values: Mapping[str, Sequence[Any]] | None = None):
        v = bf.Version.of(text)
        if v.max_turns is None:
            raise ValueError("the enumerator needs max_turns")
        self.version = v
        self.values = bf.compared_values((v,))
        _merge(self.values, extra_values or {})
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
                key = (tool, s.context, s.goes)
                if key not in by_key:
                    ended = None
                    if s.goes[0] == "end":
                        ended = s.goes[1] if s.goes[1] != bf.CUSTOM_END else CUSTOM_END_REASON
                    rec = Record(
                        turn,
                        speaker,
                        tool,
                        s.context,
                        ended,
                        s.goes[1] if s.goes[0] == "speaker" else None,
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

    def replay(self, turns: Sequence[Any], nxt: str | None, reason: str | None) -> Run:
        """The records of the checker's run (its :class:`Turn` s, then who speaks next or
        the close reason), turn by turn from the kickoff; :class:`ReplayError` when the
        flow has no such run."""
        if not turns:
            raise ReplayError("a run has its kickoff")
        state: State = self.initial
        out: list[Record] = []
        for i, turn in enumerate(turns):
            # where the run goes after this turn, as brute_force says it
            if i + 1 < len(turns):
                goes: set[tuple[str, str | None]] = {("speaker", turns[i + 1].speaker)}
            elif nxt is not None:
                goes = {("speaker", nxt)}
            elif reason is None:  # the checker's word for a custom target's terminate
                goes = {("end", bf.CUSTOM_END)}
            elif reason == CUSTOM_END_REASON:  # the runtime's
                goes = {("end", bf.CUSTOM_END), ("end", reason)}
            else:
                goes = {("end", reason)}
            speaker, ctx, number = state
            if turn.speaker != speaker:
                raise ReplayError(f"turn {number}: {turn.speaker} speaks, the flow has {speaker}")
            before = bf._thaw(ctx)
            fitting = [
                succ
                for succ in self.successors(state)
                if succ.goes in goes
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
                raise ReplayError(f"turn {number}: no choice of {speaker} makes {turn} then {goes}")
            succ = fitting[0]
            out.append(succ.record)
            nxt_state = self.after(succ)
            if nxt_state is None:
                if i + 1 < len(turns):  # pragma: no cover - goes says where the run goes
                    raise ReplayError(f"the run ends after turn {number}")
                break
            state = nxt_state
        return tuple(out)

    def completions(self, prefix: Run) -> Iterator[Run]:
        """Every complete run that begins with ``prefix`` (a replayed run)."""
        last = prefix[-1]
        if last.next is None:
            yield prefix
            return
        yield from self.runs((last.next, last.context, last.number + 1), prefix)
