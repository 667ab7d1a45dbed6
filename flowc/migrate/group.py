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

import flowc.migrate.model as mm
from flowc.diagnostics import M001, M002
from flowc.dsl import nodes as n
from flowc.migrate.agents import Agent, AgentReader
from flowc.migrate.handoffs import (
    MANAGER,
    HandoffReader,
    S,
    add_function_tools,
    context_rule,
    gated,
    items_of,
    manager_termination,
    report_extras,
    selector_speaker,
    unrolled_calls,
)
from flowc.migrate.pyread import NotStatic, callee, kwarg
from flowc.regex import refusal

PATTERNS = ("DefaultPattern", "AutoPattern", "RoundRobinPattern", "RandomPattern", "ManualPattern")
RUNNERS = (
    "initiate_group_chat",
    "run_group_chat",
    "a_initiate_group_chat",
    "a_run_group_chat",
    "run_group_chat_iter",
)
DEFAULT_MAX_ROUNDS = 20


@attrs.frozen
class _Pattern:
    """What the pattern and the call that runs it say: read once, then passed to the steps
    that build the rules, speakers and scenarios."""

    runner: ast.Call | None
    pattern: ast.Call
    kind: str
    agents: list[Agent]
    initial: Agent
    user_agent: Agent | None
    max_rounds: int | None
    kickoff: str | None
    #: a group agent named by the first message sends the kickoff
    sender: str | None


@attrs.frozen
class _Handoffs:
    """The agents' ``handoffs.add_...`` items by owner, in the order the file adds them."""

    llm: dict[str, list[tuple[ast.expr, ast.Call]]]
    ctx: dict[str, list[ast.expr]]
    after: dict[str, list[ast.expr]]
    unconditional: dict[str, ast.expr]


@attrs.frozen
class _PatternAfterWorks:
    """The after works the pattern generates (they replace the agents' own unconditional
    ones), the round-robin ring, the note it gives, and the group after work."""

    generated: dict[str, n.Target]
    ring: list[str]
    note: str
    group_after: n.Target | None


def translate_group(
    reader: AgentReader, calls: list[ast.Call], runner: ast.Call | None = None
) -> mm.Translation:
    """Translate a pattern + ``initiate_group_chat`` (``runner``, else the file's first)."""
    mod = reader.mod
    g = HandoffReader(reader, calls)
    p = _read_pattern(reader, g, calls, runner)
    guard_rules, guards_seen = _guardrails(g, calls)
    report_extras(reader, calls, p.runner, guards_seen)
    reader.report_own_termination(p.agents)
    h = _read_handoffs(reader, calls, p)
    aw = _pattern_after_works(reader, g, p)

    tools: dict[str, list[mm.Tool]] = {}
    rules = manager_termination(
        reader, kwarg(p.pattern, "group_manager_args"), "group_manager_args"
    )
    rules.extend(guard_rules)
    rules += _llm_rules(g, h, tools)
    rules += _handoff_rules(g, h, aw)
    no_user = p.sender is not None and p.sender != g.user and p.user_agent is None
    rules += _user_rules(reader, g, p, h, aw, no_user)
    add_function_tools(g, p.agents, tools)
    speakers = _speakers(g, p, tools, no_user)
    if g.selector_used:
        selector, selector_rules = _selector(reader, g, p, no_user)
        speakers.append(selector)
        rules += selector_rules
    nested_speakers, nested_rules = g.placeholders()
    speakers += nested_speakers
    rules += nested_rules
    otherwise = aw.group_after
    if isinstance(otherwise, n.TerminateTarget) and otherwise.reason is None:
        otherwise = None  # the implicit default
    if {sp.name for sp in speakers} <= mm.always_routed(rules):
        otherwise = None  # every speaker has an unconditional after work: never reached
    exact = (
        p.kind == "RoundRobinPattern"
        and not g.selector_used
        and not reader.routing_left_out()
        and not h.llm
        and not h.ctx
        and not h.after
    )
    scenarios: list[n.Scenario] = []
    sequences: list[tuple[str, ...]] = []
    if exact and p.max_rounds is not None:
        scenario, seq = _order_scenario(g, p, aw.ring, p.max_rounds)
        scenarios.append(scenario)
        sequences.append(seq)
    exact = exact and bool(scenarios)  # the label says the scenarios state the order
    kickoff = p.kickoff
    title = mm.identifier(mod.source.name.rsplit("/", 1)[-1].rsplit(".", 1)[0])
    migration = mm.Migration(
        title=title,
        source_kind=f"the AG2 group API, {p.kind} ({mod.source.name.rsplit('/', 1)[-1]})",
        description=kickoff.strip().splitlines()[0] if kickoff and kickoff.strip() else None,
        speakers=tuple(speakers),
        start=p.sender or g.user,
        max_turns=p.max_rounds,
        max_turns_comment=mm.max_rounds_comment(g.selector_used),
        context=tuple(g.context.items()),
        rules=tuple(rules),
        otherwise=otherwise,
        otherwise_comment="the pattern's group after work" if otherwise is not None else None,
        scenarios=tuple(scenarios),
        notes=tuple(
            x
            for x in (
                aw.note
                + (", speaker order read statically (the scenarios state it)" if exact else "")
                + "."
                if aw.note
                else "",
            )
            if x
        ),
    )
    return mm.Translation(migration, tuple(reader.findings), tuple(sequences))


def _read_pattern(
    reader: AgentReader, g: HandoffReader, calls: list[ast.Call], runner: ast.Call | None
) -> _Pattern:
    """Find the runner and its pattern, read the pattern's agents, user and context into
    ``g``, and the runner's settings; a pattern whose agents cannot be read leaves nothing
    to translate (``NotRecognised``)."""
    mod = reader.mod
    runner = runner or next((c for c in calls if callee(c) in RUNNERS), None)
    pattern_node = kwarg(runner, "pattern", 0) if runner is not None else None
    pattern = mod.deref(pattern_node) if pattern_node is not None else None
    if not isinstance(pattern, ast.Call) or callee(pattern) not in PATTERNS:
        pattern = next((c for c in calls if callee(c) in PATTERNS), None)
    if pattern is None:
        reader.report(
            M001,
            "the group chat's pattern cannot be read statically",
            runner,
            help="build the pattern in this file: DefaultPattern(initial_agent=..., agents=[...])",
        )
        raise mm.NotRecognised(reader.findings)
    agents = reader.agent_list(kwarg(pattern, "agents"), "agents", pattern)
    initial = reader.agent_of(kwarg(pattern, "initial_agent"))
    if initial is None or len(agents) < 1:
        reader.report(
            M001, "the pattern's `initial_agent` or `agents` cannot be read statically", pattern
        )
        raise mm.NotRecognised(reader.findings)
    user_node = kwarg(pattern, "user_agent")
    user_agent = reader.agent_of(user_node) if user_node is not None else None
    g.names = [a.name for a in agents]
    g.user = (
        user_agent.name if user_agent is not None else mm.free_name(g.names, "user", "task_user")
    )
    g.manager = mm.free_name([*g.names, g.user], MANAGER)
    _read_context(g, pattern)
    max_rounds, kickoff, sender = _runner_settings(g, calls, runner, pattern, agents, user_agent)
    return _Pattern(
        runner=runner,
        pattern=pattern,
        kind=callee(pattern),
        agents=agents,
        initial=initial,
        user_agent=user_agent,
        max_rounds=max_rounds,
        kickoff=kickoff,
        sender=sender,
    )


def _read_context(g: HandoffReader, pattern: ast.Call) -> None:
    """The pattern's ``context_variables`` -> ``g.context`` when they are a literal dict
    (``ContextVariables(data={...})``), else reported and left out."""
    mod = g.mod
    ctx_node = kwarg(pattern, "context_variables")
    if ctx_node is None:
        return
    target = mod.deref(ctx_node)
    data_node = kwarg(target, "data", 0) if isinstance(target, ast.Call) else target
    try:
        data = mod.const_name(data_node)
        if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
            raise NotStatic("not a dict")
        g.context = data
    except NotStatic:
        g.r.report(
            M001,
            "the initial context variables cannot be read statically; left out",
            ctx_node,
            help="write them as ContextVariables(data={...}) with literal values",
        )


def _runner_settings(
    g: HandoffReader,
    calls: list[ast.Call],
    runner: ast.Call | None,
    pattern: ast.Call,
    agents: list[Agent],
    user_agent: Agent | None,
) -> tuple[int | None, str | None, str | None]:
    """The runner's ``max_rounds`` (classic's default when absent), the kickoff text (the
    last of ``messages``) and the group agent that sends it when the first message names
    one; reports how classic counts rounds differently when tools or handoffs add turns."""
    mod, reader = g.mod, g.r
    max_rounds: int | None = DEFAULT_MAX_ROUNDS
    kickoff: str | None = None
    sender: str | None = None
    if runner is None:
        reader.report(
            M002,
            "no initiate_group_chat/run_group_chat call found: max_rounds defaults to 20",
            pattern,
        )
        return max_rounds, kickoff, sender
    mr = kwarg(runner, "max_rounds", 2)
    max_rounds = reader.round_cap(mr, "max_rounds", max_rounds)
    msg = mod.const_or(kwarg(runner, "messages", 1), None)
    kickoff = msg if isinstance(msg, str) else None
    if isinstance(msg, list) and msg and isinstance(msg[-1], dict):
        text = msg[-1].get("content")
        kickoff = text if isinstance(text, str) else None
        sender = _named_sender(
            g, msg, user_agent is not None, kwarg(runner, "messages", 1) or runner
        )
    if any(kwarg(a.node, "functions") is not None for a in agents) or any(
        callee(c)
        in (
            "add_llm_condition",
            "add_llm_conditions",
            "add_context_condition",
            "add_context_conditions",
            "add",
            "add_many",
        )
        for c in calls
    ):
        reader.report(
            M002,
            "classic `max_rounds` also counts the hidden tool-executor turns and "
            "transit messages; the flow counts only speaking turns",
            mr or runner,
        )
    return max_rounds, kickoff, sender


def _is_handoff(c: ast.Call) -> bool:
    """``X.handoffs.method(...)``."""
    return (
        isinstance(c.func, ast.Attribute)
        and isinstance(c.func.value, ast.Attribute)
        and c.func.value.attr == "handoffs"
    )


def _read_handoffs(reader: AgentReader, calls: list[ast.Call], p: _Pattern) -> _Handoffs:
    """The group agents' (and the user agent's) ``handoffs.add_...`` / ``set_after_work``
    items by kind, in the order the file adds them; handoffs on something that is not an
    agent, items that cannot be read and ``handoffs=`` arguments are reported."""
    mod = reader.mod
    by_name = {a.name: a for a in p.agents}
    if p.user_agent is not None:
        by_name[p.user_agent.name] = p.user_agent
    h = _Handoffs({}, {}, {}, {})
    for c in unrolled_calls(reader, calls, _is_handoff):
        func = c.func
        assert isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)
        owner_agent = reader.agent_of(func.value.value)
        if owner_agent is None:
            reader.report(
                M001,
                f"`{ast.unparse(func.value.value)}.handoffs.{func.attr}` is on something "
                "that is not an agent created in this file; left out",
                func.value.value,
            )
        if owner_agent is None or owner_agent.name not in by_name:
            continue
        oname = owner_agent.name
        method = func.attr
        if method in ("add_llm_condition", "add_llm_conditions"):
            for item in items_of(mod, c, method == "add_llm_condition"):
                h.llm.setdefault(oname, []).append((item, c))
        elif method in ("add_context_condition", "add_context_conditions"):
            h.ctx.setdefault(oname, []).extend(items_of(mod, c, method == "add_context_condition"))
        elif method in ("add_after_work", "add_after_works"):
            h.after.setdefault(oname, []).extend(items_of(mod, c, method == "add_after_work"))
        elif method == "set_after_work":
            tnode = kwarg(c, "target", 0)
            if tnode is not None:
                h.unconditional[oname] = tnode
        elif method in ("add", "add_many"):
            for item in items_of(mod, c, method == "add"):
                obj = mod.deref(item)
                kind_of = callee(obj) if isinstance(obj, ast.Call) else ""
                if kind_of == "OnCondition":
                    h.llm.setdefault(oname, []).append((item, c))
                elif kind_of == "OnContextCondition":
                    h.ctx.setdefault(oname, []).append(item)
                else:
                    reader.report(M001, "this handoff cannot be read statically; left out", item)
    for a in p.agents:
        if kwarg(a.node, "handoffs") is not None:
            reader.report(
                M001,
                f"`{a.name}`'s `handoffs=` argument is not read by this version; "
                "use `agent.handoffs.add_...` calls",
                kwarg(a.node, "handoffs"),
            )
    return h


def _pattern_after_works(reader: AgentReader, g: HandoffReader, p: _Pattern) -> _PatternAfterWorks:
    """The after works the pattern generates (a ring for ``RoundRobinPattern``,
    ``random_agent`` draws for ``RandomPattern``) and its group after work (given, the
    group manager for ``AutoPattern``, the user for ``ManualPattern``)."""
    pattern, initial = p.pattern, p.initial
    generated: dict[str, n.Target] = {}
    pattern_note = ""
    ring: list[str] = []
    if p.kind == "RoundRobinPattern":
        ring = [initial.name] + [m for m in g.names if m != initial.name and m != g.user]
        if p.user_agent is not None:
            ring.append(g.user)
        for i, member in enumerate(ring):
            generated[member] = mm.speaker_target(ring[(i + 1) % len(ring)])
        pattern_note = (
            "RoundRobinPattern: after works form the ring initial agent, other agents, user"
        )
    elif p.kind == "RandomPattern":
        members = g.names + ([g.user] if p.user_agent is not None else [])
        for member in members:
            generated[member] = mm.call_target(
                "random_agent", agent_ids=[x for x in members if x != member], allow_repeat=True
            )
        reader.report(
            M002,
            "RandomPattern became `random_agent` after works: draws come from the "
            "envelope id, not Python's `random`",
            pattern,
        )
    group_after: n.Target | None = None
    gaw = kwarg(pattern, "group_after_work")
    if gaw is not None:
        t = g.target(gaw, initial.name)
        group_after = t.target if t is not None else None
    elif p.kind == "AutoPattern":
        g.selector_used = True
        group_after = mm.speaker_target(g.manager)
    elif p.kind == "ManualPattern":
        reader.report(
            M002,
            "ManualPattern asks a person at the console who speaks next; the flow "
            "hands the turn to the user instead",
            pattern,
        )
        group_after = mm.speaker_target(g.user)
    return _PatternAfterWorks(generated, ring, pattern_note, group_after)


def _llm_rules(g: HandoffReader, h: _Handoffs, tools: dict[str, list[mm.Tool]]) -> list[mm.Rule]:
    """``OnCondition`` handoffs: a ``transfer_to_<target>_<n>`` tool (added to ``tools``,
    named as AG2 names it) and a ``when tool`` rule each, gated by its availability."""
    mod, reader = g.mod, g.r
    rules: list[mm.Rule] = []
    llm_reported = False
    for owner in [*g.names, g.user]:
        for i, (item, at) in enumerate(h.llm.get(owner, []), start=1):
            obj = mod.deref(item)
            if not isinstance(obj, ast.Call) or callee(obj) != "OnCondition":
                reader.report(M001, "this OnCondition cannot be read statically; left out", item)
                continue
            t = g.target(kwarg(obj, "target", 0), owner)
            if t is None:
                continue
            tool_name = f"transfer_to_{t.normalized}_{i}"
            if " " in t.normalized:
                reader.report(
                    M002,
                    f"AG2 names this handoff function `{tool_name}` (with spaces); the "
                    "tool keeps that name in backquotes",
                    obj,
                )
            doc = g.llm_text(kwarg(obj, "condition", 1)) or f"Hand off to {t.normalized}."
            tools.setdefault(owner, []).append(mm.Tool(tool_name, doc))
            cond = gated(mm.tool_cond(tool_name), kwarg(obj, "available", 2), mod, g, reader)
            if cond is None:
                continue
            rules.append(
                mm.Rule(
                    cond,
                    t.target,
                    0,
                    f"{owner}: OnCondition (the model decides by calling the tool)",
                )
            )
            if not llm_reported:
                llm_reported = True
                reader.report(
                    M002,
                    "LLM-judged handoffs (OnCondition) became tools named as AG2 names "
                    "them, routed by `when tool` rules",
                    at,
                )
    return rules


def _handoff_rules(g: HandoffReader, h: _Handoffs, aw: _PatternAfterWorks) -> list[mm.Rule]:
    """Per owner: the ``OnContextCondition`` rules (priority 10), the conditional after
    works (20), then the unconditional after work (30), the pattern's replacing the
    agent's own."""
    reader = g.r
    rules: list[mm.Rule] = []
    for owner in [*g.names, g.user]:
        for item in h.ctx.get(owner, []):
            rule = context_rule(g, owner, item, 10, "OnContextCondition")
            if rule is not None:
                rules.append(rule)
                reader.report(
                    M002,
                    "OnContextCondition is checked before the agent's model runs in "
                    "classic; the flow checks it after the agent's turn",
                    item,
                )
        for item in h.after.get(owner, []):
            rule = context_rule(g, owner, item, 20, "conditional after work")
            if rule is not None:
                rules.append(rule)
        if owner in aw.generated:
            rules.append(
                mm.Rule(mm.from_(owner), aw.generated[owner], 30, "after work (from the pattern)")
            )
        elif owner in h.unconditional:
            t = g.target(h.unconditional[owner], owner)
            if t is not None:
                rules.append(mm.Rule(mm.from_(owner), t.target, 30, "after work"))
    return rules


def _user_rules(
    reader: AgentReader,
    g: HandoffReader,
    p: _Pattern,
    h: _Handoffs,
    aw: _PatternAfterWorks,
    no_user: bool,
) -> list[mm.Rule]:
    """Where the kickoff and the user's turns go: a kickoff sent by a group agent goes to
    the initial agent first; a user turn goes to the initial agent unless the user agent
    has its own after work (reported: classic returns to the agent before the user)."""
    rules: list[mm.Rule] = []
    sender = p.sender
    if sender is not None and sender != g.user:
        # classic's first turn goes to the initial agent whoever sent the kickoff
        # (`group_utils.determine_next_agent`); later turns of the sender follow its handoffs
        rules.append(
            mm.Rule(
                mm.call_cond("turn_count_at_most", turns=1),
                mm.speaker_target(p.initial.name),
                FIRST_TURN_PRIORITY,
                f"the kickoff (sent by {sender}) goes to the initial agent",
            )
        )
    if no_user:
        pass  # classic has no user here (no temporary `_User` when a group agent sends the kickoff)
    elif not (
        p.user_agent is not None
        and (h.after.get(g.user) or g.user in h.unconditional or g.user in aw.generated)
    ):
        rules.append(
            mm.Rule(
                mm.from_(g.user),
                mm.speaker_target(p.initial.name),
                40,
                "the user's message goes to the initial agent",
            )
        )
        reader.report(
            M002,
            "after a later user turn classic returns to the agent that spoke before "
            "the user; the flow sends every user turn to the initial agent",
            p.pattern,
        )
    return rules


def _speakers(
    g: HandoffReader, p: _Pattern, tools: dict[str, list[mm.Tool]], no_user: bool
) -> list[mm.Speaker]:
    """The user (a person; absent when a group agent sends the kickoff and there is no user
    agent), then the pattern's agents with their tools."""
    user_agent = p.user_agent
    speakers: list[mm.Speaker] = []
    user_role = (
        user_agent.role
        if user_agent is not None and user_agent.role
        else "The user who sends the task (classic pattern `user_agent`; a temporary `_User` "
        "when there is none)."
    )
    if not no_user:
        speakers.append(mm.Speaker(g.user, True, user_role, tuple(tools.get(g.user, ()))))
    for a in p.agents:
        if a.name == g.user:
            continue
        speakers.append(mm.Speaker(a.name, a.human, a.role, tuple(tools.get(a.name, ()))))
    return speakers


def _selector(
    reader: AgentReader, g: HandoffReader, p: _Pattern, no_user: bool
) -> tuple[mm.Speaker, list[mm.Rule]]:
    """The group manager's LLM selection (``GroupManagerTarget`` / ``AutoPattern``) as a
    selector speaker and its rules, with a transfer tool per agent, the user included."""
    # AG2's group chat holds the user agent (or a temporary `_User`) beside the pattern's
    # agents, and its auto selection offers every one of them (ag2 0.9.10, checked)
    cands = [*g.names, *([g.user] if not no_user and g.user not in g.names else [])]
    selector, selector_rules = selector_speaker(
        g.manager,
        cands,
        "Chooses the next speaker (classic group manager, GroupManagerTarget / AutoPattern): calls "
        "the transfer tool of the agent who should speak next.",
    )
    reader.report(
        M002,
        "speaker selection by the group manager's LLM became the selector speaker "
        f"`{g.manager}` with one `transfer_to_<agent>` tool per agent, the user "
        "included (AG2 offers it too); its turns count toward max_turns, which "
        "classic's selection does not",
        p.pattern,
    )
    return selector, selector_rules


def _order_scenario(
    g: HandoffReader, p: _Pattern, ring: list[str], max_rounds: int
) -> tuple[n.Scenario, tuple[str, ...]]:
    """The speaking order of a round-robin pattern as a scenario (at most 24 turns) and the
    order it encodes: the kickoff's sender, the initial agent, then around the ring."""
    initial = p.initial
    seq = [p.sender or g.user, initial.name]
    while len(seq) < min(max_rounds, 24):
        seq.append(ring[(ring.index(seq[-1]) + 1) % len(ring)] if seq[-1] in ring else initial.name)
    items: list[n.ScenarioItem] = [mm.say(seq[0], p.kickoff or "the task")]
    items += [mm.say(sp, f"{sp}, turn {i + 2}") for i, sp in enumerate(seq[1:])]
    items.append(
        mm.expect_terminate("max_turns")
        if len(seq) == max_rounds
        else mm.expect_next(ring[(ring.index(seq[-1]) + 1) % len(ring)])
    )
    return mm.scenario("pattern speaking order", items), tuple(seq)


GUARDRAIL_PRIORITY = -5
FIRST_TURN_PRIORITY = -8


def _named_sender(g: HandoffReader, messages: list[Any], has_user: bool, at: ast.AST) -> str | None:
    """``messages=[{"name": "agent", "content": ...}]``: classic (``group_utils ·
    process_initial_messages``) makes the agent named by the *first* message the sender of the
    kickoff; a name that is no group agent (nor the user agent) is a classic ``ValueError``."""
    first = messages[0] if isinstance(messages[0], dict) else {}
    name = first.get("name")
    if len(messages) > 1:
        g.r.report(
            M002,
            "only the last of the initial `messages` becomes the kickoff; classic also "
            "puts the earlier ones in the agents' history",
            at,
        )
    if not isinstance(name, str):
        return None
    if name in g.names or (has_user and name == g.user):
        return name
    g.r.report(
        M001,
        f"the first message names `{name}`, which is no agent of this group (classic "
        "raises ValueError); the user sends the kickoff instead",
        at,
    )
    return None


GUARDRAIL_REGISTRATIONS = (
    "register_output_guardrail",
    "register_output_guardrails",
    "register_input_guardrail",
    "register_input_guardrails",
)


def _guardrails(g: HandoffReader, calls: list[ast.Call]) -> tuple[list[mm.Rule], set[int]]:
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
        items = items_of(g.mod, c, not func.attr.endswith("s"))
        for item in items:
            obj = g.mod.deref(item)
            kind = callee(obj) if isinstance(obj, ast.Call) else ""
            if isinstance(obj, ast.Call):
                seen.add(id(obj))
            if owner is None or owner.name not in g.names:
                g.r.report(
                    M001,
                    f"`{func.attr}` on an agent outside this group cannot be translated; left out",
                    c,
                )
                continue
            if "input" in func.attr:
                g.r.report(
                    M001,
                    f"an input guardrail (`{kind or 'guardrail'}` on `{owner.name}`) acts "
                    "before the agent replies; a flow rule only sees a message after it is "
                    "sent; left out",
                    item,
                    help="check the incoming message in the agent itself, or guard the sender's "
                    "output with a `when from SENDER and text_matches(...)` rule",
                )
                continue
            if kind != "RegexGuardrail" or not isinstance(obj, ast.Call):
                g.r.report(
                    M001,
                    f"`{kind or 'this guardrail'}` on `{owner.name}` is judged at run time "
                    "(by a model or by code); left out",
                    item,
                    help="a regex output guardrail can be written as "
                    "`when from A and text_matches(pattern = ...) then T`",
                )
                continue
            pattern = g.mod.const_or(kwarg(obj, "condition", 1), None)
            target = g.target(kwarg(obj, "target", 2), owner.name)
            if not isinstance(pattern, str):
                g.r.report(
                    M001,
                    "the guardrail's regular expression cannot be read statically; left out",
                    obj,
                )
                continue
            refused = refusal(pattern)
            if refused is not None:  # what E114 would refuse in the generated flow
                g.r.report(
                    M001,
                    f"the guardrail's regular expression cannot become a `text_matches` "
                    f"rule: {refused.message}; left out",
                    obj,
                    help="text_matches is Python's re.search in linear time; see "
                    "`flowc explain E114` for what a pattern may use",
                )
                continue
            if target is None:
                continue
            label = g.mod.const_name_or(kwarg(obj, "name", 0), None)
            cond = n.AndCond(
                (mm.from_(owner.name), mm.call_cond("text_matches", pattern=pattern)), S
            )
            rules.append(
                mm.Rule(
                    cond,
                    target.target,
                    GUARDRAIL_PRIORITY,
                    f"{owner.name}: output guardrail"
                    + (f" `{label}`" if isinstance(label, str) else ""),
                )
            )
            g.r.report(
                M002,
                f"the regex output guardrail on `{owner.name}` became a "
                "`text_matches` rule: classic replaces the matching reply with the "
                "guardrail's activation message before anyone sees it (and checks the "
                "termination text on that message); the flow keeps the reply as sent",
                obj,
            )
    return rules, seen


__all__ = ["PATTERNS", "RUNNERS", "translate_group"]
