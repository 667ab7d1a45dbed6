"""AG2 handoffs, shared by the group API (:mod:`.group`) and the legacy swarm (:mod:`.swarm`).

Transition targets (``AgentTarget``, ``RevertToUserTarget``, ``StayTarget``,
``TerminateTarget``, ``GroupManagerTarget``, ``AskUserTarget``, ``RandomAgentTarget``, the
swarm's ``AfterWorkOption``s), context conditions (``StringContextCondition``,
``ExpressionContextCondition`` / ``ContextExpression``, the ``available`` gates), LLM
condition texts, ``OnContextCondition`` rules, and the tools of an agent's ``functions``
whose ``return ReplyResult(target=...)`` / ``SwarmResult(agent=...)`` and constant
``context_variables["k"] = v`` writes become declared effects. :func:`report_extras`
names what around a group chat a flow does not carry (nested chats, guardrails, hooks).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

import flowc.migrate.model as mm
from flowc.diagnostics import M001, M002, M003
from flowc.dsl import nodes as n
from flowc.inputs import DataError, read_text
from flowc.migrate.agents import Agent, AgentReader
from flowc.migrate.pyread import NotStatic, PyModule, callee, kwarg
from flowc.migrate.textpred import DEFAULT_TERMINATION, text_predicate
from flowc.runtime.ctxexpr import ExpressionError, Node, parse_context_expression

AFTER_WORK_OPTIONS = ("TERMINATE", "REVERT_TO_USER", "STAY", "SWARM_MANAGER")
MANAGER = "chat_manager"
S = mm.S


@attrs.frozen
class Target:
    """A translated classic target: a rule target, the tool effect that does the same,
    and how AG2 names it in a generated function (``normalized_name``)."""

    target: n.Target
    effect: n.Effect
    normalized: str
    exact: bool = True


class HandoffReader:
    """Handoff targets and conditions of the AG2 group API and the legacy swarm, read
    for one group (its agent names, user and initial context)."""

    def __init__(self, reader: AgentReader, calls: list[ast.Call]):
        self.r = reader
        self.mod: PyModule = reader.mod
        self.calls = calls
        self.user = "user"
        self.manager = MANAGER  # the selector speaker's name, free of every agent's
        self.selector_used = False
        self.context: dict[str, Any] = {}
        self.names: list[str] = []
        self.has_user = True
        #: placeholder speakers standing for nested chats: name -> the agent that hands off to it
        self.nested: dict[str, str] = {}

    def nested_chat(self, owner: str, node: ast.AST, kind: str) -> Target:
        """AG2 wraps a nested chat in an agent (``wrapped_nested_<owner>_<n>``) whose after work
        returns to ``owner``: the flow keeps that shape with a placeholder speaker (M001: the
        nested chat itself is not in the flow)."""
        count = sum(1 for o in self.nested.values() if o == owner) + 1
        name = f"wrapped_nested_{owner}_{count}"
        self.nested[name] = owner
        self.r.report(
            M001,
            f"`{kind}` (a nested chat) became the placeholder speaker `{name}`, as AG2 "
            f"wraps it in an agent of that name; after it `{owner}` speaks again. The "
            "nested chat itself is not in the flow",
            node,
            help=f"implement `{name}`'s turn as the nested chat (run it as its own flow, or "
            "as a tool of the agent) and reply with its summary",
        )
        return Target(
            mm.speaker_target(name), n.HandoffEffect(mm.name(name), S), "nested_chat", exact=False
        )

    def placeholders(self) -> tuple[list[mm.Speaker], list[mm.Rule]]:
        """The nested chats' placeholder speakers, and their after work back to the owner."""
        speakers = [
            mm.Speaker(
                w,
                False,
                f"Placeholder for a nested chat of `{o}` (AG2 wraps it in "
                "an agent): its reply is the nested chat's summary.",
            )
            for w, o in self.nested.items()
        ]
        rules = [
            mm.Rule(mm.from_(w), mm.speaker_target(o), 30, "after the nested chat")
            for w, o in self.nested.items()
        ]
        return speakers, rules

    # ── targets and conditions ──

    def target(self, node: ast.expr | None, owner: str) -> Target | None:
        if node is None:
            return None
        agent = self.r.agent_of(node)
        if agent is not None and agent.name in [*self.names, self.user]:
            return Target(
                mm.speaker_target(agent.name), n.HandoffEffect(mm.name(agent.name), S), agent.name
            )
        node = self.mod.deref(node)
        if isinstance(node, ast.Call) and callee(node) in ("AfterWork", "AFTER_WORK"):
            return self.target(kwarg(node, "agent", 0), owner)
        if isinstance(node, ast.Attribute) and node.attr in AFTER_WORK_OPTIONS:
            return self.option(node.attr, owner, node)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in AFTER_WORK_OPTIONS:
                return self.option(node.value, owner, node)
            if node.value in [*self.names, self.user]:
                return Target(
                    mm.speaker_target(node.value),
                    n.HandoffEffect(mm.name(node.value), S),
                    node.value,
                )
        if isinstance(node, ast.Dict):
            return self.nested_chat(owner, node, "a nested chat config")
        if not isinstance(node, ast.Call):
            self.r.report(
                M001,
                "this transition target cannot be read without running the code; left out",
                node,
            )
            return None
        kind = callee(node)
        if kind in ("AgentTarget", "AgentNameTarget"):
            agent_node = kwarg(node, "agent" if kind == "AgentTarget" else "agent_name", 0)
            if kind == "AgentTarget":
                agent = self.r.agent_of(agent_node)
                name = agent.name if agent is not None else None
            else:
                value = self.mod.const_name_or(agent_node, None)
                name = value if isinstance(value, str) else None
            if name is None:
                self.r.report(
                    M001,
                    f"`{kind}`'s agent cannot be read without running the code; left out",
                    node,
                )
                return None
            if name not in [*self.names, self.user]:
                self.r.report(
                    M001, f"`{kind}` names `{name}`, no agent of this group; left out", node
                )
                return None
            return Target(mm.speaker_target(name), n.HandoffEffect(mm.name(name), S), name)
        if kind == "RevertToUserTarget":
            return Target(
                n.InitiatorTarget(S), n.HandoffEffect(mm.name(self.user), S), "revert_to_user"
            )
        if kind == "StayTarget":
            return Target(n.StayTarget(S), n.HandoffEffect(mm.name(owner), S), "stay")
        if kind == "TerminateTarget":
            return Target(mm.terminate(), n.FinishEffect(None, S), "terminate")
        if kind == "GroupManagerTarget":
            return self.to_manager("the group manager")
        if kind == "AskUserTarget":
            self.r.report(
                M002,
                "`AskUserTarget` became a turn of the user: classic asks at the "
                "console which agent speaks next",
                node,
            )
            return Target(
                mm.speaker_target(self.user),
                n.HandoffEffect(mm.name(self.user), S),
                "ask_user",
                exact=False,
            )
        if kind == "RandomAgentTarget":
            agents = self.r.agent_list(kwarg(node, "agents", 0), "agents", node)
            ids = [a.name for a in agents]
            if not ids:
                return None
            self.r.report(
                M002,
                "`RandomAgentTarget` became `random_agent`: draws come from the "
                "envelope id, not Python's `random`",
                node,
            )
            # classic draws among the agents minus the current one (`RandomAgentTarget.resolve`)
            return Target(
                mm.call_target("random_agent", agent_ids=ids, allow_repeat=False),
                n.HandoffEffect(mm.name(ids[0]), S),
                "random",
                exact=False,
            )
        if kind == "NestedChatTarget":
            return self.nested_chat(owner, node, kind)
        if kind in ("GroupChatTarget", "FunctionTarget"):
            what = {
                "GroupChatTarget": "a nested group chat",
                "FunctionTarget": "a Python function that picks the target",
            }[kind]
            self.r.report(
                M001,
                f"`{kind}` ({what}) has no equivalent in one workflow channel; "
                "this transition was left out",
                node,
                help="run it as its own flow, or hand-port FunctionTarget as a custom target",
            )
            return None
        self.r.report(M001, f"unknown transition target `{kind}`; left out", node)
        return None

    def option(self, option: str, owner: str, at: ast.AST) -> Target | None:
        """Legacy swarm ``AfterWorkOption``s."""
        if option == "TERMINATE":
            return Target(mm.terminate(), n.FinishEffect(None, S), "terminate")
        if option == "STAY":
            return Target(n.StayTarget(S), n.HandoffEffect(mm.name(owner), S), "stay")
        if option == "REVERT_TO_USER":
            if not self.has_user:
                return Target(mm.terminate(), n.FinishEffect(None, S), "terminate")
            return Target(
                n.InitiatorTarget(S), n.HandoffEffect(mm.name(self.user), S), "revert_to_user"
            )
        return self.to_manager("swarm_manager")

    def to_manager(self, label: str) -> Target:
        """The group manager speaks next and picks who follows; marks ``selector_used``,
        so the translation declares the manager and its selection rules."""
        self.selector_used = True
        to = self.manager
        return Target(mm.speaker_target(to), n.HandoffEffect(mm.name(to), S), label, exact=False)

    def flag(self, key: str) -> n.Cond:
        """C11: a truthiness test on a context key."""
        if isinstance(self.context.get(key), bool):
            return n.ContextCond(mm.name(key), "==", n.Value(True, S), S)
        return mm.call_cond("context_expression", expression="${" + key + "}")

    def expression(self, text: str, at: ast.AST) -> n.Cond | None:
        try:
            tree = parse_context_expression(text)
        except ExpressionError as err:
            self.r.report(M001, f"this ContextExpression does not parse ({err}); left out", at)
            return None
        simple = self._simple(tree)
        return simple if simple is not None else mm.call_cond("context_expression", expression=text)

    def _simple(self, tree: Node) -> n.Cond | None:
        kind = tree[0]
        if kind == "var":
            return self.flag(tree[1])
        if (
            kind == "cmp"
            and tree[1] in ("==", "!=")
            and tree[2][0] == "var"
            and tree[3][0] == "lit"
        ):
            return n.ContextCond(mm.name(tree[2][1]), tree[1], n.Value(tree[3][1], S), S)
        if kind == "not":
            inner = self._simple(tree[1])
            return n.NotCond(inner, S) if inner is not None else None
        if kind in ("and", "or"):
            left, right = self._simple(tree[1]), self._simple(tree[2])
            if left is None or right is None:
                return None
            cls = n.AndCond if kind == "and" else n.OrCond
            items = [
                *(left.items if isinstance(left, cls) else (left,)),
                *(right.items if isinstance(right, cls) else (right,)),
            ]
            return cls(tuple(items), S)
        return None

    def context_condition(self, node: ast.expr | None) -> n.Cond | bool | None:
        """A condition; ``True`` for an absent one (always); None when not translatable."""
        if node is None or self.mod.const_or(node, "?") is None:
            return True
        node = self.mod.deref(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return self.flag(node.value)
        if not isinstance(node, ast.Call):
            self.r.report(M001, "this context condition cannot be read statically; left out", node)
            return None
        kind = callee(node)
        if kind in ("StringContextCondition", "StringAvailableCondition"):
            key_node = kwarg(node, "variable_name", 0) or kwarg(node, "context_variable")
            key = self.mod.const_name_or(key_node, None)
            if isinstance(key, str):
                return self.flag(key)
        elif kind in (
            "ExpressionContextCondition",
            "ExpressionAvailableCondition",
            "ContextExpression",
        ):
            inner = kwarg(node, "expression", 0)
            if kind == "ContextExpression":
                inner = node
            inner = self.mod.deref(inner) if inner is not None else None
            if isinstance(inner, ast.Call) and callee(inner) == "ContextExpression":
                inner = kwarg(inner, "expression", 0)
            text = self.mod.const_or(inner, None)
            if isinstance(text, str):
                return self.expression(text, node)
        self.r.report(
            M001, f"the condition `{kind or 'callable'}` cannot be translated; left out", node
        )
        return None

    def llm_text(self, node: ast.expr | None) -> str | None:
        if node is None:
            return None
        node = self.mod.deref(node)
        if isinstance(node, ast.Call):
            kind = callee(node)
            if kind == "StringLLMCondition":
                value = self.mod.const_or(kwarg(node, "prompt", 0), None)
                return value if isinstance(value, str) else None
            if kind in ("ContextStrLLMCondition", "ContextStr"):
                inner = self.mod.deref(kwarg(node, "context_str", 0) or node)
                if kind == "ContextStr":
                    inner = node
                template = kwarg(inner, "template", 0) if isinstance(inner, ast.Call) else None
                value = self.mod.const_or(template, None)
                if isinstance(value, str):
                    self.r.report(
                        M002,
                        "a ContextStr condition is rendered per turn in classic; the "
                        "tool's description keeps the template as written",
                        node,
                    )
                    return value
        if isinstance(node, ast.Lambda) or self.mod.function_of(node) is not None:
            self.r.report(
                M001,
                "this handoff's condition text is computed by Python code at run time; "
                "the tool was kept with a generic description and the code left out",
                node,
                help="write the condition as a string (the tool's description)",
            )
            return None
        value = self.mod.const_or(node, None)
        return value if isinstance(value, str) else None


def gated(
    cond: n.Cond, available: ast.expr | None, mod: PyModule, g: HandoffReader, reader: AgentReader
) -> n.Cond | None:
    """An ``OnCondition``'s routing condition with its ``available`` gate, if any. A gate
    that cannot be translated (a callable) is left out and reported; the rule stays, as
    the handoff it routes exists in the source whenever the gate lets it through."""
    if available is None or mod.const_or(available, "?") is None:
        return cond
    start = len(reader.findings)
    gate = g.context_condition(available)
    if gate is None:
        del reader.findings[start:]
        node = mod.deref(available)
        what = (
            f"`{callee(node)}`"
            if isinstance(node, ast.Call) and callee(node)
            else "a function"
            if isinstance(node, ast.Lambda | ast.Name)
            else "an expression"
        )
        reader.report(
            M001,
            f"this `available` gate ({what}) cannot be translated and was left out: the "
            "routing rule is kept without it, so in the flow the handoff is available on "
            "every turn",
            available,
            help="write the gate as a context condition (`StringAvailableCondition`, "
            "`ExpressionAvailableCondition`), or add it to the rule in the .flow by hand",
        )
        return cond
    if gate is True:
        return cond
    assert not isinstance(gate, bool)
    reader.report(
        M002,
        "an `available` condition became a gate on the routing rule: "
        "the model still sees the tool when it is not available",
        available,
    )
    return n.AndCond((cond, gate), S)


def items_of(mod: PyModule, call: ast.Call, single: bool) -> list[ast.expr]:
    arg = call.args[0] if call.args else (call.keywords[0].value if call.keywords else None)
    if arg is None:
        return []
    if single:
        return [arg]
    return mod.elements(arg) or []


def report_extras(
    reader: AgentReader,
    calls: list[ast.Call],
    runner: ast.Call | None,
    handled: set[int] | None = None,
) -> None:
    """Constructs around a group chat that the flow does not carry: say so, never drop silently."""
    for c in calls:
        kind = callee(c)
        if handled is not None and id(c) in handled:
            continue
        if kind in ("register_nested_chats", "initiate_chats"):
            reader.report(
                M001,
                f"`{kind}` (nested or sequential chats) has no equivalent in one "
                "workflow channel; it was left out",
                c,
                help="run the nested chat as its own flow, or as a tool of the agent",
            )
        elif kind in ("RegexGuardrail", "LLMGuardrail"):
            reader.report(
                M001,
                f"`{kind}` checks messages at run time; it was left out",
                c,
                help="a regex output guardrail can be written as "
                "`when from A and text_matches(pattern = ...) then T`",
            )
    reader.report_hooks([c for c in calls if handled is None or id(c) not in handled])
    if runner is not None:
        for key in ("safeguard_policy", "safeguard_llm_config"):
            node = kwarg(runner, key)
            if node is not None:
                reader.report(
                    M001,
                    f"`{key}` (run-time safeguards) has no equivalent in a flow; left out",
                    node,
                )
        node = kwarg(runner, "exclude_transit_message")
        if node is not None:
            reader.report(
                M003, "`exclude_transit_message` only changes what agents see; dropped", node
            )


def context_rule(
    g: HandoffReader, owner: str, item: ast.expr, priority: int, what: str
) -> mm.Rule | None:
    obj = g.mod.deref(item)
    if not isinstance(obj, ast.Call) or callee(obj) != "OnContextCondition":
        g.r.report(M001, f"this {what} cannot be read statically; left out", item)
        return None
    t = g.target(kwarg(obj, "target", 0), owner)
    if t is None:
        return None
    cond = g.context_condition(kwarg(obj, "condition", 1))
    if cond is None:
        return None
    if kwarg(obj, "available", 2) is not None:
        gate = g.context_condition(kwarg(obj, "available", 2))
        if gate is None:
            return None
        if gate is not True and cond is not True:
            assert not isinstance(gate, bool) and not isinstance(cond, bool)
            cond = n.AndCond((cond, gate), S)
        elif gate is not True:
            cond = gate
    full: n.Cond = mm.from_(owner) if cond is True else n.AndCond((mm.from_(owner), cond), S)  # type: ignore[arg-type]
    return mm.Rule(full, t.target, priority, f"{owner}: {what}")


def functions_of(mod: PyModule, agent_call: ast.Call) -> list[ast.expr]:
    """An agent's ``functions=``: a list, or one callable (``functions=f``, as AG2 accepts)."""
    node = kwarg(agent_call, "functions")
    if node is None or mod.const_or(node, "?") is None:
        return []
    listed = mod.elements(node)
    return listed if listed is not None else [node]


def selector_speaker(name: str, cands: list[str], role: str) -> tuple[mm.Speaker, list[mm.Rule]]:
    """The speaker that stands for an LLM's choice of the next speaker among ``cands``: one
    ``transfer_to_<agent>`` tool per candidate, a rule per tool, and a close when it chose
    nobody (group manager and swarm manager alike)."""
    speaker = mm.Speaker(
        name,
        False,
        role,
        tuple(mm.Tool(f"transfer_to_{c}", f"{c} speaks next.") for c in cands),
    )
    rules = [mm.Rule(mm.tool_cond(f"transfer_to_{c}"), mm.speaker_target(c), 0) for c in cands]
    rules.append(
        mm.Rule(mm.from_(name), mm.terminate("no_speaker_selected"), 0, "the selector chose nobody")
    )
    return speaker, rules


def _sibling_function(
    g: HandoffReader, module: str, name: str
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    """``from tools import f`` where ``tools.py`` sits beside the input: its ``def f``, read
    statically (never imported), and the file's name."""
    here = Path(g.mod.source.name).parent
    dots = len(module) - len(module.lstrip("."))
    base = here
    for _ in range(max(dots - 1, 0)):
        base = base.parent
    rel = module.lstrip(".").replace(".", "/")
    for path in (base / f"{rel}.py", base / rel / "__init__.py"):
        try:
            if not rel or not path.exists():
                continue
            # read as every input is (flowc.inputs): a regular file, at most the size of
            # an input, UTF-8; a link to /dev/zero or a FIFO is refused before reading
            text = read_text(str(path), limit=2_000_000)
            tree = ast.parse(text, filename=str(path))
        except (OSError, DataError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for st in tree.body:
            if isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef) and st.name == name:
                return st, str(path.relative_to(here)) if path.is_relative_to(here) else path.name
    return None


def registered_tools(
    g: HandoffReader, names: list[str], have: dict[str, list[mm.Tool]]
) -> list[tuple[str, mm.Tool]]:
    """Tools added to an agent's ``tools`` outside ``functions=`` (ag2 0.9.10: each of these
    appends to ``ConversableAgent._tools``, which the group's tool executor runs):
    ``@agent.register_for_llm(...)`` on a ``def``, ``agent.register_for_llm(...)(f)``, and
    ``tool.register_tool(agent)`` / ``tool.register_for_llm(agent)`` for a ``Tool(...)``
    object. A tool object of another class is reported (its name is not known)."""
    mod = g.mod
    out: list[tuple[str, mm.Tool]] = []

    def add(owner: str, fn: ast.expr | None, fn_def: Any, name: Any, desc: Any) -> None:
        final = (
            name
            if isinstance(name, str) and name
            else fn_def.name
            if fn_def is not None
            else fn.id
            if isinstance(fn, ast.Name)
            else None
        )
        declared = [t.name for t in have.get(owner, [])] + [t.name for o, t in out if o == owner]
        if final is not None and final in declared:
            return  # registered twice (functions= and a decorator, say): read once
        tool = tool_from_function(g, owner, fn, fn_def) if fn is not None or fn_def else None
        if tool is None:
            return
        if isinstance(name, str) and name:
            tool = attrs.evolve(tool, name=name)
        if isinstance(desc, str) and desc:
            tool = attrs.evolve(tool, doc=desc.strip().splitlines()[0])
        out.append((owner, tool))

    def owner_of(node: ast.expr | None) -> str | None:
        agent = g.r.agent_of(node)
        return agent.name if agent is not None and agent.name in names else None

    for fn, deco, obj in mod.decorated("register_for_llm"):
        if (owner := owner_of(obj)) is not None:
            add(
                owner,
                None,
                fn,
                mod.const_name_or(kwarg(deco, "name"), None),
                mod.const_or(kwarg(deco, "description"), None),
            )
    for c in g.calls:
        inner = c.func
        if (  # agent.register_for_llm(...)(f)
            isinstance(inner, ast.Call)
            and callee(inner) == "register_for_llm"
            and isinstance(inner.func, ast.Attribute)
            and (owner := owner_of(inner.func.value)) is not None
            and c.args
        ):
            add(
                owner,
                c.args[0],
                None,
                mod.const_name_or(kwarg(inner, "name"), None),
                mod.const_or(kwarg(inner, "description"), None),
            )
            continue
        if (
            callee(c) not in ("register_tool", "register_for_llm")
            or not isinstance(c.func, ast.Attribute)
            or (owner := owner_of(kwarg(c, "agent", 0))) is None
        ):
            continue
        obj = mod.deref(c.func.value)
        if isinstance(obj, ast.Call) and callee(obj) == "Tool":
            add(
                owner,
                kwarg(obj, "func_or_tool"),  # keyword-only, as name and description
                None,
                mod.const_name_or(kwarg(obj, "name"), None),
                mod.const_or(kwarg(obj, "description"), None),
            )
            continue
        g.r.report(
            M001,
            f"`{_short(c.func.value)}` is registered as a tool of `{owner}`, but it is not a "
            "`Tool(...)` of a function of this file: its name and what it does are unknown, and "
            "it was left out",
            c,
            help="declare it by hand in the .flow: `tool NAME` on the speaker",
        )
    return out


def tool_from_function(
    g: HandoffReader,
    owner: str,
    fn_node: ast.expr | None,
    fn_def: ast.FunctionDef | ast.AsyncFunctionDef | None = None,
) -> mm.Tool | None:
    mod = g.mod
    if fn_def is not None:
        return _tool_of_def(g, owner, fn_def)
    assert fn_node is not None
    if not isinstance(fn_node, ast.Name):
        g.r.report(
            M002,
            f"a function of `{owner}` is not a name this file defines or imports; its "
            "routing and context writes are unknown to the flow",
            fn_node,
        )
        return None
    fn = mod.function_of(fn_node)
    if fn is None:
        source = mod.imported_from(fn_node)
        found = _sibling_function(g, *source) if source is not None else None
        if found is None:
            where = f"imported from `{source[0]}`" if source else "not defined in this file"
            g.r.report(
                M002,
                f"tool `{fn_node.id}` of `{owner}` is {where}: what it returns (a handoff "
                "target, context writes) is unknown, so the flow declares it without "
                "effects and rules that depend on it may never fire",
                fn_node,
                help="put the module beside the input so migrate can read it, or "
                "declare the tool's effects in the .flow by hand",
            )
            return mm.Tool(fn_node.id, None)
        fn, filename = found
        g.r.report(
            M002,
            f"tool `{fn_node.id}` of `{owner}` was read from `{filename}` beside the input "
            "(statically, never imported; names in it are read as this file's)",
            fn_node,
        )
    return _tool_of_def(g, owner, fn)


def _tool_of_def(
    g: HandoffReader, owner: str, fn: ast.FunctionDef | ast.AsyncFunctionDef
) -> mm.Tool:
    mod = g.mod
    alternatives: list[tuple[n.Effect, ...]] = []
    dynamic: set[str] = set()

    State = dict[str, Any]
    calling: list[ast.AST] = [fn]

    def unique(states: list[State]) -> list[State]:
        out: list[State] = []
        for st in states:
            if st not in out:
                out.append(st)
        return out[:_MAX_PATHS]

    def returned(value: ast.expr | None, states: list[State]) -> None:
        helper = _helper_call(mod, value, calling)
        if helper is not None:
            # `return helper(...)`: what the helper of this file returns, and the context
            # writes it makes on the way, are the tool's
            calling.append(helper)
            ends = visit(list(helper.body), states)
            calling.pop()
            returned(None, ends)  # falling off the helper's end returns None
            return
        for local in states:
            alt = _effects_of_return(g, owner, value, local)
            if alt is not None and alt not in alternatives:
                alternatives.append(alt)

    def visit(stmts: list[ast.stmt], states: list[State]) -> list[State]:
        """The context written on each path through ``stmts``; returns the states of the
        paths that reach their end (a write under an `if` that does not return holds on
        one path after it, not on the other)."""
        states = [dict(s) for s in states]
        for st in stmts:
            if not states:
                break
            if isinstance(st, ast.Return):
                returned(st.value, states)
                return []
            if isinstance(st, ast.Raise):
                return []
            if isinstance(st, ast.Assign) and len(st.targets) == 1:
                key = _context_key(st.targets[0])
                if key is not None:
                    try:
                        value = mod.const(st.value)
                    except NotStatic:
                        dynamic.add(key)
                        for local in states:
                            local.pop(key, None)
                    else:
                        for local in states:
                            local[key] = value
            elif (changed := _changed_in_place(st)) is not None:
                # `context_variables["k"] -= 1`, `context_variables["k"].append(x)`: a write whose
                # value depends on the run
                key = _context_key(changed)
                if key is not None:
                    dynamic.add(key)
                    for local in states:
                        local.pop(key, None)
            elif isinstance(st, ast.If):
                states = unique(visit(st.body, states) + visit(st.orelse, states))
            elif isinstance(st, ast.For | ast.While):
                # the body runs zero or more times (once is enough for constant writes)
                states = unique(states + visit(st.body, states))
                states = visit(st.orelse, states)
            elif isinstance(st, ast.With):
                states = visit(st.body, states)
            elif isinstance(st, ast.Try):
                done = visit(st.body, states)
                caught = [x for h in st.handlers for x in visit(h.body, unique(states + done))]
                states = visit(st.finalbody, unique(visit(st.orelse, done) + caught))
        return states

    ends = visit(list(fn.body), [{}])
    if ends:
        returned(None, ends)  # falling off the end: None, with the writes made on the way
    for key in sorted(dynamic):
        g.r.report(
            M002,
            f"tool `{fn.name}` sets `{key}` to a value computed at run time; the flow "
            "cannot declare it (the checker will not know the value)",
            fn,
        )
    doc = ast.get_docstring(fn)
    effects = tuple(a for a in alternatives if a)
    if effects and len(effects) != len(alternatives):
        g.r.report(
            M002,
            f"tool `{fn.name}` sometimes returns without routing or context writes; the "
            "declaration lists only the calls that do something",
            fn,
        )
    return mm.Tool(fn.name, doc.strip().splitlines()[0] if doc else None, effects)


#: at most this many distinct context states are followed through one tool
_MAX_PATHS = 64


def _helper_call(
    mod: PyModule, value: ast.expr | None, calling: list[ast.AST]
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """``return helper(...)`` (or ``await helper(...)``) for a ``def`` of this file that is
    not already being followed (no recursion)."""
    if isinstance(value, ast.Await):
        value = value.value
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name):
        return None
    if callee(value) in ("ReplyResult", "SwarmResult") or callee(value).endswith("Target"):
        return None
    helper = mod.function_of(value.func)
    if helper is None or helper in calling or len(calling) > 8:
        return None
    return helper


#: methods that change a list or dict in place
_MUTATORS = (
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "update",
    "setdefault",
    "add",
    "discard",
)


def _changed_in_place(st: ast.stmt) -> ast.expr | None:
    """What ``x op= v`` or ``x.append(v)`` (and the other in-place methods) changes."""
    if isinstance(st, ast.AugAssign):
        return st.target
    if (
        isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Call)
        and isinstance(st.value.func, ast.Attribute)
        and st.value.func.attr in _MUTATORS
    ):
        return st.value.func.value
    return None


def _context_key(node: ast.expr) -> str | None:
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in ("context_variables", "ctx", "context")
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    return None


def _effects_of_return(
    g: HandoffReader, owner: str, value: ast.expr | None, sets: dict[str, Any]
) -> tuple[n.Effect, ...] | None:
    effects: list[n.Effect] = [
        n.SetEffect(mm.name(k), n.Value(v, S), S)
        for k, v in sets.items()
        if v is None or isinstance(v, str | int | float | bool | list | dict)
    ]
    if value is None:
        return tuple(effects)
    node = g.mod.deref(value)
    if isinstance(node, ast.Call) and callee(node) in ("ReplyResult", "SwarmResult"):
        target_node = kwarg(node, "target" if callee(node) == "ReplyResult" else "agent")
        if target_node is not None and g.mod.const_or(target_node, "?") is not None:
            t = g.target(target_node, owner)
            if t is not None:
                effects.append(t.effect)
        return tuple(effects)
    if isinstance(node, ast.Call) and callee(node).endswith("Target"):
        t = g.target(node, owner)
        if t is not None:
            effects.append(t.effect)
    return tuple(effects)


def unrolled_calls(
    reader: AgentReader, calls: list[ast.Call], keep: Callable[[ast.Call], bool]
) -> Iterator[ast.Call]:
    """The ``calls`` that ``keep`` selects, each ``for`` loop around one unrolled as Python
    runs it (``for agent in [a, b]: register_hand_off(agent=agent, ...)`` -> one call per
    agent); a loop that cannot be unrolled statically is reported (M001) with what it holds."""
    for c in calls:
        if not keep(c):
            continue
        copies, loop = reader.mod.unrolled(c)
        if loop is not None:
            reader.report(
                M001,
                f"this `{callee(c)}` runs inside `for {ast.unparse(loop.target)} in "
                f"{_short(loop.iter)}:` (line {loop.lineno}), which cannot be unrolled statically "
                "(a list or tuple written in the file, the call directly in the loop body, no "
                "break/continue); what it registers was left out",
                c,
                help="write one call per agent, or loop over a list of the agents written in the file",
            )
            continue
        yield from copies


def _short(node: ast.AST, limit: int = 50) -> str:
    text = " ".join(ast.unparse(node).split()).replace("`", "'")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def add_function_tools(
    g: HandoffReader, agents: list[Agent], tools: dict[str, list[mm.Tool]]
) -> None:
    """Add to ``tools`` the agents' ``functions=[...]`` and their registered functions, each
    name once per agent (a handoff tool of the same name comes first)."""
    for a in agents:
        for fn in functions_of(g.mod, a.node):
            tool = tool_from_function(g, a.name, fn)
            if tool is not None and all(t.name != tool.name for t in tools.get(a.name, [])):
                tools.setdefault(a.name, []).append(tool)
    for owner, tool in registered_tools(g, [a.name for a in agents], tools):
        if all(t.name != tool.name for t in tools.get(owner, [])):
            tools.setdefault(owner, []).append(tool)


def manager_termination(
    reader: AgentReader, manager_args: ast.expr | None, label: str
) -> list[mm.Rule]:
    """The rule that ends the flow on the group manager's ``is_termination_msg``, from the
    manager's arguments (``group_manager_args`` of a pattern, ``swarm_manager_args`` of a
    swarm, named by ``label``; a dict literal or a ``dict(...)`` call): their text test
    (reported and left out when it is not one), or classic's default when they set none
    or set ``None`` (exactly "TERMINATE": the manager checks every message); arguments
    that cannot be read get the default too, with an M002 saying it was assumed."""
    mod = reader.mod
    margs = mod.deref(manager_args) if manager_args is not None else ast.Dict([], [])
    if isinstance(margs, ast.Call) and callee(margs) == "dict" and not margs.args:
        keys = [ast.Constant(k.arg) if k.arg else None for k in margs.keywords]
        margs = ast.Dict(keys, [k.value for k in margs.keywords])  # type: ignore[arg-type]
    if not isinstance(margs, ast.Dict) or None in margs.keys:
        reader.report(
            M002,
            f"`{label}` cannot be read without running the code: classic's default "
            'test (a message that is exactly "TERMINATE" ends the chat) is assumed; a '
            "test of their own is not",
            manager_args or margs,
        )
    else:
        for k, v in zip(margs.keys, margs.values, strict=True):
            if not (isinstance(k, ast.Constant) and k.value == "is_termination_msg"):
                continue
            if mod.const_or(v, "?") is None:
                break  # None: the default test
            pred = text_predicate(mod.deref(v), mod.function_of)
            if pred is None:
                reader.report(
                    M001,
                    "this `is_termination_msg` is not a recognised text test; left out",
                    v,
                )
                return []
            return [
                mm.Rule(
                    pred.cond,
                    mm.terminate("is_termination_msg"),
                    -10,
                    f"{label} is_termination_msg",
                )
            ]
    return [
        mm.Rule(
            DEFAULT_TERMINATION,
            mm.terminate("is_termination_msg"),
            -10,
            'classic GroupChatManager default: a message that is exactly "TERMINATE" ends the chat',
        )
    ]


__all__ = [
    "DEFAULT_TERMINATION",
    "MANAGER",
    "HandoffReader",
    "Target",
    "add_function_tools",
    "context_rule",
    "functions_of",
    "gated",
    "items_of",
    "manager_termination",
    "registered_tools",
    "report_extras",
    "tool_from_function",
    "unrolled_calls",
]
