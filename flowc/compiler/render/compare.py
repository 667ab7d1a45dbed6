"""Two versions of a flow on one drawing (``flowc diff --render``): NEW's diagram with the
edges it adds marked :data:`ADDED` (green) and the edges of OLD it no longer has drawn back
in, marked :data:`REMOVED` (red, dashed), with any node only OLD has.

Edges are the same edge when they join the same nodes (by name), are of the same kind and
carry the same condition: a rule that only moved (a new number or line) is not a change.
"""

from __future__ import annotations

import re

import attrs

from flowc.compiler.render.diagram import Diagram, Edge, Node

ADDED, REMOVED = "added", "removed"
CHANGE_LEGEND = {ADDED: "in NEW only (added)", REMOVED: "in OLD only (removed)"}
_RULE_PREFIX = re.compile(r"^rule \d+(, [^:]*)?: ")


def _label(edge: Edge) -> tuple[str, ...]:
    return tuple(_RULE_PREFIX.sub("", line) for line in edge.label)


def _key(
    diagram: Diagram, edge: Edge, keys: dict[str, str]
) -> tuple[str, str, str, tuple[str, ...]]:
    return (keys[edge.source], keys[edge.target], edge.kind, _label(edge))


def mark_changes(old: Diagram, new: Diagram) -> Diagram:
    """NEW's diagram with its added edges marked and OLD's removed ones drawn in.

    >>> from flowc import compile_flow
    >>> from flowc.compiler.render.diagram import build_diagram
    >>> a = build_diagram(compile_flow("speaker a\\nspeaker b\\nspeaker c\\nwhen from a then b"))
    >>> b = build_diagram(compile_flow("speaker a\\nspeaker b\\nspeaker c\\nwhen from a then c"))
    >>> d = mark_changes(a, b)
    >>> sorted((d.node(e.source).key, d.node(e.target).key, e.mark) for e in d.edges if e.mark)
    [('a', 'b', 'removed'), ('a', 'c', 'added')]
    """
    old_keys = {n.id: n.key for n in old.nodes}
    new_keys = {n.id: n.key for n in new.nodes}
    old_edges: dict[tuple[str, str, str, tuple[str, ...]], Edge] = {}
    for e in old.edges:
        old_edges.setdefault(_key(old, e, old_keys), e)
    new_seen = {_key(new, e, new_keys) for e in new.edges}
    edges = [
        e if _key(new, e, new_keys) in old_edges else attrs.evolve(e, mark=ADDED) for e in new.edges
    ]
    nodes = [
        n if n.key in set(old_keys.values()) else attrs.evolve(n, mark=n.mark or ADDED)
        for n in new.nodes
    ]
    by_key = {n.key: n.id for n in nodes}
    old_by_id = {n.id: n for n in old.nodes}
    for key, e in old_edges.items():
        if key in new_seen:
            continue
        ends = []
        for node_id in (e.source, e.target):
            node: Node = old_by_id[node_id]
            if node.key not in by_key:
                added = attrs.evolve(node, id=f"old-{node.id}", mark=REMOVED, spans=())
                nodes.append(added)
                by_key[node.key] = added.id
            ends.append(by_key[node.key])
        edges.append(
            attrs.evolve(
                e,
                id=f"old-{e.id}",
                source=ends[0],
                target=ends[1],
                mark=REMOVED,
                spans=(),
                label=tuple(f"OLD {x}" if x.startswith("rule ") else x for x in e.label),
            )
        )
    return attrs.evolve(new, nodes=tuple(nodes), edges=tuple(edges), checked=False, findings=())


def changed_edges(diagram: Diagram) -> list[tuple[str, str]]:
    """``(mark, "source → target: label")`` for every added or removed edge, in drawing order."""
    keys = {n.id: n.title for n in diagram.nodes}
    return [
        (
            e.mark,
            f"{keys[e.source]} → {keys[e.target]}" + (f": {' '.join(e.label)}" if e.label else ""),
        )
        for e in diagram.edges
        if e.mark in (ADDED, REMOVED)
    ]
