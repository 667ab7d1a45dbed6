"""`flowc log RUN --scenario-upto N` on a run whose agent called a helper tool the flow
does not declare (a search tool), which the contracts let through because it does
nothing the flow can see: the turn's scenario line is its text, and `flowc test` replays
the run. It used to refuse the turn (`called `search`, which the flow does not
declare`), though the docs list only two kinds of turn with no scenario line (two tool
calls or more, and a turn let through under `--contracts warn`)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.runtime.test_forged_lines import flowc

ROOT = Path(__file__).resolve().parents[2]

FLOW = """\
speaker user: human
speaker drafter
speaker reviewer {
  tool approve sets done = true
}
start user
max_turns 8
context done = false
when context.done == true then terminate "approved"
when from user then drafter
when from drafter then reviewer
when from reviewer then drafter
"""

AGENTS = """\
from flowc.runtime import Reply, ToolCall

def drafter(turn):
    return Reply("Draft", (ToolCall("search", {"q": "tls"}),))

AGENTS = {"drafter": drafter}
"""


def test_a_helper_call_gets_a_scenario_line_that_replays(tmp_path: Path) -> None:
    (tmp_path / "f.flow").write_text(FLOW)
    (tmp_path / "agents.py").write_text(AGENTS)
    script = {
        "kickoff": "brief",
        "script": {"reviewer": ["More", {"tool": "approve", "say": "Ok"}]},
    }
    (tmp_path / "s.json").write_text(json.dumps(script))
    ran = flowc(
        "run", "f.flow", "--script", "s.json", "--agents", "agents.py", "--db", "r.db", cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    assert 'calls: search(q="tls")' in ran.stdout
    scenario = flowc(
        "log", "last", "--db", "r.db", "--scenario-upto", "5", "--name", "s", cwd=tmp_path
    )
    assert scenario.returncode == 0, scenario.stderr
    assert scenario.stdout == (
        'scenario "s" {\n'
        '  user: "brief"\n'
        "  expect next drafter\n"
        '  drafter: "Draft"\n'
        "  expect next reviewer\n"
        '  reviewer: "More"\n'
        "  expect next drafter\n"
        '  drafter: "Draft"\n'
        "  expect next reviewer\n"
        '  reviewer calls approve: "Ok"\n'
        '  expect terminate "approved"\n'
        "  expect turns 5\n"
        "  expect context.done == true\n"
        "}\n"
    )
    (tmp_path / "f.flow").write_text(FLOW + scenario.stdout)
    tested = flowc("test", "f.flow", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "ok    s" in tested.stdout
