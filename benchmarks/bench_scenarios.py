"""How `flowc scenarios` and `flowc test --coverage` scale: a 200-speaker, 1,000-rule flow
and the examples.

Run: ``.venv/bin/python benchmarks/bench_scenarios.py``. For each flow (the 200-speaker
one, a flow with 16 context keys, the examples) it reports the
time to generate the scenarios (exploration, targets, shortest runs), their count
against the live targets and the lower bound, and the time to run them and measure
coverage on the hub (which must reach 100%).
"""

from __future__ import annotations

import time
from pathlib import Path

from flowc.compiler.analysis.generate import generate_scenarios
from flowc.compiler.pipeline import compile_source
from flowc.runtime.coverage import measure
from flowc.runtime.scenarios import run_scenario
from flowc.runtime.target import RunTarget
from flowc.source import SourceFile

ROOT = Path(__file__).resolve().parents[1]


def big(speakers: int = 200, rules: int = 1000) -> str:
    """A user and 199 workers; each worker has four routing tools (t1..t4, each to another
    worker) and one that finishes the run: 796 tool rules plus 200 `from` rules and the
    user's, about 1,000 rules, every one live."""
    names = [f"w{i}" for i in range(speakers - 1)]
    per = (rules - speakers) // len(names)
    lines = ["speaker user: human"]
    for i, w in enumerate(names):
        tools = " ".join(f"tool t{k}" for k in range(1, per + 1))
        lines.append(f'speaker {w} {{ {tools} tool done finishes "done_{i % 7}" }}')
    lines.append("max_turns 250")
    lines.append("when from user then w0")
    for i, w in enumerate(names):
        for k in range(1, per + 1):
            lines.append(f"when from {w} and tool t{k} then {names[(i + 7 * k) % len(names)]}")
        lines.append(f"when from {w} then {names[(i + 1) % len(names)]}")
    return "\n".join(lines) + "\n"


def bench(label: str, text: str) -> None:
    compiled, _ = compile_source(SourceFile(label, text))
    assert compiled is not None
    start = time.perf_counter()
    gen = generate_scenarios(compiled)
    generated = time.perf_counter() - start
    flow, _ = compile_source(SourceFile(label, text + "\n" + gen.text()))
    assert flow is not None
    target = RunTarget.from_compiled(flow)
    start = time.perf_counter()
    results = [run_scenario(target, sc) for sc in flow.scenarios[len(compiled.scenarios) :]]
    cov = measure(gen.coverable, results)
    ran = time.perf_counter() - start
    assert all(r.passed for r in results) and cov.covered == cov.total
    print(
        f"{label:28} rules {len(compiled.graph.transitions):5}  targets {cov.total:5}  "
        f"scenarios {len(gen.scenarios):4} (lower bound {gen.lower_bound:3})  "
        f"generate {generated:7.2f}s  run+coverage {ran:7.2f}s  coverage {cov.percent}%"
    )


def many_keys(keys: int = 16) -> str:
    """The 40 KB flow of ``benchmarks/bench_analysis.py``'s family with 16 context keys of
    one value each (30 speakers, 30 context rules a worker): `flowc scenarios` on it
    generates about 120 scenarios, each of which it runs to check it (issue 32: the graph
    was read and compiled once a scenario, 80 s of the command's time)."""
    from bench_analysis import Shape, generate

    return generate(Shape(speakers=30, keys=keys, values=1, rules=30))


def main() -> None:
    bench("200 speakers, 1,000 rules", big())
    bench("30 speakers, 16 keys", many_keys())
    for path in sorted((ROOT / "examples").glob("*.flow")):
        bench(path.name, path.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
