"""The legacy AG2 swarm (``initiate_swarm_chat`` / ``run_swarm``) Python -> `.flow`.

Read statically like :mod:`.group`, with the same handoff vocabulary
(:mod:`.handoffs`): ``register_hand_off`` with ``ON_CONDITION`` / ``OnCondition`` (a tool
named as the swarm names it, routed by a ``when tool`` rule), ``OnContextCondition`` and
``AFTER_WORK`` / ``AfterWork``, in both the pyautogen <= 0.8 and the
``autogen.agentchat.contrib.swarm_agent`` spellings; the swarm's ``after_work`` is the
flow's ``otherwise``; ``SWARM_MANAGER`` becomes a selector speaker.
"""

from __future__ import annotations

import ast

import flowc.migrate.model as mm
from flowc.diagnostics import M001, M002
from flowc.dsl import nodes as n
from flowc.migrate.agents import Agent, AgentReader
from flowc.migrate.handoffs import (
    MANAGER,
    HandoffReader,
    add_function_tools,
    context_rule,
    gated,
    manager_termination,
    report_extras,
    selector_speaker,
    unrolled_calls,
)
from flowc.migrate.pyread import callee, kwarg

SWARM_RUNNERS = ("initiate_swarm_chat", "a_initiate_swarm_chat", "run_swarm", "a_run_swarm")
DEFAULT_MAX_ROUNDS = 20


def translate_swarm(
    reader: AgentReader, calls: list[ast.Call], runner: ast.Call | None = None
) -> mm.Translation:
    """Translate a legacy swarm: ``initiate_swarm_chat`` / ``run_swarm`` with
    ``register_hand_off`` (``ON_CONDITION`` / ``OnCondition``, ``OnContextCondition``,
    ``AFTER_WORK`` / ``AfterWork``), in both the pyautogen <= 0.8 and the
    ``autogen.agentchat.contrib.swarm_agent`` spellings."""
    mod = reader.mod
    g = HandoffReader(reader, calls)
    runner = runner or next(c for c in calls if callee(c) in SWARM_RUNNERS)
    initial, agents, user_agent = _swarm_agents(reader, g, runner)
    _read_context(reader, g, runner)
    max_rounds = _max_rounds(reader, runner)
    msg = mod.const_or(kwarg(runner, "messages", 1), None)
    kickoff = msg if isinstance(msg, str) else None

    report_extras(reader, calls, runner)
    reader.report_own_termination(agents)

    rules, tools = _handoff_rules(reader, g, _registered_handoffs(reader, g, calls))
    # (the swarm's GroupChatManager ends the chat on its is_termination_msg too)
    rules[:0] = manager_termination(
        reader, kwarg(runner, "swarm_manager_args"), "swarm_manager_args"
    )
    otherwise = _after_work(g, runner, initial.name)
    if g.selector_used or _reaches_user(g.user, [r.target for r in rules], otherwise):
        # (the user speaks only the task otherwise: no later turn to return from)
        reader.report(
            M002,
            "after a later user turn the swarm returns to the last swarm agent; the flow "
            "sends every user turn to the initial agent",
            runner,
        )
    rules.append(
        mm.Rule(
            mm.from_(g.user),
            mm.speaker_target(initial.name),
            40,
            "the user's message goes to the initial agent",
        )
    )
    add_function_tools(g, agents, tools)
    speakers = _swarm_speakers(g, agents, user_agent, tools)
    called = any(sp.tools for sp in speakers)
    if called:  # (without tools classic's tool executor never speaks)
        reader.report(
            M002,
            "classic `max_rounds` also counts the swarm's tool-executor turns and transit "
            "messages; the flow counts only speaking turns",
            kwarg(runner, "max_rounds", 4) or runner,
        )
    if g.selector_used:
        selector, selector_rules = _swarm_manager(reader, g, runner)
        speakers.append(selector)
        rules += selector_rules
    nested_speakers, nested_rules = g.placeholders()
    speakers += nested_speakers
    rules += nested_rules
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
        max_turns_comment=mm.max_rounds_comment(g.selector_used, called),
        context=tuple(g.context.items()),
        rules=tuple(rules),
        otherwise=otherwise,
        otherwise_comment="the swarm's after_work" if otherwise is not None else None,
    )
    return mm.Translation(migration, tuple(reader.findings), ())


def _swarm_agents(
    reader: AgentReader, g: HandoffReader, runner: ast.Call
) -> tuple[Agent, list[Agent], Agent | None]:
    """The runner's initial agent, agents and user agent; sets ``g``'s agent names and
    user (the user agent's name, else a synthesized `user` as classic's temporary
    ``_User``). Raises :class:`NotRecognised` when the agents cannot be read statically."""
    initial = reader.agent_of(kwarg(runner, "initial_agent", 0))
    agents = reader.agent_list(kwarg(runner, "agents", 2), "agents", runner)
    if initial is None or not agents:
        reader.report(
            M001, "the swarm's `initial_agent` or `agents` cannot be read statically", runner
        )
        raise mm.NotRecognised(reader.findings)
    user_node = kwarg(runner, "user_agent", 3)
    user_agent = reader.agent_of(user_node) if user_node is not None else None
    g.names = [a.name for a in agents]
    g.has_user = user_agent is not None
    g.user = (
        user_agent.name if user_agent is not None else mm.free_name(g.names, "user", "task_user")
    )
    g.manager = mm.free_name([*g.names, g.user], MANAGER)
    return initial, agents, user_agent


def _read_context(reader: AgentReader, g: HandoffReader, runner: ast.Call) -> None:
    """The runner's ``context_variables`` (a dict, or a ``ContextVariables(data=...)``)
    become the flow's initial context (``g.context``); one that cannot be read
    statically is reported and left out."""
    mod = reader.mod
    ctx_node = kwarg(runner, "context_variables", 5)
    if ctx_node is not None and mod.const_or(ctx_node, "?") is not None:
        target = mod.deref(ctx_node)
        data_node = kwarg(target, "data", 0) if isinstance(target, ast.Call) else target
        data = mod.const_name_or(data_node, None)
        if isinstance(data, dict) and all(isinstance(k, str) for k in data):
            g.context = data
        else:
            reader.report(
                M001, "the context variables cannot be read statically; left out", ctx_node
            )


def _max_rounds(reader: AgentReader, runner: ast.Call) -> int | None:
    """The runner's ``max_rounds`` (classic's default when absent, None, reported, when
    not a positive int)."""
    return reader.round_cap(kwarg(runner, "max_rounds", 4), "max_rounds", DEFAULT_MAX_ROUNDS)


def _reaches_user(user: str, targets: list[n.Target], otherwise: n.Target | None) -> bool:
    """Whether a handoff or the swarm's after work can give the user a later turn (a
    revert to the user, or the user agent as a target)."""
    return any(
        isinstance(t, n.InitiatorTarget)
        or (isinstance(t, n.SpeakerTarget) and t.speaker.value == user)
        for t in [*targets, *([otherwise] if otherwise is not None else [])]
    )


def _registered_handoffs(
    reader: AgentReader, g: HandoffReader, calls: list[ast.Call]
) -> dict[str, list[ast.expr]]:
    """The handoff items of each agent (by name), from ``register_hand_off(agent, [...])``
    and ``agent.register_hand_off([...])`` calls (loops unrolled), in call order. A call on
    something that is not an agent of this file is reported; one for an agent outside the
    swarm is skipped."""
    mod = reader.mod
    handoffs: dict[str, list[ast.expr]] = {}
    for c in unrolled_calls(reader, calls, lambda c: callee(c) == "register_hand_off"):
        if isinstance(c.func, ast.Attribute) and reader.agent_of(c.func.value) is not None:
            owner_agent = reader.agent_of(c.func.value)
            items_node = kwarg(c, "hand_to", 0)
        else:
            owner_node = (
                kwarg(c, "agent", 0) if not isinstance(c.func, ast.Attribute) else c.func.value
            )
            owner_agent = reader.agent_of(owner_node)
            items_node = kwarg(c, "hand_to", 1)
            if owner_agent is None and items_node is not None:
                reader.report(
                    M001,
                    "`register_hand_off` on something that is not an agent created in this "
                    "file; these handoffs were left out",
                    owner_node or c,
                )
        if owner_agent is None or owner_agent.name not in [*g.names, g.user] or items_node is None:
            continue
        listed = mod.elements(items_node)
        handoffs.setdefault(owner_agent.name, []).extend(
            listed if listed is not None else [items_node]
        )
    return handoffs


def _handoff_rules(
    reader: AgentReader, g: HandoffReader, handoffs: dict[str, list[ast.expr]]
) -> tuple[list[mm.Rule], dict[str, list[mm.Tool]]]:
    """The rules (and handoff tools) of every agent's handoff items, agents first and the
    user last: ON_CONDITION -> a tool and a `when tool` rule, OnContextCondition -> a
    context rule, AFTER_WORK -> a `when from` rule at priority 30; any other item is
    reported and left out."""
    rules: list[mm.Rule] = []
    tools: dict[str, list[mm.Tool]] = {}
    llm_reported = False
    for owner in [*g.names, g.user]:
        used: set[str] = set()
        for item in handoffs.get(owner, []):
            obj = reader.mod.deref(item)
            kind = callee(obj) if isinstance(obj, ast.Call) else ""
            if kind in ("OnCondition", "ON_CONDITION"):
                assert isinstance(obj, ast.Call)
                found = _on_condition(reader, g, owner, obj, used)
                if found is None:
                    continue
                tool, rule = found
                tools.setdefault(owner, []).append(tool)
                if rule is None:
                    continue
                rules.append(rule)
                if not llm_reported:
                    llm_reported = True
                    reader.report(
                        M002,
                        "LLM-judged handoffs (ON_CONDITION) became tools named as the "
                        "swarm names them, routed by `when tool` rules",
                        obj,
                    )
            elif kind == "OnContextCondition":
                rule = context_rule(g, owner, item, 10, "OnContextCondition")
                if rule is not None:
                    rules.append(rule)
                    reader.report(
                        M002,
                        "OnContextCondition is checked before the agent's model runs "
                        "in classic; the flow checks it after the agent's turn",
                        item,
                    )
            elif kind in ("AfterWork", "AFTER_WORK"):
                t = g.target(item, owner)
                if t is not None:
                    rules.append(mm.Rule(mm.from_(owner), t.target, 30, "AFTER_WORK"))
            else:
                reader.report(M001, "this hand-off cannot be read statically; left out", item)
    return rules, tools


def _on_condition(
    reader: AgentReader, g: HandoffReader, owner: str, obj: ast.Call, used: set[str]
) -> tuple[mm.Tool, mm.Rule | None] | None:
    """An ``ON_CONDITION`` item: the tool the swarm gives ``owner`` (named
    ``transfer_<owner>_to_<target>``, numbered when ``used`` already holds the name) and
    the rule it routes by (None when its ``available`` gate cannot be translated).
    None when the target cannot be read."""
    mod = reader.mod
    t = g.target(kwarg(obj, "target", 0), owner)
    if t is None:
        return None
    base = f"transfer_{owner}_to_{t.normalized}"
    name, count = base, 2
    while name in used:
        name, count = f"{base}_{count}", count + 1
    used.add(name)
    cond_node = kwarg(obj, "condition", 1)
    text = mod.const_or(cond_node, None)
    if not isinstance(text, str):
        text = g.llm_text(cond_node)
    tool = mm.Tool(name, text or f"Hand off to {t.normalized}.")
    cond = gated(mm.tool_cond(name), kwarg(obj, "available", 2), mod, g, reader)
    if cond is None:
        return tool, None
    return tool, mm.Rule(cond, t.target, 0, f"{owner}: ON_CONDITION (the model decides)")


def _after_work(g: HandoffReader, runner: ast.Call, initial: str) -> n.Target | None:
    """The swarm's ``after_work`` as the flow's ``otherwise`` (None when absent or a
    plain terminate, which is what the flow does anyway)."""
    aw = kwarg(runner, "after_work", 6)
    otherwise: n.Target | None = None
    if aw is not None:
        t = g.target(aw, initial)
        otherwise = t.target if t is not None else None
        if isinstance(otherwise, n.TerminateTarget) and otherwise.reason is None:
            otherwise = None
    return otherwise


def _swarm_speakers(
    g: HandoffReader, agents: list[Agent], user_agent: Agent | None, tools: dict[str, list[mm.Tool]]
) -> list[mm.Speaker]:
    """The user (the swarm's user agent, or the temporary `_User` classic adds) and then
    every agent, with their tools."""
    user_role = (
        user_agent.role
        if user_agent is not None and user_agent.role
        else "The user who sends the task (a temporary `_User` in classic when the swarm has none)."
    )
    speakers = [mm.Speaker(g.user, True, user_role, tuple(tools.get(g.user, ())))]
    speakers += [
        mm.Speaker(a.name, a.human, a.role, tuple(tools.get(a.name, ())))
        for a in agents
        if a.name != g.user
    ]
    return speakers


def _swarm_manager(
    reader: AgentReader, g: HandoffReader, runner: ast.Call
) -> tuple[mm.Speaker, list[mm.Rule]]:
    """SWARM_MANAGER selection: the selector speaker and its rules. The swarm's group chat
    holds the user agent (or a temporary `_User`) beside the agents, and its auto
    selection offers it too (ag2 0.9.10 ``initiate_swarm_chat``)."""
    cands = [*g.names, *([g.user] if g.user not in g.names else [])]
    selector, selector_rules = selector_speaker(
        g.manager, cands, "Chooses the next speaker (classic AfterWorkOption.SWARM_MANAGER)."
    )
    reader.report(
        M002,
        "SWARM_MANAGER selection became the selector speaker "
        f"`{g.manager}` with one `transfer_to_<agent>` tool per agent, the user "
        "included (the swarm offers it too); its turns count toward max_turns, which "
        "classic's selection does not",
        runner,
    )
    return selector, selector_rules


__all__ = ["SWARM_RUNNERS", "translate_swarm"]
