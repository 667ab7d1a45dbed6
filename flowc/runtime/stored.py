"""ONE definition of what each stored record may hold (per event type: which keys, of
which types), used both where the hub admits or writes a record (:func:`admissible`: a
value outside it is refused, nothing written) and where a store reads one back
(:func:`check_envelope`, from :func:`flowc.runtime.wal.decode_rows`: a value outside it
is a damaged row, named by its JSON path). So flowc never writes what it cannot read
back, and a reader meets only values this definition allows.

What the hub always accepted stays allowed: a reply's text (``text``, ``body``) is any
JSON value (a list of content parts, an object, a number, null: AG2's message content is
not always a string); an envelope's ``ttl_seconds`` is any number; the keys a context
write deletes are any JSON scalars (a key the context does not hold is not there to
delete). What the readers use is checked; what they pass on whatever it is, is not. An
opening's metadata is the channel's, which :meth:`ChannelMetadata.from_dict
<flowc.runtime.adapters.base.ChannelMetadata.from_dict>` checks as a reader rebuilds it.

>>> from flowc.runtime.envelope import EV_PACKET, Envelope
>>> check_envelope(Envelope("c", "a", None, EV_PACKET, {"routing": {"reason": 5}}))
Traceback (most recent call last):
...
flowc.runtime.adapters.base.DamagedRecord: a record is damaged: event_data.routing.reason: expected a string or null, got 5
>>> check_envelope(Envelope("c", "a", None, EV_PACKET, {"body": ["a", {"b": 1}]}, ttl_seconds=2.5))
>>> admissible(Envelope("c", "a", None, EV_PACKET, {"context_updates": {"delete": [[1]]}}))
Traceback (most recent call last):
...
flowc.runtime.adapters.base.ProtocolError: a's reply was refused: event_data.context_updates.delete[0]: expected a string, number, boolean or null, got a list
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import attrs

from flowc.runtime.adapters.base import (
    ChannelMetadata,
    DamagedRecord,
    ProtocolError,
    need,
    need_key,
)
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

__all__ = [
    "admissible",
    "admitted",
    "check_envelope",
    "check_row",
    "json_copy",
    "json_values",
    "plain",
]

_STR = (str, "a string")
_OPT_STR = ((str, type(None)), "a string or null")
_OPT_INT = ((int, type(None)), "an integer or null")
_OPT_OBJ = ((dict, type(None)), "an object or null")
_OPT_NUMBER = ((int, float, type(None)), "a number or null")
_SCALAR = ((str, int, float, bool, type(None)), "a string, number, boolean or null")

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
    "ttl_seconds": _OPT_NUMBER,
}

#: per event type, the ``event_data`` values its readers use (absent is as null)
_DATA: dict[str, dict[str, tuple[Any, str]]] = {
    EV_TEXT: {},  # ("text": any JSON value)
    EV_PACKET: {"routing": _OPT_OBJ, "context_updates": _OPT_OBJ},  # ("body": any)
    EV_CHANNEL_CLOSED: {},  # ("reason": a string, always: checked in _check)
    EV_TURN_FAILED: {
        "turn": _OPT_INT,
        "agent_id": _OPT_STR,
        "error": _OPT_STR,
        "where": _OPT_STR,
        "traceback": _OPT_STR,
    },
    EV_RUN_STALLED: {"agent_id": _OPT_STR},
}

#: (``tool`` is any JSON scalar: the fold only compares it with the tools it knows)
_ROUTING = {"kind": _OPT_STR, "tool": _SCALAR, "reason": _OPT_STR, "target": _OPT_STR}


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
        need(key, _SCALAR[0], f"{path}.delete[{i}]", _SCALAR[1])


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


#: an envelope's keys as a row stores them (``event_data`` and ``audience`` checked here)
_KEYS = frozenset({"channel_id", "audience", "event_data", *_FIELDS})
_REQUIRED = ("channel_id", "sender_id", "audience", "event_type", "event_data")


def check_row(raw: Any) -> None:
    """Raise :class:`DamagedRecord` when ``raw`` (a stored row's JSON) is not an
    envelope's object: its keys, its ``audience`` and its ``event_data``; the values of
    an envelope built from it are :func:`check_envelope`'s."""
    need(raw, dict, "(the record)", "an object")
    for key in _REQUIRED:
        if key not in raw:
            raise DamagedRecord(key, "a value", missing=True)
    for key in raw:
        if key not in _KEYS:
            raise DamagedRecord(str(key), "no such key in an envelope", raw[key])
    need(raw["channel_id"], str, "channel_id", "a string")
    need(raw["event_data"], dict, "event_data", "an object")
    need(raw.get("audience"), (list, type(None)), "audience", "a list or null")


def admissible(env: Envelope, clients: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`ProtocolError` (nothing is written) when the hub is about to write
    ``env`` holding a value a reader would read back as damaged: :func:`check_envelope`,
    and for an opening its metadata as :meth:`ChannelMetadata.from_dict` reads it. The
    message names who sent it (its name among ``clients``, by agent id; else its id)."""
    _admit(env, clients, copy=False)


def admitted(env: Envelope, clients: Mapping[str, Any] | None = None) -> Envelope:
    """:func:`admissible`, and ``env`` with its data as the hub writes it: plain copies
    (:func:`plain`), so that what the hub keeps and folds shares nothing with the
    sender's own objects (a list it changes later, a string whose ``==`` says yes to
    anything). A value that JSON writes otherwise than it reads is refused too."""
    return _admit(env, clients, copy=True)


def _admit(env: Envelope, clients: Mapping[str, Any] | None, *, copy: bool) -> Envelope:
    try:
        check_envelope(env)
        data = plain(env.event_data, "event_data", copy=copy)
        if env.event_type == EV_CHANNEL_OPENED:
            ChannelMetadata.from_dict(data.get("metadata"))
    except DamagedRecord as err:
        client = (clients or {}).get(env.sender_id)
        name = getattr(client, "name", None)
        sender = str(name) if name not in (None, "") else str(env.sender_id)
        kind = _KIND.get(env.event_type, f"{env.event_type} record")
        raise ProtocolError(f"{sender}'s {kind} was refused: {err.path}: {err.what}") from None
    return attrs.evolve(env, event_data=data) if copy else env


def plain(value: Any, path: str, *, copy: bool = True) -> Any:
    """``value`` as a record holds it (:func:`json_copy`; ``copy=False``: ``value``), or
    :class:`DamagedRecord` naming (``value`` being at ``path``) the first value in it that
    no record can hold (:func:`json_values`), or ``value`` itself when JSON would not
    write it as it reads (a list whose iterator fails, a dict whose ``items`` say one
    thing, then another): the sender's objects, whatever their own methods do.

    >>> plain({"k": (1, "a")}, "args")
    {'k': [1, 'a']}
    >>> plain([{1}], "args")
    Traceback (most recent call last):
    ...
    flowc.runtime.adapters.base.DamagedRecord: a record is damaged: args[0]: expected a JSON value (a string, number, boolean, null, list or object), got a set ({1})
    """
    try:
        json_values(value, path)
        return json_copy(value) if copy else value
    except DamagedRecord:
        raise
    except Exception as err:  # (what the sender's objects do is theirs)
        raise DamagedRecord.said(
            path, f"a value JSON does not write as it reads ({type(err).__name__}: {err})"
        ) from None


#: what a JSON value is, as a refusal says it
_JSON = "a JSON value (a string, number, boolean, null, list or object)"


#: the deepest a record's value may nest lists and objects: JSON's readers stop at some
#: depth (Python's near 1,000, counting the record around the value and the stack of the
#: reader); room for a JSON graph at its deepest (500 levels, ``flowc.inputs.MAX_DEPTH``),
#: which a run's opening holds at ``event_data.metadata.knobs.graph``
MAX_NESTING = 512
#: the most digits of an integer a record holds: Python writes no longer one (its own
#: limit on an integer's text), as a run script's numbers (``flowc.inputs.MAX_INT_DIGITS``)
MAX_INT_DIGITS = 4300


def json_values(value: Any, path: str) -> None:
    """Raise :class:`DamagedRecord` at the first value in ``value`` that a record cannot
    hold as it is: not JSON (a set, bytes, an object of a class of its own), a number that
    is not finite (JSON has no ``NaN`` or ``Infinity``; :mod:`json` would write them and
    the readers, a browser's ``JSON.parse`` among them, refuse them), an object's key that
    is not a string (JSON would write ``1`` as ``"1"``, so the record would read back as
    another value), a list or object that holds itself, or one nested more than
    :data:`MAX_NESTING` deep. Tuples are lists, as JSON writes them. The time it takes
    grows with the value's size, whatever its depth or keys (a place is spelled out only
    for the value refused).

    >>> json_values({"set": {"k": [1, {2, 3}]}}, "event_data")
    Traceback (most recent call last):
    ...
    flowc.runtime.adapters.base.DamagedRecord: a record is damaged: event_data.set.k[1]: expected a JSON value (a string, number, boolean, null, list or object), got a set ({2, 3})
    """
    # each entry: the value, where it is (a chain of (the holder's place, key or index)),
    # and how deep; _LEAVE entries mark the end of a list's or object's values, so that
    # ``inside`` holds the lists and objects around the value being read, and no others
    inside: set[int] = set()
    stack: list[tuple[Any, Any, int]] = [(value, None, 0)]
    while stack:
        item, place, depth = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int or (isinstance(item, int) and not isinstance(item, bool)):
            # (as JSON writes it: an int's own methods, not what a subclass says)
            if int.bit_length(item) > _DIGITS_BITS and int.__abs__(item) >= _TOO_LONG:
                raise DamagedRecord.said(
                    _place(path, place),
                    f"a number of more than {MAX_INT_DIGITS:,} digits (a record holds at most"
                    f" {MAX_INT_DIGITS:,}, as a run script does)",
                )
        elif item is _LEAVE:
            inside.discard(place)
        elif kind is float or isinstance(item, float):
            if not math.isfinite(item):
                raise DamagedRecord(_place(path, place), "a finite number", item)
        elif isinstance(item, str):
            continue
        elif isinstance(item, (dict, list, tuple)):
            if id(item) in inside:
                raise DamagedRecord.said(_place(path, place), "a list or object that holds itself")
            if depth == MAX_NESTING:
                raise DamagedRecord.said(
                    _place(path, place),
                    f"a list or object nested more than {MAX_NESTING} deep in the record's"
                    " value (JSON's readers stop at some depth)",
                )
            inside.add(id(item))
            stack.append((_LEAVE, id(item), 0))
            # (pushed last first: the first value of the record in its order is named)
            if isinstance(item, dict):
                for key, nested in reversed(item.items() if kind is dict else [*item.items()]):
                    if not isinstance(key, str):
                        at = _place(path, place)
                        raise DamagedRecord(f"{at}.{_key_text(key)}", "a string key", key)
                    stack.append((nested, (place, key), depth + 1))
            else:  # (a list read as JSON reads it: by iterating it, whatever its `len` says)
                seq = item if kind is list or kind is tuple else list(iter(item))
                stack.extend((seq[i], (place, i), depth + 1) for i in range(len(seq) - 1, -1, -1))
        else:
            raise DamagedRecord(_place(path, place), _JSON, item)


#: the mark of the end of a list's or object's values (:func:`json_values`)
_LEAVE = object()
#: an integer of :data:`~flowc.inputs.MAX_INT_DIGITS` digits or more is at least this
#: (its text is refused by Python, so no record could be written); the bits of a number
#: below which none is
_TOO_LONG = 10**MAX_INT_DIGITS
_DIGITS_BITS = _TOO_LONG.bit_length() - 2


def json_copy(value: Any) -> Any:
    """``value`` as a record holds it, for a value :func:`json_values` takes: a copy of
    plain JSON values (lists for tuples, ``str``, ``int``, ``float``, ``dict`` for their
    subclasses), which shares nothing with ``value``: what the hub keeps of a turn is
    what it wrote, whatever the sender does with its own objects later.

    >>> class Sneaky(str):
    ...     def __eq__(self, other): return True
    ...     __hash__ = str.__hash__
    >>> kept = {"k": (1, [Sneaky("no")])}
    >>> copied = json_copy(kept); copied, type(copied["k"][1][0]) is str
    ({'k': [1, ['no']]}, True)
    """
    return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))


def _place(path: str, place: Any) -> str:
    """The JSON path of a place :func:`json_values` reads: ``path``, then each key
    (``.key``) and index (``[i]``) from the outside in."""
    parts: list[str] = []
    while place is not None:
        place, step = place
        parts.append(f"[{step}]" if type(step) is int else f".{step}")
    return path + "".join(reversed(parts))


def _key_text(key: Any) -> str:
    try:
        return repr(key)
    except Exception:
        return type(key).__name__


#: what a refused record is, in the refusal's words
_KIND = {
    EV_TEXT: "reply",
    EV_PACKET: "reply",
    EV_CONTEXT_SET: "context write",
    EV_CHANNEL_OPENED: "opening of a run",
}


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
        return True
    if et == EV_PACKET:
        routing, updates = data.get("routing"), data.get("context_updates")
        return (
            routing is None
            or (type(routing) is dict and all(_str_or_none(routing.get(k)) for k in _ROUTING))
        ) and (
            updates is None
            or (
                type(updates) is dict
                and type(updates.get("set", {})) is dict
                and type(updates.get("delete", [])) is list
                and all(type(k) is str for k in updates.get("delete", ()))
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
    if et == EV_CHANNEL_CLOSED:  # (the hub closes a run for a reason, always)
        need_key(data, "reason", str, "event_data", "a string")
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
        params = need(e.get("params", {}), dict, f"{at}.params", "an object")
        if "seconds" in params:  # (a turn_within's limit: the hub waits that long)
            _seconds(params["seconds"], f"{at}.params.seconds")


def _seconds(value: Any, path: str) -> None:
    """A turn_within's limit: a number ``float()`` converts, finite and not negative
    (``10**400``, NaN or an infinity is no time the hub can wait)."""
    expected = "a finite number of seconds, not negative"
    need(value, (int, float), path, expected)
    try:
        seconds = float(value)
    except OverflowError:
        raise DamagedRecord(path, expected, value) from None
    if not math.isfinite(seconds) or seconds < 0:
        raise DamagedRecord(path, expected, value)
