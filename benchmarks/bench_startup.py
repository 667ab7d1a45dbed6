"""Whole-process speed: a 2,400-turn, 3-party scripted round robin, start-up included,
on flowc (``flowc run``) and on AG2's hub, measured together in one run.

Each round runs every contender once, one after the other (so a busy machine slows
them alike); a contender's time is its best round, as ``timeit`` does, in CPU seconds
of the child process (user + system) and in wall seconds. The flowc source is
byte-compiled first, as an installed package is, and one untimed run warms the
file cache. Then the import profile of ``flowc run`` (``python -X importtime``): the
modules that cost the most. Run it with each Python the package supports (the
interpreter that runs this script runs the contenders).

Run: ``.venv/bin/python benchmarks/bench_startup.py [--rounds N] [--turns N]``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FLOW = """flow rr "three humans in turn"
speaker a: human
speaker b: human
speaker c: human
start a
max_turns {turns}
when from a then b
when from b then c
when from c then a
"""

AG2_RUN = """
import asyncio, sys
from ag2.knowledge import MemoryKnowledgeStore
from ag2.network import Hub, HubClient, LocalLink, Passport

async def main(turns: int) -> None:
    hub = await Hub.open(MemoryKnowledgeStore(), ttl_sweep_interval=0)
    link = LocalLink(hub)
    users = []
    for name in "abc":
        client = HubClient(link, hub=hub)
        users.append(await client.register_human(Passport(name=name, kind="human")))
    graph = {"initial_speaker": users[0].agent_id, "max_turns": turns,
             "transitions": [{"when": {"name": "always", "args": {}},
                              "then": {"name": "round_robin", "args": {}}, "priority": 0}],
             "default_target": {"name": "terminate", "args": {"reason": "max_turns"}}}
    channel = await users[0].open(type="workflow", target=[u.agent_id for u in users],
                                  knobs={"graph": graph})
    for i in range(turns):
        await users[i % 3].send(channel.channel_id, "turn")
    await hub.close()
    print("sent", turns)

asyncio.run(main(int(sys.argv[1])))
"""


#: what a run of a well-formed `.flow` does not need (the profile says whether it loaded them)
NOT_LOADED = (
    "cattrs",
    "flowc.compiler.shapes",
    "hashlib",
    "flowc.regex",
    "tomllib",
    "shutil",
    "yaml",
)


def measure(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stdout) of one child run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.stdout


def import_profile(args: list[str], env: dict[str, str]) -> list[tuple[int, int, str]]:
    """The ``-X importtime`` lines of one run: (self µs, cumulative µs, module), best of 5,
    every module the run imports, the costliest first."""
    best: dict[str, tuple[int, int]] = {}
    for _ in range(5):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            own, total, name = line[len("import time:") :].split("|")
            key = name.strip()
            value = (int(own), int(total))
            best[key] = min(best.get(key, value), value)
    return sorted(((o, t, n) for n, (o, t) in best.items()), reverse=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=7, help="rounds (best of them counts)")
    ap.add_argument("--turns", type=int, default=2400)
    ap.add_argument("--top", type=int, default=15, help="modules in the import profile")
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    compileall.compile_dir(ROOT / "flowc", quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "rr.flow").write_text(FLOW.format(turns=args.turns))
        per = args.turns // 3 + 1
        (folder / "s.json").write_text(json.dumps({"script": {s: ["turn"] * per for s in "abc"}}))
        (folder / "ag2_run.py").write_text(AG2_RUN)
        run = [
            sys.executable,
            "-m",
            "flowc",
            "run",
            str(folder / "rr.flow"),
            "--script",
            str(folder / "s.json"),
        ]
        contenders = {
            "flowc run --db :memory:": [*run, "--db", ":memory:"],
            "flowc run (SQLite WAL)": [*run, "--db", str(folder / "runs.db")],
            "AG2 hub (in memory)": [sys.executable, str(folder / "ag2_run.py"), str(args.turns)],
            "python -c pass": [sys.executable, "-c", "pass"],
            "flowc --version": [sys.executable, "-m", "flowc", "--version"],
        }
        # one untimed run: the files read once are in the page cache
        measure(contenders["flowc run --db :memory:"], env)
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.rounds):
            for name, argv in contenders.items():
                if name.startswith("flowc run (SQLite"):
                    for suffix in ("", "-wal", "-shm"):  # a new file each round
                        (folder / f"runs.db{suffix}").unlink(missing_ok=True)
                cpu, wall, out = measure(argv, env)
                if name.startswith("flowc run"):
                    assert f"after {args.turns} turns" in out, out[-300:]
                old = best.get(name, (cpu, wall))
                best[name] = (min(old[0], cpu), min(old[1], wall))
        ag2_cpu = best["AG2 hub (in memory)"][0]
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"whole process, {args.turns}-turn 3-party scripted round robin "
            f"(best of {args.rounds} rounds; load average {load} at the end)"
        )
        print(f"  {'':28} {'CPU s':>7} {'wall s':>7} {'AG2 / this (CPU)':>17}")
        for name, (cpu, wall) in best.items():
            print(f"  {name:28} {cpu:7.3f} {wall:7.3f} {ag2_cpu / cpu:16.1f}x")
        print()
        rows = import_profile([*run[1:], "--db", ":memory:"], env)
        ours = [r for r in rows if r[2].split(".")[0] == "flowc"]
        print(
            f"import profile of `flowc run` (self / cumulative µs, best of 5): "
            f"{len(rows)} modules, {len(ours)} of them flowc's; self time "
            f"{sum(r[0] for r in ours) / 1000:.1f} ms in flowc's, "
            f"{sum(r[0] for r in rows if r not in ours) / 1000:.1f} ms in the others"
        )
        for package in NOT_LOADED:
            loaded = [r[2] for r in rows if r[2] == package or r[2].startswith(package + ".")]
            print(
                f"  {package}: {'imported (' + str(len(loaded)) + ' modules)' if loaded else 'not imported'}"
            )
        print(f"  top {args.top}:")
        for own, total, name in rows[: args.top]:
            print(f"  {own:>8} {total:>9}  {name}")


if __name__ == "__main__":
    main()
