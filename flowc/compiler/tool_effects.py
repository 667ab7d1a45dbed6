"""What a declared tool's call does (its alternatives), and which one a call takes.

A tool declared as ``tool decide hands off to b | finishes "done"`` has alternatives; a
scripted call, a scenario's ``calls`` and a model speaker's bare turn each take one of
them. Compile, check, test and run share these rules (and their words).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from flowc.compiler.model import json_text
from flowc.dsl.names import format_name, format_value

if TYPE_CHECKING:  # the syntax tree is loaded by whoever has one (a worker never does)
    from flowc.dsl import nodes as n


@attrs.frozen
class ToolEffectInfo:
    """One alternative of a declared tool: what one call does."""

    sets: tuple[tuple[str, Any], ...] = ()
    clears: tuple[str, ...] = ()
    handoff: str | None = None
    finish: str | None = None  # the reason, when the tool finishes the run

    def text(self) -> str:
        """The alternative as a declaration writes it: ``clears j, sets k = 1, hands off to b``.

        >>> ToolEffectInfo((("k", 1),), ("j",), "b").text()
        'clears j, sets k = 1, hands off to b'
        """
        parts = [f"clears {_key(k)}" for k in self.clears]
        parts += [f"sets {_key(k)} = {format_value(v)}" for k, v in self.sets]
        if self.handoff is not None:
            parts.append(f"hands off to {format_name(self.handoff)}")
        if self.finish is not None:
            parts.append(f"finishes {format_value(self.finish)}")
        return ", ".join(parts) or "nothing"


#: a model speaker's kickoff (the run's first turn) with a call or a bare step, refused
#: by the scenario checks (E111) and by a script's check
KICKOFF_TEXT_ONLY = (
    "the run's first turn, by `{speaker}`, is posted as a plain message, as AG2 does "
    "(its model never runs for it): write text only, and give the tool call or "
    "hand-off to a later turn"
)


def _key(key: Any) -> str:
    """A context key as a declaration writes it; a key that is no string (an agent's
    call may delete ``7``) as its JSON value.

    >>> _key("done"), _key(7), _key(None)
    ('done', '7', 'null')
    """
    return format_name(key) if isinstance(key, str) else format_value(key)


class AlternativeError(ValueError):
    """A scripted tool call that matches none of the tool's declared alternatives."""


def alternative_index(
    alts: Sequence[ToolEffectInfo],
    effect: ToolEffectInfo,
    same: Callable[[ToolEffectInfo, ToolEffectInfo], bool] = operator.eq,
) -> int | None:
    """The index of the alternative of ``alts`` that a call doing ``effect`` takes: of
    those ``same`` takes for it (by default, equal as declared, its values compared with
    Python's ``==`` as AG2 compares context values), the one that writes the same JSON
    values, else the first; None when there is none. ``true``, ``1`` and ``1.0`` are equal
    under ``==`` but three alternatives: a call that writes ``1`` takes ``sets k = 1``.

    >>> alts = (ToolEffectInfo((("k", True),)), ToolEffectInfo((("k", 1),)))
    >>> [alternative_index(alts, ToolEffectInfo((("k", v),))) for v in (True, 1, 1.0, 2)]
    [0, 1, 0, None]
    """
    return taken_index(alts, effect, same, lambda alt, eff: _typed(alt.sets) == _typed(eff.sets))


def taken_index(
    alts: Sequence[Any],
    effect: Any,
    same: Callable[[Any, Any], bool],
    exact: Callable[[Any, Any], bool],
) -> int | None:
    """The index of the alternative of ``alts`` a call doing ``effect`` takes: of those
    ``same`` takes for it, the first ``exact`` takes for it (it writes the very values),
    else the first; None when there is none. The one rule of :func:`alternative_index`
    and of the behavioural diff's matching of its effect keys.

    >>> taken_index([1, 2.0, 2], 2, operator.eq, lambda a, e: type(a) is type(e))
    2
    """
    first = None
    for i, alt in enumerate(alts):
        if same(alt, effect):
            if exact(alt, effect):
                return i
            if first is None:
                first = i
    return first


def _typed(sets: Iterable[tuple[Any, Any]]) -> dict[Any, str]:
    """Context writes with each value as its JSON text (``true`` is not ``1``)."""
    return {k: json_text(v) for k, v in sets}


def _writes_typed(alt: ToolEffectInfo, writes: tuple[Mapping[str, Any], Sequence[str]]) -> bool:
    """Whether a script call's writes give each of ``alt``'s writes the same JSON value."""
    return all(
        k in writes[0] and json_text(writes[0][k]) == json_text(v)
        for k, v in dict(alt.sets).items()
    )


def match_alternative(
    alts: tuple[ToolEffectInfo, ...],
    effects: ToolEffectInfo | None,
    handoff: str | None,
    finish: str | None,
    speaker: str,
    tool: str,
    writes: tuple[Mapping[str, Any], Sequence[str]] | None = None,
) -> ToolEffectInfo | None:
    """The declared alternative a scripted call of ``tool`` takes (``None`` for a tool
    declared without effects). ``effects`` is what a scenario writes after the tool
    (``calls decide hands off to billing``); ``handoff`` / ``finish`` what a script says.
    Raises :class:`AlternativeError` with the reason, in the words ``flowc test`` uses.

    >>> alts = (ToolEffectInfo(handoff="b"), ToolEffectInfo(finish="done"))
    >>> match_alternative(alts, None, "b", None, "a", "decide").handoff
    'b'
    >>> match_alternative(alts, None, None, None, "a", "decide")
    Traceback (most recent call last):
    ...
    flowc.compiler.tool_effects.AlternativeError: a's tool `decide` does one of several things (hands off to b | finishes "done"); say which with `handoff` or `finish`, or the writes (`set` / `delete`) of one that only writes context (in a scenario: `a calls decide hands off to b`)

    ``writes`` is a script call's ``(set, delete)``: alternatives that only write context
    are told apart by them (the one alternative whose writes the call includes).

    A script's ``handoff`` takes the alternative that only hands off, not one that also
    finishes (a finish wins over the handoff beside it, so that one ends the run):

    >>> both = (ToolEffectInfo(handoff="b", finish=""), ToolEffectInfo(handoff="b"))
    >>> match_alternative(both, None, "b", None, "a", "decide").finish is None
    True
    >>> match_alternative(both, None, None, "", "a", "decide").finish
    ''

    and, among those, the one with the most of the script's writes:

    >>> hand = (ToolEffectInfo(handoff="b"), ToolEffectInfo((("k", 1),), handoff="b"))
    >>> match_alternative(hand, None, "b", None, "a", "pass", ({"k": 1}, [])).sets
    (('k', 1),)
    >>> match_alternative(hand, None, "b", None, "a", "pass", ({}, [])).sets
    ()

    >>> rate = (ToolEffectInfo((("k", 1),)), ToolEffectInfo((("k", 2),)))
    >>> match_alternative(rate, None, None, None, "a", "rate", ({"k": 2}, [])).sets
    (('k', 2),)
    """
    if not alts:
        if effects is not None and effects != ToolEffectInfo():
            raise AlternativeError(
                f"{speaker}'s tool `{tool}` is declared with no effects, not {effects.text()}"
            )
        return None
    if effects is not None:
        index = alternative_index(alts, effects)
        if index is not None:
            return alts[index]
        options = " | ".join(a.text() for a in alts)
        raise AlternativeError(
            f"{speaker}'s tool `{tool}` is declared to do {options}, not {effects.text()}"
        )
    if len(alts) == 1 and handoff is None and finish is None:
        return alts[0]
    if handoff is None and finish is None and writes is not None:
        best = _most_writes([a for a in alts if a.handoff is None and a.finish is None], writes)
        if best and all(a == best[0] for a in best):  # one, or equal ones
            return next((a for a in best if _writes_typed(a, writes)), best[0])
    if handoff is not None or finish is not None:
        fitting = [
            a
            for a in alts
            if (handoff is None or a.handoff == handoff) and (finish is None or a.finish == finish)
        ]
        # the alternative that does just what the script says wins over one that also
        # finishes (or also hands off) beside it, then the one with most of its writes
        pool = [a for a in fitting if a.handoff == handoff and a.finish == finish] or fitting
        if writes is not None and len(pool) > 1:
            pool = _most_writes(pool, writes) or pool
            pool = [a for a in pool if _writes_typed(a, writes)] or pool
        if pool:
            return pool[0]
    options = " | ".join(
        f"hands off to {a.handoff}"
        if a.handoff is not None
        else f"finishes {format_value(a.finish)}"
        if a.finish is not None
        else a.text()
        for a in alts
    )
    if handoff is None and finish is None:
        raise AlternativeError(
            f"{speaker}'s tool `{tool}` does one of several things "
            f"({options}); say which with `handoff` or `finish`, or the "
            "writes (`set` / `delete`) of one that only writes context "
            f"(in a scenario: `{speaker} calls {tool} {alts[0].text()}`)"
        )
    raise AlternativeError(
        f"{speaker}'s tool `{tool}` is declared to do {options}, not what the script says"
    )


def bare_alternatives(
    alts: Mapping[str, tuple[ToolEffectInfo, ...]], effect: ToolEffectInfo
) -> list[tuple[str, int]]:
    """Every tool of ``alts`` (tool name -> alternatives) with an alternative that does
    exactly ``effect`` (the same writes, hand-off and finish), as ``(tool, index)`` of its
    first such alternative, in declaration order.

    >>> alts = {"go": (ToolEffectInfo(finish="done"), ToolEffectInfo(handoff="b")),
    ...         "pass": (ToolEffectInfo(handoff="b"),)}
    >>> bare_alternatives(alts, ToolEffectInfo(handoff="b"))
    [('go', 1), ('pass', 0)]

    Values are equal under ``==`` (``true``, ``1``, ``1.0``), but the tools whose
    alternative writes the very values come first: only they, when there are any.

    >>> alts = {"yes": (ToolEffectInfo((("k", True),)),), "one": (ToolEffectInfo((("k", 1),)),)}
    >>> bare_alternatives(alts, ToolEffectInfo((("k", 1),))), bare_alternatives(alts, ToolEffectInfo((("k", 1.0),)))
    ([('one', 0)], [('yes', 0), ('one', 0)])
    """
    found, very = [], []
    for tool, tool_alts in alts.items():
        index = alternative_index(tool_alts, effect, same_effect)
        if index is not None:
            found.append((tool, index))
            if _typed(tool_alts[index].sets) == _typed(effect.sets):
                very.append((tool, index))
    return very or found


def bare_alternative(
    alts: Mapping[str, tuple[ToolEffectInfo, ...]], effect: ToolEffectInfo
) -> tuple[str, int] | None:
    """The declared alternative a model speaker's bare turn takes: ``(tool, index)`` of
    the one tool whose alternative does exactly ``effect``. The turn is a call of that
    tool everywhere (the routing's ``when tool``, the properties, the transcript);
    ``None`` when no tool does it, or more than one does (then the turn is refused, see
    :func:`bare_effect_refusal`).

    >>> alts = {"go": (ToolEffectInfo(finish="done"), ToolEffectInfo(handoff="b")),
    ...         "pass": (ToolEffectInfo((("k", 1),)),)}
    >>> bare_alternative(alts, ToolEffectInfo(handoff="b"))
    ('go', 1)
    >>> bare_alternative(alts, ToolEffectInfo(finish="")) is None
    True
    """
    found = bare_alternatives(alts, effect)
    return found[0] if len(found) == 1 else None


def same_effect(alt: ToolEffectInfo, effect: ToolEffectInfo) -> bool:
    """Whether ``effect`` (what a call did) is exactly the declared ``alt``: the same
    writes (in any order), the same hand-off, and a finish with the same close reason (an
    empty reason closes as ``"finished"``, as AG2 closes it).

    >>> same_effect(ToolEffectInfo((("k", 1),), finish=""), ToolEffectInfo((("k", 1),),
    ...                                                           finish="finished"))
    True
    >>> same_effect(ToolEffectInfo((("k", True),)), ToolEffectInfo((("k", "yes"),)))
    False
    """
    return (
        dict(alt.sets) == dict(effect.sets)
        and set(alt.clears) == set(effect.clears)
        and alt.handoff == effect.handoff
        and (alt.finish is None) == (effect.finish is None)
        and finish_reason(alt.finish or "") == finish_reason(effect.finish or "")
    )


def bare_effect_refusal(
    speaker: str,
    alts: Mapping[str, tuple[ToolEffectInfo, ...]],
    effect: ToolEffectInfo,
    *,
    script: bool = False,
) -> str | None:
    """Why a model speaker's bare turn (``a hands off to b``, a script's ``handoff``
    without ``tool``) cannot run: as in AG2, where a hand-off, a finish and a context write
    come from a tool's return, a model speaker's turn does only what one alternative of
    one of its declared ``alts`` (tool name -> alternatives) does, and is a call of that
    tool; when two tools each do it, the turn does not say which. ``None`` when one does.
    ``script``: the advice is a script's ``tool:``, not a scenario's ``calls``.

    >>> go = {"go": (ToolEffectInfo(handoff="b"),)}
    >>> bare_effect_refusal("a", go, ToolEffectInfo(handoff="b")) is None
    True
    >>> print(bare_effect_refusal("a", go, ToolEffectInfo(finish="x")))
    `a` is a model speaker and none of its tools finishes "x" (declared: go: hands off to b); a model speaker hands off, finishes and writes context only through its declared tools
    >>> two = {**go, "pass": (ToolEffectInfo(handoff="b"), ToolEffectInfo(finish="x"))}
    >>> print(bare_effect_refusal("a", two, ToolEffectInfo(handoff="b")))
    `a`'s step hands off to b is ambiguous: its tools `go` and `pass` both do that, and the step is a call of one of them; write `a calls go` or `a calls pass hands off to b`
    >>> print(bare_effect_refusal("a", two, ToolEffectInfo(handoff="b"), script=True))
    `a`'s step hands off to b is ambiguous: its tools `go` and `pass` both do that, and the step is a call of one of them; give the call its `tool` (`tool: go` or `tool: pass`)
    >>> three = {**two, "next": (ToolEffectInfo(handoff="b"),), "stay": (ToolEffectInfo(),)}
    >>> print(bare_effect_refusal("a", three, ToolEffectInfo(handoff="b")))
    `a`'s step hands off to b is ambiguous: its tools `go`, `pass` and `next` all do that, and the step is a call of one of them; write `a calls go` or `a calls pass hands off to b` or `` a calls `next` ``
    """
    found = bare_alternatives(alts, effect)
    if len(found) > 1:
        tools = [tool for tool, _ in found]
        listed = ", ".join(f"`{t}`" for t in tools[:-1]) + f" and `{tools[-1]}`"
        if script:
            advice = "give the call its `tool` (" + " or ".join(f"`tool: {t}`" for t in tools) + ")"
        else:
            advice = "write " + " or ".join(
                _code(
                    f"{format_name(speaker)} calls {format_name(t)}"
                    + (f" {alts[t][i].text()}" if len(alts[t]) > 1 else "")
                )
                for t, i in found
            )
        return (
            f"`{speaker}`'s step {effect.text()} is ambiguous: its tools {listed} "
            f"{'both' if len(tools) == 2 else 'all'} do that, and the step is a call of one "
            f"of them; {advice}"
        )
    if found:
        return None
    declared = "; ".join(
        f"{name}: " + " | ".join(a.text() for a in tool_alts) if tool_alts else name
        for name, tool_alts in sorted(alts.items())
    )
    return (
        f"`{speaker}` is a model speaker and none of its tools {effect.text()}"
        + (f" (declared: {declared})" if declared else " (it declares none)")
        + "; a model speaker hands off, finishes and writes context only through its "
        "declared tools"
    )


def _code(text: str) -> str:
    """``text`` quoted as code: in double backquotes when it holds a backquoted name.

    >>> print(_code("a calls go"), _code("a calls `next`"))
    `a calls go` `` a calls `next` ``
    """
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _most_writes(
    alts: Sequence[ToolEffectInfo], writes: tuple[Mapping[str, Any], Sequence[str]]
) -> list[ToolEffectInfo]:
    """The alternatives that make the most of a script call's writes ``(set, delete)`` and
    none it does not make (the call's writes land anyway, so any of them writes the same).

    >>> alts = (ToolEffectInfo(clears=("k",)), ToolEffectInfo((("k", None),), ("k",)))
    >>> _most_writes(alts, ({"k": None}, ["k"])) == [alts[1]]
    True
    >>> twice = (ToolEffectInfo((("k", 1),)), ToolEffectInfo((("k", 1), ("k", 2))))
    >>> _most_writes(twice, ({"k": 2}, [])) == [twice[1]]
    True
    """
    sets, deletes = writes
    # (what an alternative leaves written: a key it sets twice keeps its last value)
    made = [(a, dict(a.sets)) for a in alts]
    within = [
        (a, eff)
        for a, eff in made
        if all(k in sets and sets[k] == v for k, v in eff.items())
        and all(k in deletes for k in a.clears)
    ]
    most = max((len(eff) + len(a.clears) for a, eff in within), default=0)
    return [a for a, eff in within if len(eff) + len(a.clears) == most]


def human_write_refusal(who: str, key: str, allowed: Sequence[str]) -> str:
    """Why a human may not write ``key`` (the words compile, check, test and run share).

    >>> human_write_refusal("user", "done", ["rating"])
    '`user` is a human that may write only context.rating, not context.done'
    """
    may = ", ".join(f"context.{format_name(k)}" for k in allowed)
    return (
        f"`{who}` is a human that may write only {may}, not context.{format_name(key)}"
        if allowed
        else f"`{who}` is a human that declares no context keys it may write, so not "
        f"context.{format_name(key)}"
    )


def terminate_reason(reason: str) -> str:
    """The close reason of a ``terminate``: AG2 closes an empty one as ``workflow_terminated``."""
    return reason or "workflow_terminated"


def finish_reason(reason: str) -> str:
    """The close reason of a tool's ``Finish``: AG2 closes an empty one as ``finished``."""
    return reason or "finished"


def effects_info(alt: tuple[n.Effect, ...]) -> ToolEffectInfo:
    """What a written effect list (``sets k = 1, hands off to b``) does."""
    sets: list[tuple[str, Any]] = []
    clears: list[str] = []
    handoff: str | None = None
    finish: str | None = None
    from flowc.dsl import nodes as n

    for eff in alt:
        if isinstance(eff, n.SetEffect):
            sets.append((eff.key.value, eff.value.value))
        elif isinstance(eff, n.ClearEffect):
            clears.append(eff.key.value)
        elif isinstance(eff, n.HandoffEffect):
            handoff = eff.target.value
        else:
            finish = eff.reason.value if eff.reason else "finished"
    return ToolEffectInfo(tuple(sets), tuple(clears), handoff, finish)
