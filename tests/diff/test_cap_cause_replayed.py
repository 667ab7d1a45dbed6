"""`flowc diff`'s "the cap is the cause" of a sticky loop (W205) coming or going, checked
on the reference stepper (:mod:`tests.check.check_stepper`, written from the language's
documentation and sharing no code with the analysis) over generated flows, each under
every cap from 1 to 7.

Only the cap differs between two such versions, so every W205 one has and the other has
not must be the cap's doing, and diff must say so (``with max_turns A → B``). That the
cap is the cause is checked without the checker:

- the finding's run (in the version that has it) replays on the stepper: the same
  speakers and turns, the loop closing where it began, the loop's rule routing a turn in
  it (the versions' rules are the same: this is the loop the other version's rules have
  under this version's cap; a run the cap cuts before it is back where the loop began is
  replayed only, as where its loop begins is not in it);
- under the other version's own cap, that run's first turn the loop's rule routes inside
  the loop comes too late: on the cap's last turn or after it (the cap closes the run
  before the turn it routes to);
- and no run gets there sooner: a breadth-first search on the stepper over every turn of
  the other version (a speaker's text, each of its tools' outcomes; flows with a human or
  a custom condition or target are left out of this part) reaches none of the places
  where the loop's rule routes a turn in the loop early enough for the routed turn to
  come inside the cap. (Without it, a checker that leaves out a loop it should report
  under a low cap passes.)
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import attrs
import pytest

from flowc.compiler.analysis import CheckOptions, Finding, findings_of
from flowc.compiler.analysis.changes import Version, diff_versions
from flowc.compiler.analysis.runs import Turn
from flowc.compiler.analysis.system import System, system_of_flow
from flowc.compiler.pipeline import compile_source
from flowc.source import SourceFile
from tests.check.check_replay import replay, replay_finding, stepper_for
from tests.property_check.strategies import random_flow

SEEDS = range(240)  # 334 findings replayed, 325 timed, 111 searched (in 3 s)
CAPS = range(1, 8)


def _system(text: str) -> System:
    compiled, diags = compile_source(SourceFile("g.flow", text))
    assert compiled is not None, diags
    return system_of_flow(compiled)


def _w205(system: System) -> list[Finding]:
    return [
        f for f in findings_of(system, CheckOptions(), "g.flow") if f.diagnostic.code.id == "W205"
    ]


def _in_loop_turns(system: System, finding: Finding) -> list[int]:
    """The turns (0-based) of the finding's run from its loop's first on that the loop's
    rule routes, replayed on the stepper."""
    run = finding.run
    assert run is not None and finding.rule is not None
    _, _, fired = replay(system, run)
    assert run.loop_from is not None
    return [j for j, rule in enumerate(fired) if j >= run.loop_from and rule == finding.rule]


#: who speaks, the context before the turn (as JSON), and whether it is the kickoff (the
#: first turn: text only, so never the same place as a later turn of that speaker)
Place = tuple[str, str, bool]


def _place(speaker: str, context: dict[str, object], kickoff: bool) -> Place:
    return speaker, json.dumps(context, sort_keys=True), kickoff


def _turns_of(system: System, speaker: str, kickoff: bool) -> list[Turn]:
    """Every turn ``speaker`` may take (a model speaker: its text, or a tool's outcome)."""
    turns = [Turn(speaker)]
    if kickoff:
        return turns
    assert system.compiled is not None
    for tool in system.compiled.tools_of(speaker):
        if not tool.alternatives:
            turns.append(Turn(speaker, tool=tool.name))
        for alt in tool.alternatives:
            turns.append(Turn(speaker, tool.name, alt.sets, alt.clears, alt.handoff, alt.finish))
    return turns


def _first_turns(system: System, depth: int) -> dict[Place, int]:
    """Each place the stepper reaches within ``depth`` turns, with the first turn (0-based)
    a run can be there, breadth first."""
    first: dict[Place, int] = {}
    layer = [(system.ids[system.start], dict(system.initial_context))]
    for turn in range(depth):
        nxt = []
        for speaker, context in layer:
            place = _place(speaker, context, turn == 0)
            if place in first:
                continue
            first[place] = turn
            for t in _turns_of(system, speaker, turn == 0):
                stepper = stepper_for(system)
                stepper.context = dict(context)
                decision = stepper.step(t)
                if decision.next is not None:
                    nxt.append((decision.next, dict(stepper.context)))
        layer = nxt
    return first


def _loop_places(system: System, finding: Finding) -> list[tuple[Place, int]]:
    """The places of the finding's run where the loop's rule routes a turn in the loop,
    with the turn (0-based) the run is there."""
    run = finding.run
    assert run is not None
    stepper = stepper_for(system)
    out = []
    assert run.loop_from is not None
    for j, turn in enumerate(run.turns):
        place = _place(turn.speaker, stepper.context, j == 0)
        if stepper.step(turn).fired == finding.rule and j >= run.loop_from:
            out.append((place, j))
    return out


def _loop(finding: Finding) -> str:
    """Which loop a W205 is about: its message, but for the cap it names (`the run ends
    only at max_turns 7`), which is the same loop under another cap."""
    return re.sub(r"max_turns \d+", "max_turns N", finding.diagnostic.message)


def _bare(text: str) -> bool:
    """No human and no custom condition or target: every turn is enumerable."""
    return not any(
        line.startswith(("condition ", "target ")) or ": human" in line
        for line in text.splitlines()
    )


def _check_cap_cause(has: System, lacks: System, flow_text_lacks: str) -> Counter[str]:
    """Every W205 ``has`` reports that ``lacks`` (the same flow, another cap) does not is
    there in ``lacks``' rules and cut off by its cap (the module's three checks); how
    many findings each check took."""
    lacking = {_loop(f) for f in _w205(lacks)}
    checked: Counter[str] = Counter()
    for finding in _w205(has):
        if _loop(finding) in lacking:
            continue
        # `lacks`' rules under `has`' cap: the loop is there
        lacks_under_cap = attrs.evolve(lacks, max_turns=has.max_turns)
        replay_finding(lacks_under_cap, finding)
        checked["replayed"] += 1
        run = finding.run
        if run is None or run.loop_from is None:
            # the cap cuts the run before it is back where the loop began: where the loop
            # begins is not in the run (replayed above, as a run of `lacks`' rules)
            continue
        assert _in_loop_turns(lacks_under_cap, finding), finding.diagnostic.notes
        # under its own cap, the rule's first turn in the loop is on the last turn or later
        cap = lacks.max_turns
        assert cap is not None
        first = min(_in_loop_turns(lacks_under_cap, finding))
        assert first + 2 > cap, (first, cap, finding.run and finding.run.render())
        checked["timed"] += 1
        if _bare(flow_text_lacks):
            # no run of `lacks` is at such a place early enough (turn cap - 2 or sooner)
            soonest = _first_turns(lacks, max(cap - 1, 0))
            for place, j in _loop_places(lacks_under_cap, finding):
                assert soonest.get(place, cap) + 2 > cap, (place, j, soonest.get(place))
            checked["searched"] += 1
    return checked


def _diff(old: str, new: str) -> list[str]:
    """The texts of diff's W205 changes from ``old`` to ``new``."""
    versions = [
        Version(name, compile_source(SourceFile(name, text))[0])
        for name, text in (("old.flow", old), ("new.flow", new))
    ]
    d = diff_versions(*versions)
    return [c.text for c in d.behavioural if c.subject == "W205"]


@pytest.mark.parametrize("chunk", range(4))
def test_a_loop_put_on_the_cap_is_there_and_cut_by_the_cap(chunk: int) -> None:
    """Each generated flow under every cap from 1 to 7, each two caps compared both ways
    on the stepper; diff (the slower part) both ways on four of the pairs whose loops
    differ."""
    checked: Counter[str] = Counter()
    said = 0
    for seed in SEEDS[chunk::4]:
        rng = random.Random(seed)
        flow = random_flow(rng)
        texts = {cap: attrs.evolve(flow, max_turns=cap).text for cap in CAPS}
        systems = {cap: _system(text) for cap, text in texts.items()}
        if not any(_w205(system) for system in systems.values()):
            continue
        differ = []
        for has in CAPS:
            for lacks in CAPS:
                if has != lacks:
                    found = _check_cap_cause(systems[has], systems[lacks], texts[lacks])
                    checked += found
                    if found["replayed"]:
                        differ.append((lacks, has) if has > lacks else (has, lacks))
        for old, new in sorted(set(differ))[:4]:
            for a, b in ((old, new), (new, old)):
                for text in _diff(texts[a], texts[b]):
                    said += 1
                    # only the cap changed: every W205 that comes or goes is the cap's doing
                    assert f"with max_turns {a} → {b}" in text, (seed, a, b, text, texts[a])
    # (a chunk: 50-156 replayed, 50-147 timed, 10-55 searched; fixed seeds)
    assert min(checked["replayed"], checked["timed"]) >= 40 and checked["searched"] >= 10, checked
    assert said > 15, said
