"""The properties of both versions of a diff that the checker could not decide (I305) in
one version or both: whether their verdicts are the same is not known, so ``flowc diff``
does not call the behaviour "the same". What the report says of them: each property's
verdicts and the checker's note on why (:func:`undecided_text`), and which properties,
where, as the reason the verdict is unknown (:func:`undecided_reason`).

A verdict is the checker's on one version: ``"holds"``, ``"violated"`` or ``"unknown"``,
with the finding that gives it (I306, E116, I305; an I305's first note says why).
"""

from __future__ import annotations

from flowc.compiler.analysis.facts import Finding
from flowc.dsl.formatter import format_name
from flowc.escaping import Code, Phrase, Quoted, phrase

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
        head = phrase("property ", Code(format_name(name)), " could not be decided in OLD and NEW")
    else:
        verdicts = f" {_IN_OLD[was[0]]} in OLD and {_IN_NEW[now[0]]} in NEW"
        head = phrase("property ", Code(format_name(name)), verdicts)
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
    'properties `p` (in NEW), ``a b`` (in OLD and NEW) could not be decided: whether their verdicts are the same in both versions is not known'
    """
    if len(undecided) == 1:
        ((name, sides),) = undecided
        which = phrase("property ", Code(format_name(name)), f" could not be decided in {sides}")
        return f"{which}: whether its verdict is the same in both versions is not known"
    listed = phrase(", ").join(
        phrase(Code(format_name(name)), f" (in {sides})") for name, sides in undecided
    )
    return (
        f"{phrase('properties ', listed)} could not be decided: whether their verdicts are"
        " the same in both versions is not known"
    )
