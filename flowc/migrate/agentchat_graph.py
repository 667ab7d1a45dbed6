"""An AgentChat ``GraphFlow``'s graph: read from the ``DiGraphBuilder`` calls of a Python file,
and translated from the team's component JSON into rules (:func:`graph_rules`) and scenarios
(:func:`graph_scenarios`).

The builder's calls are replayed as ``DiGraphBuilder`` of autogen-agentchat 0.7.5 stores
them (``add_node(agent, activation=)``, ``add_edge(src, dst, condition=,
activation_group=, activation_condition=)`` with the group defaulting to the target and the
condition to ``"all"``, ``add_conditional_edges``, ``set_entry_point``) into the ``graph``
of the team's component JSON. A callable condition ``lambda m: "kw" in m.to_model_text()``
is exactly the keyword ``"kw"`` (:func:`keyword_callable`).
"""

from __future__ import annotations

import ast
from typing import Any

import attrs

import flowc.migrate.model as mm
from flowc.diagnostics import M001, M002
from flowc.dsl import nodes as n
from flowc.migrate.agents import AgentReader
from flowc.migrate.json_names import Findings
from flowc.migrate.pyread import PyModule, callee, kwarg

BUILDER_METHODS = ("add_node", "add_edge", "add_conditional_edges", "set_entry_point")


def chain_root(mod: PyModule, node: ast.expr) -> ast.expr:
    """``b.add_node(x).add_edge(x, y)`` -> what ``b`` holds, through variables and chains
    (``b = DiGraphBuilder().add_node(x)`` -> that ``DiGraphBuilder()`` call)."""
    for _ in range(50):
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        target = mod.deref(node)
        if target is node:
            break
        node = target
    return node


class GraphReader:
    """The calls made on one ``DiGraphBuilder()``, read into ``graph`` of the component JSON."""

    def __init__(self, reader: AgentReader, where: dict[str, ast.AST], builder: ast.Call) -> None:
        self.r = reader
        self.where = where
        self.mod = reader.mod
        self.builder = builder
        self.nodes: dict[str, dict[str, Any]] = {}
        self.agents: dict[str, ast.expr] = {}  # node name -> the agent expression
        self.start: str | None = None
        self.ok = True

    def owns(self, call: ast.Call) -> bool:
        return chain_root(self.mod, call) is self.builder

    def name_of(self, node: ast.expr | None) -> str | None:
        if node is None:
            return None
        value = self.mod.const_or(node, None)
        if isinstance(value, str):
            return value
        call = self.mod.deref(node)
        if isinstance(call, ast.Call):
            name = self.mod.const_name_or(kwarg(call, "name", 0), None)
            return name if isinstance(name, str) else None
        return None

    def fail(self, message: str, node: ast.AST) -> None:
        self.r.report(
            M001,
            message,
            node,
            help="write the graph with literal agents and names, "
            "or port it by hand as `when from X then Y` rules",
        )
        self.ok = False

    def read(self) -> None:
        calls = [
            c
            for c in self.mod.calls()
            if isinstance(c.func, ast.Attribute) and c.func.attr in BUILDER_METHODS and self.owns(c)
        ]
        # a chain's inner calls end first: order by where each call ends
        calls.sort(key=lambda c: (c.end_lineno or c.lineno, c.end_col_offset or c.col_offset))
        for call in calls:
            method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
            getattr(self, f"_{method}")(call)

    def _add_node(self, call: ast.Call) -> None:
        agent = kwarg(call, "agent", 0)
        name = self.name_of(agent)
        if agent is None or name is None:
            self.fail("this graph node's agent cannot be read statically", call)
            return
        activation = self.mod.const_or(kwarg(call, "activation", 1), "all")
        if name not in self.nodes:
            self.nodes[name] = {"name": name, "edges": [], "activation": activation}
            self.agents[name] = agent
            self.where[f"config.graph.nodes.{name}.activation"] = _at(call)

    def _edge(self, call: ast.Call, source: str, target: str, condition: ast.expr | None) -> None:
        edge: dict[str, Any] = {"target": target}
        path = f"config.graph.nodes.{source}.edges"
        at = _at(call)
        self.where.setdefault(path, at)
        index = len(self.nodes[source]["edges"])
        self.where[f"{path}[{index}]"] = at
        if condition is not None:
            value = self.mod.const_or(condition, ...)
            if value is ...:
                found = keyword_callable(self.mod, condition)
                if found is not None and not found[1]:
                    value = found[0]  # exactly the string condition
                else:
                    # not a keyword test: the JSON translation reports it and leaves the edge
                    # out, unless it is a negated keyword, which a flow says directly
                    value = {"callable": ast.unparse(condition)[:60]}
                    self.where[f"{path}[{index}].condition"] = condition
                    if found is not None:
                        edge["_flow_condition"] = n.NotCond(
                            mm.call_cond("text_contains", text=found[0]), mm.S
                        )
            if value is not None:
                edge["condition"] = value
        group = self.mod.const_or(kwarg(call, "activation_group", 3), None)
        edge["activation_group"] = group if isinstance(group, str) and group else target
        cond = self.mod.const_or(kwarg(call, "activation_condition", 4), None)
        edge["activation_condition"] = cond if cond in ("all", "any") else "all"
        self.nodes[source]["edges"].append(edge)

    def _add_edge(self, call: ast.Call) -> None:
        source = self.name_of(kwarg(call, "source", 0))
        target = self.name_of(kwarg(call, "target", 1))
        if source is None or target is None:
            self.fail("this edge's source or target cannot be read statically", call)
            return
        if source not in self.nodes or target not in self.nodes:
            self.fail(
                f"the edge {source} -> {target} names a node that was not added first "
                "(DiGraphBuilder raises ValueError)",
                call,
            )
            return
        self._edge(call, source, target, kwarg(call, "condition", 2))

    def _add_conditional_edges(self, call: ast.Call) -> None:
        source = self.name_of(kwarg(call, "source", 0))
        mapping = self.mod.deref(kwarg(call, "condition_to_target", 1) or call)
        if source is None or source not in self.nodes or not isinstance(mapping, ast.Dict):
            self.fail("these conditional edges cannot be read statically", call)
            return
        for key, value in zip(mapping.keys, mapping.values, strict=True):
            keyword = self.mod.const_or(key, None)
            target = self.name_of(value)
            if not isinstance(keyword, str) or target is None or target not in self.nodes:
                self.fail("this conditional edge cannot be read statically", value)
                continue
            self._edge(call, source, target, key)

    def _set_entry_point(self, call: ast.Call) -> None:
        name = self.name_of(kwarg(call, "name", 0))
        if name is None or name not in self.nodes:
            self.fail("the entry point is not a node added to the builder", call)
            return
        self.start = name

    def component(self) -> dict[str, Any]:
        graph: dict[str, Any] = {"nodes": self.nodes}
        if self.start is not None:
            graph["default_start_node"] = self.start
        return graph


def _at(call: ast.Call) -> ast.AST:
    """Where to point for a builder call: the call, or its arguments inside a chain (a chained
    call's span starts at ``DiGraphBuilder()``)."""
    chained = isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call)
    if chained and call.args:
        return call.args[0]
    return call


def keyword_callable(mod: PyModule, node: ast.expr) -> tuple[str, bool] | None:
    """``lambda m: "kw" in m.to_model_text()`` (or a ``def`` returning that) -> ``("kw", False)``:
    exactly what ``DiGraphEdge.check_condition`` does for the string condition ``"kw"``;
    ``"kw" not in m.to_model_text()`` -> ``("kw", True)``; anything else -> None."""
    node = mod.deref(node)
    param: str | None = None
    body: ast.expr | None = None
    if isinstance(node, ast.Lambda) and len(node.args.args) == 1:
        param, body = node.args.args[0].arg, node.body
    elif (fn := mod.function_of(node)) is not None:
        stmts = [
            s
            for s in fn.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        ]
        if len(fn.args.args) == 1 and len(stmts) == 1 and isinstance(stmts[0], ast.Return):
            param, body = fn.args.args[0].arg, stmts[0].value
    if param is None or not isinstance(body, ast.Compare) or len(body.ops) != 1:
        return None
    keyword = body.left
    text = body.comparators[0]
    if not (
        isinstance(body.ops[0], ast.In | ast.NotIn)
        and isinstance(keyword, ast.Constant)
        and isinstance(keyword.value, str)
        and keyword.value
    ):
        return None
    if (
        isinstance(text, ast.Call)
        and not text.args
        and not text.keywords
        and isinstance(text.func, ast.Attribute)
        and text.func.attr == "to_model_text"
        and isinstance(text.func.value, ast.Name)
        and text.func.value.id == param
    ):
        return keyword.value, isinstance(body.ops[0], ast.NotIn)
    return None


def graph_of(reader: AgentReader, where: dict[str, ast.AST], team: ast.Call) -> GraphReader | None:
    """The ``DiGraphBuilder`` behind ``GraphFlow(graph=builder.build())``."""
    node = kwarg(team, "graph", 1)
    if node is None:
        reader.report(M001, "the GraphFlow has no `graph=`", team)
        return None
    where["config.graph"] = node
    built = reader.mod.deref(node)
    if (
        isinstance(built, ast.Call)
        and callee(built) == "build"
        and isinstance(built.func, ast.Attribute)
    ):
        root = chain_root(reader.mod, built.func.value)
        if isinstance(root, ast.Call) and callee(root) == "DiGraphBuilder":
            return GraphReader(reader, where, root)
    reader.report(
        M001,
        "the graph is not built with a `DiGraphBuilder()` of this file; it cannot be "
        "read statically",
        node,
        help="build it with DiGraphBuilder().add_node(...).add_edge(...).build()",
    )
    return None


def cond_keywords(cond: n.Cond) -> list[str]:
    """The keywords a condition tests with `text_contains` (negated or not)."""
    if isinstance(cond, n.CallCond) and cond.name.value == "text_contains":
        return [str(cond.args[0].value.value)]
    if isinstance(cond, n.AndCond | n.OrCond):
        return [k for c in cond.items for k in cond_keywords(c)]
    if isinstance(cond, n.NotCond):
        return cond_keywords(cond.item)
    return []


@attrs.frozen
class _Graph:
    """A GraphFlow's nodes, their outgoing edges (those with a target), the parents of
    each node and the start nodes."""

    nodes: dict[str, Any]
    edges: dict[str, list[dict[str, Any]]]
    incoming: dict[str, list[str]]
    starts: list[str]


def graph_rules(
    r: Findings, cfg: dict[str, Any], participants: list[str], user: str
) -> tuple[list[mm.Rule], bool, list[str]]:
    """GraphFlow edges (the team's component JSON ``config``) -> rules. Returns the rules,
    whether they are exact, and the unconditional chain from the entry node (for scenarios)."""
    graph = _read_graph(r, cfg, participants)
    if graph is None:
        return [], False, []
    exact = True
    starts = graph.starts
    if len(starts) > 1:
        r.report(
            M001,
            f"several start nodes ({', '.join(starts)}) run in parallel in AgentChat; only "
            f"`{starts[0]}` starts the flow",
            "config.graph",
        )
        exact = False
    rules = [
        mm.Rule(mm.from_(user), mm.speaker_target(starts[0]), 0, "the task goes to the entry node")
    ]
    silent_edges = False
    for name, out in graph.edges.items():
        if any(not e.get("condition") for e in out):
            silent_edges = True
        node_rules, node_exact = _edge_rules(r, name, out)
        rules += node_rules
        exact = exact and node_exact
    _report_activations(r, graph)
    if silent_edges:
        r.report(
            M002,
            "an edge with a Python callable condition is written to JSON without its "
            "condition, exactly like an unconditional edge: check the original graph",
            "config.graph",
        )
    chain = [starts[0]]
    while len(chain) <= len(graph.nodes):
        out = graph.edges.get(chain[-1], [])
        if len(out) != 1 or out[0].get("condition"):
            break
        chain.append(out[0]["target"])
    return rules, exact, chain


def _edges(r: Findings, name: str, raw: list[Any]) -> list[dict[str, Any]]:
    """The edges of node ``name`` that have a target; an ``activation_condition`` other
    than ``all`` and ``any`` is reported and read as AgentChat's default, ``all``."""
    out = []
    for j, e in enumerate(raw):
        if not isinstance(e, dict) or not isinstance(e.get("target"), str):
            continue
        condition = e.get("activation_condition", "all")
        if not (isinstance(condition, str) and condition in ("all", "any")):
            r.report(
                M001,
                f"the edge `{name}` -> `{e['target']}` has the `activation_condition` "
                f'{mm.shown(condition)}, neither "all" nor "any"; read as "all", '
                "AgentChat's default",
                f"config.graph.nodes.{name}.edges[{j}].activation_condition",
            )
            e = {**e, "activation_condition": "all"}
        out.append(e)
    return out


def _read_graph(r: Findings, cfg: dict[str, Any], participants: list[str]) -> _Graph | None:
    """Read ``config.graph``: its nodes, edges and start nodes. None (with an M001
    finding) when no rule can be written: no nodes, a node that is not a participant, an
    unknown ``default_start_node``, or no start node at all."""
    graph = cfg.get("graph")
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    if not isinstance(nodes, dict) or not nodes:
        r.report(M001, "the GraphFlow has no `graph.nodes`", "config.graph")
        return None
    incoming: dict[str, list[str]] = {name: [] for name in nodes}
    edges: dict[str, list[dict[str, Any]]] = {}
    for name, node in nodes.items():
        raw = node.get("edges") if isinstance(node, dict) else None
        edges[name] = _edges(r, name, raw if isinstance(raw, list) else [])
        for e in edges[name]:
            incoming.setdefault(e["target"], []).append(name)
    unknown = sorted(n_ for n_ in incoming if n_ not in participants)
    if unknown:
        r.report(
            M001, f"graph nodes {', '.join(unknown)} are not participants; left out", "config.graph"
        )
        return None
    start = graph.get("default_start_node") if isinstance(graph, dict) else None
    if isinstance(start, str) and start not in nodes:
        r.report(M001, f"`default_start_node` {start!r} is not a node of the graph", "config.graph")
        return None
    starts = [start] if isinstance(start, str) else [n_ for n_ in nodes if not incoming.get(n_)]
    if not starts:
        r.report(
            M001,
            "the graph has no start node (every node has a parent) and no `default_start_node`",
            "config.graph",
        )
        return None
    return _Graph(nodes, edges, incoming, starts)


def _edge_rules(r: Findings, name: str, out: list[dict[str, Any]]) -> tuple[list[mm.Rule], bool]:
    """The rules of node ``name``'s outgoing edges, and whether they are exact: keyword
    conditions become ``when from name and ...`` rules; of unconditional edges only the
    first is kept (AgentChat runs the others in parallel, which a flow cannot)."""
    path = f"config.graph.nodes.{name}.edges"
    plain = [e for e in out if not e.get("condition")]
    conditional = [e for e in out if e.get("condition")]
    rules, exact = _conditional_rules(r, name, out, conditional, path)
    negated = [cond_keywords(e["_flow_condition"]) for e in conditional if e.get("_flow_condition")]
    exclusive = (
        len(conditional) == 2
        and len(negated) == 1
        and negated[0] == [e["condition"] for e in conditional if isinstance(e["condition"], str)]
    )
    if len(conditional) > 1 and not exclusive:  # `"kw"` / `not "kw"` never both hold
        r.report(
            M002,
            f"`{name}`'s edges test keywords: when a message holds several of them, "
            "AgentChat runs several nodes, the flow only the first",
            path,
        )
    if plain and conditional:
        r.report(
            M001,
            f"`{name}` has both conditional and unconditional edges, which run in "
            "parallel in AgentChat; the unconditional ones were left out",
            path,
        )
        return rules, False
    if len(plain) > 1:
        r.report(
            M001,
            f"`{name}` fans out to {', '.join(e['target'] for e in plain)} in parallel; only "
            f"the edge to `{plain[0]['target']}` was kept",
            path,
        )
        exact = False
    if plain:
        rules.append(mm.Rule(mm.from_(name), mm.speaker_target(plain[0]["target"])))
    return rules, exact


def _conditional_rules(
    r: Findings,
    name: str,
    out: list[dict[str, Any]],
    conditional: list[dict[str, Any]],
    path: str,
) -> tuple[list[mm.Rule], bool]:
    """One rule per conditional edge of ``name``: a keyword (``"kw" in text``) or a
    condition a Python reader already expressed; any other condition is reported and its
    edge left out (then the rules are not exact)."""
    rules: list[mm.Rule] = []
    exact = True
    for e in conditional:
        cond = e["condition"]
        # a condition a Python reader already expressed (`"kw" not in m.to_model_text()`)
        flow_cond = e.get("_flow_condition")
        if flow_cond is not None:
            rules.append(
                mm.Rule(
                    n.AndCond((mm.from_(name), flow_cond), mm.S), mm.speaker_target(e["target"])
                )
            )
            continue
        if not isinstance(cond, str):
            r.report(
                M001,
                f"the condition of the edge `{name}` -> `{e['target']}` is not a keyword "
                "test; the edge was left out",
                f"{path}[{out.index(e)}].condition",
                help=f"port it by hand: `when from {name} and <condition> then {e['target']}` "
                "with a custom condition",
            )
            exact = False
            continue
        rules.append(
            mm.Rule(
                n.AndCond((mm.from_(name), mm.call_cond("text_contains", text=cond)), mm.S),
                mm.speaker_target(e["target"]),
            )
        )
    return rules, exact


def _report_activations(r: Findings, graph: _Graph) -> None:
    """Report each node that AgentChat runs only when all its parents have spoken: the
    flow cannot wait, it runs the node after any of them. autogen-agentchat >= 0.6
    activates a node per edge ``activation_group`` (default: the target) with that group's
    ``activation_condition``; older JSON has the node's ``activation``."""
    for name, parents in graph.incoming.items():
        groups: dict[tuple[str, Any], set[str]] = {}
        for src, out in graph.edges.items():
            for e in out:
                if e["target"] == name and isinstance(e.get("activation_group"), str):
                    key = (e["activation_group"], e.get("activation_condition", "all"))
                    groups.setdefault(key, set()).add(src)
        if groups:
            for (group, condition), sources in sorted(groups.items()):
                if condition == "all" and len(sources) > 1:
                    r.report(
                        M002,
                        f"`{name}` waits for all of {', '.join(sorted(sources))} in AgentChat "
                        f"(activation group `{group}`, `all`); in the flow it speaks after "
                        "any of them",
                        f"config.graph.nodes.{name}.activation",
                    )
            continue
        node = graph.nodes.get(name)
        activation = node.get("activation", "all") if isinstance(node, dict) else "all"
        if len(set(parents)) > 1 and activation == "all":
            r.report(
                M002,
                f"`{name}` waits for all of {', '.join(sorted(set(parents)))} in AgentChat "
                "(`activation: all`); in the flow it speaks after any of them",
                f"config.graph.nodes.{name}.activation",
            )


def graph_scenarios(
    user: str, chain: list[str], rules: list[mm.Rule], max_turns: int | None
) -> tuple[list[n.Scenario], list[tuple[str, ...]]]:
    """The scenarios of an exact GraphFlow (and the speaker order each encodes): its
    unconditional chain, and each keyword branch from the chain's last node."""
    found = [k for r_ in rules for k in cond_keywords(r_.cond)]
    branches = [
        (
            cond_keywords(r_.cond)[0],
            r_.target.speaker.value,
            any(isinstance(c, n.NotCond) for c in r_.cond.items),
        )
        for r_ in rules
        if isinstance(r_.cond, n.AndCond)
        and isinstance(r_.target, n.SpeakerTarget)
        and chain
        and mm.from_(chain[-1]) in r_.cond.items
        and len(cond_keywords(r_.cond)) == 1
    ]
    return _chain_scenarios(user, chain, max_turns, found, branches)


def _chain_scenarios(
    user: str,
    chain: list[str],
    max_turns: int | None,
    keywords: list[str],
    branches: list[tuple[str, str, bool]],
) -> tuple[list[n.Scenario], list[tuple[str, ...]]]:
    """The graph's unconditional path from the entry node to where no node is ready."""
    seq = [user, *chain]
    if len(set(chain)) != len(chain) or (max_turns is not None and len(seq) >= max_turns):
        return [], []  # a cycle, or the cap comes first: the path does not complete by itself
    texts = [f"{sp}, turn {i + 1}" for i, sp in enumerate(seq)]
    if any(k in t for k in keywords for t in texts):
        return [], []
    last = chain[-1]
    negated = [k for k, _, neg in branches if neg]
    scenarios: list[n.Scenario] = []
    sequences: list[tuple[str, ...]] = []
    if not negated:  # an edge `"kw" not in ...` fires on the path's keyword-free text
        items: list[n.ScenarioItem] = [mm.say(sp, t) for sp, t in zip(seq, texts, strict=True)]
        items.append(mm.expect_terminate("graph_complete"))
        scenarios.append(mm.scenario("the graph's path", items))
        sequences.append(tuple(seq))
    for keyword, target, neg in branches:
        if neg:
            if len(negated) != 1:
                continue  # every negated edge would fire on a keyword-free text
            text, title = texts[-1], f"`{last}` does not say {keyword}"
        else:
            text, title = f"{last}: {keyword}", f"`{last}` says {keyword}"
            if any(k in text for k in keywords if k != keyword) or any(
                k not in text for k in negated
            ):
                continue
        b_items: list[n.ScenarioItem] = [
            mm.say(sp, t) for sp, t in zip(seq[:-1], texts, strict=False)
        ]
        b_items += [mm.say(last, text), mm.expect_next(target)]
        scenarios.append(mm.scenario(title, b_items))
        sequences.append((*seq, target))
    return scenarios, sequences


__all__ = [
    "BUILDER_METHODS",
    "GraphReader",
    "chain_root",
    "cond_keywords",
    "graph_of",
    "graph_rules",
    "graph_scenarios",
    "keyword_callable",
]
