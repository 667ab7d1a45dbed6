"""Custom conditions and targets, registered by name (AG2's ``TransitionRegistry``).

A custom condition is a class with a ``name`` class attribute, constructed with the
rule's ``args`` and answering ``evaluate(state, envelope) -> bool``; a custom target
answers ``resolve(state, envelope) -> TransitionDecision``. This is AG2's protocol, so
the same classes register into AG2 through :mod:`flowc.ag2`.

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

from typing import Any

import attrs

from flowc.compiler import model as m

__all__ = [
    "BUILTIN_CONDITION_NAMES",
    "BUILTIN_TARGET_NAMES",
    "TransitionDecision",
    "TransitionRegistry",
    "default_registry",
    "register_condition",
    "register_target",
]

#: names the compiler handles itself: AG2's built-ins and flowc's composites
BUILTIN_CONDITION_NAMES = frozenset(
    c.NAME for c in (*m.BUILTIN_CONDITIONS, *m.COMPOSITE_CONDITIONS)
)
BUILTIN_TARGET_NAMES = frozenset(c.NAME for c in m.BUILTIN_TARGETS)


@attrs.frozen(slots=True)
class TransitionDecision:
    """``next_speaker=None`` ends the channel with ``close_reason``."""

    next_speaker: str | None
    close_reason: str = ""


class TransitionRegistry:
    """Name -> class for custom conditions and targets.

    The composites ``all_of`` / ``any_of`` / ``not`` and AG2's built-ins are
    pre-registered (the workflow compiler evaluates them natively) and cannot be
    replaced; re-registering a custom name replaces it, as in AG2.
    """

    def __init__(self) -> None:
        self._conditions: dict[str, type[Any]] = {}
        self._targets: dict[str, type[Any]] = {}

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
        self._conditions[name] = cls

    def register_target(self, cls: type[Any]) -> None:
        name = self._name_of(cls, "target")
        if name in BUILTIN_TARGET_NAMES:
            raise ValueError(f"`{name}` is a built-in target and cannot be replaced")
        if not callable(getattr(cls, "resolve", None)):
            raise TypeError(f"target `{name}` needs a `resolve(state, envelope)` method")
        self._targets[name] = cls

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


