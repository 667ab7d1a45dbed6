"""The hub: participants, channels, admission through the WAL, delivery, expectations.

Admission of one envelope, in order: the sender must be a participant of an open
channel -> ``validate_send`` -> ``fold`` -> ``on_accepted`` (all on the current state,
none of them changes it) -> the envelope is appended to the WAL -> the new state is
committed -> the envelope is delivered to its audience -> the channel closes if the
adapter said so. A failure before the append changes nothing.

>>> import asyncio
>>> async def demo() -> tuple[str | None, int]:
...     hub = await Hub.open()
...     a, b = hub.register_human("a"), hub.register_human("b")
...     graph = {"initial_speaker": "a", "transitions": [], "max_turns": None,
...              "default_target": {"name": "terminate", "args": {"reason": "done"}}}
...     ch = await a.open("workflow", target=["b"], knobs={"graph": graph})
...     await ch.send("hello")
...     return hub.channel(ch.channel_id).close_reason, len(hub.read_wal(ch.channel_id))
>>> asyncio.run(demo())
('done', 3)
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs

from flowc.runtime.adapters.base import (
    Adapter,
    AdapterResult,
    ChannelMetadata,
    ChannelState,
    Expectation,
    Participant,
    ProtocolError,
)
from flowc.runtime.adapters.workflow import WorkflowAdapter
from flowc.runtime.channel import Channel, HubParticipant
from flowc.runtime.clients import AgentClient, HumanClient
from flowc.runtime.envelope import (
    EV_CHANNEL_CLOSED,
    EV_CHANNEL_OPENED,
    EV_EXPECTATION_VIOLATED,
    EV_PACKET,
    EV_RUN_STALLED,
    EV_TEXT,
    EV_TURN_FAILED,
    Envelope,
    stamped,
)
from flowc.runtime.failures import PluginFailed, failure_of
from flowc.runtime.guard import stop_reason
from flowc.runtime.refold import ReplayResult, broken_in, refolded, stop_text
from flowc.runtime.stored import admissible, admitted
from flowc.runtime.transcript import PROPERTY_KEY
from flowc.runtime.wal import (
    LeaseError,
    MemoryStore,
    StoreUnavailable,
    WalError,
    WalStore,
    holder_id,
    lease_seconds_from_env,
)

__all__ = ["HUB_ID", "Channel", "Hub", "HubParticipant", "ReplayResult"]

log = logging.getLogger("flowc.runtime")

#: the sender id of envelopes the hub itself writes (close, expectation violations)
HUB_ID = "hub"
#: an envelope's fields as they are by default (:meth:`Hub.admit_fields` with no template)
_PLAIN = Envelope("", "", None, "", {})


#: the states as plain constants: reading a member off the enum class
#: (``ChannelState.OPEN``) goes through ``EnumType.__getattr__`` on Python 3.11, about
#: 1.4 k instructions each, and the hot paths read them every turn
_OPEN, _CLOSED = ChannelState.OPEN, ChannelState.CLOSED

_second: list[Any] = [None, ""]  # the last whole second stamped, and its text


def _now() -> str:
    """``2026-12-01T22:03:04.123456Z`` (UTC): the date and time are formatted once per
    second, the microseconds for each envelope (a run stamps thousands per second)."""
    second, micro = divmod(time.time_ns() // 1000, 1_000_000)
    if second != _second[0]:
        _second[0], _second[1] = (
            second,
            datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"),
        )
    return "%s.%06dZ" % (_second[1], micro)  # noqa: UP031 (half an f-string spec's cost)


def _adapter_failure(ch: Channel, err: Exception) -> ProtocolError:
    """Admission's refusal of a turn whose routing raised ``err`` (no ``ProtocolError``):
    a plugin's custom condition or target failed (:class:`PluginFailed`), or else the
    channel's adapter did (a bug in flowc)."""
    if isinstance(err, PluginFailed):
        return ProtocolError(f"refused: routing the turn failed in a plugin's code: {err}")
    return ProtocolError(
        f"refused: the {ch.metadata.type} adapter failed on this envelope "
        f"({type(err).__name__}: {err})"
    )


class Hub:
    """An in-process hub over one WAL store. Create with :meth:`Hub.open`."""

    def __init__(
        self,
        store: WalStore | None = None,
        *,
        holder: str | None = None,
        lease_seconds: float | None = None,
    ) -> None:
        self.store: WalStore = store if store is not None else MemoryStore()
        self._adapters: dict[tuple[str, int], Adapter] = {}
        self._clients: dict[str, HubParticipant] = {}
        #: how many times a client was attached (a channel's ``reach`` is kept until then)
        self._attached = 0
        #: :meth:`name_to_id` as of the ``[0]``-th attach
        self._names: tuple[int, dict[str, str]] = (-1, {})
        self._channels: dict[str, Channel] = {}
        self._prefix = os.urandom(4).hex()
        #: who this hub is to the store's leases (one writer per run)
        self.holder = holder or holder_id(f"hub-{self._prefix}")
        self.lease_seconds = lease_seconds or lease_seconds_from_env()
        self._beat: asyncio.TimerHandle | None = None
        #: when the next beat is due (the event loop's clock): a beat that runs much later
        #: than this was held up, and says so
        self._beat_due: float | None = None
        self._counter = 0
        self._outbox: deque[tuple[HubParticipant, Envelope]] = deque()
        self._delivering = False
        self._tasks: set[asyncio.Future[Any]] = set()
        #: the task that drives this hub's runs (``flowc run``'s): once it is being
        #: cancelled, no further turn is taken (:meth:`stopping`)
        self.driver: asyncio.Task[Any] | None = None
        #: set whenever :attr:`_tasks` is empty (what :meth:`idle` waits on)
        self._quiet: asyncio.Event | None = None
        self._takers: set[str] = set()
        #: hydrated open channels whose next speaker had no client yet, by agent id
        self._awaiting: dict[str, set[str]] = {}
        #: the turn task in flight per channel (at most one: a channel has one next speaker)
        self._inflight: dict[str, asyncio.Task[Any]] = {}
        #: the first unexpected exception that stopped a run (:meth:`fail`): a bug in
        #: flowc, not the agent's (whose own failures stall the run), for whoever drives
        #: the run to raise once it is over (:func:`~flowc.runtime.script_run.run_script`)
        self.failure: BaseException | None = None
        self.register_adapter(WorkflowAdapter())
        #: a store that folds what it is given (a ``WatchedStore``) takes the hub's fold
        #: of each envelope about to be appended instead of folding it again
        self._offer_fold: Callable[[Envelope, Adapter, Any, AdapterResult | None], None] | None = (
            getattr(self.store, "offer_fold", None)
        )
        #: a store that commits appends in groups (a worker's: :mod:`flowc.runtime.groupcommit`)
        #: takes each admitted envelope with ``append_later``; the envelope is delivered
        #: once that commit is done
        self._later: Callable[..., asyncio.Future[None]] | None = getattr(
            self.store, "append_later", None
        )
        #: under group commit: each channel's last envelope known to be in the WAL, and
        #: how many of its envelopes wait for their commit
        self._committed: dict[str, str | None] = {}
        self._pending: dict[str, int] = {}

    @classmethod
    async def open(
        cls,
        store: WalStore | None = None,
        *,
        adapters: Iterable[Adapter] = (),
        holder: str | None = None,
        lease_seconds: float | None = None,
    ) -> Hub:
        """A hub on ``store`` (in memory when ``None``) with the workflow adapter registered.

        Call :meth:`hydrate` afterwards to bring back the channels a previous process left.
        The hub holds a lease on each open channel it writes (``holder``: this process
        and hub; ``lease_seconds``: default ``$FLOWC_LEASE_SECONDS`` or 30), renewed
        while it runs and released when the channel closes or the hub does.
        """
        hub = cls(store, holder=holder, lease_seconds=lease_seconds)
        for adapter in adapters:
            hub.register_adapter(adapter)
        return hub

    def register_adapter(self, adapter: Adapter) -> None:
        """Make ``adapter.manifest.type`` openable (keyed by type and version)."""
        manifest = adapter.manifest
        self._adapters[(manifest.type, manifest.version)] = adapter

    # participants ---------------------------------------------------------------

    def attach(self, client: HubParticipant) -> None:
        """Register a client object (see :mod:`flowc.runtime.clients`)."""
        existing = self._clients.get(client.agent_id)
        if existing is not None and existing is not client:
            raise ProtocolError(f"agent id {client.agent_id!r} is already registered")
        self._clients[client.agent_id] = client
        self._attached += 1
        if getattr(client, "take_turn", None) is not None:
            self._takers.add(client.agent_id)
            waiting = self._awaiting.pop(client.agent_id, None)
            if waiting:
                for cid in waiting:
                    self.resume(cid)

    def register_human(self, name: str, *, agent_id: str | None = None, buffer: bool = True) -> Any:
        """A participant with no model (``HumanClient``)."""
        client = HumanClient(self, name, agent_id=agent_id, buffer=buffer)
        self.attach(client)
        return client

    def register_agent(
        self, name: str, fn: Callable[..., Awaitable[Any]], *, agent_id: str | None = None
    ) -> Any:
        """A participant whose turns an async callable takes (``AgentClient``)."""
        client = AgentClient(self, name, fn, agent_id=agent_id)
        self.attach(client)
        return client

    def client(self, agent_id: str) -> HubParticipant | None:
        return self._clients.get(agent_id)

    def name_to_id(self) -> dict[str, str]:
        """Speaker name -> agent id of every client (a new dict: the caller may keep it)."""
        if self._names[0] != self._attached:
            self._names = (self._attached, {c.name: c.agent_id for c in self._clients.values()})
        return dict(self._names[1])

    # channels -----------------------------------------------------------------

    def channel(self, channel_id: str) -> Channel:
        ch = self._channels.get(channel_id)
        if ch is None:
            raise ProtocolError(f"no channel {channel_id!r}")
        return ch

    @property
    def channels(self) -> dict[str, Channel]:
        return dict(self._channels)

    def _stamp_id(self) -> str:
        self._counter += 1
        return "%s-%08x" % (self._prefix, self._counter)  # noqa: UP031 (as admit_fields)

    def _adapter(self, type: str, version: int) -> Adapter:
        adapter = self._adapters.get((type, version))
        if adapter is None:
            raise ProtocolError(f"no adapter registered for channel type {type!r} v{version}")
        return adapter

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
    ) -> Channel:
        """Open a channel; the creator comes first in the order unless ``participants`` has it.

        Raises :class:`ProtocolError` (a ``GraphError`` for a bad workflow graph, with
        JSON paths) before anything is written.
        """
        adapter = self._adapter(type, version)
        order = list(dict.fromkeys(participants))
        if creator_id not in order:
            order.insert(0, creator_id)
        unknown = [p for p in order if p not in self._clients]
        if unknown:
            raise ProtocolError(f"not registered with the hub: {', '.join(unknown)}")
        cid = channel_id or f"wf-{os.urandom(6).hex()}"
        if cid in self._channels:
            raise ProtocolError(f"channel {cid!r} already exists")
        metadata = ChannelMetadata(
            channel_id=cid,
            type=type,
            version=version,
            creator_id=creator_id,
            participants=tuple(
                Participant(
                    p, i, self._clients[p].name, "initiator" if p == creator_id else "participant"
                )
                for i, p in enumerate(order)
            ),
            knobs=dict(knobs or {}),
            labels=dict(labels or {}),
            created_at=_now(),
        )
        adapter.validate_create(metadata)
        state = adapter.initial_state(metadata)
        exps = tuple(adapter.manifest.expectations if expectations is None else expectations)
        opened = Envelope(
            cid,
            creator_id,
            None,
            EV_CHANNEL_OPENED,
            {
                "metadata": metadata.to_dict(),
                "expectations": [
                    {"name": e.name, "on_violation": e.on_violation, "params": e.params}
                    for e in exps
                ],
            },
            envelope_id=self._stamp_id(),
            created_at=_now(),
        )
        admissible(opened, self._clients)  # (what a reader reads back: stored.py)
        lease = self.store.acquire(cid, self.holder, self.lease_seconds)
        if self._offer_fold is not None:
            self._offer_fold(opened, adapter, state, None)
        try:
            self.store.append(opened, lease)
        except BaseException:
            self.store.release(lease)
            raise
        ch = Channel(
            metadata,
            adapter,
            state,
            exps,
            members=frozenset(order),
            order=metadata.participant_ids,
            last_id=opened.envelope_id,
        )
        self._hold(ch, lease)
        self._channels[cid] = ch
        ch.turn_started = time.monotonic()
        self._deliver(ch, opened)
        self._arm(ch)
        return ch

    # admission ----------------------------------------------------------------

    def admit(self, envelope: Envelope, checked: bool = False) -> Envelope:
        """Admit one envelope synchronously; returns it stamped, or raises ``ProtocolError``.
        ``checked``: its data is as :func:`~flowc.runtime.stored.admitted` returned it."""
        return self.admit_fields(
            envelope.channel_id,
            envelope.sender_id,
            envelope.event_type,
            envelope.event_data,
            envelope.audience,
            envelope.causation_id,
            envelope,
            checked,
        )

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
    ) -> Envelope:
        """:meth:`admit` for an envelope given by its fields (builds it once, stamped)."""
        ch = self._channels.get(channel_id)
        if ch is None:
            raise ProtocolError(f"no channel {channel_id!r}")
        if ch.status is not _OPEN:
            raise ProtocolError(f"channel {ch.channel_id!r} is closed ({ch.close_reason})")
        if sender_id not in ch.members:
            raise ProtocolError(f"{sender_id!r} is not a participant of channel {ch.channel_id!r}")
        self._counter += 1
        eid = "%s-%08x" % (self._prefix, self._counter)  # noqa: UP031 (cheaper than f"{:08x}")
        t = _PLAIN if template is None else template  # (its fields, or the defaults)
        env = stamped(
            channel_id,
            sender_id,
            audience,
            event_type,
            event_data,
            eid,
            t.task_id,
            causation_id,
            t.trace_id,
            t.priority,
            t.depth,
            t.idempotency_key,
            _now(),
            t.ttl_seconds,
        )
        env = env if checked else admitted(env, self._clients)  # (what a reader reads back)
        adapter = ch.adapter
        metadata = ch.metadata
        try:
            adapter.validate_send(metadata, env, ch.state)
            new_state = adapter.fold(env, ch.state)
            result: AdapterResult = adapter.on_accepted(metadata, env, new_state)
        except ProtocolError:
            raise
        except Exception as err:  # a plugin's failure or flowc's: refuse, change nothing
            raise _adapter_failure(ch, err) from err
        contract = ch.contract
        if contract is not None and contract.targets and event_type in (EV_TEXT, EV_PACKET):
            # a custom target's choice, held to its declared `-> A | B`
            try:
                warning = contract.check_decision(sender_id, new_state)
            except ProtocolError as err:  # refused: nothing written, nothing changed
                ch.refused = tuple(b.to_json() for b in getattr(err, "breaches", ()))
                raise
            if warning is not None:
                env = attrs.evolve(env, event_data=contract.annotate(env.event_data, [warning]))
        guard = ch.guard
        broken: list[dict[str, Any]] = []
        if guard is not None and event_type in (EV_TEXT, EV_PACKET):
            # the flow's properties, read on the turn before it is written: what it
            # breaks goes into its envelope (flowc.runtime.guard)
            ends = result.next_state is _CLOSED
            reason = (result.auto_close_reason or "closed") if ends else None
            broken = guard.observe(env, new_state, ends, reason)
            if broken:
                env = attrs.evolve(env, event_data={**env.event_data, PROPERTY_KEY: broken})
        if self._offer_fold is not None:
            self._offer_fold(env, adapter, new_state, result)
        grouped = self._later is not None and ch.lease is not None
        try:
            if grouped:

                def refused(err: WalError, sender: str = env.sender_id) -> None:
                    # as a refused append: the properties read nothing of this turn
                    if guard is not None:
                        guard.undo(broken)
                    self._stopped_by_store(ch, sender, err)

                self._append_later(
                    ch, env, lambda: self._accepted(ch, env, result, broken), failed=refused
                )
            else:
                self._append(ch, env)
        except WalError as err:  # refused, or the renewal before a grouped one (nothing queued)
            if guard is not None:
                guard.undo(broken)
            raise ProtocolError(str(err)) from err
        ch.state = new_state
        if env.event_type == EV_TEXT or env.event_type == EV_PACKET:  # a substantive turn
            ch.recent.append(env)
            ch.turn_started = time.monotonic()
            if ch.fired:
                ch.fired.clear()
        if not grouped:
            self._accepted(ch, env, result, broken)
        return env

    def _accepted(
        self,
        ch: Channel,
        env: Envelope,
        result: AdapterResult,
        broken: list[dict[str, Any]] | None = None,
    ) -> None:
        """``env`` is in the WAL: deliver it, then close the run or schedule its next turn."""
        self._deliver(ch, env)
        if result.next_state is _CLOSED:
            try:
                self._close(ch, result.auto_close_reason or "closed", snapshot=True, later=True)
            except WalError as err:  # the turn is in; the close is written on resume
                ch.error = str(err)
                ch.done.set()
        elif broken and ch.guard is not None and ch.guard.stop:
            # --on-violation stop: the run ends after this turn
            try:
                self._close(ch, stop_reason(broken[0]["property"]), snapshot=True, later=True)
            except WalError as err:
                ch.error = str(err)
                ch.done.set()
        elif (env.event_type == EV_TEXT or env.event_type == EV_PACKET) and self._takers:
            self._schedule(ch, env)

    def _append_later(
        self,
        ch: Channel,
        env: Envelope,
        then: Callable[[], None],
        *,
        release: bool = False,
        failed: Callable[[WalError], None] | None = None,
    ) -> None:
        """Group commit (a store with ``append_later``): queue ``env`` for the store's next
        commit and run ``then`` (delivery, what follows) once it is committed, in order
        with the channel's other envelopes. The channel's state moves on at once, so the
        rest of the same turn is admitted after it; nothing is delivered before the
        commit. A refused or failed commit stops the run as a refused append does (a
        lost lease: :meth:`_lost`; then ``failed(error)``, by default the speaker's turn
        stalls with the error), and the run's later queued envelopes are refused with it
        (each follows the one before). ``release``: the lease is given back in the same
        commit (the run's close)."""
        assert self._later is not None
        self._renew_if_due(ch)
        cid = ch.channel_id
        self._committed.setdefault(cid, ch.last_id)
        fut = self._later(env, ch.lease, ch.last_id, release=release)
        ch.last_id = env.envelope_id
        self._pending[cid] = self._pending.get(cid, 0) + 1
        sender = env.sender_id

        def done(fut: asyncio.Future[None]) -> None:  # (no task per envelope: a callback)
            self._pending[cid] -= 1
            if fut.cancelled():  # the hub closed (close() cancels what it tracks)
                return
            err = fut.exception()
            if err is None:
                self._committed[cid] = env.envelope_id
                then()
                return
            ch.last_id = self._committed.get(cid, ch.last_id)
            if not isinstance(err, WalError):  # a bug in flowc (the writer's): the run's
                self.crash(cid, sender, err)  # driver raises it
                return
            if isinstance(err, LeaseError):
                self._lost(ch, err)
            if failed is not None:
                failed(err)
            else:
                self._stopped_by_store(ch, sender, err)

        fut.add_done_callback(done)
        self.track(fut)

    async def post(self, envelope: Envelope) -> Envelope:
        """Admit ``envelope`` (see :meth:`admit`); the awaitable form of the API."""
        return self.admit(envelope)

    # leases ---------------------------------------------------------------------

    def _hold(self, ch: Channel, lease: Any) -> None:
        ch.lease = lease
        ch.renew_at = time.monotonic() + self.lease_seconds / 3
        if self._beat is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return  # no loop: appends renew the lease themselves
            self._schedule_beat(loop)

    def _schedule_beat(self, loop: asyncio.AbstractEventLoop) -> None:
        """The next heartbeat, a third of a lease from now."""
        self._beat_due = loop.time() + self.lease_seconds / 3
        self._beat = loop.call_at(self._beat_due, self._heartbeat)

    def _renew_if_due(self, ch: Channel) -> None:
        """Renew the channel's lease when a third of it is spent."""
        lease = ch.lease
        if lease is not None:
            now = time.monotonic()
            if now >= ch.renew_at:
                try:
                    ch.lease = self.store.renew(lease, self.lease_seconds)
                except LeaseError as err:
                    self._lost(ch, err)
                    raise
                ch.renew_at = now + self.lease_seconds / 3

    def _append(self, ch: Channel, env: Envelope) -> None:
        """Append with the channel's lease, renewing it first when a third of it is spent."""
        self._renew_if_due(ch)
        try:
            self.store.append(env, ch.lease, ch.last_id)
        except LeaseError as err:
            self._lost(ch, err)
            raise
        ch.last_id = env.envelope_id
        if self._committed:
            self._committed[ch.channel_id] = env.envelope_id

    def _lost(self, ch: Channel, err: LeaseError) -> None:
        """Another hub has the channel now: this hub stops running it (the channel
        keeps its old lease, so the store refuses any later append from here too)."""
        ch.error = str(err)
        ch.renew_at = float("inf")  # nothing left to renew
        if ch.timer is not None:
            ch.timer.cancel()
            ch.timer = None
        ch.done.set()

    def _heartbeat(self) -> None:
        """Renew the leases of the open channels: a beat every third of a lease renews
        each lease not renewed in the last sixth (an append renews a lease a third old
        on its own), so no lease goes more than half its length without a renewal,
        and a process stalled for less than half a lease keeps its runs. (Renewing only
        the leases a third old left a lease an append had just renewed to the beat after
        next: two thirds, and a stall of a third lost it.) A beat that runs late by more
        than a sixth of a lease says so: the process was stalled (a blocked event loop,
        starved of CPU) and its leases came that much nearer to their end."""
        self._beat = None
        held = False
        now = time.monotonic()
        loop = asyncio.get_running_loop()
        sixth = self.lease_seconds / 6
        late = loop.time() - self._beat_due if self._beat_due is not None else 0.0
        if late > sixth:
            log.warning(
                "the lease heartbeat ran %.2f s late (this process was stalled; leases last %g s)",
                late,
                self.lease_seconds,
            )
        for ch in self._channels.values():
            if ch.lease is None or not ch.is_open or ch.renew_at == float("inf"):
                continue
            if now >= ch.renew_at - sixth:
                try:
                    ch.lease = self.store.renew(ch.lease, self.lease_seconds)
                    ch.renew_at = now + self.lease_seconds / 3
                except LeaseError as err:
                    log.warning("%s", err)
                    self._lost(ch, err)
                    continue
                except WalError as err:  # the store failed: try again at the next beat
                    log.warning("run %s: cannot renew its lease (%s)", ch.channel_id, err)
            held = True
        if held:
            self._schedule_beat(loop)
        else:
            self._beat_due = None

    def _release(self, ch: Channel) -> None:
        lease, ch.lease = ch.lease, None
        if lease is not None:
            try:
                self.store.release(lease)
            except WalError as err:  # it expires by itself
                log.debug("%s", err)

    def _deliver(self, ch: Channel, env: Envelope) -> None:
        clients = self._clients
        outbox = self._outbox
        audience = env.audience
        if audience is None:  # a broadcast: every client of the channel, in its order
            if ch.reach_of != self._attached:
                ch.reach = tuple(c for c in map(clients.get, ch.order) if c is not None)
                ch.reach_of = self._attached
            reach = ch.reach
            if not self._delivering and not outbox:
                # nothing queued before it: straight to each client (a delivery that
                # admits another envelope queues it, and it is delivered after this)
                self._delivering = True
                done = 0
                try:
                    for member in reach:
                        member.deliver(env)
                        done += 1
                    while outbox:
                        queued, item = outbox.popleft()
                        queued.deliver(item)
                except BaseException:
                    # as if queued: the clients not reached yet get it first, next time
                    outbox.extendleft((m, env) for m in reversed(reach[done + 1 :]))
                    raise
                finally:
                    self._delivering = False
                return
            for member in reach:
                outbox.append((member, env))
        else:
            for pid in ch.order:
                client = clients.get(pid)
                if client is not None and (pid in audience or pid == env.sender_id):
                    outbox.append((client, env))
        if self._delivering:
            return
        self._delivering = True
        try:
            while outbox:
                client, item = outbox.popleft()
                client.deliver(item)
        finally:
            self._delivering = False

    def stopping(self) -> bool:
        """Whether the task driving the runs (:attr:`driver`, when one is set) is being
        cancelled: no further turn is started or posted, the turn in hand is the last."""
        driver = self.driver
        return driver is not None and driver.cancelling() > 0

    def _schedule(self, ch: Channel, trigger: Envelope) -> None:
        if not self._takers or self.stopping():
            return
        nxt = ch.expected_next()
        if nxt is None:
            return
        client = self._clients.get(nxt)
        take_turn = getattr(client, "take_turn", None)
        if take_turn is None:
            return
        task = asyncio.get_running_loop().create_task(take_turn(ch, trigger))
        self.track(task)
        cid = ch.channel_id
        self._inflight[cid] = task

        def done(t: asyncio.Task[Any]) -> None:
            if self._inflight.get(cid) is t:
                del self._inflight[cid]
            err = None if t.cancelled() else t.exception()
            if isinstance(err, WalError):
                # a turn that failed outside the agent's own call (the store): the run
                # stops with the error instead of waiting for ever
                self._stopped_by_store(self.channel(cid), nxt, err)
            elif isinstance(err, ProtocolError):  # refused, or a plugin raised as it routed
                self.fail(cid, nxt, err)
            elif err is not None:  # anything else there is a bug in flowc
                self.crash(cid, nxt, err)

        task.add_done_callback(done)

    def resume(self, channel_id: str) -> bool:
        """Give the pending turn of an open channel to its speaker; ``True`` if scheduled.

        The speaker's client must take turns (an agent); it gets the last turn of the
        channel as its trigger (an empty text envelope before the first turn). With no
        running event loop, or no such client yet, the turn is scheduled as soon as
        both exist (when :meth:`attach` registers the speaker). A human's turn cannot
        be scheduled: whoever drives the human sends it.
        """
        ch = self.channel(channel_id)
        nxt = ch.expected_next()
        if nxt is None or channel_id in self._inflight:
            return False
        client = self._clients.get(nxt)
        if client is None or getattr(client, "take_turn", None) is None:
            if client is None:
                self._awaiting.setdefault(nxt, set()).add(channel_id)
            return False
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._awaiting.setdefault(nxt, set()).add(channel_id)
            return False
        trigger = (
            ch.recent[-1]
            if ch.recent
            else Envelope(channel_id, nxt, None, EV_TEXT, {}, envelope_id="", created_at=_now())
        )
        self._schedule(ch, trigger)
        return True

    def stall(self, channel_id: str, agent_id: str, error: str | None = None) -> None:
        """A scheduled speaker produced nothing: the run stops without closing."""
        ch = self.channel(channel_id)
        ch.stalled_on = agent_id
        ch.error = error
        ch.done.set()

    def _stopped_by_store(self, ch: Channel, agent_id: str, err: WalError) -> None:
        """The store refused or failed ``agent_id``'s turn: the run stops as a stall does.
        When the store was unavailable (:class:`StoreUnavailable`: the database went
        away, restarted, was busy) or the lease is lost, the run did not stall: nothing of
        it waits for anyone but the store, so no stall is recorded for it
        (:meth:`record_stall`), and once its lease is given back or expires any worker
        takes it again. A refusal trying again would meet again (a value the database
        refuses) is a stall, recorded, so that workers do not run the turn for ever."""
        ch.store_failed = isinstance(err, (StoreUnavailable, LeaseError))
        self.stall(ch.channel_id, agent_id, str(err))

    def crash(self, channel_id: str, agent_id: str, err: BaseException) -> None:
        """An unexpected exception (a bug in flowc, not in the agent's own call) stopped
        ``agent_id``'s turn: the run stops as a stall does, instead of waiting for ever,
        and :attr:`failure` keeps the first such exception for the run's driver to raise."""
        if self.failure is None:
            self.failure = err
        self.stall(channel_id, agent_id, f"{type(err).__name__}: {err}")

    def fail(
        self, channel_id: str, agent_id: str, err: BaseException, *, by_agent: bool = False
    ) -> None:
        """``agent_id``'s turn failed with ``err`` (its agent raised, or a plugin's code did
        while the turn was routed): the run stops without closing, as a stall, with the
        error and the team's file and line (:mod:`flowc.runtime.failures`), and the failure
        is recorded in the WAL (``flowc.turn.failed``, with the traceback), so that
        ``flowc log`` shows it too. A turn this hub's store failed or refused is no failure
        of the team's code: :meth:`_stopped_by_store`. ``by_agent``: ``err`` came out of
        the agent's own call, whatever it is (an agent's own database error is its
        failure, not this hub's store's)."""
        ch = self.channel(channel_id)
        if not by_agent:
            store_err = err if isinstance(err, WalError) else err.__cause__
            if isinstance(store_err, WalError):
                # the store: nothing of the team's code to record
                self._stopped_by_store(ch, agent_id, store_err)
                return
            if isinstance(err, ProtocolError) and err.__cause__ is None:
                # flowc's own refusal (a contract, an unknown speaker): said as a stall
                # is, nothing of the team's code to record
                self.stall(channel_id, agent_id, str(err))
                return
        failure = failure_of(err)
        if ch.is_open:
            data = {
                "agent_id": agent_id,
                "turn": getattr(ch.state, "turn_count", 0) + 1,
                **failure.to_json(),
            }
            env = Envelope(
                channel_id,
                HUB_ID,
                None,
                EV_TURN_FAILED,
                data,
                envelope_id=self._stamp_id(),
                created_at=_now(),
            )
            try:
                self._append(ch, env)
            except WalError as store_err:  # the run stops all the same; the error is said
                log.warning("run %s: cannot record the failed turn (%s)", channel_id, store_err)
        ch.failure = failure
        self.stall(channel_id, agent_id, failure.error)

    def record_stall(self, channel_id: str) -> bool:
        """Write in the WAL that the open run ``channel_id`` stalled (``flowc.run.stalled``:
        the speaker it waits for and why), with the run's lease, before it is given back:
        workers leave a run whose last record this is (:mod:`flowc.runtime.worker`).
        ``False`` when the run did not stall (it closed, is still running, or the store
        stopped it: :meth:`_stopped_by_store`). Raises :class:`WalError` when the store
        refuses it (a lost lease, a failed store)."""
        ch = self.channel(channel_id)
        if not ch.is_open or ch.stalled_on is None or ch.store_failed:
            return False
        env = Envelope(
            channel_id,
            HUB_ID,
            None,
            EV_RUN_STALLED,
            {"agent_id": ch.stalled_on, "error": ch.error},
            envelope_id=self._stamp_id(),
            created_at=_now(),
        )
        self._append(ch, env)
        return True

    def close_channel(self, channel_id: str, reason: str) -> None:
        """Close an open channel by hand (writes ``EV_CHANNEL_CLOSED``)."""
        ch = self.channel(channel_id)
        if ch.is_open:
            self._close(ch, reason, snapshot=True)

    def _close(self, ch: Channel, reason: str, *, snapshot: bool, later: bool = False) -> None:
        """Write the close and end the run; ``later`` (after a turn, under group commit):
        the close and the lease's release are one commit, and the run ends once it is
        done."""
        data: dict[str, Any] = {"reason": reason}
        snap = getattr(ch.adapter, "snapshot", None)
        if snapshot and snap is not None:
            data["state"] = snap(ch.state)
        closed = Envelope(
            ch.channel_id,
            HUB_ID,
            None,
            EV_CHANNEL_CLOSED,
            data,
            envelope_id=self._stamp_id(),
            created_at=_now(),
        )
        if later and self._later is not None and ch.lease is not None:
            if ch.timer is not None:  # nothing is due from a speaker any more
                ch.timer.cancel()
                ch.timer = None

            def closed_in(err: WalError) -> None:  # the turn is in; the close on resume
                ch.error = str(err)
                ch.done.set()

            def done() -> None:
                ch.lease = None  # given back by the same commit
                self._closed(ch, reason, closed)

            self._append_later(ch, closed, done, release=True, failed=closed_in)
            return
        self._append(ch, closed)
        self._release(ch)
        self._closed(ch, reason, closed)

    def _closed(self, ch: Channel, reason: str, closed: Envelope) -> None:
        ch.status = ChannelState.CLOSED
        ch.close_reason = reason
        turn = self._inflight.get(ch.channel_id)  # (an agent's turn for a run now over)
        if turn is not None and turn is not asyncio.current_task():
            turn.cancel()
        if ch.timer is not None:
            ch.timer.cancel()
            ch.timer = None
        ch.done.set()
        self._deliver(ch, closed)

    # expectations (turn_within) -----------------------------------------------

    def _turn_limits(self, ch: Channel) -> list[tuple[int, float, Expectation]]:
        out = []
        for i, e in enumerate(ch.expectations):
            if e.name == "turn_within":
                out.append((i, float(e.params.get("seconds", 0)), e))
        return out

    def _arm(self, ch: Channel) -> None:
        if not ch.is_open or ch.timer is not None:
            return
        pending = [s for i, s, _ in self._turn_limits(ch) if i not in ch.fired]
        if not pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        delay = max(0.0, ch.turn_started + min(pending) - time.monotonic())
        ch.timer = loop.call_later(delay, self._check_expectations, ch)

    def _check_expectations(self, ch: Channel) -> None:
        ch.timer = None
        if not ch.is_open:
            return
        if self._pending.get(ch.channel_id):  # a turn is being committed: it comes first
            ch.timer = asyncio.get_running_loop().call_later(0.01, self._check_expectations, ch)
            return
        waited = time.monotonic() - ch.turn_started
        for i, seconds, exp in self._turn_limits(ch):
            if i in ch.fired or waited < seconds:
                continue
            ch.fired.add(i)
            who = ch.expected_next()
            info = {
                "name": exp.name,
                "on_violation": exp.on_violation,
                "seconds": seconds,
                "agent_id": who,
            }
            ch.violations.append(info)
            env = Envelope(
                ch.channel_id,
                HUB_ID,
                None,
                EV_EXPECTATION_VIOLATED,
                info,
                envelope_id=self._stamp_id(),
                created_at=_now(),
            )
            try:
                self._append(ch, env)
            except WalError as err:
                log.warning("run %s: %s", ch.channel_id, err)
                return
            self._deliver(ch, env)
            if exp.on_violation == "auto_close":
                log.warning(
                    "channel %s: %s did not take its turn within %ss; closing",
                    ch.channel_id,
                    who,
                    seconds,
                )
                self._close(ch, "turn_timeout", snapshot=True)
                return
            log.warning(
                "channel %s: %s has not taken its turn within %ss", ch.channel_id, who, seconds
            )
        self._arm(ch)

    # reading and recovery -------------------------------------------------------

    def read_wal(self, channel_id: str) -> list[Envelope]:
        """Every envelope of the channel, in admission order, from the store."""
        return list(self.store.read(channel_id))

    def _refold(
        self, envs: list[Envelope]
    ) -> tuple[Channel, str | None, dict[str, Any] | None, str | None, str | None]:
        """Re-fold a channel's WAL: (channel, the close reason the graph reached, the
        recorded close snapshot, where the WAL breaks admission's rules or ``None``, where
        a plugin failed on replay or ``None``).

        Every envelope is checked as admission checked it (a participant sends, a turn
        comes from the speaker the run waits for, nothing follows the close): a WAL that
        fails is one no single writer could have written, and the fold stops there; it
        stops too where a plugin's condition or target fails. Any other exception is a
        bug in flowc, not the WAL's: it propagates.
        """
        if not envs or envs[0].event_type != EV_CHANNEL_OPENED:
            raise ProtocolError("the WAL of this channel does not start with ag2.channel.opened")
        data = envs[0].event_data
        metadata = ChannelMetadata.from_dict(data["metadata"])  # (DamagedRecord: its path)
        try:
            adapter = self._adapter(metadata.type, metadata.version)
            exps = tuple(
                Expectation(e["name"], e["on_violation"], e.get("params", {}))
                for e in data.get("expectations") or ()
            )
            ch = Channel(
                metadata,
                adapter,
                adapter.initial_state(metadata),
                exps,
                members=frozenset(metadata.participant_ids),
                order=metadata.participant_ids,
            )
        except ProtocolError as err:  # (e.g. an adapter this hub does not have)
            raise ProtocolError(f"the channel cannot be rebuilt from its WAL: {err}") from None
        recorded_state = None
        reached: str | None = None
        broken: str | None = None
        failed: str | None = None
        turns = 0
        for i, env in enumerate(envs[1:], start=2):
            where = f"envelope {i} ({env.envelope_id})"
            if ch.status is _CLOSED:
                broken = f"{where} comes after the run closed"
                break
            if env.event_type == EV_CHANNEL_CLOSED:
                ch.status = ChannelState.CLOSED
                ch.close_reason = env.event_data.get("reason")
                recorded_state = env.event_data.get("state")
                continue
            if env.sender_id != HUB_ID and env.sender_id not in ch.members:
                broken = f"{where}: {env.sender_id!r} is not a participant"
                break
            substantive = env.event_type == EV_TEXT or env.event_type == EV_PACKET
            if reached is not None and substantive:
                broken = f"{where}: turn {turns + 1} comes after the graph ended the run"
                break
            try:
                adapter.validate_send(metadata, env, ch.state)
            except ProtocolError as err:
                what = f"turn {turns + 1}" if substantive else "an envelope"
                broken = (
                    f"{where}: {what} does not follow the one before ({err}); "
                    "two writers may have written this run"
                )
                break
            try:
                ch.state = adapter.fold(env, ch.state)
                result = adapter.on_accepted(metadata, env, ch.state)
            except ProtocolError as err:  # refused (a hand-off to no participant)
                broken = f"{where} cannot be folded ({type(err).__name__}: {err})"
                break
            except PluginFailed as err:  # (anything else: a bug in flowc, which propagates)
                failed = f"{where}: the plugin's {err.kind} `{err.name}` failed on replay: "
                failed += err.problem
                break
            if substantive:
                turns += 1
                ch.recent.append(env)
                if result.next_state is _CLOSED:
                    reached = result.auto_close_reason
        return ch, reached, recorded_state, broken, failed

    def _broken_link(self, channel_id: str) -> str | None:
        """Where an envelope of the WAL was written after another envelope than the one
        before it (two writers), or ``None``."""
        return broken_in(self.store.links(channel_id))

    async def hydrate(
        self,
        channel_ids: Iterable[str] | None = None,
        *,
        schedule: bool = True,
        read: dict[str, list[Envelope]] | None = None,
    ) -> list[str]:
        """Rebuild channels from the store by re-folding their WAL; returns the open ones.

        ``channel_ids`` picks the channels (default: every channel in the store). The
        pending turn of each open channel is then scheduled (see :meth:`resume`): at
        once if its speaker's client is registered, else as soon as it is. Clients are
        process objects: register them again (same agent ids) to continue a run.
        With ``schedule=False`` nothing is scheduled: the caller drives the run.
        ``read``: given, it gets the envelopes each channel was rebuilt from (for an open
        channel, the whole WAL once its lease was taken), by channel id, so that a
        caller that goes through them again need not read them again.
        """
        reopened: list[str] = []
        explicit = channel_ids is not None
        wanted = self.store.channel_ids() if channel_ids is None else list(channel_ids)
        for cid in wanted:
            if cid in self._channels:
                continue
            envs = list(self.store.read(cid))
            if not envs:
                raise ProtocolError(f"no channel {cid!r} in the WAL")
            folded = refolded(self._refold, envs, cid, explicit)
            if folded is None:  # flowc failed on this run (logged): on to the others
                continue
            ch, reached, _, broken, failed = folded
            if not ch.is_open or broken is not None or failed is not None:
                broken = self._broken_link(cid) or broken
            stop = stop_text(cid, broken, failed)
            if stop is not None:
                if explicit:
                    raise ProtocolError(stop)
                log.warning("%s; left as it is", stop)
                continue
            if ch.is_open:
                try:
                    lease = self.store.acquire(cid, self.holder, self.lease_seconds)
                except LeaseError as err:
                    if explicit:
                        raise
                    log.info("%s: left to it", err)
                    continue
                # what the WAL holds now (another writer may have appended before we
                # took the lease), and whether each envelope follows the one before
                links = self.store.links(cid)
                if len(links) != len(envs):
                    envs = list(self.store.read(cid))
                    folded = refolded(self._refold, envs, cid, explicit, (self.store, lease))
                    if folded is None:
                        continue
                    ch, reached, _, broken, failed = folded
                    links = self.store.links(cid)
                stop = stop_text(cid, broken_in(links) or broken, failed)
                if stop is not None:
                    self.store.release(lease)
                    if explicit:
                        raise ProtocolError(stop)
                    log.warning("%s; left as it is", stop)
                    continue
                self._hold(ch, lease)
            ch.last_id = envs[-1].envelope_id
            ch.turn_started = time.monotonic()
            self._channels[cid] = ch
            if read is not None:
                read[cid] = envs
            if ch.is_open and reached is not None:
                # the graph ended the run but its close was not written (the process
                # died, or the store failed, in between): write it now
                self._close(ch, reached, snapshot=True)
            if ch.is_open:
                ch.done = asyncio.Event()
                reopened.append(cid)
                self._arm(ch)
            else:
                self._release(ch)
                ch.done.set()
        if schedule:
            for cid in reopened:
                self.resume(cid)
        return reopened

    def replay(self, channel_id: str) -> ReplayResult:
        """Re-fold a stored channel and compare with what its close envelope recorded."""
        envs = list(self.store.read(channel_id))
        if not envs:
            raise ProtocolError(f"no channel {channel_id!r} in the WAL")
        ch, reached, recorded, broken, failed = self._refold(envs)
        broken = self._broken_link(channel_id) or broken
        snap = getattr(ch.adapter, "snapshot", None)
        replayed = snap(ch.state) if snap is not None and recorded is not None else None
        if ch.close_reason in ("turn_timeout",) or (ch.close_reason and reached is None):
            reached = ch.close_reason  # closed from outside the graph: nothing to re-derive
        found = (ch.state, reached, ch.close_reason, recorded, replayed, len(envs), broken, failed)
        return ReplayResult(channel_id, *found)

    def track(self, task: asyncio.Future[Any]) -> None:
        """Count ``task`` (a task, or a future something waits on) as work in flight until
        it ends: :meth:`idle` waits for it and :meth:`close` cancels it."""
        self._tasks.add(task)
        if self._quiet is not None:
            self._quiet.clear()
        task.add_done_callback(self._untrack)

    def _untrack(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if not self._tasks and self._quiet is not None:
            self._quiet.set()

    async def idle(self) -> None:
        """Wait until no agent turn is in flight.

        A task (or a group-committed envelope's future) leaves :attr:`_tasks` in its done
        callback, which the loop runs after it ends: this waits for that callback (an
        event it sets), so it never spins on tasks that are finished but not yet taken
        out (awaiting finished tasks does not give the loop a turn on Python 3.12+)."""
        while self._tasks:
            if self._quiet is None:
                self._quiet = asyncio.Event()
            self._quiet.clear()
            await self._quiet.wait()

    async def close(self, *, close_store: bool = True) -> None:
        """Cancel pending turns and timers and (unless told not to) close the store."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._beat is not None:
            self._beat.cancel()
            self._beat = None
            self._beat_due = None
        for ch in self._channels.values():
            if ch.timer is not None:
                ch.timer.cancel()
                ch.timer = None
            self._release(ch)
        if close_store:
            self.store.close()
