"""The checker's shortcuts for large flows give what the plain computations give.

Each shortcut is compared with the straightforward version it replaced: bottom
components with networkx's condensation, the candidate rules of a turn with a
filter over every rule, a breadth-first run kept per node with a fresh one, and
loop entries with a shortest path tried for every turn.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from flowc.compiler.analysis import CheckOptions
from flowc.compiler.analysis.explore import Candidates, explore, satisfiable
from flowc.compiler.analysis.facts import Facts, _bottom_components
from flowc.compiler.analysis.matches import first_matches
from flowc.compiler.analysis.runs import run_along, run_to
from flowc.compiler.analysis.system import RuleSpec, system_of_flow
from flowc.compiler.pipeline import compile_source
from flowc.source import SourceFile
from tests.check.golden_flows import flow

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_analysis import Shape, generate


def _facts(seed: int) -> Facts | None:
    compiled, _ = compile_source(SourceFile(f"seed{seed}.flow", flow(seed)))
    if compiled is None:
        return None
    system = system_of_flow(compiled)
    return Facts(system, explore(system, CheckOptions().max_states), "f.flow")


@pytest.mark.parametrize("seed", range(200))
def test_bottom_components_are_networkx_s(seed: int) -> None:
    rnd = random.Random(seed)
    graph = nx.DiGraph()
    size = rnd.randint(1, 40)
    graph.add_nodes_from(range(size))
    graph.add_edges_from(
        (rnd.randrange(size), rnd.randrange(size)) for _ in range(rnd.randint(0, 3 * size))
    )
    cond = nx.condensation(graph)
    expected = {frozenset(cond.nodes[c]["members"]) for c in cond.nodes if cond.out_degree(c) == 0}
    got = _bottom_components(graph.succ, list(graph.nodes), size)
    assert len(got) == len(expected) and set(got) == expected


@pytest.mark.parametrize("seed", range(0, 100, 3))
def test_candidates_are_every_rule_that_may_match(seed: int) -> None:
    facts = _facts(seed)
    if facts is None:
        return
    system = facts.system
    by_rank = Candidates(system.ordered, len(system.speakers), lambda r: r.rank)
    by_index = Candidates(system.rules, len(system.speakers), lambda r: r.index)
    for sender in range(len(system.speakers)):
        for tool in (-1, *range(len(system.tool_names))):

            def fits(r: RuleSpec, sender: int = sender, tool: int = tool) -> bool:
                return (r.senders is None or sender in r.senders) and (
                    r.tools is None or tool in r.tools
                )

            ranked = tuple(r for r in system.ordered if fits(r))
            assert by_rank.of(sender, tool) == ranked
            assert by_index.of(sender, tool) == tuple(r for r in system.rules if fits(r))
            assert by_rank.reads(sender, tool) == tuple(
                sorted({k for r in ranked for k in r.reads})
            )


@pytest.mark.parametrize("seed", range(0, 100, 3))
def test_a_kept_run_is_a_fresh_one(seed: int) -> None:
    facts = _facts(seed)
    if facts is None:
        return
    space = facts.space
    for node in range(len(space.keys)):
        steps = list(space.explorer.steps(space.keys[node])) if not space.is_end(node) else []
        for final in [None, *steps[:2]]:
            kept = run_to(space, node, final)
            space.tree_turns.clear()
            assert kept == run_along(space, space.path_to(node), final)
            assert kept.render() == run_along(space, space.path_to(node), final).render()


@pytest.mark.parametrize("seed", range(100))
def test_loops_are_entered_as_before(seed: int) -> None:
    """A lasso is the first turn, from the loop's nodes nearest the kickoff, with the
    shortest way back (networkx's shortest path per turn, as the checker did)."""
    facts = _facts(seed)
    if facts is None:
        return
    space = facts.space
    for comp in facts.traps:
        for via in (None, *facts.loop_rules(comp)):
            sub = space.graph.subgraph(comp)
            best = None
            for entry in sorted(comp, key=lambda v: (space.dist[v], v)):
                for step in space.explorer.steps(space.keys[entry]):
                    if via is not None and step.outcome.fired != via:
                        continue
                    nxt = space.explorer.next_key(step)
                    succ = next((v for v in sub.successors(entry) if space.keys[v] == nxt), None)
                    if succ is None:
                        continue
                    back = (
                        [entry] if succ == entry else [entry, *nx.shortest_path(sub, succ, entry)]
                    )
                    rank = (space.dist[entry], len(back))
                    if best is None or rank < best[0]:
                        best = (rank, back, step)
                if best is not None and via is None:
                    break
            if best is None:
                continue  # no turn inside the loop goes through `via`
            _, cycle, first = best
            prefix = space.path_to(cycle[0])
            expected = run_along(
                space,
                [*prefix, *(cycle[1:] if len(cycle) > 1 else cycle)],
                loop_from=len(prefix) - 1,
                chosen={len(prefix) - 1: first},
            )
            assert facts.lasso(comp, via) == expected


def _first_matches_plainly(facts: Facts, rules: list[RuleSpec]) -> dict[int, tuple[int, Any]]:
    """Every rule tried on every explored turn in order, nothing passed over."""
    out: dict[int, tuple[int, Any]] = {}
    for node in range(facts.explored):
        for speaker, action, after in facts.turns_of(node):
            tool = action.tool_index
            for rule in rules:
                if rule.index in out:
                    continue
                if rule.senders is not None and speaker not in rule.senders:
                    continue
                if rule.tools is not None and tool not in rule.tools:
                    continue
                found = satisfiable([(rule.code, True)], speaker, tool, after, {})
                if found is not None:
                    assumed = tuple(sorted(found.items()))
                    outcome = facts.space.explorer.route(speaker, tool, after, assumed)[0]
                    out[rule.index] = (node, (action, after, outcome))
    return out


def _analysis_family(seed: int) -> Facts:
    custom = 0.3 if seed % 3 == 0 else 0.0
    shape = Shape(12 + seed % 20, 3, values=2, rules=1 + seed % 2, custom=custom, seed=seed)
    compiled, _ = compile_source(SourceFile("g.flow", generate(shape)))
    assert compiled is not None
    system = system_of_flow(compiled)
    return Facts(system, explore(system, CheckOptions().max_states), "g.flow")


@pytest.mark.parametrize("seed", range(60))
def test_first_matches_are_those_of_every_turn_tried_in_order(seed: int) -> None:
    """The walk for rules' first matches, which passes over a node whose speaker no rule
    still looked for can match, finds the turn trying every rule on every turn finds."""
    facts = _facts(seed) if seed % 2 else _analysis_family(seed)
    if facts is None:
        return
    rules = list(facts.system.rules)
    rnd = random.Random(seed)
    for subset in (rules, rnd.sample(rules, len(rules) // 3), [r for r in rules if r.senders]):
        got = first_matches(facts.space, facts.turns_of, facts.explored, subset)
        want = _first_matches_plainly(facts, subset)
        assert {i: (node, (s.action, s.after, s.outcome)) for i, (node, s) in got.items()} == want
