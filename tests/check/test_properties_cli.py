"""Properties written in `.flow` text, through the command line: ``flowc check`` (the
formats, ``--strict``, ``--select`` / ``--ignore``, ignore comments) and ``flowc test``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.compiler.analysis import properties as decider

FLOW = """\
speaker user: human
speaker bot {
  tool publish
}
speaker reviewer {
  tool approve sets approved = true
}
start user
max_turns 6
when tool publish then terminate "published"
when from user then bot
when from bot then reviewer
when from reviewer then bot

property approved_first: tool publish only after context.approved == true
property user_first: tool publish only after from user
"""

SCENARIO = """
scenario "publishes at once" {
  user: "hi"
  bot calls publish: "done"
  expect terminate "published"
}
"""


def check(path: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["check", str(path), *args])
    return code, capsys.readouterr().out


def test_check_reports_and_fails_on_a_violated_property(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "review.flow"
    path.write_text(FLOW)
    code, out = check(path, capsys=capsys)
    assert code == 1
    assert "error[E116]: property approved_first is violated" in out
    assert "--> " in out and "review.flow:15:1" in out
    assert 'a shortest run that breaks it: user → bot (publish) → terminate "published"' in out
    assert "info[I306]: property user_first holds" in out
    code, out = check(path, "--format", "json", capsys=capsys)
    items = {item["code"]: item for item in json.loads(out)}
    assert items["E116"]["location"] == {"row": 15, "column": 1}
    assert items["I306"]["severity"] == "info"
    code, out = check(path, "--format", "sarif", capsys=capsys)
    results = json.loads(out)["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"E116", "I306"}
    code, out = check(path, "--format", "github", capsys=capsys)
    assert "::error file=" in out and "E116 property-violated" in out


def test_select_ignore_and_comments_choose_e116(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "review.flow"
    path.write_text(FLOW)
    assert check(path, "--ignore", "E116", capsys=capsys)[0] == 0
    code, out = check(path, "--select", "E116", capsys=capsys)
    assert code == 1 and "I306" not in out
    path.write_text(
        FLOW.replace(
            "context.approved == true\n", "context.approved == true  # flowc: ignore[E116]\n"
        )
    )
    code, out = check(path, capsys=capsys)
    assert code == 0 and "E116" not in out and "X001" not in out


def test_strict_fails_on_a_property_it_could_not_decide(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A property that keeps count of 100 turns, on a flow of three states: the runs
    watched for it take more than four times the bound of 5 (the exploration itself is
    complete: no I301), so it is I305, which --strict fails on."""
    monkeypatch.setattr(decider, "MIN_PRODUCT", 0)
    path = tmp_path / "loop.flow"
    path.write_text(
        "speaker user: human\nspeaker bot\nmax_turns 200\n"
        "when from user then bot\nwhen from bot then user\n"
        "property late: never from bot and turn == 101\n"
    )
    code, out = check(path, "--max-states", "5", capsys=capsys)
    assert code == 0 and "info[I305]: property late could not be decided" in out
    assert "I301" not in out
    code, out = check(path, "--max-states", "5", "--strict", capsys=capsys)
    assert code == 1
    monkeypatch.undo()
    code, out = check(path, "--max-states", "5", "--strict", capsys=capsys)
    assert code == 0 and "info[I306]: property late holds" in out  # bot speaks on even turns


def test_an_undecided_property_says_which_exploration_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A property comparing a value no rule compares has the runs explored again with it
    told apart: when only that exploration reaches the bound, no I301 is reported, and
    the note says so rather than point at one."""
    path = tmp_path / "retold.flow"
    path.write_text(
        "speaker u: human\nspeaker a {\n  tool a0 sets f = true, hands off to u\n}\n"
        'speaker b {\n  tool b2 finishes "r1"\n}\nwhen from u then a\n'
        "property p6: never tool b2\nproperty p7: never context.f == true and from b\n"
    )
    code, out = check(path, "--max-states", "4", capsys=capsys)
    assert code == 0 and "I301" not in out, out
    assert "info[I305]: property p6 could not be decided" in out
    assert (
        "the runs explored again to tell apart the values the properties compare (a larger"
        " state space than the flow's own, which was complete) stopped at the bound (4 states)"
        in " ".join(out.split())
    )
    code, out = check(path, "--max-states", "5", capsys=capsys)
    assert "info[I306]: property p6 holds" in out and "info[I306]: property p7 holds" in out


def test_flowc_test_fails_a_scenario_that_breaks_a_property(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "review.flow"
    path.write_text(FLOW + SCENARIO)
    assert main(["test", str(path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  publishes at once" in out
    assert (
        "turn 2 (line 20): property approved_first (`tool publish only after"
        " context.approved == true`) is violated: turn 2 has `tool publish`, and no turn up"
        " to it has `context.approved == true`; the run: user → bot (publish)"
    ) in out
    # the same scenario, without the property, passes
    path.write_text(FLOW.replace("property approved_first", "# property approved_first") + SCENARIO)
    assert main(["test", str(path)]) == 0


def test_a_long_property_is_cut_where_it_is_quoted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A property of 3,000 terms is quoted in the headline and the notes cut as a rule
    is (at most MAX_QUOTED characters a quote), not written out on every line."""
    from flowc.diagnostics import MAX_QUOTED

    terms = " or ".join(f"context.k == {i}" for i in range(3000))
    path = tmp_path / "long.flow"
    path.write_text(
        "speaker user: human\nspeaker bot {\n  tool refund sets k = 1\n}\nstart user\n"
        f"max_turns 4\nwhen from user then bot\nwhen from bot then user\nproperty p: never {terms}\n"
    )
    code, out = check(path, "--format", "json", capsys=capsys)
    assert code == 1
    [finding] = json.loads(out)
    assert finding["code"] == "E116"
    for text in (finding["message"], *finding["notes"]):
        for quoted in text.split("`")[1::2]:
            assert len(quoted) <= MAX_QUOTED, quoted
    assert len(finding["message"]) < 2 * MAX_QUOTED


def test_a_stored_graph_says_which_exploration_stopped_too() -> None:
    """The same for a stored run's graph with its flow's declarations (`flowc view`,
    `check` on a run's graph): its own findings report no I301 either."""
    from flowc import compile_flow
    from flowc.compiler.analysis import CheckOptions, analyze_graph
    from flowc.compiler.pipeline import LoadedGraph
    from flowc.runtime.target import RunTarget
    from flowc.view.findings import declarations_of

    flow = compile_flow(
        "speaker u: human\nspeaker a {\n  tool a0 sets f = true, hands off to u\n}\n"
        'speaker b {\n  tool b2 finishes "r1"\n}\nwhen from u then a\n'
        "property p6: never tool b2\nproperty p7: never context.f == true and from b\n"
    )
    found = analyze_graph(
        LoadedGraph(flow.graph, dict(flow.context_vars), True),
        CheckOptions(max_states=4),
        declared=declarations_of(RunTarget.from_compiled(flow)),
    )
    assert "I301" not in {d.code.id for d in found}
    (p6,) = [d for d in found if d.code.id == "I305" and "p6" in d.message]
    assert any("the runs explored again" in note for note in p6.notes), p6.notes
