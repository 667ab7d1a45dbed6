"""How the analysis scales with the size of a flow's state space: a family of generated
flows, from parameters.

Run: ``.venv/bin/python benchmarks/bench_analysis.py`` (``--quick`` for the small ones,
``--instance S,K,V,R,T,C`` for one). Each instance is a user and ``S - 1`` workers; worker
``i`` has a tool writing key ``k{i % K}`` to one of ``V`` values, ``R`` context rules
(``when context.kX == v and from wI then wJ``; a share ``C`` of them read a custom
condition instead) and a ``from`` rule to the next worker, under ``max_turns T``. About
one context rule in fifty terminates the run. The rules' keys, values and targets are
drawn from a fixed seed, so an instance is the same flow on every run.

Its *concrete* state count is the speakers times every valuation of the keys (each key
unset or one of its ``V`` values): ``S * (V + 1) ** K``, the size of the space a
complete analysis must account for (how many of those states runs reach is the
explorers' count).

``--properties K`` adds K generated properties to each instance (a mix of the six
patterns under the five scopes, over its speakers, tools, keys and endings, from a fixed
seed: :func:`properties`) and measures the check twice, without them and with them
(``check+P``: the time, and the ratio to the check without).

``--repeat N`` measures each instance in N fresh processes and prints the median time: a
single first call varies by a third or more from one process to the next (string hashes
are seeded per process), which on the small instances, checked in milliseconds, decides
a ratio. The findings must be the same in every process (checked).

Per instance it prints the time and peak memory of the analysis as ``flowc check``
runs it (``check`` with the default options, after compiling; peak memory of a
child process, ``ru_maxrss``), whether it was complete (``complete``: explored one
state at a time; ``symbolic``: cut short at the bound, but W201-W206, W212, W215 and
E111 decided for every state by the symbolic count; ``sym-N``: N of those verdicts still
unknown, the loops counting one; ``partial``: the symbolic count gave up too), a digest of
its findings (code and line of each, hashed), and then the symbolic exploration
alone (:mod:`flowc.compiler.analysis.symbolic`): its time, the states it counted and
the breadth-first layers. Each measurement runs in a fresh child process, so memory
figures are the instance's own.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

import attrs

#: the family: (speakers, keys, values per key, context rules per worker, max_turns, custom share)
FAMILY: tuple[
    tuple[int, int, int, int, int, float] | tuple[int, int, int, int, int, float, int, bool], ...
] = (
    (10, 3, 2, 1, 20, 0.0),
    (20, 4, 2, 1, 30, 0.0),
    (50, 5, 2, 1, 40, 0.0),
    (50, 6, 2, 2, 40, 0.1),
    (100, 8, 1, 1, 50, 0.0),
    (100, 8, 2, 1, 50, 0.0),
    (200, 10, 1, 1, 50, 0.0),
    (200, 10, 1, 2, 50, 0.2),
    (200, 10, 2, 1, 50, 0.0),
    # the same with a tool that finishes the run on every worker (no loop traps a run)
    (100, 8, 2, 1, 50, 0.0, 0, True),
    (200, 10, 1, 2, 50, 0.2, 0, True),
    (200, 10, 2, 1, 50, 0.0, 0, True),
)
QUICK = FAMILY[:5]


@attrs.frozen
class Shape:
    """The parameters of one generated flow."""

    speakers: int
    keys: int
    values: int = 1
    rules: int = 1
    max_turns: int = 50
    custom: float = 0.0
    seed: int = 0
    #: every worker may also finish the run (``tool done finishes "resolved"``): every
    #: state can reach an end, so no loop traps a run
    finish: bool = False

    @property
    def concrete_states(self) -> int:
        """Speakers times every valuation (each key unset or one of its values)."""
        return self.speakers * (self.values + 1) ** self.keys

    def label(self) -> str:
        return (
            f"S={self.speakers} K={self.keys} V={self.values} R={self.rules}"
            f" T={self.max_turns} C={self.custom:g}" + (" F" if self.finish else "")
        )


def generate(shape: Shape) -> str:
    """The flow of one instance (a `.flow` text).

    >>> text = generate(Shape(speakers=3, keys=2, values=2))
    >>> print(text, end="")
    flow generated
    speaker user: human
    speaker w0 { tool write0 sets k0 = 1 }
    speaker w1 { tool write1 sets k1 = 1 }
    start user
    max_turns 50
    when from user then w0
    when context.k1 == 1 and from w0 then w1
    when from w0 then w1
    when context.k1 == 2 and from w1 then w0
    when from w1 then w0
    """
    rnd = random.Random(shape.seed)
    workers = [f"w{i}" for i in range(shape.speakers - 1)]
    lines = ["flow generated", "speaker user: human"]
    for i, w in enumerate(workers):
        value = 1 + (i // shape.keys) % shape.values
        done = ' tool done finishes "resolved"' if shape.finish else ""
        lines.append(f"speaker {w} {{ tool write{i} sets k{i % shape.keys} = {value}{done} }}")
    if shape.custom:
        lines.append("condition lucky(n: int)")
    lines += ["start user", f"max_turns {shape.max_turns}", "when from user then w0"]
    for i, w in enumerate(workers):
        for _ in range(shape.rules):
            if rnd.random() < shape.custom:
                cond = f"lucky(n = {rnd.randrange(3)})"
            else:
                cond = f"context.k{rnd.randrange(shape.keys)} == {1 + rnd.randrange(shape.values)}"
            target = 'terminate "done"' if rnd.random() < 0.02 else rnd.choice(workers)
            lines.append(f"when {cond} and from {w} then {target}")
        lines.append(f"when from {w} then {workers[(i + 1) % len(workers)]}")
    return "\n".join(lines) + "\n"


def properties(shape: Shape, count: int, seed: int = 0) -> tuple[Any, ...]:
    """``count`` properties of an instance: each of the six patterns under each of the five
    scopes in turn, over atoms drawn from a fixed seed (a worker speaks, calls its tool,
    a key has a value, the run ends, the turn number, a previous turn).

    >>> [p.text for p in properties(Shape(speakers=3, keys=2), 3)]  # doctest: +NORMALIZE_WHITESPACE
    ['property p0: never turn <= 1 or tool write1',
     'property p1: always not (from w1 and previous from w1) before from w0',
     'property p2: eventually turn > 5 within 3 turns after from w0 and previous from w0']
    """
    from flowc.compiler import model as m
    from flowc.compiler.describe import property_text
    from flowc.compiler.properties import (
        After,
        AfterUntil,
        Always,
        AtMost,
        Before,
        Between,
        Ends,
        Eventually,
        Globally,
        Never,
        OnlyAfter,
        Previous,
        Property,
        Responds,
        TurnIs,
    )

    rnd = random.Random(seed)
    workers = [f"w{i}" for i in range(shape.speakers - 1)]

    def atom() -> Any:
        kind = rnd.choice(["from", "from", "tool", "ctx", "ctx", "ends", "turn"])
        if kind == "from":
            return m.FromSpeaker(rnd.choice(workers))
        if kind == "tool":
            return m.ToolCalled(f"write{rnd.randrange(len(workers))}")
        if kind == "ctx":
            return m.ContextEquals(f"k{rnd.randrange(shape.keys)}", 1 + rnd.randrange(shape.values))
        if kind == "ends":
            return Ends(rnd.choice([None, "done"]))
        return TurnIs(rnd.choice([">", "<="]), rnd.randrange(1, 6))

    def expr() -> Any:
        kind = rnd.random()
        if kind < 0.6:
            return atom()
        if kind < 0.75:
            return m.Not(m.AllOf((atom(), atom())))
        if kind < 0.9:
            return m.AnyOf((atom(), atom()))
        a = m.FromSpeaker(rnd.choice(workers))  # a worker speaks twice in a row
        return m.AllOf((a, Previous(a)))

    out = []
    for i in range(count):
        p = expr()
        within = rnd.choice([None, 3, 10])
        kind = i % 6
        pattern: Any
        if kind == 0:
            pattern = Never(p)
        elif kind == 1:
            pattern = Always(m.Not(p))
        elif kind == 2:
            pattern = Eventually(p, within)
        elif kind == 3:
            pattern = AtMost(p, rnd.randrange(1, 4))
        elif kind == 4:
            pattern = OnlyAfter(p, expr())
        else:
            pattern = Responds(p, expr(), within)
        scope = [
            Globally,
            lambda: Before(expr()),
            lambda: After(expr()),
            lambda: Between(expr(), expr()),
            lambda: AfterUntil(expr(), expr()),
        ][(i // 6 + i) % 5]()
        prop = Property(f"p{i}", pattern, scope)
        out.append(attrs.evolve(prop, text=property_text(prop)))
    return tuple(out)


def _child(
    kind: str, shape: Shape, max_states: int | None = None, props: int = 0
) -> dict[str, object]:
    """One measurement, in this (fresh) process."""
    from flowc.collector import paused
    from flowc.compiler.analysis import CheckOptions, facts_of
    from flowc.compiler.analysis.symbolic import explore_symbolic
    from flowc.compiler.analysis.system import system_of_flow
    from flowc.compiler.pipeline import compile_source
    from flowc.source import SourceFile

    compiled, _ = compile_source(SourceFile("generated.flow", generate(shape)))
    assert compiled is not None
    if props:
        compiled = attrs.evolve(compiled, properties=properties(shape, props))
    system = system_of_flow(compiled)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with paused():
        start = time.process_time()
        if kind == "check":
            options = CheckOptions() if max_states is None else CheckOptions(max_states=max_states)
            facts, found = facts_of(system, options, "generated.flow")
            codes = [
                (f.diagnostic.code.id, f.diagnostic.span.line if f.diagnostic.span else 0)
                for f in found
            ]
            out: dict[str, object] = {
                "complete": not any(c == "I301" for c, _ in codes),
                # cut short, but every state counted: what is still not known
                "unknown": (
                    None
                    if not facts.space.truncated or facts.symbolic is None
                    else len(facts.unknown_rules)
                    + len(facts.unknown_late)
                    + (0 if facts.loops_known else 1)
                    + (0 if facts.sample_known else 1)
                ),
                "findings": len(codes),
                "digest": hashlib.sha256(json.dumps(sorted(codes)).encode()).hexdigest()[:10],
                # the properties' verdicts: violated, holds, unknown
                "verdicts": [sum(1 for c, _ in codes if c == x) for x in ("E116", "I306", "I305")],
            }
        else:
            facts = explore_symbolic(system)
            out = {"states": facts.states if facts else -1, "layers": facts.layers if facts else -1}
        out["seconds"] = time.process_time() - start
    out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["base_mib"] = base / 1024
    return out


def measure(
    kind: str, shape: Shape, max_states: int | None = None, props: int = 0, repeat: int = 1
) -> dict[str, object]:
    """One measurement in a fresh child process; with ``repeat`` N, N of them, each in a
    process of its own, and the median time (a single first call in a fresh process
    varies by a third or more from one process to the next: string hashing is seeded
    per process, which moves every dict and set), and the highest peak memory; the other
    figures are the last child's, and a check's findings must be the same in each
    (checked: the digest)."""
    if repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    more = [] if max_states is None else ["--max-states", str(max_states)]
    if props:
        more += ["--properties", str(props)]
    runs = []
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, __file__, "--child", kind, json.dumps(attrs.asdict(shape)), *more],
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(proc.stdout))
    out: dict[str, object] = runs[-1]
    if kind == "check":
        assert all(r["digest"] == out["digest"] for r in runs), "findings differ between runs"
    out["seconds"] = statistics.median(float(r["seconds"]) for r in runs)
    out["peak_mib"] = max(float(r["peak_mib"]) for r in runs)
    return out


def _result(chk: dict[str, object]) -> str:
    """complete; symbolic (the bound cut the exploration short, the symbolic count
    decided every verdict I301 lists: W201-W206, W212, W215, E111); sym-N (N verdicts
    still not known: each rule I301 names, the loops, and W201-W204 as findings when no
    run ends); partial (the symbolic count gave up too)."""
    if chk["complete"]:
        return "complete"
    unknown = chk["unknown"]
    if unknown is None:
        return "partial"
    return "symbolic" if unknown == 0 else f"sym-{unknown}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="only the small instances")
    parser.add_argument("--instance", help="one instance: S,K,V,R,T,C[,F] (F: 1 to finish)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument(
        "--max-states", type=int, help="check's bound (default: check's default), to choose one"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="measure each instance in N fresh processes and print the median time (default 1)",
    )
    parser.add_argument(
        "--properties",
        type=int,
        default=0,
        metavar="K",
        help="also check each instance with K generated properties, and compare the times",
    )
    args = parser.parse_args()
    if args.child:
        shape = Shape(**json.loads(args.child[1]))
        print(json.dumps(_child(args.child[0], shape, args.max_states, args.properties)))
        return
    if args.instance:
        s, k, v, r, t, c, *f = args.instance.split(",")
        family = [(int(s), int(k), int(v), int(r), int(t), float(c), 0, bool(f and int(f[0])))]
    else:
        family = list(QUICK if args.quick else FAMILY)
    if args.properties:
        _compare(family, args.max_states, args.properties, args.repeat)
        return
    print(
        f"{'instance':34} {'concrete':>12}  {'check':>8} {'peak':>8} {'result':8} {'digest':10}"
        f"  {'symbolic':>8} {'peak':>8} {'states':>10} {'layers':>6}"
    )
    for params in family:
        shape = Shape(*params)
        chk = measure("check", shape, args.max_states, repeat=args.repeat)
        sym = measure("symbolic", shape, repeat=args.repeat)
        print(
            f"{shape.label():34} {shape.concrete_states:12,}  {chk['seconds']:7.2f}s"
            f" {chk['peak_mib']:6.0f}MB {_result(chk):8}"
            f" {chk['digest']:10}  {sym['seconds']:7.2f}s {sym['peak_mib']:6.0f}MB"
            f" {sym['states']:10,} {sym['layers']:6}",
            flush=True,
        )


def _compare(family: list[Any], max_states: int | None, props: int, repeat: int = 1) -> None:
    """``--properties K``: each instance checked without and with K properties."""
    print(
        f"{'instance':34} {'check':>8} {'peak':>7} {'result':8}  {'check+P':>8} {'peak':>7}"
        f" {'ratio':>6}  verdicts (violated/holds/unknown)"
    )
    for params in family:
        shape = Shape(*params)
        alone = measure("check", shape, max_states, repeat=repeat)
        both = measure("check", shape, max_states, props, repeat=repeat)
        violated, holds, unknown = both["verdicts"]  # type: ignore[misc]
        ratio = float(both["seconds"]) / max(float(alone["seconds"]), 1e-9)  # type: ignore[arg-type]
        print(
            f"{shape.label():34} {alone['seconds']:7.2f}s {alone['peak_mib']:5.0f}MB"
            f" {_result(alone):8}  {both['seconds']:7.2f}s {both['peak_mib']:5.0f}MB"
            f" {ratio:5.2f}x  {violated}/{holds}/{unknown}",
            flush=True,
        )


if __name__ == "__main__":
    main()
