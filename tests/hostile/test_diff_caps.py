"""``flowc diff`` of two versions whose ``max_turns`` differ, at caps far beyond the state
bound: the walk to the smaller cap keeps a state for each of its turns, so it is bounded
by ``--max-states`` and by the memory budget (the verdict is then "unknown", exit 2)
instead of growing without end; and a long distinguishing run is shown by its first and
last turns, as ``check`` shows one, while ``--format json`` keeps it whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.limits import run_limited

#: a human hands to `a`, then `a` and `b` take turns until the cap: one run, no ending
LOOP = """flow m "m"
speaker user: human
speaker a
speaker b
start user
{cap}
when from user then a
when from a then b
when from b then a
"""


def _flow(tmp_path: Path, cap: int | None) -> str:
    path = tmp_path / f"cap{cap}.flow"
    path.write_text(LOOP.format(cap="" if cap is None else f"max_turns {cap}"), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("other", [20_000_001, None], ids=["cap+1", "no-cap"])
def test_a_cap_beyond_the_bound_is_unknown_not_unbounded(tmp_path: Path, other: int | None) -> None:
    result = run_limited(
        ["diff", _flow(tmp_path, 20_000_000), _flow(tmp_path, other)],
        memory_mib=1024,
        cpu_seconds=60,
        wall_seconds=120,
    )
    assert not result.timed_out and not result.traceback, result.stderr[-2000:]
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "behaviour: unknown — the caps differ, and the walk to the smaller one "
        "(20,000,000 turns) keeps more states than the bound of 100,000 states (the states a run "
        "may be in after each turn, over every turn; raise --max-states)"
    ) in result.stdout
    assert result.peak_mib < 300, result.peak_mib
    assert len(result.stdout) < 2_000


def test_a_raised_bound_stops_at_the_memory_budget(tmp_path: Path) -> None:
    result = run_limited(
        ["diff", "--max-states", "100000000", _flow(tmp_path, 20_000_000), _flow(tmp_path, None)],
        memory_mib=1024,
        cpu_seconds=60,
        wall_seconds=120,
    )
    assert not result.timed_out and not result.traceback, result.stderr[-2000:]
    assert result.returncode == 2, result.stdout + result.stderr
    assert "a run that reaches the smaller one (20,000,000 turns) at its memory budget (" in (
        result.stdout
    )
    assert result.peak_mib < 600, result.peak_mib


@pytest.mark.parametrize(("bound", "verdict"), [(1_000, 1), (999, 2)])
def test_max_states_bounds_the_walk_to_the_cap(tmp_path: Path, bound: int, verdict: int) -> None:
    """The walk to a cap of 1,000 keeps 1,000 states (the kickoff's, then one a turn
    before the last): a bound of 1,000 decides, one of 999 does not."""
    result = run_limited(
        ["diff", "--max-states", str(bound), _flow(tmp_path, 1_000), _flow(tmp_path, 2_000)],
        memory_mib=1024,
    )
    assert result.returncode == verdict, result.stdout + result.stderr
    if verdict == 1:
        assert "OLD: → stops at max_turns" in result.stdout
    else:
        assert f"keeps more states than the bound of {bound:,} states (the states" in result.stdout


def test_a_long_distinguishing_run_is_shown_by_its_ends(tmp_path: Path) -> None:
    old, new = _flow(tmp_path, 1_000), _flow(tmp_path, 2_000)
    text = run_limited(["diff", old, new], memory_mib=1024)
    assert text.returncode == 1, text.stderr
    run = next(ln for ln in text.stdout.splitlines() if ln.lstrip().startswith("run: user"))
    turns = run.strip().removeprefix("run: ").split(" → ")
    assert turns[:3] == ["user", "a", "b"]
    assert turns[15] == "(970 more turns)"
    assert len(turns) == 31 and turns[-1] == "a"  # turn 1,000 is `a`'s
    markdown = run_limited(["diff", "--format", "markdown", old, new], memory_mib=1024)
    assert "(970 more turns)" in markdown.stdout
    assert len(markdown.stdout) < 5_000
    whole = run_limited(["diff", "--format", "json", old, new], memory_mib=1024)
    report = json.loads(whole.stdout)
    assert [t["speaker"] for t in report["first"]["run"]] == ["user"] + ["a", "b"] * 499 + ["a"]


def test_a_change_at_the_first_speaker_has_no_run_above(tmp_path: Path) -> None:
    old = _flow(tmp_path, 10)
    new = tmp_path / "start_a.flow"
    new.write_text(Path(old).read_text().replace("start user", "start a"), encoding="utf-8")
    result = run_limited(["diff", old, str(new)], memory_mib=1024)
    assert result.returncode == 1, result.stderr
    assert "OLD starts with `user`, NEW with `a`" in result.stdout
    assert "run: none (the versions differ at the first speaker, above)" in result.stdout
    assert "shortest distinguishing run above" not in result.stdout


def test_a_pair_stopped_at_its_bound_is_not_also_told_to_raise_it(tmp_path: Path) -> None:
    """When the exploration of the pair stops at its bound, that is the reason given; the
    walk to the cap over the part explored adds no second one."""
    result = run_limited(
        ["diff", "--max-states", "2", _flow(tmp_path, 1_000), _flow(tmp_path, 2_000)],
        memory_mib=1024,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "the exploration stopped at its bound of 2 states (raise --max-states)" in (
        result.stdout
    )
    assert "the walk to the smaller one" not in result.stdout
