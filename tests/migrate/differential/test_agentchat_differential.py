"""Differential check of AgentChat Python teams: run both sides, compare.

For every AgentChat Python team of the corpus with a translation (``corpus/agentchat_*.py``
and its golden ``.flow``), each script derived from the case (as for classic, see
``test_classic_differential.py``) is run under the real ``autogen-agentchat==0.7.5`` (its
agents' model clients replaced by ``ReplayChatCompletionClient``s replying the script's
texts and tool calls, which the agents then run, handoffs included; ``agentchat_driver.py``)
and under ``flowc run --script --json``; both get the same task. Who speaks and how the run
ends must be the same for a translation whose findings report
nothing lost or different (no M001 / M002).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from .harness import (
    CORPUS,
    HERE,
    INEXACT,
    Script,
    assert_agree,
    choices,
    findings,
    run_driver,
    run_flow,
    spoken,
)
from .harness import compare as compare_sides

DRIVER = HERE / "agentchat_driver.py"
TASK = "the task"
CASES = sorted(p for p in CORPUS.glob("agentchat_*.py") if p.with_suffix(".flow").exists())
# AgentChat component JSON (``team.dump_component()``), the records and findings left out
JSON_CASES = sorted(
    p
    for p in CORPUS.glob("agentchat_*.json")
    if not p.name.endswith((".agentchat.json", ".expected.json"))
    and p.with_suffix(".flow").exists()
)

# AgentChat's stop_reason, in the flow's words (as tests/migrate/test_migrate.py reads them)
_ENDS = [
    (re.compile(r"^Maximum number of (messages|turns)"), "max_turns"),
    (re.compile(r"^Text '.*' mentioned"), "text_mention"),
    (re.compile(r"^Handoff to (\w+)"), "handoff_to_{0}"),
    (re.compile(r"^Digraph execution is complete"), "graph_complete"),
    (re.compile(r"^Text message received from"), "text_message"),  # TextMessageTermination
]


def _end(stop_reason: str | None) -> str | None:
    for pattern, reason in _ENDS:
        m = pattern.match(stop_reason or "")
        if m:
            return reason.format(*m.groups()[-1:]) if "{0}" in reason else reason
    return stop_reason


def run_agentchat(python: Path, py: Path, replies: Script, tmp: Path) -> Any:
    # a Python file runs as __main__; a component JSON file is loaded by AgentChat's loader
    kind = "component" if py.suffix == ".json" else "file"
    plan: dict[str, Any] = {kind: str(py), "task": TASK, "replies": replies}
    chosen = choices(py, replies)
    if chosen:  # the flow's selector speaker's decisions, for the team's selector model
        (plan["choices"],) = chosen.values()  # (an AgentChat team has one selector model)
    got = run_driver(python, DRIVER, plan, tmp)
    return {"speakers": got["speakers"], "end": _end(got["stop_reason"])}


def run_translation(
    py: Path, flow: Path, replies: Script, tmp: Path, capsys: pytest.CaptureFixture[str]
) -> Any:
    run = run_flow(flow, {"kickoff": TASK, "script": replies}, tmp, capsys)
    return {
        "speakers": spoken(py, run),
        # a scheduled speaker with no scripted turn left: the replay client's end too
        "end": run.get("close_reason") or "script ran out",
    }


def compare(
    python: Path, py: Path, flow: Path, tmp: Path, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """Every script of ``py`` run under autogen-agentchat and under ``flow``: the runs
    that differ."""
    return compare_sides(
        py,
        ("agentchat 0.7.5", lambda replies: run_agentchat(python, py, replies, tmp)),
        lambda replies: run_translation(py, flow, replies, tmp, capsys),
    )


@pytest.mark.parametrize("py", CASES, ids=[p.stem for p in CASES])
def test_agentchat_and_translation_agree(
    py: Path,
    agentchat_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert_agree(
        "agentchat",
        py,
        lambda: compare(agentchat_python, py, py.with_suffix(".flow"), tmp_path, capsys),
    )


@pytest.mark.parametrize("component", JSON_CASES, ids=[p.name for p in JSON_CASES])
def test_agentchat_component_and_translation_agree(
    component: Path,
    agentchat_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A component JSON file, as AgentChat loads and runs it, and its golden flow."""
    assert_agree(
        "agentchat-json",
        component,
        lambda: compare(
            agentchat_python, component, component.with_suffix(".flow"), tmp_path, capsys
        ),
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('text_contains(text = "loop") then coder', 'text_contains(text = "loop") then reporter'),
        ('otherwise terminate "graph_complete"', 'otherwise terminate "done"'),
    ],
)
def test_the_harness_reports_a_perturbed_translation(
    old: str,
    new: str,
    agentchat_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One rule of a translation that matches, changed: the harness must see it."""
    py = CORPUS / "agentchat_graph_loop.py"
    text = py.with_suffix(".flow").read_text(encoding="utf-8")
    assert old in text
    flow = tmp_path / "perturbed.flow"
    flow.write_text(text.replace(old, new), encoding="utf-8")
    mismatches = compare(agentchat_python, py, flow, tmp_path, capsys)
    assert mismatches, f"changing {old!r} to {new!r} went unnoticed"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a handoff tool routed elsewhere
        (
            "when tool back_to_planning             then travel_agent",
            "when tool back_to_planning             then flights_refunder",
        ),
        # a handoff tool that no longer ends the run
        (
            'when tool transfer_to_user then terminate "handoff_to_user"',
            'when tool transfer_to_user then terminate "handed_off"',
        ),
    ],
)
def test_the_harness_reports_a_perturbed_tool_route(
    old: str,
    new: str,
    agentchat_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The route of a tool call changed in a Swarm translation that matches: the scripts
    that call the tools must see it."""
    py = CORPUS / "agentchat_travel.py"
    text = py.with_suffix(".flow").read_text(encoding="utf-8")
    assert old in text
    flow = tmp_path / "perturbed.flow"
    flow.write_text(text.replace(old, new), encoding="utf-8")
    mismatches = compare(agentchat_python, py, flow, tmp_path, capsys)
    assert mismatches, f"changing {old!r} to {new!r} went unnoticed"


def test_the_harness_covers_the_exact_agentchat_cases() -> None:
    exact = [p for p in CASES if not findings(p) & INEXACT]
    assert len(exact) >= 4, [p.name for p in exact]


def test_the_harness_covers_the_exact_component_json_cases() -> None:
    exact = [p for p in JSON_CASES if not findings(p) & INEXACT]
    assert len(exact) >= 2, [p.name for p in exact]


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        # a handoff routed elsewhere
        (
            "agentchat_json_swarm",
            "when tool transfer_to_payer  then payer",
            "when tool transfer_to_payer  then booker",
        ),
        # a handoff that no longer ends the run
        ("agentchat_json_swarm", 'terminate "handoff_to_user"', 'terminate "handed_off"'),
        # the ring in another order
        (
            "agentchat_json_round_robin",
            "when from author      then editor",
            "when from author      then proofreader",
        ),
        # one turn more than the team's max_turns
        ("agentchat_json_round_robin", "max_turns 6", "max_turns 7"),
    ],
)
def test_the_harness_reports_a_perturbed_component_translation(
    name: str,
    old: str,
    new: str,
    agentchat_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One rule of a component JSON translation that matches, changed: the harness, which
    loads the JSON file with AgentChat's loader, must see it."""
    component = CORPUS / f"{name}.json"
    text = component.with_suffix(".flow").read_text(encoding="utf-8")
    assert old in text
    flow = tmp_path / "perturbed.flow"
    flow.write_text(text.replace(old, new), encoding="utf-8")
    mismatches = compare(agentchat_python, component, flow, tmp_path, capsys)
    assert mismatches, f"changing {old!r} to {new!r} went unnoticed"
