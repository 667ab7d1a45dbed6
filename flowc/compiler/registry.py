"""Custom condition and target classes by name (AG2's ``TransitionRegistry``), and the
one lookup every command uses to decide whether a graph's names can load.

A custom condition is a class with a ``name`` class attribute, constructed with the
rule's ``args`` and answering ``evaluate(state, envelope) -> bool``; a custom target
answers ``resolve(state, envelope) -> TransitionDecision``. This is AG2's protocol, so
the same classes register into AG2 through :mod:`flowc.ag2`.

The registry lives in the compiler layer so that ``check`` sees exactly what ``run``
and ``test`` load: :func:`custom_problems` is what the runtime refuses when a channel
opens (an unknown name, with a did-you-mean; args the class does not take), with the
JSON path of each problem.

>>> from typing import Any
>>> import attrs
>>> @attrs.frozen
... class LongMessage:
...     name: ClassVar[str] = "long_message"
...     min_chars: int = 100
...     def evaluate(self, state: Any, envelope: Any) -> bool:
...         return len(envelope.event_data.get("body", "")) >= self.min_chars
>>> registry = TransitionRegistry()
>>> registry.register_condition(LongMessage)
>>> registry.condition("long_message") is LongMessage
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

from flowc.compiler import model as m
from flowc.compiler.serde import ShapeProblem

__all__ = [
    "BUILTIN_CONDITION_NAMES",
    "BUILTIN_TARGET_NAMES",
    "SHIPPED_CONDITION_NAMES",
    "SHIPPED_TARGET_NAMES",
    "TransitionRegistry",
    "build_custom",
    "custom_problems",
    "default_registry",
    "did_you_mean",
    "pattern_problems",
    "register_condition",
    "register_target",
    "unknown_name",
]

#: names the compiler handles itself: AG2's built-ins and flowc's composites
BUILTIN_CONDITION_NAMES = frozenset(
    c.NAME for c in (*m.BUILTIN_CONDITIONS, *m.COMPOSITE_CONDITIONS)
)
BUILTIN_TARGET_NAMES = frozenset(c.NAME for c in m.BUILTIN_TARGETS)

#: the vocabulary ``flowc migrate`` emits: flowc's runtime registers it on import
#: (``flowc.runtime.vocabulary``), so every command that runs a flow has it loaded
SHIPPED_CONDITION_NAMES = frozenset(
    ("text_contains", "text_matches", "context_expression", "turn_count_at_most")
)
SHIPPED_TARGET_NAMES = frozenset(("random_agent",))

Kind = Literal["condition", "target"]


class TransitionRegistry:
    """Name -> class for custom conditions and targets.

    The composites ``all_of`` / ``any_of`` / ``not`` and AG2's built-ins are
    pre-registered (the workflow compiler evaluates them natively) and cannot be
    replaced; re-registering a custom name replaces it, as in AG2.

    A registration can be deferred (:meth:`defer`): it is made when the registry is
    first read, in the place it was deferred, so the registry reads exactly as if it
    had been made then (the runtime defers its shipped vocabulary this way, so that a
    run that uses none of it does not load it).
    """

    def __init__(self) -> None:
        self._tables: tuple[dict[str, type[Any]], dict[str, type[Any]]] = ({}, {})
        self._deferred: Callable[[TransitionRegistry], None] | None = None
        #: registrations made while one is deferred: (is a condition, class), in order
        self._since: list[tuple[bool, type[Any]]] = []

    @property
    def _conditions(self) -> dict[str, type[Any]]:
        self.settle()
        return self._tables[0]

    @_conditions.setter
    def _conditions(self, table: dict[str, type[Any]]) -> None:
        self.settle()
        self._tables = (table, self._tables[1])

    @property
    def _targets(self) -> dict[str, type[Any]]:
        self.settle()
        return self._tables[1]

    @_targets.setter
    def _targets(self, table: dict[str, type[Any]]) -> None:
        self.settle()
        self._tables = (self._tables[0], table)

    def defer(self, register: Callable[[TransitionRegistry], None]) -> None:
        """Call ``register(self)`` when the registry is first read (or :meth:`settle` is
        called), and place what it registers here: before whatever is registered after
        this call, after whatever was registered before it."""
        self.settle()
        self._deferred = register

    def settle(self) -> None:
        """Make the deferred registration now, in its place (a no-op when there is none)."""
        register = self._deferred
        if register is None:
            return
        self._deferred = None
        since, self._since = self._since, []
        register(self)
        for is_condition, cls in since:
            if is_condition:
                self.register_condition(cls)
            else:
                self.register_target(cls)

    @staticmethod
    def _name_of(cls: type[Any], what: str) -> str:
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"a custom {what} class needs a `name: ClassVar[str]`")
        return name

    def register_condition(self, cls: type[Any]) -> None:
        name = self._name_of(cls, "condition")
        if name in BUILTIN_CONDITION_NAMES:
            raise ValueError(f"`{name}` is a built-in condition and cannot be replaced")
        if not callable(getattr(cls, "evaluate", None)):
            raise TypeError(f"condition `{name}` needs an `evaluate(state, envelope)` method")
        if self._deferred is not None:
            self._since.append((True, cls))
        else:
            self._tables[0][name] = cls

    def register_target(self, cls: type[Any]) -> None:
        name = self._name_of(cls, "target")
        if name in BUILTIN_TARGET_NAMES:
            raise ValueError(f"`{name}` is a built-in target and cannot be replaced")
        if not callable(getattr(cls, "resolve", None)):
            raise TypeError(f"target `{name}` needs a `resolve(state, envelope)` method")
        if self._deferred is not None:
            self._since.append((False, cls))
        else:
            self._tables[1][name] = cls

    def condition(self, name: str) -> type[Any] | None:
        return self._conditions.get(name)

    def target(self, name: str) -> type[Any] | None:
        return self._targets.get(name)

    @property
    def condition_names(self) -> tuple[str, ...]:
        return (*sorted(BUILTIN_CONDITION_NAMES), *self._conditions)

    @property
    def target_names(self) -> tuple[str, ...]:
        return (*sorted(BUILTIN_TARGET_NAMES), *self._targets)

    def copy(self) -> TransitionRegistry:
        out = TransitionRegistry()
        out._conditions = dict(self._conditions)
        out._targets = dict(self._targets)
        return out


_DEFAULT = TransitionRegistry()


def default_registry() -> TransitionRegistry:
    """The process-wide registry that :func:`register_condition` writes to."""
    return _DEFAULT


def register_condition(cls: type[Any]) -> type[Any]:
    """Register a custom condition class on the default registry (usable as a decorator)."""
    _DEFAULT.register_condition(cls)
    return cls


def register_target(cls: type[Any]) -> type[Any]:
    """Register a custom target class on the default registry (usable as a decorator)."""
    _DEFAULT.register_target(cls)
    return cls


# ── the one lookup ─────────────────────────────────────────────────────────────


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The closest known name to a misspelt one, if any is close.

    >>> did_you_mean("from_speakr", ["always", "from_speaker", "tool_called"])
    'from_speaker'
    >>> did_you_mean("zzz", ["always"]) is None
    True
    """
    import difflib  # only for a misspelt name: not on every start-up

    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return close[0] if close else None


def _known(kind: Kind, registry: TransitionRegistry) -> tuple[str, ...]:
    if kind == "condition":
        return (*registry.condition_names, *sorted(SHIPPED_CONDITION_NAMES))
    return (*registry.target_names, *sorted(SHIPPED_TARGET_NAMES))


def unknown_name(kind: Kind, name: str, registry: TransitionRegistry) -> str:
    """The message for a name nobody registered, with a did-you-mean.

    >>> unknown_name("condition", "from_speakr", TransitionRegistry())
    'no condition registered as `from_speakr`; did you mean `from_speaker`?'
    >>> unknown_name("condition", "agent", TransitionRegistry())
    'no condition registered as `agent`; `agent` is a target, not a condition'
    """
    message = f"no {kind} registered as `{name}`"
    other: Kind = "target" if kind == "condition" else "condition"
    if name in _known(other, registry):
        return f"{message}; `{name}` is a {other}, not a {kind}"
    guess = did_you_mean(name, _known(kind, registry))
    return f"{message}; did you mean `{guess}`?" if guess else message


def build_custom(
    kind: Kind,
    name: str,
    args: dict[str, Any],
    registry: TransitionRegistry,
    path: str,
) -> tuple[Any, list[ShapeProblem]]:
    """An instance of the class registered as ``name``, built from ``args`` as AG2
    builds it (``cls(**args)``), or the problems that stop it (JSON paths under ``path``,
    the condition's or target's own path).
    """
    cls = registry.condition(name) if kind == "condition" else registry.target(name)
    if cls is None:
        return None, [ShapeProblem(f"{path}.name", unknown_name(kind, name, registry))]
    try:
        return cls(**args), []
    except (TypeError, ValueError) as err:
        return None, [ShapeProblem(f"{path}.args", f"args do not fit `{name}`: {err}")]


def custom_problems(
    graph: m.TransitionGraph,
    registry: TransitionRegistry | None = None,
) -> list[ShapeProblem]:
    """Every custom name of ``graph`` that would not load: not registered (a name of
    flowc's shipped vocabulary counts as loaded), or built from args its class refuses.

    >>> g = m.TransitionGraph("a", (m.Transition(m.CustomCondition("from_speakr",
    ...     {"agent_id": "a"}), m.TerminateTarget()),))
    >>> [str(p) for p in custom_problems(g, TransitionRegistry())]
    ['transitions[0].when.name: no condition registered as `from_speakr`; did you mean `from_speaker`?']
    """
    reg = registry if registry is not None else _DEFAULT
    problems: list[ShapeProblem] = []
    refused = {path for path, _ in _refused_patterns(graph)}

    def cond(when: m.Condition, where: str) -> None:
        for path, c in _customs_in(when, where):
            if reg.condition(c.name) is None and c.name in SHIPPED_CONDITION_NAMES:
                continue
            if f"{path}.args.pattern" in refused:  # reported by pattern_problems
                continue
            problems.extend(build_custom("condition", c.name, dict(c.args), reg, path)[1])

    def target(t: m.Target, path: str) -> None:
        if isinstance(t, m.CustomTarget):
            if reg.target(t.name) is None and t.name in SHIPPED_TARGET_NAMES:
                return
            problems.extend(build_custom("target", t.name, dict(t.args), reg, path)[1])

    for i, t in enumerate(graph.transitions):
        cond(t.when, f"transitions[{i}].when")
        target(t.then, f"transitions[{i}].then")
    target(graph.default_target, "default_target")
    return problems


def _customs_in(c: m.Condition, path: str) -> Iterator[tuple[str, m.CustomCondition]]:
    """The named (custom or shipped) conditions inside ``c``, with their JSON paths."""
    if isinstance(c, m.AllOf | m.AnyOf):
        for i, item in enumerate(c.conditions):
            yield from _customs_in(item, f"{path}.args.conditions[{i}]")
    elif isinstance(c, m.Not):
        yield from _customs_in(c.condition, f"{path}.args.condition")
    elif isinstance(c, m.CustomCondition):
        yield path, c


def _custom_conditions(graph: m.TransitionGraph) -> list[tuple[str, m.CustomCondition]]:
    return [
        found
        for i, t in enumerate(graph.transitions)
        for found in _customs_in(t.when, f"transitions[{i}].when")
    ]


def _refused_patterns(graph: m.TransitionGraph) -> list[tuple[str, str]]:
    from flowc.regex import refusal

    out: list[tuple[str, str]] = []
    for path, c in _custom_conditions(graph):
        pattern = c.args.get("pattern") if c.name == "text_matches" else None
        problem = refusal(pattern) if isinstance(pattern, str) else None
        if problem is not None:
            out.append((f"{path}.args.pattern", problem.message))
    return out


def pattern_problems(graph: m.TransitionGraph) -> list[ShapeProblem]:
    r"""Every ``text_matches`` pattern of ``graph`` that flowc does not match (E114, as a
    `.flow` reports it): not a valid regular expression, or beyond linear-time matching
    (:func:`flowc.regex.refusal`).

    >>> g = m.TransitionGraph("a", (m.Transition(m.CustomCondition("text_matches",
    ...     {"pattern": "(a)\\1"}), m.TerminateTarget()),))
    >>> [p.path for p in pattern_problems(g)]
    ['transitions[0].when.args.pattern']
    """
    return [
        ShapeProblem(path, f"`text_matches`: {message}")
        for path, message in _refused_patterns(graph)
    ]
