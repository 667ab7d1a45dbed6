"""The contexts of a turn in the lock-step search of two versions
(:mod:`~flowc.compiler.analysis.lockstep`): the values a human or a JSON graph's
participant writes, as a turn shows them, and, between JSON graphs, the contexts the
participants may write on a turn, told apart by the keys the turn's rules read."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any, Protocol, TypeAlias

import attrs

from flowc.compiler.analysis.explore import MEMORY_EVERY, Explorer, MemoryGuard
from flowc.compiler.analysis.system import UNSET, Action, System, Valuation
from flowc.compiler.model import json_text, values_equal

#: at most this many contexts the participants of JSON graphs may write are tried on a turn,
#: of those the turn's rules tell apart (each key they read unset, one of the values they
#: compare it with, or another: 4 ** 8 with eight keys of two values, which a pair of small
#: graphs whose rules all read every key explores in 230 MB, nine keys filling the memory
#: budget); more makes the exploration partial, where they took gigabytes
MAX_CONTEXTS = 4**8

#: a turn's context as it shows it, and each side's valuation once the participants' part
#: of the turn is done (before routing)
After: TypeAlias = tuple[tuple[tuple[str, Any], ...], Valuation | None, Valuation | None]


class Side(Protocol):
    """What the contexts read of one version's side of the search."""

    system: System
    explorer: Explorer
    key_index: dict[str, int]

    def abstract(self, key: str, value: Any) -> int: ...


class Token:
    """A value a human or a JSON graph's participant writes that is no literal: unset, or
    a value no rule compares the key with."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


UNSET_VALUE = Token("unset")
OTHER_VALUE = Token("another value")


@attrs.frozen
class Value:
    """A written value in a label: hashable (lists and objects are JSON values too), and
    told apart by type as well (``1`` and ``true`` are written differently)."""

    key: str
    value: Any = attrs.field(eq=False, hash=False)

    @classmethod
    def of(cls, value: Any) -> Any:
        if isinstance(value, Token):
            return value
        return cls(f"{type(value).__name__}:{json_text(value)}", value)


def plain(value: Any) -> Any:
    return value.value if isinstance(value, Value) else value


def shown_value(value: Any) -> Any:
    """A written value as a turn shows it: None for unset, "another value", or the value."""
    if value is UNSET_VALUE:
        return None
    if value is OTHER_VALUE:
        return "another value"
    return value


class Contexts:
    """JSON graphs: the contexts the participants may write on a turn, as both sides
    abstract them. Every key may be unset, hold a value some rule compares it with, or
    another; but a turn goes where the keys its rules read send it, and a graph's node
    keeps no context, so contexts that differ only in other keys make the same turn.
    A turn takes one context of each set the keys its rules read tell apart (those of both
    sides: a diff reads both versions as graphs when one is, see
    :func:`~flowc.compiler.analysis.changes.diff_versions`): the first in the order of
    every context (keys in order, the first most significant; each key's values
    as it was before the run first, so a turn that leaves the context as it was comes
    first and a run shows only the writes it needs), which has every other key as it was
    before the run. A search that takes the first turn meeting a test of where it goes
    takes the same turn as over every context.

    The search stops at a memory budget as well as at the state bound, as the checker's
    exploration (a pair of many-key graphs reached 2 GB): ``memory`` is looked at while a
    turn's contexts are listed (it counts from before the search began, so what the pair
    has grown by counts too), and ``out_of_memory`` says when that went past it. A turn
    whose rules tell apart more than :data:`MAX_CONTEXTS` tries the first so many, and
    adds "contexts" to ``partial``."""

    def __init__(self, old: Side, new: Side, memory: MemoryGuard, partial: set[str]) -> None:
        self.old, self.new, self.memory, self.partial = old, new, memory, partial
        keys: dict[str, list[Any]] = {}
        for side in (old, new):
            for k, lits in zip(side.system.keys, side.system.literals, strict=True):
                seen = keys.setdefault(k, [])
                for lit in lits:
                    if not any(values_equal(lit, x) for x in seen):
                        seen.append(lit)
        self.names = names = list(keys)
        self.domains = domains = [[UNSET_VALUE, *keys[k], OTHER_VALUE] for k in names]
        for k, domain in zip(names, domains, strict=True):
            before = [
                side.system.initial_context
                for side in (old, new)
                if k in side.system.initial_context
            ]
            if before:  # that of OLD, or of NEW
                first = next((x for x in keys[k] if values_equal(x, before[0][k])), OTHER_VALUE)
                domain.remove(first)
                domain.insert(0, first)
        self.position = {k: i for i, k in enumerate(names)}
        # each (key, value) shown is made once and shared by every context that has it
        self.pairs = {
            (i, j): (k, shown_value(v))
            for i, (k, d) in enumerate(zip(names, domains, strict=True))
            for j, v in enumerate(d)
        }
        # each key's values as each side abstracts them, and where each side's keys are
        self._abstract = [
            [
                [abstract_or_unset(side, k, v) for v in d]
                for k, d in zip(names, domains, strict=True)
            ]
            for side in (old, new)
        ]
        self._at = [[self.position[k] for k in side.system.keys] for side in (old, new)]
        #: the lists kept for turns to come, at most :data:`MAX_CONTEXTS` contexts in all
        #: (a list past that is made for its turn and let go)
        self._lists: dict[tuple[int, ...], list[After]] = {}
        self._kept = 0
        self.out_of_memory = False

    def _read(self, side: Side, speaker: int, action: Action | str) -> Iterator[str]:
        """The keys ``side``'s routing of the turn reads."""
        if isinstance(action, str) or action.handoff is not None or action.finish is not None:
            return  # the side refuses the turn, or it goes past the rules
        keys = side.system.keys
        for k in side.explorer.reads(speaker, action.tool_index):
            yield keys[k]

    def of(self, io: int, in_: int, ao: Action | str, an: Action | str) -> list[After]:
        """The contexts of a turn of OLD's speaker ``io`` taking ``ao`` and NEW's ``in_``
        taking ``an``."""
        read = {*self._read(self.old, io, ao), *self._read(self.new, in_, an)}
        told = tuple(sorted(self.position[k] for k in read))
        found = self._lists.get(told)
        if found is None:
            found = self._list(told)
            if self._kept + len(found) <= MAX_CONTEXTS:
                self._lists[told] = found
                self._kept += len(found)
        return found

    def _list(self, told: tuple[int, ...]) -> list[After]:
        names, domains, pairs = self.names, self.domains, self.pairs
        (abs_old, abs_new), (at_old, at_new) = self._abstract, self._at
        if math.prod(len(domains[i]) for i in told) > MAX_CONTEXTS:
            self.partial.add("contexts")
        chosen = [0] * len(names)
        out: list[After] = []
        seen: set[tuple[Valuation, Valuation]] = set()
        ranges = [range(len(domains[i])) for i in told]
        for n, picked in enumerate(itertools.islice(itertools.product(*ranges), MAX_CONTEXTS)):
            if n and not n % MEMORY_EVERY and self.memory.exceeded():
                self.out_of_memory = True
                return out
            for i, j in zip(told, picked, strict=True):
                chosen[i] = j
            vo = tuple([abs_old[i][chosen[i]] for i in at_old])
            vn = tuple([abs_new[i][chosen[i]] for i in at_new])
            if (vo, vn) in seen:
                continue
            seen.add((vo, vn))
            # (an unset key too: a run shows it as cleared where it was set, see _written)
            out.append((tuple(pairs[i, j] for i, j in enumerate(chosen)), vo, vn))
        return out


def abstract_or_unset(side: Side, key: str, value: Any) -> int:
    if key not in side.key_index:
        return UNSET
    return side.abstract(key, value)
