"""Runs and routings as ``flowc diff`` words them: a run's turns joined by arrows (each
with its tool call, the context it writes and what it assumes), and where a version goes
after a run (the next speaker or the ending, and by which rule)."""

from __future__ import annotations

from collections.abc import Mapping

from flowc.compiler.analysis.explore import DEFAULT, FINISH, HANDOFF
from flowc.compiler.analysis.lockstep import MAX_TURNS, Routed, Turn
from flowc.compiler.analysis.runs import shown_turns
from flowc.diagnostics import MAX_QUOTED, elide
from flowc.dsl.formatter import format_name, format_value
from flowc.escaping import Phrase, Quoted, phrase

__all__ = [
    "render_run",
    "routed_phrase",
    "routed_text",
    "run_phrase",
    "turn_label",
    "turn_phrase",
]


def turn_phrase(turn: Turn) -> Phrase:
    """A turn of a run: its speaker, and in parentheses its tool call (and effects), the
    context values and the custom conditions and targets it assumes."""
    parts: list[Phrase] = []
    if turn.tool is not None:
        parts.append(
            phrase(
                Quoted(format_name(turn.tool)),
                *((": ", Quoted(turn.effects)) if turn.effects else ()),
            )
        )
    if turn.handoff is not None:
        parts.append(phrase("hands off to ", Quoted(format_name(turn.handoff))))
    for k, v in turn.context:
        value: str | Quoted = (
            "unset" if v is None else v if v == "another value" else Quoted(format_value(v))
        )
        parts.append(phrase(Quoted(format_name(k)), " = ", value))
    parts += [phrase(Quoted(c), f" is {'true' if v else 'false'}") for c, v in turn.assumed]
    parts += [phrase(Quoted(c)) for c in turn.chosen]
    name = Quoted(format_name(turn.speaker))
    return phrase(name, " (", phrase("; ").join(parts), ")") if parts else phrase(name)


def turn_label(turn: Turn) -> str:
    return str(turn_phrase(turn))


def _elided(p: Phrase) -> Phrase:
    """``p``, or its text cut short around a ``...`` (:func:`elide`), then quoted whole."""
    text = str(p)
    return p if len(text) <= MAX_QUOTED else phrase(Quoted(elide(text)))


def run_phrase(turns: tuple[Turn, ...]) -> Phrase:
    """A run, its turns joined by arrows, each cut short when it is long; past
    :data:`~flowc.compiler.analysis.runs.MAX_SHOWN_TURNS` turns, its first and last turns
    only, with how many are left out (as ``check`` shows a counterexample).

    >>> from flowc.compiler.analysis.lockstep import Turn
    >>> str(run_phrase(tuple(Turn(f"s{i}", None, 0) for i in range(40)))).split(" → ")[14:17]
    ['s14', '(10 more turns)', 's25']
    """
    if not turns:
        return phrase("(the kickoff)")
    shown = shown_turns(turns, phrase)  # only the turns shown are worded
    return phrase(" → ").join(
        _elided(t if isinstance(t, Phrase) else turn_phrase(t)) for t in shown
    )


def render_run(turns: tuple[Turn, ...]) -> str:
    return str(run_phrase(turns))


def routed_text(r: Routed, rules: Mapping[int, str]) -> str:
    return str(routed_phrase(r, rules))


def routed_phrase(r: Routed, rules: Mapping[int, str]) -> Phrase:
    """Where a side routes after a run: the next speaker or the ending, and by what."""
    if r.refused is not None:
        return phrase("refuses the turn: ", Quoted(r.refused))
    where = (
        "the default"
        if r.fired == DEFAULT
        else "a handoff"
        if r.fired == HANDOFF
        else "a finish"
        if r.fired == FINISH
        else rules.get(r.fired, f"rule {r.fired + 1}")
    )
    goes = (
        phrase("terminate ", Quoted(format_value(r.reason)))
        if r.next is None and r.reason != MAX_TURNS
        else phrase("stops at max_turns")
        if r.next is None
        else phrase(Quoted(format_name(r.next)))
    )
    return phrase(goes, f" ({where})") if r.reason != MAX_TURNS else goes
