"""What the analysis used to miss (issue 9.4): turns after `max_turns` (W215),
contradictory conditions (W203 with the reason), `round_robin`'s real rotation (W216,
measured on AG2), and `--strict` on a partial analysis (I301)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import flowc
from flowc.cli import main
from flowc.compiler.analysis.targets import coverage_targets
from flowc.runtime.script import parse_script
from flowc.runtime.script_run import run_script_sync
from flowc.runtime.target import RunTarget

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases" / "check"


def codes(src: str) -> list[tuple[str, str]]:
    return [(d.code.id, d.message) for d in flowc.check(src)]


# ── W215 ──────────────────────────────────────────────────────────────────────

SEQUENCE_THEN_D = """
speakers a: human, b, c, d
sequence a -> b -> c
when from c then d
when from d then a
"""


def test_a_speaker_after_the_implied_cap_is_reported_with_its_run() -> None:
    found = [d for d in flowc.check(SEQUENCE_THEN_D) if d.code.id == "W215"]
    assert [d.message for d in found] == [
        "speaker `d` never speaks: its first turn would be turn 4, and `max_turns 3` "
        "(implied by `sequence`) closes every run after turn 3"
    ]
    assert found[0].notes == ("a shortest run to it: a → b → c → d",)
    # with room for it, nothing to say
    assert "W215" not in [c for c, _ in codes(SEQUENCE_THEN_D + "max_turns 4\n")]


def test_coverage_and_check_agree_on_what_the_cap_excludes() -> None:
    """Every speaker and rule that coverage calls unreachable within `max_turns` carries
    the code of the `check` finding that says so, and that finding is reported (for its
    speaker, its rule, or W212 for a terminate)."""
    for path in [*sorted(CASES.glob("*.flow")), *sorted((ROOT / "examples").glob("*.flow"))]:
        text = path.read_text(encoding="utf-8")
        try:
            compiled = flowc.compile_flow(text, filename=path.name)
        except flowc.FlowError:
            continue
        cov = coverage_targets(compiled)
        reported = {f.diagnostic.code.id for f in cov.findings}
        for target in cov.targets:
            if target.dead and "max_turns" in target.dead and target.kind in ("speaker", "rule"):
                assert target.code in ("W215", "W212"), (path.name, target)
                assert target.code in reported, (path.name, target)


def test_the_case_file_rule_and_speaker() -> None:
    cov = coverage_targets(flowc.compile_flow((CASES / "after_cap.flow").read_text()))
    by_name = {t.name: t for t in cov.targets}
    assert by_name["rule:0"].code == "W215" and not by_name["rule:0"].live
    assert by_name["speaker:c"].code == "W215"
    assert by_name["rule:4"].code == "W212"  # `when from c then terminate`: W212 says it


# ── contradictions ────────────────────────────────────────────────────────────


def test_contradictory_conditions_are_dead_with_the_reason() -> None:
    found = [m for c, m in codes((CASES / "contradiction.flow").read_text()) if c == "W203"]
    assert found == [
        "rule 1, line 11 (`when from a and from b then c`) can never fire: its condition "
        "contradicts itself: `from a` and `from b` cannot both hold (a turn has one sender)",
        "rule 2, line 12 (`when context.k == 1 and context.k == 2 then c`) can never fire: its "
        "condition contradicts itself: `context.k == 1` and `context.k == 2` cannot both hold "
        "(a context key has one value)",
        "rule 3, line 13 (`when tool x and tool y then c`) can never fire: its condition "
        "contradicts itself: `tool x` and `tool y` cannot both hold (a turn routes on one tool call)",
    ]


def test_a_part_that_never_holds_is_named() -> None:
    src = """
    speakers user: human, a, b
    start user
    when from user and not always then b
    when from user then a
    when from a then terminate "done"
    """
    found = [m for c, m in codes(src) if c == "W203"]
    assert found == [
        "rule 1, line 4 (`when from user and not always then b`) can never fire: "
        "its condition contradicts itself: `not always` never holds"
    ]


def test_a_satisfiable_condition_is_not_called_a_contradiction() -> None:
    src = """
    speakers user: human, a, b
    start user
    when from user then a
    when from a then terminate "done"
    when from b and context.k == 1 then a
    """
    assert not any("contradicts" in m for _, m in codes(src))


# ── round_robin ───────────────────────────────────────────────────────────────

ROUND_ROBIN = """
speakers user: human, alice, bob, carol
round_robin user, carol, bob, alice
max_turns 5
"""


def test_round_robin_rotates_in_declaration_order_on_both_runtimes_and_check_says_so() -> None:
    """AG2's RoundRobinTarget follows the channel's participant order (the declaration
    order); the written list only gives the start. W216 shows the real rotation."""
    pytest.importorskip("ag2.network")
    from tests.runtime.ag2_harness import run_on_ag2

    flow = flowc.compile_flow(ROUND_ROBIN)
    script = parse_script(
        {"kickoff": "go", "script": {"alice": ["a"], "bob": ["b"], "carol": ["c"], "user": ["u"]}}
    )
    ours = [
        t["speaker"]
        for t in run_script_sync(RunTarget.from_compiled(flow), script).to_json()["turns"]
    ]
    theirs = [t["speaker"] for t in asyncio.run(run_on_ag2(flow, script))["turns"]]
    assert ours == theirs == ["user", "alice", "bob", "carol", "user"]
    found = [m for c, m in codes(ROUND_ROBIN) if c == "W216"]
    assert found == [
        "`round_robin user, carol, bob, alice` rotates in the declaration order, "
        "not as written: user → alice → bob → carol → user"
    ]


def test_round_robin_written_as_it_rotates_is_clean() -> None:
    assert "W216" not in [
        c
        for c, _ in codes(
            ROUND_ROBIN.replace(
                "round_robin user, carol, bob, alice", "round_robin user, alice, bob, carol"
            )
        )
    ]
    # a subset leaves the others in the rotation: said
    sub = [
        d
        for d in flowc.check("speakers a: human, b, c\nround_robin a, c\nmax_turns 4\n")
        if d.code.id == "W216"
    ]
    assert len(sub) == 1 and "not listed but in the rotation: b" in sub[0].notes


# ── --strict and I301 ─────────────────────────────────────────────────────────


def test_strict_fails_when_the_analysis_stopped_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    page = (ROOT / "docs" / "checks" / "I301.md").read_text()
    body = page.split("```flow --max-states 10\n", 1)[1].split("```", 1)[0]
    (tmp_path / "big.flow").write_text(body)
    assert main(["check", "big.flow", "--max-states", "10"]) == 0
    assert "I301" in capsys.readouterr().out
    assert main(["check", "big.flow", "--max-states", "10", "--strict"]) == 1
    assert main(["check", "big.flow", "--strict"]) == 0  # the whole space: no I301, clean


# ── W217 ──────────────────────────────────────────────────────────────────────

SEQUENCE_LOOP = """speaker user: human
speakers a, b
sequence user -> a -> b
when from b then a
"""


def test_a_loop_beside_a_sequence_runs_into_the_implied_cap() -> None:
    """`sequence user -> a -> b` implies `max_turns 3`: `when from b then a` hands the turn
    back on turn 3 and the cap closes every run (it checked clean)."""
    (d,) = flowc.check(SEQUENCE_LOOP)
    assert d.code.id == "W217"
    assert d.span is not None and (d.span.line, d.span.column) == (3, 1)  # the sequence
    assert d.message == (
        "`max_turns 3` (implied by `sequence`) ends every run at the cap: no run terminates "
        "within 3 turns, and rule 3, line 4 (`when from b then a`) routes turn 3 on to `a`"
    )
    assert d.notes == (
        "a run the cap ends: user → a → b → a (after turn 3 the channel closes "
        'with "max_turns" before `a` speaks)',
    )
    # what the run really does: three turns, closed by the cap
    compiled = flowc.compile_flow(SEQUENCE_LOOP)
    result = run_script_sync(
        RunTarget.from_compiled(compiled),
        parse_script({"kickoff": "go", "script": {"a": ["one", "two"], "b": ["three"]}}),
    )
    assert (result.close_reason, len(result.turns)) == ("max_turns", 3)


def test_the_implied_cap_is_not_reported_when_nothing_reaches_it() -> None:
    plain = "speaker user: human\nspeakers a, b\nsequence user -> a -> b\n"
    assert codes(plain) == []
    # a written cap is the author's: nothing implied
    assert "W217" not in [c for c, _ in codes(SEQUENCE_LOOP + "max_turns 12\n")]
    # a speaker after the cap: W215 says it, once
    assert [c for c, _ in codes(SEQUENCE_THEN_D)] == ["W215"]
