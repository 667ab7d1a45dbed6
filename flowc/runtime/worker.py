"""Workers: processes that share one WAL and run its open runs (``flowc worker``).

A run is *submitted* by writing its opening record (:func:`submit_run`: the graph, the
labels, and the run's script in the label ``script_doc``) and nothing else. Any number
of :class:`Worker` processes, on one host or several, serve the same store:

- **claim**: a run is claimable while it is open and nobody holds a live lease on it;
  a worker claims it by taking its lease (the store makes that atomic: of two workers
  racing for a run one gets it, the other a :class:`~flowc.runtime.wal.LeaseError`).
  A store that claims several runs at once (PostgreSQL's
  :meth:`~flowc.runtime.pgstore.PgStore.claim`) fills all the room a worker has in one
  transaction, with the runs' WALs, passing over those another worker is claiming;
  the runs it leaves (held by a dead process on this host, locked by a take under way)
  are taken one by one on the first pass and on each poll (every ``poll_seconds``,
  however often the worker is woken). A claimed run this worker holds but drives not
  (a claim whose answer was lost) is claimed again.
- **spread**: a worker holds at most ``concurrency`` runs at once, waiting a little
  longer before each claim the more runs it already holds, so the least loaded worker
  wins the races for new runs (a store that claims several at once fills the first
  idle worker's room with a burst of new runs before the next worker gets any).
- **drive**: each claimed run gets its own :class:`~flowc.runtime.hub.Hub`, driven as
  ``flowc resume`` drives a run: re-folded from the WAL, each speaker's turns already
  there skipped, the pending turn given to its speaker. So taking a run over from a
  dead worker is the same step as starting it, and the run's WAL ends as a
  single-process run of the same script would.
- **heartbeat**: the hub renews each lease on a beat every third of its length
  (``$FLOWC_LEASE_SECONDS``, 30 s by default), never more than half of it apart.
- **takeover**: every half lease the worker looks for open runs whose lease expired
  (or whose holder is a dead process on this host) and claims them.
- **fencing**: a worker paused past its lease finds its next append (or renewal)
  refused by the store; it drops the run and goes on with the others.
- **wake-up**: with a store that notifies (PostgreSQL ``LISTEN``), a new run wakes the
  workers at once; otherwise (SQLite) they look every ``poll_seconds``.

Workers run the runs submitted for them only: a run ``flowc run`` started and left
open is its own process's (``flowc resume`` continues it).

A run that stops without closing (its script ran out, an agent failed) is *parked*:
left open, lease released, and not tried again until its WAL grows (someone answered it
with ``flowc resume``). Its hub writes the stall in the WAL before it gives the lease
back (``flowc.run.stalled``), so that every worker, one started later too, leaves a run
whose last record is its stall.

>>> import asyncio, flowc
>>> from flowc.runtime.script import parse_script
>>> from flowc.runtime.target import RunTarget
>>> from flowc.runtime.wal import MemoryStore
>>> flow = flowc.compile_flow("speaker a: human\\nspeaker b\\nsequence a -> b")
>>> store = MemoryStore()
>>> doc = {"kickoff": "hi", "script": {"b": ["hello"]}}
>>> run_id = asyncio.run(submit_run(store, RunTarget.from_compiled(flow), doc))
>>> async def serve() -> list[str]:
...     worker = Worker(store, poll_seconds=0.01)
...     task = asyncio.ensure_future(worker.serve())
...     while worker.stats.closed < 1:
...         await asyncio.sleep(0.01)
...     worker.stop()
...     await task
...     return [e.event_type.rsplit(".", 1)[1] for e in store.read(run_id)]
>>> asyncio.run(serve())
['opened', 'text', 'packet', 'closed']
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, Protocol

import attrs

from flowc.diagnostics import counted, internal_error_text
from flowc.runtime.adapters.base import ChannelMetadata, ProtocolError
from flowc.runtime.clients import Turn
from flowc.runtime.contracts import ENFORCE
from flowc.runtime.envelope import EV_CHANNEL_OPENED, EV_RUN_STALLED, Envelope
from flowc.runtime.groupcommit import GroupCommit
from flowc.runtime.hub import Hub
from flowc.runtime.pgstore import NOTIFY_FREE, NOTIFY_RUN, Claimed, PgListener
from flowc.runtime.script import SCRIPT_LABEL, Script, ScriptError, parse_script
from flowc.runtime.script_run import resume_script
from flowc.runtime.scripted_replies import check_script, refuse_bare_graph_keys
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import DAMAGED, plugin_hint
from flowc.runtime.wal import (
    LEASE_SECONDS,
    Lease,
    LeaseBusy,
    LeaseError,
    PassThroughStore,
    WalError,
    WalStore,
    holder_id,
    lease_seconds_from_env,
)

__all__ = [
    "SCRIPT_LABEL",
    "Notifier",
    "Worker",
    "WorkerStats",
    "check_submission",
    "run_script_of",
    "submit_run",
]

log = logging.getLogger("flowc.worker")

AgentFn = Callable[[Turn], Awaitable[Any]]


# ── submitting ────────────────────────────────────────────────────────────────


def _script_doc(doc: Any) -> Any:
    """The script document as JSON holds it (a YAML date or set is refused)."""
    try:
        return json.loads(json.dumps(doc, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise ScriptError(f"the script cannot be stored with the run ({err})") from None


def check_submission(target: RunTarget, script_doc: Any | None) -> tuple[RunTarget, Any]:
    """The checks :func:`submit_run` makes before it writes anything (:class:`ScriptError`):
    the target with the script's facts, and the script document as it is stored."""
    doc = _script_doc(script_doc if script_doc is not None else {})
    script = parse_script(doc)
    refuse_bare_graph_keys(target, script)  # (a new run: before the script applies)
    target = target.with_script_facts(script)
    check_script(target, script)
    return target, doc


async def submit_run(
    store: WalStore,
    target: RunTarget,
    script_doc: Any | None,
    *,
    labels: Mapping[str, Any] | None = None,
    channel_id: str | None = None,
) -> str:
    """Open a run for the workers: its opening record only (graph, labels and the
    script document), written with a lease taken and given back at once. The script is
    checked against the flow first (:class:`ScriptError`, nothing written). Returns the
    run id."""
    target, doc = check_submission(target, script_doc)
    hub = await Hub.open(store)
    try:
        ids = target.ids
        for name in target.speakers:
            hub.register_human(name, agent_id=ids[name])
        ch = hub.open_channel(
            ids[target.creator],
            "workflow",
            [ids[s] for s in target.speakers],
            target.knobs,
            labels={**target.labels(), **(labels or {}), SCRIPT_LABEL: doc},
            channel_id=channel_id,
        )
        return ch.channel_id
    finally:
        await hub.close(close_store=False)


def run_script_of(metadata: ChannelMetadata) -> Script:
    """The script a submitted run was given (an empty one when it has none)."""
    doc = metadata.labels.get(SCRIPT_LABEL)
    return parse_script(doc if doc is not None else {})


# ── wake-ups ──────────────────────────────────────────────────────────────────


class Notifier(Protocol):
    """Something that calls ``wake(run_id or None)`` when the store changes."""

    def start(self, wake: Callable[[str | None], None]) -> None: ...

    def stop(self) -> None: ...


class PgNotifier(PgListener):
    """PostgreSQL's notifications of new runs and released leases (``LISTEN`` on a
    connection of its own, in a thread): each calls ``wake(run id)``. A lost connection
    is opened again (meanwhile the worker's poll finds the runs), and said in one line
    naming the database without its password: the store's :class:`PgListener`."""

    def __init__(self, url: str) -> None:
        super().__init__(url, (NOTIFY_RUN, NOTIFY_FREE))


# ── the worker ────────────────────────────────────────────────────────────────


class _Fenced(PassThroughStore):
    """The worker's store as one run's hub sees it: remembers whether the store refused
    this hub's lease (the run was taken over) or failed (e.g. the database restarted);
    everything else passed through."""

    def __init__(self, store: WalStore, claimed: Claimed | None = None) -> None:
        super().__init__(store)
        self.refused: LeaseError | None = None
        self.failed: WalError | None = None
        #: the run as the worker's claim took it (its lease and its WAL then): what the
        #: hub reads and takes first, without asking the store again (until the first write)
        self.claimed = claimed
        #: whether the hub took the claimed lease (else the worker gives it back)
        self.handed = False

    def _claim_of(self, channel_id: str) -> Claimed | None:
        """The claim, while it still is run ``channel_id`` as it stands."""
        claimed = self.claimed
        return claimed if claimed is not None and claimed.lease.channel_id == channel_id else None

    def read(self, channel_id: str) -> Iterator[Envelope]:
        claimed = self._claim_of(channel_id)
        if claimed is None:
            return self.store.read(channel_id)
        if claimed.damaged is not None:  # (the claim read the run: a row is damaged)
            raise claimed.damaged
        return iter(claimed.envelopes)

    def links(self, channel_id: str) -> list[tuple[str, str | None]]:
        claimed = self._claim_of(channel_id)
        if claimed is None:
            return self.store.links(channel_id)
        if claimed.damaged is not None:
            raise claimed.damaged
        return list(claimed.links)

    def acquire(self, channel_id: str, holder: str, seconds: float = LEASE_SECONDS) -> Lease:
        claimed = self._claim_of(channel_id)
        if claimed is not None and not self.handed and claimed.lease.holder == holder:
            self.handed = True
            return claimed.lease
        return self.store.acquire(channel_id, holder, seconds)

    def _wrote(self) -> None:
        """The run's WAL grows from here on: what the claim read is no longer it."""
        self.claimed = None

    def append(
        self, envelope: Envelope, lease: Lease | None = None, follows: str | None = None
    ) -> None:
        self._wrote()
        try:
            self.store.append(envelope, lease, follows)
        except WalError as err:
            self._remember(err)
            raise

    def renew(self, lease: Lease, seconds: float = LEASE_SECONDS) -> Lease:
        try:
            return self.store.renew(lease, seconds)
        except WalError as err:
            self._remember(err)
            raise

    def _remember(self, err: BaseException | None) -> None:
        """Keep what the store said: a refused lease (:class:`LeaseError`, the run was
        taken over) in ``refused``, any other :class:`WalError` in ``failed``."""
        if isinstance(err, LeaseError):
            self.refused = err
        elif isinstance(err, WalError):
            self.failed = err

    def close(self) -> None:
        pass  # the worker's store outlives its runs


class _FencedGroup(_Fenced):
    """:class:`_Fenced` under group commit: the hub's turns go to the worker's
    :class:`~flowc.runtime.groupcommit.GroupCommit` (``append_later``), and a refused or
    failed commit is remembered as a refused or failed append is."""

    def __init__(self, store: WalStore, group: GroupCommit, claimed: Claimed | None = None) -> None:
        super().__init__(store, claimed)
        self.group = group

    def append_later(
        self,
        envelope: Envelope,
        lease: Lease | None = None,
        follows: str | None = None,
        *,
        release: bool = False,
    ) -> asyncio.Future[None]:
        self._wrote()
        fut = self.group.append_later(envelope, lease, follows, release=release)
        fut.add_done_callback(self._heard)
        return fut

    def _heard(self, fut: asyncio.Future[None]) -> None:
        self._remember(None if fut.cancelled() else fut.exception())


#: the fencing token of a run's first claim: :func:`submit_run`'s hub held token 1 (it
#: took the lease and gave it back at once); a claim with a higher token continues a run
#: that some other hub (a worker that died, stalled, stopped or parked it, a `flowc
#: resume`) held since
FIRST_CLAIM_TOKEN = 2


@attrs.define
class WorkerStats:
    """What a worker did: runs ``claimed`` (of which ``taken_over``: runs another hub
    had held since they were submitted), ``closed``, ``stalled`` (parked), ``lost`` (taken
    over from this worker: its writes were refused) and ``failed``."""

    claimed: int = 0
    taken_over: int = 0
    closed: int = 0
    stalled: int = 0
    lost: int = 0
    failed: int = 0
    #: of the failed runs, those a bug in flowc stopped (an internal error)
    internal: int = 0


Event = Callable[[str, str, str], None]  # (what, run id, detail)
ErrorHook = Callable[[str, BaseException], None]  # (run id, the exception)


class Worker:
    """Runs the open runs of ``store`` (see the module's docs).

    ``agents`` take the turns of the speakers they name (others follow each run's
    script); ``concurrency`` caps the runs held at once; ``notifier`` wakes the worker
    when the store changes; ``on_event(what, run_id, detail)`` hears ``claimed`` (detail
    ``taken over`` for a run another hub held since it was submitted), ``closed``,
    ``stalled``, ``lost`` (taken over from this worker: its writes were refused) and
    ``failed``. A run stopped by a bug in flowc (an exception nothing expected) is
    ``failed`` with an internal error's words, not tried again by this worker, and
    ``on_error(run_id, exception)`` hears the exception (logged when there is none);
    the worker serves on.
    ``contracts``: what happens to an agent's turn that breaks the flow's declarations
    (``"enforce"``: refused, the run is parked open on that speaker; ``"warn"``: let
    through with a warning; see :mod:`flowc.runtime.contracts`).
    ``group_commit``: the runs' turns are committed together, many runs' in one
    transaction, each still before it is delivered (:mod:`flowc.runtime.groupcommit`);
    closed when :meth:`serve` returns. Without it each turn is its own commit.
    ``on_violation``: what a turn that breaks one of the flow's properties does
    (``"warn"``: marked on the turn; ``"stop"``: the run is also closed; see
    :mod:`flowc.runtime.guard`); a run that broke one is also ``violated``.
    """

    def __init__(
        self,
        store: WalStore,
        *,
        agents: Mapping[str, AgentFn] | None = None,
        concurrency: int = 8,
        notifier: Notifier | None = None,
        lease_seconds: float | None = None,
        poll_seconds: float | None = None,
        spread_seconds: float = 0.002,
        tag: str | None = None,
        on_event: Event | None = None,
        on_error: ErrorHook | None = None,
        contracts: str = ENFORCE,
        group_commit: GroupCommit | None = None,
        on_violation: str = "warn",
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.store = store
        self.agents = dict(agents or {})
        self.concurrency = concurrency
        self.notifier = notifier
        self.lease_seconds = lease_seconds or lease_seconds_from_env()
        #: how often to look for runs whose lease expired (and, with no notifier, new runs)
        self.poll_seconds = (
            poll_seconds
            if poll_seconds is not None
            else (
                self.lease_seconds / 2 if notifier is not None else min(0.5, self.lease_seconds / 2)
            )
        )
        self.spread_seconds = spread_seconds
        self.tag = tag or f"worker-{os.urandom(3).hex()}"
        self.holder = holder_id(self.tag)
        self.on_event = on_event
        self.on_error = on_error
        self.contracts = contracts
        self.group_commit = group_commit
        self.on_violation = on_violation
        self.stats = WorkerStats()
        self._active: dict[str, asyncio.Task[None]] = {}
        self._done: set[str] = set()
        #: the runs of ``_done`` that are still open (damaged, a bad script, a bug in
        #: flowc): what a claim must pass over (the store leaves closed and unlabelled
        #: runs out itself, so the skip list does not grow with every run closed)
        self._unrunnable: set[str] = set()
        #: runs that stopped without closing: (WAL length then, when to look again)
        self._parked: dict[str, tuple[int, float]] = {}
        #: runs not tried again before then (monotonic time): their take was refused
        #: while another process was in the middle of taking them (so the worker does
        #: not spin), or the store just failed them (:meth:`_back_off`)
        self._busy: dict[str, float] = {}
        #: runs the store failed (unavailable), by how many times in a row: each is left
        #: alone a while before it is tried again, twice as long after each failure
        self._store_failures: dict[str, int] = {}
        #: runs this worker found open and holds the lease of (not those found closed)
        self._claimed_runs: set[str] = set()
        #: every run this worker ever claimed (one it claims again is not taken over)
        self._ever_claimed: set[str] = set()
        self._stopping = False
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # control ------------------------------------------------------------------

    def stop(self) -> None:
        """Stop claiming; the runs in flight are interrupted between two turns and their
        leases released, so other workers take them over at once."""
        self._stopping = True
        if self._wake is not None:
            self._wake.set()

    def wake(self, run_id: str | None = None) -> None:
        """Look for claimable runs now (thread-safe; ``run_id``: the run that changed)."""
        loop, event = self._loop, self._wake
        if loop is None or event is None:
            return
        if run_id is not None and (run_id in self._active or run_id in self._done):
            return  # a turn of a run we drive or know closed: nothing to claim
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(event.set)

    @property
    def active(self) -> list[str]:
        return list(self._active)

    def _event(self, what: str, run_id: str, detail: str = "") -> None:
        if self.on_event is not None:
            self.on_event(what, run_id, detail)

    # the loop -----------------------------------------------------------------

    async def serve(self) -> None:
        """Claim and drive runs until :meth:`stop`; then release every lease held."""
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        if self.notifier is not None:
            self.notifier.start(self.wake)
        try:
            # a pass is a poll (it looks at every open run) at start, then once every
            # ``poll_seconds`` however often the worker is woken (a busy one is woken
            # by every run that ends or is submitted)
            polled_at: float | None = None
            while not self._stopping:
                self._wake.clear()
                now = time.monotonic()
                polled = polled_at is None or now - polled_at >= self.poll_seconds
                if polled:
                    polled_at = now
                try:
                    await self._claim_pass(polled)
                except WalError as err:  # the store is unreachable: try again later
                    log.warning("cannot look for runs: %s", err)
                if self._stopping:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.poll_seconds)
        finally:
            if self.notifier is not None:
                self.notifier.stop()
            tasks = list(self._active.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self.group_commit is not None:
                await self.group_commit.close()

    def _candidates(self) -> Iterator[str]:
        """Open runs nobody holds, oldest first, that this worker does not drive or know
        closed, and that did not stall (a stalled run's last record says so, whichever
        worker stalled it). A store that lists its open runs with their leases in one
        query (PostgreSQL's ``open_runs``, which leaves stalled runs out) answers at once;
        otherwise every run is looked at, and a stalled one found so is parked here."""
        open_runs = getattr(self.store, "open_runs", None)
        if open_runs is not None:
            listed: list[tuple[str, Lease | None]] = open_runs()
            for cid, lease in listed:
                if lease is None and cid not in self._done and cid not in self._active:
                    yield cid
            return
        for cid in self.store.channel_ids():
            if (
                cid not in self._done
                and cid not in self._active
                and self.store.lease_of(cid) is None
            ):
                if cid not in self._parked:
                    self._park_if_stalled(cid)
                yield cid

    def _park_if_stalled(self, cid: str) -> None:
        """Park the run here when its last record is its stall (another worker stalled
        it, or this one before it restarted): it is not claimed until its WAL grows."""
        envelopes = list(self.store.read(cid))
        if envelopes and envelopes[-1].event_type == EV_RUN_STALLED:
            self._parked[cid] = (len(envelopes), time.monotonic() + self.poll_seconds)

    def _still_parked(self, cid: str) -> bool:
        """A parked run is looked at again once per poll, and taken when its WAL grew."""
        parked = self._parked.get(cid)
        if parked is None:
            return False
        length, look_at = parked
        now = time.monotonic()
        if now < look_at:
            return True
        if len(self.store.links(cid)) == length:
            self._parked[cid] = (length, now + self.poll_seconds)
            return True
        del self._parked[cid]
        return False

    def _still_busy(self, cid: str) -> bool:
        """A run another process is taking right now is left alone for a third of a lease
        (that process gets it, or the server ends its session) and looked at again on a
        later pass; so is a run the store just failed (:meth:`_back_off`)."""
        until = self._busy.get(cid)
        if until is None:
            return False
        if time.monotonic() < until:
            return True
        del self._busy[cid]
        return False

    async def _claim_pass(self, polled: bool = True) -> None:
        """Claim runs while there is room. With a store that claims several runs at once
        (:meth:`_claim_many`), the runs it leaves (held by a dead process on this host,
        or locked by a take under way) are looked at one by one on a ``polled`` pass
        only (the first, then every ``poll_seconds``); otherwise every pass looks at
        every open run."""
        claim = getattr(self.store, "claim", None)
        if claim is not None:
            await self._claim_many(claim)
            if not polled or len(self._active) >= self.concurrency:
                return
        for cid in self._candidates():
            if self._stopping or len(self._active) >= self.concurrency:
                return
            if cid in self._active or self._still_parked(cid) or self._still_busy(cid):
                continue
            if self._active and self.spread_seconds:
                # the more runs this worker holds, the longer it lets others claim first
                await asyncio.sleep(self.spread_seconds * len(self._active))
                if self._stopping or cid in self._active or self.store.lease_of(cid) is not None:
                    continue
            self._active[cid] = asyncio.get_running_loop().create_task(self._drive(cid))
            await asyncio.sleep(0)

    async def _claim_many(self, claim: Callable[..., list[Claimed]]) -> None:
        """Claim as many runs as this worker has room for in one go, with a store that
        takes several runs' leases at once, each run another process is not taking
        (PostgreSQL's :meth:`~flowc.runtime.pgstore.PgStore.claim`): two workers claiming
        at once take different runs. The runs left to :meth:`_candidates` are those this
        takes not: held by a dead process on this host, or being taken right now."""
        if self._active and self.spread_seconds:
            # the more runs this worker holds, the longer it lets others claim first
            await asyncio.sleep(self.spread_seconds * len(self._active))
        room = self.concurrency - len(self._active)
        if self._stopping or room < 1:
            return
        skip = set(self._active) | self._unrunnable
        skip.update(cid for cid in list(self._parked) if self._still_parked(cid))
        skip.update(cid for cid in list(self._busy) if self._still_busy(cid))
        loop = asyncio.get_running_loop()
        for claimed in claim(self.holder, room, self.lease_seconds, skip=skip, label=SCRIPT_LABEL):
            cid = claimed.lease.channel_id
            self._active[cid] = loop.create_task(self._drive(cid, claimed))
        await asyncio.sleep(0)

    async def _drive(self, cid: str, claimed: Claimed | None = None) -> None:
        try:
            await self._drive_run(cid, claimed)
        except Exception as err:  # a bug in flowc: this run fails, the others go on
            self._internal_error(cid, err)
        finally:
            self._active.pop(cid, None)
            if self._wake is not None:
                self._wake.set()  # a free slot: claim the next run

    async def _drive_run(self, cid: str, claimed: Claimed | None = None) -> None:
        store = self.store
        fenced = (
            _Fenced(store, claimed)
            if self.group_commit is None
            else _FencedGroup(store, self.group_commit, claimed)
        )
        try:
            await self._drive_fenced(cid, fenced)
        finally:
            if claimed is not None and not fenced.handed:
                # the hub did not take the lease the claim took (the run was found
                # closed, or not a submitted run): given back at once
                with contextlib.suppress(WalError):
                    store.release(claimed.lease)

    async def _drive_fenced(self, cid: str, fenced: _Fenced) -> None:
        store = self.store
        try:
            opened = next(iter(fenced.read(cid)), None)
            if opened is None or opened.event_type != EV_CHANNEL_OPENED:
                raise ProtocolError("its WAL does not start with the run's opening")
            metadata = ChannelMetadata.from_dict(opened.event_data["metadata"])
            if SCRIPT_LABEL not in metadata.labels:
                # a run `flowc run` started (and left open): its own process, or
                # `flowc resume`, goes on with it; workers run submitted runs only
                self._done.add(cid)
                return
            script = run_script_of(metadata)
            result = await resume_script(
                fenced,
                cid,
                script,
                agents=self.agents,
                holder=self.holder,
                lease_seconds=self.lease_seconds,
                on_claim=lambda lease: self._claimed(cid, lease),
                contracts=self.contracts,
                record_stall=True,
                on_violation=self.on_violation,
                turns=False,  # what the worker reports needs no re-read of the run
            )
        except LeaseBusy:  # another process is taking it right now
            self._busy[cid] = time.monotonic() + self.lease_seconds / 3
            return
        except LeaseError:
            return  # another worker claimed it first
        except (*DAMAGED, ScriptError) as err:  # (anything else is a bug: an internal error)
            if getattr(err, "flowc_internal", False):
                raise  # a bug in flowc stopped the run (Hub.crash): an internal error
            self._done.add(cid)  # the run cannot be run (damaged, bad script): never again
            self._unrunnable.add(cid)
            self._failed(cid, f"{err}{plugin_hint(err)}")
            return
        except WalError as err:  # the store failed: once the lease expires, any worker
            self._failed(cid, err)  # (this one too) tries the run again
            self._back_off(cid)
            return
        finally:
            claimed = cid in self._claimed_runs
            self._claimed_runs.discard(cid)
        # (the properties a run broke are reported by the worker that drove it, as its
        # close is: not by one that found it closed, another worker having run it)
        if claimed and fenced.refused is None and result.property_violations:
            broken = result.property_violations
            self._event(
                "violated",
                cid,
                "; ".join(f"property {v['property']} on turn {v['turn']}" for v in broken),
            )
        if fenced.refused is not None:  # taken over: whatever the WAL holds is not ours
            self.stats.lost += 1
            self._event("lost", cid, str(fenced.refused))
        elif result.close_reason is not None:
            self._done.add(cid)
            self._store_failures.pop(cid, None)
            if claimed:  # (not a run found closed when its lease was taken)
                self.stats.closed += 1
                self._event(
                    "closed",
                    cid,
                    f"{json.dumps(result.close_reason)} after {counted(result.turn_count, 'turn')}",
                )
        elif fenced.failed is not None:
            self._failed(cid, fenced.failed)
            self._back_off(cid)
        elif not self._stopping:
            try:
                length = len(store.links(cid))
            except WalError as err:
                self._failed(cid, err)
                return
            self._parked[cid] = (length, time.monotonic() + self.poll_seconds)
            self.stats.stalled += 1
            self._event(
                "stalled",
                cid,
                f"on {result.stalled_on}" + (f": {result.error}" if result.error else ""),
            )

    #: the longest a run the store failed is left alone, in leases
    BACK_OFF_LEASES = 4

    def _back_off(self, cid: str) -> None:
        """The store failed run ``cid`` (it was given back, or its lease will expire):
        this worker leaves it alone a third of a lease, twice as long after each failure
        in a row, at most :attr:`BACK_OFF_LEASES` leases, so that a store failing for a
        while is not asked again and again, nor the run's agent called again for the
        same turn, each time. Other workers may take it meanwhile."""
        n = self._store_failures[cid] = self._store_failures.get(cid, 0) + 1
        wait = min(self.lease_seconds / 3 * 2 ** (n - 1), self.BACK_OFF_LEASES * self.lease_seconds)
        self._busy[cid] = time.monotonic() + wait

    def _failed(self, cid: str, err: BaseException | str) -> None:
        self.stats.failed += 1
        self._event("failed", cid, str(err))

    def _internal_error(self, cid: str, err: BaseException) -> None:
        """A bug in flowc stopped run ``cid`` (its lease is given back as the hub closes):
        it fails and this worker does not try it again."""
        self._done.add(cid)
        self._unrunnable.add(cid)
        self.stats.internal += 1
        self._failed(cid, internal_error_text(err))
        if self.on_error is not None:
            self.on_error(cid, err)
        else:
            log.error("run %s: %s", cid, internal_error_text(err), exc_info=err)

    def _claimed(self, cid: str, lease: Lease) -> None:
        self._claimed_runs.add(cid)
        self.stats.claimed += 1
        taken = lease.token > FIRST_CLAIM_TOKEN and cid not in self._ever_claimed
        self._ever_claimed.add(cid)
        if taken:
            self.stats.taken_over += 1
        self._event("claimed", cid, "taken over" if taken else "")
