"""`flowc diff` on known edits: the structural change matched by meaning, the behavioural
change, and its expected shortest distinguishing run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc import compile_flow
from flowc.cli import main
from flowc.compiler.analysis.changes import FlowDiff, Version, diff_versions
from flowc.compiler.analysis.explore import DEFAULT
from flowc.compiler.analysis.run_phrases import render_run

BASE = """\
flow review
speaker user: human
speaker drafter
speaker reviewer {
  tool approve sets done = true
}
start user
max_turns 12
context done = false
when context.done == true then terminate "approved"
when from user then drafter
when from drafter then reviewer
when from reviewer then drafter
"""


def diff(old: str, new: str) -> FlowDiff:
    return diff_versions(
        Version("old.flow", compile_flow(old)), Version("new.flow", compile_flow(new))
    )


def kinds(changes: tuple[object, ...]) -> list[str]:
    return [c.kind for c in changes]  # type: ignore[attr-defined]


def test_the_same_flow_has_no_change() -> None:
    d = diff(BASE, BASE)
    assert (
        d.structural == () and d.behavioural == () and d.first is None and not d.behaviour_changed
    )


def test_a_priority_that_shadows_a_rule() -> None:
    """`priority 100` sorts the terminate rule last: the reviewer's approval no longer ends the run."""
    new = BASE.replace('terminate "approved"', 'terminate "approved" priority 100')
    d = diff(BASE, new)
    assert [c.text for c in d.structural] == [
        'rule 1, line 10: priority 0 → 100 (`when context.done == true then terminate "approved" priority 100`)'
    ]
    assert d.first is not None
    assert render_run(d.first.run) == "user → drafter → reviewer (approve)"
    assert (d.first.old.reason, d.first.old.fired) == ("approved", 0)
    assert (d.first.new.next, d.first.new.fired) == ("drafter", 3)
    assert kinds(d.behavioural) == ["rule-dead", "ending-removed"]


def test_swapping_two_priorities_so_one_rule_shadows_another() -> None:
    """OLD checks the approval (priority 1) before `from reviewer` (2); NEW swaps them, so
    `from reviewer` takes the approving turn and the approval rule can never fire."""

    def version(approve: int, back: int) -> str:
        return BASE.replace(
            'terminate "approved"', f'terminate "approved" priority {approve}'
        ).replace(
            "when from reviewer then drafter", f"when from reviewer then drafter priority {back}"
        )

    d = diff(version(1, 2), version(2, 1))
    assert kinds(d.structural) == ["rule-priority", "rule-priority"]
    assert d.first is not None
    assert render_run(d.first.run) == "user → drafter → reviewer (approve)"
    assert (d.first.old.reason, d.first.old.fired) == ("approved", 0)
    assert (d.first.new.next, d.first.new.fired) == ("drafter", 3)
    dead = next(c for c in d.behavioural if c.kind == "rule-dead")
    assert dead.subject == "rule 1" and dead.run == d.first.run
    # the same swap where the two rules never compete changes nothing
    calm = BASE.replace(
        "when from user then drafter", "when from user then drafter priority 1"
    ).replace("when from drafter then reviewer", "when from drafter then reviewer priority 2")
    swapped = BASE.replace(
        "when from user then drafter", "when from user then drafter priority 2"
    ).replace("when from drafter then reviewer", "when from drafter then reviewer priority 1")
    d = diff(calm, swapped)
    assert kinds(d.structural) == ["rule-priority", "rule-priority"] and d.first is None


def test_a_sticky_context_rule_loops() -> None:
    new = BASE.replace(
        "when from user then drafter",
        "when context.done == false then drafter\nwhen from user then drafter",
    )
    d = diff(BASE, new)
    assert kinds(d.structural) == ["rule-added"]
    assert d.first is not None
    assert render_run(d.first.run) == "user → drafter"
    assert (
        d.first.old.next == "reviewer" and d.first.new.next == "drafter" and d.first.new.fired == 1
    )
    assert "loop-added" in kinds(d.behavioural)
    assert "speaker-unreachable" in kinds(d.behavioural)
    loop = next(c for c in d.behavioural if c.kind == "loop-added")
    assert "W205" in loop.text and loop.run == d.first.run


def test_removing_the_only_rule_to_a_speaker() -> None:
    new = BASE.replace("when from drafter then reviewer\n", "")
    d = diff(BASE, new)
    assert [c.kind for c in d.structural] == ["rule-removed"]
    gone = next(c for c in d.behavioural if c.kind == "speaker-unreachable")
    assert gone.subject == "reviewer"
    assert render_run(gone.run) == "user → drafter"
    assert gone.old.next == "reviewer" and gone.new.next is None and gone.new.fired == DEFAULT
    assert gone.new.reason == "after_work"  # AG2's implicit default


def test_changing_a_terminate_reason() -> None:
    new = BASE.replace('"approved"', '"accepted"')
    d = diff(BASE, new)
    assert kinds(d.structural) == ["rule-target"]
    assert kinds(d.behavioural) == ["ending-added", "ending-removed"]
    assert d.first is not None and render_run(d.first.run) == "user → drafter → reviewer (approve)"
    assert (d.first.old.reason, d.first.new.reason) == ("approved", "accepted")


def test_moving_a_rule_without_changing_the_order() -> None:
    lines = BASE.splitlines()
    i, j = (
        lines.index("when from drafter then reviewer"),
        lines.index("when from reviewer then drafter"),
    )
    lines[i], lines[j] = lines[j], lines[i]
    d = diff(BASE, "\n".join(lines) + "\n")
    assert kinds(d.structural) == ["rule-moved", "rule-moved"]
    assert d.first is None and d.behavioural == ()


def test_a_move_that_changes_the_order_is_a_change() -> None:
    new = (
        BASE.replace('when context.done == true then terminate "approved"\n', "")
        + 'when context.done == true then terminate "approved"\n'
    )
    d = diff(BASE, new)
    assert d.first is not None and render_run(d.first.run) == "user → drafter → reviewer (approve)"


def test_a_smaller_cap_stops_runs(tmp_path: Path) -> None:
    d = diff(BASE, BASE.replace("max_turns 12", "max_turns 2"))
    assert kinds(d.structural) == ["cap-changed"]
    assert d.first is not None and render_run(d.first.run) == "user → drafter"
    assert d.first.old.next == "reviewer" and d.first.new.reason == "max_turns"


def test_a_different_start() -> None:
    d = diff(BASE, BASE.replace("start user", "start drafter"))
    assert d.first is not None and d.first.run == ()
    assert (d.first.old.next, d.first.new.next) == ("user", "drafter")


# ── the command ──────────────────────────────────────────────────────────────


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    old, new = tmp_path / "old.flow", tmp_path / "new.flow"
    old.write_text(BASE, encoding="utf-8")
    new.write_text(BASE.replace('"approved"', '"approved" priority 100'), encoding="utf-8")
    return old, new


def test_exit_codes(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = files
    assert main(["diff", str(old), str(old)]) == 0
    assert "behaviour: the same" in capsys.readouterr().out
    assert main(["diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "run: user → drafter → reviewer (approve)" in out
    assert 'OLD: → terminate "approved" (rule 1, line 10)' in out
    assert "NEW: → drafter (rule 4, line 13)" in out
    assert main(["diff", str(old), str(tmp_path / "missing.flow")]) == 2
    assert "no such file" in capsys.readouterr().err
    broken = tmp_path / "broken.flow"
    broken.write_text("speaker a\nwhen from nobody then a\n", encoding="utf-8")
    assert main(["diff", str(old), str(broken)]) == 2
    assert "broken.flow:" in capsys.readouterr().err
    assert main(["diff", str(old)]) == 2


def test_json_output(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    old, new = files
    assert main(["diff", str(old), str(new), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["behaviour_changed"] is True
    assert [t["speaker"] for t in data["first"]["run"]] == ["user", "drafter", "reviewer"]
    assert data["first"]["run"][2]["tool"] == "approve"
    assert data["first"]["old"] == {
        "next": None,
        "reason": "approved",
        "rule": 1,
        "by": "rule 1, line 10",
    }
    assert data["first"]["new"] == {
        "next": "drafter",
        "reason": None,
        "rule": 4,
        "by": "rule 4, line 13",
    }
    assert [c["kind"] for c in data["structural"]] == ["rule-priority"]


def test_markdown_output(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    old, new = files
    assert main(["diff", str(old), str(new), "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("### `flowc diff`") and "**behaviour changed**" in out
    assert "| the shortest distinguishing run | user → drafter → reviewer (approve) |" in out


def test_a_json_graph_against_its_flow(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, _ = files
    graph = tmp_path / "old.json"
    graph.write_text(compile_flow(BASE).to_json(), encoding="utf-8")
    assert main(["diff", str(old), str(graph)]) == 0
    out = capsys.readouterr().out
    assert "compared as graphs" in out and "behaviour: the same" in out


def test_the_documented_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "diff.md").read_text(encoding="utf-8")
    block = doc.split("## What it reports", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    command, expected = block.split("\n", 1)
    assert command == "$ flowc diff review.flow review-new.flow"
    (tmp_path / "review.flow").write_text(BASE, encoding="utf-8")
    (tmp_path / "review-new.flow").write_text(
        BASE.replace('"approved"', '"approved" priority 100'), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["diff", "review.flow", "review-new.flow"]) == 1
    assert capsys.readouterr().out == expected


def test_a_plugin_that_cannot_load_is_a_usage_error(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = files
    assert main(["diff", str(old), str(new), "--plugin", str(tmp_path / "nope.py")]) == 2
    assert "nope.py" in capsys.readouterr().err
