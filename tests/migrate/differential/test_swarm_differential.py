"""Differential check of legacy AG2 swarm translations (``initiate_swarm_chat``).

Every corpus file that runs a legacy swarm and has a golden ``.flow`` runs, script by
script (``harness.scripts``), under the real ``ag2==0.9.10`` (which still ships
``initiate_swarm_chat`` in ``autogen.agentchat.contrib.swarm_agent``; a file in pyautogen
0.8's spelling, ``from autogen import AFTER_WORK, ...``, gets those names from there) by
``classic_driver.py``, with every agent's model reply taken from the script, and under
``flowc run --script --json``. ag2 runs a swarm on a classic GroupChat: its temporary
``_User`` (when the swarm has no user agent) is the flow's user speaker, and a chat no agent
continues (an after work that terminates) is the flow's ``after_work`` end.

A translation whose findings report nothing lost or different (no M001 / M002) must match.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .harness import (
    CORPUS,
    HERE,
    INEXACT,
    Script,
    assert_agree,
    findings,
    kickoff,
    run_driver,
    run_flow,
    start_speaker,
)
from .harness import compare as compare_sides

DRIVER = HERE / "classic_driver.py"
CASES = sorted(
    p
    for p in CORPUS.glob("*.py")
    if "initiate_swarm_chat(" in p.read_text(encoding="utf-8") and p.with_suffix(".flow").exists()
)
# the flow's ends in the driver's words (the driver tells classic's ends as for a GroupChat)
_ENDS = {"after_work": "no_next_speaker"}


def run_swarm(python: Path, py: Path, replies: Script, tmp: Path) -> Any:
    got = run_driver(python, DRIVER, {"file": str(py), "replies": replies, "swarm": True}, tmp)
    user = start_speaker(py)  # (ag2's temporary `_User` sends the task when the swarm has no user)
    return {"speakers": [user if s == "_User" else s for s in got["speakers"]], "end": got["end"]}


def run_translation(
    py: Path, flow: Path, replies: Script, tmp: Path, capsys: pytest.CaptureFixture[str]
) -> Any:
    start = kickoff(py)
    script = {"script": replies, **({"kickoff": start} if start is not None else {})}
    run = run_flow(flow, script, tmp, capsys)
    end = run.get("close_reason") or f"stalled: {run.get('stalled_on')}"
    return {"speakers": [t["speaker"] for t in run["turns"]], "end": _ENDS.get(end, end)}


def compare(
    python: Path, py: Path, flow: Path, tmp: Path, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """Every script of ``py`` run under ag2's swarm and under ``flow``: the runs that differ."""
    return compare_sides(
        py,
        ("ag2 0.9.10", lambda replies: run_swarm(python, py, replies, tmp)),
        lambda replies: run_translation(py, flow, replies, tmp, capsys),
    )


@pytest.mark.parametrize("py", CASES, ids=[p.stem for p in CASES])
def test_swarm_and_translation_agree(
    py: Path,
    classic_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert_agree(
        "swarm",
        py,
        lambda: compare(classic_python, py, py.with_suffix(".flow"), tmp_path, capsys),
    )


def test_the_harness_covers_the_exact_swarm_cases() -> None:
    exact = [p.name for p in CASES if not findings(p) & INEXACT]
    assert exact == ["swarm_after_work.py", "swarm_taken_user_names.py"], exact


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # an after work that hands over elsewhere
        (
            "when from reviewer then drafter priority 30",
            "when from reviewer then intake priority 30",
        ),
        # one round more
        ("max_turns 6", "max_turns 7"),
        # classic's default termination text no longer ends the chat
        ('"\\\\ATERMINATE\\\\Z"', '"\\\\ADONE\\\\Z"'),
    ],
)
def test_the_harness_reports_a_perturbed_swarm_translation(
    old: str,
    new: str,
    classic_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One rule of a swarm translation that matches, changed: the harness must see it."""
    py = CORPUS / "swarm_after_work.py"
    text = py.with_suffix(".flow").read_text(encoding="utf-8")
    assert old in text
    flow = tmp_path / "perturbed.flow"
    flow.write_text(text.replace(old, new), encoding="utf-8")
    mismatches = compare(classic_python, py, flow, tmp_path, capsys)
    assert mismatches, f"changing {old!r} to {new!r} went unnoticed"
