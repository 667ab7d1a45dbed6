"""An independent brute-force enumerator of the runs of two versions of a flow.

It shares no code with flowc's analysis (`flowc.compiler.analysis`): it reads each
version's compiled graph dict (`compile_flow(...).knobs`) and its declarations (speakers,
humans and the keys they write, tools and their alternatives, the initiator, custom
targets' results), and steps both versions on concrete contexts, trying every choice on
every turn:

- the speaker posts text alone; a model speaker calls one of its tools (one of the tool's
  alternatives, when it has several: the alternative with the same effects on the other
  version); a human writes any of its keys (kept, cleared, set to a value some rule
  compares the key with, or to another value);
- every custom condition call is true or false, every custom target call resolves to
  each of its declared results (the same call alike on both versions, on one turn).

A turn a version's declarations do not allow (a tool its speaker does not declare, an
alternative the tool does not have, a key the human may not write, a tool call by a
human, a write by a model speaker) is refused there. The rules are those of
``docs/language.md`` and ``docs/runtime.md``: rules in ascending priority (ties in file
order), the first that holds decides, else the default; a tool's finish ends the run
and a hand-off goes to its speaker past the rules; ``max_turns`` counts the kickoff as
turn 1, and a turn that does not end the run on the cap closes it with ``"max_turns"``.

``labels``, ``step``, ``compared_values`` and ``custom_calls`` work on one version as
well (a tuple of one): :mod:`tests.property_check.runs` enumerates the runs of one flow
with them.

``graphs`` reads both versions without their declarations, as ``flowc diff`` compares a
`.flow` with a graph: any participant may also hand off to any participant (any tool may
return a ``Handoff``), and the turn goes there past the rules. After each turn both versions either go to the same speaker (the run goes on), or they
are told apart: a different speaker, a different ending, or one refuses the turn.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Iterator
from typing import Any

import attrs

from flowc import compile_flow

OTHER = "§another value§"  # a value no rule compares a key with
UNSET = "§unset§"  # a key cleared
CUSTOM_END = "§ended by a custom target§"


def _j(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@attrs.frozen
class Effect:
    """What one alternative of a tool does (order of writing does not matter)."""

    sets: tuple[tuple[str, str], ...]  # (key, JSON of the value), sorted
    clears: tuple[str, ...]
    handoff: str | None
    finish: str | None  # the close reason it ends with

    @classmethod
    def of(cls, alt: Any) -> Effect:
        finish = None if alt.finish is None else (alt.finish or "finished")
        return cls(
            tuple(sorted({k: _j(v) for k, v in alt.sets}.items())),
            tuple(sorted(set(alt.clears))),
            alt.handoff,
            finish,
        )


@attrs.frozen
class Version:
    """One version, as the enumerator reads it."""

    speakers: tuple[str, ...]
    humans: frozenset[str]
    writes: dict[str, frozenset[str]]
    #: (speaker, tool) -> the distinct alternatives, in order (one empty Effect for a plain tool)
    tools: dict[tuple[str, str], tuple[Effect, ...]]
    #: (speaker, tool) -> the declared alternatives as the compiler keeps them, same order
    declared: dict[tuple[str, str], tuple[Any, ...]]
    start: str
    initiator: str
    max_turns: int | None
    context: dict[str, Any]
    rules: tuple[tuple[dict[str, Any], dict[str, Any]], ...]  # (when, then) in evaluation order
    default: dict[str, Any]
    results: dict[str, tuple[str | None, ...] | None]  # custom target -> declared results

    @classmethod
    def of(cls, text: str, graphs: bool = False) -> Version:
        c = compile_flow(text)
        graph = c.knobs["graph"]
        tools: dict[tuple[str, str], tuple[Effect, ...]] = {}
        declared: dict[tuple[str, str], tuple[Any, ...]] = {}
        for t in c.tools:
            effects: dict[Effect, Any] = {}
            for alt in t.alternatives:
                effects.setdefault(Effect.of(alt), alt)
            if not effects:
                effects[Effect((), (), None, None)] = None
            tools[(t.speaker, t.name)] = tuple(effects)
            declared[(t.speaker, t.name)] = tuple(effects.values())
        order = sorted(
            range(len(graph["transitions"])), key=lambda i: graph["transitions"][i]["priority"]
        )
        return cls(
            tuple(c.speakers),
            frozenset(c.humans),
            {h: frozenset(c.human_writes.get(h, ())) for h in c.humans},
            tools,
            declared,
            graph["initial_speaker"],
            c.initiator,
            graph["max_turns"],
            dict(c.knobs["context_vars"]),
            tuple(
                (graph["transitions"][i]["when"], graph["transitions"][i]["then"]) for i in order
            ),
            graph["default_target"],
            {} if graphs else {d.name: d.results for d in c.customs if d.kind == "target"},
        )

    def tool_of(self, speaker: str, tool: str) -> tuple[Effect, ...] | None:
        return self.tools.get((speaker, tool))


# ── what the rules read ───────────────────────────────────────────────────────


def _conditions(cond: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield cond
    args = cond["args"]
    if cond["name"] in ("all_of", "any_of"):
        for c in args["conditions"]:
            yield from _conditions(c)
    elif cond["name"] == "not":
        yield from _conditions(args["condition"])


BUILT_IN_CONDITIONS = {
    "always",
    "from_speaker",
    "tool_called",
    "context_equals",
    "all_of",
    "any_of",
    "not",
}
BUILT_IN_TARGETS = {"agent", "round_robin", "stay", "revert_to_initiator", "terminate"}


def compared_values(versions: tuple[Version, ...]) -> dict[str, list[Any]]:
    """key -> the values some rule of either version compares it with."""
    out: dict[str, list[Any]] = {}
    for v in versions:
        for when, _ in v.rules:
            for c in _conditions(when):
                if c["name"] == "context_equals":
                    seen = out.setdefault(c["args"]["key"], [])
                    if not any(_j(x) == _j(c["args"]["value"]) for x in seen):
                        seen.append(c["args"]["value"])
    return out


def custom_calls(versions: tuple[Version, ...]) -> tuple[list[str], dict[str, list[str | None]]]:
    """Every custom condition call, and every custom target call with the results it may
    resolve to (either version's declaration; without one, any speaker or an end)."""
    conds: list[str] = []
    targets: dict[str, list[str | None]] = {}
    for v in versions:
        for when, then in (*v.rules, ({"name": "always", "args": {}}, v.default)):
            for c in _conditions(when):
                if c["name"] not in BUILT_IN_CONDITIONS:
                    call = c["name"] + _j(c["args"])
                    if call not in conds:
                        conds.append(call)
            if then["name"] not in BUILT_IN_TARGETS:
                call = then["name"] + _j(then["args"])
                declared = v.results.get(then["name"])
                options = list(declared) if declared is not None else [*v.speakers, None]
                seen = targets.setdefault(call, [])
                seen += [o for o in options if o not in seen]
    return conds, targets


# ── one turn of one version ───────────────────────────────────────────────────


@attrs.frozen
class Label:
    """What the participants do on a turn."""

    kind: str  # "say", "tool", "write", "handoff" (to ``tool``, a participant)
    tool: str | None = None
    effect: Effect | None = None  # for a tool of several alternatives: which one
    writes: tuple[tuple[str, Any], ...] = ()  # (key, value or UNSET)

    def __str__(self) -> str:
        if self.kind == "tool":
            return f"calls {self.tool}" + (f" {self.effect}" if self.effect is not None else "")
        if self.kind == "handoff":
            return f"hands off to {self.tool}"
        if self.kind == "write":
            return "writes " + ", ".join(f"{k}={v}" for k, v in self.writes)
        return "says"


def routed_tools(versions: tuple[Version, ...]) -> list[str]:
    """Every tool a rule of either version routes on."""
    out: list[str] = []
    for v in versions:
        for when, _ in v.rules:
            for c in _conditions(when):
                if c["name"] == "tool_called" and c["args"]["tool_name"] not in out:
                    out.append(c["args"]["tool_name"])
    return out


def labels(
    versions: tuple[Version, ...],
    speaker: str,
    kickoff: bool,
    values: dict[str, list[Any]],
    graphs: bool = False,
) -> list[Label]:
    out: list[Label] = [Label("say")]
    calls: list[Label] = []
    if graphs:  # no declarations: anyone may call any tool and write any key
        if not kickoff:
            out += [Label("tool", t) for t in routed_tools(versions)]
            names = dict.fromkeys(s for v in versions for s in v.speakers)
            out += [Label("handoff", s) for s in names]
        # a call writes context on its turn too (a graph's participant writes anything)
        calls = [label for label in out if label.kind != "say"]
        keys = sorted(values)
    else:
        keys = sorted(set().union(*(v.writes.get(speaker, frozenset()) for v in versions)))
    for v in versions if not graphs else ():
        if speaker in v.humans or kickoff:
            continue
        for (who, tool), effects in v.tools.items():
            if who != speaker:
                continue
            if len(effects) == 1:
                out.append(Label("tool", tool))
            else:
                out += [Label("tool", tool, e) for e in effects]
    domains = []
    for k in keys:
        domain: list[Any] = [None, OTHER]
        if k in values:
            domain += [UNSET, *values[k]]
        domains.append(domain)
    for combo in itertools.product(*domains):
        written = tuple((k, x) for k, x in zip(keys, combo, strict=True) if x is not None)
        if written:
            out.append(Label("write", writes=written))
            if graphs:
                out += [attrs.evolve(call, writes=written) for call in calls]
    unique: list[Label] = []
    for label in out:
        if label not in unique:
            unique.append(label)
    return unique


@attrs.frozen
class Step:
    """What a version does with a turn: ``refused``; or the context after it and where
    the run goes ("speaker", name) / ("end", reason)."""

    refused: str | None
    context: tuple[tuple[str, str], ...] = ()
    goes: tuple[str, str | None] = ("end", None)


def _freeze(ctx: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, _j(v)) for k, v in ctx.items()))


def _thaw(frozen: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    return {k: json.loads(v) for k, v in frozen}


def _holds(
    cond: dict[str, Any], sender: str, tool: str | None, ctx: dict[str, Any], world: dict[str, Any]
) -> bool:
    name, args = cond["name"], cond["args"]
    if name == "always":
        return True
    if name == "from_speaker":
        return bool(args["agent_id"] == sender)
    if name == "tool_called":
        return bool(tool is not None and args["tool_name"] == tool)
    if name == "context_equals":
        return bool(ctx.get(args["key"]) == args["value"])  # Python equality; missing is null
    if name == "all_of":
        return all(_holds(c, sender, tool, ctx, world) for c in args["conditions"])
    if name == "any_of":
        return any(_holds(c, sender, tool, ctx, world) for c in args["conditions"])
    if name == "not":
        return not _holds(args["condition"], sender, tool, ctx, world)
    return bool(world[name + _j(args)])


def _resolve(
    v: Version, target: dict[str, Any], sender: str, world: dict[str, Any]
) -> tuple[str, str | None]:
    name, args = target["name"], target["args"]
    if name == "agent":
        return ("speaker", args["agent_id"])
    if name == "round_robin":
        return ("speaker", v.speakers[(v.speakers.index(sender) + 1) % len(v.speakers)])
    if name == "stay":
        return ("speaker", sender)
    if name == "revert_to_initiator":
        return ("speaker", v.initiator)
    if name == "terminate":
        return ("end", args.get("reason") or "workflow_terminated")
    chosen = world[name + _j(args)]
    return ("end", CUSTOM_END) if chosen is None else ("speaker", chosen)


def step(
    v: Version,
    speaker: str,
    kickoff: bool,
    label: Label,
    frozen: tuple[tuple[str, str], ...],
    turn: int,
    world: dict[str, Any],
    graphs: bool = False,
) -> Step:
    if speaker not in v.speakers:  # pragma: no cover - the runs only reach shared speakers
        return Step(f"{speaker} is not a speaker")
    ctx = _thaw(frozen)
    tool: str | None = None
    effect: Effect | None = None
    if graphs:  # the turn does what it says: nothing is declared, nothing refused
        if label.kind == "tool":
            tool = label.tool
        if label.kind == "handoff":
            if label.tool not in v.speakers:
                return Step(f"{label.tool} is not a participant")
            effect = Effect((), (), label.tool, None)
        for k, value in label.writes:
            if value == UNSET:
                ctx.pop(k, None)
            else:
                ctx[k] = value
    elif label.kind == "write" and speaker not in v.humans:
        # a model speaker's bare writes: a call of the first tool alternative that makes
        # exactly them (docs/language.md, scenarios), one that writes their very values
        # (the same JSON) before one whose values are only == to them; its kickoff is a
        # plain message
        if kickoff:
            return Step(f"{speaker}'s kickoff is a plain message")
        sets = {k: x for k, x in label.writes if x != UNSET}
        clears = {k for k, x in label.writes if x == UNSET}
        candidates = [
            (name, e)
            for (who, name), effects in v.tools.items()
            if who == speaker
            for e in effects
            if e.handoff is None
            and e.finish is None
            and set(e.clears) == clears
            and {k: json.loads(x) for k, x in e.sets} == sets
        ]
        very = [
            (n, e) for n, e in candidates if dict(e.sets) == {k: _j(x) for k, x in sets.items()}
        ]
        if not candidates:
            return Step(f"{speaker} is a model speaker and no tool writes just that")
        name, e = (very or candidates)[0]
        label = Label("tool", name, e)
    if label.kind == "write" and not graphs:
        allowed = v.writes.get(speaker)
        assert allowed is not None
        for k, value in label.writes:
            if k not in allowed:
                return Step(f"{speaker} may not write {k}")
            if value == UNSET:
                ctx.pop(k, None)
            else:
                ctx[k] = value
    elif label.kind == "tool" and not graphs:
        if speaker in v.humans:
            return Step(f"{speaker} is a human")
        assert label.tool is not None and not kickoff
        effects = v.tool_of(speaker, label.tool)
        if effects is None:
            return Step(f"{speaker} has no tool {label.tool}")
        if label.effect is None:
            if len(effects) > 1:
                return Step(f"{label.tool} does several things")
            effect = effects[0]
        elif label.effect in effects:  # (a bare write found its alternative among them too)
            effect = label.effect
        else:  # none writes its very values: the first whose values are == to them
            wanted = {k: json.loads(x) for k, x in label.effect.sets}
            effect = next(
                (
                    e
                    for e in effects
                    if (e.clears, e.handoff, e.finish)
                    == (label.effect.clears, label.effect.handoff, label.effect.finish)
                    and {k: json.loads(x) for k, x in e.sets} == wanted
                ),
                None,
            )
            if effect is None:
                return Step(f"{label.tool} has no such alternative")
        tool = label.tool
        for k in effect.clears:  # delete, then set
            ctx.pop(k, None)
        for k, value in effect.sets:
            ctx[k] = json.loads(value)
    goes: tuple[str, str | None]
    if effect is not None and effect.finish is not None:
        goes = ("end", effect.finish)
    elif effect is not None and effect.handoff is not None:
        goes = ("speaker", effect.handoff)
    else:
        for when, then in v.rules:
            if _holds(when, speaker, tool, ctx, world):
                goes = _resolve(v, then, speaker, world)
                break
        else:
            goes = _resolve(v, v.default, speaker, world)
        if graphs and goes[0] == "speaker" and goes[1] not in v.speakers:
            # a custom target of a graph may pick anyone: one of the other version's
            # speakers only is no participant here, as for a hand-off to it (above)
            return Step(f"{goes[1]} is not a participant")
    if goes[0] == "speaker" and v.max_turns is not None and turn >= v.max_turns:
        goes = ("end", "max_turns")
    return Step(None, _freeze(ctx), goes)


# ── the runs of both ──────────────────────────────────────────────────────────


@attrs.frozen
class Difference:
    """A run after which the versions are told apart."""

    run: tuple[
        tuple[str, Label, tuple[tuple[str, Any], ...]], ...
    ]  # (speaker, label, world) per turn
    old: Step
    new: Step


def first_difference(
    old_text: str, new_text: str, depth: int, graphs: bool = False
) -> Difference | None:
    """A shortest run of at most ``depth`` turns that tells the versions apart, or None.

    ``graphs``: read both as graphs without declarations (``flowc diff`` does so when one
    version declares no tool, human or custom target's results and the other does): any
    participant may call any tool a rule names and write any key a rule reads, on any
    turn (tools not on the kickoff), and a custom target may pick any participant."""
    versions = (Version.of(old_text, graphs), Version.of(new_text, graphs))
    vo, vn = versions
    if vo.start != vn.start:
        return Difference(
            (), Step(None, goes=("speaker", vo.start)), Step(None, goes=("speaker", vn.start))
        )
    values = compared_values(versions)
    conds, targets = custom_calls(versions)
    worlds = [
        {**dict(zip(conds, bools, strict=True)), **dict(zip(targets, picks, strict=True))}
        for bools in itertools.product((True, False), repeat=len(conds))
        for picks in itertools.product(*targets.values())
    ]
    start = (vo.start, _freeze(vo.context), _freeze(vn.context))
    # a state is also its turn number: on a later turn a version may reach its cap
    seen = {(start, 1)}
    queue: deque[
        tuple[
            tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]],
            int,
            tuple[Any, ...],
        ]
    ] = deque([(start, 1, ())])
    label_cache: dict[tuple[str, bool], list[Label]] = {}
    while queue:
        (speaker, co, cn), turn, run = queue.popleft()
        if turn > depth:
            continue
        kickoff = turn == 1
        key = (speaker, kickoff)
        if key not in label_cache:
            label_cache[key] = labels(versions, speaker, kickoff, values, graphs)
        for label in label_cache[key]:
            for world in worlds:
                so = step(vo, speaker, kickoff, label, co, turn, world, graphs)
                sn = step(vn, speaker, kickoff, label, cn, turn, world, graphs)
                if so.refused is not None and sn.refused is not None:
                    continue
                here = (*run, (speaker, label, tuple(sorted(world.items()))))
                if (so.refused is None) != (sn.refused is None) or so.goes != sn.goes:
                    return Difference(here, so, sn)
                if so.goes[0] == "end":
                    continue
                nxt = (str(so.goes[1]), so.context, sn.context)
                if (nxt, turn + 1) not in seen:
                    seen.add((nxt, turn + 1))
                    queue.append((nxt, turn + 1, here))
    return None
