"""An AgentChat ``GraphFlow``'s graph, read from the ``DiGraphBuilder`` calls of a Python file.

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

import flowc.migrate.model as mm
from flowc.diagnostics import M001
from flowc.dsl import nodes as n
from flowc.migrate.agents import AgentReader
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
            name = self.mod.const_or(kwarg(call, "name", 0), None)
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


__all__ = ["BUILDER_METHODS", "GraphReader", "chain_root", "graph_of", "keyword_callable"]
