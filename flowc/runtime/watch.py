"""Watching a run as it goes: each turn handed over the moment it is in the WAL.

A :class:`WatchedStore` wraps the run's WAL store. Every envelope the hub appends is
first written by the real store, then folded by a
:class:`~flowc.runtime.transcript.TranscriptFolder`; a finished turn goes to the
:class:`RunWatcher` at once (``flowc run`` prints it, ``--jsonl`` writes a line). A
watcher that raises is dropped: it can never refuse or undo an admission, and the run
goes on; once it is over, :func:`~flowc.runtime.script_run.run_script` raises
:class:`~flowc.runtime.script_run.WatchStopped` with the run's result and the watcher's
exception (:attr:`WatchedStore.failed`).

>>> from flowc.runtime.wal import MemoryStore
>>> class Show:
...     def opened(self, run_id: str) -> None: print("opened", run_id)
...     def turn(self, record: TurnRecord, state: object) -> None:
...         print(record.number, record.speaker, record.text, "->", record.next_speaker)
>>> import flowc
>>> from flowc.runtime.script_run import run_script_sync
>>> from flowc.runtime.script import parse_script
>>> from flowc.runtime.target import RunTarget
>>> flow = flowc.compile_flow("speaker a: human\\nspeaker b\\nsequence a -> b")
>>> script = parse_script({"kickoff": "hi", "script": {"b": ["hello"]}})
>>> _ = run_script_sync(RunTarget.from_compiled(flow), script, watch=Show(),
...                     channel_id="wf-demo")
opened wf-demo
1 a hi -> b
2 b hello -> None
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from flowc.runtime.adapters.base import AdapterResult
from flowc.runtime.adapters.workflow import WorkflowState
from flowc.runtime.envelope import (
    EV_CHANNEL_OPENED,
    EV_CONTEXT_SET,
    EV_PACKET,
    EV_TEXT,
    Envelope,
)
from flowc.runtime.transcript import SilentRound, TranscriptFolder, TurnRecord
from flowc.runtime.wal import Lease, PassThroughStore, WalStore

__all__ = ["OPENING_HOOK", "RunWatcher", "WatchedStore"]

#: the envelopes a fold changes the state with
_FOLDED = frozenset({EV_TEXT, EV_PACKET, EV_CONTEXT_SET})


class RunWatcher(Protocol):
    """What follows a run: its id once the channel is open, then every turn in order.

    A watcher with a false ``wants_turns`` attribute gets the id only: nothing is
    folded for it (``flowc run --json`` away from a terminal pays nothing per turn).
    """

    def opened(self, run_id: str) -> None:
        """The run's channel is open (``run_id`` is what ``flowc log`` / ``resume`` take)."""

    def turn(self, record: TurnRecord, state: WorkflowState | None) -> None:
        """A turn was accepted and is in the WAL; ``state`` is the channel after it."""


#: a watcher that has it is also given each silent round (a speaker's context writes
#: that no message of theirs carried) once the record after it shows it is one, before
#: the turn that follows it: ``silent(round)``
#: (:class:`~flowc.runtime.transcript.SilentRound`); the rounds the run stopped after are
#: in its result (``RunResult.silent_rounds``)
SILENT_HOOK = "silent"


#: a watcher that has it is also given the run's opening record, right before
#: ``opened``: ``opening(envelope)`` (``flowc resume`` and ``flowc fork`` read there
#: whether the run is a fork, and of which run, for their JSON)
OPENING_HOOK = "opening"


def _call(fn: Callable[[Envelope], None], arg: Envelope) -> Exception | None:
    try:
        fn(arg)
    except Exception as err:  # never let a watcher refuse an admitted envelope
        return err
    return None


class WatchedStore(PassThroughStore):
    """A :class:`~flowc.runtime.wal.WalStore` that shows one run's turns to a watcher."""

    def __init__(self, store: WalStore, watcher: RunWatcher) -> None:
        super().__init__(store)
        self.watcher = watcher
        self.folder = TranscriptFolder()
        self.turns = bool(getattr(watcher, "wants_turns", True))
        #: the watcher's ``silent`` (:data:`SILENT_HOOK`), if it has one
        self._show_silent: Callable[[SilentRound], object] | None = getattr(
            watcher, SILENT_HOOK, None
        )
        #: the exception that made the watcher stop, if any
        self.failed: Exception | None = None
        #: how many turns the watcher took (before it failed, if it did)
        self.shown = 0
        #: the hub's fold of the envelope it is about to append (see :meth:`offer_fold`)
        self._offered: tuple[Envelope, object, WorkflowState, AdapterResult | None] | None = None
        #: the hub adapter whose folds are the transcript's own (once checked)
        self._trusted: object = None
        #: the transcript missed a turn (a watcher without ``wants_turns`` keeps it only
        #: from the hub's folds): it is not the run's, re-fold the WAL instead
        self.partial = False

    def offer_fold(
        self,
        envelope: Envelope,
        adapter: object,
        state: WorkflowState,
        result: AdapterResult | None,
    ) -> None:
        """The hub folded ``envelope`` into ``state`` (and ``on_accepted`` gave ``result``;
        for the opening envelope: the channel's initial state) and is about to append
        it: when its adapter folds as the transcript's does (a plain
        :class:`WorkflowAdapter` with the same registry), the transcript takes that
        fold instead of folding the envelope a second time."""
        self._offered = (envelope, adapter, state, result)

    def _trust(self, adapter: object) -> bool:
        mine = self.folder.adapter
        if type(adapter) is type(mine) and getattr(adapter, "registry", None) is mine.registry:
            self._trusted = adapter
            return True
        return False

    def follow(self, envelopes: Iterable[Envelope]) -> None:
        """Show the turns already in a stored run (``flowc resume``) before new ones."""
        for env in envelopes:
            self._see(env)

    def _see(self, env: Envelope) -> None:
        if self.failed is not None:
            return
        folder = self.folder
        if folder.metadata is not None and env.channel_id != folder.metadata.channel_id:
            return  # another channel of the same hub
        offered = self._offered
        if offered is not None:
            self._offered = None
            if offered[0] is not env or not (
                offered[1] is self._trusted or self._trust(offered[1])
            ):
                offered = None
        if not self.turns:
            # no turn is shown: the transcript is kept only while the hub's folds
            # come with its envelopes (then the run's result needs no re-fold)
            if self.partial:
                return
            et = env.event_type
            if offered is None and et in _FOLDED:
                self.partial = True
                return
            try:
                folder.feed(env, *offered[2:]) if offered is not None else folder.feed(env)
            except Exception:  # never let the transcript refuse an admitted envelope
                self.partial = True
            if et == EV_CHANNEL_OPENED:
                self.failed = _call(self._opened, env)
            return
        try:
            found = len(folder.silent)
            if offered is not None:
                record = folder.feed(env, offered[2], offered[3])
            else:
                record = folder.feed(env)
            show = self._show_silent
            if show is not None:
                for silent in folder.silent[found:]:
                    show(silent)
            if env.event_type == EV_CHANNEL_OPENED and folder.metadata is not None:
                self._opened(env)
            elif record is not None:
                self.watcher.turn(record, folder.state)
                self.shown += 1
        except Exception as err:  # never let a watcher refuse an admitted envelope
            self.failed = err

    def _opened(self, opening: Envelope) -> None:
        hook = getattr(self.watcher, OPENING_HOOK, None)
        try:
            if hook is not None:
                hook(opening)
        finally:  # (the run is opened for the watcher whatever its hook did)
            self.watcher.opened(opening.channel_id)

    # the WalStore interface: the real store does the work (PassThroughStore), and the
    # watcher sees what was appended

    def append(
        self, envelope: Envelope, lease: Lease | None = None, follows: str | None = None
    ) -> None:
        self.store.append(envelope, lease, follows)
        self._see(envelope)
