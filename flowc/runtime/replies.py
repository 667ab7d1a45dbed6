"""What an agent's turn returns: text, and tool calls with their effects.

``Handoff`` and ``Finish`` are AG2's typed routing returns; ``ToolCall`` also carries
the context writes the tool made (what AG2's ``set_context`` / ``delete_context`` do).

>>> Reply("Escalating.", (ToolCall("escalate", {"reason": "login"}),)).tool_calls[0].name
'escalate'
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Finish", "Handoff", "Reply", "ToolCall", "as_reply", "plain_reply"]


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
    """Accept what an agent callable may return: a :class:`Reply`, a string or ``None``;
    a reply whose tool calls are not what they say (a call given as a dict, args as a
    list) is refused as the agent's failure (``TypeError``), naming the part.

    >>> as_reply("hi"), as_reply(None)
    (Reply(text='hi', tool_calls=()), Reply(text='', tool_calls=()))
    >>> as_reply(Reply("x", (ToolCall("lookup", [1, 2]),)))
    Traceback (most recent call last):
    ...
    TypeError: the reply's tool_calls[0].args: expected a dict of the tool's arguments, got a list
    """
    if isinstance(value, Reply):
        _check_parts(value)
        return value
    if value is None:
        return Reply()
    if isinstance(value, str):
        return Reply(value)
    raise TypeError(f"an agent must return a Reply, a string or None, got {type(value).__name__}")


def _check_parts(reply: Reply) -> None:
    """The parts the hub builds a turn's records from are what they say. (A text or a
    deleted key of another JSON type is written as it is, as the hub always took it.)"""

    def need(ok: bool, at: str, what: str, got: Any) -> None:
        if not ok:
            raise TypeError(f"the reply's {at}: expected {what}, got {_a(got)}")

    for i, call in enumerate(reply.tool_calls):
        at = f"tool_calls[{i}]"
        need(isinstance(call, ToolCall), at, "a ToolCall", call)
        need(isinstance(call.name, str), f"{at}.name", "a string", call.name)
        need(isinstance(call.args, dict), f"{at}.args", "a dict of the tool's arguments", call.args)
        need(
            isinstance(call.set, dict), f"{at}.set", "a dict of the context keys it sets", call.set
        )
        result = call.result
        need(
            result is None or isinstance(result, (Handoff, Finish)),
            f"{at}.result",
            "a Handoff, a Finish or None",
            result,
        )


def _a(value: Any) -> str:
    """What a refused part is, in words (its type's name)."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def plain_reply(reply: Reply) -> Reply:
    """``reply`` with each value as the run records it (plain JSON values: the hub writes
    and keeps copies, :func:`flowc.runtime.stored.json_copy`), for a reply whose values a
    record holds: what the flow's declarations judge is what is written, not the
    agent's own objects."""
    from flowc.runtime.stored import json_copy

    calls = []
    for call in reply.tool_calls:
        result = call.result
        if isinstance(result, Handoff):
            result = Handoff(json_copy(result.target), json_copy(result.reason))
        elif isinstance(result, Finish):
            result = Finish(json_copy(result.summary), json_copy(result.reason))
        calls.append(
            ToolCall(
                json_copy(call.name),
                json_copy(call.args),
                json_copy(call.set),
                json_copy(list(call.delete)),
                result,
            )
        )
    return Reply(json_copy(reply.text), tuple(calls))
