"""The custom vocabulary that `flowc migrate` emits, registered in the runtime.

Classic AG2 / AutoGen group chats route on things AG2's built-in conditions cannot
see: the text of a message (``is_termination_msg``, ``TextMentionTermination``),
classic ``ContextExpression`` strings, the number of turns, random speaker choice.
Migrated flows declare these names; this module implements them as pure functions
of ``(state, envelope)`` so that re-folding a channel's WAL gives the same routing:

- ``text_contains(text)`` — the message text contains ``text`` (case-sensitive);
- ``text_matches(pattern)`` — Python ``re.search(pattern, text)``, matched in linear
  time (:mod:`flowc.regex`; patterns it cannot match so are refused);
- ``context_expression(expression)`` — an AG2 ``ContextExpression`` over the
  channel context (a missing variable makes the whole expression false);
- ``turn_count_at_most(turns)`` — ``state.turn_count <= turns`` (the kickoff is turn 1);
- ``random_agent(agent_ids, allow_repeat)`` — a uniform pick, drawn from a hash of
  the envelope id (never from ``random``), minus the sender unless ``allow_repeat``.

The message text is the packet's ``body`` (``ag2.packet``) or the ``text`` of an
``ag2.msg.text`` envelope.

Importing this module registers every name on the runtime's default registry;
:func:`register_vocabulary` registers them on another registry. The classes are frozen
dataclasses, not attrs classes, because AG2's ``TransitionGraph.to_dict()`` serializes
args with ``dataclasses.asdict``: registered into AG2 (``flowc.ag2.register_customs(
VOCABULARY_CONDITIONS, VOCABULARY_TARGETS)``) they round-trip there too.

>>> from types import SimpleNamespace as NS
>>> env = NS(event_type="ag2.msg.text", event_data={"text": "All done. TERMINATE"}, envelope_id="e1")
>>> TextContains("TERMINATE").evaluate(NS(), env)
True
>>> TextMatches(r"TERMINATE\\s*\\Z").evaluate(NS(), env)
True
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from flowc.runtime.envelope import EV_PACKET, EV_TEXT
from flowc.runtime.transitions import TransitionDecision, TransitionRegistry, default_registry

if TYPE_CHECKING:
    from flowc.runtime.ctxexpr import ExpressionError, Node, parse_context_expression

# The matcher of `text_matches` (flowc.regex), the parser of `context_expression`
# (flowc.runtime.ctxexpr) and hashlib (`random_agent`) are imported when a rule uses
# them: the runtime registers this vocabulary for every run, most of which use none of it


def __getattr__(name: str) -> Any:
    if name in ("ExpressionError", "parse_context_expression"):
        from flowc.runtime import ctxexpr

        return getattr(ctxexpr, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "VOCABULARY_CONDITIONS",
    "VOCABULARY_TARGETS",
    "ContextExpression",
    "ExpressionError",
    "RandomAgent",
    "TextContains",
    "TextMatches",
    "TurnCountAtMost",
    "message_text",
    "parse_context_expression",
    "register_vocabulary",
]


class EnvelopeLike(Protocol):
    """What the vocabulary reads from an envelope."""

    @property
    def event_type(self) -> str: ...

    @property
    def event_data(self) -> dict[str, Any]: ...

    @property
    def envelope_id(self) -> str: ...


def message_text(envelope: EnvelopeLike) -> str:
    """The text a classic ``content`` test looks at: a packet's body or a text message.

    >>> from types import SimpleNamespace as NS
    >>> message_text(NS(event_type="ag2.packet", event_data={"body": "hi"}, envelope_id=""))
    'hi'
    """
    data = envelope.event_data if isinstance(envelope.event_data, dict) else {}
    if envelope.event_type == EV_PACKET:
        body = data.get("body")
    elif envelope.event_type == EV_TEXT:
        body = data.get("text")
    else:
        body = None
    return body if isinstance(body, str) else ""


# ── text conditions ───────────────────────────────────────────────────────────


@dataclasses.dataclass(frozen=True)
class TextContains:
    """``text_contains(text)``: a case-sensitive substring test on the message text."""

    name: ClassVar[str] = "text_contains"
    text: str

    def evaluate(self, state: Any, envelope: EnvelopeLike) -> bool:
        return self.text in message_text(envelope)


@dataclasses.dataclass(frozen=True)
class TextMatches:
    """``text_matches(pattern)``: Python ``re.search`` on the message text, in time linear
    in the text (:func:`flowc.regex.compile_pattern`); a pattern it refuses raises
    ``ValueError`` (:class:`flowc.regex.PatternRefused`) when the rule is built."""

    name: ClassVar[str] = "text_matches"
    pattern: str

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str):
            raise ValueError("`pattern` must be a string")
        from flowc.regex import compile_pattern

        compile_pattern(self.pattern)  # raises PatternRefused now, not mid-run

    def evaluate(self, state: Any, envelope: EnvelopeLike) -> bool:
        from flowc.regex import compile_pattern

        return compile_pattern(self.pattern).search(message_text(envelope))


@dataclasses.dataclass(frozen=True)
class TurnCountAtMost:
    """``turn_count_at_most(turns)``: the turn just taken is at most number ``turns``."""

    name: ClassVar[str] = "turn_count_at_most"
    turns: int

    def evaluate(self, state: Any, envelope: EnvelopeLike) -> bool:
        return int(getattr(state, "turn_count", 0)) <= self.turns


# ── context expressions ───────────────────────────────────────────────────────


@functools.lru_cache(maxsize=256)
def _parsed(expression: str) -> Node:
    from flowc.runtime.ctxexpr import parse_context_expression

    return parse_context_expression(expression)


@dataclasses.dataclass(frozen=True)
class ContextExpression:
    """``context_expression(expression)``: AG2's ``ContextExpression`` on the context.

    A missing variable makes the expression false (classic raises ``KeyError``), and
    so does a comparison between values Python cannot order.
    """

    name: ClassVar[str] = "context_expression"
    expression: str

    def __post_init__(self) -> None:
        _parsed(self.expression)  # raises ExpressionError now, not mid-run

    def evaluate(self, state: Any, envelope: EnvelopeLike) -> bool:
        from flowc.runtime.ctxexpr import evaluate_expression

        context = getattr(state, "context_vars", None) or {}
        return evaluate_expression(_parsed(self.expression), dict(context))


# ── random choice ─────────────────────────────────────────────────────────────


def _draw(envelope_id: str, count: int) -> int:
    import hashlib

    digest = hashlib.sha256(envelope_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count


@dataclasses.dataclass(frozen=True)
class RandomAgent:
    """``random_agent(agent_ids, allow_repeat)``: classic ``random.choice``, replay-safe.

    The draw is a hash of the envelope id being routed, so the same WAL re-folds to
    the same speakers. Without ``allow_repeat`` the sender is not a candidate; when
    nobody is left the run ends with ``"no_eligible_speaker"``.
    """

    name: ClassVar[str] = "random_agent"
    agent_ids: Sequence[str]
    allow_repeat: bool = True

    def __post_init__(self) -> None:
        ids = self.agent_ids
        if isinstance(ids, str) or not ids or not all(isinstance(a, str) and a for a in ids):
            raise ValueError("`agent_ids` must be a non-empty list of speaker names")

    def resolve(self, state: Any, envelope: EnvelopeLike) -> TransitionDecision:
        last = getattr(state, "last_speaker_id", None)
        candidates = [a for a in self.agent_ids if self.allow_repeat or a != last]
        if not candidates:
            return TransitionDecision(None, "no_eligible_speaker")
        return TransitionDecision(candidates[_draw(envelope.envelope_id, len(candidates))])


VOCABULARY_CONDITIONS: tuple[type[Any], ...] = (
    TextContains,
    TextMatches,
    ContextExpression,
    TurnCountAtMost,
)
VOCABULARY_TARGETS: tuple[type[Any], ...] = (RandomAgent,)


def register_vocabulary(registry: TransitionRegistry | None = None) -> TransitionRegistry:
    """Register the migrate vocabulary on ``registry`` (default: the runtime's).

    >>> reg = register_vocabulary(TransitionRegistry())
    >>> reg.target("random_agent") is RandomAgent
    True
    """
    reg = registry if registry is not None else default_registry()
    for cls in VOCABULARY_CONDITIONS:
        reg.register_condition(cls)
    for cls in VOCABULARY_TARGETS:
        reg.register_target(cls)
    return reg


# the runtime defers this module's registration on its default registry until the
# registry is first read (flowc.runtime); importing the module makes it now, in its place
default_registry().settle()
