"""One name per rule in every output: ``rule N, line L``.

``N`` is the rule's place in the file (the compiled ``transitions`` list, from 1), never
its place in the evaluation order, so a rule whose ``priority`` moves it to the front
keeps its number. The flow below has such a rule (rule 4, tried first) and a rule
that can never fire (rule 5): run, log, test, check, render and coverage must all call
them by the same number and line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flowc.cli import main

FLOW = """speaker user: human
speaker drafter
speaker reviewer { tool approve sets done = true }
start user
max_turns 12
context done = false
when from user then drafter
when from drafter then reviewer
when from reviewer then drafter
when context.done == true then terminate "approved" priority -1
when from drafter then user

scenario "the reviewer approves" {
  user: "Write on HTTPS"
  drafter: "Draft 1"
  expect next user
}
"""

SCRIPT = {
    "kickoff": "Write on HTTPS",
    "script": {"drafter": ["Draft 1"], "reviewer": [{"tool": "approve", "say": "Approved"}]},
}

RULE2 = "rule 2, line 8"  # when from drafter then reviewer
RULE4 = "rule 4, line 10"  # the priority -1 terminate: evaluated first, written fourth
RULE5 = "rule 5, line 11"  # when from drafter then user: never fires


@pytest.fixture
def flow(tmp_path: Path) -> Path:
    (tmp_path / "review.flow").write_text(FLOW)
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    return tmp_path / "review.flow"


def refs(text: str) -> set[str]:
    return set(re.findall(r"rule \d+, line \d+", text))


def test_run_and_log_name_rules_by_file_number_and_line(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(flow.parent / "runs.db")
    code = main(["run", str(flow), "--script", str(flow.parent / "script.json"), "--db", db])
    out = capsys.readouterr().out
    assert code == 0
    assert f"→ reviewer  ({RULE2}: when from drafter then reviewer)" in out
    assert (
        f'■ terminate "approved"  ({RULE4}: when context.done == true then terminate '
        '"approved" priority -1)' in out
    )
    assert main(["log", "--db", db, "last"]) == 0
    logged = capsys.readouterr().out
    assert refs(logged) == refs(out) == {"rule 1, line 7", RULE2, RULE4}


def test_test_check_render_and_coverage_use_the_same_numbers(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # flowc test: the divergence names the rule that chose
    assert main(["test", str(flow), "--coverage"]) == 1
    out = capsys.readouterr().out
    assert f"the graph chose reviewer ({RULE2}: when from drafter then reviewer)" in out
    assert f"{RULE5}: when from drafter then user" in out  # the coverage table
    # flowc check: the dead rule and the rule that takes its turns
    assert main(["check", str(flow)]) == 0
    found = capsys.readouterr().out
    assert f"{RULE5} (`when from drafter then user`) can never fire" in found
    assert f"there {RULE2} (`when from drafter then reviewer`) fires first" in found
    # flowc render: edge labels and the note for the rule that never fires
    out_dot = flow.parent / "review.dot"
    assert main(["render", str(flow), "-f", "dot", "-o", str(out_dot)]) == 0
    dot = out_dot.read_text()
    assert f"{RULE4}: context.done == true" in dot
    assert f"{RULE2}: from drafter" in dot
    assert f"{RULE5} never fires" in dot
    assert not re.search(r"[<>]#\d+ ", dot)  # no evaluation-order numbers left
    assert refs(dot) == {"rule 1, line 7", RULE2, "rule 3, line 9", RULE4, RULE5}


def test_diff_names_rules_the_same_way(flow: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = flow.parent / "new.flow"
    new.write_text(FLOW.replace("when from reviewer then drafter", "when from reviewer then user"))
    assert main(["diff", str(flow), str(new)]) == 1
    out = capsys.readouterr().out
    assert "rule 3, line 9: `when from reviewer` now goes to `user`" in out
    assert refs(out) == {"rule 3, line 9"}
