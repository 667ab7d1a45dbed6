"""``flowc scenarios``: scenario blocks that together exercise every live coverage target.

Each scenario is a shortest run from the start to one target (see
:mod:`flowc.compiler.analysis.targets`), written in the flow's own syntax with an
``expect`` line after every turn for the routing decision it makes. Targets are
taken longest run first, and a target that an earlier scenario already exercises
gets no scenario of its own, so few scenarios cover everything. Generation is
deterministic: the same flow gives the same text.

The lower bound: a run ends at most once, and every ending is decided by exactly
one of a terminating rule, the default (when it terminates), a tool that finishes
the run, or the cap. So no set of scenarios is smaller than the number of those
that are live.

>>> from flowc import compile_flow
>>> gen = generate_scenarios(compile_flow('''
... speaker user: human
... speaker bot { tool done finishes "solved" }
... when from user then bot
... when from bot then user
... max_turns 4
... '''))
>>> (len(gen.scenarios), len(gen.coverable.live), gen.lower_bound)
(2, 7, 2)
>>> print(gen.text(), end="")
scenario "generated: max_turns 4" {
  user: "turn 1"
  expect next bot
  bot: "turn 2"
  expect next user
  user: "turn 3"
  expect next bot
  bot: "turn 4"
  expect terminate "max_turns"
}
<BLANKLINE>
scenario "generated: terminate \\"solved\\"" {
  user: "turn 1"
  expect next bot
  bot calls done: "turn 2"
  expect terminate "solved"
}
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from flowc.compiler import model as m
from flowc.compiler.analysis.facts import MAX_CAP_RUN, CheckOptions
from flowc.compiler.analysis.runs import Run, Turn
from flowc.compiler.analysis.system import System, system_of_flow
from flowc.compiler.analysis.targets import (
    CAP_REASON,
    Coverable,
    Target,
    TargetKey,
    alternative_of,
    coverage_targets,
)
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.properties import Property
from flowc.diagnostics import counted, listing
from flowc.dsl.formatter import format_name, format_value

__all__ = [
    "GeneratedScenario",
    "Generation",
    "GenerationError",
    "generate_scenarios",
    "violation_scenario",
]

TITLE_PREFIX = "generated: "


class GenerationError(Exception):
    """The flow's scenarios cannot be generated (the message says why and where)."""


@attrs.frozen
class GeneratedScenario:
    title: str
    target: Target  # the target it was generated for
    run: Run
    lines: tuple[str, ...]  # the scenario's items, unindented
    hits: frozenset[TargetKey]  # every target it exercises

    def text(self) -> str:
        body = "".join(f"  {line}\n" for line in self.lines)
        return f"scenario {format_value(self.title)} {{\n{body}}}\n"


@attrs.frozen
class Generation:
    coverable: Coverable
    scenarios: tuple[GeneratedScenario, ...]
    #: live targets no scenario reaches (only when exploration was cut short)
    missed: tuple[Target, ...]
    lower_bound: int
    #: live targets whose runs the judge refused (each breaks a property): (target, why)
    withheld: tuple[tuple[Target, str], ...] = ()

    def text(self) -> str:
        return "\n".join(s.text() for s in self.scenarios)

    @property
    def reached(self) -> frozenset[TargetKey]:
        return frozenset(k for s in self.scenarios for k in s.hits)


#: how many custom names, and lines of each, :func:`_customs` lists before "and N more"
_SHOWN = 5


def _customs(compiled: CompiledFlow) -> list[str]:
    """The custom conditions and targets the graph routes on, each named once with the
    lines that use it (`name` (lines 3, 7)), at most :data:`_SHOWN` names and lines of
    each, the rest counted: a message that stays short on a large flow (:func:`_places`)."""
    lines: dict[str, list[int | None]] = {}
    infos = {r.index: r for r in compiled.rules}
    for i, t in enumerate(compiled.graph.transitions):
        line = infos[i].span.line if i in infos else None
        names = [c.name for c in m.walk_condition(t.when) if isinstance(c, m.CustomCondition)]
        if isinstance(t.then, m.CustomTarget):
            names.append(t.then.name)
        for name in names:
            lines.setdefault(name, []).append(line)
    if isinstance(compiled.graph.default_target, m.CustomTarget):
        line = compiled.default_span.line if compiled.default_span is not None else None
        lines.setdefault(compiled.graph.default_target.name, []).append(line)
    return _places(lines)


def _places(lines: dict[str, list[int | None]]) -> list[str]:
    """Each name with its lines (see :func:`_customs`).

    >>> _places({"lucky": [4, 9, 12, 15, 20, 31, 40], "vip": [None], "gold": [3, 3]})
    ['`lucky` (lines 4, 9, 12, 15, 20, and 2 more)', '`vip`', '`gold` (line 3)']
    >>> _places({f"c{i}": [i] for i in range(7)})[-2:]
    ['`c4` (line 4)', 'and 2 more names']
    """
    out = []
    for name, where in lines.items():
        known = [str(w) for w in dict.fromkeys(where) if w is not None]
        word = "line" if len(known) == 1 else "lines"
        shown = ", ".join(listing(known, _SHOWN))
        out.append(f"`{name}` ({word} {shown})" if known else f"`{name}`")
    return listing(out, _SHOWN, "more names", "more name")


#: why a generated scenario may not be handed out (``None``: it may), see :func:`generate_scenarios`
Judge = Callable[[GeneratedScenario], "str | None"]


def generate_scenarios(
    compiled: CompiledFlow, options: CheckOptions | None = None, judge: Judge | None = None
) -> Generation:
    """Scenarios that together exercise every live target of ``compiled``, each a shortest run.

    ``judge`` (``flowc scenarios`` runs each scenario with the flow's property monitors)
    refuses a scenario by saying why: the target then gets the other shortest run the
    exploration knows, and when the judge refuses that too, no scenario; it is listed in
    :attr:`Generation.withheld`, and what the refused runs would have covered stays open.
    """
    customs = _customs(compiled)
    if customs:
        raise GenerationError(
            "the flow routes on custom conditions or targets ("
            + ", ".join(customs)
            + "), whose outcome a scenario cannot choose; scenarios are generated only for "
            "flows built from the built-in conditions and targets"
        )
    cov = coverage_targets(compiled, options)
    # (a cap past MAX_CAP_RUN turns is a target without a run: it stays in ``missed``)
    live = [
        t
        for t in cov.live
        if t.key in cov.witnesses or (t.key == ("end", CAP_REASON) and cov.cap_walk is not None)
    ]
    order = {t.key: i for i, t in enumerate(cov.targets)}
    todo = sorted(live, key=lambda t: (-cov.distance(t.key), order[t.key]))
    covered: set[TargetKey] = set()
    out: list[GeneratedScenario] = []
    withheld: list[tuple[Target, str]] = []
    for target in todo:
        if target.key in covered:
            continue
        chosen: GeneratedScenario | None = None
        why = ""
        for run in _candidates(cov, target, covered):
            hits = frozenset(cov.hits(run))
            assert target.key in hits, f"the witness of {target.name} does not exercise it"
            sc = GeneratedScenario(
                TITLE_PREFIX + target.label, target, run, tuple(_lines(cov.system, run)), hits
            )
            refused = judge(sc) if judge is not None else None
            if refused is None:
                chosen = sc
                break
            why = why or refused
        if chosen is None:
            withheld.append((target, why))
            continue
        covered |= chosen.hits
        out.append(chosen)
    # a target withheld when its turn came may be exercised by a later target's scenario
    withheld = [(t, why) for t, why in withheld if t.key not in covered]
    withheld_keys = {t.key for t, _ in withheld}
    missed = tuple(t for t in cov.live if t.key not in covered and t.key not in withheld_keys)
    return Generation(cov, tuple(out), missed, lower_bound(cov), tuple(withheld))


def _candidates(cov: Coverable, target: Target, covered: set[TargetKey]) -> list[Run]:
    """The shortest runs to ``target`` to try, best first (each one once)."""
    runs = [cov.best_run(target.key, covered)]
    other = cov.witness_run(target.key)
    if other != runs[0]:
        runs.append(other)
    return runs


def lower_bound(cov: Coverable) -> int:
    """No fewer scenarios can exercise every live target: each run ends at most once."""
    endings = 0
    for t in cov.live:
        if (
            (t.kind == "rule" and isinstance(cov.system.rules[t.key[1]].then, m.TerminateTarget))
            or (t.kind == "default" and isinstance(cov.system.default, m.TerminateTarget))
            or t.key == ("end", CAP_REASON)
            or (t.kind == "tool" and _finishes(cov, t))
        ):
            endings += 1
    return max(endings, 1 if cov.live else 0)


def _finishes(cov: Coverable, target: Target) -> bool:
    compiled = cov.system.compiled
    assert compiled is not None
    _, speaker, tool, alt = target.key
    for info in compiled.tools_of(speaker):
        if info.name == tool and info.alternatives:
            return info.alternatives[alt].finish is not None
    return False


def _turn_line(system: System, turn: Turn, number: int) -> str:
    who = format_name(turn.speaker)
    text = format_value(f"turn {number}")
    if turn.tool is None:
        writes = [f"{format_name(k)} = {format_value(v)}" for k, v in turn.sets]
        if writes:  # a human's context writes (its clears are written as a null value)
            writes += [f"{format_name(k)} = null" for k in turn.clears]
            return f"{who} sets {', '.join(writes)}: {text}"
        if turn.clears:
            return f"{who} clears {', '.join(format_name(k) for k in turn.clears)}: {text}"
        return f"{who}: {text}"
    line = f"{who} calls {format_name(turn.tool)}"
    compiled = system.compiled
    assert compiled is not None
    alt = alternative_of(system, turn)
    for info in compiled.tools_of(turn.speaker):
        if info.name == turn.tool and len(info.alternatives) > 1 and alt is not None:
            line += " " + info.alternatives[alt].text()
    return f"{line}: {text}"


def _lines(system: System, run: Run) -> list[str]:
    lines: list[str] = []
    cap = system.max_turns
    for i, turn in enumerate(run.turns):
        lines.append(_turn_line(system, turn, i + 1))
        last = i == len(run.turns) - 1
        if not last:
            lines.append(f"expect next {format_name(run.turns[i + 1].speaker)}")
        elif run.next is None:
            reason = run.reason
            lines.append(
                "expect terminate" + (f" {format_value(reason)}" if reason is not None else "")
            )
        elif cap is not None and len(run.turns) >= cap:
            lines.append(f"expect terminate {format_value(CAP_REASON)}")
        else:
            lines.append(f"expect next {format_name(run.next)}")
    return lines


@attrs.frozen
class ViolationScenario:
    """The scenario of a property's violation: the checker's shortest run that breaks
    it, turn by turn with its routing, up to the turn that breaks it."""

    title: str
    prop: Property
    run: Run
    lines: tuple[str, ...]
    broken_at: int | None
    why: str | None

    def text(self) -> str:
        body = "".join(f"  {line}\n" for line in self.lines)
        return f"scenario {format_value(self.title)} {{\n{body}}}\n"


def violation_scenario(
    compiled: CompiledFlow, name: str, options: CheckOptions | None = None
) -> ViolationScenario:
    """A scenario that shows how the property ``name`` is violated: the shortest run the
    checker (:func:`flowc.compiler.analysis.properties.decide`) found, which ``flowc
    test`` then fails on. :class:`GenerationError` when there is no such property, when
    it holds or is not decided, when only a run that never ends breaks it, or when the
    flow routes on custom conditions or targets (a scenario cannot choose their outcome).

    >>> from flowc import compile_flow
    >>> print(violation_scenario(compile_flow('''
    ... speaker user: human
    ... speaker bot { tool publish }
    ... when from user then bot
    ... when from bot then user
    ... max_turns 4
    ... property reviewed: tool publish only after turn > 2
    ... '''), "reviewed").text(), end="")
    scenario "generated: property reviewed is violated" {
      user: "turn 1"
      expect next bot
      bot calls publish: "turn 2"
      expect next user
    }
    """
    from flowc.compiler.analysis.properties import decide
    from flowc.compiler.monitor import claim_text
    from flowc.compiler.registry import did_you_mean

    options = options or CheckOptions()
    found = [p for p in compiled.properties if p.name == name]
    if not found:
        names = [p.name for p in compiled.properties]
        if not names:
            raise GenerationError(f"the flow declares no property (there is no {name!r})")
        hint = did_you_mean(name, names)
        raise GenerationError(
            f"the flow declares no property {name!r}"
            + (f"; did you mean {hint!r}?" if hint else f" (its properties: {', '.join(names)})")
        )
    prop = found[0]
    shown = f"property {format_name(name)} (`{claim_text(prop)}`)"
    (res,) = decide(compiled, [prop], max_states=options.max_states)
    if res.verdict == "holds":
        raise GenerationError(
            f"{shown} holds on every run: no run violates it, so there is no scenario to write"
        )
    if res.verdict == "unknown":
        raise GenerationError(
            f"{shown} could not be decided ({res.note}): no violating run is known; "
            "raise --max-states"
        )
    run = res.run
    assert run is not None
    if run.loop_from is not None:
        raise GenerationError(
            f"{shown} is broken only by runs that never end ({res.why}); a scenario is a "
            "finite run, and what a run that stops leaves pending is no violation"
        )
    if len(run.turns) > MAX_CAP_RUN:  # as the cap's target of `flowc scenarios` (missed)
        raise GenerationError(
            f"{shown}: the shortest run that breaks it takes"
            f" {counted(len(run.turns), 'turn', grouped=True)}, and scenarios are written for"
            f" caps up to {MAX_CAP_RUN:,}"
        )
    customs = _customs(compiled)
    if customs:
        raise GenerationError(
            "the flow routes on custom conditions or targets ("
            + ", ".join(customs)
            + "), whose outcome a scenario cannot choose"
        )
    system = system_of_flow(compiled)
    return ViolationScenario(
        f"{TITLE_PREFIX}property {name} is violated",
        prop,
        run,
        tuple(_lines(system, run)),
        res.broken_at,
        res.why,
    )
