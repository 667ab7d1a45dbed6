"""Watching a flow's properties on a live run: what it costs per turn.

A 3-party round robin (a human and two model speakers, one with a tool) runs N scripted
turns on the hub, in memory and on the SQLite WAL, once with no property and once with
20 properties of every pattern (none broken, so every monitor stays live for the whole
run). Goal: watching 20 properties at most doubles the run's time per turn.

Run: ``.venv/bin/python benchmarks/bench_properties_live.py [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import flowc
from flowc.runtime.script import parse_script
from flowc.runtime.script_run import run_script_sync
from flowc.runtime.stores import open_store
from flowc.runtime.target import RunTarget

FLOW = """speaker user: human
speaker writer { tool note sets noted = true }
speaker editor
max_turns {cap}
context noted = false
when from user then writer
when from writer then editor
when from editor then user
"""

#: 20 properties that hold on the round robin (all live to the end of the run)
PROPERTIES = [
    "never from user and previous from user",
    "never from writer and previous from writer",
    "never from editor and previous from editor",
    "always from user, writer, editor",
    "eventually from editor",
    "eventually from writer within 3 turns",
    "tool publish at most 0 times",
    "from writer only after from user",
    "from editor only after from writer",
    "after from user and not ends, from writer within 1 turn",
    "after from writer and not ends, from editor within 1 turn",
    "after from editor and not ends, from user within 1 turn",
    "never context.noted == true and from user before turn > 100000000",
    "always not tool publish after from user",
    "never tool publish after from writer before from editor",
    "always from user, writer, editor after from user until ends",
    "eventually ends after turn > 1",
    "after tool note, from editor",
    "never turn < 0",
    "never previous previous from user and from writer",
]


def flow(cap: int, watched: bool) -> str:
    text = FLOW.replace("{cap}", str(cap)).replace(
        "speaker editor\n", "speaker editor\nspeaker publisher { tool publish }\n"
    )
    if watched:
        text += "".join(f"property p{i}: {p}\n" for i, p in enumerate(PROPERTIES))
    return text


def script(turns: int) -> dict[str, object]:
    rounds = turns // 3 + 1
    return {
        "kickoff": "go",
        "script": {
            "user": ["again"] * rounds,
            "writer": [{"tool": "note", "say": "noted"}] + ["draft"] * rounds,
            "editor": ["ok"] * rounds,
        },
    }


def turns_per_second(turns: int, watched: bool, db: str | None) -> float:
    compiled = flowc.compile_flow(flow(turns, watched))
    target = RunTarget.from_compiled(compiled)
    parsed = parse_script(script(turns))
    best = float("inf")
    for _ in range(3):
        store = open_store(db if db is not None else ":memory:")
        started = time.perf_counter()
        result = run_script_sync(target, parsed, store=store)
        elapsed = time.perf_counter() - started
        store.close()
        assert result.turn_count == turns, result
        assert not result.property_violations, result.property_violations
        best = min(best, elapsed)
    return turns / best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    turns = 3_001 if args.quick else 30_001  # ends on the user's turn: every `after` met
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for where in ("memory", "sqlite"):
            rates = []
            for watched in (False, True):
                db = None if where == "memory" else str(Path(tmp) / f"{where}-{watched}.db")
                rates.append(turns_per_second(turns, watched, db))
            ratio = rates[0] / rates[1]
            good = ratio <= 2.0
            ok &= good
            print(
                f"{where:7} {turns:,} turns: {rates[0]:,.0f} turns/s unwatched, "
                f"{rates[1]:,.0f} turns/s with {len(PROPERTIES)} properties: "
                f"{ratio:.2f}x ({'ok' if good else 'over the 2x goal'})"
            )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
