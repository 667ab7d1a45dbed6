"""Hostile inputs whose reports used to grow with the square of the input.

Each flow is generated at two sizes, n and 2n, and run under resource limits. The
report must stay within a fixed multiple of the input's size, and doubling the input
must at most (about) double the report: quadratic output would quadruple it. The sizes
are small so the suite stays fast; the issue's sizes (5,000 rules on one line, one rule
of 10,000 `or` terms, 5,000 rules drawn as DOT) behave the same, only slower.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.limits import Limited, run_limited

#: a report may be this many times larger than its input (each finding quotes a
#: bounded window of its line, a bounded run and bounded rule texts)
MAX_RATIO = 64
#: doubling the input may grow the report by at most this factor
MAX_GROWTH = 2.3


def one_line(n: int) -> str:
    """n rules on one line: every later one is dead (W203), each quoting that line."""
    return "speaker a\nspeaker b\nstart a\n" + "when from a then b " * n + "\n"


def or_terms(n: int) -> str:
    """One rule of n `or` terms: each term after the first is a dead rule."""
    return "speaker a\nspeaker b\nstart a\nwhen " + " or ".join(["from a"] * n) + " then b\n"


def many_rules(n: int) -> str:
    """n rules, all but the first shadowed: the diagram draws each from a note."""
    return "speaker a\nspeaker b\nstart a\n" + "when from a then b\n" * n


def chain_dead(n: int) -> str:
    """A chain of n speakers, then n dead rules whose counterexample runs the whole chain."""
    lines = ["speaker user: human", *(f"speaker s{i}" for i in range(n)), "start user"]
    lines.append("when from user then s0")
    lines += [f"when from s{i} then s{i + 1}" for i in range(n - 1)]
    lines += [f"when from s{n - 1} then s{i}" for i in range(n)]
    return "\n".join(lines) + "\n"


def huge_rule_quoted(n: int) -> str:
    """A rule of n conditions that n later rules are shadowed by (and quote)."""
    big = " or ".join(f"(from a and context.k != {i})" for i in range(n))
    return (
        "speaker a\nspeaker b\nstart a\ncontext k = 0\n"
        f"when {big} then b\n" + "when from a then b\n" * n
    )


def sticky_notes(n: int) -> str:
    """A sticky context loop that takes n rules' turns: one note each, capped."""
    return (
        "speaker a\nspeaker b\nstart a\nmax_turns 5\ncontext k = true\n"
        "when context.k == true then b\n" + "when from a then b\n" * n
    )


CASES: list[tuple[str, Callable[[int], str], list[str], int]] = [
    ("one-line-text", one_line, ["check"], 600),
    ("one-line-json", one_line, ["check", "--format", "json"], 600),
    ("or-terms", or_terms, ["check"], 1000),
    ("dot-notes", many_rules, ["render", "-f", "dot"], 600),
    ("mermaid-notes", many_rules, ["render", "-f", "mermaid"], 600),
    ("chain-runs", chain_dead, ["check"], 150),
    ("huge-rule-quoted", huge_rule_quoted, ["check"], 150),
    ("sticky-notes", sticky_notes, ["check"], 300),
]


def _run(tmp_path: Path, name: str, text: str, args: list[str]) -> Limited:
    path = tmp_path / f"{name}.flow"
    path.write_text(text, encoding="utf-8")
    return run_limited([*args, str(path)], memory_mib=512, cpu_seconds=60, wall_seconds=120)


@pytest.mark.parametrize(("name", "make", "args", "n"), CASES, ids=[c[0] for c in CASES])
def test_report_is_proportional_to_input(
    tmp_path: Path, name: str, make: Callable[[int], str], args: list[str], n: int
) -> None:
    sizes = []
    for k in (n, 2 * n):
        text = make(k)
        result = _run(tmp_path, f"{name}-{k}", text, args)
        assert not result.timed_out and not result.traceback, result.stderr[-2000:]
        assert result.returncode in (0, 1), result.stderr[-2000:]
        out = len(result.stdout.encode()) + len(result.stderr.encode())
        assert out <= MAX_RATIO * len(text.encode()), (k, out, len(text))
        sizes.append(out)
    assert sizes[1] <= MAX_GROWTH * sizes[0], sizes


def test_long_line_is_windowed(tmp_path: Path) -> None:
    """The text report quotes a window of a long line around the finding, not all of it."""
    text = one_line(400)
    result = _run(tmp_path, "window", text, ["check"])
    quoted = [ln for ln in result.stdout.splitlines() if ln.startswith("4 | ")]
    assert len(quoted) == 399  # one per dead rule
    assert max(len(ln) for ln in quoted) <= 120
    # the caret sits under the rule the finding is about
    lines = result.stdout.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith("4 | ") and ln.startswith("4 | ..."):
            caret = lines[i + 1]
            at = caret.index("^")
            width = len(caret) - at
            assert ln[at : at + width] == "when from a then b"
            break
    else:  # pragma: no cover - the report must cut some line
        pytest.fail("no windowed line in the report")


def test_sticky_loop_notes_are_capped(tmp_path: Path) -> None:
    result = _run(tmp_path, "sticky", sticky_notes(50), ["check"])
    notes = [ln for ln in result.stdout.splitlines() if "never fires" in ln]
    assert len(notes) == 5
    assert "and 45 more rules never fire for the same reason" in result.stdout
    one = _run(tmp_path, "sticky6", sticky_notes(6), ["check"])
    assert "and 1 more rule never fires for the same reason" in one.stdout
