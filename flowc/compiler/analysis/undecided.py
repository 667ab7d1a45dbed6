"""The properties of both versions of a diff that the checker could not decide (I305) in
one version or both: whether their verdicts are the same is not known, so ``flowc diff``
does not call the behaviour "the same". What the report says of them: each property's
verdicts and the checker's note on why (:func:`undecided_text`), and which properties,
where, as the reason the verdict is unknown (:func:`undecided_reason`).

A verdict is the checker's on one version: ``"holds"``, ``"violated"`` or ``"unknown"``,
with the finding that gives it (I306, E116, I305; an I305's first note says why).

A property that could not be decided need not leave the verdict unknown: when the
comparison of the two versions shows that their runs are alike in all it reads, its
verdict is the same in both, known or not (:func:`agreeing` says when, and why).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flowc.compiler import model as m
from flowc.compiler.analysis.facts import Finding
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.monitor import walk
from flowc.compiler.properties import Property, expressions, property_json
from flowc.compiler.quoting import name_piece
from flowc.compiler.tool_effects import ToolEffectInfo
from flowc.escaping import Phrase, Quoted, phrase

UNKNOWN = "unknown"

#: a version's verdict as said of OLD (in the past) and of NEW
_IN_OLD = {"holds": "held", "violated": "was violated", UNKNOWN: "could not be decided"}
_IN_NEW = {"holds": "holds", "violated": "is violated", UNKNOWN: "could not be decided"}


def undecided_sides(
    old: dict[str, tuple[str, Finding]], new: dict[str, tuple[str, Finding]]
) -> list[tuple[str, str]]:
    """Each property both versions have (``old`` and ``new``: name -> verdict) that one
    of them or both could not decide, with where: ``OLD``, ``NEW`` or ``OLD and NEW``."""
    out = []
    for name, (now, _) in new.items():
        was = old.get(name)
        if was is not None and UNKNOWN in (was[0], now):
            sides = [side for side, v in (("OLD", was[0]), ("NEW", now)) if v == UNKNOWN]
            out.append((name, " and ".join(sides)))
    return out


def undecided_text(name: str, was: tuple[str, Finding], now: tuple[str, Finding]) -> Phrase:
    """``property `p` held in OLD and could not be decided in NEW: <why>``: the verdict
    in each version, and the checker's note on why it could not decide (once when both
    versions give the same)."""
    if was[0] == now[0] == UNKNOWN:
        head = phrase("property ", name_piece(name), " could not be decided in OLD and NEW")
    else:
        verdicts = f" {_IN_OLD[was[0]]} in OLD and {_IN_NEW[now[0]]} in NEW"
        head = phrase("property ", name_piece(name), verdicts)
    notes = {
        side: (f.diagnostic.notes[0] if f.diagnostic.notes else "") or "no reason given"
        for side, (verdict, f) in (("OLD", was), ("NEW", now))
        if verdict == UNKNOWN
    }
    if len(set(notes.values())) == 1:
        return phrase(head, ": ", Quoted(next(iter(notes.values()))))
    return phrase(head, ": in OLD, ", Quoted(notes["OLD"]), "; in NEW, ", Quoted(notes["NEW"]))


def undecided_reason(undecided: list[tuple[str, str]]) -> str:
    """Why the verdict is unknown: which properties could not be decided, and where.

    >>> undecided_reason([("p", "OLD")])
    'property `p` could not be decided in OLD: whether its verdict is the same in both versions is not known'
    >>> undecided_reason([("p", "NEW"), ("a b", "OLD and NEW")])
    'properties `p` (in NEW), `a b` (in OLD and NEW) could not be decided: whether their verdicts are the same in both versions is not known'
    """
    if len(undecided) == 1:
        ((name, sides),) = undecided
        which = phrase("property ", name_piece(name), f" could not be decided in {sides}")
        return f"{which}: whether its verdict is the same in both versions is not known"
    listed = phrase(", ").join(
        phrase(name_piece(name), f" (in {sides})") for name, sides in undecided
    )
    return (
        f"{phrase('properties ', listed)} could not be decided: whether their verdicts are"
        " the same in both versions is not known"
    )


#: the checker's finding on a property, and the verdict it gives
VERDICTS = {"E116": "violated", "I305": UNKNOWN, "I306": "holds"}


def property_verdicts(
    compiled: CompiledFlow | None, findings: Sequence[Finding]
) -> dict[str, tuple[str, Finding]]:
    """The checker's verdict on each of a version's properties, from the ``findings`` its
    exploration already made (nothing is explored again); none for a JSON graph."""
    if compiled is None or not compiled.properties:
        return {}
    by_span = {f.diagnostic.span: f for f in findings if f.diagnostic.code.id in VERDICTS}
    out = {}
    for prop in compiled.properties:
        found = by_span.get(prop.span) if prop.span is not None else None
        if found is not None:
            out[prop.name] = (VERDICTS[found.diagnostic.code.id], found)
    return out


# ── a property the comparison decides ────────────────────────────────────────
#
# Why a property may have the same verdict in both versions though the checker could not
# decide it in one of them or both. The lockstep (flowc.compiler.analysis.lockstep) takes,
# from each pair of states the two versions reach after the same turns, every turn either
# version allows there -- the same speaker saying text, calling the same tool (a tool of
# several alternatives: the one with the same effects), or, for a human, writing the same
# values to the keys a rule of either version reads -- on both, and compares what each
# version does after it: the speaker it schedules next, or that the run ends and with what
# reason (the cap's "max_turns" included), or that it refuses the turn. When that
# comparison ran to completion (not stopped by its state bound or memory budget, not
# partial) and found no difference at all (not even one that only what custom conditions
# or targets decide could make), then, by induction on the turns, each run of OLD has a run
# of NEW with the same turns and the other way round (a value a turn writes stands for the
# values the rules of either version do not tell apart from it, as in the diff's own claim
# that no run routes differently): on each turn the same speaker (the
# kickoff's included), the same tool called or none, and the run ends after the same turn
# with the same reason or goes on; a run that never ends is matched turn for turn for ever.
#
# A property's expression, read after turn t, sees who spoke it (`from`), the tool it
# called (`tool`), whether the run ends after it and why (`ends`), t (`turn`), all that of
# the turn before (`previous`), and the context after its writes (`context`). On matched
# runs all but the context is the same turn by turn, so a property that reads no context
# holds on a run of OLD exactly when it holds on the matched run of NEW, and on every run
# of OLD exactly when on every run of NEW: the same verdict, whatever the checker decided
# of it. This needs no bound of the property's: the lockstep's pairs of states do not count
# turns (a turn's number is part of no state, as it is of the checker's product of a flow
# with a property's monitor, which is why that one may stop short where the lockstep does
# not), and the argument is over runs of any length.
#
# It takes, besides: the same statement (as parsed: pattern and scope, a value compared as
# JSON, so `1` is not `true`); each speaker a `from` names under the same agent id in both
# (a property names agent ids, the lockstep pairs speakers by name); the same humans (a
# write the lockstep pairs with itself could be a human's in one version and a model
# speaker's tool call in the other). A `context.k` it reads is the same after each matched
# turn when k starts the same in both (its initial value, as JSON) and each turn writes it
# alike: the same tools on the same speakers with the same alternatives (a call takes the
# same effects in both), and each human may write the same keys (a human's write to a key
# no rule reads is no turn of the lockstep's, but it changes no routing, and both versions
# allow it). Where any of this is not known to hold -- the comparison stopped or found a
# difference, the statement changed, a key starts or is written otherwise -- the verdict
# stays unknown.


def weigh(
    old: CompiledFlow | None,
    old_findings: Sequence[Finding],
    new: CompiledFlow | None,
    new_findings: Sequence[Finding],
    complete: bool,
) -> tuple[dict[str, str], list[Phrase]]:
    """The properties of both versions that one of them or both could not decide (name ->
    where: :func:`undecided_sides`) and whose verdicts may differ, and a note for each of
    the others. ``complete``: the comparison of the two versions ran to completion and no
    run of them routes differently; only then is any shown to agree (the argument above)."""
    undecided = undecided_sides(
        property_verdicts(old, old_findings), property_verdicts(new, new_findings)
    )
    agreed = agreeing(old, new, undecided) if complete else []
    notes = [agreed_note(name, sides) for name, sides in agreed]
    return {name: sides for name, sides in undecided if (name, sides) not in agreed}, notes


def agreeing(
    old: CompiledFlow | None, new: CompiledFlow | None, undecided: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Of the ``undecided`` properties (:func:`undecided_sides`), those whose verdict is
    the same in both versions: to be asked only when the comparison of the two ran to
    completion and no run of them routes differently (the argument above)."""
    if old is None or new is None or old.humans != new.humans:
        return []
    was = {p.name: p for p in old.properties}
    now = {p.name: p for p in new.properties}
    return [
        (name, sides)
        for name, sides in undecided
        if name in was and name in now and _alike(was[name], now[name], old, new)
    ]


def _alike(was: Property, now: Property, old: CompiledFlow, new: CompiledFlow) -> bool:
    """The same statement, reading nothing the two versions' matched runs do not share."""
    if _statement(was) != _statement(now):
        return False
    read = [e for x in expressions(now) for e in walk(x)]
    ids = {e.agent_id for e in read if isinstance(e, m.FromSpeaker)}
    if any(_named(old).get(i) != _named(new).get(i) for i in ids):
        return False
    keys = {e.key for e in read if isinstance(e, m.ContextEquals)}
    if not keys:
        return True
    if _writers(old) != _writers(new):
        return False
    return all(
        (k in old.context_vars, m.json_text(old.context_vars.get(k)))
        == (k in new.context_vars, m.json_text(new.context_vars.get(k)))
        for k in keys
    )


def _statement(prop: Property) -> str:
    """What a property claims, as parsed (not as written, not where), as JSON text."""
    data = property_json(prop)
    return m.json_text({"pattern": data["pattern"], "scope": data["scope"]})


def _named(compiled: CompiledFlow) -> dict[str, str]:
    """agent id -> the speaker it names."""
    return {compiled.agent_id(s): s for s in compiled.speakers}


def _writers(compiled: CompiledFlow) -> tuple[dict[Any, Any], dict[str, frozenset[str]]]:
    """Who writes the context, and what: each speaker's tools with what each alternative
    does (its effects as declared, values as JSON), and each human's keys."""
    tools = {
        (t.speaker, t.name): frozenset(_effect(a) for a in t.alternatives) for t in compiled.tools
    }
    humans = {h: frozenset(compiled.human_writes.get(h, ())) for h in compiled.humans}
    return tools, humans


def _effect(a: ToolEffectInfo) -> tuple[Any, ...]:
    return (tuple((k, m.json_text(v)) for k, v in a.sets), a.clears, a.handoff, a.finish)


def agreed_note(name: str, sides: str) -> Phrase:
    """Why a property that could not be decided leaves the verdict as it is."""
    return phrase(
        "property ",
        name_piece(name),
        f" could not be decided in {sides}, but its verdict is the same in both versions: each "
        "run of either has a run of the other that is the same, turn by turn, in all the "
        "property reads",
    )
