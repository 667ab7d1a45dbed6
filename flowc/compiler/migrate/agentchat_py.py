"""Microsoft AgentChat teams written in Python -> the component shape -> `.flow`.

The team constructor (``RoundRobinGroupChat``, ``SelectorGroupChat``, ``Swarm``,
``GraphFlow`` with its ``DiGraphBuilder``), its
participants (``AssistantAgent``, ``UserProxyAgent``, with ``tools`` and ``handoffs``) and
its termination condition (``A | B``) are read with ``ast`` and rebuilt as the dict that
``dump_component()`` would write, then translated by :mod:`.agentchat`. Findings point at
the Python source. What Python has and JSON lacks is used: ``TextMentionTermination``'s
``sources``; a ``selector_func`` / ``candidate_func`` is reported (M001) instead of being
silently lost as in JSON.

A ``GraphFlow``'s graph is rebuilt from the builder's calls as ``DiGraphBuilder`` of
autogen-agentchat 0.7.5 would store it (``add_node(agent, activation=)``,
``add_edge(src, dst, condition=, activation_group=, activation_condition=)`` with the
group defaulting to the target and the condition to ``"all"``, ``add_conditional_edges``,
``set_entry_point``), so ``dump_component()`` of the same team translates to the same
flow. Unlike JSON, a callable condition is visible: ``lambda m: "kw" in m.to_model_text()``
is exactly the keyword ``"kw"``; any other callable is reported (M001) and its edge left out.

>>> from flowc.compiler.migrate import migrate_source
>>> from flowc.source import SourceFile
>>> src = (
...     "a = AssistantAgent('a', model_client=c)\\n"
...     "b = AssistantAgent('b', model_client=c)\\n"
...     "g = DiGraphBuilder()\\n"
...     "g.add_node(a).add_node(b).add_edge(a, b)\\n"
...     "team = GraphFlow(g.get_participants(), graph=g.build(), max_turns=4)\\n")
>>> r = migrate_source(SourceFile("team.py", src))
>>> [line for line in r.text.splitlines() if line.startswith("when")]
['when from user then a', 'when from a    then b']
"""

from __future__ import annotations

import ast
from typing import Any

import attrs

from flowc.compiler.migrate import model as mm
from flowc.compiler.migrate.agentchat import ComponentResult, translate_component
from flowc.compiler.migrate.classic import NotRecognised, _Reader
from flowc.compiler.migrate.pyread import NotStatic, PyModule, callee, kwarg
from flowc.diagnostics import M001, M002, Diagnostic
from flowc.dsl import nodes as n
from flowc.source import SourceFile

TEAMS = ("RoundRobinGroupChat", "SelectorGroupChat", "Swarm", "GraphFlow")
BUILDER_METHODS = ("add_node", "add_edge", "add_conditional_edges", "set_entry_point")
AGENTS = ("AssistantAgent", "UserProxyAgent", "CodeExecutorAgent", "SocietyOfMindAgent")
TERMINATIONS = (
    "MaxMessageTermination", "TextMentionTermination", "SourceMatchTermination",
    "FunctionCallTermination", "HandoffTermination", "StopMessageTermination",
    "TokenUsageTermination", "TimeoutTermination", "ExternalTermination", "FunctionalTermination",
    "TextMessageTermination",
)
_PREFIX = {"team": "autogen_agentchat.teams.", "agent": "autogen_agentchat.agents.",
           "cond": "autogen_agentchat.conditions.", "base": "autogen_agentchat.base."}


class _Builder:
    def __init__(self, reader: _Reader) -> None:
        self.r = reader
        self.mod: PyModule = reader.mod
        self.where: dict[str, ast.AST] = {}

    def const(self, node: ast.expr | None, default: Any = None) -> Any:
        return self.mod.const_or(node, default)

    def participant(self, node: ast.expr, path: str) -> dict[str, Any] | None:
        call = self.mod.deref(node)
        self.where[path] = node
        if not isinstance(call, ast.Call):
            return None
        kind = callee(call)
        if kind in TEAMS:
            kind = f"{kind}"
        elif kind not in AGENTS:
            return None
        cfg: dict[str, Any] = {}
        name = self.const(kwarg(call, "name", 0))
        if isinstance(name, str):
            cfg["name"] = name
        for key in ("system_message", "description"):
            value = self.const(kwarg(call, key))
            if isinstance(value, str):
                cfg[key] = value
        tools = []
        for t in self.mod.elements(kwarg(call, "tools")) or []:
            if isinstance(t, ast.Name) and t.id in self.mod.functions:
                doc = self.mod.docstring(t.id)
                tools.append({"config": {"name": t.id, "description": doc or ""}})
        if tools:
            cfg["tools"] = tools
        handoffs: list[Any] = []
        for j, h in enumerate(self.mod.elements(kwarg(call, "handoffs")) or []):
            self.where[f"{path}.config.handoffs[{j}]"] = h
            value = self.mod.deref(h)
            if isinstance(value, ast.Call) and callee(value) == "Handoff":
                entry = {k: self.const(kwarg(value, k, i)) for i, k in
                         enumerate(("target", "description", "name", "message"))}
                handoffs.append({k: v for k, v in entry.items() if v is not None})
            else:
                handoffs.append(self.const(h))
        if handoffs:
            cfg["handoffs"] = handoffs
        return {"provider": _PREFIX["team" if kind in TEAMS else "agent"] + kind, "config": cfg}

    def termination(self, node: ast.expr | None, path: str) -> dict[str, Any] | None:
        if node is None:
            return None
        self.where[path] = node
        value = self.mod.deref(node)
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr | ast.BitAnd):
            kind = "OrTerminationCondition" if isinstance(value.op, ast.BitOr) else "AndTerminationCondition"
            parts: list[dict[str, Any] | None] = []
            for side in (value.left, value.right):
                sub = self.termination(side, f"{path}.config.conditions[{len(parts)}]")
                parts.append(sub)
            flat: list[dict[str, Any] | None] = []
            for p in parts:
                if p is not None and p.get("provider", "").endswith(kind):
                    flat.extend(p["config"]["conditions"])
                else:
                    flat.append(p)
            for i, part in enumerate(flat):
                if part is not None and "_node" in part:
                    self.where[f"{path}.config.conditions[{i}]"] = part["_node"]
            return {"provider": _PREFIX["base"] + kind,
                    "config": {"conditions": [p if p is not None else {} for p in flat]}}
        if not isinstance(value, ast.Call) or callee(value) not in TERMINATIONS:
            return {"provider": "", "config": {}, "_node": node}
        kind = callee(value)
        keys = {
            "MaxMessageTermination": ("max_messages",),
            "TextMentionTermination": ("text", "sources"),
            "SourceMatchTermination": ("sources",),
            "FunctionCallTermination": ("function_name",),
            "HandoffTermination": ("target",),
        }.get(kind, ())
        cfg = {k: self.const(kwarg(value, k, i)) for i, k in enumerate(keys)}
        sources = kwarg(value, "sources", 1) if kind == "TextMentionTermination" else None
        if sources is not None and self.mod.const_or(sources, ...) is ...:
            self.r.report(M002, "TextMentionTermination's `sources` cannot be read statically: the "
                                "flow ends on the text from any speaker", sources)
        return {"provider": _PREFIX["cond"] + kind,
                "config": {k: v for k, v in cfg.items() if v is not None}, "_node": node}


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k != "_node"}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _chain_root(mod: PyModule, node: ast.expr) -> ast.expr:
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


class _Graph:
    """The calls made on one ``DiGraphBuilder()``, read into ``graph`` of the component JSON."""

    def __init__(self, b: _Builder, builder: ast.Call) -> None:
        self.b = b
        self.mod = b.mod
        self.builder = builder
        self.nodes: dict[str, dict[str, Any]] = {}
        self.agents: dict[str, ast.expr] = {}  # node name -> the agent expression
        self.start: str | None = None
        self.ok = True

    def owns(self, call: ast.Call) -> bool:
        return _chain_root(self.mod, call) is self.builder

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
        self.b.r.report(M001, message, node, help="write the graph with literal agents and names, "
                                                  "or port it by hand as `when from X then Y` rules")
        self.ok = False

    def read(self) -> None:
        calls = [c for c in self.mod.calls() if isinstance(c.func, ast.Attribute)
                 and c.func.attr in BUILDER_METHODS and self.owns(c)]
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
            self.b.where[f"config.graph.nodes.{name}.activation"] = _at(call)

    def _edge(self, call: ast.Call, source: str, target: str, condition: ast.expr | None) -> None:
        edge: dict[str, Any] = {"target": target}
        path = f"config.graph.nodes.{source}.edges"
        at = _at(call)
        self.b.where.setdefault(path, at)
        index = len(self.nodes[source]["edges"])
        self.b.where[f"{path}[{index}]"] = at
        if condition is not None:
            value = self.mod.const_or(condition, ...)
            if value is ...:
                found = _keyword_callable(self.mod, condition)
                if found is not None and not found[1]:
                    value = found[0]  # exactly the string condition
                else:
                    # not a keyword test: the JSON translation reports it and leaves the edge
                    # out, unless it is a negated keyword, which a flow says directly
                    value = {"callable": ast.unparse(condition)[:60]}
                    self.b.where[f"{path}[{index}].condition"] = condition
                    if found is not None:
                        edge["_flow_condition"] = n.NotCond(
                            mm.call_cond("text_contains", text=found[0]), mm.S)
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
            self.fail(f"the edge {source} -> {target} names a node that was not added first "
                      "(DiGraphBuilder raises ValueError)", call)
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


def _keyword_callable(mod: PyModule, node: ast.expr) -> tuple[str, bool] | None:
    """``lambda m: "kw" in m.to_model_text()`` (or a ``def`` returning that) -> ``("kw", False)``:
    exactly what ``DiGraphEdge.check_condition`` does for the string condition ``"kw"``;
    ``"kw" not in m.to_model_text()`` -> ``("kw", True)``; anything else -> None."""
    node = mod.deref(node)
    param: str | None = None
    body: ast.expr | None = None
    if isinstance(node, ast.Lambda) and len(node.args.args) == 1:
        param, body = node.args.args[0].arg, node.body
    elif isinstance(node, ast.Name) and node.id in mod.functions:
        fn = mod.functions[node.id]
        stmts = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(fn.args.args) == 1 and len(stmts) == 1 and isinstance(stmts[0], ast.Return):
            param, body = fn.args.args[0].arg, stmts[0].value
    if param is None or not isinstance(body, ast.Compare) or len(body.ops) != 1:
        return None
    keyword = body.left
    text = body.comparators[0]
    if not (isinstance(body.ops[0], ast.In | ast.NotIn) and isinstance(keyword, ast.Constant)
            and isinstance(keyword.value, str) and keyword.value):
        return None
    if (isinstance(text, ast.Call) and not text.args and not text.keywords
            and isinstance(text.func, ast.Attribute) and text.func.attr == "to_model_text"
            and isinstance(text.func.value, ast.Name) and text.func.value.id == param):
        return keyword.value, isinstance(body.ops[0], ast.NotIn)
    return None


def _graph_of(b: _Builder, team: ast.Call) -> _Graph | None:
    """The ``DiGraphBuilder`` behind ``GraphFlow(graph=builder.build())``."""
    node = kwarg(team, "graph", 1)
    if node is None:
        b.r.report(M001, "the GraphFlow has no `graph=`", team)
        return None
    b.where["config.graph"] = node
    built = b.mod.deref(node)
    if isinstance(built, ast.Call) and callee(built) == "build" and isinstance(built.func, ast.Attribute):
        root = _chain_root(b.mod, built.func.value)
        if isinstance(root, ast.Call) and callee(root) == "DiGraphBuilder":
            return _Graph(b, root)
    b.r.report(M001, "the graph is not built with a `DiGraphBuilder()` of this file; it cannot be "
                     "read statically", node,
               help="build it with DiGraphBuilder().add_node(...).add_edge(...).build()")
    return None


def python_component(source: SourceFile) -> dict[str, Any]:
    """The component JSON that the last AgentChat team of a Python file is read as: what
    ``team.dump_component()`` writes, as far as migrate reads it (no model clients).

    Raises ``SyntaxError`` and :class:`NotRecognised` as :func:`translate_classic` does.

    >>> src = ("a = AssistantAgent('a')\\nb = AssistantAgent('b')\\n"
    ...        "g = DiGraphBuilder().add_node(a).add_node(b).add_edge(a, b, condition='go')\\n"
    ...        "t = GraphFlow([a, b], graph=g.build())\\n")
    >>> python_component(SourceFile("t.py", src))["config"]["graph"]["nodes"]["a"]["edges"]
    [{'target': 'b', 'condition': 'go', 'activation_group': 'b', 'activation_condition': 'all'}]
    """
    reader = _Reader(PyModule.parse(source.name, source.text))
    teams = [c for c in reader.mod.calls() if callee(c) in TEAMS]
    if not teams:
        reader.report(M001, "no AgentChat team in this file", None)
        raise NotRecognised(reader.findings)
    return _read_team(reader, teams[-1])[0]


def _read_team(
    reader: _Reader, team: ast.Call
) -> tuple[dict[str, Any], _Builder, _Graph | None, dict[str, Any] | None]:
    b = _Builder(reader)
    kind = callee(team)
    participants = []
    graph: _Graph | None = None
    if kind == "GraphFlow":
        graph = _graph_of(b, team)
        if graph is None:
            raise NotRecognised(reader.findings)
        graph.read()
    parts_node = kwarg(team, "participants", 0)
    elements = reader.mod.elements(parts_node)
    call = reader.mod.deref(parts_node) if parts_node is not None else None
    if (graph is not None and isinstance(call, ast.Call) and callee(call) == "get_participants"
            and isinstance(call.func, ast.Attribute) and graph.owns(call)):
        elements = list(graph.agents.values())
    if elements is None:
        reader.report(M001, "the team's participants cannot be read statically", team)
        raise NotRecognised(reader.findings)
    for i, e in enumerate(elements):
        p = b.participant(e, f"config.participants[{i}]")
        if p is None:
            reader.report(M001, "this participant is not an agent created in this file", e)
            raise NotRecognised(reader.findings)
        participants.append(p)
    cfg: dict[str, Any] = {"participants": participants}
    if graph is not None:
        cfg["graph"] = graph.component()
    term = b.termination(kwarg(team, "termination_condition"), "config.termination_condition")
    if term is not None:
        cfg["termination_condition"] = term
    for key in ("max_turns", "allow_repeated_speaker", "selector_prompt", "name", "description"):
        node = kwarg(team, key)
        if node is not None:
            try:
                cfg[key] = reader.mod.const(node)
            except NotStatic:
                reader.report(M001, f"`{key}` cannot be read statically; left out", node)
    for key in ("selector_func", "candidate_func"):
        node = kwarg(team, key)
        if node is not None and reader.mod.const_or(node, "?") is not None:
            reader.report(M001, f"`{key}` is Python code that picks speakers; it was left out",
                          node, help="turn its `if` branches into `when from X then Y` rules")
    data = {"provider": _PREFIX["team"] + kind, "component_type": "team", "config": _strip(cfg)}
    return data, b, graph, term


def translate_agentchat_python(reader: _Reader, team: ast.Call) -> ComponentResult:
    """Translate one AgentChat team constructor call of a Python file."""
    data, b, graph, term = _read_team(reader, team)
    result = translate_component(data, reader.mod.source.name)
    findings = list(reader.findings)
    for d in result.findings:
        if "`sources` is never written" in d.message:
            continue  # Python shows `sources` (or its absence): _apply_sources keeps it
        if "Python callable condition is written to JSON" in d.message and graph is not None:
            continue  # the Python source shows every condition
        at = _closest(b.where, d.json_path or "")
        findings.append(Diagnostic(d.code, d.message, d.filename,
                                   reader.mod.span(at) if at is not None else reader.mod.span(team),
                                   d.notes, d.help))
    migration = result.migration
    sequences = result.sequences
    if term is not None and _has_sources(term):
        migration = _apply_sources(migration, term)
        sequences = sequences[: len(migration.scenarios)]
    stem = reader.mod.source.name.rsplit("/", 1)[-1]
    migration = attrs.evolve(migration, source_kind=f"an AgentChat team in Python ({stem})")
    return ComponentResult(migration, tuple(findings), sequences)


def _closest(where: dict[str, ast.AST], path: str) -> ast.AST | None:
    while path:
        if path in where:
            return where[path]
        path = path.rsplit(".", 1)[0] if "." in path else ""
    return None


def _text_conditions(term: dict[str, Any]) -> list[dict[str, Any]]:
    if term.get("provider", "").endswith("OrTerminationCondition"):
        return [c for sub in term["config"]["conditions"] for c in _text_conditions(sub)]
    if term.get("provider", "").endswith("TextMentionTermination"):
        return [term]
    return []


def _has_sources(term: dict[str, Any] | None) -> bool:
    return term is not None and any(c["config"].get("sources") for c in _text_conditions(term))


def _apply_sources(mig: mm.Migration, term: dict[str, Any]) -> mm.Migration:
    """``TextMentionTermination(text, sources=[...])``: only those speakers end the run."""
    sources = {c["config"]["text"]: c["config"].get("sources") for c in _text_conditions(term)}
    speakers = {s.name for s in mig.speakers}
    rules = []
    for r in mig.rules:
        cond = r.cond
        if isinstance(cond, n.CallCond) and cond.name.value == "text_contains":
            text = cond.args[0].value.value
            srcs = [x for x in sources.get(text) or [] if x in speakers]
            if srcs:
                cond = n.AndCond((mm.from_(*srcs), cond), mm.S)
        rules.append(mm.Rule(cond, r.target, r.priority, r.comment))
    scenarios = tuple(sc for sc in mig.scenarios if sc.title.value != "the mention ends the run")
    return attrs.evolve(mig, rules=tuple(rules), scenarios=scenarios)
