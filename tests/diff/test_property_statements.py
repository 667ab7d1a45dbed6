"""`flowc diff` and the flows' `property` statements: one added, removed or changed is a
structural change; one that held in OLD and is violated in NEW (or the other way round)
is a behavioural change, with NEW's shortest run that breaks it. The verdicts are
confirmed by the brute force (tests/property_check), which shares no code with the
checker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.compiler.analysis.changes import Version, diff_versions
from flowc.compiler.pipeline import compile_source
from flowc.source import SourceFile
from tests.property_check.meaning import holds, violation_turn
from tests.property_check.runs import Runs

OLD = """speaker user: human
speaker bot { tool publish }
speaker reviewer
max_turns 6
when from user then reviewer
when from reviewer then bot
when from bot then user
property reviewed_first: tool publish only after from reviewer
property quiet: never from bot and previous from bot
property gone: eventually from user
"""
NEW = (
    OLD.replace("when from user then reviewer", "when from user then bot")
    .replace(
        "property quiet: never from bot and previous from bot",
        "property quiet: never from bot and previous from bot and previous previous from bot",
    )
    .replace(
        "property gone: eventually from user\n", "property added: always from user, bot, reviewer\n"
    )
)


def version(name: str, text: str) -> Version:
    compiled, diags = compile_source(SourceFile(name, text))
    assert compiled is not None, diags
    return Version(name, compiled)


def test_properties_added_removed_changed_and_a_verdict_that_flips() -> None:
    d = diff_versions(version("old.flow", OLD), version("new.flow", NEW))
    props = [(c.kind, c.subject, c.text) for c in d.structural if c.kind.startswith("property")]
    assert props == [
        (
            "property-changed",
            "quiet",
            "property `quiet`: `never from bot and previous from bot` → "
            "`never from bot and previous from bot and previous previous from bot`",
        ),
        ("property-added", "added", "property `added` added (`always from user, bot, reviewer`)"),
        ("property-removed", "gone", "property `gone` removed (`eventually from user`)"),
    ]
    (flip,) = [c for c in d.behavioural if c.kind.startswith("property")]
    assert (flip.kind, flip.subject) == ("property-violated", "reviewed_first")
    assert flip.text == (
        "property `reviewed_first` held in OLD and is violated in NEW: broken on turn 2: turn 2 "
        "has `tool publish`, and no turn up to it has `from reviewer`; a shortest run that "
        "breaks it: user → bot (publish) → user"
    )
    # the other way round: it holds again
    back = diff_versions(version("new.flow", NEW), version("old.flow", OLD))
    (flip,) = [c for c in back.behavioural if c.kind.startswith("property")]
    assert (flip.kind, flip.text) == (
        "property-holds",
        "property `reviewed_first` was violated in OLD and holds in NEW",
    )


def test_the_brute_force_confirms_the_flip() -> None:
    old, new = version("old.flow", OLD).compiled, version("new.flow", NEW).compiled
    assert old is not None and new is not None
    (p_old,) = [p for p in old.properties if p.name == "reviewed_first"]
    (p_new,) = [p for p in new.properties if p.name == "reviewed_first"]
    assert p_old == p_new
    old_runs, new_runs = Runs(OLD, [p_old]), Runs(NEW, [p_new])
    assert all(holds(p_old, run) for run in old_runs.runs())
    turns = [violation_turn(p_new, run) for run in new_runs.runs()]
    # broken on turn 2 at the earliest, as the diff's run says
    assert min(t for t in turns if t is not None) == 2


def test_only_a_reworded_property_is_no_change() -> None:
    reworded = OLD.replace(
        "property gone: eventually from user", "property gone:   eventually   from user"
    )
    d = diff_versions(version("old.flow", OLD), version("new.flow", reworded))
    assert d.structural == () and d.behavioural == ()


def test_the_command_reports_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "old.flow").write_text(OLD)
    (tmp_path / "new.flow").write_text(NEW)
    code = main(
        ["diff", str(tmp_path / "old.flow"), str(tmp_path / "new.flow"), "--format", "json"]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    kinds = [c["kind"] for c in doc["structural"] if c["kind"].startswith("property")]
    assert kinds == ["property-changed", "property-added", "property-removed"]
    assert [c["subject"] for c in doc["behavioural"] if c["kind"] == "property-violated"] == [
        "reviewed_first"
    ]
    assert main(["diff", str(tmp_path / "old.flow"), str(tmp_path / "new.flow")]) == 1
    out = capsys.readouterr().out
    assert "  + property `added` added (`always from user, bot, reviewer`)\n" in out
    assert "  * property `reviewed_first` held in OLD and is violated in NEW: " in out
