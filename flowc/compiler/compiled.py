"""What compilation produces: :class:`CompiledFlow`, the graph and knobs AG2 loads with
everything the tools need (declared tools, custom conditions and targets, where each
transition came from).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.properties import Property
from flowc.compiler.serde import (
    canonical_json,
    lazy_knobs,
    unstructure_graph,
    unstructure_knobs,
)
from flowc.compiler.tool_effects import ToolEffectInfo
from flowc.source import Span

if TYPE_CHECKING:  # in annotations only: a worker never loads the syntax tree
    from flowc.dsl import nodes as n


@attrs.frozen
class ToolInfo:
    """A tool declared on a speaker; ``alternatives`` empty for a plain tool."""

    speaker: str
    name: str
    alternatives: tuple[ToolEffectInfo, ...]
    span: Span


@attrs.frozen
class ParamInfo:
    name: str
    type: str
    default: Any
    has_default: bool


@attrs.frozen
class CustomDecl:
    """A declared custom condition or target."""

    kind: str  # "condition" or "target"
    name: str
    params: tuple[ParamInfo, ...]
    #: for targets: the speakers (and ``None`` for terminate) it may resolve to;
    #: ``None`` when the declaration has no ``->`` list (anything goes)
    results: tuple[str | None, ...] | None
    span: Span


@attrs.frozen
class RuleInfo:
    """Where compiled transition ``index`` came from."""

    index: int
    rule: n.Rule | None  # None for rules implied by sequence / round_robin
    statement: n.Statement
    span: Span

    @property
    def line(self) -> int:
        """The line a reader finds it on: the rule's `when` line, or the line of its own
        branch when the rule was split (`or`, `from a, b`, a sequence step)."""
        if self.rule is not None and (
            self.span is self.rule.cond.span or self.span == self.rule.cond.span
        ):
            return self.rule.span.line
        return self.span.line


@attrs.frozen
class CompiledFlow:
    """A compiled flow: the graph, the knobs and everything the tools need.

    ``graph_dict`` / ``knobs`` are exactly what AG2 loads.
    """

    name: str | None
    description: str | None
    graph: m.TransitionGraph
    context_vars: dict[str, Any]
    speakers: tuple[str, ...]
    humans: frozenset[str]
    start: str
    initiator: str
    tools: tuple[ToolInfo, ...]
    customs: tuple[CustomDecl, ...]
    rules: tuple[RuleInfo, ...]
    default_span: Span | None  # the written `otherwise`, if any
    default_implied: bool  # the default comes from sequence / round_robin
    bindings: Mapping[str, str]
    scenarios: tuple[n.Scenario, ...]
    flow: n.Flow
    #: human speaker -> the context keys it may write (``speaker user: human { sets k }``)
    human_writes: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    #: the ``property`` statements, lowered (:mod:`flowc.compiler.properties`)
    properties: tuple[Property, ...] = ()

    @property
    def graph_dict(self) -> dict[str, Any]:
        return unstructure_graph(self.graph)

    @property
    def knobs(self) -> dict[str, Any]:
        return unstructure_knobs(m.Knobs(self.graph, dict(self.context_vars)))

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.name for t in self.tools))

    @property
    def custom_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.customs)

    def tools_of(self, speaker: str) -> tuple[ToolInfo, ...]:
        return self._tools_by_speaker.get(speaker, ())

    @cached_property
    def _tools_by_speaker(self) -> dict[str, tuple[ToolInfo, ...]]:
        # (a filter over every tool for each speaker was quadratic in a flow of many speakers)
        out: dict[str, list[ToolInfo]] = {}
        for t in self.tools:
            out.setdefault(t.speaker, []).append(t)
        return {s: tuple(ts) for s, ts in out.items()}

    def agent_id(self, speaker: str) -> str:
        return self.bindings.get(speaker, speaker)

    def binding_problem(self) -> str | None:
        """Why the bindings cannot be used (``None`` when they can): one names no declared
        speaker, or two speakers end up with one agent id (a rule from one would then fire
        for the other). Ids may be exchanged: ``a=b b=a``, ``a=b b=x`` and a cycle give
        each speaker an id of its own. :func:`~flowc.compiler.pipeline.compile_source`
        raises it (:class:`BindingError`), which ``flowc compile --bind``,
        :func:`flowc.compile_flow` and :func:`flowc.render` go through.

        >>> import flowc
        >>> flowc.compile_flow("speakers a, b, c", bindings={"a": "b", "b": "a"}).bindings
        {'a': 'b', 'b': 'a'}
        """
        unknown = sorted(set(self.bindings) - set(self.speakers))
        if unknown:
            return (
                f"{', '.join(unknown)}: no declared speaker of the flow "
                f"(its speakers: {', '.join(self.speakers)})"
            )
        owner: dict[str, str] = {}
        for speaker in self.speakers:
            agent = self.agent_id(speaker)
            first = owner.setdefault(agent, speaker)
            if first == speaker:
                continue
            bound = [s for s in (first, speaker) if s in self.bindings]
            if len(bound) == 2:
                return (
                    f"{first}={agent} and {speaker}={agent} bind speakers {first} and "
                    f"{speaker} to one agent id `{agent}` (each speaker needs one of its own)"
                )
            [other] = [s for s in (first, speaker) if s not in self.bindings]
            return (
                f"{bound[0]}={agent} binds speaker {bound[0]} to `{agent}`, and speaker "
                f"{other} keeps `{agent}` as its id (each speaker needs one of its own: "
                f"bind {other} to another id too, or {bound[0]} to another)"
            )
        return None

    def to_json(self, *, graph_only: bool = False) -> str:
        # the same text as canonical_json(self.graph_dict / self.knobs), but each
        # transition's dict is made as it is written
        return canonical_json(lazy_knobs(m.Knobs(self.graph, dict(self.context_vars)), graph_only))


class BindingError(ValueError):
    """Bindings that name no declared speaker or give two speakers one agent id
    (:meth:`CompiledFlow.binding_problem`); ``problem`` says which."""

    def __init__(self, problem: str, unknown: tuple[str, ...] = ()) -> None:
        super().__init__(f"bindings: {problem}")
        self.problem = problem
        self.unknown = unknown
