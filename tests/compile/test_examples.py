"""The shipped examples: the eight cookbook patterns of AG2's workflow page, and
``approval.flow``, which shows properties (one holds, one a run breaks: its E116 is
meant, ``tests/check/test_check_examples.py``).

Their scenarios are replayed on AG2's own adapter in ``test_ag2_compat.py``; here:
the set is complete, each file says what it is for, seeds with a human, and the
patterns pass ``flowc check`` without a warning.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler.analysis import analyze
from flowc.compiler.lower import CompiledFlow
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import Severity
from flowc.source import SourceFile

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PATTERNS = (
    "pipeline",
    "hierarchical",
    "star",
    "escalation",
    "redundant",
    "feedback_loop",
    "context_routing",
    "triage_with_tasks",
)
#: the examples beyond the cookbook: properties
MORE = ("approval",)


def compiled(name: str) -> CompiledFlow:
    path = EXAMPLES / f"{name}.flow"
    result, diags = compile_source(SourceFile(path.name, path.read_text(encoding="utf-8")))
    assert result is not None and diags == (), diags
    return result


def test_the_eight_patterns_and_nothing_else() -> None:
    assert sorted(p.stem for p in EXAMPLES.glob("*.flow")) == sorted(PATTERNS + MORE)


@pytest.mark.parametrize("name", PATTERNS + MORE)
def test_example_shape(name: str) -> None:
    text = (EXAMPLES / f"{name}.flow").read_text(encoding="utf-8")
    assert text.startswith("# "), "each example starts with a comment saying what it is for"
    flow = compiled(name)
    assert flow.name == name
    assert flow.start in flow.humans, "the start speaker is a human seeder"
    routed = {t.when.tool_name for t in flow.graph.transitions if hasattr(t.when, "tool_name")}
    assert routed <= set(flow.tool_names), "every routed tool is declared with its effects"


@pytest.mark.parametrize("name", PATTERNS)
def test_example_passes_check_without_warnings(name: str) -> None:
    findings = analyze(compiled(name), filename=f"{name}.flow")
    assert [f"{d.code.id} {d.message}" for d in findings if d.severity is not Severity.INFO] == []
