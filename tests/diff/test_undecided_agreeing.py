"""`flowc diff` and a property the checker could not decide (I305): when the comparison of
the two versions ran to completion and no run routes differently, a property with the
same statement that reads nothing the runs of the two versions do not share has the same
verdict in both (flowc/compiler/analysis/undecided.py gives the argument), so it leaves
the behaviour "the same". Where that is not known, the verdict stays unknown."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from flowc.cli import main
from flowc.compiler.analysis import facts_of
from flowc.compiler.analysis import undecided as und
from flowc.compiler.analysis.changes import SAME, UNKNOWN, Version, diff_versions
from flowc.compiler.analysis.facts import CheckOptions
from flowc.compiler.analysis.lockstep import cap_divergence, explore_pair
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import has_errors
from flowc.source import SourceFile
from tests.diff.test_soundness import flow_and_edit

#: `eventually tool u` is I305 here (a run in which `bot` never calls `u` is longer than the
#: turns the checker follows to the cap), and `eventually context.done == true` alike
UNDECIDED = """speaker user: human
speaker bot {
  tool t sets done = true
  tool u
}
start user
max_turns 20000000
context done = false
when from user then bot
when from bot then bot
property p: eventually tool u
property q: eventually context.done == true
"""
#: the same flow written otherwise: comments, blank lines, the tools and the rules in
#: another order (the rules' conditions never both hold), the properties spaced otherwise
REWRITTEN = """# the flow, written otherwise
speaker user: human
speaker bot {
  tool u
  tool t sets done = true  # t marks it done
}

start user
context done = false
max_turns 20000000
when from bot then bot
when from user then bot

property q:   eventually context.done == true
property p: eventually  tool u
"""
NOTE = (
    "property `{}` could not be decided in OLD and NEW, but its verdict is the same in both "
    "versions: each run of either has a run of the other that is the same, turn by turn, in "
    "all the property reads"
)
WHY = (
    "whether a run cut by `max_turns 20000000` breaks it was not decided: such a run is "
    "longer than the 10,000,000 turns flowc follows to the cap (a lower `max_turns` decides it)"
)


def _diff_all(
    tmp_path: Path, old: str, new: str, capsys: Any, *args: str
) -> tuple[list[int], str, Any, str]:
    """The exit codes, and the text, JSON and Markdown reports of ``diff OLD NEW``."""
    (tmp_path / "old.flow").write_text(old)
    (tmp_path / "new.flow").write_text(new)
    files = [str(tmp_path / "old.flow"), str(tmp_path / "new.flow")]
    codes, outs = [], []
    for fmt in ("text", "json", "markdown"):
        codes.append(main(["diff", *files, "--format", fmt, *args]))
        outs.append(capsys.readouterr().out)
    return codes, outs[0], json.loads(outs[1]), outs[2]


def _check_says_undecided(tmp_path: Path, text: str, capsys: Any) -> None:
    (tmp_path / "one.flow").write_text(text)
    main(["check", str(tmp_path / "one.flow")])
    out = capsys.readouterr().out
    assert "I305]: property p could not be decided" in out
    assert "I305]: property q could not be decided" in out


@pytest.mark.parametrize("new", [UNDECIDED, REWRITTEN], ids=["itself", "rewritten"])
def test_a_property_undecided_in_both_with_the_same_runs_is_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], new: str
) -> None:
    """A flow against itself, or against itself written otherwise: no run routes
    differently, and each property reads only what the lockstep pairs (the tool called;
    the context, which both versions start and write alike), so its verdict is the same,
    undecided as it is: "the same" (exit 0) in every format, with a note saying why."""
    _check_says_undecided(tmp_path, UNDECIDED, capsys)
    codes, text, doc, markdown = _diff_all(tmp_path, UNDECIDED, new, capsys)
    assert codes == [0, 0, 0]
    notes = [NOTE.format("p"), NOTE.format("q")]  # in NEW's order of the properties
    notes = notes if new == UNDECIDED else notes[::-1]
    assert "".join(f"note: {n}\n" for n in notes) in text
    assert "\nbehaviour: the same — no run routes differently\n" in text
    assert "could not be decided in OLD and NEW:" not in text
    assert (doc["verdict"], doc["behaviour_changed"], doc["reason"]) == ("same", False, None)
    assert (doc["notes"], doc["behavioural"], doc["first"]) == (notes, [], None)
    assert ": behaviour unchanged\n" in markdown
    for n in notes:
        assert f"_Note: {n}_" in markdown


def test_the_documented_note() -> None:
    """docs/diff.md's note is what the diff says."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "diff.md").read_text(encoding="utf-8")
    assert f"```text\nnote: {NOTE.format('p')}\n```" in doc


def test_diff_versions_says_the_same() -> None:
    d = diff_versions(_version("old.flow", UNDECIDED), _version("new.flow", REWRITTEN))
    assert (d.verdict, d.reason, d.behavioural) == (SAME, "", ())
    assert [str(n) for n in d.notes] == [NOTE.format("q"), NOTE.format("p")]


@pytest.mark.parametrize(
    ("edit", "where", "line"),
    [
        # `t` writes what only `q` reads: no run routes differently, but q sees it
        (
            ("sets done = true", "sets done = null"),
            "OLD and NEW",
            "could not be decided in OLD and NEW",
        ),
        # `done` starts otherwise: q holds in NEW from the kickoff on
        (
            ("context done = false", "context done = true"),
            "OLD",
            "could not be decided in OLD and holds in NEW",
        ),
    ],
    ids=["a tool's write", "an initial value"],
)
def test_what_only_the_property_reads_differs_so_it_stays_unknown(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: tuple[str, str],
    where: str,
    line: str,
) -> None:
    """The statement is the same and no run routes differently, but the context `q` reads
    is written or starts otherwise: the verdict stays unknown (exit 2), for `q` only (`p`
    reads no context: the same)."""
    new = UNDECIDED.replace(*edit)
    codes, text, doc, _ = _diff_all(tmp_path, UNDECIDED, new, capsys)
    assert codes == [2, 2, 2]
    reason = (
        f"no run routes differently, but property `q` could not be decided in {where}: "
        "whether its verdict is the same in both versions is not known"
    )
    assert f"\nbehaviour: unknown — {reason}\n  * property `q` {line}: {WHY}\n" in text
    assert (doc["verdict"], doc["reason"], doc["notes"]) == ("unknown", reason, [NOTE.format("p")])
    assert [c["subject"] for c in doc["behavioural"]] == ["q"]


def test_a_run_that_routes_differently_stays_a_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The statements are the same, but `bot` now hands the turn back to `user`, and
    `from`, `tool` and the context the properties read go otherwise: changed (exit 1),
    the undecided properties listed among the changes, and no note."""
    new = UNDECIDED.replace("when from bot then bot", "when from bot then user")
    codes, _, doc, _ = _diff_all(tmp_path, UNDECIDED, new, capsys)
    assert codes == [1, 1, 1]
    assert (doc["verdict"], doc["notes"]) == ("changed", [])
    assert [c["subject"] for c in doc["behavioural"] if c["kind"] == "property-unknown"] == [
        "p",
        "q",
    ]


def test_a_comparison_cut_by_its_bound_leaves_it_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The flow against itself, but the comparison stops at its bound (`--max-states 1`):
    that no run routes differently is not known, so neither is it that the properties'
    verdicts are the same: unknown (exit 2), naming both."""
    codes, text, doc, _ = _diff_all(tmp_path, UNDECIDED, UNDECIDED, capsys, "--max-states", "1")
    assert codes == [2, 2, 2]
    assert doc["verdict"] == "unknown" and doc["notes"] == []
    assert doc["reason"].startswith("the exploration stopped at its bound of 1 state")
    assert (
        "properties `p` (in OLD and NEW), `q` (in OLD and NEW) could not be decided"
        in (doc["reason"])
    )
    assert "note:" not in text


def test_a_changed_statement_stays_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`eventually tool u or tool u` claims what `eventually tool u` does, but it is another
    statement: its verdict is not compared with the old one's, so it stays unknown."""
    new = UNDECIDED.replace("eventually tool u", "eventually tool u or tool u")
    codes, _, doc, _ = _diff_all(tmp_path, UNDECIDED, new, capsys)
    assert codes == [2, 2, 2]
    assert doc["notes"] == [NOTE.format("q")]
    assert [c["subject"] for c in doc["behavioural"]] == ["p"]


def test_another_human_leaves_it_unknown() -> None:
    """`user` becomes a model speaker with no tools: no run routes differently (it only
    speaks in both), but a turn the lockstep pairs with itself may then be a human's write in
    one version and a tool's in the other, and this is not looked into: unknown."""
    new = UNDECIDED.replace("speaker user: human", "speaker user")
    d = diff_versions(_version("old.flow", UNDECIDED), _version("new.flow", new))
    assert (d.verdict, d.first, d.notes) == (UNKNOWN, None, ())


# ── generated flows ───────────────────────────────────────────────────────────

OPTIONS = CheckOptions(max_states=20_000)
#: statements over the generated flows' names (tests/diff/test_soundness.py): speakers
#: `user` and `a` (every flow has them), tools `t1`, `t2` and keys `k`, `j` (where a flow
#: declares them: others are E117), ends and turns
STATEMENTS = [
    "eventually from a",
    "never from a and previous from a",
    "from user at most 1 time",
    "always not ends or turn >= 3",
    "after from a, from user within 2 turns",
    "eventually tool t1",
    "tool t2 only after from a",
    'never context.k == "y"',
    "eventually context.j == 2 before ends",
    "always context.k != true after tool t1",
]


def _version(name: str, text: str) -> Version:
    compiled, diags = compile_source(SourceFile(name, text))
    assert compiled is not None, (text, diags)
    return Version(name, compiled)


def _compiles(text: str) -> bool:
    compiled, diags = compile_source(SourceFile("gen.flow", text))
    return compiled is not None and not has_errors(diags)


@st.composite
def flows_with_properties(draw: Any) -> tuple[str, str, str]:
    """A generated flow and an edit of it, both with the same properties (those of
    :data:`STATEMENTS` that both compile with)."""
    old, new, kind = draw(flow_and_edit())
    chosen = draw(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=4, unique=True))
    lines = [f"property p{i}: {s}\n" for i, s in enumerate(chosen)]
    kept = "".join(x for x in lines if _compiles(old + x) and _compiles(new + x))
    assume(kept)
    return old + kept, new + kept, kind


def _complete_and_alike(old: CompiledFlow, new: CompiledFlow) -> bool:
    """The lockstep, on its own: it ran to completion and no run routes differently."""
    product = explore_pair(system_of_flow(old), system_of_flow(new), OPTIONS.max_states)
    return not (
        product.divergences
        or product.truncated
        or product.partial
        or cap_divergence(product, OPTIONS.max_states) is not None
    )


def _verdicts(compiled: CompiledFlow) -> dict[str, str]:
    _, findings = facts_of(system_of_flow(compiled), OPTIONS)
    return {k: v for k, (v, _) in und.property_verdicts(compiled, findings).items()}


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(case=flows_with_properties())
def test_a_property_said_to_agree_has_one_verdict_where_the_checker_decides_it(
    case: tuple[str, str, str],
) -> None:
    """The argument, checked against the checker: on a random edit that no run tells
    apart (the comparison complete), every property that :func:`und.agreeing` says has the
    same verdict in both versions has, where the checker decides it in both (the flows'
    caps are small), the same verdict in both."""
    old_text, new_text, kind = case
    old, new = _version("old.flow", old_text).compiled, _version("new.flow", new_text).compiled
    assert old is not None and new is not None
    assume(_complete_and_alike(old, new))
    names = [(p.name, "OLD and NEW") for p in new.properties]
    agreed = {name for name, _ in und.agreeing(old, new, names)}
    event(f"edit: {kind}; agreeing: {len(agreed)} of {len(names)}")
    vo, vn = _verdicts(old), _verdicts(new)
    for name in agreed:
        if vo.get(name, "unknown") != "unknown" and vn.get(name, "unknown") != "unknown":
            assert vo[name] == vn[name], (name, old_text, new_text)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(case=flows_with_properties(), huge=st.booleans())
def test_a_flow_against_itself_is_never_unknown_for_a_property(
    case: tuple[str, str, str], huge: bool
) -> None:
    """``diff F F``, with F's cap raised past what the checker follows (its properties then
    often undecided: a note says each agrees) or not: where the comparison is complete, the verdict is "the same",
    never unknown because of a property."""
    text = case[0]
    if huge:
        text = re.sub(r"^max_turns \d+\n", "", text, flags=re.M) + "max_turns 20000000\n"
    v = _version("f.flow", text)
    assert v.compiled is not None
    assume(_complete_and_alike(v.compiled, v.compiled))
    d = diff_versions(v, _version("f.flow", text), OPTIONS)
    event(f"notes: {len(d.notes)}")
    assert (d.verdict, d.reason) == (SAME, ""), text
