"""`flowc fork RUN N` past the run's last turn says so, with a script or without (the
turn is checked before the script is read); `flowc resume` of a fork whose copy was cut
short refuses it before it prints a turn. Driven as a user runs flowc, on a real SQLite
file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.cli_runs import REVIEW_FLOW, flowc
from tests.stored_runs import cut_short, run_ids

#: the review loop without its property: the run below closes after 5 turns
FLOW = REVIEW_FLOW.replace("property one_draft: from drafter at most 1 time\n", "")
assert "property" not in FLOW

PARENT = {
    "kickoff": "Write a haiku",
    "script": {
        "drafter": ["draft 1", "draft 2"],
        "reviewer": ["again", {"tool": "approve", "say": "ok"}],
    },
}

#: a fork's script with a kickoff (for a fork at turn 0 only)
KICKOFF = {"kickoff": "Write a limerick", "script": {"drafter": ["d"], "reviewer": ["no"]}}
#: a fork's script for the turns after turn 4 (the reviewer's)
AFTER_4 = {"script": {"reviewer": [{"tool": "approve", "say": "fine"}]}}
#: a script that fits no run of the flow (a speaker it does not have)
STRANGER = {"script": {"editor": ["hello"]}}


@pytest.fixture
def parent(tmp_path: Path) -> str:
    """``r.db`` in ``tmp_path`` holding one run (5 turns, closed), and the scripts."""
    (tmp_path / "a.flow").write_text(FLOW)
    for name, doc in (
        ("s.json", PARENT),
        ("k.json", KICKOFF),
        ("after4.json", AFTER_4),
        ("stranger.json", STRANGER),
    ):
        (tmp_path / name).write_text(json.dumps(doc))
    run = flowc(tmp_path, "run", "a.flow", "--script", "s.json", "--db", "r.db", "--json")
    assert run.returncode == 0, run.stderr
    cid: str = json.loads(run.stdout)["run_id"]
    assert json.loads(run.stdout)["turn_count"] == 5
    return cid


@pytest.mark.parametrize("turn", [6, 9])
def test_a_turn_past_the_end_is_said_so_with_a_script_as_without(
    tmp_path: Path, parent: str, turn: int
) -> None:
    """Whatever the script (a kickoff, which a fork at turn N > 0 refuses; one that fits
    no run of the flow; one that does not exist), a turn the run does not have is said
    so first, exactly as without a script, and nothing is written."""
    said = f"flowc fork: error: run {parent} has 5 turns: no turn {turn}\n"
    plain = flowc(tmp_path, "fork", parent, str(turn), "--db", "r.db")
    assert (plain.returncode, plain.stdout, plain.stderr) == (2, "", said)
    for script in ("k.json", "after4.json", "stranger.json", "missing.json"):
        forked = flowc(tmp_path, "fork", parent, str(turn), "--script", script, "--db", "r.db")
        assert (forked.returncode, forked.stdout, forked.stderr) == (2, "", said), script
    assert run_ids(tmp_path / "r.db") == [parent]


def test_turns_the_run_has_are_checked_against_the_script_as_before(
    tmp_path: Path, parent: str
) -> None:
    """Turn 5 (the run's last) and turn 0 are forked, the script checked against them as
    before; a negative turn is refused as without a script."""
    kicked = flowc(tmp_path, "fork", parent, "5", "--script", "k.json", "--db", "r.db")
    assert (kicked.returncode, kicked.stdout) == (1, "")
    assert kicked.stderr == (
        "k.json: error: the fork goes on from turn 5, so it has no kickoff: the script holds "
        "the turns after it (drop `kickoff`, or fork at turn 0)\n"
    )
    assert run_ids(tmp_path / "r.db") == [parent]
    last = flowc(tmp_path, "fork", parent, "5", "--db", "r.db", "--run-id", "f5")
    assert last.returncode == 0, last.stderr
    assert last.stderr == f"flowc fork: run f5: forked from {parent} at turn 5\n"
    rest = flowc(tmp_path, "fork", parent, "4", "--script", "after4.json", "--db", "r.db")
    assert rest.returncode == 0, rest.stderr
    assert rest.stdout.endswith('closed: "approved" after 5 turns\ncontext: {"done": true}\n')
    zero = flowc(tmp_path, "fork", parent, "0", "--script", "k.json", "--db", "r.db")
    assert "  1  user      Write a limerick\n" in zero.stdout, zero.stderr
    said = "flowc fork: error: N is the run's last turn to keep (0 or more), not '-1'\n"
    for script in ((), ("--script", "k.json")):
        negative = flowc(tmp_path, "fork", parent, "-1", *script, "--db", "r.db")
        assert (negative.returncode, negative.stdout, negative.stderr) == (2, "", said)


def cut_short_fork(tmp_path: Path, parent: str) -> str:
    """A fork of the run at turn 4 as if its process was killed after it copied turn 2:
    its turns 3 on, and all after them, deleted (:func:`tests.stored_runs.cut_short`)."""
    fork = flowc(tmp_path, "fork", parent, "4", "--script", "after4.json", "--db", "r.db")
    assert fork.returncode == 0, fork.stderr
    new = run_ids(tmp_path / "r.db")[-1]
    cut_short(tmp_path / "r.db", new, 2)
    log = flowc(tmp_path, "log", "--db", "r.db")
    assert f"{new}  " in log.stdout
    assert "open (a fork cut short: 2 turns copied of 4)" in log.stdout
    return new


@pytest.mark.parametrize("form", [(), ("--json",), ("--jsonl",)])
def test_resume_refuses_a_cut_short_fork_before_printing_its_turns(
    tmp_path: Path, parent: str, form: tuple[str, ...]
) -> None:
    """The refusal and its exit code as before, but with no transcript of the copied
    turns before it (they are not the state forked), with a script or without."""
    new = cut_short_fork(tmp_path, parent)
    refusal = (
        f"this run is a fork of run {parent} at turn 4, but only 2 of the turns were "
        "copied before the fork stopped: fork the run again\n"
    )
    bare = flowc(tmp_path, "resume", new, "--db", "r.db", *form)
    assert (bare.returncode, bare.stdout, bare.stderr) == (1, "", f"{new}: error: {refusal}")
    scripted = flowc(tmp_path, "resume", new, "--script", "after4.json", "--db", "r.db", *form)
    assert (scripted.returncode, scripted.stdout, scripted.stderr) == (
        1,
        "",
        f"after4.json: error: {refusal}",
    )
