"""Every W205 (sticky context loop) run is one the flow has within its cap.

Over generated small flows, each checked under every cap from 1 to 7: a W205's run
takes at most ``max_turns`` turns, counting the turn it says comes next where it loops
back (a node at distance d speaks on turn d + 1, and the cap closes every run after
turn ``max_turns``), and it replays on the reference stepper. A loop the cap lets the
sticky rule route no turn in is not reported.
"""

from __future__ import annotations

import random

import attrs
import pytest

from flowc.compiler.analysis import CheckOptions, findings_of
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.pipeline import compile_source
from flowc.source import SourceFile
from tests.check.check_replay import replay_finding
from tests.property_check.strategies import random_flow

SEEDS = range(300)


def _sticky_runs(text: str) -> list[tuple[int, int, str]]:
    compiled, diags = compile_source(SourceFile("g.flow", text))
    assert compiled is not None, diags
    system = system_of_flow(compiled)
    out = []
    for finding in findings_of(system, CheckOptions(), "g.flow"):
        if finding.diagnostic.code.id != "W205":
            continue
        run = finding.run
        assert run is not None
        replay_finding(system, finding)
        out.append((len(run.turns) + (run.loop_from is not None), run.loop_from or 0, run.render()))
    return out


@pytest.mark.parametrize("chunk", range(6))
def test_sticky_runs_within_the_cap(chunk: int) -> None:
    found = 0
    for seed in SEEDS[chunk::6]:
        flow = random_flow(random.Random(seed))
        for cap in range(1, 8):
            text = attrs.evolve(flow, max_turns=cap).text
            for length, _, shown in _sticky_runs(text):
                found += 1
                assert length <= cap, f"seed {seed}, max_turns {cap}: {shown}\n{text}"
    assert found, "no generated flow has a sticky loop: the test tests nothing"


def test_a_loop_entered_on_the_last_turn_is_not_reported() -> None:
    flow = (
        "speaker user: human\nspeaker triage {\n  tool r sets route = 1\n}\nspeaker s\n"
        "start user\nwhen context.route == 1 then s\nwhen from user then triage\n"
        'when from s then terminate "x"\nmax_turns '
    )
    assert _sticky_runs(flow + "3\n") == []  # s speaks on turn 3, the last: cut there
    assert [r[2] for r in _sticky_runs(flow + "4\n")] == ["user → triage (r) → s → s → …"]
