"""A flow whose state space is larger than memory allows is refused early with I301 (the
exploration stops at its memory budget), not killed by the operating system or ended
by a MemoryError: under an address-space limit, with a bound far above what fits."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.hostile.limits import run_limited

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_analysis import Shape, generate


def test_a_bound_past_memory_stops_at_the_memory_budget(tmp_path: Path) -> None:
    # 240,000 reachable states (656,100 concrete): its exploration alone would need
    # about 100 MiB more than a fifth of what the limit leaves
    path = tmp_path / "big.flow"
    path.write_text(generate(Shape(100, 8, 2)), encoding="utf-8")
    result = run_limited(
        ["check", str(path), "--format", "concise", "--max-states", "3000000"],
        memory_mib=300,
        cpu_seconds=120,
        wall_seconds=180,
    )
    assert result.returncode == 0, result.stderr
    assert not result.traceback and "MemoryError" not in result.stderr
    first = result.stdout.splitlines()[0]
    assert " I301 the exploration stopped at " in first and "at its memory budget" in first
    # what the symbolic count decides for every state is still reported
    assert " W203 " in result.stdout
    assert result.peak_mib < 300
