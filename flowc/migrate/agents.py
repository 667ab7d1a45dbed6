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

from flowc.diagnostics import M001, M002, M003, Code, Diagnostic
from flowc.migrate.pyread import NotStatic, PyModule, callee, kwarg
from flowc.migrate.pyvalues import TooLarge

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


def _subclasses(tree: ast.Module, known: frozenset[str]) -> dict[str, str]:
    """``class Mine(AssistantAgent)`` (through other classes of the file) -> its known base."""
    bases: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases[node.name] = [
                b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                for b in node.bases
            ]
    out: dict[str, str] = {}
    for name in bases:
        seen, todo = {name}, list(bases[name])
        while todo:
            b = todo.pop(0)
            if b in known:
                out[name] = b
                break
            if b in bases and b not in seen:
                seen.add(b)
                todo += bases[b]
    return out


class AgentReader:
    """The agents a Python file creates (by constructor call), and the findings about the
    file, each pointing at its source. Shared by every Python reader."""

    def __init__(self, mod: PyModule):
        self.mod = mod
        self.findings: list[Diagnostic] = []
        self.agents: dict[int, Agent] = {}  # id(call node) -> agent
        #: agent classes defined in the file -> the known class they derive from
        self.subclasses: dict[str, str] = _subclasses(mod.tree, AGENT_CLASSES)
        self._reported_classes: set[str] = set()
        #: findings about agents whose name or role could not be read, with the name they
        #: got: only those that take part in the translated chat are kept
        #: (:meth:`dropped_unnamed`)
        self.unnamed: list[tuple[Diagnostic, str]] = []
        #: the findings about a role (a prompt) that cannot be read: left out of a comment,
        #: never of the routing (:meth:`routing_left_out`)

    def report(
        self, code: Code, message: str, node: ast.AST | None, help: str | None = None
    ) -> None:
        span = self.mod.span(node) if node is not None else None
        self.findings.append(Diagnostic(code, message, self.mod.source.name, span, help=help))

    def round_cap(self, node: ast.expr | None, name: str, default: int | None) -> int | None:
        """A chat's cap on rounds (``max_round``, ``max_rounds``) written at ``node``:
        ``default`` when it is not written; None, reported with an M001, when it cannot be
        read or is not a whole number of 1 or more (a bool is no number of rounds): the
        flow then has no turn cap."""
        if node is None:
            return default
        try:
            value = self.mod.const(node)
        except NotStatic:
            self.report(
                M001,
                f"`{name}` cannot be read statically; the flow has no turn cap",
                node,
                help=f"write {name} as an integer literal",
            )
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        self.report(
            M001,
            f"`{name}` is {shown}, not a whole number of 1 or more; the flow has no turn cap",
            node,
            help=f"give {name} a number of rounds of 1 or more",
        )
        return None

    # ── agents ──

    def collect_agents(self) -> None:
        for call in self.mod.calls():
            cls = callee(call)
            if cls in AGENT_CLASSES or cls in self.subclasses:
                self._add(call, cls)

    def _add(self, call: ast.Call, cls: str) -> Agent:
        name_node = kwarg(call, "name", 0)
        too_large = False
        try:
            agent_name = self.mod.const_name(name_node)
        except TooLarge:  # an M001 where the bound is passed: migrated under its variable
            agent_name, too_large = None, True
        except NotStatic:
            agent_name = None
        var = self._var_of(call)
        if too_large:
            agent_name = var or f"agent_{call.lineno}"
        elif not isinstance(agent_name, str) or not agent_name:
            fallback = var or f"agent_{call.lineno}"
            self.report(
                M001,
                f"the name of this `{cls}` cannot be read without running the code; "
                f"it was migrated as `{fallback}`",
                name_node or call,
                help="write the agent's name as a string literal, or rename the speaker in the .flow",
            )
            self.unnamed.append((self.findings[-1], fallback))
            agent_name = fallback
        base = self.subclasses.get(cls, cls)
        role = self._role(call, agent_name)
        agent = Agent(var, agent_name, cls, self._is_human(call, base), role, call)
        self.agents[id(call)] = agent
        if cls in self.subclasses and cls not in self._reported_classes:
            self._reported_classes.add(cls)
            self.report(
                M002,
                f"`{cls}` is a subclass of `{base}` defined in this file: what it "
                "overrides runs in your agent code; the flow treats its agents as "
                f"`{base}`s",
                call,
            )
        return agent

    def report_hooks(self, calls: list[ast.Call]) -> None:
        """Agent-side code that changes what an agent replies, never routing: each is an
        M002, as the flow does not carry it (ag2 0.9.10: ``register_reply`` puts a reply
        function before the agent's own, which may answer for it or end the chat with a
        None reply; ``update_agent_state_before_reply`` / ``UpdateSystemMessage`` and
        ``register_hook`` change its prompt or messages before each reply)."""
        for c in calls:
            kind = callee(c)
            if kind in ("UpdateSystemMessage", "UPDATE_SYSTEM_MESSAGE", "register_hook"):
                self.report(
                    M002,
                    f"`{kind}` changes an agent's prompt at run time; it is agent-side "
                    "behaviour, not routing, and is not in the flow",
                    c,
                )
            elif kind in ("register_reply", "a_register_reply"):
                owner = self.agent_of(c.func.value) if isinstance(c.func, ast.Attribute) else None
                who = f"`{owner.name}`" if owner is not None else "the agent"
                self.report(
                    M002,
                    f"`{kind}` adds a reply function that runs before {who}'s own reply: what "
                    "it answers, and a chat it ends by returning no reply, are your agent code, "
                    "not in the flow",
                    c,
                )
            elif id(c) in self.agents and (hooks := kwarg(c, "update_agent_state_before_reply")):
                listed = self.mod.elements(hooks)
                plain = [
                    e
                    for e in (listed if listed is not None else [hooks])
                    if not (
                        isinstance(d := self.mod.deref(e), ast.Call)
                        and callee(d) in ("UpdateSystemMessage", "UPDATE_SYSTEM_MESSAGE")
                    )
                ]
                if plain:
                    self.report(
                        M002,
                        f"`update_agent_state_before_reply` runs code before each reply of "
                        f"`{self.agents[id(c)].name}` (it may change its prompt or messages); it "
                        "is agent-side behaviour, not routing, and is not in the flow",
                        hooks,
                    )

    def report_own_termination(self, agents: list[Agent]) -> None:
        """The group API and the swarm: an agent's own ``is_termination_msg`` is not
        translated there (classic's GroupChat lowers it to guarded rules); say so."""
        for agent in agents:
            node = kwarg(agent.node, "is_termination_msg")
            if node is None or self.mod.const_or(node, "?") is None:
                continue
            self.report(
                M001,
                f"`{agent.name}`'s own `is_termination_msg` was left out: AG2 applies it to "
                f"the last message when `{agent.name}` is chosen to speak (after its "
                "`OnContextCondition`s, which hand off first), and ends the chat when it holds; "
                "the flow has no rule for it",
                node,
                help=f'add a rule such as `when from X and text_contains(text = "...") then '
                f"terminate` for each speaker X after which `{agent.name}` speaks",
            )

    def routing_left_out(self) -> bool:
        """Whether something of the routing was left out (an M001): the translation then
        claims no speaking order."""
        return any(d.code is M001 for d in self.findings)

    def dropped_unnamed(self, speakers: set[str]) -> set[int]:
        """The findings about agents that are not speakers of the translated flow (another
        chat of the file): a name that cannot be read ("migrated as `x`") or a role that
        cannot be read; they name nothing in the output."""
        return {id(d) for d, name in self.unnamed if name not in speakers}

    def adopt(self, node: ast.expr) -> Agent | None:
        """An object constructed in this file from a class flowc does not know, passed where an
        agent goes: it is an agent (reported: its behaviour is not modelled)."""
        call = self.mod.deref(node)
        if not isinstance(call, ast.Call) or id(call) in self.agents:
            return self.agents.get(id(call)) if isinstance(call, ast.Call) else None
        cls = callee(call)
        if not cls[:1].isupper():
            return None  # a function call, not a constructor
        agent = self._add(call, cls)
        if cls not in self._reported_classes:
            self._reported_classes.add(cls)
            self.report(
                M002,
                f"`{cls}` is not an agent class flowc knows: `{agent.name}` takes part "
                "as a plain speaker, and what the class does (its replies, tools or "
                "browsing) runs in your agent code, not in the flow",
                call,
            )
        return agent

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

    def _role(self, call: ast.Call, name: str) -> str | None:
        """The agent's role, carried as a comment above its speaker: its ``description``,
        else its ``system_message``. One that is passed but cannot be read (``open(...)
        .read()``) is reported (M003: a comment, which changes no routing, is dropped); one
        too large to work out is reported once, where the bound was passed
        (:func:`~.python._too_large`)."""
        for key in ("description", "system_message"):
            node = kwarg(call, key)
            if node is None:
                continue
            try:
                value = self.mod.const(node)
            except TooLarge:
                continue  # already recorded in ``too_large``: no second finding
            except NotStatic:
                self.report(
                    M003,
                    f"the `{key}` of `{name}` cannot be read without running the code; "
                    "the flow does not carry it (it changes no routing)",
                    node,
                    help=f"write the {key} as a string literal to carry it as a comment "
                    "above the speaker",
                )
                self.unnamed.append((self.findings[-1], name))
                continue
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
            self.report(
                M001,
                f"`{what}` cannot be read without running the code",
                node or at,
                help="list the agents inline: agents=[a, b, c]",
            )
            return []
        out: list[Agent] = []
        for e in elements:
            agent = self.agent_of(e) or self.adopt(e)
            if agent is None:
                self.report(
                    M001,
                    f"this entry of `{what}` is not an agent created in this file",
                    e,
                    help="create the agent in this file with ConversableAgent(name=...)",
                )
            else:
                out.append(agent)
        return out


__all__ = ["AGENT_CLASSES", "Agent", "AgentReader"]
