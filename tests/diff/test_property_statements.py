"""`flowc diff` and the flows' `property` statements: one added, removed or changed is a
structural change; one that held in OLD and is violated in NEW (or the other way round)
is a behavioural change, with NEW's shortest run that breaks it. The verdicts are
confirmed by the brute force (tests/property_check), which shares no code with the
checker."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flowc.cli import main
from flowc.compiler.analysis.changes import Version, diff_versions
from flowc.compiler.pipeline import compile_source
from flowc.source import SourceFile
from tests.property_check.meaning import holds, truth, violation_turn
from tests.property_check.runs import Record, Runs

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
        "property `reviewed_first` was violated in OLD and holds in NEW; in OLD, a shortest "
        "run that breaks it: user → bot (publish) → user",
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


# ── the run of a flip, as data ───────────────────────────────────────────────

#: no rule reads what `publish` writes: only the property sees the change
FLIP_OLD = """speaker user: human { sets topic }
speaker bot { tool publish sets approved = true }
speaker reviewer { tool decide sets stage = "ok" | sets stage = "draft" }
max_turns 6
when from user then bot
when from bot then reviewer
when from reviewer then user
property approved: never context.approved == false and context.topic == "x"
"""
FLIP_NEW = FLIP_OLD.replace("sets approved = true", "sets approved = false")


def _diff_json(tmp_path: Path, old: str, new: str, capsys: Any) -> tuple[int, dict[str, Any]]:
    (tmp_path / "old.flow").write_text(old)
    (tmp_path / "new.flow").write_text(new)
    code = main(
        ["diff", str(tmp_path / "old.flow"), str(tmp_path / "new.flow"), "--format", "json"]
    )
    return code, json.loads(capsys.readouterr().out)


def _check_run_note(path: Path, name: str, capsys: Any) -> str:
    """The run `flowc check --format json` gives for the violated property ``name``."""
    main(["check", str(path), "--format", "json"])
    (found,) = [
        d
        for d in json.loads(capsys.readouterr().out)
        if d["code"] == "E116" and f"property {name} " in d["message"]
    ]
    return str(found["notes"][-1]).split(": ", 1)[1]


def _shown(turn: dict[str, Any]) -> str:
    """A turn of the JSON as the checker prints it (tools, and a human's writes)."""
    parts = [turn["tool"]] if turn["tool"] else []
    parts += [f"sets {k} = {json.dumps(v)}" for k, v in turn["context"].items()]
    return turn["speaker"] + (f" ({'; '.join(parts)})" if parts else "")


def _replayable(runs: Runs, turn: dict[str, Any]) -> Any:
    """A turn of the JSON as the enumerator replays a checker's turn: a tool turn writes
    what its alternative (``alternative``) declares, a human's turn its ``context``."""
    sets: tuple[tuple[str, Any], ...] = ()
    clears: tuple[str, ...] = ()
    handoff = finish = None
    if turn["tool"] is not None:
        effect = runs.version.tools[(turn["speaker"], turn["tool"])][turn["alternative"]]
        sets = tuple((k, json.loads(v)) for k, v in effect.sets)
        clears, handoff, finish = effect.clears, effect.handoff, effect.finish
    else:
        sets = tuple((k, v) for k, v in turn["context"].items() if v is not None)
        clears = tuple(k for k, v in turn["context"].items() if v is None)
    return SimpleNamespace(
        speaker=turn["speaker"],
        tool=turn["tool"],
        sets=sets,
        clears=clears,
        handoff=handoff,
        finish=finish,
        assumed=tuple(turn["assumed"].items()),
        custom_choice=None,
    )


def _replay(runs: Runs, run: list[dict[str, Any]], after: dict[str, Any]) -> tuple[Record, ...]:
    """The records of the JSON's run, replayed turn by turn on the enumerator's flow (a
    :class:`ReplayError` when the flow has no such run, or it does not go on as ``after``
    says)."""
    turns = [_replayable(runs, t) for t in run]
    (records,) = runs.replay(turns, after["next"], after["reason"])
    return records


def test_a_flip_alone_changes_the_behaviour_and_its_run_is_the_checkers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No run routes differently, yet a run breaks the property in NEW only: the exit status
    says the behaviour changed (a CI gate on it must not pass a newly broken property), and
    the JSON carries NEW's breaking run, the one `flowc check` gives, which really breaks it."""
    code, doc = _diff_json(tmp_path, FLIP_OLD, FLIP_NEW, capsys)
    assert code == 1
    assert (doc["verdict"], doc["behaviour_changed"], doc["first"]) == ("changed", True, None)
    (flip,) = doc["behavioural"]
    assert (flip["kind"], flip["subject"], flip["old"], flip["loop_from"]) == (
        "property-violated",
        "approved",
        None,
        None,
    )
    run, after = flip["run"], flip["new"]
    assert [(t["speaker"], t["tool"], t["context"]) for t in run] == [
        ("user", None, {"topic": "x"}),
        ("bot", "publish", {}),
    ]
    assert after == {"next": "reviewer", "reason": None, "rule": 2, "by": "rule 2, line 6"}
    # the run `flowc check --format json` reports for the property on NEW
    shown = " → ".join([*map(_shown, run), after["next"]])
    assert shown == _check_run_note(tmp_path / "new.flow", "approved", capsys)
    # replayed on NEW by the brute force, it breaks the property on its last turn; OLD
    # takes the same turns and the property holds on every run of OLD
    (prop,) = version("new.flow", FLIP_NEW).compiled.properties  # type: ignore[union-attr]
    new_runs, old_runs = Runs(FLIP_NEW, [prop]), Runs(FLIP_OLD, [prop])
    assert violation_turn(prop, _replay(new_runs, run, after)) == len(run)
    assert holds(prop, _replay(old_runs, run, after))
    assert all(holds(prop, r) for r in old_runs.runs())
    # the text says so too
    assert main(["diff", str(tmp_path / "old.flow"), str(tmp_path / "new.flow")]) == 1
    out = capsys.readouterr().out
    assert (
        "behaviour: changed — no run routes differently, but a run breaks a property in one "
        "version only\n  * property `approved` held in OLD and is violated in NEW: "
    ) in out
    assert (
        main(
            ["diff", *(str(tmp_path / f) for f in ("old.flow", "new.flow")), "--format", "markdown"]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert "new.flow`: **behaviour changed**\n" in out
    assert "\n- property `approved` held in OLD and is violated in NEW: " in out


def test_a_property_that_holds_again_carries_olds_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The other way round: the run that no longer breaks it is OLD's, and NEW takes it
    without breaking the property."""
    code, doc = _diff_json(tmp_path, FLIP_NEW, FLIP_OLD, capsys)
    assert (code, doc["verdict"]) == (1, "changed")
    (back,) = doc["behavioural"]
    assert (back["kind"], back["new"], back["loop_from"]) == ("property-holds", None, None)
    run, after = back["run"], back["old"]
    shown = " → ".join([*map(_shown, run), after["next"]])
    assert shown == _check_run_note(tmp_path / "old.flow", "approved", capsys)
    assert back["text"].endswith(f"holds in NEW; in OLD, a shortest run that breaks it: {shown}")
    (prop,) = version("old.flow", FLIP_NEW).compiled.properties  # type: ignore[union-attr]
    assert violation_turn(prop, _replay(Runs(FLIP_NEW, [prop]), run, after)) == len(run)
    assert holds(prop, _replay(Runs(FLIP_OLD, [prop]), run, after))


ALTERNATIVES = """speaker user: human
speaker bot { tool decide sets stage = "draft" | sets stage = "bad" }
speaker reviewer
max_turns 6
when from user then bot
when from bot and context.stage == "bad" then user
when from bot then reviewer
when from reviewer then user
property staged: never from reviewer and context.stage == "bad"
"""


def test_the_run_names_the_alternative_a_tool_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run through a tool of several alternatives says which one it takes, as a
    distinguishing run does (``alternative``, ``effects``), and replays so."""
    new = ALTERNATIVES.replace(
        'context.stage == "bad" then user', 'context.stage == "draft" then user'
    )
    code, doc = _diff_json(tmp_path, ALTERNATIVES, new, capsys)
    assert code == 1
    (flip,) = [c for c in doc["behavioural"] if c["kind"] == "property-violated"]
    run, after = flip["run"], flip["new"]
    assert [(t["speaker"], t["tool"], t["alternative"], t["effects"]) for t in run] == [
        ("user", None, 0, None),
        ("bot", "decide", 1, 'sets stage = "bad"'),
        ("reviewer", None, 0, None),
    ]
    assert after["next"] == "user"
    assert " → ".join([*map(_shown, run), after["next"]]) == _check_run_note(
        tmp_path / "new.flow", "staged", capsys
    )
    (prop,) = version("new.flow", new).compiled.properties  # type: ignore[union-attr]
    assert violation_turn(prop, _replay(Runs(new, [prop]), run, after)) == 3


LOOP_OLD = """speaker user: human
speaker bot
speaker reviewer
when from user then bot
when from bot then reviewer
when from reviewer then terminate "done"
property reviewed: eventually from reviewer
"""
LOOP_NEW = LOOP_OLD.replace("when from bot then reviewer", "when from bot then user")


def test_a_run_that_breaks_it_for_ever_says_where_its_loop_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lasso: ``run[loop_from:]`` repeat for ever, and after the last turn the run goes
    back to ``run[loop_from]``. Replayed (round the loop once more, under a cap that only
    the enumerator needs), no turn of it is ``from reviewer``: it never comes."""
    code, doc = _diff_json(tmp_path, LOOP_OLD, LOOP_NEW, capsys)
    assert code == 1
    (flip,) = [c for c in doc["behavioural"] if c["kind"] == "property-violated"]
    run, after, start = flip["run"], flip["new"], flip["loop_from"]
    assert [t["speaker"] for t in run] == ["user", "bot", "user"]
    assert (start, after["next"]) == (1, "bot")
    assert after["next"] == run[start]["speaker"]
    assert " → ".join([*(t["speaker"] for t in run), after["next"], "…"]) == _check_run_note(
        tmp_path / "new.flow", "reviewed", capsys
    )
    capped = LOOP_NEW.replace("when from user", "max_turns 20\nwhen from user", 1)
    (prop,) = version("new.flow", LOOP_NEW).compiled.properties  # type: ignore[union-attr]
    loop = run[start:]
    records = _replay(Runs(capped, [prop]), run + loop, {**after, "next": loop[0]["speaker"]})
    assert len(records) == len(run) + len(loop)
    assert not any(truth(prop.pattern.p, records))  # type: ignore[union-attr]
    # the markdown says so in its sentence
    assert (
        main(
            ["diff", *(str(tmp_path / f) for f in ("new.flow", "old.flow")), "--format", "markdown"]
        )
        == 1
    )
    assert (
        "in OLD, a run that breaks it for ever: `user → bot → user → bot → …`"
        in capsys.readouterr().out
    )


def test_a_name_with_a_colon_leaves_the_claim_whole() -> None:
    """The claim is what follows ``property NAME:``, the name backquoted when it has a colon
    (not what follows the first colon): in check's message, run's and diff's texts."""
    base = "speaker user: human\nspeaker bot\nmax_turns 4\nwhen from user then bot\n"
    old = version("old.flow", base + "property `a: b`: never from bot\n")
    new = version("new.flow", base + "property `x:y`: from user at most 1 time\n")
    d = diff_versions(old, new)
    props = sorted(c.text for c in d.structural if c.kind.startswith("property"))
    # (the name as the flow writes it, backquoted once, as check's message quotes it)
    assert props == [
        "property `a: b` removed (`never from bot`)",
        "property `x:y` added (`from user at most 1 time`)",
    ]
    from flowc.compiler.analysis import check_compiled

    assert old.compiled is not None
    (e116,) = [f for f in check_compiled(old.compiled, ()) if f.code.id == "E116"]
    assert e116.message == "property `a: b` is violated (`never from bot`)"


# ── a property the checker could not decide ──────────────────────────────────

#: `eventually tool u` is broken by a run in which `bot` never calls `u` until the cap, but
#: such a run is longer than the turns the checker follows to the cap: I305 (really
#: violated: with a low cap the checker finds the run); `never tool t and tool u` holds
UNDECIDED = """speaker user: human
speaker bot { tool t
 tool u }
start user
max_turns 20000000
when from user then bot
when from bot then bot
property p: eventually tool u
"""
DECIDED = UNDECIDED.replace("eventually tool u", "never tool t and tool u")
WHY = (
    "whether a run cut by `max_turns 20000000` breaks it was not decided: such a run is "
    "longer than the 10,000,000 turns flowc follows to the cap (a lower `max_turns` decides it)"
)


def _diff_all(tmp_path: Path, old: str, new: str, capsys: Any) -> tuple[list[int], str, Any, str]:
    """The exit codes, and the text, JSON and Markdown reports of ``diff OLD NEW``."""
    (tmp_path / "old.flow").write_text(old)
    (tmp_path / "new.flow").write_text(new)
    files = [str(tmp_path / "old.flow"), str(tmp_path / "new.flow")]
    codes, outs = [], []
    for fmt in ("text", "json", "markdown"):
        codes.append(main(["diff", *files, "--format", fmt]))
        outs.append(capsys.readouterr().out)
    return codes, outs[0], json.loads(outs[1]), outs[2]


@pytest.mark.parametrize(
    ("old", "new", "where", "line"),
    [
        (UNDECIDED, DECIDED, "OLD", "could not be decided in OLD and holds in NEW"),
        (DECIDED, UNDECIDED, "NEW", "held in OLD and could not be decided in NEW"),
        # both undecided, and the statement changed (though it claims the same: an
        # unchanged one would have the same verdict in both, tests/diff/test_undecided_agreeing.py)
        (
            UNDECIDED,
            UNDECIDED.replace("eventually tool u", "eventually tool u or tool u"),
            "OLD and NEW",
            "could not be decided in OLD and NEW",
        ),
    ],
)
def test_a_property_not_decided_makes_the_behaviour_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, where: str, line: str
) -> None:
    """No run routes differently, but a property of both versions has no verdict in one
    (or both): whether its verdict is the same is not known, so the diff does not say "the
    same" (exit 0) but unknown (exit 2), names the property and says why, in every format."""
    codes, text, doc, markdown = _diff_all(tmp_path, old, new, capsys)
    assert codes == [2, 2, 2]
    reason = (
        f"no run routes differently, but property `p` could not be decided in {where}: "
        "whether its verdict is the same in both versions is not known"
    )
    assert f"\nbehaviour: unknown — {reason}\n  * property `p` {line}: {WHY}\n" in text
    assert "behaviour: the same" not in text
    assert (doc["verdict"], doc["behaviour_changed"], doc["reason"], doc["first"]) == (
        "unknown",
        None,
        reason,
        None,
    )
    assert doc["behavioural"] == [
        {"kind": "property-unknown", "text": f"property `p` {line}: {WHY}", "subject": "p"}
    ]
    assert "new.flow`: **behaviour unknown**\n" in markdown
    assert "flowc could not decide: no run routes differently, but property \\`p\\`" in markdown
    assert f"\n- property `p` {line}: ``{WHY}``\n" in markdown


def test_the_undecided_property_hid_a_change() -> None:
    """With a cap low enough to follow, the checker decides it: OLD's property is
    violated, NEW's holds (what the undecided diff could not rule out)."""
    low = {v: v.replace("max_turns 20000000", "max_turns 6") for v in (UNDECIDED, DECIDED)}
    d = diff_versions(version("old.flow", low[UNDECIDED]), version("new.flow", low[DECIDED]))
    assert (d.verdict, [c.kind for c in d.behavioural]) == ("changed", ["property-holds"])


def test_a_change_a_run_shows_stays_a_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run that routes differently is a change (exit 1) whatever the property's verdict:
    the undecided property is listed with the changes."""
    new = UNDECIDED.replace("when from bot then bot", "when from bot then user")
    codes, text, doc, markdown = _diff_all(tmp_path, UNDECIDED, new, capsys)
    assert codes == [1, 1, 1]
    assert f"\n  * property `p` could not be decided in OLD and NEW: {WHY}\n" in text
    assert (doc["verdict"], doc["reason"]) == ("changed", None)
    assert [c["kind"] for c in doc["behavioural"]] == ["property-unknown"]
    assert f"| property `p` could not be decided in OLD and NEW: ``{WHY}`` |" in markdown


@pytest.mark.parametrize("added", ["eventually tool u", "never tool t"])
def test_a_property_only_one_version_has_is_not_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], added: str
) -> None:
    """A property added in NEW has no verdict in OLD to compare with: violated there
    (`never tool t`) or not decided (`eventually tool u`), it is a structural change and
    the behaviour is the same (exit 0), as docs/diff.md says; removed, likewise."""
    new = f"{DECIDED}property q: {added}\n"
    for old_text, new_text in ((DECIDED, new), (new, DECIDED)):
        codes, text, doc, _ = _diff_all(tmp_path, old_text, new_text, capsys)
        assert codes == [0, 0, 0]
        assert "\nbehaviour: the same — no run routes differently\n" in text
        assert (doc["verdict"], doc["behavioural"]) == ("same", [])
        assert [c["kind"] for c in doc["structural"]] in (
            ["property-added"],
            ["property-removed"],
        )


def test_the_documented_undecided_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/diff.md's example of a property not decided is what the diff prints."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "diff.md").read_text(encoding="utf-8")
    block = doc.split("`property-unknown` change gives", 1)[1].split("```text\n", 1)[1]
    _, text, _, _ = _diff_all(tmp_path, UNDECIDED, DECIDED, capsys)
    assert text.endswith("\n" + block.split("```", 1)[0])
