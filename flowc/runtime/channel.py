"""A live channel and the two interfaces between the hub and its participants.

:class:`Channel` is the hub's record of one open (or closed) channel.
:class:`HubParticipant` is what the hub needs from a client; :class:`ClientHub` is
what a client needs from the hub. Keeping both here lets ``hub`` import ``clients``
without ``clients`` importing ``hub``.

>>> HISTORY_WINDOW
32
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import attrs

from flowc.runtime.adapters.base import (
    Adapter,
    ChannelMetadata,
    ChannelState,
    Expectation,
)
from flowc.runtime.envelope import Envelope
from flowc.runtime.failures import Failure
from flowc.runtime.wal import Lease

__all__ = ["HISTORY_WINDOW", "Channel", "ClientHub", "HubParticipant"]

#: how many recent turns an agent sees as its view of the channel
HISTORY_WINDOW = 32

#: the states as plain constants: reading a member off the enum class
#: (``ChannelState.OPEN``) goes through ``EnumType.__getattr__`` on Python 3.11, about
#: 1.4 k instructions each, and the hot paths read them every turn
_OPEN = ChannelState.OPEN


class HubParticipant(Protocol):
    """What the hub needs from a client: an id, a name, and delivery."""

    agent_id: str
    name: str
    kind: str

    def deliver(self, envelope: Envelope) -> None: ...


@attrs.define(eq=False)
class Channel:
    """A live channel: its metadata, adapter, current state and liveness bookkeeping."""

    metadata: ChannelMetadata
    adapter: Adapter
    state: Any
    expectations: tuple[Expectation, ...]
    status: ChannelState = ChannelState.OPEN
    close_reason: str | None = None
    stalled_on: str | None = None
    error: str | None = None
    #: the store failed while the run went on (not a lost lease, not the run's own
    #: stall): the run stopped, but what it waits for is the store, so no stall is
    #: recorded for it (``Hub.record_stall``) and any worker takes it again
    store_failed: bool = False
    #: the exception that stopped the run, when a turn failed (``Hub.fail``)
    failure: Failure | None = None
    #: the speaker the run stalled on answered, but said nothing and routed nothing (a
    #: silent round), rather than having no answer at all
    silent: bool = False
    recent: deque[Envelope] = attrs.field(factory=lambda: deque(maxlen=HISTORY_WINDOW))
    members: frozenset[str] = frozenset()
    order: tuple[str, ...] = ()
    turn_started: float = 0.0
    fired: set[int] = attrs.field(factory=set)
    timer: asyncio.TimerHandle | None = None
    done: asyncio.Event = attrs.field(factory=asyncio.Event)
    violations: list[dict[str, Any]] = attrs.field(factory=list)
    #: this hub's right to write the channel (see :mod:`flowc.runtime.wal`), and when
    #: to renew it next, on the monotonic clock (``time.monotonic``): whether a lease is
    #: live is the store's decision, and renewals timed on a wall clock that was set back
    #: would stop for as long as it was set back
    lease: Lease | None = None
    renew_at: float = 0.0
    #: the id of the channel's last envelope in the WAL (what the next one follows)
    last_id: str | None = None
    #: what each turn is held to (a :class:`flowc.runtime.contracts.Contract`), or
    #: ``None``: nothing is checked
    contract: Any = None
    #: the run's properties watched on each turn (a
    #: :class:`flowc.runtime.guard.PropertyGuard`), or ``None``
    guard: Any = None
    #: the breaches that refused the turn the channel stopped on (their ``to_json``)
    refused: tuple[dict[str, Any], ...] = ()
    #: the clients a broadcast reaches, in order, as of the hub's ``reach_of``-th
    #: attach (the hub fills it on the first delivery and after each new client)
    reach: tuple[HubParticipant, ...] = attrs.field(default=(), repr=False)
    reach_of: int = attrs.field(default=-1, repr=False)
    #: the adapter's ``next_speaker_id(state)`` if it has one (see :meth:`expected_next`)
    _next_id: Callable[[Any], str | None] | None = attrs.field(init=False, default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        self._next_id = getattr(self.adapter, "next_speaker_id", None)

    @property
    def channel_id(self) -> str:
        return self.metadata.channel_id

    @property
    def is_open(self) -> bool:
        return self.status is _OPEN

    def expected_next(self) -> str | None:
        """Who the adapter expects to send the next substantive envelope.

        An adapter may offer ``next_speaker_id(state)``: the same answer as its
        ``expected_next`` hook's agent id, without building an ``ExpectedTurn`` (the hub
        and the drivers ask several times per turn).
        """
        if self.status is not _OPEN:
            return None
        fast = self._next_id
        if fast is not None:
            return fast(self.state)
        fn = getattr(self.adapter, "expected_next", None)
        if fn is None:
            return None
        turn = fn(self.metadata, self.state)
        return None if turn is None else str(turn.agent_id)


class ClientHub(Protocol):
    """What a participant client needs from the hub it is attached to."""

    def channel(self, channel_id: str) -> Channel: ...

    def open_channel(
        self,
        creator_id: str,
        type: str,
        participants: Sequence[str],
        knobs: dict[str, Any] | None = None,
        *,
        version: int = 1,
        expectations: Sequence[Expectation] | None = None,
        labels: dict[str, Any] | None = None,
        channel_id: str | None = None,
    ) -> Channel: ...

    def fail(
        self, channel_id: str, agent_id: str, err: BaseException, *, by_agent: bool = False
    ) -> None: ...

    def stopping(self) -> bool: ...

    def admit(self, envelope: Envelope, checked: bool = False) -> Envelope: ...

    def admit_fields(
        self,
        channel_id: str,
        sender_id: str,
        event_type: str,
        event_data: dict[str, Any],
        audience: tuple[str, ...] | None = None,
        causation_id: str | None = None,
        template: Envelope | None = None,
        checked: bool = False,
    ) -> Envelope: ...

    def read_wal(self, channel_id: str) -> list[Envelope]: ...

    def name_to_id(self) -> dict[str, str]: ...

    def stall(self, channel_id: str, agent_id: str, error: str | None = None) -> None: ...
