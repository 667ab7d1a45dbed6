"""The comparison of a checker's property results with the brute force.

:func:`disagreements` takes a generated case (a flow, its properties and its enumerated
runs, :mod:`tests.property_check.strategies`) and what a checker says of each property
(objects shaped as ``flowc.compiler.analysis.properties.PropertyResult``: ``prop``,
``verdict``, ``run``, ``note``) and lists where they differ:

- the verdict: "holds" exactly when every complete run of the flow satisfies the
  property (:func:`tests.property_check.meaning.holds`); "unknown" is never right on
  these flows (they are small: the analysis is complete);
- for "violated", the checker's run (``run.turns``, then ``run.next`` or the close
  reason) must be a run of the flow - replayed turn by turn from the kickoff on the
  enumerator, each turn's speaker, tool and alternative, a human's writes, the custom
  conditions it assumed and the custom target's choice matched, and the next speaker or
  ending after each - and it must *show* the violation: every complete run that begins
  with it violates the property, with a violation definite by its last turn (the
  module docstring of :mod:`tests.property_check.meaning` defines "definite");
- and it must be shortest: as long as the least violation turn over all runs of the
  flow. (The violation turn of a run depends on its turns up to it alone, so the
  prefixes of that length of the runs attaining the least are the shortest run
  prefixes that show the property broken.)

:func:`brute_force_results` is a checker made of the brute force itself (for testing this
comparison), and :func:`minimize` shrinks a disagreement to a small flow and property.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from flowc import FlowError
from flowc.compiler import model as m
from flowc.compiler import properties as p
from tests.diff import brute_force as bf
from tests.property_check.meaning import violation_turn
from tests.property_check.runs import Record, ReplayError, Run, Runs, subexpressions


@attrs.frozen
class Disagreement:
    prop: p.Property
    what: str

    def __str__(self) -> str:
        return f"{self.prop!r}: {self.what}"


def _show(run: Sequence[Record]) -> str:
    return " | ".join(map(str, run))


def _show_checker_run(run: Any) -> str:
    if run is None:
        return "no run"
    turns = [
        f"{t.speaker}"
        + (f"({t.tool})" if t.tool else "")
        + (f" sets {list(t.sets)}" if t.sets else "")
        + (f" clears {list(t.clears)}" if t.clears else "")
        + (f" assumes {list(t.assumed)}" if t.assumed else "")
        + (f" picks {t.custom_choice[0]}" if t.custom_choice else "")
        for t in run.turns
    ]
    end = f"next {run.next}" if run.next is not None else f"ends {run.reason!r}"
    return " | ".join([*turns, end])


def least_violation(runs: Runs, prop: p.Property) -> int | None:
    """None when every run of the flow satisfies ``prop``, else the least turn at which a
    run's violation is definite (the length of the shortest run showing it)."""
    turns = [t for run in runs.runs() if (t := violation_turn(prop, run)) is not None]
    return min(turns) if turns else None


def disagreements(
    runs: Runs, props: Sequence[p.Property], results: Sequence[Any]
) -> list[Disagreement]:
    """Where the checker's ``results`` (one per property, in order) differ from the
    brute force on the flow of ``runs``."""
    if len(results) != len(props):
        return [Disagreement(props[0], f"{len(results)} results for {len(props)} properties")]
    every = list(runs.runs())
    out: list[Disagreement] = []
    for prop, res in zip(props, results, strict=True):
        if res.prop != prop:
            out.append(Disagreement(prop, f"the result is of another property: {res.prop!r}"))
            continue
        turns = [violation_turn(prop, run) for run in every]
        bad = [(t, run) for t, run in zip(turns, every, strict=True) if t is not None]
        expected = "violated" if bad else "holds"
        if res.verdict != expected:
            why = (
                f"e.g. on {_show(bad[0][1])} (definite at turn {bad[0][0]})"
                if bad
                else f"on every one of the {len(every)} runs"
            )
            out.append(
                Disagreement(
                    prop,
                    f"the checker says {res.verdict} ({res.note or 'no note'}; run: "
                    f"{_show_checker_run(res.run)}), the brute force {expected} {why}",
                )
            )
            continue
        if expected == "holds":
            continue
        least = min(t for t, _ in bad)
        if res.run is None:
            out.append(Disagreement(prop, "violated without a run"))
            continue
        try:
            prefixes = runs.replay(res.run.turns, res.run.next, res.run.reason)
        except ReplayError as e:
            out.append(
                Disagreement(prop, f"the run {_show_checker_run(res.run)} is not the flow's: {e}")
            )
            continue
        shortest = next(run for t, run in bad if t == least)
        # the run shows the violation: every run that begins with it (with one of the
        # reasons a custom target may end it with) breaks the property by its last turn
        length = len(prefixes[0])
        unshown = [_unshown(runs, prop, prefix) for prefix in prefixes]
        if all(u is not None for u in unshown):
            out.append(Disagreement(prop, f"the run {_show(prefixes[0])} {unshown[0]}"))
        elif length != least:
            out.append(
                Disagreement(
                    prop,
                    f"the run has {length} turns ({_show(prefixes[0])}), the shortest that "
                    f"shows the violation {least}: {_show(shortest[:least])}",
                )
            )
    return out


def _unshown(runs: Runs, prop: p.Property, prefix: Run) -> str | None:
    """None when every complete run that begins with ``prefix`` violates ``prop``
    definitely by its last turn, else how one does not."""
    for run in runs.completions(prefix):
        t = violation_turn(prop, run)
        if t is None or t > len(prefix):
            return f"does not show the violation: it goes on as {_show(run)}, which " + (
                "satisfies it" if t is None else f"violates it from turn {t} only"
            )
    return None


# ── a checker made of the brute force (to test the comparison itself) ─────────


@attrs.frozen
class BruteTurn:
    """Shaped as ``flowc.compiler.analysis.runs.Turn``."""

    speaker: str
    tool: str | None = None
    sets: tuple[tuple[str, Any], ...] = ()
    clears: tuple[str, ...] = ()
    handoff: str | None = None
    finish: str | None = None
    assumed: tuple[tuple[str, bool], ...] = ()
    custom_choice: tuple[str | None] | None = None


@attrs.frozen
class BruteRun:
    turns: tuple[BruteTurn, ...]
    next: str | None
    reason: str | None = None


@attrs.frozen
class BruteResult:
    prop: p.Property
    verdict: str
    run: BruteRun | None = None
    assumed: tuple[str, ...] = ()
    note: str | None = None


def turns_of(runs: Runs, records: Sequence[Record]) -> BruteRun:
    """The records as a checker's run (the first choice that makes each turn)."""
    texts = {call: text for text, call in runs.condition_of_text.items()}
    state = runs.initial
    out: list[BruteTurn] = []
    for rec in records:
        succ = next(s for s in runs.successors(state) if s.record == rec)
        label, world = succ.choices[0]
        turn = BruteTurn(
            rec.speaker,
            assumed=tuple((texts[call], v) for call, v in world if call in texts),
        )
        if label.kind == "tool":
            effects = runs.version.tools[(rec.speaker, label.tool)]
            effect = label.effect or effects[0]
            turn = attrs.evolve(
                turn,
                tool=label.tool,
                sets=tuple((k, json.loads(v)) for k, v in effect.sets),
                clears=effect.clears,
                handoff=effect.handoff,
                finish=effect.finish,
            )
        elif label.kind == "write":
            turn = attrs.evolve(
                turn,
                sets=tuple(
                    (k, "other" if v == bf.OTHER else v) for k, v in label.writes if v != bf.UNSET
                ),
                clears=tuple(k for k, v in label.writes if v == bf.UNSET),
            )
        if succ.goes == ("end", bf.CUSTOM_END):
            turn = attrs.evolve(turn, custom_choice=(None,))
        out.append(turn)
        state = runs.after(succ) or state
    last = records[-1]
    reason = None if out[-1].custom_choice == (None,) else last.ended
    return BruteRun(tuple(out), last.next, reason)


def brute_force_results(runs: Runs, props: Sequence[p.Property]) -> list[BruteResult]:
    """What a correct checker says, found by the brute force."""
    every = list(runs.runs())
    out: list[BruteResult] = []
    for prop in props:
        bad = [(t, run) for run in every if (t := violation_turn(prop, run)) is not None]
        if not bad:
            out.append(BruteResult(prop, "holds"))
            continue
        least, run = min(bad, key=lambda x: x[0])
        out.append(BruteResult(prop, "violated", turns_of(runs, run[:least])))
    return out


# ── shrinking a disagreement ──────────────────────────────────────────────────


def _smaller_exprs(e: Any) -> list[Any]:
    """Simpler expressions to try in place of ``e``."""
    out: list[Any] = []
    if isinstance(e, m.Not):
        out += [e.condition, *(m.Not(x) for x in _smaller_exprs(e.condition))]
    elif isinstance(e, p.Previous):
        out += [e.expr, *(p.Previous(x) for x in _smaller_exprs(e.expr))]
    elif isinstance(e, m.AllOf | m.AnyOf):
        cs = e.conditions
        out += list(cs)
        if len(cs) > 2:
            out += [type(e)(cs[:i] + cs[i + 1 :]) for i in range(len(cs))]
        for i, c in enumerate(cs):
            out += [type(e)((*cs[:i], x, *cs[i + 1 :])) for x in _smaller_exprs(c)]
    elif isinstance(e, p.Ends) and e.reason is not None:
        out.append(p.Ends())
    return out


def _smaller_props(prop: p.Property) -> list[p.Property]:
    out: list[p.Property] = []
    pat, scope = prop.pattern, prop.scope
    if not isinstance(scope, p.Globally):
        out.append(attrs.evolve(prop, scope=p.Globally()))
    if isinstance(scope, p.Between | p.AfterUntil):
        out += [
            attrs.evolve(prop, scope=p.After(scope.q)),
            attrs.evolve(prop, scope=p.Before(scope.r)),
        ]
    for field in ("p", "s"):
        if hasattr(pat, field):
            out += [
                attrs.evolve(prop, pattern=attrs.evolve(pat, **{field: x}))
                for x in _smaller_exprs(getattr(pat, field))
            ]
    for field in ("q", "r"):
        if hasattr(scope, field):
            out += [
                attrs.evolve(prop, scope=attrs.evolve(scope, **{field: x}))
                for x in _smaller_exprs(getattr(scope, field))
            ]
    if getattr(pat, "within", None) is not None:
        out.append(attrs.evolve(prop, pattern=attrs.evolve(pat, within=None)))
    return out


def _names_ok(runs: Runs, prop: p.Property) -> bool:
    """The property names only speakers and tools the flow declares, and keys it sets
    (E101, E117)."""
    v = runs.version
    keys = set(v.context) | {k for ks in v.writes.values() for k in ks}
    keys |= {k for effects in v.tools.values() for e in effects for k, _ in e.sets}
    tools = {tool for _, tool in v.tools}
    for top in p.expressions(prop):
        for e in subexpressions(top):
            if isinstance(e, m.FromSpeaker) and e.agent_id not in v.speakers:
                return False
            if isinstance(e, m.ToolCalled) and e.tool_name not in tools:
                return False
            if isinstance(e, m.ContextEquals) and e.key not in keys:
                return False
    return True


def minimize(
    text: str, prop: p.Property, decide: Callable[[str, Sequence[p.Property]], Sequence[Any]]
) -> tuple[str, p.Property, Disagreement]:
    """A smaller flow and property on which the checker still disagrees with the brute
    force (``decide(text, props)``: its results on the flow ``text``): lines of the flow
    left out, the cap lowered, sub-expressions and scopes made simpler, one at a time
    while the disagreement stays."""

    def disagreement(text: str, prop: p.Property) -> Disagreement | None:
        try:
            runs = Runs(text, [prop])
        except (FlowError, ValueError):
            return None
        if not _names_ok(runs, prop):  # a property the flow's text could not hold
            return None
        try:
            found = disagreements(runs, [prop], decide(text, [prop]))
        except Exception:  # the checker fails otherwise on this candidate: not the same
            return None
        return found[0] if found else None

    found = disagreement(text, prop)
    assert found is not None, "no disagreement to shrink"
    changed = True
    while changed:
        changed = False
        lines = text.splitlines()
        candidates: list[tuple[str, p.Property]] = [
            ("\n".join(lines[:i] + lines[i + 1 :]) + "\n", prop)
            for i in range(len(lines))
            if not lines[i].startswith("max_turns")
        ]
        for i, line in enumerate(lines):
            if line.endswith(" {"):  # a speaker's block: all of it, or its body
                end = lines.index("}", i)
                rest = lines[end + 1 :]
                candidates.insert(0, ("\n".join([*lines[:i], *rest]) + "\n", prop))
                header = line.removesuffix(" {")
                candidates.insert(0, ("\n".join([*lines[:i], header, *rest]) + "\n", prop))
            if line.startswith("max_turns ") and int(line.split()[1]) > 1:
                lower = f"max_turns {int(line.split()[1]) - 1}"
                candidates.insert(0, ("\n".join([*lines[:i], lower, *lines[i + 1 :]]) + "\n", prop))
        candidates += [(text, q) for q in _smaller_props(prop)]
        for t, q in candidates:
            d = disagreement(t, q)
            if d is not None:
                text, prop, found, changed = t, q, d, True
                break
    return text, prop, found
