"""The agents a Python file creates, and the findings that point into it.

Every Python reader (classic ``GroupChat``, the group API, the swarm, AgentChat teams)
starts here: :class:`AgentReader` finds each agent constructor call of a known class,
reads its name, whether it is a person, and its role, and resolves an expression
(``planner``, ``agents=[a, b]``) to those agents. Findings (M001/M002/M003) are
collected on it with a span in the Python file.

>>> from flowc.migrate.pyread import PyModule
>>> r = AgentReader(PyModule.parse("t.py", "u = UserProxyAgent('user')\\na = AssistantAgent('a')\\n"))
>>> r.collect_agents()
>>> [(a.name, a.human) for a in r.agents.values()]
[('user', True), ('a', False)]
"""

from __future__ import annotations

import ast

import attrs

from flowc.diagnostics import M001, Code, Diagnostic
from flowc.migrate.pyread import NotStatic, PyModule, callee, kwarg

AGENT_CLASSES = frozenset(
    {
        "ConversableAgent",
        "AssistantAgent",
        "UserProxyAgent",
        "SwarmAgent",
        "GPTAssistantAgent",
        "RetrieveUserProxyAgent",
        "RetrieveAssistantAgent",
        "MultimodalConversableAgent",
        "CaptainAgent",
        "ReasoningAgent",
        "WebSurferAgent",
        "DocAgent",
    }
)


@attrs.frozen
class Agent:
    var: str | None
    name: str
    cls: str
    human: bool
    role: str | None
    node: ast.Call



class AgentReader:
    """The agents a Python file creates (by constructor call), and the findings about the
    file, each pointing at its source. Shared by every Python reader."""

    def __init__(self, mod: PyModule):
        self.mod = mod
        self.findings: list[Diagnostic] = []
        self.agents: dict[int, Agent] = {}  # id(call node) -> agent

    def report(self, code: Code, message: str, node: ast.AST | None, help: str | None = None) -> None:
        span = self.mod.span(node) if node is not None else None
        self.findings.append(Diagnostic(code, message, self.mod.source.name, span, help=help))

    # ── agents ──

    def collect_agents(self) -> None:
        for call in self.mod.calls():
            cls = callee(call)
            if cls not in AGENT_CLASSES:
                continue
            name_node = kwarg(call, "name", 0)
            try:
                agent_name = self.mod.const(name_node)
            except NotStatic:
                agent_name = None
            var = self._var_of(call)
            if not isinstance(agent_name, str) or not agent_name:
                fallback = var or f"agent_{call.lineno}"
                self.report(
                    M001,
                    f"the name of this `{cls}` cannot be read without running the code; "
                    f"it was migrated as `{fallback}`",
                    name_node or call,
                    help="write the agent's name as a string literal, or rename the speaker in the .flow",
                )
                agent_name = fallback
            self.agents[id(call)] = Agent(var, agent_name, cls, self._is_human(call, cls),
                                          self._role(call), call)

    def _var_of(self, call: ast.Call) -> str | None:
        return self.mod.var_of(call)

    def _is_human(self, call: ast.Call, cls: str) -> bool:
        llm = kwarg(call, "llm_config")
        llm_off = llm is None or self.mod.const_or(llm, object()) is False
        mode = self.mod.const_or(kwarg(call, "human_input_mode"), None)
        if cls in ("UserProxyAgent", "RetrieveUserProxyAgent"):
            return llm_off
        if mode == "ALWAYS":
            return True
        return cls == "ConversableAgent" and llm is not None and llm_off

    def _role(self, call: ast.Call) -> str | None:
        for key in ("description", "system_message"):
            value = self.mod.const_or(kwarg(call, key), None)
            if isinstance(value, str) and value.strip():
                return value
        return None

    def agent_of(self, node: ast.expr | None) -> Agent | None:
        if node is None:
            return None
        target = self.mod.deref(node)
        if isinstance(target, ast.Call):
            return self.agents.get(id(target))
        return None

    def agent_list(self, node: ast.expr | None, what: str, at: ast.AST) -> list[Agent]:
        elements = self.mod.elements(node)
        if elements is None:
            self.report(M001, f"`{what}` cannot be read without running the code", node or at,
                        help="list the agents inline: agents=[a, b, c]")
            return []
        out: list[Agent] = []
        for e in elements:
            agent = self.agent_of(e)
            if agent is None:
                self.report(M001, f"this entry of `{what}` is not an agent created in this file", e,
                            help="create the agent in this file with ConversableAgent(name=...)")
            else:
                out.append(agent)
        return out



__all__ = ["AGENT_CLASSES", "Agent", "AgentReader"]
