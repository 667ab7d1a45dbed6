"""Classic ``GroupChat`` speaker selection, statically: who may speak after whom.

``GroupChat._prepare_and_select_agents`` of classic AG2 (``autogen.agentchat.groupchat``)
as a :class:`~flowc.migrate.speaking_order.Next` per previous speaker
(:func:`successor`), and the rules that route it (:func:`routing_rules`): a fixed next
agent, the end of the chat, ``random_agent``, or the selector speaker with one
``transfer_to_<agent>`` tool per candidate. A custom ``speaker_selection_method``
function is lowered by :mod:`flowc.migrate.selectfn` (:func:`lower_function`).

>>> successor("a", ["a", "b", "c"], {"a": ["c"], "b": ["a"], "c": ["a", "b"]}, True, "auto")
Next(kind='agent', agent='c', candidates=(), allow_repeat=True)
"""

from __future__ import annotations

import ast

import flowc.migrate.model as mm
from flowc.diagnostics import M001, M002, M003
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_condition
from flowc.migrate.agents import AgentReader
from flowc.migrate.pyread import kwarg
from flowc.migrate.selectfn import Unsupported, lower_selection, returns_in
from flowc.migrate.speaking_order import END_REASON, Next

NO_SELECTION = "no_speaker_selected"


def next_agent(src: str, names: list[str], subset: list[str] | None) -> str:
    """``GroupChat.next_agent``: the next agent after ``src`` in list order within ``subset``."""
    idx = names.index(src) if src in names else -1
    if subset is None or subset == names:
        return names[(idx + 1) % len(names)]
    for i in range(len(names)):
        cand = names[(idx + 1 + i) % len(names)]
        if cand in subset:
            return cand
    raise AssertionError("next_agent over an empty subset")  # pragma: no cover


def successor(
    src: str,
    names: list[str],
    graph: dict[str, list[str]],
    allow_repeat: bool | list[str] | None,
    method: str,
) -> Next:
    """Classic ``_prepare_and_select_agents`` for last speaker ``src``, statically."""
    in_group = src in names
    if in_group and src not in graph:
        return Next("end")
    repeat = allow_repeat if not isinstance(allow_repeat, list) else src in allow_repeat
    base = [a for a in names if a != src] if repeat is False else list(names)
    eligible: list[str] | None
    if not in_group:
        eligible = None
    else:
        eligible = [a for a in base if a in graph[src]]
        if len(eligible) == 1:
            return Next("agent", eligible[0])
        if not eligible:
            eligible = None
    if method == "round_robin":
        return Next("agent", next_agent(src, names, eligible))
    candidates = tuple(eligible if eligible is not None else names)
    if method == "random":
        return Next("random", candidates=candidates)
    return Next("select", candidates=candidates)


#: who selects: one selector speaker, or one per distinct candidate set (by its candidates)
Selectors = str | dict[tuple[str, ...], str]


def selector_names(nexts: dict[str, Next], manager: str, taken: set[str]) -> Selectors:
    """One selector speaker per distinct candidate set, so that a selection never offers a
    speaker the source forbids after that previous speaker (classic filters the candidates
    per last speaker: transitions graph, ``allow_repeat_speaker``): ``manager`` when every
    selection offers the same set, else ``manager``, ``manager_2``, ..., each made free of
    ``taken`` (the agents' names) and of the others by :func:`~flowc.migrate.model.free_name`.

    >>> selector_names({"a": Next("select", candidates=("a", "b"))}, "b", {"a", "b"})
    'b_'
    """
    sets = list(dict.fromkeys(x.candidates for x in nexts.values() if x.kind == "select"))
    first = mm.free_name(taken, manager)
    if len(sets) <= 1:
        return first
    used = set(taken) | {first}
    out: dict[tuple[str, ...], str] = {}
    for i, cands in enumerate(sets):
        name = first if i == 0 else mm.free_name(used, f"{manager}_{i + 1}")
        used.add(name)
        out[cands] = name
    return out


def selector_of(x: Next, selectors: Selectors) -> str:
    return selectors if isinstance(selectors, str) else selectors[x.candidates]


def all_selectors(selectors: Selectors) -> list[str]:
    return [selectors] if isinstance(selectors, str) else list(selectors.values())


def target_of(x: Next, manager: Selectors) -> n.Target:
    if x.kind == "agent":
        assert x.agent is not None
        return mm.speaker_target(x.agent)
    if x.kind == "end":
        return mm.terminate(END_REASON)
    if x.kind == "random":
        return mm.call_target(
            "random_agent", agent_ids=list(x.candidates), allow_repeat=x.allow_repeat
        )
    return mm.speaker_target(selector_of(x, manager))


def number_pattern(k: int) -> str:
    """The answers classic's ``manual`` selection reads as the number ``k``: ag2 0.9.10's
    ``GroupChat.manual_select_speaker`` takes ``int(answer)``, so surrounding whitespace, a
    ``+``, leading zeros and ``_`` between digits are the same number, and nothing else is
    (in ASCII digits: ``int`` also reads other scripts' digits, which the pattern leaves
    out, to stay readable in the flow; the migrate page says so).

    >>> import re
    >>> [bool(re.search(number_pattern(12), s)) for s in (" 12 ", "+0_1_2", "1__2", "twelve")]
    [True, True, False, False]
    """
    return r"\A\s*\+?(?:0_?)*" + "_?".join(str(k)) + r"\s*\Z"


def selector_rules(
    nexts: dict[str, Next], manager: Selectors, human: bool = False
) -> list[mm.Rule]:
    """The selector's choice: a transfer tool per candidate, or for a person (``manual``)
    the candidate's number in the list classic's console prints to that selector, typed as
    the whole message and read as classic reads it (:func:`number_pattern`): never the
    agent's name, which classic does not take (an agent named ``3`` is not the third)."""
    rules: list[mm.Rule] = []
    select = [x for x in nexts.values() if x.kind == "select"]
    if select and human:
        for cands in dict.fromkeys(x.candidates for x in select):
            for i, c in enumerate(cands):
                cond: n.Cond = n.AndCond(
                    (
                        mm.from_(selector_of(Next("select", candidates=cands), manager)),
                        mm.call_cond("text_matches", pattern=number_pattern(i + 1)),
                    ),
                    mm.S,
                )
                first = "the person types the next speaker's number in classic's list"
                rules.append(mm.Rule(cond, mm.speaker_target(c), 0, None if rules else first))
    elif select:
        candidates = list(dict.fromkeys(c for x in select for c in x.candidates))
        for i, c in enumerate(candidates):
            comment = "the selector's choice" if i == 0 else None
            rules.append(
                mm.Rule(mm.tool_cond(f"transfer_to_{c}"), mm.speaker_target(c), 0, comment)
            )
    if select:
        rules.append(
            mm.Rule(
                mm.from_(*all_selectors(manager)),
                mm.terminate(NO_SELECTION),
                0,
                "the selector chose nobody",
            )
        )
    return rules


Lowered = list[tuple[str, tuple[n.Cond, ...], Next, str | None]]


def lower_function(
    reader: AgentReader,
    fn: ast.FunctionDef,
    sources: list[str],
    names: list[str],
    graph: dict[str, list[str]],
    allow_repeat: bool | list[str] | None,
) -> tuple[Lowered, bool] | None:
    """A custom selection function as guarded outcomes per source (with a witness text
    for a single text guard) and whether a part of it stands in for code that could not be
    lowered; None when its signature is not classic's (reported).

    A part that cannot be lowered (a test, a statement or a returned value) is reported
    where it stands, once (M001), and the turns that reach it go to a stand-in: the agent
    it can only return, or a selector speaker among the agents it and the statements after
    it can return; every other branch is lowered as usual."""

    def agent_name(e: ast.expr) -> str | None:
        agent = reader.agent_of(e)
        return agent.name if agent is not None else None

    def choice(src: str, value: ast.expr | None) -> Next | None:
        """What returning ``value`` after ``src`` means; None when it cannot be read."""
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return Next("end")
        method = reader.mod.const_or(value, None)
        if isinstance(method, str) and method.lower() in (
            "auto",
            "manual",
            "random",
            "round_robin",
        ):
            return successor(src, names, graph, allow_repeat, method.lower())
        name = agent_name(value)
        if name is None or name not in names:
            return None
        return Next("agent", name)

    def stand_in(src: str, values: list[ast.expr | None], ends: bool) -> tuple[Next, bool]:
        """The agents these returns may pick (all candidates when one cannot be read), and
        whether the chat may end there."""
        picked: set[str] = set()
        for v in values:
            x = choice(src, v)
            if x is None or x.kind not in ("agent", "end", "select", "random"):
                x = successor(src, names, graph, allow_repeat, "auto")
            if x.kind == "end":
                ends = True
            elif x.agent is not None:
                picked.add(x.agent)
            else:
                picked.update(x.candidates)
        cands = tuple(a for a in names if a in picked)
        if not cands:
            return Next("end"), ends
        if len(cands) == 1 and not ends:
            return Next("agent", cands[0]), ends
        # several agents, or one agent or the end: the selector may pick nobody
        return Next("select", candidates=cands), ends

    never: list[ast.expr] = []
    try:
        outcomes = lower_selection(fn, sources, agent_name, partial=True, never=never)
    except Unsupported as err:
        reader.report(
            M001,
            f"the custom `speaker_selection_method` `{fn.name}` could not be lowered to rules "
            f"({err.what}); an LLM selector speaker stands in for it",
            err.node,
            help="write it as an if/elif chain on `last_speaker` whose branches return an agent, "
            "None or a method name, or write the `when from X then Y` rules by hand",
        )
        return None
    out: Lowered = []
    #: each part that could not be lowered: where, why, and the turns it decides
    parts: dict[int, tuple[ast.AST, str, list[tuple[str, tuple[n.Cond, ...], Next, bool]]]] = {}
    for o in outcomes:
        if o.unsupported is not None:
            values, ends = returns_in(o.rest)
            nx, may_end = stand_in(o.source, values, ends)
            node, what = o.unsupported.node, o.unsupported.what
        else:
            known = choice(o.source, o.returned)
            if known is not None:
                out.append((o.source, o.guards, known, o.witness))
                continue
            assert o.returned is not None
            nx, may_end = stand_in(o.source, [o.returned], False)
            node, what = o.returned, "a return value that is not an agent of the group"
        out.append((o.source, o.guards, nx, None))
        parts.setdefault(id(node), (node, what, []))[2].append((o.source, o.guards, nx, may_end))
    for node, what, turns in parts.values():
        _report_part(reader, fn.name, node, what, turns)
    for test in {id(t): t for t in never}.values():
        reader.report(
            M003,
            f"`{ast.unparse(test)}` in `{fn.name}` compares the last speaker (an agent object) with "
            "a string, which Python never finds equal: read as Python runs it",
            test,
            help="compare with the agent (`last_speaker is scientist`) or its name "
            '(`last_speaker.name == "Scientist"`) if that was meant',
        )
    return out, bool(parts)


def _report_part(
    reader: AgentReader,
    fn_name: str,
    node: ast.AST,
    what: str,
    turns: list[tuple[str, tuple[n.Cond, ...], Next, bool]],
) -> None:
    """One M001 for a part of a selection function that could not be lowered."""
    whom = []
    for src, guards, _, _ in turns:
        when = " and ".join(format_condition(g) for g in guards)
        whom.append(f"`{src}`" + (f" when {when}" if when else ""))
    earlier = " (where no branch before it applies)"
    nxs = list(dict.fromkeys((x, e) for _, _, x, e in turns))
    instead = []
    for x, may_end in nxs:
        if x.kind == "select":
            text = (
                f"a selector speaker choosing among {', '.join(f'`{c}`' for c in x.candidates)}"
                + (" (or nobody: the chat ends)" if may_end else "")
            )
        elif x.kind == "agent":
            text = f"`{x.agent}`, the only agent it can return,"
        else:
            text = "the end of the chat, the only outcome it has,"
        instead.append(text)
    reader.report(
        M001,
        f"part of the custom `speaker_selection_method` `{fn_name}` could not be lowered to rules "
        f"({what}); it decides the next speaker after {', '.join(whom)}{earlier}: "
        f"{' / '.join(instead)} stands in for it there; the other branches became rules",
        node,
        help="write that part as a test on `last_speaker` or on the last message's text, or write "
        "its `when from X then Y` rules by hand",
    )


def routing_rules(
    sources: list[str],
    nexts: dict[str, Next],
    names: list[str],
    manager: Selectors,
    human: bool = False,
) -> list[mm.Rule]:
    groups: dict[str, tuple[n.Target, list[str]]] = {}
    for src in sources:
        t = target_of(nexts[src], manager)
        key = repr(t)
        groups.setdefault(key, (t, []))[1].append(src)
    rules: list[mm.Rule] = []
    select = [x for x in nexts.values() if x.kind == "select"]
    if len(groups) == 1 and not select:
        ((t, _members),) = groups.values()
        rules.append(mm.Rule(n.AlwaysCond(mm.S), t, 0, "after every turn"))
    else:
        for t, members in groups.values():
            rules.append(mm.Rule(mm.from_(*members), t))
    return rules + selector_rules(nexts, manager, human)


def speaker_graph(
    reader: AgentReader, gc: ast.Call, names: list[str]
) -> tuple[ast.expr | None, bool | list[str] | None, dict[str, list[str]]]:
    """The transitions node, ``allow_repeat_speaker`` as given, and the graph of who may
    speak after whom: the (dis)allowed transitions dict when there is one, else every
    agent after every other, and after itself as ``allow_repeat_speaker`` allows."""
    mod = reader.mod
    repeat_node = kwarg(gc, "allow_repeat_speaker")
    allow_repeat: bool | list[str] | None = None
    if repeat_node is not None:
        value = mod.const_or(repeat_node, "?")
        if value is None or isinstance(value, bool):
            allow_repeat = value
        else:
            listed = reader.agent_list(repeat_node, "allow_repeat_speaker", gc)
            allow_repeat = [a.name for a in listed]
    transitions_node = kwarg(gc, "allowed_or_disallowed_speaker_transitions")
    graph: dict[str, list[str]] | None = None
    if transitions_node is not None and mod.const_or(transitions_node, "?") is not None:
        graph = _read_graph(reader, transitions_node, names)
        kind = mod.const_or(kwarg(gc, "speaker_transitions_type"), None)
        if kind == "disallowed":
            disallowed = graph
            graph = {a: [b for b in names if b not in disallowed.get(a, [])] for a in names}
        elif kind != "allowed":
            reader.report(
                M001,
                '`speaker_transitions_type` must be "allowed" or "disallowed"; '
                "the transitions were read as allowed",
                transitions_node,
            )
    if graph is not None and repeat_node is not None and allow_repeat is not None:
        # GroupChat.__post_init__: the two are exclusive (ag2 0.9.10, autogen 0.2)
        reader.report(
            M002,
            "classic raises ValueError when both `allowed_or_disallowed_speaker_transitions` "
            "and `allow_repeat_speaker` are given, so this GroupChat never runs; the flow "
            "follows the transitions and reads `allow_repeat_speaker` as given",
            repeat_node,
            help="pass `allow_repeat_speaker=None` (or leave it out) beside the transitions",
        )
    if graph is None:
        if allow_repeat is None:
            allow_repeat = True
        graph = {a: [b for b in names if b != a] for a in names}
        if allow_repeat is True:
            for a in names:
                graph[a].append(a)
        elif isinstance(allow_repeat, list):
            for a in allow_repeat:
                graph[a].append(a)
    return transitions_node, allow_repeat, graph


def _read_graph(reader: AgentReader, node: ast.expr, names: list[str]) -> dict[str, list[str]]:
    """The transitions dict as agent name -> the names it lists; a dict that is not written
    inline is reported and read as "anyone after anyone"."""
    mod = reader.mod
    target = mod.deref(node)
    graph: dict[str, list[str]] = {}
    if not isinstance(target, ast.Dict):
        reader.report(
            M001,
            "the transitions dict cannot be read without running the code; it was left out",
            node,
            help="write the dict inline: {a: [b], b: [a]}",
        )
        return {a: list(names) for a in names}
    for k, v in zip(target.keys, target.values, strict=True):
        src = reader.agent_of(k) if k is not None else None
        if src is None:
            reader.report(
                M001, "a key of the transitions dict is not an agent of this file", k or target
            )
            continue
        dests = reader.agent_list(v, f"transitions of {src.name}", v)
        graph[src.name] = [d.name for d in dests]
    return graph


def selector_speakers(
    selectors: Selectors, pairs: list[tuple[str, Next]], human: bool
) -> list[mm.Speaker]:
    """One selector speaker per set of candidates (a person for ``manual``, else with a
    ``transfer_to_<agent>`` tool per candidate); when there are several, each one's role
    says after whom it chooses."""
    role = (
        'A person who chooses the next speaker (classic `speaker_selection_method="manual"`): '
        "types the agent's number in the list classic prints."
        if human
        else 'Chooses the next speaker (classic GroupChatManager, `speaker_selection_method="auto"`): '
        "reads the conversation and calls the transfer tool of the agent who should speak next."
    )
    groups: list[tuple[str, list[str], list[str]]] = []  # selector, its candidates, after whom
    if isinstance(selectors, str):
        groups.append(
            (
                selectors,
                list(
                    dict.fromkeys(c for _, x in pairs if x.kind == "select" for c in x.candidates)
                ),
                [],
            )
        )
    else:
        for cands, sel in selectors.items():
            whom = list(
                dict.fromkeys(s for s, x in pairs if x.kind == "select" and x.candidates == cands)
            )
            groups.append((sel, list(cands), whom))
    return [
        mm.Speaker(
            sel,
            human,
            (f"After {', '.join(whom)}: " if whom else "") + role,
            ()
            if human
            else tuple(mm.Tool(f"transfer_to_{c}", f"{c} speaks next.") for c in candidates),
        )
        for sel, candidates, whom in groups
    ]


__all__ = [
    "NO_SELECTION",
    "Lowered",
    "Selectors",
    "all_selectors",
    "lower_function",
    "next_agent",
    "routing_rules",
    "selector_names",
    "selector_of",
    "selector_rules",
    "selector_speakers",
    "speaker_graph",
    "successor",
    "target_of",
]
