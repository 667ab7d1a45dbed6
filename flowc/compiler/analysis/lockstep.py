"""Two flows explored in lock step: where OLD and NEW first route the same turns differently.

Each side is stepped by its own :class:`~flowc.compiler.analysis.explore.Explorer` (the
checker's); this module only pairs their states. A product state is (OLD's node, NEW's
node) after the same turns. From it, every turn either side allows is taken on both:

- the same speaker, with text alone;
- a model speaker's call of a tool, matched by name; for a tool of several alternatives,
  the alternative with the same effects (a call must say which one it takes);
- a human's context writes: any of the keys it may write, set to any value the rules
  compare it with, to another value, or cleared;
- for JSON graphs, the same context written by the participants and any tool a rule names,
  or a hand-off to any participant (a graph declares no tools, so any tool may return a
  ``Handoff``: the turn then goes to that participant past the rules).

A turn that one side's declarations do not allow (a tool the speaker does not declare
there, an alternative its tool does not have, a key the human may not write, a tool call
by a human) is *refused* there, as ``flowc run`` refuses such a script; when the other
side takes it, that is a difference. Custom conditions are assumed true or false and
custom targets to resolve to each of their results, the same call alike on both sides
on one turn (matched by their text). When the two sides then schedule a different
speaker, end differently or one refuses the turn, the turns so far plus that one are a
*distinguishing run*; breadth-first order makes the first one found a shortest one.

A run is *certain* when no turn of it depends on what a custom condition or target
decides; one that does only shows what a plugin *might* make the versions do. The
product keeps the two apart (a state reached by a certain run is explored as such), so
that a certain distinguishing run is found whenever one exists.

``max_turns`` is not part of a state (as in the checker): a divergence is kept only when
its turn is within both caps, and different caps are compared separately
(:func:`cap_divergence`).
"""

from __future__ import annotations

import itertools
import json
import operator
from collections import deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from flowc.compiler.analysis import graph_contexts
from flowc.compiler.analysis.explore import (
    DEFAULT,
    FINISH,
    HANDOFF,
    KICKOFF,
    MEMORY_EVERY,
    Explorer,
    MemoryGuard,
    NodeKey,
    Outcome,
    finish_reason,
)
from flowc.compiler.analysis.graph_contexts import (
    OTHER_VALUE,
    UNSET_VALUE,
    After,
    Contexts,
    Value,
    plain,
    shown_value,
)
from flowc.compiler.analysis.system import OTHER, PLAIN, UNSET, Action, System, Valuation
from flowc.compiler.model import json_text, values_equal
from flowc.compiler.quoting import once, ticked
from flowc.compiler.tool_effects import (
    ToolEffectInfo,
    bare_alternatives,
    bare_effect_refusal,
    taken_index,
)
from flowc.diagnostics import counted
from flowc.dsl.formatter import format_name

if TYPE_CHECKING:
    from flowc.compiler.analysis.runs import Run as CheckerRun

#: the close reason when a run reaches ``max_turns``
MAX_TURNS = "max_turns"
#: at most this many custom conditions are enumerated per turn (2**N assignments); a turn
#: that reads more makes the exploration partial
MAX_ATOMS = 10
#: at most this many combinations of a human's writes are tried per turn; more makes the
#: exploration partial
MAX_WRITES = 4096
#: the memory is looked at on every MEMORY_EVERY-th new state, and every so many turns
#: (between graphs, a state has a turn per context: a few states may take millions)
TURNS_PER_LOOK = 1 << 16
#: ``Routed.fired`` of a turn one side refuses, and the side's node key after it
REFUSED = -4
REFUSED_KEY: NodeKey = ("refused",)

#: what the participants do on a turn, the same on both sides: ("say",), ("tool", name,
#: effects key or None for a tool of one alternative), ("write", ((key, value), ...))
Label: TypeAlias = tuple[Any, ...]


@attrs.frozen
class Turn:
    """One turn as both sides see it: who speaks and what the participants did."""

    speaker: str
    tool: str | None = None
    alternative: int = 0  # which of the tool's declared alternatives (effects)
    #: the context the participants wrote before routing (key, value or None for unset):
    #: a human's writes, or for JSON graphs anyone's; a tool's writes are its declaration's
    context: tuple[tuple[str, Any], ...] = ()
    #: custom conditions assumed true or false on this turn, by their text
    assumed: tuple[tuple[str, bool], ...] = ()
    #: the alternative the call takes, as declared, when its tool has several
    effects: str | None = None
    #: custom targets assumed to resolve so on this turn (``pick() → a``)
    chosen: tuple[str, ...] = ()
    #: for JSON graphs: the participant a tool of this turn hands off to (its name)
    handoff: str | None = None

    @property
    def certain(self) -> bool:
        """No custom condition or target decides what this turn does."""
        return not self.assumed and not self.chosen


@attrs.frozen
class Routed:
    """What one side does after a turn."""

    fired: int  # a rule's file index, or DEFAULT / HANDOFF / FINISH (explore's constants), REFUSED
    next: str | None  # the speaker scheduled next; None when the run ends (or refuses)
    reason: str | None = None  # the close reason when it ends
    choice: str | None = None  # how a custom target resolved
    refused: str | None = None  # why this side cannot take the turn

    @property
    def observed(self) -> tuple[str, str | None]:
        if self.refused is not None:
            return ("refused", None)
        return ("end", self.reason) if self.next is None else ("speaker", self.next)


@attrs.frozen
class Divergence:
    """A run after which OLD and NEW route differently."""

    turns: tuple[Turn, ...]  # every turn, the last one is where they differ
    old: Routed
    new: Routed
    #: the product node before the last turn
    node: int
    #: each side's state after the last turn (its explorer's node key)
    old_after: NodeKey = ("end", None)
    new_after: NodeKey = ("end", None)

    @property
    def certain(self) -> bool:
        """No turn of the run depends on what a custom condition or target decides."""
        return all(t.certain for t in self.turns)


@attrs.frozen
class Product:
    """The explored product of two systems."""

    old: System
    new: System
    #: (OLD's node, NEW's node, reached by a certain run)
    keys: list[tuple[NodeKey, NodeKey, bool]]
    parent: list[int]
    #: the turn (and both sides' routing) that first reached each node
    via: list[tuple[Turn, Routed, Routed] | None]
    dist: list[int]
    #: when the caps differ (what :func:`cap_divergence` reads): node -> (successor, whether
    #: the rules routed the turn, not a hand-off) -> the first agreeing turn that goes
    #: there, as (successor, the turn, OLD's and NEW's routing)
    edges: dict[int, dict[tuple[int, bool], tuple[int, Turn, Routed, Routed]]]
    divergences: list[Divergence]
    truncated: bool
    #: why the exploration is partial besides the state bound ("" when it is not)
    partial: str = ""
    #: when ``truncated``: ``"states"`` (the bound) or ``"memory"`` (its memory budget,
    #: :class:`~flowc.compiler.analysis.explore.MemoryGuard`)
    stopped_by: str = ""
    #: the memory the exploration was allowed (bytes)
    memory_budget: int = 0
    #: the turns it took on which both sides agree (those that end the run included)
    turns: int = 0

    def turns_to(self, node: int) -> list[Turn]:
        out: list[Turn] = []
        while node != 0:
            via = self.via[node]
            assert via is not None
            out.append(via[0])
            node = self.parent[node]
        return out[::-1]

    def path_to(self, node: int) -> list[int]:
        path = [node]
        while path[-1] != 0:
            path.append(self.parent[path[-1]])
        return path[::-1]


def _effect_key(
    sets: Sequence[tuple[str, Any]], clears: Sequence[str], handoff: str | None, finish: str | None
) -> tuple[Any, ...]:
    """What an alternative does, whatever the order it is written in."""
    return (
        tuple(sorted({k: json_text(v) for k, v in sets}.items())),
        tuple(sorted(set(clears))),
        handoff,
        None if finish is None else finish_reason(finish),
    )


def _equal_effects(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two effects (:func:`_effect_key`) write values equal under Python's ``==``
    (AG2's comparison, under which ``true``, ``1`` and ``1.0`` are equal) and do the same
    otherwise: a call whose very values no alternative writes takes the first such one, as
    a run takes it (:func:`~flowc.compiler.tool_effects.alternative_index`)."""
    if a[1:] != b[1:] or [k for k, _ in a[0]] != [k for k, _ in b[0]]:
        return False
    return all(
        values_equal(json.loads(x), json.loads(y))
        for (_, x), (_, y) in zip(a[0], b[0], strict=True)
    )


@attrs.frozen
class _Tool:
    """One declared tool of one speaker: its distinct alternatives (actions), in order."""

    actions: tuple[Action, ...]
    keys: tuple[tuple[Any, ...], ...]  # each action's effect key
    texts: tuple[str, ...]  # each action's effects as declared

    @property
    def several(self) -> bool:
        return len(self.actions) > 1


class _Side:
    """One flow's explorer and how turns named by text map onto its indices."""

    def __init__(self, system: System):
        self.system = system
        self.explorer = Explorer(system, keep_routes=True)  # each turn is routed again and again
        self.tool_index = {t: i for i, t in enumerate(system.tool_names)}
        #: a tool index no rule reads: a tool this side does not know
        self.unknown_tool = len(system.tool_names) + 1_000_000
        self.atom_label = {a.id: a.label for a in system.atoms}
        self.key_index = {k: i for i, k in enumerate(system.keys)}
        compiled = system.compiled
        #: speaker -> the keys it may write, for the humans of a `.flow`
        self.human_keys: dict[int, frozenset[str]] = {}
        #: speaker -> tool name -> its alternatives, for the model speakers of a `.flow`
        self.tools: dict[int, dict[str, _Tool]] = {}
        if compiled is not None and not system.json_mode:
            for i, name in enumerate(system.speakers):
                if i in system.humans:
                    self.human_keys[i] = frozenset(compiled.human_writes.get(name, ()))
                    continue
                grouped: dict[str, list[Action]] = {}
                for action in system.actions[i]:
                    if action.tool is not None:
                        grouped.setdefault(action.tool, []).append(action)
                tools: dict[str, _Tool] = {}
                for tool, actions in grouped.items():
                    unique: dict[tuple[Any, ...], Action] = {}
                    for a in actions:
                        unique.setdefault(self.effect_key(a), a)
                    tools[tool] = _Tool(
                        tuple(unique.values()),
                        tuple(unique),
                        tuple(self.effect_text(a) for a in unique.values()),
                    )
                self.tools[i] = tools

    @property
    def json_mode(self) -> bool:
        return self.system.json_mode

    def handoff_name(self, action: Action) -> str | None:
        return None if action.handoff is None else self.system.speakers[action.handoff]

    def effect_key(self, action: Action) -> tuple[Any, ...]:
        return _effect_key(action.sets, action.clears, self.handoff_name(action), action.finish)

    def effect_text(self, action: Action) -> str:
        return ToolEffectInfo(
            action.sets, action.clears, self.handoff_name(action), action.finish
        ).text()

    def speaker_of(self, key: NodeKey) -> int:
        return self.system.start if key == KICKOFF else int(key[0])

    # the turns this side allows, and what a turn does here ------------------

    def labels(self, speaker: int, kickoff: bool) -> list[tuple[Label, int, str | None]]:
        """The tool turns this side's speaker may take: (label, alternative, effects shown)."""
        if self.json_mode:
            if kickoff:
                return [(("say",), 0, None)]
            return [
                *(
                    (("say",) if a.tool is None else ("tool", a.tool, None), 0, None)
                    for a in self.system.actions[speaker]
                ),
                # a graph declares no tools: any call may hand off, to any participant
                *((("handoff", name), 0, None) for name in self.system.speakers),
            ]
        out: list[tuple[Label, int, str | None]] = [(("say",), 0, None)]
        if kickoff:
            return out  # a model speaker's kickoff is a plain message
        for name, tool in self.tools.get(speaker, {}).items():
            if not tool.several:
                out.append((("tool", name, None), 0, None))
                continue
            for j, (key, text) in enumerate(zip(tool.keys, tool.texts, strict=True)):
                out.append((("tool", name, key), j, text))
        return out

    def resolve(self, speaker: int, label: Label, kickoff: bool) -> Action | str:
        """This side's action for a turn, or why it refuses the turn."""
        sys = self.system
        who = format_name(sys.speakers[speaker])
        kind = label[0]
        if kind == "say":
            return PLAIN
        if self.json_mode:
            if kind == "tool":  # a bare graph: any tool goes
                return Action(label[1], self.tool_index.get(label[1], self.unknown_tool))
            if kind == "handoff":
                if label[1] not in sys.speakers:
                    return f"{ticked(label[1])} is not one of its participants"
                return Action(handoff=sys.speakers.index(label[1]))
            return PLAIN  # pragma: no cover - JSON graphs' writes are contexts, not labels
        if kind == "write":
            if speaker not in self.human_keys:
                return self.bare_writes(speaker, label[1], kickoff)
            allowed = self.human_keys[speaker]
            writes: list[tuple[int, int]] = []
            for key, value in label[1]:
                if key not in allowed:
                    declared = ", ".join(format_name(k) for k in sorted(allowed))
                    return f"{once(who)} may not write {ticked(key)} " + (
                        f"(it declares `sets {declared}`)"
                        if declared
                        else "(it declares no `sets`)"
                    )
                k = self.key_index.get(key)
                if k is not None:
                    writes.append((k, self.abstract(key, plain(value))))
            return Action(writes=tuple(writes))
        # a tool call
        tool_name, key = label[1], label[2]
        if speaker in self.human_keys:
            return f"{once(who)} is a human: it calls no tools"
        if kickoff:
            return f"{once(who)} opens the run with a plain message"  # pragma: no cover - labels say so
        tool = self.tools.get(speaker, {}).get(tool_name)
        if tool is None:
            return f"{once(who)} declares no tool {ticked(tool_name)}"
        if key is None:
            if not tool.several:
                return tool.actions[0]
            return (
                f"{ticked(tool_name)} of {once(who)} does one of several things here "
                f"({' | '.join(tool.texts)}): a call must say which"
            )
        # its very values, else equal under `==`: as a run takes it
        taken = taken_index(tool.keys, key, _equal_effects, operator.eq)
        if taken is not None:
            return tool.actions[taken]
        return (
            f"{ticked(tool_name)} of {once(who)} has no alternative that does that "
            f"(it does {' | '.join(tool.texts)})"
        )

    def bare_writes(
        self, speaker: int, written: tuple[tuple[str, Any], ...], kickoff: bool
    ) -> Action | str:
        """A model speaker's context writes: as in a run, a call of the one tool with an
        alternative that makes exactly these writes and nothing else
        (:func:`~flowc.compiler.tool_effects.bare_alternative`); refused when no tool
        makes them, or two tools do (the turn does not say which it calls)."""
        name = self.system.speakers[speaker]
        who = format_name(name)
        if kickoff:
            return f"{once(who)} is a model speaker: its kickoff is a plain message"
        sets = tuple((k, plain(v)) for k, v in written if v is not UNSET_VALUE)
        clears = tuple(k for k, v in written if v is UNSET_VALUE)
        if not any(v is OTHER_VALUE for _, v in sets):
            tools = self.tools.get(speaker, {})
            alts = {
                tool_name: tuple(
                    ToolEffectInfo(a.sets, a.clears, self.handoff_name(a), a.finish)
                    for a in tool.actions
                )
                for tool_name, tool in tools.items()
            }
            effect = ToolEffectInfo(sets, clears)
            found = bare_alternatives(alts, effect)
            if len(found) == 1:
                tool_name, index = found[0]
                return tools[tool_name].actions[index]
            refusal = bare_effect_refusal(name, alts, effect)
            if found and refusal is not None:  # two tools make them: the turn names neither
                return refusal
        return f"{once(who)} is a model speaker, and none of its tools makes just these writes"

    def abstract(self, key: str, value: Any) -> int:
        k = self.key_index[key]
        if value is UNSET_VALUE:
            return UNSET
        if value is OTHER_VALUE:
            return OTHER
        return self.system.abstract(k, value)

    def writer_keys(self, speaker: int) -> frozenset[str]:
        return self.human_keys.get(speaker, frozenset())

    # routing ----------------------------------------------------------------

    def routed(self, outcome: Outcome, turn_number: int) -> Routed:
        sys = self.system
        cap = sys.max_turns
        if outcome.speaker < 0:
            return Routed(outcome.fired, None, outcome.reason, outcome.choice)
        if cap is not None and turn_number >= cap:
            return Routed(outcome.fired, None, MAX_TURNS, outcome.choice)
        return Routed(outcome.fired, sys.speakers[outcome.speaker], None, outcome.choice)

    def outcomes(self, key: NodeKey, action: Action, after: Valuation) -> tuple[Outcome, ...]:
        if action.finish is not None:
            return (Outcome((), FINISH, -1, finish_reason(action.finish)),)
        if action.handoff is not None:
            return (Outcome((), HANDOFF, action.handoff),)
        return self.explorer.route(self.speaker_of(key), action.tool_index, after)

    def next_key(self, outcome: Outcome, after: Valuation) -> NodeKey:
        if outcome.speaker < 0:
            return ("end", outcome.reason)
        return (outcome.speaker, None if self.system.json_mode else after)

    def before(self, key: NodeKey) -> Valuation | None:
        return self.system.initial if key == KICKOFF else key[1]

    def applied(self, key: NodeKey, action: Action) -> Valuation:
        """The valuation after ``action``'s writes (a `.flow`'s turn: one valuation)."""
        before = self.before(key)
        assert before is not None
        if not action.writes:
            return before
        new = list(before)
        for k, v in action.writes:
            new[k] = v
        return tuple(new)


def _literals(sides: Sequence[_Side], key: str) -> list[Any]:
    seen: list[Any] = []
    for side in sides:
        k = side.key_index.get(key)
        if k is None:
            continue
        for lit in side.system.literals[k]:
            if not any(values_equal(lit, x) and type(lit) is type(x) for x in seen):
                seen.append(lit)
    return seen


def _write_labels(old: _Side, new: _Side, io: int, in_: int) -> tuple[list[Label], bool]:
    """A human's write turns, as labels: every key it may write on either side that a rule
    reads (or that only one side lets it write), each kept, cleared, set to a literal of
    either side or to another value. The flag: there were more than :data:`MAX_WRITES`."""
    ko, kn = old.writer_keys(io), new.writer_keys(in_)
    keys = sorted(
        k for k in ko | kn if k in old.key_index or k in new.key_index or (k in ko) != (k in kn)
    )
    if not keys:
        return [], False
    domains: list[list[Any]] = []
    for k in keys:
        if k in old.key_index or k in new.key_index:
            domains.append([None, UNSET_VALUE, *_literals((old, new), k), OTHER_VALUE])
        else:  # no rule reads it: one write tells whether each side lets the human write it
            domains.append([None, OTHER_VALUE])
    total = 1
    for d in domains:
        total *= len(d)
    out: list[Label] = []
    for values in itertools.product(*domains):
        written = tuple(
            (k, Value.of(v)) for k, v in zip(keys, values, strict=True) if v is not None
        )
        if written:
            out.append(("write", written))
            if len(out) >= MAX_WRITES:
                return out, total - 1 > MAX_WRITES
    return out, False


def _assignments(labels: list[str]) -> Iterator[dict[str, bool]]:
    for values in itertools.product((True, False), repeat=len(labels)):
        yield dict(zip(labels, values, strict=True))


def _compatible(outcome: Outcome, labels: dict[int, str], given: dict[str, bool]) -> bool:
    return all(given.get(labels[i], v) == v for i, v in outcome.assumed)


@attrs.frozen
class _World:
    """One way a turn may go on both sides, given what custom conditions and targets decide."""

    assumed: tuple[tuple[str, bool], ...]
    chosen: tuple[str, ...]
    old: tuple[Outcome | None, Routed]
    new: tuple[Outcome | None, Routed]


def _who(outcome: Outcome, side: _Side) -> str:
    return (
        "terminate" if outcome.speaker < 0 else format_name(side.system.speakers[outcome.speaker])
    )


def _pairs(
    so: _Side, sn: _Side, o_here: list[Outcome], n_here: list[Outcome]
) -> list[tuple[Outcome, Outcome, tuple[str, ...]]]:
    """OLD's and NEW's outcomes that may happen together, and the custom targets' choices
    that make them: the same call resolves alike on both sides."""
    if len(o_here) == 1 and len(n_here) == 1 and o_here[0].call != n_here[0].call:
        return [(o_here[0], n_here[0], ())]
    call_o, call_n = o_here[0].call, n_here[0].call
    several = len(o_here) > 1 or len(n_here) > 1
    out: dict[tuple[int, int], tuple[Outcome, Outcome, tuple[str, ...]]] = {}
    if call_o is not None and call_o == call_n:
        for i, o in enumerate(o_here):
            same = [j for j, n in enumerate(n_here) if _who(n, sn) == _who(o, so)]
            if same:
                out[(i, same[0])] = (
                    o,
                    n_here[same[0]],
                    (f"{call_o} → {_who(o, so)}",) if several else (),
                )
        # a result only one side's declaration lists: what the other does then is not known
        done_o, done_n = {i for i, _ in out}, {j for _, j in out}
        for i, o in enumerate(o_here):
            for j, n in enumerate(n_here):
                if i not in done_o or j not in done_n:
                    out.setdefault(
                        (i, j), (o, n, (f"{call_o} → {_who(o, so)} on OLD, {_who(n, sn)} on NEW",))
                    )
        return list(out.values())
    for i, o in enumerate(o_here):
        for j, n in enumerate(n_here):
            chosen = []
            if call_o is not None and len(o_here) > 1:
                chosen.append(f"{call_o} → {_who(o, so)}")
            if call_n is not None and len(n_here) > 1:
                chosen.append(f"{call_n} → {_who(n, sn)}")
            out[(i, j)] = (o, n, tuple(chosen))
    return list(out.values())


def _worlds(
    so: _Side,
    sn: _Side,
    outs_o: tuple[Outcome, ...] | str,
    outs_n: tuple[Outcome, ...] | str,
    turn_number: int,
) -> tuple[list[_World], bool]:
    """Every way the turn may go on both sides; the flag: more custom conditions than
    :data:`MAX_ATOMS` (only the first are enumerated)."""
    atoms = list(
        dict.fromkeys(
            [
                so.atom_label[i]
                for o in (outs_o if not isinstance(outs_o, str) else ())
                for i, _ in o.assumed
            ]
            + [
                sn.atom_label[i]
                for o in (outs_n if not isinstance(outs_n, str) else ())
                for i, _ in o.assumed
            ]
        )
    )
    partial = len(atoms) > MAX_ATOMS
    # the ones past the limit are left open: a world then depends on them (never certain)
    open_atoms = (
        (f"{counted(len(atoms) - MAX_ATOMS, 'more custom condition')}, as they may be",)
        if partial
        else ()
    )
    atoms = atoms[:MAX_ATOMS]
    worlds: list[_World] = []
    for given in _assignments(atoms):
        o_here: list[Outcome] | None = (
            None
            if isinstance(outs_o, str)
            else [o for o in outs_o if _compatible(o, so.atom_label, given)]
        )
        n_here: list[Outcome] | None = (
            None
            if isinstance(outs_n, str)
            else [o for o in outs_n if _compatible(o, sn.atom_label, given)]
        )
        pairs: list[tuple[Outcome | None, Outcome | None, tuple[str, ...]]]
        if o_here is not None and n_here is not None:
            pairs = list(_pairs(so, sn, o_here, n_here))
        elif o_here is not None:
            pairs = [
                (o, None, (f"{o.call} → {_who(o, so)}",) if len(o_here) > 1 else ()) for o in o_here
            ]
        elif n_here is not None:
            pairs = [
                (None, n, (f"{n.call} → {_who(n, sn)}",) if len(n_here) > 1 else ()) for n in n_here
            ]
        else:  # pragma: no cover - a turn both sides refuse is not taken
            pairs = []
        for o, n, chosen in pairs:
            used = {so.atom_label[i] for i, _ in (o.assumed if o is not None else ())} | {
                sn.atom_label[i] for i, _ in (n.assumed if n is not None else ())
            }
            r_old = (
                so.routed(o, turn_number)
                if o is not None
                else Routed(REFUSED, None, refused=outs_o if isinstance(outs_o, str) else "")
            )
            r_new = (
                sn.routed(n, turn_number)
                if n is not None
                else Routed(REFUSED, None, refused=outs_n if isinstance(outs_n, str) else "")
            )
            worlds.append(
                _World(
                    tuple((k, v) for k, v in given.items() if k in used),
                    chosen + open_atoms,
                    (o, r_old),
                    (n, r_new),
                )
            )
    return worlds, partial


def _kickoff_divergence(old: System, new: System) -> Divergence | None:
    """When OLD and NEW open with different speakers, the kickoff itself differs (no turn is
    shared): that divergence, else None."""
    if old.speakers[old.start] == new.speakers[new.start]:
        return None
    return Divergence(
        (),
        Routed(DEFAULT, old.speakers[old.start]),
        Routed(DEFAULT, new.speakers[new.start]),
        0,
        KICKOFF,
        KICKOFF,
    )


@attrs.define
class _Growing:
    """The product as the breadth-first search grows it: what :class:`Product` keeps of its
    nodes and edges. Node 0 is the kickoff, reached by a certain run."""

    keys: list[tuple[NodeKey, NodeKey, bool]] = attrs.Factory(lambda: [(KICKOFF, KICKOFF, True)])
    ids: dict[tuple[NodeKey, NodeKey, bool], int] = attrs.Factory(
        lambda: {(KICKOFF, KICKOFF, True): 0}
    )
    parent: list[int] = attrs.Factory(lambda: [0])
    via: list[tuple[Turn, Routed, Routed] | None] = attrs.Factory(lambda: [None])
    dist: list[int] = attrs.Factory(lambda: [0])
    edges: dict[int, dict[tuple[int, bool], tuple[int, Turn, Routed, Routed]]] = attrs.Factory(dict)

    def add(
        self, key: tuple[NodeKey, NodeKey, bool], u: int, step: tuple[Turn, Routed, Routed]
    ) -> int:
        """A new node ``key``, first reached from node ``u`` by ``step``: its index."""
        v = self.ids[key] = len(self.keys)
        self.keys.append(key)
        self.parent.append(u)
        self.via.append(step)
        self.dist.append(self.dist[u] + 1)
        return v


def turns_of_run(system: System, run: CheckerRun) -> tuple[tuple[Turn, ...], Routed]:
    """A run the checker found in one flow (the :class:`~flowc.compiler.analysis.runs.Run`
    of a finding: E116's run that breaks a property) as the turns of a distinguishing run,
    and where the flow goes after its last turn: so that ``flowc diff`` prints and encodes
    both kinds of run one way. A tool turn names the alternative it takes when its tool
    has several; a human's turn (any turn of a JSON graph) has the context it writes; the
    custom conditions it assumes and the custom target's result it takes come as a
    distinguishing run's do. The run's ``loop_from`` is the caller's to keep.

    >>> from flowc import compile_flow
    >>> from flowc.compiler.analysis.runs import Run, Turn as RunTurn
    >>> from flowc.compiler.analysis.system import system_of_flow
    >>> sys = system_of_flow(compile_flow("speaker u: human\\nspeaker b\\nwhen from u then b"))
    >>> turns, after = turns_of_run(sys, Run((RunTurn("u", fired=0),), "b"))
    >>> [t.speaker for t in turns], after.next, after.fired
    (['u'], 'b', 0)
    """
    side = _Side(system)
    index = {name: i for i, name in enumerate(system.speakers)}
    turns: list[Turn] = []
    for t in run.turns:
        alternative, effects = 0, None
        context: tuple[tuple[str, Any], ...] = ()
        tool = side.tools.get(index[t.speaker], {}).get(t.tool) if t.tool is not None else None
        if tool is not None and tool.several:
            alternative = tool.keys.index(_effect_key(t.sets, t.clears, t.handoff, t.finish))
            effects = tool.texts[alternative]
        if t.tool is None or system.json_mode:
            context = (*t.sets, *((k, None) for k in t.clears))
        chosen: tuple[str, ...] = ()
        if t.custom_choice is not None and t.call is not None:
            (who,) = t.custom_choice
            chosen = (f"{t.call} → {'terminate' if who is None else format_name(who)}",)
        turns.append(Turn(t.speaker, t.tool, alternative, context, t.assumed, effects, chosen))
    last = run.turns[-1].fired if run.turns else DEFAULT
    return tuple(turns), Routed(last, run.next, run.reason)


def _turn_labels(
    so: _Side, sn: _Side, io: int, in_: int, kickoff: bool, json_mode: bool, partial: set[str]
) -> list[tuple[Label, int, str | None]]:
    """Every turn either side allows OLD's speaker ``io`` and NEW's ``in_``, once each, as
    (label, alternative, effects shown) (OLD's first). For a `.flow`, a human's writes
    too; more combinations of them than :data:`MAX_WRITES` adds ``"writes"`` to ``partial``."""
    merged: dict[Label, tuple[int, str | None]] = {}
    for side, i in ((so, io), (sn, in_)):
        for label, alt, shown in side.labels(i, kickoff):
            merged.setdefault(label, (alt, shown))
    if not json_mode:
        writes, more = _write_labels(so, sn, io, in_)
        if more:
            partial.add("writes")
        for label in writes:
            merged.setdefault(label, (0, None))
    return [(k, a, t) for k, (a, t) in merged.items()]


def _afters(
    so: _Side,
    sn: _Side,
    ko: NodeKey,
    kn: NodeKey,
    label: Label,
    ao: Action | str,
    an: Action | str,
    contexts: Contexts | None,
) -> Sequence[After]:
    """A turn ``label`` from OLD's ``ko`` and NEW's ``kn``: what it writes, as the turn
    shows it (a human's writes), and each side's valuation after its action's writes
    (unchanged on a side that refuses the turn). Between graphs (``contexts``: what the
    participants may write), one context of each set the keys the turn's rules read
    tell apart (:meth:`Contexts.of`): a hand-off goes past the rules, so it takes one."""
    if contexts is not None:
        return contexts.of(so.speaker_of(ko), sn.speaker_of(kn), ao, an)
    written = tuple((k, shown_value(plain(v))) for k, v in label[1]) if label[0] == "write" else ()
    return [
        (
            written,
            so.applied(ko, ao) if isinstance(ao, Action) else so.before(ko),
            sn.applied(kn, an) if isinstance(an, Action) else sn.before(kn),
        )
    ]


def _one_if_alike(
    so: _Side, sn: _Side, worlds: list[_World], vo: Valuation, vn: Valuation
) -> list[_World]:
    """``worlds`` (several) as one world that assumes nothing when what the custom conditions
    and targets decide changes nothing on this turn: every world is routed and goes on
    alike on both sides. Else ``worlds`` as they are."""
    signatures = {
        (
            w.old[1].observed,
            w.new[1].observed,
            None if w.old[0] is None else so.next_key(w.old[0], vo),
            None if w.new[0] is None else sn.next_key(w.new[0], vn),
        )
        for w in worlds
    }
    if len(signatures) == 1:
        return [attrs.evolve(worlds[0], assumed=(), chosen=())]
    return worlds


def _divergence(
    so: _Side, sn: _Side, g: _Growing, u: int, turn: Turn, w: _World, vo: Valuation, vn: Valuation
) -> Divergence:
    """The run to node ``u`` and then ``turn``, which the sides route differently (world
    ``w``; ``vo``, ``vn``: their valuations after the participants' part of the turn)."""
    (o1, r1), (o2, r2) = w.old, w.new
    return Divergence(
        _written(so.system, sn.system, (*_turns(g.parent, g.via, u), turn)),
        r1,
        r2,
        u,
        so.next_key(o1, vo) if o1 is not None else REFUSED_KEY,
        sn.next_key(o2, vn) if o2 is not None else REFUSED_KEY,
    )


def _written(old: System, new: System, turns: Sequence[Turn]) -> tuple[Turn, ...]:
    """A run of JSON graphs as its turns write the context. Each turn's context is every
    key's (the participants may write anything); the run shows a key where the turn
    changes it (set to another value, or cleared where it was set, by the initial context
    or a turn before), so that it says what a script of it must write and no more. A key
    the two sides start with differently is shown wherever a turn gives it a value. A
    `.flow`'s run is as it is."""
    if not (old.json_mode or new.json_mode):
        return tuple(turns)
    # each key's value so far as JSON text (no entry: unset); "": not one known value
    now: dict[str, str] = {}
    starts = (old.initial_context, new.initial_context)
    for k in {*starts[0], *starts[1]}:
        texts = {json_text(ctx[k]) if k in ctx else "" for ctx in starts}
        now[k] = texts.pop() if len(texts) == 1 else ""
    out: list[Turn] = []
    for t in turns:
        kept: list[tuple[str, Any]] = []
        for k, v in t.context:
            if v is None:
                if k not in now:
                    continue  # unset already
                del now[k]
            else:
                text = "" if v == shown_value(OTHER_VALUE) else json_text(v)
                if text and now.get(k) == text:
                    continue  # as it was
                now[k] = text
            kept.append((k, v))
        out.append(t if len(kept) == len(t.context) else attrs.evolve(t, context=tuple(kept)))
    return tuple(out)


def _partial_reason(partial: set[str]) -> str:
    """Why an exploration is partial besides its bounds, from what it ran past ("" if nothing)."""
    reasons = {
        "atoms": f"a turn depends on more than {MAX_ATOMS} custom conditions",
        "writes": f"a human may write more than {MAX_WRITES} combinations of keys on a turn",
        "contexts": f"the rules of a turn tell apart more than {graph_contexts.MAX_CONTEXTS:,} contexts the"
        " participants may write (a graph does not say which keys each writes)",
    }
    return "; ".join(reasons[p] for p in sorted(partial))


def explore_pair(
    old: System,
    new: System,
    max_states: int,
    max_divergences: int = 1_000,
    memory: MemoryGuard | None = None,
) -> Product:
    """Explore OLD and NEW in lock step, breadth-first, bounded by ``max_states`` product states
    and by ``memory`` (a :class:`~flowc.compiler.analysis.explore.MemoryGuard` from now on,
    by default): past either the product is ``truncated``, and ``stopped_by`` says which.

    >>> from flowc import compile_flow
    >>> from flowc.compiler.analysis.system import system_of_flow
    >>> a = system_of_flow(compile_flow("speaker u: human\\nspeaker b\\nspeaker c\\nwhen from u then b"))
    >>> b = system_of_flow(compile_flow("speaker u: human\\nspeaker b\\nspeaker c\\nwhen from u then c"))
    >>> d = explore_pair(a, b, 100).divergences[0]
    >>> [t.speaker for t in d.turns], d.old.next, d.new.next
    (['u'], 'b', 'c')
    """
    so, sn = _Side(old), _Side(new)
    json_mode = old.json_mode or new.json_mode
    partial: set[str] = set()
    contexts = Contexts(so, sn, MemoryGuard(), partial) if json_mode else None
    memory = memory or MemoryGuard()
    g = _Growing()
    keys, ids, dist, edges = g.keys, g.ids, g.dist, g.edges
    divergences: list[Divergence] = []
    counts = {True: 0, False: 0}  # certain and uncertain divergences kept
    truncated, stopped_by = False, ""
    turns = 0
    keep_edges = old.max_turns != new.max_turns
    caps = [c for c in (old.max_turns, new.max_turns) if c is not None]
    cap = min(caps) if caps else None
    queue: deque[int] = deque([0])
    labels_of: dict[tuple[int, int, bool], list[tuple[Label, int, str | None]]] = {}
    at_kickoff = _kickoff_divergence(old, new)
    if at_kickoff is not None:
        divergences.append(at_kickoff)
        queue.clear()
    while queue and not truncated:
        u = queue.popleft()
        ko, kn, certain = keys[u]
        if ko[0] == "end":
            continue
        turn_number = dist[u] + 1
        if cap is not None and turn_number > cap:
            continue
        io, in_ = so.speaker_of(ko), sn.speaker_of(kn)
        kickoff = ko == KICKOFF
        speaker = old.speakers[io]
        found = labels_of.get((io, in_, kickoff))
        if found is None:
            found = _turn_labels(so, sn, io, in_, kickoff, json_mode, partial)
            labels_of[(io, in_, kickoff)] = found
        for label, alt_index, shown in found:
            ao, an = so.resolve(io, label, kickoff), sn.resolve(in_, label, kickoff)
            if isinstance(ao, str) and isinstance(an, str):
                continue  # neither side can take this turn
            afters = _afters(so, sn, ko, kn, label, ao, an, contexts)
            if contexts is not None and contexts.out_of_memory:
                truncated, stopped_by = True, "memory"
                break
            tool = label[1] if label[0] == "tool" else None
            handoff = label[1] if label[0] == "handoff" else None
            for ctx, vo, vn in afters:
                assert vo is not None and vn is not None
                outs_o = ao if isinstance(ao, str) else so.outcomes(ko, ao, vo)
                outs_n = an if isinstance(an, str) else sn.outcomes(kn, an, vn)
                worlds, too_many = _worlds(so, sn, outs_o, outs_n, turn_number)
                if too_many:
                    partial.add("atoms")
                elif len(worlds) > 1:
                    worlds = _one_if_alike(so, sn, worlds, vo, vn)
                for w in worlds:
                    (o1, r1), (o2, r2) = w.old, w.new
                    turn = Turn(speaker, tool, alt_index, ctx, w.assumed, shown, w.chosen, handoff)
                    sure = certain and turn.certain
                    if r1.observed != r2.observed:
                        if counts[sure] < max_divergences:
                            counts[sure] += 1
                            divergences.append(_divergence(so, sn, g, u, turn, w, vo, vn))
                        continue
                    turns += 1
                    if not turns % TURNS_PER_LOOK and memory.exceeded():
                        truncated, stopped_by = True, "memory"
                        break
                    if r1.next is None or o1 is None or o2 is None:
                        continue
                    nxt = (so.next_key(o1, vo), sn.next_key(o2, vn), sure)
                    v = ids.get(nxt)
                    if v is None:
                        if len(keys) >= max_states:
                            truncated, stopped_by = True, "states"
                            break
                        if not len(keys) % MEMORY_EVERY and memory.exceeded():
                            truncated, stopped_by = True, "memory"
                            break
                        v = g.add(nxt, u, (turn, r1, r2))
                        queue.append(v)
                    if keep_edges:
                        edges.setdefault(u, {}).setdefault((v, handoff is None), (v, turn, r1, r2))
                if truncated:
                    break
            if truncated:
                break
    return Product(
        old,
        new,
        keys,
        g.parent,
        g.via,
        dist,
        edges,
        divergences,
        truncated,
        _partial_reason(partial),
        stopped_by,
        memory.budget,
        turns,
    )


def _turns(
    parent: list[int], via: list[tuple[Turn, Routed, Routed] | None], node: int
) -> list[Turn]:
    out: list[Turn] = []
    while node != 0:
        step = via[node]
        assert step is not None
        out.append(step[0])
        node = parent[node]
    return out[::-1]


@attrs.frozen
class CapOutOfReach:
    """The caps differ, but the walk to the smaller one (``limit`` turns) was stopped:
    by the state bound (``"states"``: it would have kept more than that many states, one
    for each speaker and context a turn of the walk may be at) or by the memory budget
    (``"memory"``). Whether a run reaches that cap is then not known. (When the
    exploration of the pair itself stopped at its bound, that is the reason ``flowc diff``
    gives, not this: a walk over a part of the pair has nothing more to say.)"""

    limit: int
    stopped_by: str
    #: the memory the walk was allowed (bytes)
    memory_budget: int = 0

    def text(self, max_states: int) -> str:
        """Why the caps are not weighed: a run to the smaller one is too long to build."""
        turns = counted(self.limit, "turn", grouped=True)
        if self.stopped_by == "memory":
            return (
                "the caps differ, and flowc stopped looking for a run that reaches the smaller "
                f"one ({turns}) at its memory budget ({-(-self.memory_budget // 2**20)} MiB)"
            )
        return (
            f"the caps differ, and the walk to the smaller one ({turns}) keeps more states than "
            f"the bound of {counted(max_states, 'state', grouped=True)} (the states a run may be "
            "in after each turn, over every turn; raise --max-states)"
        )


def cap_divergence(
    product: Product, max_states: int, memory: MemoryGuard | None = None
) -> Divergence | CapOutOfReach | None:
    """When the caps differ: a shortest run that reaches the smaller cap with both sides still
    going (so one closes at ``max_turns`` and the other goes on), or None. A certain run
    (no custom condition or target deciding it) is preferred. The walk keeps each turn's
    states, so a cap far beyond ``max_states`` is :class:`CapOutOfReach`, not a walk that
    grows without bound."""
    caps = (product.old.max_turns, product.new.max_turns)
    if caps[0] == caps[1]:
        return None
    memory = memory or MemoryGuard()
    found = _cap_walk(product, True, max_states, memory)
    if found is None:
        found = _cap_walk(product, False, max_states, memory)
    return found


def _cap_walk(
    product: Product, certain: bool, max_states: int, memory: MemoryGuard
) -> Divergence | CapOutOfReach | None:
    caps = (product.old.max_turns, product.new.max_turns)
    limit = min(c for c in caps if c is not None)
    # walks of `limit - 1` shared turns over agreeing edges, then the turn at the cap
    layer: dict[int, tuple[int, Turn] | None] = {0: None}
    back: list[dict[int, tuple[int, Turn] | None]] = [layer]
    kept, look_at = 1, MEMORY_EVERY

    def usable(v: int) -> bool:
        return not certain or product.keys[v][2]

    # (between graphs a turn may hand off anywhere, to its own speaker too: a walk takes a
    # turn the rules route before a hand-off, so that it reads as the rules' own run)
    for _ in range(limit - 1):
        nxt: dict[int, tuple[int, Turn] | None] = {}
        for routed in (True, False):
            for u in sorted(layer):
                for v, turn, _, _ in product.edges.get(u, {}).values():
                    if usable(v) and (turn.handoff is None) == routed:
                        nxt.setdefault(v, (u, turn))
        if not nxt:
            return None
        kept += len(nxt)
        if kept > max_states:
            return CapOutOfReach(limit, "states")
        if kept >= look_at:
            if memory.exceeded():
                return CapOutOfReach(limit, "memory", memory.budget)
            look_at = kept + MEMORY_EVERY
        back.append(nxt)
        layer = nxt
    last = [
        (u, edge)
        for routed in (True, False)
        for u in sorted(layer)
        for edge in product.edges.get(u, {}).values()
        if (edge[1].handoff is None) == routed
    ]
    for u, (v, turn, r_old, r_new) in last:
        if not usable(v):
            continue
        turns: list[Turn] = []
        node, depth = u, len(back) - 1
        while depth > 0:
            prev = back[depth][node]
            assert prev is not None
            node, step = prev
            turns.append(step)
            depth -= 1
        turns.reverse()
        ko, kn, _ = product.keys[v]
        if caps[0] == limit:
            return Divergence(
                _written(product.old, product.new, (*turns, turn)),
                Routed(r_old.fired, None, MAX_TURNS),
                r_new,
                u,
                ("end", MAX_TURNS),
                kn,
            )
        return Divergence(
            _written(product.old, product.new, (*turns, turn)),
            r_old,
            Routed(r_new.fired, None, MAX_TURNS),
            u,
            ko,
            ("end", MAX_TURNS),
        )
    return None
