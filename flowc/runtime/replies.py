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
    """The parts the hub builds a turn's records from are what they say (a hand-off's
    target and reason, a finish's summary and reason: strings). (A text or a deleted key
    of another JSON type is written as it is, as the hub always took it.)"""

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
        if isinstance(result, Handoff):
            need(isinstance(result.target, str), f"{at}.result.target", "a string", result.target)
            need(isinstance(result.reason, str), f"{at}.result.reason", "a string", result.reason)
        elif isinstance(result, Finish):
            need(
                isinstance(result.summary, str), f"{at}.result.summary", "a string", result.summary
            )
            need(isinstance(result.reason, str), f"{at}.result.reason", "a string", result.reason)


def _a(value: Any) -> str:
    """What a refused part is, in words (its type's name)."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def plain_reply(reply: Reply) -> Reply:
    """``reply`` with each value as the run records it (plain JSON values: the hub writes
    and keeps copies, :func:`flowc.runtime.stored.plain`): what the flow's declarations
    judge is what is written, not the agent's own objects. A value no record can hold,
    wherever it is (a write a later call of the same reply overwrites), is refused as a
    malformed part is (``TypeError``, naming the part).

    >>> plain_reply(Reply("x", (ToolCall("lookup", {"q": (1, 2)}),))).tool_calls[0].args
    {'q': [1, 2]}
    >>> plain_reply(Reply("x", (ToolCall("tag", set={"k": {1}}), ToolCall("tag", set={"k": 1}))))
    Traceback (most recent call last):
    ...
    TypeError: the reply's tool_calls[0].set.k: expected a JSON value (a string, number, boolean, null, list or object), got a set ({1})
    """
    from flowc.runtime.adapters.base import DamagedRecord
    from flowc.runtime.stored import plain

    try:
        text = plain(reply.text, "text")
        calls = []
        for i, call in enumerate(reply.tool_calls):
            at = f"tool_calls[{i}]"
            name, args = plain(call.name, f"{at}.name"), plain(call.args, f"{at}.args")
            sets, deletes = plain(call.set, f"{at}.set"), plain(call.delete, f"{at}.delete")
            result = call.result
            if isinstance(result, Handoff):
                target = plain(result.target, f"{at}.result.target")
                result = Handoff(target, plain(result.reason, f"{at}.result.reason"))
            elif isinstance(result, Finish):
                summary = plain(result.summary, f"{at}.result.summary")
                result = Finish(summary, plain(result.reason, f"{at}.result.reason"))
            calls.append(ToolCall(name, args, sets, deletes, result))
        return Reply(text, tuple(calls))
    except DamagedRecord as err:
        raise TypeError(f"the reply's {err.path}: {err.what}") from None
