"""How `flowc diff` scales: two versions of a 1,000-rule flow (200 speakers).

Run: ``.venv/bin/python benchmarks/bench_diff.py``. For each edit it reports the time to
load both versions, the time to diff them (both checkers' explorations, the lock-step
product, structural matching and a distinguishing run per behavioural change), the
product states explored and what was found, and the peak memory (tracemalloc).
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scenarios import big

from flowc.compiler.analysis.changes import Version, diff_versions
from flowc.compiler.analysis.facts import CheckOptions
from flowc.compiler.analysis.lockstep import explore_pair
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.pipeline import compile_source
from flowc.source import SourceFile

OLD = big()


def edits() -> dict[str, str]:
    lines = OLD.splitlines()
    # the rules of w3 and of w5 swap places as blocks: each speaker's rules keep their order,
    # and rules of different speakers never compete, so no run changes
    w3 = [x for x in lines if x.startswith("when from w3 ")]
    w5 = [x for x in lines if x.startswith("when from w5 ")]
    moved = []
    for x in lines:
        if x == w3[0]:
            moved += w5
        elif x == w5[0]:
            moved += w3
        elif x not in w3 and x not in w5:
            moved.append(x)
    return {
        "identical": OLD,
        "rules of two speakers swapped": "\n".join(moved) + "\n",
        "one target changed": OLD.replace("when from w100 then w101\n", "when from w100 then w7\n"),
        "a shadowing rule added": OLD.replace(
            "when from user then w0\n", "when from user then w0\nwhen tool t1 then w2\n"
        ),
        "a terminate reason changed": OLD.replace('"done_3"', '"done_three"'),
    }


def main() -> None:
    options = CheckOptions(max_states=100_000)
    for label, text in edits().items():
        start = time.perf_counter()
        old, _ = compile_source(SourceFile("old.flow", OLD))
        new, _ = compile_source(SourceFile("new.flow", text))
        assert old is not None and new is not None
        loaded = time.perf_counter() - start
        tracemalloc.start()
        start = time.perf_counter()
        d = diff_versions(Version("old.flow", old), Version("new.flow", new), options)
        took = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        product = explore_pair(system_of_flow(old), system_of_flow(new), options.max_states)
        print(
            f"{label:32} rules {len(new.graph.transitions):5}  load {loaded:5.2f}s  diff {took:6.2f}s  "
            f"product states {len(product.keys):6}  structural {len(d.structural):2}  "
            f"behavioural {len(d.behavioural):3}  changed {d.behaviour_changed!s:5}  "
            f"first run {len(d.first.run) if d.first and d.first.run is not None else '-'} turns  "
            f"peak {peak:6.1f} MiB"
        )


if __name__ == "__main__":
    main()
