"""Differential check of classic AG2 GroupChat translations: run both sides, compare.

For every classic GroupChat input of the corpus with a translation (``corpus/NAME.py``
and its golden ``NAME.flow``), and every AG2 group API pattern (ag2 runs those on a classic
GroupChat too), each script derived from the case is run twice:

- the original file under the real ``ag2==0.9.10`` (a throw-away venv, see conftest.py),
  by ``classic_driver.py``, with every agent's model reply and human answer taken from
  the script;
- the golden flow under ``flowc run --script --json`` with the same script.

Who speaks, turn by turn, and how the run ends must be the same. Neither side is written
down: both are computed. The scripts are derived from the case (``harness.scripts``, the
AgentChat test's too): one where each speaker says ``turn K of NAME`` (K counts that
speaker's turns), one per scenario of the flow, where each speaker says the texts and makes
the tool calls its scenario turns give (so termination messages and text-driven selection
are exercised), then ``turn K of NAME``, and, when speakers declare tools, one per tool
position where each such speaker calls its tools in turn, starting there (a model reply
that is a tool call, which classic's tool executor runs and routes).

A translation whose findings report nothing lost or different (no M001 / M002) must match;
the others are listed as not exact and skipped with their findings.
"""

from __future__ import annotations

import re
import time
from collections.abc import Container
from pathlib import Path
from typing import Any

import pytest

from .conftest import TIMINGS
from .harness import (
    CORPUS,
    HERE,
    INEXACT,
    Script,
    assert_agree,
    choices,
    findings,
    kickoff,
    run_driver,
    run_flow,
    selector_after,
    spoken,
    start_speaker,
    typed_selectors,
)
from .harness import compare as compare_sides

DRIVER = HERE / "classic_driver.py"


def _classic_cases() -> list[Path]:
    out = []
    for py in sorted(CORPUS.glob("*.py")):
        text = py.read_text(encoding="utf-8")
        if "autogen_agentchat" in text:
            continue  # AgentChat: another family
        # classic GroupChat, and the AG2 group API's patterns (run on a classic GroupChat)
        if not re.search(r"(?<![A-Za-z_])GroupChat\(|Pattern\(", text):
            continue
        if py.with_suffix(".flow").exists():
            out.append(py)
    return out


CASES = _classic_cases()


def run_classic(python: Path, py: Path, replies: Script, tmp: Path) -> Any:
    plan = {
        "file": str(py),
        "replies": replies,
        # the flow's selector speakers' decisions, for ag2's speaker selection model
        "choices": choices(py, replies),
        "selector_after": selector_after(py),
        # a person selector types them at ag2's console ("manual")
        "typed": bool(typed_selectors(py)),
    }
    return run_driver(python, DRIVER, plan, tmp)


def run_translation(
    py: Path, flow: Path, replies: Script, tmp: Path, capsys: pytest.CaptureFixture[str]
) -> Any:
    # (the file's kickoff first: else the start speaker's first scripted turn would be it)
    start = kickoff(py)
    script = {"script": replies, **({"kickoff": start} if start is not None else {})}
    run = run_flow(flow, script, tmp, capsys)
    return {
        "speakers": spoken(py, run),
        "end": run.get("close_reason") or f"stalled: {run.get('stalled_on')}",
    }


def compare(
    python: Path,
    py: Path,
    flow: Path,
    tmp: Path,
    capsys: pytest.CaptureFixture[str],
    only: Container[str] | None = None,
) -> list[str]:
    """Every script of ``py`` (or those titled in ``only``) run under ag2 and under
    ``flow``: the runs that differ."""
    return compare_sides(
        py,
        ("ag2 0.9.10", lambda replies: run_classic(python, py, replies, tmp)),
        lambda replies: run_translation(py, flow, replies, tmp, capsys),
        only,
    )


@pytest.mark.parametrize("py", CASES, ids=[p.stem for p in CASES])
def test_classic_and_translation_agree(
    py: Path,
    classic_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert_agree(
        "classic",
        py,
        lambda: compare(classic_python, py, py.with_suffix(".flow"), tmp_path, capsys),
    )


def test_the_harness_covers_the_exact_classic_cases() -> None:
    exact = [p for p in CASES if not findings(p) & INEXACT]
    assert len(exact) >= 6, [p.name for p in exact]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("when from critic then editor", "when from critic then writer"),  # who speaks
        ("max_turns 7", "max_turns 8"),  # one turn more
        ('"\\\\ATERMINATE\\\\Z"', '"\\\\ADONE\\\\Z"'),  # TERMINATE no longer ends it
    ],
)
def test_the_harness_reports_a_perturbed_translation(
    old: str,
    new: str,
    classic_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One rule of a translation that matches, changed: the harness must see it."""
    py = CORPUS / "round_robin_blog.py"
    text = py.with_suffix(".flow").read_text(encoding="utf-8")
    assert old in text
    flow = tmp_path / "perturbed.flow"
    flow.write_text(text.replace(old, new), encoding="utf-8")
    mismatches = compare(classic_python, py, flow, tmp_path, capsys)
    assert mismatches, f"changing {old!r} to {new!r} went unnoticed"


# auto_selector's scripts that call no tool: its findings are not exact (its tool's
# executor turn, see them), so the scripts that call the tool differ already
_NO_TOOL = ("turn K of NAME", "scenario the selector speaker picks the next agent")
# the golden flow's runs of those scripts, the same for every perturbation: run once
_GOLDEN: dict[str, list[str]] = {}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the selector's choice of Coder sends the turn elsewhere
        (
            "when tool transfer_to_Coder           then Coder",
            "when tool transfer_to_Coder           then Product_manager",
        ),
        # the selector no longer chooses after the Product_manager
        (
            "when from User_proxy, Coder, Product_manager   then boss",
            "when from User_proxy, Coder                    then boss",
        ),
        # one selection fewer before classic's max_round
        ("max_turns 23", "max_turns 21"),
    ],
)
def test_the_harness_reports_a_perturbed_selector_choice(
    old: str,
    new: str,
    classic_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One rule of the translation of classic's ``"auto"`` selection changed: the scripts
    on which the golden translation runs as ag2 (its selector model fed the choices the
    flow's selector speaker makes) must see it. They must agree on the golden flow first,
    else the check would say nothing."""
    py = CORPUS / "auto_selector.py"
    text = py.with_suffix(".flow").read_text(encoding="utf-8")
    assert old in text
    if py.name not in _GOLDEN:
        _GOLDEN[py.name] = compare(
            classic_python, py, py.with_suffix(".flow"), tmp_path, capsys, _NO_TOOL
        )
    golden = _GOLDEN[py.name]
    assert not golden, "\n".join(golden)
    flow = tmp_path / "perturbed.flow"
    flow.write_text(text.replace(old, new), encoding="utf-8")
    mismatches = compare(classic_python, py, flow, tmp_path, capsys, _NO_TOOL)
    assert mismatches, f"changing {old!r} to {new!r} went unnoticed"


# classic "manual" selection: a person types the next speaker. Its findings are never exact
# (M002: the person's turns are turns of the flow, and an answer classic does not take ends
# the flow's run where classic asks again and then moves to the next agent), so it runs on
# the scripts where the person types, every time, the number classic lists the agent under
MANUAL = [p for p in CASES if typed_selectors(p)]


@pytest.mark.parametrize("py", MANUAL, ids=[p.stem for p in MANUAL])
def test_manual_selection_and_translation_agree(
    py: Path,
    classic_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Classic's ``"manual"`` selection (ag2 reading the person's answers at its console)
    and the translation's person selector, typing the same answers, agree."""
    started = time.monotonic()
    found = compare(classic_python, py, py.with_suffix(".flow"), tmp_path, capsys)
    TIMINGS[f"classic-manual {py.stem}"] = time.monotonic() - started
    assert not found, f"{py.name}: the translation does not run as the original\n" + "\n".join(
        found
    )


def test_the_harness_covers_manual_selection() -> None:
    assert [p.name for p in MANUAL] == [
        "manual_number_names.py",
        "manual_selection.py",
        "manual_transitions.py",
    ]


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        # the person's "2" picks another agent
        (
            "manual_selection",
            '(?:0_?)*2\\\\s*\\\\Z") then student',
            '(?:0_?)*2\\\\s*\\\\Z") then examiner',
        ),
        # the agent named "3" picked by its name, not by its number (ag2 reads only numbers)
        (
            "manual_number_names",
            '(?:0_?)*2\\\\s*\\\\Z") then `3`\nwhen from chat_manager and text_matches('
            'pattern = "\\\\A\\\\s*\\\\+?(?:0_?)*3\\\\s*\\\\Z") then writer',
            '(?:0_?)*3\\\\s*\\\\Z") then `3`\nwhen from chat_manager and text_matches('
            'pattern = "\\\\A\\\\s*\\\\+?(?:0_?)*2\\\\s*\\\\Z") then writer',
        ),
        # a selector's numbers in another list's order
        (
            "manual_transitions",
            '(?:0_?)*1\\\\s*\\\\Z") then planner\nwhen from chat_manager_2 and text_matches('
            'pattern = "\\\\A\\\\s*\\\\+?(?:0_?)*2\\\\s*\\\\Z") then tester',
            '(?:0_?)*2\\\\s*\\\\Z") then planner\nwhen from chat_manager_2 and text_matches('
            'pattern = "\\\\A\\\\s*\\\\+?(?:0_?)*1\\\\s*\\\\Z") then tester',
        ),
        # one person's turn fewer before classic's max_round
        ("manual_transitions", "max_turns 13", "max_turns 12"),
    ],
)
def test_the_harness_reports_a_perturbed_manual_selection(
    name: str,
    old: str,
    new: str,
    classic_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One rule of a ``"manual"`` translation that agrees, changed: the harness must see it."""
    py = CORPUS / f"{name}.py"
    text = py.with_suffix(".flow").read_text(encoding="utf-8")
    assert old in text
    flow = tmp_path / "perturbed.flow"
    flow.write_text(text.replace(old, new), encoding="utf-8")
    mismatches = compare(classic_python, py, flow, tmp_path, capsys)
    assert mismatches, f"changing {old!r} to {new!r} went unnoticed"


def test_a_made_up_sender_is_no_agent_named_like_it(
    classic_python: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The group API with agents named ``user`` and ``task_user`` and no user agent: ag2's
    made-up sender of the task (its temporary ``_User``) is a third speaker, and so is the
    flow's. The translation's M002 (on a later user turn, which this ring never reaches)
    would skip it above, so every script is compared here, ``_User`` standing for the
    flow's start speaker."""
    py = CORPUS / "group_taken_user_names.py"
    user = start_speaker(py)

    def classic(replies: Script) -> Any:
        got = run_classic(classic_python, py, replies, tmp_path)
        return {**got, "speakers": [user if s == "_User" else s for s in got["speakers"]]}

    found = compare_sides(
        py,
        ("ag2 0.9.10", classic),
        lambda replies: run_translation(py, py.with_suffix(".flow"), replies, tmp_path, capsys),
    )
    assert user not in ("user", "task_user")
    assert not found, "\n".join(found)
