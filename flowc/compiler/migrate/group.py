"""The AG2 0.9+ group API (``autogen.agentchat.group``) Python -> `.flow`.

Read statically, like :mod:`.classic`. Translated (``autogen==0.14.1`` /
``ag2==0.9.x``, ``group_utils.determine_next_agent``):

- ``initiate_group_chat`` / ``run_group_chat`` / ``a_*`` / ``run_group_chat_iter`` with a
  ``DefaultPattern``, ``AutoPattern``, ``RoundRobinPattern``, ``RandomPattern`` or
  ``ManualPattern`` built in the file: the user agent (or a synthesized human ``user``)
  sends ``messages``, then ``initial_agent`` speaks; ``max_rounds`` (default 20) is the cap;
- ``agent.handoffs``: ``add_llm_condition(s)`` (``OnCondition`` -> a tool named
  ``transfer_to_<target>_<n>`` as AG2 names it, plus a ``when tool`` rule),
  ``add_context_condition(s)`` (``OnContextCondition`` -> ``from A and COND``, priority 10),
  ``add_after_work(s)`` (conditional, priority 20) and ``set_after_work`` (priority 30);
- targets ``AgentTarget``, ``AgentNameTarget``, ``RevertToUserTarget``, ``StayTarget``,
  ``TerminateTarget``, ``GroupManagerTarget`` (a selector speaker), ``AskUserTarget``,
  ``RandomAgentTarget``; conditions ``StringContextCondition``,
  ``ExpressionContextCondition`` / ``ContextExpression``, ``StringAvailableCondition``,
  ``ExpressionAvailableCondition``;
- ``ContextVariables(data={...})`` -> ``context``; the agents' ``functions=[...]`` -> tools
  whose ``return ReplyResult(target=..., ...)`` statements and constant
  ``context_variables["k"] = v`` writes become declared effects.
"""

from __future__ import annotations

import ast
from typing import Any

import attrs

from flowc.compiler.migrate import model as mm
from flowc.compiler.migrate.classic import ClassicResult, NotRecognised, _Reader
from flowc.compiler.migrate.ctxexpr import ExpressionError, Node, parse_context_expression
from flowc.compiler.migrate.pyread import NotStatic, PyModule, callee, kwarg
from flowc.compiler.migrate.textpred import text_predicate
from flowc.diagnostics import M001, M002, M003
from flowc.dsl import nodes as n

PATTERNS = ("DefaultPattern", "AutoPattern", "RoundRobinPattern", "RandomPattern", "ManualPattern")
RUNNERS = (
    "initiate_group_chat", "run_group_chat", "a_initiate_group_chat", "a_run_group_chat",
    "run_group_chat_iter",
)
SWARM_RUNNERS = ("initiate_swarm_chat", "a_initiate_swarm_chat", "run_swarm", "a_run_swarm")
AFTER_WORK_OPTIONS = ("TERMINATE", "REVERT_TO_USER", "STAY", "SWARM_MANAGER")
DEFAULT_MAX_ROUNDS = 20
MANAGER = "chat_manager"
S = mm.S


@attrs.frozen
class _Target:
    """A translated classic target: a rule target, the tool effect that does the same,
    and how AG2 names it in a generated function (``normalized_name``)."""

    target: n.Target
    effect: n.Effect
    normalized: str
    exact: bool = True


class _Group:
    def __init__(self, reader: _Reader, calls: list[ast.Call]):
        self.r = reader
        self.mod: PyModule = reader.mod
        self.calls = calls
        self.user = "user"
        self.selector_used = False
        self.context: dict[str, Any] = {}
        self.names: list[str] = []
        self.has_user = True

    # ── targets and conditions ──

    def target(self, node: ast.expr | None, owner: str) -> _Target | None:
        if node is None:
            return None
        agent = self.r.agent_of(node)
        if agent is not None and agent.name in [*self.names, self.user]:
            return _Target(mm.speaker_target(agent.name), n.HandoffEffect(mm.name(agent.name), S),
                           agent.name)
        node = self.mod.deref(node)
        if isinstance(node, ast.Call) and callee(node) in ("AfterWork", "AFTER_WORK"):
            return self.target(kwarg(node, "agent", 0), owner)
        if isinstance(node, ast.Attribute) and node.attr in AFTER_WORK_OPTIONS:
            return self.option(node.attr, owner, node)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in AFTER_WORK_OPTIONS:
                return self.option(node.value, owner, node)
            if node.value in [*self.names, self.user]:
                return _Target(mm.speaker_target(node.value), n.HandoffEffect(mm.name(node.value), S),
                               node.value)
        if isinstance(node, ast.Dict):
            self.r.report(M001, "a handoff to a nested chat has no equivalent in one workflow "
                                "channel; left out", node, help="run the nested chat as its own flow")
            return None
        if not isinstance(node, ast.Call):
            self.r.report(M001, "this transition target cannot be read without running the code; "
                                "left out", node)
            return None
        kind = callee(node)
        if kind in ("AgentTarget", "AgentNameTarget"):
            agent_node = kwarg(node, "agent" if kind == "AgentTarget" else "agent_name", 0)
            if kind == "AgentTarget":
                agent = self.r.agent_of(agent_node)
                name = agent.name if agent is not None else None
            else:
                value = self.mod.const_or(agent_node, None)
                name = value if isinstance(value, str) else None
            if name is None or name not in [*self.names, self.user]:
                self.r.report(M001, f"`{kind}` names no agent of this group; left out", node)
                return None
            return _Target(mm.speaker_target(name), n.HandoffEffect(mm.name(name), S), name)
        if kind == "RevertToUserTarget":
            return _Target(n.InitiatorTarget(S), n.HandoffEffect(mm.name(self.user), S), "revert_to_user")
        if kind == "StayTarget":
            return _Target(n.StayTarget(S), n.HandoffEffect(mm.name(owner), S), "stay")
        if kind == "TerminateTarget":
            return _Target(mm.terminate(), n.FinishEffect(None, S), "terminate")
        if kind == "GroupManagerTarget":
            self.selector_used = True
            return _Target(mm.speaker_target(MANAGER), n.HandoffEffect(mm.name(MANAGER), S),
                           "the group manager", exact=False)
        if kind == "AskUserTarget":
            self.r.report(M002, "`AskUserTarget` became a turn of the user: classic asks at the "
                                "console which agent speaks next", node)
            return _Target(mm.speaker_target(self.user), n.HandoffEffect(mm.name(self.user), S),
                           "ask_user", exact=False)
        if kind == "RandomAgentTarget":
            agents = self.r.agent_list(kwarg(node, "agents", 0), "agents", node)
            ids = [a.name for a in agents]
            if not ids:
                return None
            self.r.report(M002, "`RandomAgentTarget` became `random_agent`: draws come from the "
                                "envelope id, not Python's `random`", node)
            # classic draws among the agents minus the current one (`RandomAgentTarget.resolve`)
            return _Target(mm.call_target("random_agent", agent_ids=ids, allow_repeat=False),
                           n.HandoffEffect(mm.name(ids[0]), S), "random", exact=False)
        if kind in ("NestedChatTarget", "GroupChatTarget", "FunctionTarget"):
            what = {"NestedChatTarget": "a nested chat", "GroupChatTarget": "a nested group chat",
                    "FunctionTarget": "a Python function that picks the target"}[kind]
            self.r.report(M001, f"`{kind}` ({what}) has no equivalent in one workflow channel; "
                                "this transition was left out", node,
                          help="run it as its own flow, or hand-port FunctionTarget as a custom target")
            return None
        self.r.report(M001, f"unknown transition target `{kind}`; left out", node)
        return None

    def option(self, option: str, owner: str, at: ast.AST) -> _Target | None:
        """Legacy swarm ``AfterWorkOption``s."""
        if option == "TERMINATE":
            return _Target(mm.terminate(), n.FinishEffect(None, S), "terminate")
        if option == "STAY":
            return _Target(n.StayTarget(S), n.HandoffEffect(mm.name(owner), S), "stay")
        if option == "REVERT_TO_USER":
            if not self.has_user:
                return _Target(mm.terminate(), n.FinishEffect(None, S), "terminate")
            return _Target(n.InitiatorTarget(S), n.HandoffEffect(mm.name(self.user), S), "revert_to_user")
        self.selector_used = True
        return _Target(mm.speaker_target(MANAGER), n.HandoffEffect(mm.name(MANAGER), S),
                       "swarm_manager", exact=False)

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
        if kind == "cmp" and tree[1] in ("==", "!=") and tree[2][0] == "var" and tree[3][0] == "lit":
            return n.ContextCond(mm.name(tree[2][1]), tree[1], n.Value(tree[3][1], S), S)
        if kind == "not":
            inner = self._simple(tree[1])
            return n.NotCond(inner, S) if inner is not None else None
        if kind in ("and", "or"):
            left, right = self._simple(tree[1]), self._simple(tree[2])
            if left is None or right is None:
                return None
            cls = n.AndCond if kind == "and" else n.OrCond
            items = [*(left.items if isinstance(left, cls) else (left,)),
                     *(right.items if isinstance(right, cls) else (right,))]
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
            key = self.mod.const_or(key_node, None)
            if isinstance(key, str):
                return self.flag(key)
        elif kind in ("ExpressionContextCondition", "ExpressionAvailableCondition", "ContextExpression"):
            inner = kwarg(node, "expression", 0)
            if kind == "ContextExpression":
                inner = node
            inner = self.mod.deref(inner) if inner is not None else None
            if isinstance(inner, ast.Call) and callee(inner) == "ContextExpression":
                inner = kwarg(inner, "expression", 0)
            text = self.mod.const_or(inner, None)
            if isinstance(text, str):
                return self.expression(text, node)
        self.r.report(M001, f"the condition `{kind or 'callable'}` cannot be translated; left out", node)
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
                    self.r.report(M002, "a ContextStr condition is rendered per turn in classic; the "
                                        "tool's description keeps the template as written", node)
                    return value
        if isinstance(node, ast.Lambda) or (isinstance(node, ast.Name) and node.id in self.mod.functions):
            self.r.report(M001, "this handoff's condition text is computed by Python code at run time; "
                                "the tool was kept with a generic description and the code left out", node,
                          help="write the condition as a string (the tool's description)")
            return None
        value = self.mod.const_or(node, None)
        return value if isinstance(value, str) else None


def _gated(
    cond: n.Cond, available: ast.expr | None, mod: PyModule, g: _Group, reader: _Reader
) -> n.Cond | None:
    """An ``OnCondition``'s routing condition with its ``available`` gate, if any;
    None when the gate cannot be translated (it was reported)."""
    if available is None or mod.const_or(available, "?") is None:
        return cond
    gate = g.context_condition(available)
    if gate is None:
        return None
    if gate is True:
        return cond
    assert not isinstance(gate, bool)
    reader.report(M002, "an `available` condition became a gate on the routing rule: "
                        "the model still sees the tool when it is not available", available)
    return n.AndCond((cond, gate), S)


def _items(mod: PyModule, call: ast.Call, single: bool) -> list[ast.expr]:
    arg = call.args[0] if call.args else (call.keywords[0].value if call.keywords else None)
    if arg is None:
        return []
    if single:
        return [arg]
    return mod.elements(arg) or []


def translate_group(reader: _Reader, calls: list[ast.Call]) -> ClassicResult:
    """Translate the first pattern + ``initiate_group_chat`` of a file."""
    mod = reader.mod
    g = _Group(reader, calls)
    runner = next((c for c in calls if callee(c) in RUNNERS), None)
    pattern_node = kwarg(runner, "pattern", 0) if runner is not None else None
    pattern = mod.deref(pattern_node) if pattern_node is not None else None
    if not isinstance(pattern, ast.Call) or callee(pattern) not in PATTERNS:
        pattern = next((c for c in calls if callee(c) in PATTERNS), None)
    if pattern is None:
        reader.report(M001, "the group chat's pattern cannot be read statically", runner,
                      help="build the pattern in this file: DefaultPattern(initial_agent=..., agents=[...])")
        raise NotRecognised(reader.findings)
    kind = callee(pattern)
    agents = reader.agent_list(kwarg(pattern, "agents"), "agents", pattern)
    initial = reader.agent_of(kwarg(pattern, "initial_agent"))
    if initial is None or len(agents) < 1:
        reader.report(M001, "the pattern's `initial_agent` or `agents` cannot be read statically", pattern)
        raise NotRecognised(reader.findings)
    user_node = kwarg(pattern, "user_agent")
    user_agent = reader.agent_of(user_node) if user_node is not None else None
    g.names = [a.name for a in agents]
    g.user = user_agent.name if user_agent is not None else ("user" if "user" not in g.names else "task_user")

    # context
    ctx_node = kwarg(pattern, "context_variables")
    if ctx_node is not None:
        target = mod.deref(ctx_node)
        data_node = kwarg(target, "data", 0) if isinstance(target, ast.Call) else target
        try:
            data = mod.const(data_node)
            if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
                raise NotStatic("not a dict")
            g.context = data
        except NotStatic:
            reader.report(M001, "the initial context variables cannot be read statically; left out",
                          ctx_node, help="write them as ContextVariables(data={...}) with literal values")

    # runner settings
    max_rounds: int | None = DEFAULT_MAX_ROUNDS
    kickoff: str | None = None
    sender: str | None = None  # a group agent named by the first message sends the kickoff
    if runner is not None:
        mr = kwarg(runner, "max_rounds", 2)
        if mr is not None:
            value = mod.const_or(mr, None)
            max_rounds = value if isinstance(value, int) and value >= 1 else None
            if max_rounds is None:
                reader.report(M001, "`max_rounds` cannot be read statically; the flow has no cap", mr)
        msg = mod.const_or(kwarg(runner, "messages", 1), None)
        kickoff = msg if isinstance(msg, str) else None
        if isinstance(msg, list) and msg and isinstance(msg[-1], dict):
            text = msg[-1].get("content")
            kickoff = text if isinstance(text, str) else None
            sender = _named_sender(g, msg, user_agent is not None, kwarg(runner, "messages", 1) or runner)
        if any(kwarg(a.node, "functions") is not None for a in agents) or any(
            callee(c) in ("add_llm_condition", "add_llm_conditions", "add_context_condition",
                          "add_context_conditions", "add", "add_many") for c in calls
        ):
            reader.report(M002, "classic `max_rounds` also counts the hidden tool-executor turns and "
                                "transit messages; the flow counts only speaking turns", mr or runner)
    else:
        reader.report(M002, "no initiate_group_chat/run_group_chat call found: max_rounds defaults to 20",
                      pattern)

    guard_rules, guards_seen = _guardrails(g, calls)
    _report_extras(reader, calls, runner, guards_seen)

    # handoffs per agent, in the order the file adds them
    by_name = {a.name: a for a in agents}
    if user_agent is not None:
        by_name[user_agent.name] = user_agent
    llm: dict[str, list[tuple[ast.expr, ast.Call]]] = {}
    ctx: dict[str, list[ast.expr]] = {}
    after: dict[str, list[ast.expr]] = {}
    unconditional: dict[str, ast.expr] = {}
    for c in calls:
        func = c.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)
                and func.value.attr == "handoffs"):
            continue
        owner_agent = reader.agent_of(func.value.value)
        if owner_agent is None or owner_agent.name not in by_name:
            continue
        oname = owner_agent.name
        method = func.attr
        if method in ("add_llm_condition", "add_llm_conditions"):
            for item in _items(mod, c, method == "add_llm_condition"):
                llm.setdefault(oname, []).append((item, c))
        elif method in ("add_context_condition", "add_context_conditions"):
            ctx.setdefault(oname, []).extend(_items(mod, c, method == "add_context_condition"))
        elif method in ("add_after_work", "add_after_works"):
            after.setdefault(oname, []).extend(_items(mod, c, method == "add_after_work"))
        elif method == "set_after_work":
            tnode = kwarg(c, "target", 0)
            if tnode is not None:
                unconditional[oname] = tnode
        elif method in ("add", "add_many"):
            for item in _items(mod, c, method == "add"):
                obj = mod.deref(item)
                kind_of = callee(obj) if isinstance(obj, ast.Call) else ""
                if kind_of == "OnCondition":
                    llm.setdefault(oname, []).append((item, c))
                elif kind_of == "OnContextCondition":
                    ctx.setdefault(oname, []).append(item)
                else:
                    reader.report(M001, "this handoff cannot be read statically; left out", item)
    for a in agents:
        if kwarg(a.node, "handoffs") is not None:
            reader.report(M001, f"`{a.name}`'s `handoffs=` argument is not read by this version; "
                                "use `agent.handoffs.add_...` calls", kwarg(a.node, "handoffs"))

    # pattern-generated after works replace the agents' own unconditional ones
    generated: dict[str, n.Target] = {}
    pattern_note = ""
    ring: list[str] = []
    if kind == "RoundRobinPattern":
        ring = [initial.name] + [m for m in g.names if m != initial.name and m != g.user]
        if user_agent is not None:
            ring.append(g.user)
        for i, member in enumerate(ring):
            generated[member] = mm.speaker_target(ring[(i + 1) % len(ring)])
        pattern_note = "RoundRobinPattern: after works form the ring initial agent, other agents, user"
    elif kind == "RandomPattern":
        members = g.names + ([g.user] if user_agent is not None else [])
        for member in members:
            generated[member] = mm.call_target(
                "random_agent", agent_ids=[x for x in members if x != member], allow_repeat=True)
        reader.report(M002, "RandomPattern became `random_agent` after works: draws come from the "
                            "envelope id, not Python's `random`", pattern)
    group_after: n.Target | None = None
    gaw = kwarg(pattern, "group_after_work")
    if gaw is not None:
        t = g.target(gaw, initial.name)
        group_after = t.target if t is not None else None
    elif kind == "AutoPattern":
        g.selector_used = True
        group_after = mm.speaker_target(MANAGER)
    elif kind == "ManualPattern":
        reader.report(M002, "ManualPattern asks a person at the console who speaks next; the flow "
                            "hands the turn to the user instead", pattern)
        group_after = mm.speaker_target(g.user)

    # rules
    rules: list[mm.Rule] = []
    tools: dict[str, list[mm.Tool]] = {}
    manager_args = kwarg(pattern, "group_manager_args")
    if manager_args is not None:
        margs = mod.deref(manager_args)
        if isinstance(margs, ast.Dict):
            for k, v in zip(margs.keys, margs.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == "is_termination_msg":
                    pred = text_predicate(mod.deref(v), mod.functions)
                    if pred is None:
                        reader.report(M001, "this `is_termination_msg` is not a recognised text test; "
                                            "left out", v)
                    else:
                        rules.append(mm.Rule(pred.cond, mm.terminate("is_termination_msg"), -10,
                                             "group_manager_args is_termination_msg"))
    rules.extend(guard_rules)
    llm_reported = False
    for owner in [*g.names, g.user]:
        for i, (item, at) in enumerate(llm.get(owner, []), start=1):
            obj = mod.deref(item)
            if not isinstance(obj, ast.Call) or callee(obj) != "OnCondition":
                reader.report(M001, "this OnCondition cannot be read statically; left out", item)
                continue
            t = g.target(kwarg(obj, "target", 0), owner)
            if t is None:
                continue
            tool_name = f"transfer_to_{t.normalized}_{i}"
            if " " in t.normalized:
                reader.report(M002, f"AG2 names this handoff function `{tool_name}` (with spaces); the "
                                    "tool keeps that name in backquotes", obj)
            doc = g.llm_text(kwarg(obj, "condition", 1)) or f"Hand off to {t.normalized}."
            tools.setdefault(owner, []).append(mm.Tool(tool_name, doc))
            cond = _gated(mm.tool_cond(tool_name), kwarg(obj, "available", 2), mod, g, reader)
            if cond is None:
                continue
            rules.append(mm.Rule(cond, t.target, 0,
                                 f"{owner}: OnCondition (the model decides by calling the tool)"))
            if not llm_reported:
                llm_reported = True
                reader.report(M002, "LLM-judged handoffs (OnCondition) became tools named as AG2 names "
                                    "them, routed by `when tool` rules", at)
    for owner in [*g.names, g.user]:
        for item in ctx.get(owner, []):
            rule = _context_rule(g, owner, item, 10, "OnContextCondition")
            if rule is not None:
                rules.append(rule)
                reader.report(M002, "OnContextCondition is checked before the agent's model runs in "
                                    "classic; the flow checks it after the agent's turn", item)
        for item in after.get(owner, []):
            rule = _context_rule(g, owner, item, 20, "conditional after work")
            if rule is not None:
                rules.append(rule)
        if owner in generated:
            rules.append(mm.Rule(mm.from_(owner), generated[owner], 30, "after work (from the pattern)"))
        elif owner in unconditional:
            t = g.target(unconditional[owner], owner)
            if t is not None:
                rules.append(mm.Rule(mm.from_(owner), t.target, 30, "after work"))
    no_user = sender is not None and sender != g.user and user_agent is None
    if sender is not None and sender != g.user:
        # classic's first turn goes to the initial agent whoever sent the kickoff
        # (`group_utils.determine_next_agent`); later turns of the sender follow its handoffs
        rules.append(mm.Rule(mm.call_cond("turn_count_at_most", turns=1), mm.speaker_target(initial.name),
                             FIRST_TURN_PRIORITY, f"the kickoff (sent by {sender}) goes to the initial agent"))
    if no_user:
        pass  # classic has no user here (no temporary `_User` when a group agent sends the kickoff)
    elif not (user_agent is not None and (after.get(g.user) or g.user in unconditional
                                          or g.user in generated)):
        rules.append(mm.Rule(mm.from_(g.user), mm.speaker_target(initial.name), 40,
                             "the user's message goes to the initial agent"))
        reader.report(M002, "after a later user turn classic returns to the agent that spoke before "
                            "the user; the flow sends every user turn to the initial agent", pattern)

    # tools from functions=[...]
    for a in agents:
        fns = mod.elements(kwarg(a.node, "functions"))
        for fn in fns or []:
            tool = _tool_from_function(g, a.name, fn)
            if tool is not None and all(t.name != tool.name for t in tools.get(a.name, [])):
                tools.setdefault(a.name, []).append(tool)

    speakers: list[mm.Speaker] = []
    user_role = (user_agent.role if user_agent is not None and user_agent.role else
                 "The user who sends the task (classic pattern `user_agent`; a temporary `_User` "
                 "when there is none).")
    if not no_user:
        speakers.append(mm.Speaker(g.user, True, user_role, tuple(tools.get(g.user, ()))))
    for a in agents:
        if a.name == g.user:
            continue
        speakers.append(mm.Speaker(a.name, a.human, a.role, tuple(tools.get(a.name, ()))))
    if g.selector_used:
        speakers.append(mm.Speaker(
            MANAGER, False,
            "Chooses the next speaker (classic group manager, GroupManagerTarget / AutoPattern): calls "
            "the transfer tool of the agent who should speak next.",
            tuple(mm.Tool(f"transfer_to_{c}", f"{c} speaks next.") for c in g.names),
        ))
        for cand in g.names:
            rules.append(mm.Rule(mm.tool_cond(f"transfer_to_{cand}"), mm.speaker_target(cand), 0))
        rules.append(mm.Rule(mm.from_(MANAGER), mm.terminate("no_speaker_selected"), 0,
                             "the selector chose nobody"))
        reader.report(M002, "speaker selection by the group manager's LLM became the selector speaker "
                            f"`{MANAGER}` with one `transfer_to_<agent>` tool per agent", pattern)
    otherwise = group_after
    if isinstance(otherwise, n.TerminateTarget) and otherwise.reason is None:
        otherwise = None  # the implicit default
    if {sp.name for sp in speakers} <= mm.always_routed(rules):
        otherwise = None  # every speaker has an unconditional after work: never reached
    exact = kind == "RoundRobinPattern" and not g.selector_used and not any(
        d.code is M001 for d in reader.findings) and not llm and not ctx and not after
    scenarios: list[n.Scenario] = []
    sequences: list[tuple[str, ...]] = []
    if exact and max_rounds is not None:
        seq = [sender or g.user, initial.name]
        while len(seq) < min(max_rounds, 24):
            seq.append(ring[(ring.index(seq[-1]) + 1) % len(ring)] if seq[-1] in ring else initial.name)
        items: list[n.ScenarioItem] = [mm.say(seq[0], kickoff or "the task")]
        items += [mm.say(sp, f"{sp}, turn {i + 2}") for i, sp in enumerate(seq[1:])]
        items.append(mm.expect_terminate("max_turns") if len(seq) == max_rounds
                     else mm.expect_next(ring[(ring.index(seq[-1]) + 1) % len(ring)]))
        scenarios.append(mm.scenario("pattern speaking order", items))
        sequences.append(tuple(seq))
    title = mm.identifier(mod.source.name.rsplit("/", 1)[-1].rsplit(".", 1)[0])
    migration = mm.Migration(
        title=title,
        source_kind=f"the AG2 group API, {kind} ({mod.source.name.rsplit('/', 1)[-1]})",
        description=kickoff.strip().splitlines()[0] if kickoff and kickoff.strip() else None,
        speakers=tuple(speakers),
        start=sender or g.user,
        max_turns=max_rounds,
        max_turns_comment="classic max_rounds (it also counted tool-executor turns)",
        context=tuple(g.context.items()),
        rules=tuple(rules),
        otherwise=otherwise,
        otherwise_comment="the pattern's group after work" if otherwise is not None else None,
        scenarios=tuple(scenarios),
        notes=tuple(x for x in (pattern_note + (", reproduced exactly" if exact else "") + "."
                                if pattern_note else "",) if x),
    )
    return ClassicResult(migration, tuple(reader.findings), tuple(sequences))


GUARDRAIL_PRIORITY = -5
FIRST_TURN_PRIORITY = -8


def _named_sender(g: _Group, messages: list[Any], has_user: bool, at: ast.AST) -> str | None:
    """``messages=[{"name": "agent", "content": ...}]``: classic (``group_utils ·
    process_initial_messages``) makes the agent named by the *first* message the sender of the
    kickoff; a name that is no group agent (nor the user agent) is a classic ``ValueError``."""
    first = messages[0] if isinstance(messages[0], dict) else {}
    name = first.get("name")
    if len(messages) > 1:
        g.r.report(M002, "only the last of the initial `messages` becomes the kickoff; classic also "
                         "puts the earlier ones in the agents' history", at)
    if not isinstance(name, str):
        return None
    if name in g.names or (has_user and name == g.user):
        return name
    g.r.report(M001, f"the first message names `{name}`, which is no agent of this group (classic "
                     "raises ValueError); the user sends the kickoff instead", at)
    return None
GUARDRAIL_REGISTRATIONS = ("register_output_guardrail", "register_output_guardrails",
                           "register_input_guardrail", "register_input_guardrails")


def _guardrails(g: _Group, calls: list[ast.Call]) -> tuple[list[mm.Rule], set[int]]:
    """``agent.register_output_guardrail(RegexGuardrail(name, condition, target))`` ->
    ``when from agent and text_matches(pattern = condition) then target`` (priority -5: after
    the termination text, before every handoff, as classic's guardrail target pre-empts them);
    input guardrails and ``LLMGuardrail`` are reported. Returns the rules and the ids of the
    guardrail constructor calls already accounted for.

    Classic (``autogen==0.9.10 · groupchat · GroupChatManager._run_output_guardrails``) runs
    ``re.search`` on the agent's reply, replaces the reply with the activation message and sets
    the next target through the tool executor.
    """
    rules: list[mm.Rule] = []
    seen: set[int] = set()
    for c in calls:
        func = c.func
        if not (isinstance(func, ast.Attribute) and func.attr in GUARDRAIL_REGISTRATIONS):
            continue
        owner = g.r.agent_of(func.value)
        items = _items(g.mod, c, not func.attr.endswith("s"))
        for item in items:
            obj = g.mod.deref(item)
            kind = callee(obj) if isinstance(obj, ast.Call) else ""
            if isinstance(obj, ast.Call):
                seen.add(id(obj))
            if owner is None or owner.name not in g.names:
                g.r.report(M001, f"`{func.attr}` on an agent outside this group cannot be translated; "
                                 "left out", c)
                continue
            if "input" in func.attr:
                g.r.report(M001, f"an input guardrail (`{kind or 'guardrail'}` on `{owner.name}`) acts "
                                 "before the agent replies; a flow rule only sees a message after it is "
                                 "sent; left out", item,
                           help="check the incoming message in the agent itself, or guard the sender's "
                                "output with a `when from SENDER and text_matches(...)` rule")
                continue
            if kind != "RegexGuardrail" or not isinstance(obj, ast.Call):
                g.r.report(M001, f"`{kind or 'this guardrail'}` on `{owner.name}` is judged at run time "
                                 "(by a model or by code); left out", item,
                           help="a regex output guardrail can be written as "
                                "`when from A and text_matches(pattern = ...) then T`")
                continue
            pattern = g.mod.const_or(kwarg(obj, "condition", 1), None)
            target = g.target(kwarg(obj, "target", 2), owner.name)
            if not isinstance(pattern, str):
                g.r.report(M001, "the guardrail's regular expression cannot be read statically; left out",
                           obj)
                continue
            if target is None:
                continue
            label = g.mod.const_or(kwarg(obj, "name", 0), None)
            cond = n.AndCond((mm.from_(owner.name), mm.call_cond("text_matches", pattern=pattern)), S)
            rules.append(mm.Rule(cond, target.target, GUARDRAIL_PRIORITY,
                                 f"{owner.name}: output guardrail"
                                 + (f" `{label}`" if isinstance(label, str) else "")))
            g.r.report(M002, f"the regex output guardrail on `{owner.name}` became a "
                             "`text_matches` rule: classic replaces the matching reply with the "
                             "guardrail's activation message before anyone sees it (and checks the "
                             "termination text on that message); the flow keeps the reply as sent", obj)
    return rules, seen


def _report_extras(reader: _Reader, calls: list[ast.Call], runner: ast.Call | None,
                   handled: set[int] | None = None) -> None:
    """Constructs around a group chat that the flow does not carry: say so, never drop silently."""
    for c in calls:
        kind = callee(c)
        if handled is not None and id(c) in handled:
            continue
        if kind in ("register_nested_chats", "initiate_chats"):
            reader.report(M001, f"`{kind}` (nested or sequential chats) has no equivalent in one "
                                "workflow channel; it was left out", c,
                          help="run the nested chat as its own flow, or as a tool of the agent")
        elif kind in ("RegexGuardrail", "LLMGuardrail"):
            reader.report(M001, f"`{kind}` checks messages at run time; it was left out", c,
                          help="a regex output guardrail can be written as "
                               "`when from A and text_matches(pattern = ...) then T`")
        elif kind in ("UpdateSystemMessage", "register_hook"):
            reader.report(M002, f"`{kind}` changes an agent's prompt at run time; it is agent-side "
                                "behaviour, not routing, and is not in the flow", c)
    if runner is not None:
        for key in ("safeguard_policy", "safeguard_llm_config"):
            node = kwarg(runner, key)
            if node is not None:
                reader.report(M001, f"`{key}` (run-time safeguards) has no equivalent in a flow; left out",
                              node)
        node = kwarg(runner, "exclude_transit_message")
        if node is not None:
            reader.report(M003, "`exclude_transit_message` only changes what agents see; dropped", node)


def _context_rule(g: _Group, owner: str, item: ast.expr, priority: int, what: str) -> mm.Rule | None:
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


def _tool_from_function(g: _Group, owner: str, fn_node: ast.expr) -> mm.Tool | None:
    mod = g.mod
    if not isinstance(fn_node, ast.Name):
        return None
    fn = mod.functions.get(fn_node.id)
    if fn is None:
        return mm.Tool(fn_node.id, None)
    alternatives: list[tuple[n.Effect, ...]] = []
    dynamic: set[str] = set()

    def visit(stmts: list[ast.stmt], sets: dict[str, Any]) -> None:
        local = dict(sets)
        for st in stmts:
            if isinstance(st, ast.Return):
                alt = _effects_of_return(g, owner, st.value, local)
                if alt is not None and alt not in alternatives:
                    alternatives.append(alt)
            elif isinstance(st, ast.Assign) and len(st.targets) == 1:
                key = _context_key(st.targets[0])
                if key is not None:
                    try:
                        local[key] = mod.const(st.value)
                    except NotStatic:
                        local.pop(key, None)
                        dynamic.add(key)
            elif isinstance(st, ast.If | ast.For | ast.While | ast.With | ast.Try):
                for body in _bodies(st):
                    visit(body, local)

    visit(list(fn.body), {})
    for key in sorted(dynamic):
        g.r.report(M002, f"tool `{fn.name}` sets `{key}` to a value computed at run time; the flow "
                         "cannot declare it (the checker will not know the value)", fn)
    doc = ast.get_docstring(fn)
    effects = tuple(a for a in alternatives if a)
    if effects and len(effects) != len(alternatives):
        g.r.report(M002, f"tool `{fn.name}` sometimes returns without routing or context writes; the "
                         "declaration lists only the calls that do something", fn)
    return mm.Tool(fn.name, doc.strip().splitlines()[0] if doc else None, effects)


def _bodies(st: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(st, ast.If | ast.For | ast.While):
        return [st.body, st.orelse]
    if isinstance(st, ast.With):
        return [st.body]
    if isinstance(st, ast.Try):
        return [st.body, *[h.body for h in st.handlers], st.orelse, st.finalbody]
    return []


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
    g: _Group, owner: str, value: ast.expr | None, sets: dict[str, Any]
) -> tuple[n.Effect, ...] | None:
    effects: list[n.Effect] = [
        n.SetEffect(mm.name(k), n.Value(v, S), S) for k, v in sets.items()
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


__all__ = ["translate_group", "translate_swarm"]


def translate_swarm(reader: _Reader, calls: list[ast.Call]) -> ClassicResult:
    """Translate a legacy swarm: ``initiate_swarm_chat`` / ``run_swarm`` with
    ``register_hand_off`` (``ON_CONDITION`` / ``OnCondition``, ``OnContextCondition``,
    ``AFTER_WORK`` / ``AfterWork``), in both the pyautogen <= 0.8 and the
    ``autogen.agentchat.contrib.swarm_agent`` spellings."""
    mod = reader.mod
    g = _Group(reader, calls)
    runner = next(c for c in calls if callee(c) in SWARM_RUNNERS)
    initial = reader.agent_of(kwarg(runner, "initial_agent", 0))
    agents = reader.agent_list(kwarg(runner, "agents", 2), "agents", runner)
    if initial is None or not agents:
        reader.report(M001, "the swarm's `initial_agent` or `agents` cannot be read statically", runner)
        raise NotRecognised(reader.findings)
    user_node = kwarg(runner, "user_agent", 3)
    user_agent = reader.agent_of(user_node) if user_node is not None else None
    g.names = [a.name for a in agents]
    g.has_user = user_agent is not None
    g.user = user_agent.name if user_agent is not None else ("user" if "user" not in g.names else "task_user")
    ctx_node = kwarg(runner, "context_variables", 5)
    if ctx_node is not None and mod.const_or(ctx_node, "?") is not None:
        target = mod.deref(ctx_node)
        data_node = kwarg(target, "data", 0) if isinstance(target, ast.Call) else target
        data = mod.const_or(data_node, None)
        if isinstance(data, dict) and all(isinstance(k, str) for k in data):
            g.context = data
        else:
            reader.report(M001, "the context variables cannot be read statically; left out", ctx_node)
    mr = kwarg(runner, "max_rounds", 4)
    max_rounds: int | None = DEFAULT_MAX_ROUNDS
    if mr is not None:
        value = mod.const_or(mr, None)
        max_rounds = value if isinstance(value, int) and value >= 1 else None
    reader.report(M002, "classic `max_rounds` also counts the swarm's tool-executor turns and transit "
                        "messages; the flow counts only speaking turns", mr or runner)
    msg = mod.const_or(kwarg(runner, "messages", 1), None)
    kickoff = msg if isinstance(msg, str) else None

    _report_extras(reader, calls, runner)

    # register_hand_off(agent, [...]) and agent.register_hand_off([...])
    handoffs: dict[str, list[ast.expr]] = {}
    for c in calls:
        if callee(c) != "register_hand_off":
            continue
        if isinstance(c.func, ast.Attribute) and reader.agent_of(c.func.value) is not None:
            owner_agent = reader.agent_of(c.func.value)
            items_node = kwarg(c, "hand_to", 0)
        else:
            owner_agent = reader.agent_of(kwarg(c, "agent", 0))
            items_node = kwarg(c, "hand_to", 1)
        if owner_agent is None or owner_agent.name not in [*g.names, g.user] or items_node is None:
            continue
        listed = mod.elements(items_node)
        handoffs.setdefault(owner_agent.name, []).extend(listed if listed is not None else [items_node])

    rules: list[mm.Rule] = []
    tools: dict[str, list[mm.Tool]] = {}
    llm_reported = False
    for owner in [*g.names, g.user]:
        used: set[str] = set()
        for item in handoffs.get(owner, []):
            obj = mod.deref(item)
            kind = callee(obj) if isinstance(obj, ast.Call) else ""
            if kind in ("OnCondition", "ON_CONDITION"):
                assert isinstance(obj, ast.Call)
                t = g.target(kwarg(obj, "target", 0), owner)
                if t is None:
                    continue
                base = f"transfer_{owner}_to_{t.normalized}"
                name, count = base, 2
                while name in used:
                    name, count = f"{base}_{count}", count + 1
                used.add(name)
                cond_node = kwarg(obj, "condition", 1)
                text = mod.const_or(cond_node, None)
                if not isinstance(text, str):
                    text = g.llm_text(cond_node)
                tools.setdefault(owner, []).append(mm.Tool(name, text or f"Hand off to {t.normalized}."))
                cond = _gated(mm.tool_cond(name), kwarg(obj, "available", 2), mod, g, reader)
                if cond is None:
                    continue
                rules.append(mm.Rule(cond, t.target, 0, f"{owner}: ON_CONDITION (the model decides)"))
                if not llm_reported:
                    llm_reported = True
                    reader.report(M002, "LLM-judged handoffs (ON_CONDITION) became tools named as the "
                                        "swarm names them, routed by `when tool` rules", obj)
            elif kind == "OnContextCondition":
                rule = _context_rule(g, owner, item, 10, "OnContextCondition")
                if rule is not None:
                    rules.append(rule)
                    reader.report(M002, "OnContextCondition is checked before the agent's model runs "
                                        "in classic; the flow checks it after the agent's turn", item)
            elif kind in ("AfterWork", "AFTER_WORK"):
                t = g.target(item, owner)
                if t is not None:
                    rules.append(mm.Rule(mm.from_(owner), t.target, 30, "AFTER_WORK"))
            else:
                reader.report(M001, "this hand-off cannot be read statically; left out", item)
    rules.append(mm.Rule(mm.from_(g.user), mm.speaker_target(initial.name), 40,
                         "the user's message goes to the initial agent"))
    reader.report(M002, "after a later user turn the swarm returns to the last swarm agent; the flow "
                        "sends every user turn to the initial agent", runner)
    aw = kwarg(runner, "after_work", 6)
    otherwise: n.Target | None = None
    if aw is not None:
        t = g.target(aw, initial.name)
        otherwise = t.target if t is not None else None
        if isinstance(otherwise, n.TerminateTarget) and otherwise.reason is None:
            otherwise = None
    for a in agents:
        for fn in mod.elements(kwarg(a.node, "functions")) or []:
            tool = _tool_from_function(g, a.name, fn)
            if tool is not None and all(t.name != tool.name for t in tools.get(a.name, [])):
                tools.setdefault(a.name, []).append(tool)
    user_role = (user_agent.role if user_agent is not None and user_agent.role else
                 "The user who sends the task (a temporary `_User` in classic when the swarm has none).")
    speakers = [mm.Speaker(g.user, True, user_role, tuple(tools.get(g.user, ())))]
    speakers += [mm.Speaker(a.name, a.human, a.role, tuple(tools.get(a.name, ())))
                 for a in agents if a.name != g.user]
    if g.selector_used:
        speakers.append(mm.Speaker(
            MANAGER, False, "Chooses the next speaker (classic AfterWorkOption.SWARM_MANAGER).",
            tuple(mm.Tool(f"transfer_to_{c}", f"{c} speaks next.") for c in g.names),
        ))
        for cand in g.names:
            rules.append(mm.Rule(mm.tool_cond(f"transfer_to_{cand}"), mm.speaker_target(cand), 0))
        rules.append(mm.Rule(mm.from_(MANAGER), mm.terminate("no_speaker_selected"), 0,
                             "the selector chose nobody"))
        reader.report(M002, "SWARM_MANAGER selection became the selector speaker "
                            f"`{MANAGER}` with one `transfer_to_<agent>` tool per agent", runner)
    if {sp.name for sp in speakers} <= mm.always_routed(rules):
        otherwise = None  # every speaker has an unconditional after work: never reached
    title = mm.identifier(mod.source.name.rsplit("/", 1)[-1].rsplit(".", 1)[0])
    migration = mm.Migration(
        title=title,
        source_kind=f"a legacy AG2 swarm ({mod.source.name.rsplit('/', 1)[-1]})",
        description=kickoff.strip().splitlines()[0] if kickoff and kickoff.strip() else None,
        speakers=tuple(speakers),
        start=g.user,
        max_turns=max_rounds,
        max_turns_comment="classic max_rounds (it also counted tool-executor turns)",
        context=tuple(g.context.items()),
        rules=tuple(rules),
        otherwise=otherwise,
        otherwise_comment="the swarm's after_work" if otherwise is not None else None,
    )
    return ClassicResult(migration, tuple(reader.findings), ())
