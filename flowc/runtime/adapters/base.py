"""The adapter protocol (AG2's BYO-adapter page): a manifest and five hooks.

An adapter decides what a channel type means: ``initial_state`` once per channel,
``validate_create`` when it opens, and for every envelope ``validate_send`` ->
``fold`` -> ``on_accepted``. ``fold`` is pure: the hub keeps the old state until the
envelope is in the WAL, so a hook that raises changes nothing.
"""

from __future__ import annotations

import enum
import json
from typing import Any, Protocol, runtime_checkable

import attrs

from flowc.runtime.envelope import Envelope

__all__ = [
    "Adapter",
    "AdapterResult",
    "ChannelManifest",
    "ChannelMetadata",
    "ChannelState",
    "DamagedRecord",
    "Expectation",
    "ExpectedTurn",
    "Participant",
    "ParticipantSchema",
    "ProtocolError",
    "damaged_text",
]


class ProtocolError(Exception):
    """An envelope or a channel the adapter (or the hub) refuses; nothing was changed."""


class DamagedRecord(ProtocolError):
    """A stored record whose JSON is not what flowc writes: the value at ``path`` (a JSON
    path into the envelope, ``event_data.routing.reason``) is not ``expected``.

    >>> str(DamagedRecord("event_data.metadata.version", "an integer", "2"))
    'the run is damaged: record 1 (ag2.channel.opened), event_data.metadata.version: expected an integer, got "2"'
    """

    def __init__(
        self, path: str, expected: str, value: Any = None, *, missing: bool = False, said: str = ""
    ):
        self.path = path
        if said:
            self.what = said
        else:
            self.what = f"expected {expected}, " + (
                "missing" if missing else f"got {_shown(value)}"
            )
        if path.startswith("event_data.metadata"):  # (read as the run is rebuilt)
            super().__init__(damaged_text("the run", 1, OPENING, path, self.what))
        else:
            super().__init__(f"a record is damaged: {path}: {self.what}")

    @classmethod
    def said(cls, path: str, what: str) -> DamagedRecord:
        """The value at ``path`` is damaged, ``what`` saying how."""
        return cls(path, "", said=what)

    def in_run(self, run_id: str) -> str:
        """This damage in :func:`damaged_text`'s words, naming the run ``run_id``."""
        if self.path.startswith("event_data.metadata"):
            return damaged_text(f"run {run_id}", 1, OPENING, self.path, self.what)
        return f"run {run_id} is damaged: {self.path}: {self.what}"


#: the event type of a run's first record, its opening
OPENING = "ag2.channel.opened"


def damaged_text(
    run: str, record: int, event_type: str, path: str, what: str, row: int | None = None
) -> str:
    """The one wording of a damaged run, in every command: ``run`` (``"run ID"``) is
    damaged, its ``record``-th record (of ``event_type``, stored in ``row``), the value at
    JSON ``path``, ``what`` is wrong with it.

    >>> damaged_text("run r", 3, "ag2.packet", "event_data.routing.kind", "expected a string, got 5")
    'run r is damaged: record 3 (ag2.packet), event_data.routing.kind: expected a string, got 5'
    """
    place = event_type if row is None else f"{event_type}, row {row}"
    return f"{run} is damaged: record {record} ({place}), {path}: {what}"


def _shown(value: Any) -> str:
    """A JSON value as a damaged record's message shows it: short, one line."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    try:
        text = json.dumps(value, ensure_ascii=True) if not isinstance(value, float) else repr(value)
    except (TypeError, ValueError):  # not JSON (a set, an object): as Python shows it
        shown = _repr(value)
        text = f"a {type(value).__name__}" + (f" ({shown})" if shown else "")
    return text if len(text) <= 40 else text[:37] + "..."


def _repr(value: Any) -> str:
    """``repr(value)``, or nothing when its ``repr`` raises."""
    try:
        return repr(value)
    except Exception:
        return ""


def need(value: Any, kind: type | tuple[type, ...], path: str, expected: str) -> Any:
    """``value`` when it is a ``kind`` (``bool`` is no ``int`` here), else :class:`DamagedRecord`."""
    if isinstance(value, kind) and not (isinstance(value, bool) and bool not in _kinds(kind)):
        return value
    raise DamagedRecord(path, expected, value)


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def need_key(
    data: dict[str, Any], key: str, kind: type | tuple[type, ...], path: str, expected: str
) -> Any:
    """``data[key]``, a ``kind``; :class:`DamagedRecord` when it is missing or not one."""
    if key not in data:
        raise DamagedRecord(f"{path}.{key}", expected, missing=True)
    return need(data[key], kind, f"{path}.{key}", expected)


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
    def from_dict(cls, data: Any, path: str = "event_data.metadata") -> ChannelMetadata:
        """The metadata a channel's opening record stores (at ``path`` in it); a value
        not of its type raises :class:`DamagedRecord` naming its JSON path."""
        data = need(data, dict, path, "an object")
        people = need_key(data, "participants", list, path, "a list")
        participants = []
        for i, p in enumerate(people):
            at = f"{path}.participants[{i}]"
            need(p, dict, at, "an object")
            participants.append(
                Participant(
                    need_key(p, "agent_id", str, at, "a string"),
                    need_key(p, "order", int, at, "an integer"),
                    need(p.get("name", ""), str, f"{at}.name", "a string"),
                    need(p.get("role", ""), str, f"{at}.role", "a string"),
                )
            )
        return cls(
            channel_id=need_key(data, "channel_id", str, path, "a string"),
            type=need_key(data, "type", str, path, "a string"),
            version=need_key(data, "version", int, path, "an integer"),
            creator_id=need_key(data, "creator_id", str, path, "a string"),
            participants=tuple(participants),
            knobs=need_key(data, "knobs", dict, path, "an object"),
            labels=need(data.get("labels", {}), dict, f"{path}.labels", "an object"),
            created_at=need(data.get("created_at", ""), str, f"{path}.created_at", "a string"),
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
