"""``flowc check`` does work linear in the size of the flow: counted, not timed.

The unit of work is a function call (Python functions and built-ins alike, counted with
``sys.setprofile``), during ``check_source`` of a flow of n and of 2n rules or speakers.
Doubling the input may at most (about) double the count: a step that compares every
finding with every ignore comment, every rule with every other, or looks a speaker up
by walking every declaration, quadruples it. Each shape below once did.
(Timing belongs in ``benchmarks/bench_check.py``.)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from flowc.compiler.analysis import apply_ignores, check_source
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import W203, Diagnostic
from flowc.source import SourceFile, Span

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_compile import generate


def mix(n: int) -> str:
    """The benchmark's rule mix (most rules dead, each finding with a run)."""
    return str(generate(n))


def initiators(n: int) -> str:
    """n rules back to a human initiator (I302 each), on tools nobody declares (W208)."""
    lines = ["speaker user: human", "speaker a", "speaker b", "start user", "when from user then a"]
    lines += [f"when tool t{i} then initiator" for i in range(n)]
    lines.append("when from a then b")
    return "\n".join(lines) + "\n"


def unreachable(n: int) -> str:
    """n speakers nothing routes to (W201 each, at its declaration)."""
    lines = [
        "speaker user: human",
        "speaker a",
        *(f"speaker s{i}" for i in range(n)),
        "start user",
        "when from user then a",
        'when from a then terminate "x"',
    ]
    return "\n".join(lines) + "\n"


def ignored(n: int) -> str:
    """n dead rules, each silenced by an ignore comment on its line, and n unused ones."""
    lines = [
        "speaker user: human",
        "speaker a",
        "speaker b",
        "start user",
        "when from user then a",
        "when from a then b",
        "when from b then a",
    ]
    lines += ["when from a then user  # flowc: ignore[W203]" for _ in range(n)]
    lines += ["# flowc: ignore[W204]" for _ in range(n)]
    return "\n".join(lines) + "\n"


def chain(n: int) -> str:
    """n speakers in a row: runs (and their texts) as long as the flow."""
    lines = [
        "speaker user: human",
        *(f"speaker s{i}" for i in range(n)),
        "start user",
        "when from user then s0",
        *(f"when from s{i} then s{i + 1}" for i in range(n - 1)),
        f"when from s{n - 1} then user",
        *(f"when from s{i} then s0 priority 1" for i in range(n)),
    ]
    return "\n".join(lines) + "\n"


def late(n: int) -> str:
    """n speakers in a ring, each with a tool, and a cap long before the ring closes: a
    W215 for each speaker after the cap, each with a run as long as its distance."""
    lines = ["speaker user: human"]
    for i in range(n):
        lines += [f"speaker s{i} {{", f"  tool t{i} sets k = {i % 3}", "}"]
    lines += ["start user", "max_turns 50", "when from user then s0"]
    lines += [f"when from s{i} then s{(i + 1) % n}" for i in range(n)]
    lines.append("when context.k == 2 then user")
    return "\n".join(lines) + "\n"


def graph(n: int) -> str:
    """The rule mix as a JSON graph (checked under the assumptions for graphs)."""
    compiled, _ = compile_source(SourceFile("g.flow", unreachable(n)))
    assert compiled is not None
    return json.dumps(compiled.graph_dict)


SHAPES: dict[str, tuple[Callable[[int], str], int, str]] = {
    "mix": (mix, 150, "b.flow"),
    "initiators": (initiators, 150, "i.flow"),
    "unreachable": (unreachable, 150, "u.flow"),
    "ignored": (ignored, 150, "x.flow"),
    "chain": (chain, 60, "c.flow"),
    "late": (late, 150, "l.flow"),
    "graph": (graph, 150, "g.json"),
}


def _calls(text: str, name: str) -> int:
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    source = SourceFile(name, text)
    sys.setprofile(profile)
    try:
        found = check_source(source)
    finally:
        sys.setprofile(None)
    assert found
    return count


@pytest.mark.parametrize("shape", list(SHAPES))
def test_check_work_grows_linearly(shape: str) -> None:
    make, n, name = SHAPES[shape]
    small = _calls(make(n), name)
    large = _calls(make(2 * n), name)
    assert large <= 2.3 * small, (small, large)


class _CountingSpan:
    """A comment's place that counts how often its line is read."""

    reads = 0

    def __init__(self, line: int):
        self._line = line
        self.column, self.end_line, self.end_column = 1, line, 2

    @property
    def line(self) -> int:
        _CountingSpan.reads += 1
        return self._line


class _Comment:
    def __init__(self, text: str, line: int):
        self.text, self.span = text, _CountingSpan(line)


def _ignore_reads(n: int) -> int:
    findings = [Diagnostic(W203, "dead", "f.flow", Span(i, 1, i, 5)) for i in range(1, n + 1)]
    comments = [_Comment(" flowc: ignore[W203]", i) for i in range(1, 2 * n + 1)]
    _CountingSpan.reads = 0
    kept = apply_ignores(findings, comments, "f.flow")  # type: ignore[arg-type]
    assert [d.code.id for d in kept] == ["X001"] * n
    return _CountingSpan.reads


def test_ignore_comments_are_matched_by_line() -> None:
    """Each finding looks up the ignore comments on its own line, not every comment."""
    small, large = _ignore_reads(200), _ignore_reads(400)
    assert large <= 2.3 * small, (small, large)
