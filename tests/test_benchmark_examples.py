"""The benchmarks' docstring examples run (the generators the benchmarks' numbers rest on:
a generator that drew different flows or properties in another process would make two
runs of a benchmark measure different things)."""

from __future__ import annotations

import doctest
import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("bench_*.py")), ids=lambda p: p.stem)
def test_benchmark_docstring_examples_run(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = importlib.import_module(path.stem)
    try:
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    finally:
        sys.modules.pop(path.stem, None)
    assert result.failed == 0


def test_the_generated_flows_and_properties_do_not_change_with_the_hash_seed() -> None:
    """The generators draw from fixed seeds: the same text in every process, whatever
    order a set of names has there (``PYTHONHASHSEED``)."""
    import os
    import subprocess

    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import bench_analysis, bench_compile, bench_lsp\n"
        "shape = bench_analysis.Shape(*bench_analysis.FAMILY[0])\n"
        "print(bench_lsp.with_properties(bench_compile.generate(200), 20))\n"
        "print(bench_analysis.generate(shape))\n"
        "print([p.text for p in bench_analysis.properties(shape, 20)])\n"
    )
    outs = set()
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        outs.add(
            subprocess.run(
                [sys.executable, "-c", code, str(BENCHMARKS)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
    assert len(outs) == 1
