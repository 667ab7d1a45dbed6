"""The `TransitionGraph` model: AG2's vocabulary as frozen attrs classes.

Each condition and target serialises as ``{"name": NAME, "args": {...}}``, exactly as
AG2 1.2.1's ``TransitionGraph.to_dict()`` writes it (see :mod:`flowc.compiler.serde`).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, TypeAlias

import attrs

# ── conditions ────────────────────────────────────────────────────────────────


@attrs.frozen
class Always:
    NAME: ClassVar[str] = "always"


@attrs.frozen
class FromSpeaker:
    agent_id: str
    NAME: ClassVar[str] = "from_speaker"


@attrs.frozen
class ToolCalled:
    tool_name: str
    NAME: ClassVar[str] = "tool_called"


@attrs.frozen
class ContextEquals:
    """``context.K == V``; AG2's ``ContextEquals`` has no default ``value`` (a missing one
    is a ``TypeError`` when the channel opens), so neither has this."""

    key: str
    value: Any
    NAME: ClassVar[str] = "context_equals"


@attrs.frozen
class AllOf:
    """Composite: every condition holds (flowc's ``and``)."""

    conditions: tuple[Condition, ...]
    NAME: ClassVar[str] = "all_of"


@attrs.frozen
class AnyOf:
    """Composite: some condition holds (a nested ``or``)."""

    conditions: tuple[Condition, ...]
    NAME: ClassVar[str] = "any_of"


@attrs.frozen
class Not:
    """Composite: the condition does not hold (``not`` / ``!=``)."""

    condition: Condition
    NAME: ClassVar[str] = "not"


@attrs.frozen
class CustomCondition:
    """A condition registered by name at run time; ``args`` as written."""

    name: str
    args: dict[str, Any] = attrs.field(factory=dict)


Condition: TypeAlias = (
    Always | FromSpeaker | ToolCalled | ContextEquals | AllOf | AnyOf | Not | CustomCondition
)

BUILTIN_CONDITIONS: tuple[type[Any], ...] = (Always, FromSpeaker, ToolCalled, ContextEquals)
COMPOSITE_CONDITIONS: tuple[type[Any], ...] = (AllOf, AnyOf, Not)

# ── targets ───────────────────────────────────────────────────────────────────


@attrs.frozen
class AgentTarget:
    agent_id: str
    NAME: ClassVar[str] = "agent"


@attrs.frozen
class RoundRobinTarget:
    NAME: ClassVar[str] = "round_robin"


@attrs.frozen
class StayTarget:
    NAME: ClassVar[str] = "stay"


@attrs.frozen
class RevertToInitiatorTarget:
    NAME: ClassVar[str] = "revert_to_initiator"


@attrs.frozen
class TerminateTarget:
    reason: str = "after_work"
    NAME: ClassVar[str] = "terminate"


@attrs.frozen
class CustomTarget:
    """A target registered by name at run time; ``args`` as written."""

    name: str
    args: dict[str, Any] = attrs.field(factory=dict)


Target: TypeAlias = (
    AgentTarget
    | RoundRobinTarget
    | StayTarget
    | RevertToInitiatorTarget
    | TerminateTarget
    | CustomTarget
)

BUILTIN_TARGETS: tuple[type[Any], ...] = (
    AgentTarget,
    RoundRobinTarget,
    StayTarget,
    RevertToInitiatorTarget,
    TerminateTarget,
)

# ── the graph ─────────────────────────────────────────────────────────────────


@attrs.frozen
class Transition:
    """One rule: lower ``priority`` is checked first; ties keep list order."""

    when: Condition
    then: Target
    priority: int = 0


@attrs.frozen
class TransitionGraph:
    initial_speaker: str
    transitions: tuple[Transition, ...] = ()
    default_target: Target = TerminateTarget()
    max_turns: int | None = None


@attrs.frozen
class Knobs:
    """What a workflow channel is opened with: ``{"graph": ..., "context_vars": ...}``."""

    graph: TransitionGraph
    context_vars: dict[str, Any] = attrs.field(factory=dict)


def values_equal(a: Any, b: Any) -> bool:
    """Python equality, as AG2's ``ContextEquals`` compares a context value with its
    literal; a comparison that raises is not equal."""
    try:
        return bool(a == b)
    except Exception:  # pragma: no cover - JSON values compare without raising
        return False


def json_text(value: Any) -> str:
    """``value`` as canonical JSON text (keys sorted; what JSON cannot hold, as its
    ``str``): two values are the same JSON only when their texts are equal, where
    Python's ``==`` takes ``true`` for ``1`` and ``1.0`` for ``1``.

    >>> json_text({"b": [1.0, True], "a": 1}), json_text(True) == json_text(1)
    ('{"a": 1, "b": [1.0, true]}', False)
    """
    return json.dumps(value, sort_keys=True, default=str)


#: the comparison operators of the language (a property's turn atom, a context
#: expression), by how they are written
COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def walk_condition(cond: Condition) -> Iterator[Condition]:
    """A condition and every condition inside it, outermost first (the order they are
    written in)."""
    yield cond
    if isinstance(cond, AllOf | AnyOf):
        for c in cond.conditions:
            yield from walk_condition(c)
    elif isinstance(cond, Not):
        yield from walk_condition(cond.condition)


def condition_name(cond: Condition) -> str:
    return cond.name if isinstance(cond, CustomCondition) else cond.NAME


def target_name(target: Target) -> str:
    return target.name if isinstance(target, CustomTarget) else target.NAME


def is_builtin_only(graph: TransitionGraph) -> bool:
    """True when the graph uses only AG2's built-in conditions and targets."""

    def cond_ok(c: Condition) -> bool:
        return isinstance(c, BUILTIN_CONDITIONS)

    targets = [t.then for t in graph.transitions] + [graph.default_target]
    return all(cond_ok(t.when) for t in graph.transitions) and all(
        isinstance(t, BUILTIN_TARGETS) for t in targets
    )


def agent_ids(graph: TransitionGraph) -> tuple[str, ...]:
    """Every agent id the graph mentions, in order of first mention."""
    seen: dict[str, None] = {graph.initial_speaker: None}

    def walk_cond(c: Condition) -> None:
        if isinstance(c, FromSpeaker):
            seen.setdefault(c.agent_id, None)
        elif isinstance(c, AllOf | AnyOf):
            for item in c.conditions:
                walk_cond(item)
        elif isinstance(c, Not):
            walk_cond(c.condition)

    for t in graph.transitions:
        walk_cond(t.when)
        if isinstance(t.then, AgentTarget):
            seen.setdefault(t.then.agent_id, None)
    if isinstance(graph.default_target, AgentTarget):
        seen.setdefault(graph.default_target.agent_id, None)
    return tuple(seen)
