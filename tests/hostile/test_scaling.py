"""The checker's work grows linearly with the rules: counted, not timed.

Timing belongs in ``benchmarks/bench_filesize.py``; here the unit of work is a condition
evaluated on a turn or handed to the satisfiability check, counted for a flow of n and
of 2n rules. Doubling the rules may at most (about) double the count; the search for
priority traps used to hand every earlier rule to the check, for every dead rule on
every turn, which quadruples it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest

from flowc.compiler.analysis import CheckOptions, check_source
from flowc.source import SourceFile

# the package exports a function named `explore`: take the modules themselves
explore_module = importlib.import_module("flowc.compiler.analysis.explore")
facts_module = importlib.import_module("flowc.compiler.analysis.facts")


def priority_traps(n: int) -> str:
    """n dead rules with a written priority (each searched for a priority trap), and n
    context rules whose condition never holds (each searched for a first match)."""
    lines = [
        "speaker user: human",
        "speaker a",
        "speaker b {",
        "  tool go sets k = 1",
        "}",
        "start user",
        "max_turns 9",
        "context k = 0",
        "when from user then a",
        "when from a then b",
        "when from b then a",
    ]
    lines += [f"when from a then user priority {1 + i % 3}" for i in range(n)]
    lines += [f"when context.k == {i + 5} then b" for i in range(n)]
    return "\n".join(lines) + "\n"


def same_condition(n: int) -> str:
    """n rules with one condition: tried once per turn, not n times."""
    lines = [
        "speaker user: human",
        "speaker a",
        "speaker b",
        "start user",
        "when from user then a",
        "when from a then b",
        "when from b then a",
    ]
    lines += ["when from a then user priority 2"] * n
    return "\n".join(lines) + "\n"


def _work(text: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """Conditions handed to the satisfiability check, and conditions evaluated."""
    count = 0
    real_sat: Callable[..., Any] = explore_module.satisfiable
    real_eval: Callable[..., Any] = explore_module.evaluate

    def sat(wanted: list[Any], *args: Any) -> Any:
        nonlocal count
        count += len(wanted)
        return real_sat(wanted, *args)

    def evaluate(*args: Any) -> Any:
        nonlocal count
        count += 1
        return real_eval(*args)

    with monkeypatch.context() as m:
        m.setattr(explore_module, "evaluate", evaluate)
        m.setattr(facts_module, "evaluate", evaluate, raising=False)
        m.setattr(facts_module, "satisfiable", sat)
        diags = check_source(SourceFile("scale.flow", text), CheckOptions())
    assert any(d.code.id == "W203" for d in diags)
    return count


@pytest.mark.parametrize("make", [priority_traps, same_condition])
def test_checker_work_grows_linearly(
    make: Callable[[int], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    small = _work(make(150), monkeypatch)
    large = _work(make(300), monkeypatch)
    assert large <= 2.3 * small, (small, large)
