"""Checks on what the flow declares: W207, W208, W209, I302, I303."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from flowc.compiler import model as m
from flowc.compiler.analysis.facts import Facts, Finding
from flowc.compiler.quoting import once, ticked
from flowc.diagnostics import I302, I303, W207, W208, W209, W216, listing_of
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_name, format_value
from flowc.source import Span


def _written_conds(flow: n.Flow) -> Iterator[n.Cond]:
    """Every condition of every rule of ``flow`` as written, and those inside them, in
    file order."""
    for st in flow.statements:
        if isinstance(st, n.Rule):
            yield from n.walk_written_cond(st.cond)


def _undeclared_tool_conds(
    conds: Iterable[n.Cond], unknown: frozenset[str]
) -> Iterator[n.ToolCond]:
    """The conditions among ``conds`` that W208 is placed on: every `when tool X` of a
    tool no speaker declares (``unknown``)."""
    for c in conds:
        if isinstance(c, n.ToolCond) and c.tool.value in unknown:
            yield c


def _unset_key_conds(flow: n.Flow, unset: frozenset[str]) -> Iterator[n.ContextCond]:
    """The conditions of ``flow`` that W209 is placed on: for each key nothing sets
    (``unset``), the first condition that reads it, in file order."""
    seen: set[str] = set()
    for c in _written_conds(flow):
        if isinstance(c, n.ContextCond) and c.key.value in unset and c.key.value not in seen:
            seen.add(c.key.value)
            yield c


def placed_on(facts: Facts, code: str, rule: n.Rule) -> Span | None:
    """Where the finding ``code`` that says why the written ``rule`` never fires is
    reported, so that a finding naming it names its line: W208 on the rule's own first
    condition that routes on a tool no speaker declares (W208 is on each of them); W209
    on the first condition of the flow that reads a key the rule reads and nothing sets
    (W209 is on the first read of each key: the first of those keys' places). None for
    another code, or when the rule names no such tool or key."""
    if code == "W208":
        conds = _undeclared_tool_conds(n.walk_written_cond(rule.cond), facts.unknown_tools)
        return next((c.span for c in conds), None)
    flow = facts.flow
    if code != "W209" or flow is None:
        return None
    unset = facts.unset_keys
    keys = {
        c.key.value
        for c in n.walk_written_cond(rule.cond)
        if isinstance(c, n.ContextCond) and c.key.value in unset
    }
    return next((c.span for c in _unset_key_conds(flow, unset) if c.key.value in keys), None)


def check_model_start_speaker(facts: Facts) -> Iterator[Finding]:
    """W207: the start speaker is a model agent, so its model never runs for the kickoff."""
    system, flow = facts.system, facts.flow
    if flow is None or system.start in system.humans:
        return
    name = system.speakers[system.start]
    span: Span | None = None
    for st in flow.statements:
        if isinstance(st, n.StartDecl):
            span = st.speaker.span
            break
        if isinstance(st, n.SequenceDecl | n.RoundRobinDecl) and span is None:
            first = st.steps[0] if isinstance(st, n.SequenceDecl) else st.speakers[0]
            span = first.span
    if span is None:
        span = facts.speaker_span(system.start)
    shown = format_name(name)
    yield Finding(
        facts.diag(
            W207,
            f"the start speaker {once(shown)} is a model agent: its first turn is the kickoff message, "
            "so its model never runs for that turn",
            span=span,
            notes=(
                f"the kickoff text is {once(shown)}'s turn 1; the next speaker gets that text as if {once(shown)} had written it",
            ),
            help=f"seed the flow with a human: `speaker user: human`, `start user`, `when from user then {shown}`"
            f" (or mark {once(shown)} as `: human` if a person speaks for it)",
        )
    )


def check_undeclared_tools(facts: Facts) -> Iterator[Finding]:
    """W208: ``when tool X`` routes on a tool that no speaker declares."""
    flow = facts.flow
    if flow is None:
        return
    unknown = facts.unknown_tools
    if not unknown:
        return
    for c in _undeclared_tool_conds(_written_conds(flow), unknown):
        shown = format_name(c.tool.value)
        yield Finding(
            facts.diag(
                W208,
                f"`when tool {shown}` routes on a tool that no speaker declares, so it never fires",
                span=c.span,
                notes=("a speaker with no declared tools can call no routing tool",),
                help=f"declare it on the speaker that calls it: `speaker NAME {{ tool {shown} }}`",
            )
        )


def check_unset_context_keys(facts: Facts) -> Iterator[Finding]:
    """W209: a condition reads a context key that nothing sets."""
    flow = facts.flow
    if flow is None:
        return
    unset = facts.unset_keys
    if not unset:
        return
    for c in _unset_key_conds(flow, unset):
        key = format_name(c.key.value)
        yield Finding(
            facts.diag(
                W209,
                f"`context.{key}` is read here but nothing sets it: no initial value, "
                + _only_cleared(facts, c.key.value),
                span=c.span,
                notes=(f"`context.{key}` is always unset (compares equal to `null`)",),
                help=f"declare the tool that writes it, e.g. `tool NAME sets {key} = {_flipping_value(facts, c)}`,"
                f" or the human that writes it (`speaker NAME: human {{ sets {key} }}`),"
                f" or give it an initial value: `context {key} = ...`",
            )
        )


def _only_cleared(facts: Facts, key: str) -> str:
    """What the tools do to the unset ``key``: none writes it, or those that do only
    clear it (`clears KEY`), which leaves it unset."""
    compiled = facts.system.compiled
    tools = compiled.tools if compiled is not None else ()
    clearing = dict.fromkeys(t.name for t in tools for alt in t.alternatives if key in alt.clears)
    if not clearing:
        return "no tool writes it"
    named = ", ".join(listing_of(list(clearing), lambda t: ticked(t)))
    return (
        f"and tool {named} only clears it"
        if len(clearing) == 1
        else (f"and tools {named} only clear it")
    )


def _flipping_value(facts: Facts, c: n.ContextCond) -> str:
    """A value that, written to the always unset key, turns the comparison ``c`` the other
    way (an unset key reads as `null`): its own value, else another the flow compares the
    key with, else one it does not."""
    holds = m.COMPARISONS[c.op]
    unset = holds(None, c.value.value)
    system = facts.system
    index = system.keys.index(c.key.value) if c.key.value in system.keys else None
    others = system.literals[index] if index is not None else ()
    for value in (c.value.value, *others):
        if holds(value, c.value.value) != unset:
            return format_value(value)
    return format_value(system.value_outside(index) if index is not None else "done")


def check_human_initiator(facts: Facts) -> Iterator[Finding]:
    """I302: an ``initiator`` target resolves to a human speaker."""
    system = facts.system
    if system.compiled is None or system.initiator not in system.humans:
        return
    who = system.name(system.initiator)
    found: dict[Span, None] = {}  # in file order, each once
    for rule in system.rules:
        if isinstance(rule.then, m.RevertToInitiatorTarget) and rule.info is not None:
            span = facts.rule_span(rule)
            if span is not None:
                found.setdefault(span, None)
    spans = list(found)
    if isinstance(system.default, m.RevertToInitiatorTarget) and system.compiled.default_span:
        spans.append(system.compiled.default_span)
    for span in spans:
        yield Finding(
            facts.diag(
                I302,
                f"`initiator` resolves to {once(who)}, a human: the turn goes back to the person who opened the flow",
                span=span,
                notes=("with a human seeder the initiator is the person, not a coordinator",),
                help="if a coordinator should get the turn, name it (`then coordinator`) or declare `initiator coordinator`",
            )
        )


def check_json_assumptions(facts: Facts) -> Iterator[Finding]:
    """I303: a JSON graph is checked under the assumptions for graphs without declarations."""
    if not facts.system.json_mode:
        return
    yield Finding(
        facts.diag(
            I303,
            "checked as a JSON graph: every participant is assumed to call any tool a `tool_called` rule names "
            "and to set any context key a condition reads to any compared value, on any turn",
            json_path="",
            notes=(
                "the participants are the agent ids the graph mentions; `initial_speaker` is the start and the initiator",
                "no tool is assumed to hand off or finish: a graph declares no tools, so a run in which "
                "one returns `Handoff` or `Finish` is not among the runs checked",
            ),
            help="check the `.flow` source instead for findings based on declared tools and humans",
        )
    )


def check_round_robin_order(facts: Facts) -> Iterator[Finding]:
    """W216: ``round_robin`` lists its speakers in an order other than its rotation.

    As AG2's ``RoundRobinTarget``, the rotation is the channel's participant order (the
    declaration order), from the last speaker; the list gives only the first speaker
    (``TransitionGraph.round_robin`` keeps nothing else of it).
    """
    flow, system = facts.flow, facts.system
    if flow is None:
        return
    order = list(system.speakers)
    for st in flow.statements:
        if not isinstance(st, n.RoundRobinDecl) or not st.speakers:
            continue
        written = [s.value for s in st.speakers]
        if written[0] not in order:
            continue  # an undeclared name: already an error
        i = order.index(written[0])
        rotation = order[i:] + order[:i]
        if written == rotation:
            continue
        shown = " → ".join(format_name(s) for s in (*rotation, rotation[0]))
        extra = [s for s in rotation if s not in written]
        notes = [
            "`round_robin` (like `next`) gives the turn to the participant after the last "
            "speaker in the participant order, which is the order the speakers are declared in; "
            "the list only names who starts",
        ]
        if extra:
            notes.append(
                f"not listed but in the rotation: {', '.join(format_name(s) for s in extra)}"
            )
        yield Finding(
            facts.diag(
                W216,
                f"`round_robin {', '.join(format_name(s) for s in written)}` rotates in the "
                f"declaration order, not as written: {shown}",
                span=st.span,
                notes=tuple(notes),
                help=f"declare the speakers in the order they should take turns "
                f"({', '.join(format_name(s) for s in written)}), or list them as they "
                f"rotate (`round_robin {', '.join(format_name(s) for s in rotation)}`)",
            )
        )
