"""Microsoft AgentChat teams written in Python -> the component shape -> `.flow`.

The team constructor (``RoundRobinGroupChat``, ``SelectorGroupChat``, ``Swarm``,
``GraphFlow`` with its ``DiGraphBuilder``), its
participants (``AssistantAgent``, ``UserProxyAgent``, with ``tools`` and ``handoffs``) and
its termination condition (``A | B``) are read with ``ast`` and rebuilt as the dict that
``dump_component()`` would write, then translated by :mod:`.agentchat`. Findings point at
the Python source. What Python has and JSON lacks is used: ``TextMentionTermination``'s
``sources``, and a ``SelectorGroupChat``'s ``selector_func`` / ``candidate_func``, read
statically (never imported or run) and lowered to rules where the body is recognisable
(:class:`_SelectorFuncs`); the rest is reported (M001) instead of being silently lost as in
JSON.

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
from flowc.compiler.migrate.selectfn import Outcome, Unsupported, lower_selection
from flowc.compiler.migrate.textpred import evaluate
from flowc.diagnostics import M001, M002, M003, Diagnostic
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
            "TextMessageTermination": ("source",),
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
    if callee(team) == "SelectorGroupChat":
        findings = [d for d in findings if JSON_ONLY_SELECTOR not in d.message]
        migration, sequences = _SelectorFuncs(reader, team, data, migration, findings).apply(sequences)
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


#: what the JSON translation says about callables it cannot see (Python shows them)
#: a lowered path: source, guards, the names it returns (None: the model chooses), a witness text
_Lowered = tuple[str, tuple[n.Cond, ...], tuple[str, ...] | None, str | None]
JSON_ONLY_SELECTOR = "is never written to component JSON: if the Python team had one"
_SELECTOR_MSG = "model-based speaker selection became the selector speaker"
_REPEAT_MSG = "`allow_repeated_speaker: false` is advice to the selector"


class _SelectorFuncs:
    """``SelectorGroupChat(selector_func=, candidate_func=)`` -> rules.

    autogen-agentchat 0.7.5 (``SelectorGroupChatManager.select_speaker``) calls
    ``selector_func(thread)`` before every turn, the first included (the thread then holds
    only the task, source ``"user"``); a name it returns speaks next, without the model and
    without the ``allow_repeated_speaker`` filter (so it may pick the previous speaker), and
    it does not update the manager's "previous speaker". ``None`` lets the model choose,
    among ``candidate_func(thread)`` when given (exactly one candidate: no model call) or
    among all participants but the previous model-chosen speaker when
    ``allow_repeated_speaker=False``.

    Each recognised outcome becomes ``when from S [and tests] then X``; a ``None`` becomes
    ``then selector`` (the selector speaker of the JSON translation, which stays for those
    turns only); when no path returns ``None`` the selector is dropped and the routing is
    exact.
    """

    def __init__(self, reader: _Reader, team: ast.Call, data: dict[str, Any], mig: mm.Migration,
                 findings: list[Diagnostic]) -> None:
        self.r = reader
        self.mod = reader.mod
        self.team = team
        self.cfg: dict[str, Any] = data["config"]
        self.mig = mig
        self.findings = findings
        self.participants = [p["config"]["name"] for p in self.cfg["participants"]]
        self.user = mig.start
        self.selector = "selector" if "selector" not in self.participants else "team_selector"
        self.sources = [self.user, *self.participants]
        self.uses_len = False

    # ── reading ──

    def agent_name(self, e: ast.expr) -> str | None:
        """``"x"`` or ``x_agent.name`` -> a speaker (AgentChat's task source ``"user"`` is
        the synthesized task sender)."""
        value = self.mod.const_or(e, None)
        name: str | None = value if isinstance(value, str) else None
        if name is None and isinstance(e, ast.Attribute) and e.attr == "name":
            call = self.mod.deref(e.value)
            if isinstance(call, ast.Call) and callee(call) in AGENTS:
                got = self.mod.const_or(kwarg(call, "name", 0), None)
                name = got if isinstance(got, str) else None
        if name == "user" and "user" not in self.participants:
            return self.user
        return name if name in self.participants else None

    def function(self, key: str) -> tuple[ast.expr, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda] | None:
        node = kwarg(self.team, key)
        if node is None or self.mod.const_or(node, "?") is None:
            return None
        value = self.mod.deref(node)
        fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None = None
        if isinstance(value, ast.Lambda):
            fn = value
        elif isinstance(value, ast.Name) and value.id in self.mod.functions:
            fn = self.mod.functions[value.id]
        if fn is None:
            self.report_left_out(key, node, "it is not a `def` or a `lambda` of this file")
            return None
        return node, fn

    def report_left_out(self, key: str, at: ast.AST, why: str) -> None:
        instead = ("the selector speaker picks every turn instead" if key == "selector_func"
                   else "the selector chooses among all participants instead")
        self.findings.append(Diagnostic(
            M001, f"`{key}` could not be lowered to rules ({why}); {instead}",
            self.mod.source.name, self.mod.span(at),
            help="write it as an if/elif chain on `messages[-1].source` whose branches return a "
                 "participant's name (or None), or write the `when from X then Y` rules by hand"))

    def lower(self, key: str, fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
              ) -> list[tuple[Outcome, tuple[str, ...] | None]] | None:
        """Outcomes with the names they return (None: the model chooses); None if unrecognised."""
        label = fn.name if not isinstance(fn, ast.Lambda) else "lambda"
        try:
            outcomes = lower_selection(fn, self.sources, self.agent_name, dialect="agentchat")
            out: list[tuple[Outcome, tuple[str, ...] | None]] = []
            for o in outcomes:
                out.append((o, self.returned(key, o)))
        except Unsupported as err:
            self.report_left_out(key, err.node, f"`{label}`: {err.what}")
            return None
        self.uses_len = self.uses_len or any(
            "turn_count_at_most" in repr(g) for o, _ in out for g in o.guards)
        return out

    def returned(self, key: str, o: Outcome) -> tuple[str, ...] | None:
        node = o.returned
        if key == "selector_func":
            if node is None:
                return None
            name = self.agent_name(node)
            if name is None or name == self.user:
                raise Unsupported(node, self.not_a_name(node))
            return (name,)
        elements = self.mod.elements(node) if node is not None else None
        if not elements:
            raise Unsupported(node or self.team, "a path that returns no candidate list "
                                                 "(AgentChat raises ValueError)")
        names = [self.agent_name(e) for e in elements]
        if any(x is None or x == self.user for x in names):
            raise Unsupported(node or self.team, "a candidate that is not a participant's name")
        return tuple(dict.fromkeys(x for x in names if x is not None))

    def not_a_name(self, node: ast.expr) -> str:
        if isinstance(self.mod.const_or(node, None), str):
            return f"`{ast.unparse(node)}` is not a participant's name (AgentChat raises ValueError)"
        text = ast.unparse(node)
        why = f"`{text}` is computed at run time"
        if "[-2]" in text:
            why += "; the speaker before the last is history a flow's state does not keep"
        return why

    # ── writing ──

    def apply(self, sequences: tuple[tuple[str, ...], ...]) -> tuple[mm.Migration, tuple[tuple[str, ...], ...]]:
        sel = self.function("selector_func")
        cand = self.function("candidate_func")
        sel_out = self.lower("selector_func", sel[1]) if sel is not None else None
        cand_out = self.lower("candidate_func", cand[1]) if cand is not None else None
        if sel_out is None and cand_out is None:
            return self.mig, sequences
        if sel_out is None:  # the model (with candidates) picks after every turn
            sel_out = [(Outcome(s, (), None), None) for s in self.sources]
        # (source, guards, candidates): one candidate speaks next; several: the selector
        lowered: list[_Lowered] = []
        for o, names in sel_out:
            if names is not None or cand_out is None:
                lowered.append((o.source, o.guards, names, o.witness))
                continue
            for c, cnames in cand_out:
                if c.source == o.source:
                    both = o.guards + c.guards
                    lowered.append((o.source, both, cnames, c.witness if both == c.guards else None))
        advisory = [x for x in lowered if x[2] is None or len(x[2]) > 1]
        rules = self.rules(lowered)
        mig = self.mig
        kept: list[mm.Rule] = []
        for rule in mig.rules:
            if (isinstance(rule.target, n.SpeakerTarget) and rule.target.speaker.value == self.selector
                    and isinstance(rule.cond, n.FromCond)):
                kept += rules  # the selector no longer speaks after every turn
            elif not advisory and self.selector_only(rule):
                continue
            else:
                kept.append(rule)
        notes = list(mig.notes)
        what = " and ".join(f"{k}={self.label(f[1])}" for k, f in (
            ("selector_func", sel), ("candidate_func", cand)) if f is not None)
        speakers = list(mig.speakers)
        max_turns = mig.max_turns
        max_comment = mig.max_turns_comment
        if advisory:
            self.rewrite_selector_finding(sel is not None, cand_out is not None)
            if max_turns is not None:
                max_turns = (max_turns + 1) // 2
                max_comment = ("AgentChat's cap; the selector's turns count too (it speaks only "
                               "where the functions leave the choice to the model): raise it if "
                               "runs end early")
            speakers = self.restrict_selector(speakers, advisory, cand_out is not None)
            if cand_out is not None:
                kept = [r for r in kept if not self.selector_only(r) or self.transfer_kept(r, speakers)]
        else:
            speakers = [s for s in speakers if s.name != self.selector]
            if max_turns is not None:
                max_turns = (max_turns + 1) // 2
            self.drop_selector_findings()
        exact = not advisory and not any(d.code is M001 for d in self.findings)
        if exact and self.uses_len and any(s.tools for s in speakers):
            exact = False
            self.findings.append(Diagnostic(
                M002, "`len(messages)` also counts AgentChat's tool-call events; the flow counts "
                      "turns", self.mod.source.name, self.mod.span(self.team)))
        scenarios: list[n.Scenario] = []
        new_sequences: list[tuple[str, ...]] = []
        if exact:
            scenarios, new_sequences = self.scenarios(lowered, kept, max_turns)
            exact = bool(scenarios)
        if advisory and not any(d.code is M001 for d in self.findings):
            scenarios = self.selector_scenario(lowered, kept, speakers, max_turns)
        notes = [f"SelectorGroupChat with {what} (lowered to rules)"
                 + (", reproduced exactly" if exact else "") + ".", *notes[1:]]
        mig = attrs.evolve(mig, rules=tuple(kept), speakers=tuple(speakers), max_turns=max_turns,
                           max_turns_comment=max_comment, notes=tuple(notes),
                           scenarios=tuple(scenarios) if exact or advisory else mig.scenarios)
        return mig, (tuple(new_sequences) if exact else sequences)

    def label(self, fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> str:
        return "a lambda" if isinstance(fn, ast.Lambda) else fn.name

    def target(self, names: tuple[str, ...] | None) -> n.Target:
        if names is not None and len(names) == 1:
            return mm.speaker_target(names[0])
        return mm.speaker_target(self.selector)

    def rules(self, lowered: list[_Lowered]) -> list[mm.Rule]:
        """Guarded outcomes in order, then each source's final outcome grouped by target
        (rules of different sources never overlap: only each source's order matters)."""
        rules: list[mm.Rule] = []
        finals: dict[str, tuple[n.Target, list[str], str | None]] = {}
        for src, guards, names, _ in lowered:
            target = self.target(names)
            if guards:
                rules.append(mm.Rule(n.AndCond((mm.from_(src), *guards), mm.S), target))
                continue
            comment = ("the model chooses (selector_func returned None)" if names is None
                       else "the model chooses among candidate_func's list" if len(names) > 1 else None)
            finals.setdefault(repr(target), (target, [], comment))[1].append(src)
        for target, members, comment in finals.values():
            rules.append(mm.Rule(mm.from_(*members), target, 0, comment))
        return rules

    def selector_only(self, rule: mm.Rule) -> bool:
        """The JSON translation's selector rules: its transfer tools and its `from selector`."""
        if isinstance(rule.cond, n.ToolCond) and isinstance(rule.target, n.SpeakerTarget):
            return rule.cond.tool.value == f"transfer_to_{rule.target.speaker.value}"
        return isinstance(rule.cond, n.FromCond) and [s.value for s in rule.cond.speakers] == [self.selector]

    def transfer_kept(self, rule: mm.Rule, speakers: list[mm.Speaker]) -> bool:
        if not isinstance(rule.cond, n.ToolCond):
            return True
        tools = {t.name for s in speakers if s.name == self.selector for t in s.tools}
        return rule.cond.tool.value in tools

    def restrict_selector(self, speakers: list[mm.Speaker],
                          advisory: list[_Lowered],
                          with_candidates: bool) -> list[mm.Speaker]:
        if not with_candidates:
            return speakers
        union = [p for p in self.participants if any(p in (x[2] or ()) for x in advisory)]
        per_source = "; ".join(
            f"after {src}: {', '.join(names)}" for src, _, names, _ in advisory if names is not None)
        self.findings.append(Diagnostic(
            M002, "`candidate_func`'s lists became advice to the selector speaker (its role and its "
                  f"transfer tools): {per_source}; the flow does not stop it from picking another "
                  "of its tools", self.mod.source.name, self.mod.span(kwarg(self.team, "candidate_func")
                                                                      or self.team)))
        out = []
        for s in speakers:
            if s.name == self.selector:
                s = attrs.evolve(s, role=f"Candidates (candidate_func): {per_source}. {s.role or ''}",
                                 tools=tuple(t for t in s.tools if t.name.removeprefix("transfer_to_")
                                             in union))
            out.append(s)
        return out

    def rewrite_selector_finding(self, has_selector_func: bool, has_candidates: bool) -> None:
        for i, d in enumerate(self.findings):
            if _SELECTOR_MSG in d.message and has_selector_func:
                at = kwarg(self.team, "selector_func")
                self.findings[i] = attrs.evolve(d, span=self.mod.span(at or self.team), message=(
                    f"where `selector_func` returns None the model chooses: those turns go to the "
                    f"selector speaker `{self.selector}` with one `transfer_to_<agent>` tool per "
                    "candidate; its turns count toward max_turns"))
            elif _REPEAT_MSG in d.message:
                at = kwarg(self.team, "allow_repeated_speaker")
                self.findings[i] = attrs.evolve(d, span=self.mod.span(at or self.team), message=(
                    d.message + "; AgentChat excludes the speaker the model chose last, which "
                    "`selector_func` picks do not update"))

    def drop_selector_findings(self) -> None:
        repeat = next((d for d in self.findings if _REPEAT_MSG in d.message), None)
        self.findings[:] = [d for d in self.findings
                            if _SELECTOR_MSG not in d.message and _REPEAT_MSG not in d.message
                            and not (d.code is M003 and "configures the selector model" in d.message)]
        if repeat is not None:
            at = kwarg(self.team, "allow_repeated_speaker")
            self.findings.append(attrs.evolve(repeat, code=M003, span=self.mod.span(at or self.team), message=(
                "`allow_repeated_speaker=False` has no effect: `selector_func` picks every speaker "
                "and AgentChat does not filter its picks; dropped")))

    def kickoff(self) -> str | None:
        for c in self.mod.calls():
            if callee(c) in ("run", "run_stream"):
                task = self.mod.const_or(kwarg(c, "task", 0), None)
                if isinstance(task, str) and task:
                    return task
        return None

    def scenarios(self, lowered: list[_Lowered],
                  rules: list[mm.Rule], max_turns: int | None,
                  ) -> tuple[list[n.Scenario], list[tuple[str, ...]]]:
        from flowc.compiler.migrate.classic import Next, _guard_scenarios, _scenarios

        term = [r for r in rules if r.priority < 0]
        avoid: list[n.Cond] = [r.cond for r in term if isinstance(r.cond, n.CallCond)]
        defaults: dict[str, Next] = {}
        guarded: list[tuple[str, tuple[n.Cond, ...], Next, str | None]] = []
        for src, guards, names, witness in lowered:
            assert names is not None and len(names) == 1
            if not guards:
                defaults.setdefault(src, Next("agent", names[0]))
            else:
                avoid += list(guards)
                guarded.append((src, guards, Next("agent", names[0]), witness))
        if any(evaluate(c, "") is None for c in avoid):
            return [], []
        cap = max_turns if max_turns is not None else 10**6
        kickoff = self.kickoff()
        found = _scenarios(self.user, defaults, cap, None, None, kickoff, avoid)
        found = [(t.replace("classic", "AgentChat"), seq, items) for t, seq, items in found]
        found += _guard_scenarios(self.user, defaults, guarded, cap, avoid, kickoff)
        mention = [r.cond for r in term if isinstance(r.cond, n.CallCond)
                   and r.cond.name.value == "text_contains" and isinstance(r.target, n.TerminateTarget)]
        first = defaults[self.user].agent if self.user in defaults else None
        if mention and first is not None and cap >= 2:
            text = f"All done. {mention[0].args[0].value.value}"
            if all(evaluate(g, text) is False for g in avoid if g is not mention[0]):
                start = kickoff if kickoff and all(evaluate(c, kickoff) is False for c in avoid) else "the task"
                found.append(("the mention ends the run", (self.user, first), [
                    mm.say(self.user, start), mm.say(first, text), mm.expect_terminate("text_mention")]))
        return [mm.scenario(t, items) for t, _, items in found], [seq for _, seq, _ in found]

    def selector_scenario(self, lowered: list[_Lowered], rules: list[mm.Rule],
                          speakers: list[mm.Speaker], max_turns: int | None) -> list[n.Scenario]:
        """The translated behaviour where the model chooses (not a claim about AgentChat: the
        model's choice is scripted): the functions' own picks up to the first model turn,
        then the selector speaker transfers to its first candidate."""
        from flowc.compiler.migrate.classic import _NoText, _turn_text

        finals = {src: names for src, guards, names, _ in lowered if not guards}
        avoid = [r.cond for r in rules if r.priority < 0] + [g for x in lowered for g in x[1]]
        if any(evaluate(c, "") is None for c in avoid):
            return []
        seq = [self.user]
        while seq[-1] in finals and (names := finals[seq[-1]]) is not None and len(names) == 1:
            if len(seq) >= 6:
                return []
            seq.append(names[0])
        tools = [t.name for s in speakers if s.name == self.selector for t in s.tools]
        if seq[-1] not in finals or not tools or (max_turns is not None and max_turns < len(seq) + 2):
            return []
        pick = tools[0].removeprefix("transfer_to_")
        try:
            items: list[n.ScenarioItem] = [mm.say(sp, _turn_text(sp, i + 1, avoid)) for i, sp in enumerate(seq)]
        except _NoText:
            return []
        kickoff = self.kickoff()
        if kickoff and all(evaluate(c, kickoff) is False for c in avoid):
            items[0] = mm.say(self.user, kickoff)
        items += [mm.expect_next(self.selector), mm.calls(self.selector, tools[0]), mm.expect_next(pick)]
        return [mm.scenario("the selector speaker picks where the functions leave the choice", items)]
