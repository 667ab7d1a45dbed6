"""Microsoft AgentChat teams written in Python -> the component shape -> `.flow`.

The team constructor (``RoundRobinGroupChat``, ``SelectorGroupChat``, ``Swarm``,
``GraphFlow`` with its ``DiGraphBuilder``), its
participants (``AssistantAgent``, ``UserProxyAgent``, with ``tools`` and ``handoffs``) and
its termination condition (``A | B``) are read with ``ast`` and rebuilt as the dict that
``dump_component()`` would write, then translated by :mod:`.agentchat`. Findings point at
the Python source. What Python has and JSON lacks is used: ``TextMentionTermination``'s
``sources``, and a ``SelectorGroupChat``'s ``selector_func`` / ``candidate_func``, read
statically (never imported or run) and lowered to rules where the body is recognisable
(:mod:`.agentchat_selector`); the rest is reported (M001) instead of being silently lost as in
JSON.

A ``GraphFlow``'s graph is rebuilt from the builder's calls (:mod:`.agentchat_graph`) as ``DiGraphBuilder`` of
autogen-agentchat 0.7.5 would store it (``add_node(agent, activation=)``,
``add_edge(src, dst, condition=, activation_group=, activation_condition=)`` with the
group defaulting to the target and the condition to ``"all"``, ``add_conditional_edges``,
``set_entry_point``), so ``dump_component()`` of the same team translates to the same
flow. Unlike JSON, a callable condition is visible: ``lambda m: "kw" in m.to_model_text()``
is exactly the keyword ``"kw"``; any other callable is reported (M001) and its edge left out.

>>> from flowc.migrate import migrate_source
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

import flowc.migrate.model as mm
from flowc.diagnostics import M001, M002, Diagnostic
from flowc.dsl import nodes as n
from flowc.migrate.agentchat import AGENTS, TEAMS, translate_component
from flowc.migrate.agentchat_graph import GraphReader, graph_of
from flowc.migrate.agentchat_selector import JSON_ONLY_SELECTOR, SelectorFunctions
from flowc.migrate.agents import AgentReader
from flowc.migrate.pyread import NotStatic, PyModule, callee, kwarg
from flowc.source import SourceFile

TERMINATIONS = (
    "MaxMessageTermination",
    "TextMentionTermination",
    "SourceMatchTermination",
    "FunctionCallTermination",
    "HandoffTermination",
    "StopMessageTermination",
    "TokenUsageTermination",
    "TimeoutTermination",
    "ExternalTermination",
    "FunctionalTermination",
    "TextMessageTermination",
)
_PREFIX = {
    "team": "autogen_agentchat.teams.",
    "agent": "autogen_agentchat.agents.",
    "cond": "autogen_agentchat.conditions.",
    "base": "autogen_agentchat.base.",
}


class _Builder:
    def __init__(self, reader: AgentReader) -> None:
        self.r = reader
        self.mod: PyModule = reader.mod
        self.where: dict[str, ast.AST] = {}
        #: participants that are not agents of this file, taking part under their variable
        self.adopted: set[str] = set()

    def const(self, node: ast.expr | None, default: Any = None) -> Any:
        return self.mod.const_or(node, default)

    def participant(self, node: ast.expr, path: str) -> dict[str, Any] | None:
        call = self.mod.deref(node)
        self.where[path] = node
        if not isinstance(call, ast.Call):
            return None
        kind = callee(call)
        if kind not in TEAMS and kind not in AGENTS and not kind[:1].isupper():
            return None  # a function's result: not an object built here
        cfg: dict[str, Any] = {}
        name = self.mod.const_name_or(kwarg(call, "name", 0), None)
        if isinstance(name, str):
            cfg["name"] = name
        for key in ("system_message", "description"):
            value = self.const(kwarg(call, key))
            if isinstance(value, str):
                cfg[key] = value
        tools = self.tools(call, kwarg(call, "tools"), "tools")
        workbench = kwarg(call, "workbench")
        if workbench is not None:
            tools += self.workbench(call, workbench)
        if tools:
            cfg["tools"] = tools
        handoffs: list[Any] = []
        for j, h in enumerate(self.mod.elements(kwarg(call, "handoffs")) or []):
            self.where[f"{path}.config.handoffs[{j}]"] = h
            value = self.mod.deref(h)
            if isinstance(value, ast.Call) and callee(value) == "Handoff":
                entry = {
                    k: self.const(kwarg(value, k, i))
                    for i, k in enumerate(("target", "description", "name", "message"))
                }
                handoffs.append({k: v for k, v in entry.items() if v is not None})
            else:
                handoffs.append(self.const(h))
        if handoffs:
            cfg["handoffs"] = handoffs
        prefix = _PREFIX["team"] if kind in TEAMS else _PREFIX["agent"] if kind in AGENTS else ""
        return {"provider": prefix + kind, "config": cfg}

    def tools(self, owner: ast.Call, node: ast.expr | None, what: str) -> list[dict[str, Any]]:
        """An agent's ``tools=[...]`` (or a workbench's): functions of the file, and
        ``FunctionTool(func, description, name=)`` objects (autogen-core 0.7.5: the name
        defaults to the function's); anything else is reported, never dropped silently."""
        if node is None:
            return []
        agent = self.const(kwarg(owner, "name", 0))
        listed = self.mod.elements(node)
        if listed is None:
            self.r.report(
                M001,
                f"`{agent}`'s `{what}` cannot be read statically; its tools were left out",
                node,
                help="list the tools inline: tools=[f, FunctionTool(g, description=...)]",
            )
            return []
        out: list[dict[str, Any]] = []
        for t in listed:
            value = self.mod.deref(t)
            if isinstance(t, ast.Name) and self.mod.function_of(t) is not None:
                doc = self.mod.docstring(t)
                out.append({"config": {"name": t.id, "description": doc or ""}})
            elif isinstance(value, ast.Call) and callee(value) == "FunctionTool":
                func = kwarg(value, "func", 0)
                name = self.mod.const_name_or(kwarg(value, "name", 2), None)
                if not isinstance(name, str):
                    name = func.id if isinstance(func, ast.Name) else None
                desc = self.const(kwarg(value, "description", 1))
                if name is None:
                    self.r.report(
                        M001,
                        f"this `FunctionTool` of `{agent}` has no name that can be read "
                        "statically; it was left out",
                        t,
                    )
                    continue
                out.append(
                    {"config": {"name": name, "description": desc if isinstance(desc, str) else ""}}
                )
            else:
                self.r.report(
                    M001,
                    f"this tool of `{agent}` ({_short_expr(t)}) is not a function or a "
                    "`FunctionTool` of this file: its name and what it does are unknown, and "
                    "it was left out",
                    t,
                    help="declare it by hand in the .flow: `tool NAME` on the speaker",
                )
        return out

    def workbench(self, owner: ast.Call, node: ast.expr) -> list[dict[str, Any]]:
        """``workbench=``: a ``StaticWorkbench(tools=[...])`` holds tools written in the file;
        any other workbench (``McpWorkbench``, ...) lists its tools when the agent runs."""
        out: list[dict[str, Any]] = []
        listed = self.mod.elements(node)
        for wb in listed if listed is not None else [node]:
            value = self.mod.deref(wb)
            if isinstance(value, ast.Call) and callee(value) in (
                "StaticWorkbench",
                "StaticStreamWorkbench",
            ):
                out += self.tools(owner, kwarg(value, "tools", 0), "workbench tools")
                continue
            agent = self.const(kwarg(owner, "name", 0))
            self.r.report(
                M001,
                f"`{agent}`'s workbench ({_short_expr(wb)}) lists its tools when the agent runs: "
                "the flow declares none of them, so rules and checks know nothing of what they do",
                wb,
                help="declare the workbench's tools by hand in the .flow: `tool NAME` on the speaker",
            )
        return out

    def termination(self, node: ast.expr | None, path: str) -> dict[str, Any] | None:
        if node is None:
            return None
        self.where[path] = node
        value = self.mod.deref(node)
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr | ast.BitAnd):
            kind = (
                "OrTerminationCondition"
                if isinstance(value.op, ast.BitOr)
                else "AndTerminationCondition"
            )
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
                if part is not None and "_ast_at" in part:
                    self.where[f"{path}.config.conditions[{i}]"] = part["_ast_at"]
            return {
                "provider": _PREFIX["base"] + kind,
                "config": {"conditions": [p if p is not None else {} for p in flat]},
            }
        if not isinstance(value, ast.Call) or callee(value) not in TERMINATIONS:
            return {"provider": "", "config": {}, "_ast_at": node}
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
            self.r.report(
                M002,
                "TextMentionTermination's `sources` cannot be read statically: the "
                "flow ends on the text from any speaker",
                sources,
            )
        return {
            "provider": _PREFIX["cond"] + kind,
            "config": {k: v for k, v in cfg.items() if v is not None},
            "_ast_at": node,
        }


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k != "_ast_at"}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


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
    reader = AgentReader(PyModule.parse(source.name, source.text))
    teams = [c for c in reader.mod.calls() if callee(c) in TEAMS]
    if not teams:
        reader.report(M001, "no AgentChat team in this file", None)
        raise mm.NotRecognised(reader.findings)
    return _read_team(reader, teams[-1])[0]


def _read_team(
    reader: AgentReader, team: ast.Call
) -> tuple[dict[str, Any], _Builder, GraphReader | None, dict[str, Any] | None]:
    b = _Builder(reader)
    kind = callee(team)
    participants = []
    graph: GraphReader | None = None
    if kind == "GraphFlow":
        graph = graph_of(reader, b.where, team)
        if graph is None:
            raise mm.NotRecognised(reader.findings)
        graph.read()
    parts_node = kwarg(team, "participants", 0)
    elements = reader.mod.elements(parts_node)
    call = reader.mod.deref(parts_node) if parts_node is not None else None
    if (
        graph is not None
        and isinstance(call, ast.Call)
        and callee(call) == "get_participants"
        and isinstance(call.func, ast.Attribute)
        and graph.owns(call)
    ):
        elements = list(graph.agents.values())
    if elements is None:
        reader.report(M001, "the team's participants cannot be read statically", team)
        raise mm.NotRecognised(reader.findings)
    for i, e in enumerate(elements):
        p = b.participant(e, f"config.participants[{i}]")
        if p is None and isinstance(e, ast.Name) and graph is None:
            # an agent imported or built by a function: it takes its place in the team
            # under its variable's name, as an agent whose class is not known
            reader.report(
                M002,
                f"`{e.id}` is not an agent created in this file (imported, or returned by a "
                f"function): it takes part as a plain speaker named `{e.id}`; its real name, "
                "class and behaviour are not read, and no speaking order is claimed",
                e,
                help="create the agent in this file, or rename the speaker in the .flow",
            )
            p = {"provider": "", "config": {"name": e.id}}
            b.adopted.add(e.id)
        if p is None:
            reader.report(M001, "this participant is not an agent created in this file", e)
            raise mm.NotRecognised(reader.findings)
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


def translate_agentchat_python(reader: AgentReader, team: ast.Call) -> mm.Translation:
    """Translate one AgentChat team constructor call of a Python file."""
    data, b, graph, term = _read_team(reader, team)
    per_speaker = kwarg(team, "selector_func") is None and kwarg(team, "candidate_func") is None
    result = translate_component(data, reader.mod.source.name, per_speaker)
    findings = list(reader.findings)
    for d in result.findings:
        if "`sources` is never written" in d.message:
            continue  # Python shows `sources` (or its absence): _apply_sources keeps it
        if "Python callable condition is written to JSON" in d.message and graph is not None:
            continue  # the Python source shows every condition
        if any(d.message.startswith(f"`{a}` is a `component`") for a in b.adopted):
            continue  # said at the participant, with what is not known about it
        at = _closest(b.where, d.json_path or "")
        findings.append(
            Diagnostic(
                d.code,
                d.message,
                d.filename,
                reader.mod.span(at) if at is not None else reader.mod.span(team),
                d.notes,
                d.help,
            )
        )
    migration = result.migration
    sequences = result.sequences
    if callee(team) == "SelectorGroupChat":
        findings = [d for d in findings if JSON_ONLY_SELECTOR not in d.message]
        migration, sequences = SelectorFunctions(reader, team, data, migration, findings).apply(
            sequences
        )
    if term is not None and _has_sources(term):
        migration = _apply_sources(migration, term)
        sequences = sequences[: len(migration.scenarios)]
    stem = reader.mod.source.name.rsplit("/", 1)[-1]
    migration = attrs.evolve(migration, source_kind=f"an AgentChat team in Python ({stem})")
    return mm.Translation(migration, tuple(findings), sequences)


def _short_expr(node: ast.AST, limit: int = 40) -> str:
    text = " ".join(ast.unparse(node).split()).replace("`", "'")
    return "`" + (text if len(text) <= limit else text[: limit - 3] + "...") + "`"


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
    # (a condition whose text is not a string was reported and left out: no rule has it)
    sources = {
        c["config"]["text"]: c["config"].get("sources")
        for c in _text_conditions(term)
        if isinstance(c["config"].get("text"), str)
    }
    speakers = {s.name for s in mig.speakers}
    rules = []
    for r in mig.rules:
        cond = r.cond
        if isinstance(cond, n.CallCond) and cond.name.value == "text_contains":
            text = cond.args[0].value.value
            named = sources.get(text)
            srcs = [x for x in named if x in speakers] if isinstance(named, list) else []
            if srcs:
                cond = n.AndCond((mm.from_(*srcs), cond), mm.S)
        rules.append(mm.Rule(cond, r.target, r.priority, r.comment))
    scenarios = tuple(sc for sc in mig.scenarios if sc.title.value != "the mention ends the run")
    return attrs.evolve(mig, rules=tuple(rules), scenarios=scenarios)


__all__ = ["TEAMS", "python_component", "translate_agentchat_python"]
