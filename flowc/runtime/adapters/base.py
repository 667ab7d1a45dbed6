"""The adapter protocol (AG2's BYO-adapter page): a manifest and five hooks.

An adapter decides what a channel type means: ``initial_state`` once per channel,
``validate_create`` when it opens, and for every envelope ``validate_send`` ->
``fold`` -> ``on_accepted``. ``fold`` is pure: the hub keeps the old state until the
envelope is in the WAL, so a hook that raises changes nothing.
"""

from __future__ import annotations

import enum
from typing import Any, Protocol, runtime_checkable

import attrs

from flowc.runtime.envelope import Envelope

__all__ = [
    "Adapter",
    "AdapterResult",
    "ChannelManifest",
    "ChannelMetadata",
    "ChannelState",
    "Expectation",
    "ExpectedTurn",
    "Participant",
    "ParticipantSchema",
    "ProtocolError",
]


class ProtocolError(Exception):
    """An envelope or a channel the adapter (or the hub) refuses; nothing was changed."""


class ChannelState(enum.Enum):
    OPEN = "open"
    CLOSED = "closed"


@attrs.frozen
class ParticipantSchema:
    min: int = 2
    max: int | None = None
    roles: tuple[str, ...] = ()


@attrs.frozen
class Expectation:
    """A liveness rule; ``turn_within`` is evaluated by the hub (``params["seconds"]``)."""

    name: str
    on_violation: str  # "warn" or "auto_close"
    params: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class ChannelManifest:
    type: str
    version: int = 1
    participants: ParticipantSchema = ParticipantSchema()
    knobs_schema: dict[str, str] = attrs.field(factory=dict)
    expectations: tuple[Expectation, ...] = ()


@attrs.frozen
class Participant:
    agent_id: str
    order: int
    name: str = ""
    role: str = ""


@attrs.frozen
class ChannelMetadata:
    """What a channel was opened with; stored in its ``EV_CHANNEL_OPENED`` envelope."""

    channel_id: str
    type: str
    version: int
    creator_id: str
    participants: tuple[Participant, ...]
    knobs: dict[str, Any]
    labels: dict[str, Any] = attrs.field(factory=dict)
    created_at: str = ""

    @property
    def participant_ids(self) -> tuple[str, ...]:
        return tuple(p.agent_id for p in sorted(self.participants, key=lambda p: p.order))

    def to_dict(self) -> dict[str, Any]:
        return {
            "channel_id": self.channel_id,
            "type": self.type,
            "version": self.version,
            "creator_id": self.creator_id,
            "participants": [
                {"agent_id": p.agent_id, "order": p.order, "name": p.name, "role": p.role}
                for p in self.participants
            ],
            "knobs": self.knobs,
            "labels": self.labels,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChannelMetadata:
        return cls(
            channel_id=data["channel_id"],
            type=data["type"],
            version=data["version"],
            creator_id=data["creator_id"],
            participants=tuple(Participant(**p) for p in data["participants"]),
            knobs=data["knobs"],
            labels=data.get("labels", {}),
            created_at=data.get("created_at", ""),
        )


@attrs.frozen
class AdapterResult:
    """``next_state=CLOSED`` closes the channel with ``auto_close_reason``."""

    next_state: ChannelState | None = None
    auto_close_reason: str = ""


@attrs.frozen
class ExpectedTurn:
    agent_id: str
    triggering_envelope_id: str | None = None


@runtime_checkable
class Adapter(Protocol):
    """The five-hook protocol plus ``validate_create`` (``expected_next`` is optional)."""

    manifest: ChannelManifest

    def initial_state(self, metadata: ChannelMetadata) -> Any: ...

    def validate_create(self, metadata: ChannelMetadata) -> None: ...

    def validate_send(self, metadata: ChannelMetadata, envelope: Envelope, state: Any) -> None: ...

    def fold(self, envelope: Envelope, state: Any) -> Any: ...

    def on_accepted(
        self, metadata: ChannelMetadata, envelope: Envelope, state: Any
    ) -> AdapterResult: ...
