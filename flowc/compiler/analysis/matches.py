"""Where each rule's condition first holds on an explored turn, whether or not the rule
fires there: the witness of a rule that never fires (W203's "another rule takes every
turn it matches", W204's priority trap). See :meth:`Facts._first_matches
<flowc.compiler.analysis.facts.Facts._first_matches>`, which keeps the answer per shape."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from flowc.compiler.analysis.explore import StateSpace, Step, evaluate, satisfiable
from flowc.compiler.analysis.system import Action, RuleSpec, Valuation

#: a node's routed turns: (speaker, action, valuation after its writes)
TurnsOf = Callable[[int], Iterable[tuple[int, Action, Valuation]]]


def first_matches(
    space: StateSpace, turns_of: TurnsOf, explored: int, rules: list[RuleSpec]
) -> dict[int, tuple[int, Step]]:
    """For each of ``rules``, the first turn (breadth-first, over the first ``explored``
    nodes) where its condition holds, as (node, turn); a rule whose condition never
    holds there is not in the answer. One walk over the explored turns serves every rule,
    and a node whose speaker no rule still looked for can match is passed over without
    its turns: on a flow of 200 speakers where a few speakers' rules never match, the
    walk reads those speakers' nodes only (16 ms against 166 for 70,000 states)."""
    # rules with the same condition (and the same senders and tools) match first on
    # the same turn: each such group is tried once per turn
    groups: dict[tuple[Any, ...], list[RuleSpec]] = {}
    for r in rules:
        groups.setdefault((r.code, r.senders, r.tools), []).append(r)
    # a turn only tries the pending groups that can match its speaker
    general: dict[int, list[RuleSpec]] = {}
    by_sender: dict[int, dict[int, list[RuleSpec]]] = {}
    for g, group in enumerate(groups.values()):
        senders = group[0].senders
        if senders is None:
            general[g] = group
        else:
            for sender in senders:
                by_sender.setdefault(sender, {})[g] = group
    left = len(groups)
    done: set[int] = set()
    out: dict[int, tuple[int, Step]] = {}
    # whether a condition holds depends on the turn's speaker, tool and valuation only:
    # a turn like one already tried cannot match a rule that one did not
    tried: set[tuple[int, int | None, Valuation]] = set()
    speaker_of = space.speaker_of
    for node in range(explored):
        if not left:
            break
        if not general and not by_sender.get(speaker_of(node)):
            continue  # no rule left to match can match a turn of this speaker
        for speaker, action, after in turns_of(node):
            tool = action.tool_index
            if (speaker, tool, after) in tried:
                continue
            tried.add((speaker, tool, after))
            mine = by_sender.get(speaker)
            for pool in (mine, general) if mine else (general,):
                found_here: list[int] = []
                for g, group in pool.items():
                    if g in done:
                        found_here.append(g)
                        continue
                    rule = group[0]
                    if rule.tools is not None and tool not in rule.tools:
                        continue
                    res = evaluate(rule.code, speaker, tool, after, {})
                    if res is False:
                        continue
                    # (satisfiable only when a custom condition decides it)
                    found = (
                        {}
                        if res is True
                        else satisfiable([(rule.code, True)], speaker, tool, after, {})
                    )
                    if found is None:
                        continue
                    assumed = tuple(sorted(found.items()))
                    outcome = space.explorer.route(speaker, tool, after, assumed)[0]
                    hit = (node, Step(action, after, outcome))  # one witness for the group
                    for member in group:
                        out[member.index] = hit
                    done.add(g)
                    found_here.append(g)
                    left -= 1
                for g in found_here:
                    del pool[g]
    return out
