"""What a stored record must hold for the readers of runs to read it: each envelope a
store reads back is checked here (:func:`check_envelope`), so that a damaged row (wrong
JSON types, missing keys, a corrupt or hostile database) is said to be damaged, naming
the JSON path of the value (:class:`~flowc.runtime.adapters.base.DamagedRecord`), and
what reads it is left with the values flowc writes. A value a reader does not use, or
reads whatever it is, is not checked; nor is what an opening's metadata holds (the
channel's, which :meth:`ChannelMetadata.from_dict
<flowc.runtime.adapters.base.ChannelMetadata.from_dict>` checks as a reader rebuilds it).

>>> from flowc.runtime.envelope import EV_PACKET, Envelope
>>> check_envelope(Envelope("c", "a", None, EV_PACKET, {"routing": {"reason": 5}}))
Traceback (most recent call last):
...
flowc.runtime.adapters.base.DamagedRecord: a record is damaged (event_data.routing.reason: expected a string or null, got 5)
"""

from __future__ import annotations

from typing import Any

from flowc.runtime.adapters.base import DamagedRecord, need
from flowc.runtime.envelope import (
    EV_CHANNEL_CLOSED,
    EV_CHANNEL_OPENED,
    EV_CONTEXT_SET,
    EV_PACKET,
    EV_RUN_STALLED,
    EV_TEXT,
    EV_TURN_FAILED,
    Envelope,
)

__all__ = ["check_envelope"]

_STR = (str, "a string")
_OPT_STR = ((str, type(None)), "a string or null")
_OPT_INT = ((int, type(None)), "an integer or null")
_OPT_OBJ = ((dict, type(None)), "an object or null")

#: the envelope's own fields (``event_data`` is an object: checked as its row is read)
_FIELDS: dict[str, tuple[Any, str]] = {
    "sender_id": _STR,
    "event_type": _STR,
    "envelope_id": _STR,
    "task_id": _OPT_STR,
    "causation_id": _OPT_STR,
    "trace_id": _OPT_STR,
    "priority": _STR,
    "depth": (int, "an integer"),
    "idempotency_key": _OPT_STR,
    "created_at": _STR,
    "ttl_seconds": _OPT_INT,
}

#: per event type, the ``event_data`` values its readers use (absent is as null)
_DATA: dict[str, dict[str, tuple[Any, str]]] = {
    EV_TEXT: {"text": _OPT_STR},
    EV_PACKET: {"body": _OPT_STR, "routing": _OPT_OBJ, "context_updates": _OPT_OBJ},
    EV_CHANNEL_CLOSED: {"reason": _OPT_STR},
    EV_TURN_FAILED: {
        "turn": _OPT_INT,
        "agent_id": _OPT_STR,
        "error": _OPT_STR,
        "where": _OPT_STR,
        "traceback": _OPT_STR,
    },
    EV_RUN_STALLED: {"agent_id": _OPT_STR},
}

_ROUTING = {"kind": _OPT_STR, "tool": _OPT_STR, "reason": _OPT_STR, "target": _OPT_STR}


def _values(data: dict[str, Any], shapes: dict[str, tuple[Any, str]], path: str) -> None:
    for key, (kind, expected) in shapes.items():
        if key in data:
            need(data[key], kind, f"{path}.{key}", expected)


def _context_write(data: Any, path: str) -> None:
    """``{"set": {...}, "delete": [...]}`` (a packet's ``context_updates``, a context set)."""
    if data is None:
        return
    need(data, dict, path, "an object")
    need(data.get("set"), (dict, type(None)), f"{path}.set", "an object or null")
    deleted = need(data.get("delete"), (list, type(None)), f"{path}.delete", "a list or null")
    for i, key in enumerate(deleted or ()):
        need(key, str, f"{path}.delete[{i}]", "a string")


def _tool_calls(data: dict[str, Any]) -> None:
    calls = data.get("tool_calls")
    for i, call in enumerate(calls if isinstance(calls, list) else ()):
        if isinstance(call, dict):  # (anything else is left out as it is read)
            need(
                call.get("name"),
                (str, type(None)),
                f"event_data.tool_calls[{i}].name",
                "a string or null",
            )


def check_envelope(env: Envelope) -> None:
    """Raise :class:`DamagedRecord` when a value of the stored envelope ``env`` that the
    readers of runs use is not of the type flowc writes."""
    if _usual(env):  # (every read envelope: a turn's costs a few attribute reads)
        return
    _check(env)


def _str_or_none(value: Any) -> bool:
    return value is None or type(value) is str


def _usual(env: Envelope) -> bool:
    """``env`` is a text or packet envelope as flowc writes them: nothing to say."""
    if not (
        type(env.sender_id) is str
        and type(env.envelope_id) is str
        and type(env.priority) is str
        and type(env.depth) is int
        and type(env.created_at) is str
        and env.task_id is None
        and env.causation_id is None
        and env.trace_id is None
        and env.idempotency_key is None
        and env.ttl_seconds is None
        and env.audience is None
    ):
        return False
    et, data = env.event_type, env.event_data
    calls = data.get("tool_calls")
    if calls is not None and not (
        type(calls) is list and all(type(c) is dict and _str_or_none(c.get("name")) for c in calls)
    ):
        return False
    if et == EV_TEXT:
        return _str_or_none(data.get("text"))
    if et == EV_PACKET:
        routing, updates = data.get("routing"), data.get("context_updates")
        return (
            _str_or_none(data.get("body"))
            and (
                routing is None
                or (type(routing) is dict and all(_str_or_none(routing.get(k)) for k in _ROUTING))
            )
            and (
                updates is None
                or (
                    type(updates) is dict
                    and type(updates.get("set", {})) is dict
                    and type(updates.get("delete", [])) is list
                    and all(type(k) is str for k in updates.get("delete", ()))
                )
            )
        )
    return False


def _check(env: Envelope) -> None:
    """:func:`check_envelope`, value by value: the first that is not of its type raises."""
    for name, (kind, expected) in _FIELDS.items():
        need(getattr(env, name), kind, name, expected)
    if env.audience is not None:
        for i, who in enumerate(env.audience):
            need(who, str, f"audience[{i}]", "a string")
    et, data = env.event_type, env.event_data
    if et == EV_CHANNEL_OPENED:
        # (what the metadata holds is the channel's: ChannelMetadata.from_dict checks it)
        if "metadata" not in data:
            raise DamagedRecord("event_data.metadata", "an object", missing=True)
        need(data["metadata"], dict, "event_data.metadata", "an object")
        _expectations(data.get("expectations"))
        return
    shapes = _DATA.get(et)
    if shapes is not None:
        _values(data, shapes, "event_data")
    if et == EV_PACKET:
        _context_write(data.get("context_updates"), "event_data.context_updates")
        _values(data.get("routing") or {}, _ROUTING, "event_data.routing")
    elif et == EV_CONTEXT_SET:
        _context_write(data, "event_data")
    if et in (EV_TEXT, EV_PACKET):
        _tool_calls(data)


def _expectations(found: Any) -> None:
    """The opening's liveness rules: ``[{"name", "on_violation", "params"}]``."""
    for i, e in enumerate(
        need(found, (list, type(None)), "event_data.expectations", "a list or null") or ()
    ):
        at = f"event_data.expectations[{i}]"
        need(e, dict, at, "an object")
        for key in ("name", "on_violation"):
            if key not in e:
                raise DamagedRecord(f"{at}.{key}", "a string", missing=True)
            need(e[key], str, f"{at}.{key}", "a string")
        need(e.get("params", {}), dict, f"{at}.params", "an object")
