"""How `flowc check` scales: chains, stars, fully connected flows, context keys, and the
generated rule mix an editor re-checks on every edit.

Run: ``.venv/bin/python benchmarks/bench_check.py`` (``--quick`` for the small sizes).
For each flow it reports the time of the analysis (exploration and every check,
after compiling), the abstract states explored, and the peak memory of a second,
traced run (tracemalloc). Targets on the 2-core dev machine: a 1,000-speaker chain
or star under 2 s; 50 speakers with 6 context keys under 5 s; 150 speakers with 150
contradictory rules (W203 with the reason) under 5 s.

The last table (alone with ``--generated [SIZES]``, sizes 1000,2000,5000,10000,20000 by
default) times what follows the parse for ``benchmarks/bench_compile.py``'s mix of rules (about 77% of its rules are
dead, so 1,000 rules give 754 findings, each with a counterexample run): lowering, and
``check_compiled`` (the analysis, every finding's run and text, ignore comments), as
``flowc check`` and the language server run them after parsing. Each is the best of
``--repeat`` runs in process CPU time, the cycle collector paused (as both commands
run it), warm (the modules imported and one check done). Targets: 1,000 rules in at
most 50 ms, 10,000 in at most 500 ms, and linear growth: the time per rule at every
size at most 1.5x the time per rule at the smallest. Exit status 1 when one is missed.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path

from flowc.compiler.analysis import CheckOptions, check_compiled, findings_of
from flowc.compiler.analysis.explore import explore
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.lower import lower
from flowc.compiler.pipeline import compile_source
from flowc.dsl.parser import parse_source
from flowc.source import SourceFile

sys.path.insert(0, str(Path(__file__).parent))
from bench_compile import generate

#: the generated mix's targets: (rules, most milliseconds after the parse)
GENERATED_TARGETS = {1_000: 50.0, 10_000: 500.0}
#: the most the time per rule may grow over the smallest size's
MAX_PER_RULE_GROWTH = 1.5


def chain(n: int) -> str:
    lines = ["speaker user: human", *(f"speaker s{i}" for i in range(n)), "start user"]
    lines.append("when from user then s0")
    lines += [f"when from s{i} then s{i + 1}" for i in range(n - 1)]
    lines.append(f'when from s{n - 1} then terminate "done"')
    return "\n".join(lines) + "\n"


def star(n: int) -> str:
    spokes = [f"s{i}" for i in range(n)]
    lines = [
        "speaker user: human",
        "speaker hub {",
        "  tool ask hands off to " + " | ".join(spokes),
        '  tool synthesise finishes "synthesised"',
        "}",
        *(f"speaker {s}" for s in spokes),
        "start user",
        f"max_turns {2 * n + 2}",
        "when from user then hub",
        "when from " + ", ".join(spokes) + " then hub",
        'when from hub then terminate "answered"',
    ]
    return "\n".join(lines) + "\n"


def full(n: int) -> str:
    names = [f"s{i}" for i in range(n)]
    lines = ["speaker user: human"]
    for name in names:
        others = " | ".join(x for x in names if x != name)
        lines += [f"speaker {name} {{", f"  tool pass hands off to {others}", "}"]
    lines += ["start user", f"max_turns {n + 2}", "when from user then s0"]
    lines.append("when from " + ", ".join(names) + ' then terminate "done"')
    return "\n".join(lines) + "\n"


def context(keys: int, speakers: int = 10) -> str:
    names = [f"s{i}" for i in range(speakers)]
    lines = ["speaker user: human"]
    for i, name in enumerate(names):
        k = f"k{i % keys}"
        lines += [
            f"speaker {name} {{",
            f'  tool update sets {k} = "a" | sets {k} = "b" | sets {k} = "c"',
            "}",
        ]
    lines += ["start user", "max_turns 200"]
    lines.append("context { " + ", ".join(f'k{j} = "a"' for j in range(keys)) + " }")
    lines.append(
        "when "
        + " and ".join(f'context.k{j} == "c"' for j in range(keys))
        + ' then terminate "done"'
    )
    lines.append("when from user then s0")
    n = len(names)
    for i, name in enumerate(names):
        # routing reads every value of the speaker's key, so the abstract context is 3^keys
        lines.append(f'when from {name} and context.k{i % keys} == "a" then {names[(i + 1) % n]}')
        lines.append(f'when from {name} and context.k{i % keys} == "b" then {names[(i + 2) % n]}')
        lines.append(f"when from {name} then {names[(i + 1) % n]}")
    return "\n".join(lines) + "\n"


def contradictions(n: int) -> str:
    """``n`` speakers in a ring, each with a dead rule whose condition contradicts itself
    (two senders, two values of one key), so every W203 looks for the reason."""
    lines = ["speaker user: human", *(f"speaker s{i} {{ tool t{i} }}" for i in range(n))]
    lines += ["start user", "max_turns 500", *(f"context k{j} = 0" for j in range(5))]
    for i in range(n):
        lines.append(
            f"when from s{i} and from s{(i + 1) % n} and context.k{i % 5} == 1 "
            f"and context.k{(i + 1) % 5} == 2 then user"
        )
    lines.append("when from user then s0")
    lines += [f"when from s{i} then s{(i + 1) % n}" for i in range(n)]
    return "\n".join(lines) + "\n"


def measure(label: str, text: str, max_states: int) -> None:
    compiled, diags = compile_source(SourceFile(f"{label}.flow", text))
    assert compiled is not None, diags
    options = CheckOptions(max_states=max_states)
    gc.collect()
    start = time.perf_counter()
    found = findings_of(system_of_flow(compiled), options, label)
    elapsed = time.perf_counter() - start
    states = len(explore(system_of_flow(compiled), max_states).keys)
    gc.collect()
    tracemalloc.start()
    findings_of(system_of_flow(compiled), options, label)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    codes = ",".join(sorted({f.diagnostic.code.id for f in found})) or "-"
    print(
        f"{label:<28} {elapsed:>8.3f} s {states:>9} states {peak / 2**20:>9.1f} MiB   {codes}",
        flush=True,
    )


def best_cpu(repeat: int, fn: Callable[[], object]) -> float:
    """The least process CPU time of ``repeat`` calls, the cycle collector paused."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            result = fn()
            best = min(best, time.process_time() - start)
            del result
        finally:
            gc.enable()
    return best


def generated(sizes: list[int], repeat: int) -> bool:
    """The generated mix: lowering and check_compiled per size; True when the targets hold."""
    print(
        f"{'rules':>7} {'findings':>9} {'parse ms':>9} {'lower ms':>9} {'check ms':>9} "
        f"{'after parse':>12} {'us/rule':>8} {'peak MiB':>9}"
    )
    per_rule: dict[int, float] = {}
    totals: dict[int, float] = {}
    for size in sizes:
        source = SourceFile(f"bench_{size}.flow", generate(size))
        flow, diags = parse_source(source)
        compiled, diags = lower(flow, source.name)
        found = check_compiled(compiled, diags, filename=source.name)  # warm
        runs = max(repeat, repeat * 2000 // size)
        parse_s = best_cpu(runs, partial(parse_source, source))
        lower_s = best_cpu(runs, partial(lower, flow, source.name))
        check_s = best_cpu(runs, partial(check_compiled, compiled, diags, filename=source.name))
        gc.collect()
        tracemalloc.start()
        lowered, _ = lower(flow, source.name)
        check_compiled(lowered, diags, filename=source.name)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        totals[size] = lower_s + check_s
        per_rule[size] = totals[size] / size
        print(
            f"{size:>7} {len(found):>9} {parse_s * 1e3:>9.1f} {lower_s * 1e3:>9.1f} "
            f"{check_s * 1e3:>9.1f} {totals[size] * 1e3:>12.1f} {per_rule[size] * 1e6:>8.1f} "
            f"{peak / 2**20:>9.1f}",
            flush=True,
        )
    ok = True
    for size, limit in GENERATED_TARGETS.items():
        if size in totals:
            met = totals[size] * 1e3 <= limit
            ok &= met
            print(
                f"target: {size:,} rules checked after the parse in <= {limit:.0f} ms: "
                f"{totals[size] * 1e3:.1f} ms {'ok' if met else 'MISSED'}"
            )
    first = sizes[0]
    worst = max(per_rule[s] / per_rule[first] for s in sizes)
    met = worst <= MAX_PER_RULE_GROWTH
    ok &= met
    print(
        f"target: time per rule grows at most {MAX_PER_RULE_GROWTH}x over {first:,} rules: "
        f"{worst:.2f}x {'ok' if met else 'MISSED'}"
    )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--max-states", type=int, default=100_000)
    parser.add_argument(
        "--generated",
        metavar="SIZES",
        nargs="?",
        const="1000,2000,5000,10000,20000",
        help="only the generated rule mix, at these sizes (default 1000,2000,5000,10000,20000)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs per size for --generated")
    args = parser.parse_args(argv)
    if args.generated:
        return 0 if generated([int(s) for s in args.generated.split(",")], args.repeat) else 1
    sizes_generated = [1000, 2000] if args.quick else [1000, 2000, 5000, 10000, 20000]
    sizes = (10, 100) if args.quick else (10, 100, 1000, 2000)
    full_sizes = (10, 50) if args.quick else (10, 100, 300, 1000)
    keys = range(1, 4) if args.quick else range(1, 9)
    suites: list[tuple[str, Callable[[int], str], tuple[int, ...] | range]] = [
        ("chain", chain, sizes),
        ("star", star, sizes),
        ("fully-connected", full, full_sizes),
        ("context-keys(10 speakers)", context, keys),
        ("contradictions", contradictions, (10, 50) if args.quick else (10, 50, 150)),
    ]
    print(f"{'flow':<28} {'time':>10} {'abstract':>16} {'peak mem':>13}   findings")
    for name, make, params in suites:
        for p in params:
            measure(f"{name} {p}", make(p), args.max_states)
    measure("50 speakers, 6 keys", context(6, 50), args.max_states)
    print()
    return 0 if generated(sizes_generated, args.repeat) else 1


if __name__ == "__main__":
    sys.exit(main())
