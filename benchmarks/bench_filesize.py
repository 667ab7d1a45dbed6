"""How parse, compile, check and fmt scale with the size of a file: 1, 3 and 10 MB flows.

Each command runs as a real process (``python -m flowc ...``, start-up included) under
the resource limits of the hostile-input tests (``tests/hostile/limits.py``), and the
table reports its wall-clock time, its CPU time (user + system, what the command itself
cost on a busy machine) and its peak resident memory. Targets, on the 10 MB flow: every
command under 30 s and 1 GiB. The linearity check compares the smallest and the largest
size: the cost per megabyte may grow by at most ``MAX_GROWTH`` (a quadratic step would
grow it about tenfold from 1 to 10 MB). It is judged on CPU time, which load on the
machine disturbs less than wall-clock time (on an idle machine the two agree). A last
line times ``flowc compile`` of a 10,000-rule flow as a whole process (target: under 1 s).

    .venv/bin/python benchmarks/bench_filesize.py [--sizes 1,3,10] [--commands check,compile]

Exit status 0 when every target is met, 1 otherwise. The flows are
``bench_compile.generate`` (a realistic mix of rules and comments) grown to the size.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_compile import generate  # noqa: E402

from tests.hostile.limits import run_limited  # noqa: E402

TARGET_SECONDS = 30.0
TARGET_MIB = 1024
MAX_GROWTH = 2.0
COMMANDS = {
    "compile": ["compile", "{path}", "-o", "{out}"],
    "check": ["check", "{path}"],
    "fmt --check": ["fmt", "--check", "{path}"],
    "fmt": ["fmt", "{copy}"],
}


def flow_of_size(megabytes: float) -> str:
    """A generated flow of about ``megabytes`` MB (MiB)."""
    per_rule = len(generate(2000).encode()) / 2000
    return generate(max(10, int(megabytes * 1024 * 1024 / per_rule)))


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(args: list[str]) -> dict[str, float]:
    before = cpu_of_children()
    result = run_limited(args, memory_mib=4096, cpu_seconds=600, wall_seconds=900, output_mib=1024)
    cpu = cpu_of_children() - before
    if result.timed_out or result.traceback or result.returncode not in (0, 1):
        print(f"  {' '.join(args[:2])}: failed (exit {result.returncode}): {result.stderr[-500:]}")
    return {
        "wall": result.seconds,
        "cpu": cpu,
        "mib": result.peak_mib,
        "ok": float(not result.timed_out),
    }


def compile_10k(repeat: int) -> tuple[float, float]:
    """Best wall-clock and CPU seconds of ``flowc compile`` on 10,000 rules, as a process."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rules_10000.flow"
        path.write_text(generate(10_000), encoding="utf-8")
        wall = cpu = float("inf")
        for _ in range(repeat):
            before = cpu_of_children()
            start = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "flowc",
                    "compile",
                    str(path),
                    "-o",
                    str(Path(tmp) / "o.json"),
                ],
                check=True,
                capture_output=True,
            )
            wall = min(wall, time.perf_counter() - start)
            cpu = min(cpu, cpu_of_children() - before)
        return wall, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,3,10", help="file sizes in MB (default 1,3,10)")
    ap.add_argument("--commands", default=",".join(COMMANDS), help="which commands (default: all)")
    ap.add_argument(
        "--repeat", type=int, default=3, help="runs of the 10,000-rule compile (best kept)"
    )
    args = ap.parse_args(argv)
    sizes = [float(s) for s in args.sizes.split(",")]
    commands = [c.strip() for c in args.commands.split(",")]
    rows: dict[str, dict[float, dict[str, float]]] = {c: {} for c in commands}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            text = flow_of_size(size)
            path = Path(tmp) / f"flow_{size:g}mb.flow"
            path.write_text(text, encoding="utf-8")
            print(
                f"{size:g} MB: {len(text.encode()):,} bytes, {text.count(chr(10)):,} lines",
                flush=True,
            )
            for command in commands:
                copy = Path(tmp) / "copy.flow"
                copy.write_text(text, encoding="utf-8")
                argv_ = [
                    a.format(path=path, out=Path(tmp) / "out.json", copy=copy)
                    for a in COMMANDS[command]
                ]
                row = rows[command][size] = measure(argv_)
                print(
                    f"  {command:<12} wall {row['wall']:7.2f} s  cpu {row['cpu']:7.2f} s  "
                    f"peak {row['mib']:7.1f} MiB",
                    flush=True,
                )
            os.remove(path)

    ok = True
    print()
    print(f"{'command':<12} " + " ".join(f"{s:>8g} MB" for s in sizes) + "   (cpu s / peak MiB)")
    for command in commands:
        cells = [f"{rows[command][s]['cpu']:5.1f}/{rows[command][s]['mib']:<5.0f}" for s in sizes]
        print(f"{command:<12} " + " ".join(f"{c:>11}" for c in cells))
    big = max(sizes)
    for command in commands:
        r = rows[command][big]
        met = r["ok"] and r["cpu"] < TARGET_SECONDS and r["mib"] < TARGET_MIB
        ok &= bool(met)
        print(
            f"target: {command} at {big:g} MB under {TARGET_SECONDS:.0f} s and {TARGET_MIB} MiB: "
            f"cpu {r['cpu']:.1f} s (wall {r['wall']:.1f} s), {r['mib']:.0f} MiB {'ok' if met else 'MISSED'}"
        )
    small = min(sizes)
    if big > small:
        for command in commands:
            per_small = rows[command][small]["cpu"] / small
            per_big = rows[command][big]["cpu"] / big
            growth = per_big / per_small
            met = growth <= MAX_GROWTH
            ok &= met
            print(
                f"target: {command} cpu per MB grows <= {MAX_GROWTH:g}x from {small:g} to {big:g} MB: "
                f"{growth:.2f}x {'ok' if met else 'MISSED'}"
            )
    wall, cpu = compile_10k(args.repeat)
    met = cpu < 1.0
    ok &= met
    print(
        f"target: `flowc compile` of 10,000 rules as a process under 1 s: cpu {cpu:.3f} s "
        f"(wall {wall:.3f} s) {'ok' if met else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
