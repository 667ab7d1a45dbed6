"""The case runner: ``tests/cases/check/*.flow`` with inline expectations.

A line that must get a finding ends with a comment naming its code(s): ``# W204``.
Every finding must be expected and every expectation met. Each finding's
counterexample run is replayed on the reference stepper.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flowc.compiler.analysis import CheckOptions, check_source, findings_of
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.pipeline import compile_source
from flowc.source import SourceFile
from tests.check.check_replay import replay_finding

CASES = Path(__file__).parent.parent / "cases" / "check"
EXPECT = re.compile(r"#\s*((?:[EWIX]\d{3})(?:[\s,]+[EWIX]\d{3})*)\s*$")


def expectations(text: str) -> set[tuple[int, str]]:
    out: set[tuple[int, str]] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            out |= {(number, code) for code in re.split(r"[\s,]+", match.group(1))}
    return out


def test_expectation_parser() -> None:
    text = "a\nwhen x then y   # W204\nb  # flowc: ignore  # X001 W203\n# a comment\n"
    assert expectations(text) == {(2, "W204"), (3, "X001"), (3, "W203")}


@pytest.mark.parametrize("path", sorted(CASES.glob("*.flow")), ids=lambda p: p.stem)
def test_case(path: Path) -> None:
    source = SourceFile(path.name, path.read_text(encoding="utf-8"))
    found = check_source(source)
    got = {(d.span.line if d.span else 0, d.code.id) for d in found}
    assert got == expectations(source.text), "\n".join(
        f"{d.span}: {d.code.id} {d.message}" for d in found
    )


@pytest.mark.parametrize("path", sorted(CASES.glob("*.flow")), ids=lambda p: p.stem)
def test_case_counterexamples_replay(path: Path) -> None:
    source = SourceFile(path.name, path.read_text(encoding="utf-8"))
    compiled, diags = compile_source(source)
    assert compiled is not None, diags
    system = system_of_flow(compiled)
    for finding in findings_of(system, CheckOptions(), path.name):
        replay_finding(system, finding)
