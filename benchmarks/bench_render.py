"""Render a 500-speaker flow to SVG (target: under 10 s on the 2-core reference machine).

Run: ``.venv/bin/python benchmarks/bench_render.py [SPEAKERS]``. Prints the time of
each stage (compile, diagram, DOT text, ``dot`` layout to SVG) and the total.
"""

from __future__ import annotations

import itertools
import sys
import time

from flowc import compile_flow
from flowc.compiler.render.diagram import build_diagram
from flowc.compiler.render.dot import render_dot
from flowc.compiler.render.image import render_svg
from flowc.compiler.render.mermaid import render_mermaid

TARGET_SECONDS = 10.0


def big_flow(count: int) -> str:
    """A pipeline of ``count`` speakers: each hands to the next, every tenth may
    escalate (a tool hand-off) to a supervisor, and a context flag ends the run."""
    lines = [
        'flow big "benchmark"',
        "speaker user: human",
        "speaker supervisor {",
        "  tool approve sets done = true",
        "}",
    ]
    names = [f"s{i}" for i in range(count - 2)]
    for i, name in enumerate(names):
        if i % 10 == 0:
            lines.append(f"speaker {name} {{ tool escalate_{i} hands off to supervisor }}")
        else:
            lines.append(f"speaker {name}")
    lines += [
        "start user",
        f"max_turns {count * 2}",
        'when context.done == true then terminate "approved" priority -1',
        f"when from user then {names[0]}",
    ]
    lines += [f"when from {a} then {b}" for a, b in itertools.pairwise(names)]
    lines += [f"when from {names[-1]} then supervisor", "when from supervisor then initiator"]
    return "\n".join(lines) + "\n"


def round_robin_flow(count: int) -> str:
    """``count`` speakers taking turns (one long edge back to the first)."""
    names = ", ".join(f"p{i}" for i in range(count))
    return f"speakers {names}\nround_robin {names}\nmax_turns {count * 2}\n"


def measure(label: str, text: str) -> float:
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    compiled = compile_flow(text, filename="big.flow")
    times["compile"] = time.perf_counter() - t0
    t = time.perf_counter()
    diagram = build_diagram(compiled)
    times["diagram"] = time.perf_counter() - t
    t = time.perf_counter()
    dot = render_dot(diagram)
    times["dot text"] = time.perf_counter() - t
    t = time.perf_counter()
    render_mermaid(diagram)
    times["mermaid text"] = time.perf_counter() - t
    t = time.perf_counter()
    svg = render_svg(dot)
    times["dot -Tsvg"] = time.perf_counter() - t
    total = time.perf_counter() - t0
    engine = "sfdp" if "layout=sfdp" in dot else "dot"
    print(
        f"{label}: {len(compiled.speakers)} speakers, {len(diagram.nodes)} nodes, "
        f"{len(diagram.edges)} edges, layout {engine}, {len(svg) // 1024} KiB of SVG"
    )
    for stage, seconds in times.items():
        print(f"  {stage:<13} {seconds:7.3f} s")
    print(f"  {'total':<13} {total:7.3f} s  (target < {TARGET_SECONDS:.0f} s)")
    return total


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    totals = [
        measure("pipeline with a broadcast rule and tool hand-offs", big_flow(count)),
        measure("round robin", round_robin_flow(count)),
    ]
    return 0 if max(totals) < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
