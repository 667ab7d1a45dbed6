"""What an agent's turn returns: text, and tool calls with their effects.

``Handoff`` and ``Finish`` are AG2's typed routing returns; ``ToolCall`` also carries
the context writes the tool made (what AG2's ``set_context`` / ``delete_context`` do).

>>> Reply("Escalating.", (ToolCall("escalate", {"reason": "login"}),)).tool_calls[0].name
'escalate'
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Finish", "Handoff", "Reply", "ToolCall", "as_reply"]


@attrs.frozen
class Handoff:
    """The tool picked the next speaker (a speaker name or an agent id)."""

    target: str
    reason: str = ""


@attrs.frozen
class Finish:
    """The tool ends the run; ``reason`` becomes the close reason."""

    summary: str = ""
    reason: str = "finished"


def _tuple(value: Any) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class ToolCall:
    """One tool call of a reply: its name and args, context writes, and typed result."""

    name: str
    args: dict[str, Any] = attrs.field(factory=dict)
    set: dict[str, Any] = attrs.field(factory=dict)
    delete: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    result: Handoff | Finish | None = None


def _calls(value: Any) -> tuple[ToolCall, ...]:
    return tuple(value)


@attrs.frozen
class Reply:
    """An agent's whole turn: the final text and the tool calls it made, in order."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_calls)


def as_reply(value: Any) -> Reply:
    """Accept what an agent callable may return: a :class:`Reply`, a string or ``None``.

    >>> as_reply("hi"), as_reply(None)
    (Reply(text='hi', tool_calls=()), Reply(text='', tool_calls=()))
    """
    if isinstance(value, Reply):
        return value
    if value is None:
        return Reply()
    if isinstance(value, str):
        return Reply(value)
    raise TypeError(f"an agent must return a Reply, a string or None, got {type(value).__name__}")
