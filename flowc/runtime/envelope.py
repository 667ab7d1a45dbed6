"""Envelope: the wire shape of every message on the hub, with AG2's field names.

The ``EV_*`` constants carry AG2 1.2.1's exact strings, so a WAL written here reads
like AG2's and a flow developed here behaves the same on AG2.

>>> env = Envelope("ch-1", "user", None, EV_TEXT, {"text": "hi"})
>>> Envelope.from_json(env.to_json()) == env
True
>>> stamped("ch-1", "user", None, EV_TEXT, {"text": "hi"}) == env
True
"""

from __future__ import annotations

import json
from typing import Any, Literal

import attrs

from flowc.runtime.frozen import builder, writable_base

__all__ = [
    "EV_CHANNEL_CLOSED",
    "EV_CHANNEL_EXPIRED",
    "EV_CHANNEL_INVITE",
    "EV_CHANNEL_INVITE_ACK",
    "EV_CHANNEL_INVITE_REJECT",
    "EV_CHANNEL_OPENED",
    "EV_CONTEXT_SET",
    "EV_EXPECTATION_VIOLATED",
    "EV_PACKET",
    "EV_RUN_STALLED",
    "EV_TASK_CANCELLED",
    "EV_TASK_CANCEL_REQUEST",
    "EV_TEXT",
    "EV_TURN_FAILED",
    "FORKED_FROM",
    "Envelope",
    "Priority",
    "visible_to",
]

Priority = Literal["background", "normal", "urgent"]

EV_TEXT = "ag2.msg.text"
#: one agent's whole round: ``{"routing": {...}, "context_updates": {...}, "body": str}``
EV_PACKET = "ag2.packet"
EV_CHANNEL_INVITE = "ag2.channel.invite"
EV_CHANNEL_INVITE_ACK = "ag2.channel.invite.ack"
EV_CHANNEL_INVITE_REJECT = "ag2.channel.invite.reject"
EV_CHANNEL_OPENED = "ag2.channel.opened"
EV_CHANNEL_CLOSED = "ag2.channel.closed"
EV_CHANNEL_EXPIRED = "ag2.channel.expired"
EV_EXPECTATION_VIOLATED = "ag2.expectation.violated"
#: ``{"set": {...}, "delete": [...]}``; within one envelope delete runs before set
EV_CONTEXT_SET = "ag2.context.set"
#: flowc's own record (from the hub) of a turn that failed: ``{"agent_id", "turn",
#: "error", "where", "traceback"}`` (an agent or a plugin raised; the run stopped there)
EV_TURN_FAILED = "flowc.turn.failed"
#: flowc's own record (from a worker's hub) of a run that stalled: ``{"agent_id",
#: "error"}`` (the speaker it waits for; why, or null). While it is a run's last record,
#: no worker claims the run (see :mod:`flowc.runtime.worker`)
EV_RUN_STALLED = "flowc.run.stalled"
EV_TASK_CANCEL_REQUEST = "ag2.task.cancel_request"
EV_TASK_CANCELLED = "ag2.task.cancelled"

#: the key of a forked run's opening record (``event_data``) that names its parent:
#: ``{"run_id": PARENT, "turn": N}`` (:mod:`flowc.runtime.fork`)
FORKED_FROM = "forked_from"

#: the fields the hub sets on admission (:mod:`flowc.runtime.hub`): every stored envelope has them
STAMPED = ("envelope_id", "created_at")

CHANNEL_PROTOCOL_EVENTS = frozenset(
    {
        EV_CHANNEL_INVITE,
        EV_CHANNEL_INVITE_ACK,
        EV_CHANNEL_INVITE_REJECT,
        EV_CHANNEL_OPENED,
        EV_CHANNEL_CLOSED,
        EV_CHANNEL_EXPIRED,
    }
)


#: ``json.dumps(..., sort_keys=True, ensure_ascii=False)`` with one encoder for every
#: envelope (``json.dumps`` with options builds a new encoder on each call)
_ENCODE = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode


@attrs.frozen(slots=True)
@writable_base  # so that `stamped` builds one the cheap way (flowc.runtime.frozen)
class Envelope:
    """One message. ``envelope_id`` and ``created_at`` are stamped by the hub on admission.

    ``audience`` ``None`` broadcasts within the channel; a tuple targets a subset.
    """

    # (``audience`` is a tuple here and a list in ``to_dict``, as AG2 writes it)

    channel_id: str
    sender_id: str
    audience: tuple[str, ...] | None
    event_type: str
    event_data: dict[str, Any]
    envelope_id: str = ""
    task_id: str | None = None
    causation_id: str | None = None
    trace_id: str | None = None
    priority: Priority = "normal"
    depth: int = 0
    idempotency_key: str | None = None
    created_at: str = ""
    ttl_seconds: float | None = None  # (any number, as the hub admits)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict with AG2's keys (``audience`` as a list)."""
        out = {a.name: getattr(self, a.name) for a in self.__attrs_attrs__}
        if self.audience is not None:
            out["audience"] = list(self.audience)
        return out

    def to_json(self) -> str:
        """Sorted-key JSON, byte-stable across processes."""
        return _ENCODE(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Envelope:
        audience = data.get("audience")
        if audience is not None:
            data = {**data, "audience": tuple(audience)}
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> Envelope:
        return cls.from_dict(json.loads(text))

    @property
    def is_substantive(self) -> bool:
        """A turn-advancing envelope: text or a packet (AG2's ``_is_substantive``)."""
        return self.event_type == EV_TEXT or self.event_type == EV_PACKET


#: ``Envelope(...)`` built the cheap way (the hub stamps one per admitted envelope): equal
#: to, and as frozen as, the one its ``__init__`` builds (:func:`flowc.runtime.frozen.builder`)
stamped = builder(Envelope)


def visible_to(envelope: Envelope, participant_id: str) -> bool:
    """The sender always sees its own envelope; ``None`` audience reaches everyone.

    >>> visible_to(Envelope("c", "a", ("b",), EV_TEXT, {}), "c")
    False
    """
    if envelope.sender_id == participant_id or envelope.audience is None:
        return True
    return participant_id in envelope.audience
