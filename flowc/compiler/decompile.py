"""Graph dict -> readable `.flow`: for people moving graphs built in Python into files.

Compiling the result gives the same dict back (``decompile`` checks this itself).

>>> text = decompile({"initial_speaker": "a", "transitions": [
...     {"when": {"name": "from_speaker", "args": {"agent_id": "a"}},
...      "then": {"name": "agent", "args": {"agent_id": "b"}}, "priority": 0}],
...     "default_target": {"name": "terminate", "args": {"reason": "sequence_complete"}},
...     "max_turns": 2})
>>> print(text.splitlines()[-1])
sequence a -> b
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.describe import DecompileError, ModelToAst
from flowc.compiler.pipeline import compile_source
from flowc.compiler.quoting import ticked
from flowc.compiler.serde import (
    ShapeError,
    is_knobs_dict,
    structure_graph,
    structure_knobs,
    unstructure_graph,
)
from flowc.diagnostics import E108, Diagnostic, FlowError, has_errors
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_name, format_source, format_statement_line, format_value
from flowc.inputs import json_path
from flowc.source import NO_SPAN, SourceFile

S = NO_SPAN


def _name(value: str, path: str) -> n.Name:
    return ModelToAst(strict=True).name(value, path)


def _type_of(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "object"
    return "any"


class _Customs:
    """Collects the custom conditions and targets a graph uses, with inferred types."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], dict[str, str]] = {}
        #: each custom's first call: where it is, and the arguments it passes
        self.first: dict[tuple[str, str], tuple[str, frozenset[str]]] = {}

    def __call__(self, kind: str, name: str, args: dict[str, Any], path: str) -> None:
        """Note one call at ``path``; raises :class:`DecompileError` when it passes other
        arguments than an earlier call of the same custom: a `.flow` declares one
        parameter list, and its calls pass every parameter (a default is written into the
        graph), so no `.flow` compiles to both."""
        keys = frozenset(args)
        first_path, first_keys = self.first.setdefault((kind, name), (path, keys))
        if keys != first_keys:
            raise _CallsDisagree(path, first_path, f"the custom {kind} `{name}`", keys, first_keys)
        params = self.seen.setdefault((kind, name), {})
        for key, value in args.items():
            t = _type_of(value)
            if params.get(key, t) != t:
                t = "any"
            params[key] = t


class _CallsDisagree(DecompileError):
    """Two calls of one custom pass different arguments (at ``path`` and ``other``)."""

    def __init__(
        self, path: str, other: str, what: str, keys: frozenset[str], other_keys: frozenset[str]
    ) -> None:
        self.other, self.what, self.keys, self.other_keys = other, what, keys, other_keys
        super().__init__(path, self.said(""))

    def said(self, root: str) -> str:
        """The message, with the other call's path under ``root`` (``graph.`` in a knobs
        dict)."""
        return (
            f"{self.what} is called here with the arguments {_listed(self.keys)}, at "
            f"{root}{self.other} with {_listed(self.other_keys)}: a .flow declares one "
            "parameter list for it and passes every parameter on each call (a default "
            "included), so none compiles to both calls"
        )


def _listed(keys: frozenset[str]) -> str:
    return "(" + ", ".join(f"`{k}`" for k in sorted(keys)) + ")" if keys else "(none)"


def _is_sequence(g: m.TransitionGraph) -> list[str] | None:
    ts = g.transitions
    if not ts or g.default_target != m.TerminateTarget("sequence_complete"):
        return None
    steps = [g.initial_speaker]
    for t in ts:
        if (
            t.priority != 0
            or not isinstance(t.when, m.FromSpeaker)
            or not isinstance(t.then, m.AgentTarget)
            or t.when.agent_id != steps[-1]
        ):
            return None
        steps.append(t.then.agent_id)
    return steps if g.max_turns == len(steps) else None


def _is_round_robin(g: m.TransitionGraph) -> bool:
    return g.transitions == (
        m.Transition(m.Always(), m.RoundRobinTarget(), 0),
    ) and g.default_target == m.TerminateTarget("round_robin_complete")


def unrecovered(
    graph: m.TransitionGraph, participants: Sequence[str] = (), initiator: str | None = None
) -> list[tuple[str, str]]:
    """What the graph routes by but does not carry, so that the `.flow` can only guess it:
    ``(JSON path, what)`` for each. A graph names the agents it routes from and to, not the
    channel's participants (`next` goes round them, in their order; a custom target may
    pick any of them) nor its initiator (whom `initiator` routes back to).

    >>> g = m.TransitionGraph("a", (m.Transition(m.FromSpeaker("a"), m.RoundRobinTarget()),))
    >>> [path for path, _ in unrecovered(g)], unrecovered(g, ["a", "b"])
    (['transitions[0].then'], [])
    """
    targets = [(f"transitions[{i}].then", t.then) for i, t in enumerate(graph.transitions)]
    targets.append(("default_target", graph.default_target))
    out: list[tuple[str, str]] = []
    named = ", ".join(format_name(a) for a in m.agent_ids(graph))
    if not participants:
        rotate = next((p for p, t in targets if isinstance(t, m.RoundRobinTarget)), None)
        if rotate is not None:
            out.append(
                (
                    rotate,
                    "`next` goes round the channel's participants in their order, which "
                    "a graph does not carry: the .flow declares only the agents the graph "
                    f"names ({named}), in the order they first appear; give --participants "
                    "A,B,... for the others and their order",
                )
            )
        custom = next((p for p, t in targets if isinstance(t, m.CustomTarget)), None)
        if custom is not None:
            out.append(
                (
                    custom,
                    "a custom target may route to any participant, and a graph does not "
                    f"carry them: the .flow declares only the agents the graph names ({named}); "
                    "give --participants A,B,... for the others",
                )
            )
    back = next((p for p, t in targets if isinstance(t, m.RevertToInitiatorTarget)), None)
    if back is not None and initiator is None:
        out.append(
            (
                back,
                "`initiator` routes back to the channel's creator, which a graph does not "
                "carry: the .flow's initiator is the start speaker "
                f"{ticked(graph.initial_speaker)}; give --initiator NAME if someone "
                "else opens the channel",
            )
        )
    return out


def decompile_graph(
    graph: m.TransitionGraph,
    context_vars: dict[str, Any] | None = None,
    *,
    participants: Sequence[str] = (),
    title: str | None = None,
    initiator: str | None = None,
    notes: Sequence[tuple[str, str]] | None = None,
) -> str:
    """Write a graph model as `.flow` text (formatted, not yet verified); ``notes``: what
    it could not recover, as comments (default: :func:`unrecovered`)."""
    customs = _Customs()
    to_ast = ModelToAst(strict=True, on_custom=customs)
    speakers = list(
        dict.fromkeys(
            [*participants, *m.agent_ids(graph), *([initiator] if initiator is not None else [])]
        )
    )
    for i, sp in enumerate(speakers):
        _name(sp, f"participants[{i}]")
    sections: list[list[str]] = []
    header = [
        "# Decompiled by `flowc decompile`. Mark seeders that never run a model with `: human`."
    ]
    header += (
        [
            f"# Not in the graph: {path}: {what}."
            for path, what in unrecovered(graph, participants, initiator)
        ]
        if notes is None
        else [f"# Not in the graph: {path}: {what}." for path, what in notes]
    )
    if title:
        header.append(format_statement_line(n.FlowDecl(_name(title, "title"), None, S)))
    sections.append(header)
    sections.append(
        [format_statement_line(n.SpeakerDecl(n.Name(s, S), False, (), S)) for s in speakers]
    )

    body: list[str] = []
    settings: list[str] = []
    steps = _is_sequence(graph)
    if steps is not None:
        body.append(format_statement_line(n.SequenceDecl(tuple(n.Name(s, S) for s in steps), S)))
    elif _is_round_robin(graph) and len(speakers) >= 2:
        order = [graph.initial_speaker] + [s for s in speakers if s != graph.initial_speaker]
        body.append(format_statement_line(n.RoundRobinDecl(tuple(n.Name(s, S) for s in order), S)))
        if graph.max_turns is not None:
            settings.append(f"max_turns {graph.max_turns}")
    else:
        settings.append(format_statement_line(n.StartDecl(n.Name(graph.initial_speaker, S), S)))
        if initiator is not None and initiator != graph.initial_speaker:
            settings.append(format_statement_line(n.InitiatorDecl(n.Name(initiator, S), S)))
        if graph.max_turns is not None:
            settings.append(f"max_turns {graph.max_turns}")
        for i, t in enumerate(graph.transitions):
            # a top-level `any_of` is written as an `or`, which compiles to one rule per
            # alternative: the same routing (see :func:`meaning`)
            body.append(format_statement_line(to_ast.rule(t, f"transitions[{i}]")))
        if graph.default_target != m.TerminateTarget():
            target = to_ast.target(graph.default_target, "default_target")
            body.append(format_statement_line(n.Otherwise(target, S)))
    if context_vars:
        entries = [
            f"  {format_name(_name(k, json_path(['context_vars', k])).value)} = {format_value(v)},"
            for k, v in context_vars.items()
        ]
        settings += ["context {", *entries, "}"]
    decls: list[str] = []
    for (kind, name), params in customs.seen.items():
        ps = tuple(n.Param(n.Name(p, S), n.TypeRef(t, None, S), None, S) for p, t in params.items())
        decl: n.Statement = (
            n.ConditionDecl(n.Name(name, S), ps, S)
            if kind == "condition"
            else n.TargetDecl(n.Name(name, S), ps, None, S)
        )
        decls.append(format_statement_line(decl))
    for section in (settings, decls, body):
        if section:
            sections.append(section)
    return "\n\n".join("\n".join(s) for s in sections) + "\n"


def _mention(graph: dict[str, Any], participants: Sequence[str], index: int) -> str | None:
    """The JSON path where the ``index``-th speaker of :func:`decompile_graph` is first
    written in the graph (None: it came from ``participants``)."""
    speaker = list(dict.fromkeys([*participants, *m.agent_ids(structure_graph(graph))]))[index]
    if speaker in participants:
        return None

    def find(value: Any, path: str) -> str | None:
        if isinstance(value, dict):
            for k, v in value.items():
                sub = f"{path}.{k}" if path else k
                if v == speaker and k in ("initial_speaker", "agent_id"):
                    return sub
                hit = find(v, sub)
                if hit is not None:
                    return hit
        elif isinstance(value, list):
            for i, v in enumerate(value):
                hit = find(v, f"{path}[{i}]")
                if hit is not None:
                    return hit
        return None

    return find(graph, "")


def decompile(
    data: dict[str, Any],
    *,
    participants: Sequence[str] = (),
    title: str | None = None,
    filename: str = "<graph>",
    initiator: str | None = None,
) -> str:
    """A graph dict or knobs dict -> `.flow` text that compiles back to the same dict.

    ``participants`` (in order) and ``initiator`` are what the graph does not carry; what
    the graph routes by but could not be recovered is said in the text's first comment
    lines (see :func:`unrecovered`).

    Raises :class:`FlowError` (E108 with JSON paths) when the dict is not a graph, or
    when part of it has no `.flow` spelling (a name given in ``participants``,
    ``initiator`` or ``title`` is named by the command's option, ``--participants``,
    ``--initiator`` or ``--name``: it is not in the dict).
    """
    try:
        if is_knobs_dict(data):
            knobs = structure_knobs(data)
            graph, context = knobs.graph, dict(knobs.context_vars)
        else:
            graph, context = structure_graph(data), {}
        text = decompile_graph(
            graph,
            context,
            participants=participants,
            title=title,
            initiator=initiator,
            notes=unrecovered_in(data, participants, initiator),
        )
    except ShapeError as err:
        raise FlowError(
            [Diagnostic(E108, str(p), filename, json_path=p.path) for p in err.problems]
        ) from None
    except DecompileError as err:
        raise FlowError([_refusal(err, data, graph, participants, initiator, filename)]) from None
    try:
        text = format_source(text, filename)
    except FlowError as err:
        raise _no_spelling(err.diagnostics, filename) from None
    if (
        len(m.agent_ids(graph)) + len(participants) < 2
        and len(set(participants) | set(m.agent_ids(graph))) < 2
    ):
        raise FlowError(
            [
                Diagnostic(
                    E108,
                    "the graph names only one agent, and a flow needs two speakers",
                    filename,
                    json_path="graph.initial_speaker" if is_knobs_dict(data) else "initial_speaker",
                    help="name the channel's other participants: --participants a,b",
                )
            ]
        )
    compiled = _compile(text, filename)
    if meaning(structure_graph(compiled.graph_dict)) != meaning(graph) or (
        compiled.context_vars != context
    ):
        raise AssertionError("decompile: the .flow does not compile back to the same graph")
    return text


def meaning(graph: m.TransitionGraph) -> m.TransitionGraph:
    """The graph with each condition written as `.flow` can: an empty `all_of` as
    `always`, an empty `any_of` as `not always`, a one-item composite as its item, and a
    rule whose condition is an `any_of` as one rule per alternative (AG2 takes the first
    rule that holds, so the split routes every turn as the one rule did); a `tool`
    condition either brings to the top of a rule stays in a composite, as `tool t and
    always` (AG2 1.2.1 routes on one only at the top). Two graphs with the same meaning
    route every run alike, on flowc's runtime and on AG2.

    >>> g = m.TransitionGraph("a", (m.Transition(
    ...     m.AnyOf((m.AllOf((m.FromSpeaker("a"),)), m.AllOf(()))), m.StayTarget()),))
    >>> [t.when for t in meaning(g).transitions]
    [FromSpeaker(agent_id='a'), Always()]
    """

    def cond(c: m.Condition) -> m.Condition:
        if isinstance(c, m.Not):
            return m.Not(cond(c.condition))
        if not isinstance(c, m.AllOf | m.AnyOf):
            return c
        items = tuple(cond(x) for x in c.conditions)
        if len(items) == 1:
            return items[0]
        if not items:
            return m.Always() if isinstance(c, m.AllOf) else m.Not(m.Always())
        return m.AllOf(items) if isinstance(c, m.AllOf) else m.AnyOf(items)

    def alternatives(c: m.Condition) -> list[m.Condition]:
        if isinstance(c, m.AnyOf):
            return [a for x in c.conditions for a in alternatives(x)]
        return [c]

    def top(c: m.Condition, composite: bool) -> m.Condition:
        # AG2 1.2.1 routes on a `tool` condition only at the top of a rule: one a
        # composite held stays in one
        return m.AllOf((c, m.Always())) if composite and isinstance(c, m.ToolCalled) else c

    rules = tuple(
        attrs.evolve(t, when=top(when, isinstance(t.when, m.AllOf | m.AnyOf)))
        for t in graph.transitions
        for when in alternatives(cond(t.when))
    )
    return attrs.evolve(graph, transitions=rules)


def _refusal(
    err: DecompileError,
    data: dict[str, Any],
    graph: m.TransitionGraph,
    participants: Sequence[str],
    initiator: str | None,
    filename: str,
) -> Diagnostic:
    """The E108 of a part of the graph with no `.flow` spelling, at its JSON path; a name
    given on the command line (``participants``, ``initiator``) is named by its option."""
    path = err.path
    root = "graph." if is_knobs_dict(data) else ""
    message = err.said(root) if isinstance(err, _CallsDisagree) else err.message
    if path == "title":  # the flow's name: never in the graph
        return Diagnostic(E108, f"--name: {message}", filename)
    if path.startswith("participants["):
        speakers = list(dict.fromkeys([*participants, *m.agent_ids(graph)]))
        index = int(path[13:-1])
        spoken = speakers[index] if index < len(speakers) else None
        if spoken is None or spoken in participants:  # not in the graph: an option gave it
            option = "--participants" if spoken is not None else "--initiator"
            return Diagnostic(E108, f"{option}: {message}", filename)
        # a graph's own agent id: where it is written
        path = _mention(unstructure_graph(graph), participants, index) or path
    if path.startswith("context_vars"):  # beside the graph in a knobs dict, not in it
        root = ""
    path = f"{root}{path}" if path else root.rstrip(".")
    return Diagnostic(E108, f"{path}: {message}" if path else message, filename, json_path=path)


def _compile(text: str, filename: str) -> CompiledFlow:
    source = SourceFile(filename, text)
    compiled, diags = compile_source(source)
    if compiled is None or has_errors(diags):
        raise _no_spelling(diags, filename)
    return compiled


def _no_spelling(diags: Sequence[Diagnostic], filename: str) -> FlowError:
    """The graph holds something `.flow` cannot write (e.g. a value nested more than
    100 levels): say so about the graph, not about text the user never saw."""
    said = dict.fromkeys((d.message, d.help) for d in diags if d.is_error)  # each once
    return FlowError(
        [
            Diagnostic(E108, f"the graph has no .flow spelling: {message}", filename, help=help)
            for message, help in said
        ]
    )


def unrecovered_in(
    data: dict[str, Any], participants: Sequence[str] = (), initiator: str | None = None
) -> list[tuple[str, str]]:
    """:func:`unrecovered` for a graph dict or knobs dict (paths in the dict), or [] when
    it is not one (:func:`decompile` says why)."""
    try:
        if is_knobs_dict(data):
            return [
                (f"graph.{p}", w)
                for p, w in unrecovered(structure_knobs(data).graph, participants, initiator)
            ]
        return unrecovered(structure_graph(data), participants, initiator)
    except ShapeError:
        return []


__all__ = [
    "DecompileError",
    "decompile",
    "decompile_graph",
    "meaning",
    "unrecovered",
    "unrecovered_in",
]
