"""A JSON graph's turns: its participants may write any context, but a turn goes where the
keys its rules read send it, so the checker takes one turn per combination of those keys'
values (every other key unset), not one per valuation of every key."""

from __future__ import annotations

import itertools
import random
import re
import sys
from pathlib import Path

import pytest

from flowc.compiler.analysis import CheckOptions, check_source, load_checked_graph
from flowc.compiler.analysis.explore import Explorer, explore
from flowc.compiler.analysis.system import UNSET, Valuation, system_of_graph
from flowc.compiler.pipeline import compile_source
from flowc.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "property_check"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_analysis import Shape, generate
from strategies import random_flow


def graph_of(text: str) -> SourceFile:
    compiled, diags = compile_source(SourceFile("g.flow", text))
    assert compiled is not None, diags
    return SourceFile("g.json", compiled.to_json())


def every_valuation(self: Explorer, speaker: int, tool: int) -> tuple[Valuation, ...]:
    """Every valuation of every key, in order (keys in order, the first most significant;
    unset first, then the literals): what a graph's turn may write, untold apart."""
    literals = self.system.literals
    domains = [(UNSET, *range(2, 2 + len(lits))) for lits in literals]
    return tuple(itertools.product(*domains))


def test_a_turn_per_combination_of_the_keys_its_rules_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four keys that conditions read (2 ** 4 = 16 valuations); each worker's rules read
    one, so a worker's turn is two turns (that key unset or set), the user's (whose rule
    reads none) one. The count is worked out from the flow's text; over every valuation
    it is 16 a node."""
    text = generate(Shape(speakers=6, keys=8, values=1, rules=1, max_turns=20))
    reads: dict[str, set[str]] = {}
    for line in text.splitlines():
        found = re.fullmatch(r"when (?:context\.(k\d) == 1 and )?from (\w+) then \w+", line)
        if found:
            reads.setdefault(found[2], set()).update([found[1]] if found[1] else [])
    loaded, diags = load_checked_graph(graph_of(text))
    assert loaded is not None, diags
    system = system_of_graph(loaded)
    space = explore(system, 100_000)
    assert not space.truncated
    nodes = [n for n, key in enumerate(space.keys) if n and key[0] != "end"]
    names = [system.speakers[space.speaker_of(n)] for n in nodes]
    # every worker is reached once; the user only opens the run (the kickoff, from the
    # initial context: one turn)
    assert sorted(names) == sorted(reads.keys() - {"user"})
    assert space.turns == 1 + sum(2 ** len(reads[name]) for name in names)
    with monkeypatch.context() as patch:
        patch.setattr(Explorer, "any_after", every_valuation)
        full = explore(system_of_graph(loaded), 100_000)
    assert full.turns == 1 + 16 * len(nodes)


@pytest.mark.parametrize("target", [None, "ag2"])
def test_the_same_findings_as_over_every_valuation(
    monkeypatch: pytest.MonkeyPatch, target: str | None
) -> None:
    """Differential: `check` of random flows' graphs (and of larger generated ones, whose
    workers read a few of many keys) gives the same report, runs included, as when every
    turn takes every valuation of every key."""
    sources = [graph_of(random_flow(random.Random(seed)).text) for seed in range(120)]
    for params in [(8, 5, 1, 2, 12, 0.2), (6, 4, 2, 1, 10, 0.0), (10, 6, 1, 1, 15, 0.0)]:
        sources.append(graph_of(generate(Shape(*params))))
    options = CheckOptions() if target is None else CheckOptions(target=target)
    reduced = [check_source(s, options) for s in sources]
    with monkeypatch.context() as patch:
        patch.setattr(Explorer, "any_after", every_valuation)
        full = [check_source(s, options) for s in sources]
    assert sum(len(r) for r in reduced) > 3 * len(sources)  # findings, not just I303
    for source, a, b in zip(sources, reduced, full, strict=True):
        assert a == b, source.text[:2000]
