"""Custom conditions and targets, registered by name (AG2's ``TransitionRegistry``).

The registry itself lives in :mod:`flowc.compiler.registry` (so that ``check`` looks
names up where ``run`` does); this module adds the runtime's ``TransitionDecision``
and re-exports the rest.

>>> registry = TransitionRegistry()
>>> registry.condition("long_message") is None
True
"""

from __future__ import annotations

import attrs

from flowc.compiler.registry import (
    BUILTIN_CONDITION_NAMES,
    BUILTIN_TARGET_NAMES,
    TransitionRegistry,
    default_registry,
    register_condition,
    register_target,
)

__all__ = [
    "BUILTIN_CONDITION_NAMES",
    "BUILTIN_TARGET_NAMES",
    "TransitionDecision",
    "TransitionRegistry",
    "default_registry",
    "register_condition",
    "register_target",
]


@attrs.frozen(slots=True)
class TransitionDecision:
    """``next_speaker=None`` ends the channel with ``close_reason``."""

    next_speaker: str | None
    close_reason: str = ""
