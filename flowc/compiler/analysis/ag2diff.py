"""Where a run on AG2 1.2.1 differs from the same run on flowc's hub: W218-W222.

flowc's hub runs a flow as AG2's does, except for a few deliberate differences
(``docs/runtime.md``). The ones a flow can run into are findings, each with a run
that shows it:

- W221: a turn routed back to the speaker who just spoke. flowc prompts that speaker
  again; AG2 delivers a post to every participant but its sender, so nobody is told
  to speak and the run stalls.
- W218: a ``tool`` condition inside ``and`` / ``not`` / an inner ``or``. AG2 makes a
  call a routing call only when a rule of its own names the tool, so there the
  nested condition never sees the call.
- W219: a speaker with several routing tools. AG2 takes a reply that makes two routing
  calls, runs them as concurrent tasks and may route on either; flowc refuses it (a
  reply makes one call the flow can see), or under ``--contracts warn`` routes on the
  first.
- W220: a run that can pass turn 1,000 among three or more participants. AG2 refuses
  a post to a participant that has 1,000 posts it has not answered (its inbox
  limit), and the run stops there.
- W222: a speaker with two calls that write one context key differently. AG2 takes a
  reply that makes both, runs them as concurrent tasks, and the write that lands last
  can be either; flowc refuses it, or under ``--contracts warn`` applies them in order.

They are warnings under ``flowc check --target ag2``; otherwise a file that has any
gets one info, I304, that lists them (:func:`summary`).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator, Sequence

import networkx as nx

from flowc.compiler import model as m
from flowc.compiler.analysis.explore import DEFAULT, FINISH, HANDOFF, KICKOFF, Outcome, Step
from flowc.compiler.analysis.facts import Facts, Finding
from flowc.compiler.analysis.runs import Run, run_to
from flowc.compiler.analysis.system import Action, code_parts
from flowc.compiler.quoting import once, ticked
from flowc.diagnostics import (
    I304,
    W218,
    W219,
    W220,
    W221,
    W222,
    Diagnostic,
    counted,
    listing,
    listing_of,
)
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_name, format_value
from flowc.source import Span

__all__ = [
    "AG2_CODES",
    "INBOX_LIMIT",
    "check_ag2_differences",
    "inbox_failure",
    "summary",
    "top_level_tools",
]

#: the codes of the differences; without ``--target ag2`` each is reported as I304
AG2_CODES = frozenset({W221.id, W218.id, W219.id, W220.id, W222.id})

#: AG2 1.2.1's default ``Rule.limits.inbox.max_pending``: a post to a participant with
#: this many posts it has not answered is refused (``InboxFull``)
INBOX_LIMIT = 1000

#: the most turns :func:`inbox_failure` simulates for one run
_MAX_SIMULATED = 200_000


def summary(diags: Sequence[Diagnostic]) -> Diagnostic | None:
    """The I304 of a file without ``--target ag2``: one note at the first of its W218-W222
    findings (``None`` when it has none), listing them.

    >>> from flowc.source import Span
    >>> w = Diagnostic(W221, "m", "f.flow", Span(6, 1, 6, 20))
    >>> note = summary([w])
    >>> note.code.id, note.span.line, note.notes[0]
    ('I304', 6, 'line 6: W221: a turn is routed back to the speaker who just spoke, where AG2 1.2.1 stalls')
    """
    found = sorted((d for d in diags if d.code.id in AG2_CODES), key=Diagnostic.sort_key)
    if not found:
        return None
    first = found[0]

    def where(d: Diagnostic) -> str:
        if d.span is not None:
            return f"line {d.span.line}"
        return f"`{d.json_path}`" if d.json_path else "the graph"

    places = f"{len(found)} place{'s' if len(found) != 1 else ''}"
    return Diagnostic(
        I304,
        f"a run of this flow goes differently on AG2 1.2.1 ({places}; `flowc check --target ag2` "
        "reports each with a run that shows it)",
        first.filename,
        first.span,
        tuple(
            listing_of(
                found,
                lambda d: (
                    f"{where(d)}: {d.code.id}: "
                    f"{d.code.summary.removeprefix('with `--target ag2`: ')}"
                ),
                more="more places",
                one="more place",
            )
        ),
        "if the flow is to run on AG2 too, check it with `--target ag2`; if not, "
        "`# flowc: ignore[I304]` on this line silences this note",
        first.json_path,
        first.quote_source,
    )


def check_ag2_differences(facts: Facts) -> Iterator[Finding]:
    """W218-W222 (see the module's docstring)."""
    yield from _self_routing(facts)
    yield from _nested_tools(facts)
    yield from _routing_calls(facts)
    yield from _write_order(facts)
    yield from _inbox_limit(facts)


# ── W221: a turn routed back to its own speaker ─────────────────────────────


def _self_routing(facts: Facts) -> Iterator[Finding]:
    system, space = facts.system, facts.space
    cap = system.max_turns
    # cause -> (node, step): the explorer noted them on the nodes it expanded; a cut-short
    # exploration's other nodes (found, not expanded) are looked at here, within the turns
    # its bound has left (a few nodes may have millions of turns: a human's writes)
    found: dict[tuple[int, str | None], tuple[int, Step]] = dict(space.self_routes)
    order: list[tuple[int, str | None]] = list(found)
    left = space.turns_left
    for node in range(space.self_routes_upto, len(space.keys)):
        key = space.keys[node]
        if key[0] == "end":
            continue
        if cap is not None and space.dist[node] + 1 >= cap:
            continue  # the run closes at max_turns on this turn, on both hubs
        speaker = space.speaker_of(node)
        for step in space.explorer.steps(key):
            left -= 1
            if left < 0:
                break
            out = step.outcome
            if out.speaker != speaker:
                continue
            if system.json_mode and step.action.tool is not None:
                continue  # that a participant calls a tool is only assumed in a JSON graph
            cause = (out.fired, step.action.tool if out.fired == HANDOFF else None)
            if cause not in found:
                found[cause] = (node, step)
                order.append(cause)
        if left < 0:
            break
    for cause in order:
        node, step = found[cause]
        yield _self_routing_finding(facts, node, step, cause)


def _self_routing_finding(
    facts: Facts, node: int, step: Step, cause: tuple[int, str | None]
) -> Finding:
    system, space = facts.system, facts.space
    who = system.name(space.speaker_of(node))
    run = run_to(space, node, step)
    fired, tool = cause
    span: Span | None = None
    path: str | None = None
    rule: int | None = None
    if fired == HANDOFF:
        what = f"{once(who)}'s tool {ticked(tool or '')} hands off to {once(who)} itself"
        compiled = system.compiled
        if compiled is not None:
            span = next(
                (
                    t.span
                    for t in compiled.tools_of(system.speakers[space.speaker_of(node)])
                    if t.name == tool
                ),
                None,
            )
    elif fired == DEFAULT:
        what = f"the default `otherwise {system.describe_target(system.default)}` gives the turn back to {once(who)}"
        span, path = facts.default_location()
    else:
        spec = system.rules[fired]
        what = f"{system.label(spec)} gives the turn back to {once(who)}"
        span, path, rule = facts.rule_span(spec), spec.json_path, fired
    if step.outcome.choice is not None:
        what += f" (when `{step.outcome.choice.split(' → ')[0]}` resolves to {once(who)})"
    turn = len(run.turns)
    return Finding(
        facts.diag(
            W221,
            f"on AG2 1.2.1 the run stalls here: {what}, who just spoke, and AG2 does not tell a "
            "speaker that the turn is its own again",
            span=span,
            json_path=path,
            notes=(
                f"a run that shows it: {run.render()}",
                f"flowc gives {once(who)} turn {turn + 1}; on AG2 1.2.1 the run stops after turn "
                f"{turn}, open, waiting for {once(who)} (`stalled_on: {who}`): a post goes to every "
                "participant but its sender",
            ),
            help=f"on AG2, give the turn to another speaker (e.g. one that hands it back to {once(who)}), "
            f"or let {once(who)} do its work in one turn",
        ),
        run,
        rule,
    )


# ── W218: a `tool` condition inside a composite ─────────────────────────────


def top_level_tools(graph: m.TransitionGraph) -> frozenset[str]:
    """The tools a rule of its own names (``when tool T``): AG2's routing calls.

    >>> g = m.TransitionGraph("a", (m.Transition(m.ToolCalled("x"), m.StayTarget()),
    ...     m.Transition(m.Not(m.ToolCalled("y")), m.StayTarget())))
    >>> sorted(top_level_tools(g))
    ['x']
    """
    return frozenset(
        t.when.tool_name for t in graph.transitions if isinstance(t.when, m.ToolCalled)
    )


def _nested_tool_places(facts: Facts) -> Iterator[tuple[str, str, Span | None, str | None]]:
    """(tool, the composite it is in, span, JSON path) of each ``tool`` condition that is
    not a rule's whole condition."""
    system = facts.system
    if system.compiled is not None:

        def walk(
            cond: n.Cond, inside: str | None
        ) -> Iterator[tuple[str, str, Span | None, str | None]]:
            if isinstance(cond, n.ToolCond):
                if inside is not None:
                    yield cond.tool.value, inside, cond.span, None
            elif isinstance(cond, n.OrCond):
                for item in cond.items:  # a top-level `or` splits into rules of their own
                    yield from walk(item, inside if inside is None else "or")
            elif isinstance(cond, n.AndCond):
                for item in cond.items:
                    yield from walk(item, "and")
            elif isinstance(cond, n.NotCond):
                yield from walk(cond.item, "not")

        composite = (n.OrCond, n.AndCond, n.NotCond)  # (only these hold a nested `tool`)
        for st in system.compiled.flow.statements:
            if type(st) is n.Rule and type(st.cond) in composite:
                yield from walk(st.cond, None)
        return

    def walk_json(
        c: m.Condition, path: str, inside: str | None
    ) -> Iterator[tuple[str, str, Span | None, str | None]]:
        if isinstance(c, m.ToolCalled):
            if inside is not None:
                yield c.tool_name, inside, None, path
        elif isinstance(c, m.AllOf | m.AnyOf):
            for i, item in enumerate(c.conditions):
                yield from walk_json(item, f"{path}.args.conditions[{i}]", m.condition_name(c))
        elif isinstance(c, m.Not):
            yield from walk_json(c.condition, f"{path}.args.condition", "not")

    for rule in system.rules:
        yield from walk_json(rule.when, f"{rule.json_path}.when", None)


def _nested_tools(facts: Facts) -> Iterator[Finding]:
    routed = top_level_tools(_graph_of(facts))
    witnesses: dict[str, tuple[Run, str] | None] = {}
    for tool, inside, span, path in _nested_tool_places(facts):
        if tool in routed:
            continue  # AG2 routes on its calls too: the condition sees them
        if tool not in witnesses:
            witnesses[tool] = _nested_witness(facts, tool)
        found = witnesses[tool]
        if found is None:
            continue  # nobody calls it on any run: nothing differs
        run, theirs = found
        shown = format_name(tool)
        yield Finding(
            facts.diag(
                W218,
                f"on AG2 1.2.1 this `tool {shown}` inside `{inside}` never sees a call: AG2 makes a "
                f"call a routing call only when a rule names the tool on its own (`when tool {shown} "
                "then ...`), and no rule does",
                span=span,
                json_path=path,
                notes=(
                    f"a run that shows it: {run.render()}",
                    f"on AG2 1.2.1 that last turn routes as a plain reply: {theirs}; and a reply "
                    f"that calls {once(shown)} with no text posts nothing there (the run stalls)",
                ),
                help=f"give {once(shown)} a rule of its own (`when tool {shown} then ...`, ordered by "
                "priority): then AG2 routes on its calls too",
            ),
            run,
        )


def _graph_of(facts: Facts) -> m.TransitionGraph:
    system = facts.system
    if system.compiled is not None:
        return system.compiled.graph
    return m.TransitionGraph(
        system.ids[system.start],
        tuple(m.Transition(r.when, r.then, r.priority) for r in system.rules),
        system.default,
        system.max_turns,
    )


def _nested_witness(facts: Facts, tool: str) -> tuple[Run, str] | None:
    """The first turn (breadth-first) that calls ``tool`` and routes by the rules: the run
    to it as flowc routes it, and how AG2 routes the same turn (as one without a call)."""
    system, space = facts.system, facts.space
    cap = system.max_turns
    for node, key in enumerate(space.keys):
        if key == KICKOFF or key[0] == "end":
            continue
        if cap is not None and space.dist[node] + 1 > cap:
            break
        speaker = space.speaker_of(node)
        for action in system.actions[speaker]:
            if action.tool != tool or action.handoff is not None or action.finish is not None:
                continue
            before = key[1]
            for after in space.explorer.after(before, action, speaker):
                ours = space.explorer.route(speaker, action.tool_index, after)[0]
                theirs = space.explorer.route(speaker, -1, after, ours.assumed)[0]
                run = run_to(space, node, Step(action, after, ours))
                return run, _describe_outcome(facts, theirs)
    return None


def _describe_outcome(facts: Facts, out: Outcome) -> str:
    system = facts.system
    if out.speaker < 0:
        where = (
            f"terminate {format_value(out.reason)}" if out.reason is not None else "the run ends"
        )
    else:
        where = system.name(out.speaker)
    return f"→ {where} ({facts.describe_fired(out.fired)})"


# ── W219: several routing tools on one speaker ──────────────────────────────


def _routing_calls_of(facts: Facts, speaker: int, named: set[str]) -> list[Action]:
    """The different routing calls ``speaker`` can make: a call whose declared effect hands
    off or finishes, or a call of a tool that a ``tool`` condition names (``named``:
    flowc's routing calls), one per tool and way it routes."""
    out: dict[tuple[str | None, int | None, str | None], Action] = {}
    for action in facts.system.actions[speaker]:
        if action.tool is None:
            continue
        if action.handoff is not None or action.finish is not None:
            out.setdefault((action.tool, action.handoff, action.finish), action)
        elif action.tool in named:
            out.setdefault((action.tool, None, None), action)
    return list(out.values())


def _named_tools(facts: Facts) -> set[str]:
    """The tools the rules' conditions name, read from their compiled codes (rules with
    equal conditions share one code: each is read once)."""
    names = facts.system.tool_names
    out: set[str] = set()
    seen: set[int] = set()
    for rule in facts.system.rules:
        if id(rule.code) not in seen:
            seen.add(id(rule.code))
            out.update(names[c[1]] for c in code_parts(rule.code, "tool"))
    return out


def _first_model_turns(facts: Facts) -> list[tuple[int, int]]:
    """Each model speaker's first turn before the cap (speaker, node), by speaker; none
    for a JSON graph, which does not say which participant has which tools."""
    system, space = facts.system, facts.space
    if system.json_mode:
        return []
    cap = system.max_turns
    return sorted(
        (s, node)
        for s, node in facts.first_nodes.items()
        if s not in system.humans and (cap is None or space.dist[node] + 1 <= cap)
    )


def _routing_calls(facts: Facts) -> Iterator[Finding]:
    space = facts.space
    named = _named_tools(facts)
    for speaker, node in _first_model_turns(facts):
        calls = _routing_calls_of(facts, speaker, named)
        if len(calls) < 2:
            continue
        run = run_to(space, node)
        who = facts.system.name(speaker)
        a, b = calls[0], calls[1]
        shown = ", ".join(listing([_call_text(facts, c) for c in calls]))
        yield Finding(
            facts.diag(
                W219,
                f"{once(who)} can route a reply in several ways ({shown}): AG2 1.2.1 takes a reply "
                "that makes two routing calls and routes on the call it records first, which "
                "under load can be either (it runs the calls as concurrent tasks); flowc "
                "refuses such a reply, or under `--contracts warn` routes an agent's reply on its "
                "first call",
                span=facts.speaker_span(speaker),
                notes=(
                    f"a run that shows it: {run.render()}, whose reply calls "
                    f"{ticked(a.tool or '')}, then {ticked(b.tool or '')}: on AG2 "
                    f"1.2.1 it may route on the second {_call_outcome(facts, node, b)}; flowc "
                    "refuses it (under `--contracts warn` it routes on the first "
                    f"{_call_outcome(facts, node, a)})",
                ),
                help=f"have {once(who)}'s model make one routing call per reply (turn off parallel "
                "tool calls in its model config), or route its other outcomes through "
                "context (`tool resolve sets resolved = true`, `when context.resolved == "
                'true then terminate "resolved"`)',
            ),
            run,
        )


def _call_text(facts: Facts, call: Action) -> str:
    tool = ticked(call.tool or "")
    if call.finish is not None:
        return f"{tool} finishes {format_value(call.finish)}"
    if call.handoff is not None:
        return f"{tool} hands off to {once(facts.system.name(call.handoff))}"
    return f"{tool} by its rule"


def _call_outcome(facts: Facts, node: int, call: Action) -> str:
    """How a turn from ``node`` that makes ``call`` routes."""
    space = facts.space
    for step in space.explorer.steps(space.keys[node]):
        if step.action != call:
            continue
        out = step.outcome
        if out.fired == FINISH:
            return f"(it finishes: terminate {format_value(out.reason)})"
        if out.fired == HANDOFF:
            return f"(it hands off: → {facts.system.name(out.speaker)})"
        return _describe_outcome(facts, out)
    return ""  # pragma: no cover - the node's speaker makes the call


# ── W222: two calls in one reply that write a key differently ──────────────


def _write_of(call: Action, key: str) -> tuple[str, object] | None:
    """What ``call`` leaves ``key`` as ("set", value) or ("clear", None); None: untouched."""
    for k, value in call.sets:
        if k == key:
            return ("set", value)
    return ("clear", None) if key in call.clears else None


def _write_text(write: tuple[str, object]) -> str:
    return "clears it" if write[0] == "clear" else f"sets it to {format_value(write[1])}"


def _racing_writes(facts: Facts, speaker: int) -> tuple[str, Action, Action] | None:
    """The first key two of ``speaker``'s calls leave differently, with the two calls (two
    tools, or two alternatives of one tool: one reply may call a tool twice)."""
    calls = [a for a in facts.system.actions[speaker] if a.tool is not None]
    keys = dict.fromkeys(k for call in calls for k in (*(k for k, _ in call.sets), *call.clears))
    for key in keys:  # every key a call writes, read by a rule or not: the run's context shows it
        writers: list[tuple[Action, tuple[str, object]]] = []
        for call in calls:
            write = _write_of(call, key)
            if write is not None:
                writers.append((call, write))
        for (a, wa), (b, wb) in itertools.combinations(writers, 2):
            # (as the run's context shows them, `--json` and the WAL: `1` and `true` are
            # equal in Python, not here)
            if m.json_text(wa) != m.json_text(wb):
                return key, a, b
    return None


def _write_order(facts: Facts) -> Iterator[Finding]:
    for speaker, node in _first_model_turns(facts):
        race = _racing_writes(facts, speaker)
        if race is None:
            continue
        key, a, b = race
        run = run_to(facts.space, node)
        who = facts.system.name(speaker)
        wa, wb = _write_of(a, key), _write_of(b, key)
        assert wa is not None and wb is not None
        ta, tb = ticked(a.tool or ""), ticked(b.tool or "")
        shown = ticked(key)
        which = (
            f"two calls of {ta}: one {_write_text(wa)}, the other {_write_text(wb)}"
            if a.tool == b.tool
            else f"{ta} {_write_text(wa)}, {tb} {_write_text(wb)}"
        )
        yield Finding(
            facts.diag(
                W222,
                f"{once(who)}'s calls write {shown} differently ({which}): AG2 1.2.1 takes a "
                "reply that makes both calls and applies their writes in the order the calls "
                "finish, which under load can be either (it runs the calls as concurrent "
                "tasks); flowc refuses such a reply, or under `--contracts warn` applies an "
                "agent's writes in the reply's order",
                span=facts.speaker_span(speaker),
                notes=(
                    f"a run that shows it: {run.render()}, whose reply calls {ta}, then {tb}: "
                    f"on AG2 1.2.1 it may end with {_after(key, wa)}; flowc refuses it (under "
                    f"`--contracts warn` it ends with {_after(key, wb)})",
                ),
                help=f"have {once(who)}'s model make one tool call per reply (turn off parallel "
                "tool calls in its model config): a flow cannot stop a model from calling "
                "two tools, or one tool twice, in one reply",
            ),
            run,
        )


def _after(key: str, write: tuple[str, object]) -> str:
    name = format_name(key)
    return f"{name} unset" if write[0] == "clear" else f"{name} = {format_value(write[1])}"


# ── W220: AG2's inbox limit ─────────────────────────────────────────────────


def inbox_failure(
    speakers: Sequence[str],
    participants: Sequence[str],
    loop_from: int | None,
    limit: int = INBOX_LIMIT,
    max_turns: int | None = None,
) -> tuple[int, str] | None:
    """The first post AG2 1.2.1 refuses on a run, and the participant whose inbox is full.

    ``speakers`` are the run's turns (who posts each); with ``loop_from`` the turns from
    there on repeat for ever. AG2 counts, per participant, the posts delivered to it
    (every post reaches every participant but its sender) less its own posts (never
    below 0), and refuses a post while a participant it goes to has ``limit`` or more.
    ``None``: no post is refused within ``max_turns`` (or the simulated turns).

    >>> inbox_failure(["user", "a", "b"], ["user", "a", "b"], 1, limit=10)
    (12, 'user')
    >>> inbox_failure(["a", "b"], ["a", "b"], 0, limit=10) is None
    True
    """
    # a participant's count as of its own last post (or the start), ``since`` the number of
    # that post: every later post reaches it, so its inbox is full from post
    # ``since + limit - count + 1`` on, unless it posts first
    count = dict.fromkeys(participants, 0)
    since = dict.fromkeys(participants, 0)
    full_at = {p: limit + 1 for p in participants}
    heap = [(t, p) for p, t in full_at.items()]
    heapq.heapify(heap)

    def top() -> tuple[int, str] | None:
        while heap and heap[0][0] != full_at[heap[0][1]]:
            heapq.heappop(heap)  # stale: that participant has posted since
        return heap[0] if heap else None

    end = len(speakers) if loop_from is None else _MAX_SIMULATED
    if max_turns is not None:
        end = min(end, max_turns)
    cycle = len(speakers) - (loop_from or 0)
    for t in range(1, end + 1):
        i = t - 1
        if i >= len(speakers):
            if loop_from is None or cycle <= 0:
                return None
            i = loop_from + (i - loop_from) % cycle
        sender = speakers[i]
        first = top()
        if first is not None and first[0] <= t and first[1] == sender:
            heapq.heappop(heap)  # the sender's own inbox does not stop its post
            first = top()
        if first is not None and first[0] <= t:
            # AG2 tries the participants in their order: the first full one is named
            return t, next(p for p in participants if p != sender and full_at[p] <= t)
        count[sender] = max(0, count[sender] + (t - 1 - since[sender]) - 1)
        since[sender] = t
        full_at[sender] = t + limit - count[sender] + 1
        heapq.heappush(heap, (full_at[sender], sender))
    return None


def _inbox_limit(facts: Facts) -> Iterator[Finding]:
    system = facts.system
    cap = system.max_turns
    participants = system.speakers
    if len(participants) < 3 or (cap is not None and cap <= INBOX_LIMIT + 1):
        return
    best: tuple[int, str, Run] | None = None
    for comp in _loops(facts):
        run = facts.lasso(comp)
        turns = [t.speaker for t in run.turns]
        if any(x == y for x, y in itertools.pairwise([*turns, turns[run.loop_from or 0]])):
            continue  # a turn routed back to its speaker: AG2 stalls there first (W221)
        hit = inbox_failure(turns, participants, run.loop_from, max_turns=cap)
        if hit is not None and (best is None or hit[0] < best[0]):
            best = (hit[0], hit[1], run)
    if best is None:
        return
    turn, full, run = best
    span: Span | None = None
    path: str | None = "max_turns"
    flow = facts.flow
    if flow is not None:
        span = next((st.span for st in flow.statements if isinstance(st, n.MaxTurnsDecl)), None)
        if span is None:  # at the rule that routes the loop's first turn
            fired = run.turns[run.loop_from or 0].fired
            span, path = (
                (facts.rule_span(system.rules[fired]), None)
                if fired >= 0
                else facts.default_location()
            )
    bound = f"`max_turns {cap}`" if cap is not None else "no `max_turns`"
    yield Finding(
        facts.diag(
            W220,
            f"on AG2 1.2.1 a long run stops at turn {turn:,}: with {bound} a run can go on past "
            f"{counted(INBOX_LIMIT, 'turn', grouped=True)}, and AG2 refuses a post to a participant that has "
            f"{INBOX_LIMIT:,} posts it has not answered (its inbox limit)",
            span=span,
            json_path=path,
            notes=(
                f"a run that shows it: {run.render()}",
                f"on this run {ticked(full)} has {INBOX_LIMIT:,} unanswered posts before "
                f"turn {turn:,}: AG2 refuses that post (`InboxFull`) and the run stops, open; "
                "flowc has no such limit (each context write a tool makes with AG2's "
                "`set_context` is a post too, so it comes sooner there)",
            ),
            help=f"cap the run (`max_turns {INBOX_LIMIT}`), or raise the limit of each AG2 client "
            "(`Rule(limits=LimitsBlock(inbox=InboxBlock(max_pending=...)))`)",
        ),
        run,
    )


def _loops(facts: Facts) -> Iterator[frozenset[int]]:
    """Loops to try for W220: the explored graph's loops nearest the kickoff (a
    participant that does not speak in one has its inbox filled there fastest)."""
    space = facts.space
    live = [v for v in range(len(space.keys)) if space.keys[v][0] != "end"]
    sub = space.graph.subgraph(live)
    comps = [
        frozenset(c)
        for c in nx.strongly_connected_components(sub)
        if len(c) > 1 or any(sub.has_edge(v, v) for v in c)
    ]
    comps.sort(key=lambda c: min(space.dist[v] for v in c))
    yield from comps[:3]
