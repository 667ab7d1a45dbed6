"""Classic AG2 / AutoGen ``GroupChat`` + ``GroupChatManager`` Python -> `.flow`.

Read statically with ``ast`` (:mod:`flowc.migrate.pyread`, :mod:`flowc.migrate.agents`); the behaviour
reproduced is ``autogen.agentchat.groupchat`` of ag2 0.9 - autogen 0.14.1
(``GroupChat._prepare_and_select_agents``, ``next_agent``, ``GroupChatManager.run_chat``):

- the initiator of ``X.initiate_chat(manager, message=...)`` sends the kickoff (turn 1);
- after every message the manager's ``is_termination_msg`` is checked first (its
  default is ``content == "TERMINATE"``), then ``max_round`` (= ``max_turns``);
- the next speaker: an agent missing from a transitions dict ends the chat; the
  eligible agents are ``agents`` (minus the last speaker when repeats are not
  allowed) filtered by the dict; exactly one eligible agent is chosen without any
  method; none means "all agents"; otherwise the method decides: ``round_robin`` is
  static (``next_agent``), ``random`` becomes ``random_agent``, ``auto`` an LLM
  selector speaker and ``manual`` a human one, each with a ``transfer_to_<agent>``
  tool per candidate.

>>> from flowc.source import SourceFile
>>> src = SourceFile("chat.py", '''
... import autogen
... user = autogen.UserProxyAgent("user", code_execution_config=False)
... a = autogen.AssistantAgent("writer", system_message="Writes.")
... b = autogen.AssistantAgent("critic", system_message="Critiques.")
... gc = autogen.GroupChat(agents=[user, a, b], messages=[], max_round=6,
...                        speaker_selection_method="round_robin")
... manager = autogen.GroupChatManager(groupchat=gc)
... user.initiate_chat(manager, message="Write a haiku.")
... ''')
>>> result = translate_classic(src)
>>> [d.code.id for d in result.findings], result.migration.max_turns
([], 6)
"""

from __future__ import annotations

import ast

import attrs

import flowc.migrate.model as mm
from flowc.diagnostics import M001, M002, M003
from flowc.dsl import nodes as n
from flowc.migrate.agents import AGENT_CLASSES, Agent, AgentReader
from flowc.migrate.classic_selection import (
    Lowered,
    Selectors,
    all_selectors,
    lower_function,
    routing_rules,
    selector_names,
    selector_of,
    selector_rules,
    selector_speakers,
    speaker_graph,
    successor,
    target_of,
)
from flowc.migrate.classic_tools import collect_tools, finishing_tools
from flowc.migrate.pyread import PyModule, callee, kwarg
from flowc.migrate.speaking_order import (
    TERM_REASON,
    Next,
    NoText,
    guard_scenarios,
    order_scenarios,
    turn_text,
)
from flowc.migrate.textpred import DEFAULT_TERMINATION, TextPredicate, evaluate, text_predicate
from flowc.source import SourceFile

DEFAULT_MAX_ROUND = 10
DEFAULT_MANAGER = "chat_manager"
#: classic's speaker selection methods (``GroupChat._VALID_SPEAKER_SELECTION_METHODS``)
METHODS = ("auto", "manual", "random", "round_robin")
#: ``human_input_mode`` when the constructor does not set it (ag2 0.9.10's classes)
DEFAULT_INPUT_MODE = {
    "ConversableAgent": "TERMINATE",
    "AssistantAgent": "NEVER",
    "UserProxyAgent": "ALWAYS",
}


def _call_of(mod: PyModule, node: ast.expr | None, name: str) -> ast.Call | None:
    if node is None:
        return None
    target = mod.deref(node)
    if isinstance(target, ast.Call) and callee(target) == name:
        return target
    return None


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def report_no_groupchat(reader: AgentReader) -> None:
    """M001 for a file with no ``GroupChat(...)`` call: nothing here is a classic group
    chat (the caller raises :class:`NotRecognised` with the reader's findings)."""
    own = next(
        (c for c in reader.mod.calls() if callee(c) == "GroupChat" and reader.mod.defined_here(c)),
        None,
    )
    reader.report(
        M001,
        "no classic group chat found: the file has no `GroupChat(...)` call"
        if own is None
        else "no classic group chat found: this `GroupChat` is a class the file defines "
        "itself, not AG2's",
        own,
        help="migrate translates files that build an autogen GroupChat and its GroupChatManager",
    )


def translate_classic(source: SourceFile) -> mm.Translation:
    """Translate the first ``GroupChat`` of a classic Python file.

    Raises ``SyntaxError`` for a file that does not parse and :class:`NotRecognised`
    when it holds no ``GroupChat``.
    """
    mod = PyModule.parse(source.name, source.text)
    reader = AgentReader(mod)
    reader.collect_agents()
    calls = [c for c in mod.calls() if not mod.defined_here(c)]
    groupchats = [c for c in calls if callee(c) == "GroupChat"]
    if not groupchats:
        report_no_groupchat(reader)
        raise mm.NotRecognised(reader.findings)
    return translate_groupchat(reader, groupchats[0], calls)


def translate_groupchat(reader: AgentReader, gc: ast.Call, calls: list[ast.Call]) -> mm.Translation:
    """Translate one ``GroupChat(...)`` call of the file."""
    return _translate(reader, gc, calls)


@attrs.frozen
class _Chat:
    """What the ``GroupChat`` call, its manager and the call that starts it say: read once,
    then passed to the steps that build the rules, speakers, turn cap and scenarios."""

    gc: ast.Call
    agents: list[Agent]
    names: list[str]
    manager: ast.Call | None
    manager_name: str
    initiator: Agent
    kickoff: str | None
    max_round: int | None
    method: str
    method_node: ast.expr | None
    #: a ``def`` passed as ``speaker_selection_method``
    selection_fn: ast.FunctionDef | None
    #: a ``speaker_selection_method`` that is neither a known name nor a ``def`` of the file
    unreadable_method: bool
    transitions_node: ast.expr | None
    allow_repeat: bool | list[str] | None
    graph: dict[str, list[str]]


@attrs.frozen
class _Route:
    """Who speaks after whom (``nexts``, or the ``lowered`` rules of a selection function),
    and the selector speakers that stand in for a choice the rules cannot make."""

    sources: list[str]
    nexts: dict[str, Next]
    lowered: Lowered | None
    #: a selector stands in for parts of the selection function that could not be lowered
    stood_in: bool
    #: the selection method could not be read or lowered (no claim about the order)
    unsupported_callable: bool
    uses_selector: bool
    #: every (previous speaker, next) pair, those of the lowered rules included
    pairs: list[tuple[str, Next]]
    every_next: dict[str, Next]
    selectors: Selectors


def _translate(reader: AgentReader, gc: ast.Call, calls: list[ast.Call]) -> mm.Translation:
    """Read the group chat, then build its rules, speakers, turn cap and scenarios; the
    steps run in this order because the findings are reported in the order they find them."""
    chat = _read_chat(reader, gc, calls)
    agents, initiator = chat.agents, chat.initiator
    tool_fns: dict[tuple[str, str], ast.FunctionDef | ast.AsyncFunctionDef] = {}
    tools = collect_tools(reader, calls, {a.name for a in agents} | {initiator.name}, tool_fns)
    predicate, term_rules = _manager_termination(reader, chat.manager)
    finishing_tools(reader, tools, tool_fns, predicate)
    own_tests = _own_tests(reader, agents, predicate)
    _report_left_out(reader, agents, calls, chat.max_round)
    reader.report_hooks(calls)

    route = _route(reader, chat)
    _report_selection(reader, chat, route)
    routing = _routing(chat, route)
    routing = _own_termination(reader, own_tests, routing, route.pairs, term_rules, chat.max_round)
    rules = term_rules + routing
    speakers: list[mm.Speaker] = []
    if initiator.name not in chat.names:
        speakers.append(_speaker(initiator, tools))
    speakers += [_speaker(a, tools) for a in agents]
    if route.uses_selector:
        speakers += selector_speakers(route.selectors, route.pairs, chat.method == "manual")
    max_turns, max_comment = _max_turns(chat.max_round, route)

    exact, scenarios, sequences = _order_scenarios(
        reader, chat, route, term_rules, own_tests, predicate
    )
    pick = _pick_scenario(chat, route, term_rules, max_turns)
    if pick is not None:
        scenarios.append(pick)
    exact = exact and bool(sequences)  # the label says the scenarios state the order
    mod = reader.mod
    title = mm.identifier(mod.source.name.rsplit("/", 1)[-1].rsplit(".", 1)[0])
    migration = mm.Migration(
        title=title,
        source_kind=f"classic AG2 GroupChat ({mod.source.name.rsplit('/', 1)[-1]})",
        description=_first_line(chat.kickoff) if chat.kickoff else None,
        speakers=tuple(speakers),
        start=initiator.name,
        max_turns=max_turns,
        max_turns_comment=max_comment,
        rules=tuple(rules),
        scenarios=tuple(scenarios),
        notes=(_note(reader, chat, route, exact),),
    )
    return mm.Translation(migration, tuple(reader.findings), tuple(sequences))


def _read_chat(reader: AgentReader, gc: ast.Call, calls: list[ast.Call]) -> _Chat:
    """Read everything the group chat's settings say, reporting what cannot be read or
    carried over, in the order classic's constructor arguments are listed here."""
    agents = _chat_agents(reader, gc)
    names = [a.name for a in agents]
    manager, manager_name = _manager(reader, gc, calls)
    initiator, kickoff = _initiator(reader, gc, calls, manager, agents)
    max_round = _max_round(reader, gc)
    method, method_node, selection_fn, unreadable = _selection_method(reader, gc)
    transitions_node, allow_repeat, graph = speaker_graph(reader, gc, names)
    _report_settings(reader, gc, method)
    return _Chat(
        gc=gc,
        agents=agents,
        names=names,
        manager=manager,
        manager_name=manager_name,
        initiator=initiator,
        kickoff=kickoff,
        max_round=max_round,
        method=method,
        method_node=method_node,
        selection_fn=selection_fn,
        unreadable_method=unreadable,
        transitions_node=transitions_node,
        allow_repeat=allow_repeat,
        graph=graph,
    )


def _chat_agents(reader: AgentReader, gc: ast.Call) -> list[Agent]:
    """The ``agents`` of the group chat; two with one name, or fewer than two that can be
    read, leave nothing to translate (``NotRecognised``)."""
    agents = reader.agent_list(kwarg(gc, "agents", 0), "agents", gc)
    names = [a.name for a in agents]
    if len(set(names)) != len(names):
        dup = next(x for x in names if names.count(x) > 1)
        reader.report(M001, f"two agents of the group chat are both named `{dup}`", gc)
        raise mm.NotRecognised(reader.findings)
    if len(agents) < 2:
        reader.report(
            M001, "the group chat needs at least two agents that can be read statically", gc
        )
        raise mm.NotRecognised(reader.findings)
    return agents


def _manager(
    reader: AgentReader, gc: ast.Call, calls: list[ast.Call]
) -> tuple[ast.Call | None, str]:
    """The ``GroupChatManager`` built on this group chat (None when there is none) and its
    name, which the selector speaker takes; its reply settings are reported as dropped
    because classic's manager only runs the chat."""
    mod = reader.mod
    managers = [
        c
        for c in calls
        if callee(c) == "GroupChatManager"
        and _call_of(mod, kwarg(c, "groupchat", 0), "GroupChat") is gc
    ]
    manager = managers[0] if managers else None
    manager_name = DEFAULT_MANAGER
    if manager is not None:
        value = mod.const_name_or(kwarg(manager, "name"), DEFAULT_MANAGER)
        manager_name = value if isinstance(value, str) and value else DEFAULT_MANAGER
        for key in ("max_consecutive_auto_reply", "human_input_mode"):
            node = kwarg(manager, key)
            if node is not None:
                reader.report(
                    M003,
                    f"the manager's `{key}` has no effect inside a group chat "
                    "(classic runs `run_chat` first); dropped",
                    node,
                )
    return manager, manager_name


def _initiator(
    reader: AgentReader,
    gc: ast.Call,
    calls: list[ast.Call],
    manager: ast.Call | None,
    agents: list[Agent],
) -> tuple[Agent, str | None]:
    """The agent that sends the kickoff (``X.initiate_chat(manager, message=...)``) and the
    kickoff's text when it is a literal; without such a call the first agent is assumed."""
    mod = reader.mod
    initiator: Agent | None = None
    kickoff: str | None = None
    for c in calls:
        if not isinstance(c.func, ast.Attribute) or c.func.attr not in (
            "initiate_chat",
            "a_initiate_chat",
            "run",
            "a_run",
        ):
            continue
        recipient = kwarg(c, "recipient", 0)
        target = mod.deref(recipient) if recipient is not None else None
        if manager is None or target is not manager:
            continue
        initiator = reader.agent_of(c.func.value)
        message = mod.const_or(kwarg(c, "message", 1), None)
        kickoff = message if isinstance(message, str) else None
        if initiator is None:
            reader.report(
                M001,
                "the agent that starts this chat is not an agent created in this file",
                c.func.value,
            )
        break
    if initiator is None:
        initiator = agents[0]
        reader.report(
            M002,
            f"no `initiate_chat(manager, ...)` found: `{initiator.name}` (the first agent) is "
            "assumed to send the kickoff",
            manager or gc,
            help="edit `start` in the .flow if another agent starts the chat",
        )
    return initiator, kickoff


def _max_round(reader: AgentReader, gc: ast.Call) -> int | None:
    """``max_round`` (classic's default when absent); None, reported, when it cannot be
    read as a positive integer: the flow then has no turn cap."""
    return reader.round_cap(kwarg(gc, "max_round"), "max_round", DEFAULT_MAX_ROUND)


def _selection_method(
    reader: AgentReader, gc: ast.Call
) -> tuple[str, ast.expr | None, ast.FunctionDef | None, bool]:
    """``speaker_selection_method``: the method's name (``auto`` by default), its node, the
    ``def`` it names when it is a function of this file, and whether it is a callable that
    cannot be read (reported; an LLM selector stands in for it). A string that is none of
    classic's methods leaves nothing to translate (:class:`NotRecognised`): ag2 0.9.10
    raises ``ValueError`` at the first speaker selection."""
    mod = reader.mod
    method_node = kwarg(gc, "speaker_selection_method")
    method: str = "auto"
    unsupported_callable = False
    selection_fn: ast.FunctionDef | None = None
    if method_node is not None:
        value = mod.const_or(method_node, None)
        if isinstance(value, str) and value.lower() in METHODS:
            method = value.lower()
        elif isinstance(value, str):
            reader.report(
                M001,
                f"`speaker_selection_method={value!r}` is not a speaker selection method: classic "
                f"takes {', '.join(repr(m) for m in METHODS)} (any case) or a function, and "
                "raises ValueError at the first speaker selection",
                method_node,
                help=f"use one of {', '.join(repr(m) for m in METHODS)}",
            )
            raise mm.NotRecognised(reader.findings)
        else:
            fn = mod.function_of(method_node)
            if isinstance(fn, ast.FunctionDef):
                selection_fn = fn
            else:
                unsupported_callable = True
                reader.report(
                    M001,
                    "this `speaker_selection_method` cannot be read statically; an LLM selector "
                    "speaker stands in for it",
                    method_node,
                    help="write it as a `def` in this file, or as `when from X then Y` rules",
                )
    return method, method_node, selection_fn, unsupported_callable


def _manager_termination(
    reader: AgentReader, manager: ast.Call | None
) -> tuple[TextPredicate | None, list[mm.Rule]]:
    """The manager's ``is_termination_msg`` (classic's default: exactly "TERMINATE"), checked
    on every message: its text test (None when it is not one, reported) and the rule that
    ends the flow on it. The list is extended later by the agents' approximated tests."""
    mod = reader.mod
    term_rules: list[mm.Rule] = []
    term_node = kwarg(manager, "is_termination_msg") if manager is not None else None
    predicate: TextPredicate | None
    if term_node is None or mod.const_or(term_node, "?") is None:
        predicate = TextPredicate(DEFAULT_TERMINATION, "TERMINATE")
        comment = (
            'classic GroupChatManager default: a message that is exactly "TERMINATE" ends the chat'
        )
    else:
        predicate = text_predicate(mod.deref(term_node), mod.function_of)
        comment = "the manager's is_termination_msg, checked on every message"
        if predicate is None:
            reader.report(
                M001,
                "this `is_termination_msg` is not a recognised text test; it was left out",
                term_node,
                help='add a rule such as `when text_contains(text = "DONE") then terminate` '
                "(recognised: `in`, `==`, `endswith`, `startswith` on the content)",
            )
    if predicate is not None:
        term_rules.append(mm.Rule(predicate.cond, mm.terminate(TERM_REASON), -10, comment))
    return predicate, term_rules


def _mode(reader: AgentReader, agent: Agent) -> object:
    """The agent's ``human_input_mode`` (its class's default when not written; ``"?"`` when
    it cannot be read)."""
    mode_node = kwarg(agent.node, "human_input_mode")
    if mode_node is None:
        return DEFAULT_INPUT_MODE.get(agent.cls, "?")
    return reader.mod.const_or(mode_node, "?")


def _own_tests(
    reader: AgentReader, agents: list[Agent], predicate: TextPredicate | None
) -> list[tuple[Agent, TextPredicate, ast.expr, object]]:
    """The agents' own ``is_termination_msg`` text tests that can matter (with the node and
    the agent's ``human_input_mode``), for :func:`_own_termination`; a test the manager's
    already covers is skipped, one that cannot be read or that a person answers is reported
    and left out."""
    mod = reader.mod
    own_tests: list[tuple[Agent, TextPredicate, ast.expr, object]] = []
    for agent in agents:
        node = kwarg(agent.node, "is_termination_msg")
        agent_pred: TextPredicate | None
        if node is None or mod.const_or(node, "?") is None:
            # classic's default test (exactly "TERMINATE"), which the agent applies too: it
            # matters where the manager's own test differs (a person answering every turn,
            # `ALWAYS`, applies it only when they enter nothing: left out, as before)
            agent_pred = TextPredicate(DEFAULT_TERMINATION, "TERMINATE")
            if (predicate is not None and agent_pred.cond == predicate.cond) or _mode(
                reader, agent
            ) == "ALWAYS":
                continue
            own_tests.append((agent, agent_pred, node or agent.node, _mode(reader, agent)))
            continue
        agent_pred = text_predicate(mod.deref(node), mod.function_of)
        if agent_pred is None:
            reader.report(
                M001,
                f"`{agent.name}`'s `is_termination_msg` is not a recognised text test; "
                "it was left out",
                node,
            )
            continue
        if predicate is not None and agent_pred.cond == predicate.cond:
            continue  # the manager's own test ends the chat first on the same messages
        mode = _mode(reader, agent)
        if mode == "ALWAYS":
            reader.report(
                M001,
                f"`{agent.name}`'s own `is_termination_msg` was left out: with "
                '`human_input_mode="ALWAYS"` classic asks the person at every turn of '
                f"`{agent.name}` and applies this test only when they enter nothing, which "
                "no rule of the flow can see",
                node,
            )
            continue
        own_tests.append((agent, agent_pred, node, mode))
    return own_tests


def _report_left_out(
    reader: AgentReader, agents: list[Agent], calls: list[ast.Call], max_round: int | None
) -> None:
    """Report what the flow does not translate: the agents' ``max_consecutive_auto_reply``
    (dropped when ``max_round`` comes first) and nested or sequential chats."""
    mod = reader.mod
    for agent in agents:
        node = kwarg(agent.node, "max_consecutive_auto_reply")
        cap = mod.const_or(node, None)
        if node is not None and isinstance(cap, int) and max_round is not None and cap >= max_round:
            reader.report(
                M003,
                f"`{agent.name}`'s `max_consecutive_auto_reply` ({cap}) cannot be "
                f"reached within max_round={max_round}; dropped",
                node,
            )
        elif node is not None:
            reader.report(
                M002,
                f"`{agent.name}`'s `max_consecutive_auto_reply` is not translated: classic ends the "
                "chat when that agent has replied that many times; the flow's max_turns still caps the run",
                node,
            )
    for c in calls:
        if callee(c) in ("register_nested_chats", "initiate_chats"):
            reader.report(
                M001,
                f"`{callee(c)}` (nested or sequential chats) has no equivalent in one "
                "workflow channel; it was left out",
                c,
                help="run the nested chat as its own flow, or as a tool of the agent",
            )


def _route(reader: AgentReader, chat: _Chat) -> _Route:
    """Who speaks after each source (the initiator first when it is not in the group):
    classic's ``next_agent`` rules for the method, or the selection function lowered to
    guarded rules, and the selector speakers that the remaining choices need."""
    names, initiator = chat.names, chat.initiator
    sources = ([] if initiator.name in names else [initiator.name]) + names
    nexts = {s: successor(s, names, chat.graph, chat.allow_repeat, chat.method) for s in sources}
    lowered: Lowered | None = None
    stood_in = False
    unsupported_callable = chat.unreadable_method
    if chat.selection_fn is not None:
        got = lower_function(
            reader, chat.selection_fn, sources, names, chat.graph, chat.allow_repeat
        )
        lowered, stood_in = got if got is not None else (None, False)
        if lowered is None:
            unsupported_callable = True
        elif all(not g for _, g, _, _ in lowered) and len(lowered) == len(sources):
            nexts = {src: nx for src, _, nx, _ in lowered}
            lowered = None
        else:
            nexts = {}
            for src, _, nx, _ in lowered:
                nexts.setdefault(src, nx)
            for src, _, nx, _ in lowered:  # a selector anywhere must be declared
                if nx.kind == "select":
                    nexts[src] = nx
    if chat.method == "random" and chat.transitions_node is None and chat.allow_repeat is False:
        # everyone but the last speaker, for every source: one `random_agent` rule
        nexts = {s: Next("random", candidates=tuple(names), allow_repeat=False) for s in sources}
    uses_selector = any(x.kind == "select" for x in nexts.values())
    # every (previous speaker, next) pair: a lowered function may select differently for one
    # source under different guards (a stand-in for a part it could not lower)
    pairs = list(nexts.items()) + [(src, nx) for src, _, nx, _ in lowered or []]
    every_next = {str(i): nx for i, (_, nx) in enumerate(pairs)}
    selectors = selector_names(
        every_next, chat.manager_name, {a.name for a in chat.agents} | {initiator.name}
    )
    return _Route(
        sources=sources,
        nexts=nexts,
        lowered=lowered,
        stood_in=stood_in,
        unsupported_callable=unsupported_callable,
        uses_selector=uses_selector,
        pairs=pairs,
        every_next=every_next,
        selectors=selectors,
    )


def _report_selection(reader: AgentReader, chat: _Chat, route: _Route) -> None:
    """Report how the speaker selection differs from classic's: ``random`` draws, and the
    selector speaker (a person for ``manual``, an LLM for ``auto`` or for the parts of a
    selection function that could not be lowered)."""
    selectors = route.selectors
    manager_name = all_selectors(selectors)[0]
    per_source = (
        ""
        if isinstance(selectors, str)
        else (
            f" (one selector per set of candidates the source allows after each speaker: "
            f"{', '.join(f'`{s}`' for s in all_selectors(selectors))})"
        )
    )
    at = chat.method_node or chat.gc
    if any(x.kind == "random" for x in route.nexts.values()):
        reader.report(
            M002,
            "`random` speaker selection became `random_agent`: the same distribution, "
            "but draws come from the envelope id, not Python's `random`",
            at,
        )
    if route.uses_selector and chat.method == "manual":
        reader.report(
            M002,
            f"manual speaker selection became turns of the person `{manager_name}`{per_source}, who "
            "types the next speaker's number in the list classic prints, read as classic reads it "
            "(`int(answer)`; a name is no answer): these turns count toward max_turns, and any "
            "other answer ends the run (classic asks once more, then moves to the next agent in "
            "list order; an empty answer or `q` moves on at once)",
            at,
        )
    elif route.uses_selector and route.stood_in:
        assert chat.selection_fn is not None
        reader.report(
            M002,
            f"the selector speaker `{manager_name}`{per_source} chooses where `{chat.selection_fn.name}` "
            "leaves the choice to an LLM or could not be lowered, with one `transfer_to_<agent>` "
            "tool per candidate: its turns count toward max_turns, and when it picks nobody the run "
            "ends (classic falls back to the next agent in order)",
            at,
        )
    elif route.uses_selector:
        reader.report(
            M002,
            f"speaker selection by an LLM (`auto`) became the selector speaker `{manager_name}`"
            f"{per_source} with one `transfer_to_<agent>` tool per candidate: its turns count toward max_turns, and "
            "when it picks nobody the run ends (classic falls back to the next agent in order)",
            at,
        )


def _routing(chat: _Chat, route: _Route) -> list[mm.Rule]:
    """The routing rules (before the agents' own termination tests are added): the
    lowered function's guarded rules and the selectors' choices, or one rule per source."""
    manual = chat.method == "manual"
    if route.lowered is not None:
        routing = [
            mm.Rule(
                mm.from_(src) if not g else n.AndCond((mm.from_(src), *g), mm.S),
                target_of(nx, route.selectors),
            )
            for src, g, nx, _ in route.lowered
        ]
        routing += selector_rules(route.every_next, route.selectors, manual)
        return routing
    return routing_rules(route.sources, route.nexts, chat.names, route.selectors, manual)


def _max_turns(max_round: int | None, route: _Route) -> tuple[int | None, str]:
    """The flow's ``max_turns`` and its comment: classic's ``max_round``, doubled minus one
    when a selector speaks between every two turns (its turns count in the flow)."""
    max_turns = max_round
    max_comment = "classic max_round (the kickoff counts as round 1)"
    if max_round is not None and route.uses_selector:
        all_select = all(x.kind == "select" for x in route.nexts.values())
        if all_select:
            max_turns = 2 * max_round - 1
            max_comment = (
                f"classic max_round={max_round}; doubled minus one because the selector "
                "speaks between every two turns"
            )
        else:
            max_comment += "; the selector's turns count too, raise it if runs end early"
    return max_turns, max_comment


def _order_scenarios(
    reader: AgentReader,
    chat: _Chat,
    route: _Route,
    term_rules: list[mm.Rule],
    own_tests: list[tuple[Agent, TextPredicate, ast.expr, object]],
    predicate: TextPredicate | None,
) -> tuple[bool, list[n.Scenario], list[tuple[str, ...]]]:
    """Whether the speaking order is known exactly (no selector, nothing left out, every
    class modelled), and if so the scenarios that state it with the order each encodes;
    the texts avoid every termination test and guard that would change the order."""
    lowered, nexts = route.lowered, route.nexts
    exact = (
        lowered is None
        and not route.uses_selector
        and not route.unsupported_callable
        and all(x.kind in ("agent", "end") for x in nexts.values())
    )
    scenarios: list[n.Scenario] = []
    sequences: list[tuple[str, ...]] = []
    avoid = [r.cond for r in term_rules] + [p.cond for _, p, _, _ in own_tests]
    scenario_nexts = nexts
    if lowered is not None and not route.uses_selector:
        defaults: dict[str, Next] = {}
        for src, g, nx, _ in lowered:
            if not g:
                defaults.setdefault(src, nx)
            else:
                avoid += list(g)
        if all(x.kind in ("agent", "end") for _, _, x, _ in lowered) and set(defaults) == set(
            route.sources
        ):
            exact, scenario_nexts = True, defaults
    if reader.routing_left_out() or any(
        a.cls not in AGENT_CLASSES for a in [*chat.agents, chat.initiator]
    ):
        # something was left out, or an agent's class is not modelled: no claim about the order
        exact = False
    start, max_round, kickoff = chat.initiator.name, chat.max_round, chat.kickoff
    if exact and max_round is not None:
        witness = predicate.witness if predicate is not None else None
        for title, seq, items in order_scenarios(
            start, scenario_nexts, max_round, predicate, witness, kickoff, avoid
        ):
            scenarios.append(mm.scenario(title, items))
            sequences.append(seq)
        if lowered is not None and scenarios:
            for title, seq, items in guard_scenarios(
                start, scenario_nexts, lowered, max_round, avoid, kickoff
            ):
                scenarios.append(mm.scenario(title, items))
                sequences.append(seq)
    return exact, scenarios, sequences


def _pick_scenario(
    chat: _Chat, route: _Route, term_rules: list[mm.Rule], max_turns: int | None
) -> n.Scenario | None:
    """When a selector chooses after the kickoff, a scenario of the translated behaviour
    (not a claim about classic: the LLM's or person's choice is scripted): the selector
    picks an agent, who then speaks. None when there is no room or no usable text."""
    initiator, nexts, selectors = chat.initiator, route.nexts, route.selectors
    selector_human = chat.method == "manual"
    first_next = nexts.get(initiator.name)
    if not (
        route.uses_selector
        and route.lowered is None
        and first_next is not None
        and first_next.kind == "select"
        and (max_turns is None or max_turns >= 4)
    ):
        return None
    pick = next((c for c in first_next.candidates if c != initiator.name), first_next.candidates[0])
    first_selector = selector_of(first_next, selectors)
    try:
        texts = [
            turn_text(initiator.name, 1, [r.cond for r in term_rules]),
            turn_text(pick, 3, [r.cond for r in term_rules]),
        ]
    except NoText:
        texts = []
    if not texts:
        return None
    kickoff = chat.kickoff
    after = nexts.get(pick)
    pick_items: list[n.ScenarioItem] = [
        mm.say(
            initiator.name,
            kickoff
            if kickoff and all(evaluate(r.cond, kickoff) is False for r in term_rules)
            else texts[0],
        ),
        mm.expect_next(first_selector),
        # (the person types the number classic lists the agent under: all classic takes)
        mm.say(first_selector, str(first_next.candidates.index(pick) + 1))
        if selector_human
        else mm.calls(first_selector, f"transfer_to_{pick}"),
        mm.expect_next(pick),
        mm.say(pick, texts[1]),
    ]
    if after is not None and after.kind == "select":
        pick_items.append(mm.expect_next(selector_of(after, selectors)))
    return mm.scenario(
        "a person picks the next agent"
        if selector_human
        else "the selector speaker picks the next agent",
        pick_items,
    )


def _note(reader: AgentReader, chat: _Chat, route: _Route, exact: bool) -> str:
    """The migration's note: how the speaker selection was read, whether a transitions
    graph was, and whether the scenarios state the speaking order."""
    selection_fn = chat.selection_fn
    return (
        (
            f"speaker_selection_method={selection_fn.name} (a function, lowered to rules"
            + (
                "; a selector stands in for the parts that could not be, see the findings)"
                if route.stood_in
                else ")"
            )
            if selection_fn is not None and not route.unsupported_callable
            else f'speaker_selection_method="{chat.method}"'
        )
        + (", transitions graph" if chat.transitions_node else "")
        + (
            (
                ", speaker order read statically (the scenarios state it)"
                if not any(d.code is M002 for d in reader.findings)
                else ", speaker order read statically (the scenarios state it; other differences: "
                "see the findings)"
            )
            if exact
            else ""
        )
        + "."
    )


def _own_termination(
    reader: AgentReader,
    own_tests: list[tuple[Agent, TextPredicate, ast.expr, object]],
    routing: list[mm.Rule],
    pairs: list[tuple[str, Next]],
    term_rules: list[mm.Rule],
    max_round: int | None,
) -> list[mm.Rule]:
    """An agent's own ``is_termination_msg``: classic tests it when that agent has been
    chosen to speak, on the last message of the chat (the one just sent, whoever sent it,
    the kickoff included), and a None reply ends ``run_chat``
    (``ConversableAgent.check_termination_and_human_reply``). Where the rules pick the
    agent directly, the test guards each of those rules; where a selector or a draw picks
    it, the choice is not known when the message arrives, and the test is approximated by
    a rule on every message (reported). Classic ends on ``max_round`` before it chooses,
    so the guard holds only before the last round."""
    indirect = {c for _, x in pairs if x.kind in ("select", "random") for c in x.candidates}
    out = list(routing)
    for agent, pred, node, mode in own_tests:
        own = (
            "own `is_termination_msg`"
            if node is not agent.node
            else 'default `is_termination_msg` (exactly "TERMINATE")'
        )
        if agent.name in indirect:
            reader.report(
                M002,
                f"`{agent.name}`'s {own} became a rule for every message: "
                f"classic tests it only on the message after which `{agent.name}` is chosen to "
                "speak, and here that choice is made after the message, so the flow also ends "
                "where another agent would have been chosen (the kickoff included)",
                node,
            )
            comment = f"{agent.name}'s is_termination_msg (approximated)"
            same = [
                i
                for i, r in enumerate(term_rules)
                if r.cond == pred.cond and (r.comment or "").endswith("(approximated)")
            ]
            if same:  # several agents with the same test: one rule
                old = term_rules[same[0]]
                owners = (old.comment or "").removesuffix("'s is_termination_msg (approximated)")
                comment = f"{owners}, {comment}"
                term_rules[same[0]] = mm.Rule(old.cond, old.target, old.priority, comment)
            else:
                term_rules.append(mm.Rule(pred.cond, mm.terminate(TERM_REASON), -10, comment))
            continue
        test: tuple[n.Cond, ...] = (pred.cond,)
        if max_round is not None:
            test = (*test, mm.call_cond("turn_count_at_most", turns=max_round - 1))
        guarded: list[mm.Rule] = []
        for r in out:
            t = r.target
            if isinstance(t, n.SpeakerTarget) and t.speaker.value == agent.name:
                if isinstance(r.cond, n.AlwaysCond):
                    items: tuple[n.Cond, ...] = test
                elif isinstance(r.cond, n.AndCond):
                    items = (*r.cond.items, *test)
                else:
                    items = (r.cond, *test)
                items = tuple(c for c in items if not isinstance(c, n.AlwaysCond)) or test
                cond: n.Cond = items[0] if len(items) == 1 else n.AndCond(items, mm.S)
                guarded.append(
                    mm.Rule(
                        cond,
                        mm.terminate(TERM_REASON),
                        r.priority,
                        f"{agent.name}'s is_termination_msg, on the message before its turn",
                    )
                )
            guarded.append(r)
        out = guarded
        if mode != "NEVER":
            how = (
                f'with `human_input_mode="{mode}"`'
                if isinstance(mode, str) and mode != "?"
                else 'when its `human_input_mode` is not `"NEVER"` (not read statically here)'
            )
            reader.report(
                M002,
                f"`{agent.name}`'s {own} ends the flow before its turn; "
                f"{how} classic then asks a person, and ends the chat only when they enter "
                f"nothing or `exit` (any other text becomes `{agent.name}`'s reply)",
                node,
            )
    return out


def _report_settings(reader: AgentReader, gc: ast.Call, method: str) -> None:
    """Report the ``GroupChat`` arguments that do not change the routing: the selector's
    prompt and model settings (to carry over by hand under ``auto``), interactive features."""
    selector_only = (
        "select_speaker_message_template",
        "select_speaker_prompt_template",
        "select_speaker_auto_multiple_template",
        "select_speaker_auto_none_template",
        "role_for_select_speaker_messages",
        "max_retries_for_selecting_speaker",
        "select_speaker_auto_llm_config",
        "select_speaker_auto_model_client_cls",
        "select_speaker_transform_messages",
        "select_speaker_auto_verbose",
    )
    for kw in gc.keywords:
        key = kw.arg
        if key in selector_only:
            if method == "auto":
                reader.report(
                    M002,
                    f"`{key}` belongs to the selector speaker's prompt and model "
                    "settings; carry it over by hand",
                    kw.value,
                )
            else:
                reader.report(M003, f"`{key}` only matters for `auto` selection; dropped", kw.value)
        elif key == "send_introductions":
            reader.report(
                M002,
                "`send_introductions` has no routing meaning; add the introductions "
                "to the agents' system messages if they matter",
                kw.value,
            )
        elif key in ("admin_name", "enable_clear_history"):
            reader.report(
                M003,
                f"`{key}` is an interactive runtime feature with no effect on routing; dropped",
                kw.value,
            )
        elif key == "eligibility_policies":
            reader.report(
                M001, "`eligibility_policies` run Python filters at run time; left out", kw.value
            )


def _speaker(agent: Agent, tools: dict[str, list[mm.Tool]]) -> mm.Speaker:
    role = agent.role
    if agent.human and not role:
        role = f"A person ({agent.cls})."
    return mm.Speaker(agent.name, agent.human, role, tuple(tools.get(agent.name, ())))


__all__ = ["translate_classic", "translate_groupchat"]
