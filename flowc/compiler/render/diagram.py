"""The diagram model: the nodes and edges a flow really declares, computed once.

Both renderers (:mod:`~flowc.compiler.render.dot`, :mod:`~flowc.compiler.render.mermaid`)
and the HTML page draw the same :class:`Diagram`, built by :func:`build_diagram` from a
:class:`~flowc.compiler.compiled.CompiledFlow` or a JSON
:class:`~flowc.compiler.pipeline.LoadedGraph`, and optionally marked with the checker's
findings by :func:`mark_findings`.

What is drawn:

- one node per speaker (humans drawn differently), with its tools and the context
  writes they make; a start marker; one terminal node per distinct terminate reason;
  a ``max_turns`` node when the flow has a cap;
- one edge per compiled rule, from each speaker that could be the sender when the
  rule's condition holds, to each speaker (or terminal) its target resolves to for
  that sender: ``next`` over the participant order, ``stay`` to the sender,
  ``initiator`` to the channel's creator, a custom target to its ``->`` list (or one
  edge to a ``?`` node when it has none);
- the default (``otherwise``) as dashed edges from every speaker that has no rule
  that always fires for it;
- tool hand-offs and finishes as edges from the speaker that declares the tool.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.describe import condition_text, rule_ref, target_text
from flowc.compiler.pipeline import LoadedGraph
from flowc.diagnostics import Diagnostic, RunPath, elide, listing
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_name
from flowc.source import Span

# Node kinds
SPEAKER, HUMAN, START, TERMINAL, CAP, UNKNOWN, OTHERWISE, SHADOWED = (
    "speaker",
    "human",
    "start",
    "terminal",
    "cap",
    "unknown",
    "otherwise",
    "shadowed",
)
# Edge kinds
START_EDGE, RULE, DEFAULT, TOOL = "start", "rule", "default", "tool"
# Marks, strongest first. A violating run's edges (VIOLATION) come last: a run that a
# property's check found takes only live edges (never a dead or trapped rule, never an
# unreachable speaker), so of the others only a loop's mark can fall on the same edge, and
# it wins there, since it says something of every run through the edge, where the
# violation shows one run; the E116 finding still lists every edge of its run (the HTML
# page highlights them all).
DEAD, TRAP, LOOP, VIOLATION = "dead", "trap", "loop", "violation"
MARK_ORDER = (DEAD, TRAP, LOOP, VIOLATION)
MARK_LEGEND = {
    DEAD: "unreachable speaker / dead rule (W201, W202, W203)",
    TRAP: "priority trap: dead because of its priority (W204)",
    LOOP: "sticky context loop / may never terminate (W205, W206)",
    VIOLATION: "the run that breaks a property (E116)",
}
_CODE_MARKS = {
    "W201": DEAD,
    "W202": DEAD,
    "W203": DEAD,
    "W204": TRAP,
    "W205": LOOP,
    "W206": LOOP,
    "E116": VIOLATION,
}
#: the legend's line when the checker's analysis stopped at its state bound (I301)
PARTIAL_LEGEND = (
    "partial: the analysis stopped at its state bound (I301), so speakers, rules and loops "
    "left unmarked may still be unreachable, dead or stuck"
)


@attrs.frozen
class Node:
    """One box of the diagram.

    ``id`` is the element id in SVG and HTML (``n0``, ``n1``, ...); ``key`` is the
    node's unique name in DOT (a speaker's name, or a bracketed name for the others).
    """

    id: str
    key: str
    kind: str
    title: str
    details: tuple[str, ...] = ()
    spans: tuple[Span, ...] = ()
    mark: str | None = None


@attrs.frozen
class Edge:
    """One arrow: ``rule`` is the compiled transition index for rule edges."""

    id: str
    source: str  # node id
    target: str  # node id
    kind: str
    label: tuple[str, ...] = ()
    rule: int | None = None
    spans: tuple[Span, ...] = ()
    json_path: str | None = None
    mark: str | None = None


@attrs.frozen
class Finding:
    """A diagnostic and the diagram elements it points at."""

    diagnostic: Diagnostic
    nodes: tuple[str, ...]
    edges: tuple[str, ...]
    mark: str | None


@attrs.frozen
class Diagram:
    """Everything a renderer draws, in a fixed order (deterministic output)."""

    title: str | None
    description: str | None
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    #: set by :func:`mark_findings`: the legend is drawn and ``findings`` is meaningful
    checked: bool = False
    findings: tuple[Finding, ...] = ()

    def node(self, node_id: str) -> Node:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def speaker_node(self, name: str) -> Node:
        """The node of speaker ``name``."""
        for node in self.nodes:
            if node.kind in (SPEAKER, HUMAN) and node.key == name:
                return node
        raise KeyError(name)

    def edges_of_rule(self, index: int) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.kind == RULE and e.rule == index)

    @property
    def partial(self) -> bool:
        """Whether the findings marked come from a partial analysis (I301)."""
        return any(f.diagnostic.code.id == "I301" for f in self.findings)

    @property
    def violated(self) -> tuple[str, ...]:
        """The properties whose violating run is marked (E116 findings with a run)."""
        names = (
            f.diagnostic.run.subject
            for f in self.findings
            if f.mark == VIOLATION and f.diagnostic.run is not None and (f.edges or f.nodes)
        )
        return tuple(dict.fromkeys(names))

    @property
    def marks(self) -> tuple[str, ...]:
        """The marks in use, strongest first."""
        used = {x.mark for x in self.nodes if x.mark} | {x.mark for x in self.edges if x.mark}
        return tuple(mk for mk in MARK_ORDER if mk in used)


# ── text of conditions, targets and effects ─────────────────────────────────


def json_text(value: Any) -> str:
    """A value as a ``.flow`` literal (JSON)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _effect_text(effect: Any) -> str:
    parts = [f"sets {format_name(k)} = {json_text(v)}" for k, v in effect.sets]
    parts += [f"clears {format_name(k)}" for k in effect.clears]
    if effect.handoff is not None:
        parts.append(f"hands off to {format_name(effect.handoff)}")
    if effect.finish is not None:
        parts.append(f"finishes {json_text(effect.finish)}")
    return ", ".join(parts)


def tool_text(tool: Any) -> str:
    """``tool NAME: effects | effects`` as shown on its speaker."""
    head = f"tool {format_name(tool.name)}"
    if not tool.alternatives:
        return head
    return head + ": " + " | ".join(_effect_text(a) for a in tool.alternatives)


# ── the input, normalised ────────────────────────────────────────────────────


@attrs.frozen
class _Speaker:
    name: str
    human: bool
    span: Span | None
    details: tuple[str, ...]


@attrs.frozen
class _ToolRoute:
    speaker: str
    tool: str
    handoff: str | None
    finish: str | None
    span: Span | None


@attrs.frozen
class _Input:
    title: str | None
    description: str | None
    speakers: tuple[_Speaker, ...]
    name_of: dict[str, str]  # agent id -> speaker name
    start: str
    initiator: str
    graph: m.TransitionGraph
    rule_spans: dict[int, tuple[Span, ...]]
    rule_lines: dict[int, int]  # the line each rule is written on (none in a JSON graph)
    default_span: Span | None
    default_written: bool
    #: tool name -> speakers that declare it; None: any speaker may call any tool (JSON)
    tool_owners: dict[str, tuple[str, ...]] | None
    tool_routes: tuple[_ToolRoute, ...]
    #: custom target -> its ``->`` list: (speaker or None for terminate, reason or None)
    custom_results: dict[str, tuple[tuple[str | None, str | None], ...] | None]
    is_json: bool


def _from_compiled(flow: CompiledFlow) -> _Input:
    decls: dict[str, n.SpeakerDecl] = {}
    for decl in flow.flow.speakers():
        decls.setdefault(decl.name.value, decl)
    speakers: list[_Speaker] = []
    for name in flow.speakers:
        details: list[str] = []
        if name in flow.humans:
            details.append("human")
        if name == flow.initiator and flow.initiator != flow.start:
            details.append("initiator")
        details += [tool_text(t) for t in flow.tools_of(name)]
        writes = flow.human_writes.get(name, ())
        if writes:  # what a human may write, spelled as its declaration spells it
            details.append("sets " + ", ".join(format_name(k) for k in writes))
        found = decls.get(name)
        speakers.append(
            _Speaker(name, name in flow.humans, found.span if found else None, tuple(details))
        )
    owners: dict[str, list[str]] = {}
    routes: list[_ToolRoute] = []
    for tool in flow.tools:
        owners.setdefault(tool.name, []).append(tool.speaker)
        for alt in tool.alternatives:
            if alt.handoff is not None or alt.finish is not None:
                routes.append(
                    _ToolRoute(tool.speaker, tool.name, alt.handoff, alt.finish, tool.span)
                )
    # the AST keeps the reasons of `-> terminate "why"` results
    written_results: dict[str, tuple[n.Result, ...] | None] = {
        st.name.value: st.results for st in flow.flow.of_type(n.TargetDecl)
    }
    customs: dict[str, tuple[tuple[str | None, str | None], ...] | None] = {}
    for decl_c in flow.customs:
        if decl_c.kind != "target":
            continue
        results = written_results.get(decl_c.name)
        if results is None:
            customs[decl_c.name] = None
            continue
        out: dict[tuple[str | None, str | None], None] = {}
        for r in results:
            if isinstance(r, n.ResultSpeaker):
                out[(r.speaker.value, None)] = None
            else:
                out[(None, r.reason.value if r.reason else None)] = None
        customs[decl_c.name] = tuple(out)
    rule_spans: dict[int, tuple[Span, ...]] = {}
    for info in flow.rules:
        spans = (
            (info.span,) if info.span == info.statement.span else (info.span, info.statement.span)
        )
        rule_spans[info.index] = spans
    return _Input(
        title=flow.name,
        description=flow.description,
        speakers=tuple(speakers),
        name_of={flow.agent_id(s): s for s in flow.speakers},
        start=flow.start,
        initiator=flow.initiator,
        graph=flow.graph,
        rule_spans=rule_spans,
        rule_lines={info.index: info.line for info in flow.rules},
        default_span=flow.default_span,
        default_written=flow.default_span is not None,
        tool_owners={k: tuple(v) for k, v in owners.items()},
        tool_routes=tuple(routes),
        custom_results=customs,
        is_json=False,
    )


def _from_loaded(loaded: LoadedGraph) -> _Input:
    graph = loaded.graph
    ids = m.agent_ids(graph)
    customs: dict[str, tuple[tuple[str | None, str | None], ...] | None] = {}
    for t in (*(tr.then for tr in graph.transitions), graph.default_target):
        if isinstance(t, m.CustomTarget):
            customs[t.name] = None
    return _Input(
        title=None,
        description=None,
        speakers=tuple(_Speaker(i, False, None, ()) for i in ids),
        name_of={i: i for i in ids},
        start=graph.initial_speaker,
        initiator=graph.initial_speaker,
        graph=graph,
        rule_spans={},
        rule_lines={},
        default_span=None,
        default_written=graph.default_target != m.TerminateTarget(),
        tool_owners=None,
        tool_routes=(),
        custom_results=customs,
        is_json=True,
    )


# ── who can be the sender when a condition holds ─────────────────────────────


def _senders(
    cond: m.Condition, everyone: frozenset[str], inp: _Input
) -> tuple[frozenset[str], frozenset[str]]:
    """``(possible, certain)``: speakers for which ``cond`` may hold / surely holds."""
    if isinstance(cond, m.Always):
        return everyone, everyone
    if isinstance(cond, m.FromSpeaker):
        who = frozenset({inp.name_of.get(cond.agent_id, cond.agent_id)}) & everyone
        return who, who
    if isinstance(cond, m.ToolCalled):
        if inp.tool_owners is None:
            return everyone, frozenset()
        return frozenset(inp.tool_owners.get(cond.tool_name, ())), frozenset()
    if isinstance(cond, m.Not):
        possible, certain = _senders(cond.condition, everyone, inp)
        return everyone - certain, everyone - possible
    if isinstance(cond, m.AllOf):
        parts = [_senders(c, everyone, inp) for c in cond.conditions]
        p, c = everyone, everyone
        for pp, cc in parts:
            p, c = p & pp, c & cc
        return p, c
    if isinstance(cond, m.AnyOf):
        p, c = frozenset(), frozenset()
        for pp, cc in (_senders(x, everyone, inp) for x in cond.conditions):
            p, c = p | pp, c | cc
        return p, c
    return everyone, frozenset()  # context conditions and custom conditions


# ── building ─────────────────────────────────────────────────────────────────


@attrs.frozen
class _Ranking:
    """The order a diagram's rules are tried in and whom each can fire for, computed
    once and read by every rule's edges."""

    ranked: list[int]  # rule file indices, in the order they are tried
    position: dict[int, int]  # rule file index -> its place in that order, from 1
    senders: dict[int, tuple[frozenset[str], frozenset[str]]]  # -> (possible, certain)
    covered: dict[str, int]  # sender -> the place of the first rule that always fires for it


class _Builder:
    def __init__(self, inp: _Input):
        self.inp = inp
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        self.by_key: dict[str, Node] = {}
        self.speaker_ids: dict[str, str] = {}
        self.order = [s.name for s in inp.speakers]
        self.names = frozenset(self.order)

    def add_node(
        self,
        key: str,
        kind: str,
        title: str,
        details: tuple[str, ...] = (),
        spans: tuple[Span, ...] = (),
    ) -> str:
        existing = self.by_key.get(key)
        if existing is not None:
            return existing.id
        node = Node(f"n{len(self.nodes)}", key, kind, title, details, spans)
        self.nodes.append(node)
        self.by_key[key] = node
        return node.id

    def special_key(self, key: str) -> str:
        # JSON agent ids may be any string: keep the bracketed names of the other
        # nodes apart from them
        while key in self.names:
            key += "'"
        return key

    def terminal(self, reason: str | None) -> str:
        title = terminal_title(reason)
        details = ("reason chosen at run time",) if reason is None else ()
        return self.add_node(self.special_key(f"[{title}]"), TERMINAL, title, details)

    def edge(
        self,
        source: str,
        target: str,
        kind: str,
        label: tuple[str, ...] = (),
        rule: int | None = None,
        spans: tuple[Span, ...] = (),
        json_path: str | None = None,
    ) -> None:
        self.edges.append(
            Edge(f"e{len(self.edges)}", source, target, kind, label, rule, spans, json_path)
        )

    def resolve(self, target: m.Target, sender: str | None) -> tuple[tuple[str, str | None], ...]:
        """Node ids the target can lead to from ``sender``, each with a 'via' text."""
        inp = self.inp
        if isinstance(target, m.AgentTarget):
            name = inp.name_of.get(target.agent_id, target.agent_id)
            return ((self.speaker_ids[name], None),) if name in self.speaker_ids else ()
        if isinstance(target, m.TerminateTarget):
            return ((self.terminal(target.reason), None),)
        if isinstance(target, m.StayTarget):
            return ((self.speaker_ids[sender], "stay"),) if sender is not None else ()
        if isinstance(target, m.RoundRobinTarget):
            if sender is None or not self.order:
                return ()
            i = self.order.index(sender) if sender in self.order else -1
            return ((self.speaker_ids[self.order[(i + 1) % len(self.order)]], "next"),)
        if isinstance(target, m.RevertToInitiatorTarget):
            ini = inp.initiator
            return ((self.speaker_ids[ini], "initiator"),) if ini in self.speaker_ids else ()
        via = target_text(target)
        results = inp.custom_results.get(target.name)
        if results is None:
            unknown = self.add_node(
                self.special_key(f"[? {target.name}]"),
                UNKNOWN,
                "?",
                (f"{format_name(target.name)} has no -> list",),
            )
            return ((unknown, via),)
        out: list[tuple[str, str | None]] = []
        for speaker, reason in results:
            if speaker is not None:
                if speaker in self.speaker_ids:
                    out.append((self.speaker_ids[speaker], via))
            else:
                out.append((self.terminal(reason), via))
        return tuple(out)

    def build(self) -> Diagram:
        """The diagram, drawn step by step in the order its nodes and edges are numbered:
        the start and the speakers, the tools' routes, the rules (by file number), the
        default, the cap."""
        self._add_speakers()
        self._add_tool_routes()
        ranking = self._rank_rules()
        for index, tr in enumerate(self.inp.graph.transitions):
            self._add_rule(index, tr, ranking)
        self._add_default(ranking.covered)
        self._add_cap()
        inp = self.inp
        return Diagram(inp.title, inp.description, tuple(self.nodes), tuple(self.edges))

    def _add_speakers(self) -> None:
        """The start marker, one node per speaker, and the edge to the start speaker."""
        inp = self.inp
        start = self.add_node(self.special_key("[start]"), START, "start")
        for sp in inp.speakers:
            self.speaker_ids[sp.name] = self.add_node(
                sp.name,
                HUMAN if sp.human else SPEAKER,
                sp.name,
                sp.details,
                (sp.span,) if sp.span else (),
            )
        if inp.start in self.speaker_ids:
            self.edge(start, self.speaker_ids[inp.start], START_EDGE)

    def _add_tool_routes(self) -> None:
        """An edge from a tool's speaker to the speaker it hands off to and to the end
        it finishes with."""
        for route in self.inp.tool_routes:
            src = self.speaker_ids[route.speaker]
            label: tuple[str, ...] = (f"tool {format_name(route.tool)}",)
            spans = (route.span,) if route.span else ()
            if route.handoff is not None and route.handoff in self.speaker_ids:
                self.edge(src, self.speaker_ids[route.handoff], TOOL, label, spans=spans)
            if route.finish is not None:
                self.edge(src, self.terminal(route.finish), TOOL, label, spans=spans)

    def _ref(self, index: int) -> str:
        """How outputs name rule ``index``: by its file number (``rule 3, line 14``)."""
        return rule_ref(index, self.inp.rule_lines.get(index))

    def _rank_rules(self) -> _Ranking:
        """The order the rules are tried in, each rule's senders, and the senders an
        earlier rule always takes. Rules are tried by ascending priority, then in file
        order (AG2's stable sort)."""
        graph = self.inp.graph
        ranked = sorted(
            range(len(graph.transitions)), key=lambda i: (graph.transitions[i].priority, i)
        )
        position = {index: pos + 1 for pos, index in enumerate(ranked)}
        everyone = frozenset(self.order)
        senders = {i: _senders(t.when, everyone, self.inp) for i, t in enumerate(graph.transitions)}
        # A rule never fires for a sender if a rule tried before it always fires for
        # that sender: no edge is drawn from there.
        covered: dict[str, int] = {}
        for index in ranked:
            for s in senders[index][1]:
                covered.setdefault(s, position[index])
        return _Ranking(ranked, position, senders, covered)

    def _add_rule(self, index: int, tr: m.Transition, ranking: _Ranking) -> None:
        """The edges of rule ``index``: from each sender it can fire for, or from a
        'never fires' note when earlier rules take all of them."""
        inp = self.inp
        possible = ranking.senders[index][0]
        # an edge per sender repeats the label: a huge condition is cut short
        head = f"{self._ref(index)}: {elide(condition_text(tr.when, inp.name_of))}"
        extra: list[str] = []
        if tr.priority:
            extra.append(f"priority {tr.priority}")
        rank = ranking.position[index]
        covered = ranking.covered
        live = [s for s in self.order if s in possible and covered.get(s, rank) >= rank]
        rule_spans: tuple[Span, ...] = inp.rule_spans.get(index, ())
        if possible and not live:
            # every sender is taken by earlier rules: draw the rule from a note so
            # it stays visible (and `--check` can mark it); the note names the rules
            # that take its senders' turns, the first few of them
            earlier = sorted({ranking.ranked[covered[s] - 1] for s in possible})
            src = self.add_node(
                self.special_key(f"[shadowed {index}]"),
                SHADOWED,
                f"{self._ref(index)} never fires",
                (
                    "tried earlier, these take every turn it matches:",
                    *listing([self._ref(j) for j in earlier]),
                ),
                rule_spans,
            )
            for target, via in self.resolve(tr.then, None):
                label = (head, " · ".join([*extra, f"via {via}"] if via else extra))
                self.edge(
                    src,
                    target,
                    RULE,
                    label if label[1] else (head,),
                    index,
                    rule_spans,
                    f"transitions[{index}]",
                )
        for sender in live:
            for target, via in self.resolve(tr.then, sender):
                parts = [*extra, f"via {via}"] if via else extra
                self.edge(
                    self.speaker_ids[sender],
                    target,
                    RULE,
                    (head, " · ".join(parts)) if parts else (head,),
                    index,
                    rule_spans,
                    f"transitions[{index}]",
                )

    def _add_default(self, covered: dict[str, int]) -> None:
        """The default's edges from each speaker no rule always takes; when it is
        written but none falls through, an 'otherwise' note says so instead of hiding it."""
        inp = self.inp
        default = inp.graph.default_target
        via_default = _via_text(default)
        spans = (inp.default_span,) if inp.default_span else ()
        fallers = [s for s in self.order if s not in covered]
        for sender in fallers:
            for target, via in self.resolve(default, sender):
                label = _default_label(via)
                self.edge(
                    self.speaker_ids[sender],
                    target,
                    DEFAULT,
                    label,
                    spans=spans,
                    json_path="default_target",
                )
        if not fallers and inp.default_written:
            targets = self.resolve(default, None)
            details = ["no speaker falls through: each has a rule that always fires"]
            if not targets and via_default:
                details.append(f"then {via_default}")
            src = self.add_node(
                self.special_key("[otherwise]"), OTHERWISE, "otherwise", tuple(details), spans
            )
            for target, via in targets:
                label = _default_label(via)
                self.edge(src, target, DEFAULT, label, spans=spans, json_path="default_target")

    def _add_cap(self) -> None:
        """A ``max_turns`` node when the flow has a cap."""
        max_turns = self.inp.graph.max_turns
        if max_turns is not None:
            self.add_node(
                self.special_key("[max_turns]"),
                CAP,
                f"max_turns {max_turns}",
                ("ends any run at the cap",),
            )


def _default_label(via: str | None) -> tuple[str, ...]:
    return ("otherwise", f"via {via}") if via else ("otherwise",)


def _via_text(target: m.Target) -> str | None:
    if isinstance(target, m.CustomTarget):
        return target_text(target)
    return {
        m.RoundRobinTarget: "next",
        m.StayTarget: "stay",
        m.RevertToInitiatorTarget: "initiator",
    }.get(type(target))


def build_diagram(flow: CompiledFlow | LoadedGraph) -> Diagram:
    """The diagram of a compiled flow or a JSON graph.

    >>> from flowc import compile_flow
    >>> d = build_diagram(compile_flow("speaker a\\nspeaker b\\nwhen from a then b"))
    >>> [(d.node(e.source).title, d.node(e.target).title) for e in d.edges]
    [('start', 'a'), ('a', 'b'), ('b', 'terminate "after_work"')]
    """
    inp = _from_loaded(flow) if isinstance(flow, LoadedGraph) else _from_compiled(flow)
    return _Builder(inp).build()


def build_stored_diagram(
    loaded: LoadedGraph,
    *,
    names: dict[str, str] | None = None,
    humans: Iterable[str] = (),
    tools: dict[tuple[str, str], tuple[Any, ...]] | None = None,
) -> Diagram:
    """The diagram of a run's stored graph (what ``flowc render`` draws of that graph as
    JSON), with what the run recorded besides it: ``names`` (agent id -> speaker name),
    the ``humans`` (by name, drawn as humans) and the declared ``tools`` ((speaker, tool)
    -> effects, each with ``handoff`` and ``finish``), whose hand-offs and finishes are
    drawn as tool edges.

    >>> from flowc import compile_flow
    >>> c = compile_flow("speaker a\\nspeaker b { tool done finishes \\"ok\\" }\\nsequence a -> b")
    >>> tools = {(t.speaker, t.name): t.alternatives for t in c.tools}
    >>> d = build_stored_diagram(LoadedGraph(c.graph, {}, True), tools=tools)
    >>> [(d.node(e.source).title, d.node(e.target).title) for e in d.edges if e.kind == TOOL]
    [('b', 'terminate "ok"')]
    """
    inp = _from_loaded(loaded)
    ids = {name: agent for agent, name in (names or {}).items()}
    human = frozenset(ids.get(h, h) for h in humans)
    speakers = tuple(
        attrs.evolve(s, human=True, details=("human",)) if s.name in human else s
        for s in inp.speakers
    )
    routes: list[_ToolRoute] = []
    owners: dict[str, list[str]] | None = None
    if tools is not None:
        owners = {}
        for (speaker, tool), alternatives in tools.items():
            agent = ids.get(speaker, speaker)
            owners.setdefault(tool, []).append(agent)
            for alt in alternatives:
                handoff = None if alt.handoff is None else ids.get(alt.handoff, alt.handoff)
                if (handoff is not None or alt.finish is not None) and agent in inp.name_of:
                    routes.append(_ToolRoute(agent, tool, handoff, alt.finish, None))
    inp = attrs.evolve(
        inp,
        speakers=speakers,
        tool_routes=tuple(routes),
        tool_owners=None if owners is None else {k: tuple(v) for k, v in owners.items()},
    )
    return _Builder(inp).build()


# ── findings on the diagram ──────────────────────────────────────────────────


def _pos(span: Span) -> tuple[tuple[int, int], tuple[int, int]]:
    return (span.line, span.column), (span.end_line, span.end_column)


def _within(inner: Span, outer: Span) -> bool:
    (a, b), (c, d) = _pos(inner), _pos(outer)
    return c <= a and b <= d


def _area(span: Span) -> tuple[int, int]:
    return (
        span.end_line - span.line,
        span.end_column - span.column if span.end_line == span.line else span.end_column,
    )


_PATH = re.compile(r"transitions\[(\d+)\]")


def _match(
    span: Span | None, json_path: str | None, elements: Sequence[Node | Edge]
) -> tuple[str, ...]:
    """Ids of the elements a diagnostic points at: same span first, then the
    elements inside its span, then the innermost elements around it."""
    if span is None:
        if json_path is None:
            return ()
        hit = _PATH.search(json_path)
        if hit:
            path = f"transitions[{hit.group(1)}]"
            return tuple(e.id for e in elements if isinstance(e, Edge) and e.json_path == path)
        if "default_target" in json_path:
            return tuple(e.id for e in elements if isinstance(e, Edge) and e.kind == DEFAULT)
        return ()
    exact = [e.id for e in elements if e.spans and e.spans[0] == span]
    if exact:
        return tuple(exact)
    inside = [e.id for e in elements if e.spans and _within(e.spans[0], span)]
    if inside:
        return tuple(inside)
    around = [
        (min(_area(s) for s in e.spans if _within(span, s)), e.id)
        for e in elements
        if any(_within(span, s) for s in e.spans)
    ]
    if not around:
        return ()
    best = min(a for a, _ in around)
    return tuple(i for a, i in around if a == best)


#: the widest line of a finding's explanation drawn on the diagram
EXPLANATION_WIDTH = 48


def explanation_lines(d: Diagnostic) -> tuple[str, ...]:
    """A finding's explanation (the analysis's own words, as ``flowc check`` prints
    them after its code), in lines to draw on a note.

    >>> from flowc.diagnostics import W203
    >>> explanation_lines(Diagnostic(W203, "m", explanation="earlier rules take every turn it could match"))
    ('W203: earlier rules take every turn it could', 'match')
    """
    return tuple(
        textwrap.wrap(
            f"{d.code.id}: {d.explanation}",
            EXPLANATION_WIDTH,
            break_long_words=False,
            break_on_hyphens=False,
        )
    )


def violation_legend(names: Sequence[str]) -> str:
    """The legend's line for the runs of violated properties, naming them.

    >>> violation_legend(["clear_outcome"])
    'the run that breaks property clear_outcome (E116)'
    >>> violation_legend(["a", "b"])
    'the runs that break properties a, b (E116)'
    """
    shown = ", ".join(format_name(x) for x in names)
    if len(names) == 1:
        return f"the run that breaks property {shown} (E116)"
    return f"the runs that break properties {shown} (E116)"


def terminal_title(reason: str | None) -> str:
    """The title of the terminal node of ``reason`` (``None``: a reason chosen at run time).

    >>> terminal_title("done"), terminal_title(None)
    ('terminate "done"', 'terminate')
    """
    return "terminate" if reason is None else f"terminate {json_text(reason)}"


def _ends_at(node: Node, reason: str | None) -> bool:
    """Whether ``node`` is the terminal a run that ends with ``reason`` goes to."""
    return node.kind == TERMINAL and node.title == terminal_title(reason)


def run_elements(diagram: Diagram, run: RunPath) -> tuple[str, ...]:
    """Ids of what a run takes on the diagram: the start edge, then for each turn the edge
    from its speaker to the next speaker (or to the terminal the run ends at) that the
    turn's routing drew (the rule that fired, the default, the tool that handed off or
    finished). A run the cap ends marks the ``max_turns`` node, and its last turn the
    edges of the rule that routed it (the cap ends the run before anyone is reached).

    >>> from flowc import compile_flow
    >>> d = build_diagram(compile_flow("speaker a\\nspeaker b\\nwhen from a then b"))
    >>> run = RunPath("p", (("a", 0, None), ("b", -1, None)), None, "after_work")
    >>> [(d.node(d.edges[int(i[1:])].source).title, d.node(d.edges[int(i[1:])].target).title)
    ...  for i in run_elements(d, run)]
    [('start', 'a'), ('a', 'b'), ('b', 'terminate "after_work"')]
    """
    steps = run.steps
    if not steps:
        return ()
    ids = {x.key: x.id for x in diagram.nodes if x.kind in (SPEAKER, HUMAN)}
    out: dict[str, None] = {}
    first = ids.get(steps[0][0])
    out.update((e.id, None) for e in diagram.edges if e.kind == START_EDGE and e.target == first)
    cap = run.next is None and run.reason == "max_turns"
    leaving: dict[str, list[Edge]] = {}  # a long run on a large diagram: each edge read once
    for e in diagram.edges:
        leaving.setdefault(e.source, []).append(e)
    for i, (speaker, fired, tool) in enumerate(steps):
        nxt = steps[i + 1][0] if i + 1 < len(steps) else run.next
        out_of = leaving.get(ids.get(speaker, ""), [])
        if fired >= 0:
            taken = [e for e in out_of if e.kind == RULE and e.rule == fired]
        elif fired == -1:
            taken = [e for e in out_of if e.kind == DEFAULT]
        else:
            label = f"tool {format_name(tool or '')}"
            taken = [e for e in out_of if e.kind == TOOL and e.label[:1] == (label,)]
        if nxt is not None:
            went = [e for e in taken if e.target == ids.get(nxt)]
        else:
            went = [e for e in taken if _ends_at(diagram.node(e.target), run.reason)]
            if not went and cap and i == len(steps) - 1:
                went = taken  # cut by the cap: the rule routed the turn, nobody was reached
        out.update((e.id, None) for e in went)
    if cap:
        out.update((x.id, None) for x in diagram.nodes if x.kind == CAP)
    return tuple(out)


def _with_trap_edges(diagram: Diagram, d: Diagnostic) -> tuple[Diagram, list[Edge]]:
    """The diagram with the edges of a priority-trapped rule (W204) drawn from the
    speakers whose turns an earlier rule takes from it, where they are missing."""
    by_key = {x.key: x for x in diagram.nodes if x.kind in (SPEAKER, HUMAN)}
    extra: list[Edge] = []
    for index in d.dead_rules:
        drawn = [e for e in diagram.edges if e.kind == RULE and e.rule == index]
        if not drawn:
            continue
        for name in d.trap_senders:
            node = by_key.get(name)
            if node is None or any(e.source == node.id for e in drawn):
                continue
            edge_id = f"e{len(diagram.edges) + len(extra)}"
            extra.append(attrs.evolve(drawn[0], id=edge_id, source=node.id))
    if not extra:
        return diagram, extra
    return attrs.evolve(diagram, edges=(*diagram.edges, *extra)), extra


def mark_findings(diagram: Diagram, diagnostics: Iterable[Diagnostic]) -> Diagram:
    """Mark the checker's findings on the diagram, by span (or JSON path).

    W201 greys the speaker (and the edges that touch it), W202 the default edges,
    W203 the rule's edges; W204 marks the rule's edges as a priority trap; W205 and
    W206 mark what they point at as a loop; E116 marks the edges of the run that breaks
    the property (:func:`run_elements`) as a violation. Other codes are kept as findings (and
    highlighted on the HTML page) without a mark. A rule drawn from a note (the diagram
    found every sender's turns taken by earlier rules) gets the W203/W204 finding's
    explanation on that note instead of the diagram's own guess.

    >>> from flowc import compile_flow
    >>> from flowc.diagnostics import W203
    >>> c = compile_flow("speaker a\\nspeaker b\\nwhen always then b\\nwhen from a then a")
    >>> d = mark_findings(build_diagram(c), [Diagnostic(W203, "dead", span=c.rules[1].span)])
    >>> [(e.label[0], e.mark) for e in d.edges if e.kind == "rule"]
    [('rule 1, line 3: always', None), ('rule 1, line 3: always', None), ('rule 2, line 4: from a', 'dead')]
    """
    nodes = {x.id: x for x in diagram.nodes}
    edges = {x.id: x for x in diagram.edges}
    marks: dict[str, str] = {}
    # the grey an unreachable speaker passes to the edges touching it; it wins over the
    # edge's own mark, unless that would hide a finding about a rule on every edge it has
    inherited: dict[str, str] = {}

    def put(element_id: str, mark: str) -> None:
        old = marks.get(element_id)
        if old is None or MARK_ORDER.index(mark) < MARK_ORDER.index(old):
            marks[element_id] = mark

    def inherit(element_id: str, mark: str) -> None:
        old = inherited.get(element_id)
        if old is None or MARK_ORDER.index(mark) < MARK_ORDER.index(old):
            inherited[element_id] = mark

    findings: list[Finding] = []
    # a rule drawn from a note (every sender's turns taken by earlier rules, as the diagram
    # reads the rules alone): the checker's explanation replaces the note's guess
    explained: dict[str, tuple[str, ...]] = {}
    for d in sorted(diagnostics, key=Diagnostic.sort_key):
        code = d.code.id
        if code == "W201":
            pool: list[Node | Edge] = [x for x in diagram.nodes if x.kind in (SPEAKER, HUMAN)]
        elif code == "W202":
            pool = [x for x in diagram.nodes if x.kind == OTHERWISE]
            pool += [x for x in diagram.edges if x.kind == DEFAULT]
        elif code in ("W203", "W204"):
            pool = [x for x in diagram.edges if x.kind == RULE]
        else:
            pool = [*diagram.nodes, *diagram.edges]
        if code == "W202":
            hits: tuple[str, ...] = tuple(x.id for x in pool)
        elif code == "E116":  # the run that breaks the property, when the checker gave it
            hits = run_elements(diagram, d.run) if d.run is not None else ()
        elif code == "I301":
            hits = ()  # about the whole flow (the legend says it), not the element it is placed on
        else:
            hits = _match(d.span, d.json_path, pool)
        if d.dead_rules:  # the rules it proves never fire: every edge of each
            diagram, extra = _with_trap_edges(diagram, d)
            edges.update((x.id, x) for x in extra)
            own_mark = _CODE_MARKS.get(code)
            rule_mark = TRAP if code == "W204" else DEAD
            for e in diagram.edges:
                if e.kind == RULE and e.rule in d.dead_rules:
                    put(e.id, rule_mark)
                    if own_mark != rule_mark:
                        inherit(e.id, rule_mark)
                    if e.id not in hits:
                        hits = (*hits, e.id)
        if code in ("W203", "W204") and d.explanation:
            for h in hits:
                if h in edges and nodes[edges[h].source].kind == SHADOWED:
                    explained.setdefault(edges[h].source, explanation_lines(d))
        mark = _CODE_MARKS.get(code)
        if mark is not None:
            for h in hits:
                put(h, mark)
                if h in nodes and mark == DEAD:
                    for e in diagram.edges:
                        if h in (e.source, e.target):
                            inherit(e.id, DEAD)
        findings.append(
            Finding(
                d, tuple(h for h in hits if h in nodes), tuple(h for h in hits if h in edges), mark
            )
        )
    own = dict(marks)
    for element_id, mark in inherited.items():
        put(element_id, mark)
    for f in findings:
        # e.g. a W204 trap drawn only from an unreachable speaker: keep it orange
        if f.mark is not None and f.edges and all(marks[i] != f.mark for i in f.edges):
            for edge_id in f.edges:
                if own.get(edge_id) == f.mark:
                    marks[edge_id] = f.mark
    return attrs.evolve(
        diagram,
        nodes=tuple(
            attrs.evolve(x, mark=marks.get(x.id), details=explained.get(x.id, x.details))
            for x in diagram.nodes
        ),
        edges=tuple(attrs.evolve(x, mark=marks.get(x.id)) for x in diagram.edges),
        checked=True,
        findings=tuple(findings),
    )
