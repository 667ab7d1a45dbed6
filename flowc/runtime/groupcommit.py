"""Group commit: the turns of many runs made durable by one commit (``flowc worker``).

A worker drives many runs in one event loop. Committing each turn alone costs one
durable commit (a log flush) per turn; :class:`GroupCommit` instead collects the appends
that the runs make while a commit is under way and writes them together, in ONE
transaction, through a store's ``append_batch`` (:meth:`PgStore.append_batch
<flowc.runtime.pgstore.PgStore.append_batch>`), on a connection and a thread of its own.

What holds:

- **committed before delivered**: :meth:`GroupCommit.append_later` returns a future that
  is done only once the envelope's transaction has committed (or was refused); the hub
  delivers the envelope, and lets the next speaker act, only then
  (:meth:`flowc.runtime.hub.Hub.admit`). A crash before the commit loses an envelope
  nobody has seen.
- **fencing per run**: each entry of a batch is checked against its run's lease and last
  envelope, as a lone append is; a run whose lease was lost has its entries refused
  (its future raises :class:`~flowc.runtime.wal.LeaseError`), its neighbours in the
  batch are written.
- **bounded**: a batch holds at most ``max_batch`` envelopes; the first envelope of a
  batch waits at most ``max_wait`` seconds for others (while a commit is under way, the
  next batch fills up anyway: the wait only matters when the writer is idle).

>>> GroupCommit.MAX_BATCH, GroupCommit.MAX_WAIT
(64, 0.0)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import sys
from collections import deque
from collections.abc import Sequence
from typing import Protocol

from flowc.runtime.envelope import Envelope
from flowc.runtime.wal import Lease, StoreUnavailable, WalError, unavailable

__all__ = ["BatchStore", "GroupCommit", "store_error"]

log = logging.getLogger("flowc.worker")


class BatchStore(Protocol):
    """A store that appends several runs' envelopes in one transaction."""

    def append_batch(
        self,
        entries: Sequence[tuple[Envelope, Lease | None, str | None]],
        releases: Sequence[Lease] = (),
    ) -> list[WalError | None]: ...

    def close(self) -> None: ...


def store_error(err: BaseException) -> bool:
    """``err`` is the database's failing (a :class:`WalError`, an ``OSError``, a
    ``psycopg.Error``), not a bug in flowc."""
    if isinstance(err, (WalError, OSError)):
        return True
    psycopg = sys.modules.get("psycopg")  # loaded when a PostgreSQL store is in use
    return psycopg is not None and isinstance(err, psycopg.Error)


def _as_wal_error(err: BaseException) -> WalError:
    """A database's error (not already a :class:`WalError`) as one:
    :class:`StoreUnavailable` when it says the database is unavailable for now
    (:func:`~flowc.runtime.wal.unavailable`), which trying again later may mend."""
    return (StoreUnavailable if unavailable(err) else WalError)(str(err))


_Entry = tuple[Envelope, Lease | None, str | None, bool, "asyncio.Future[None]"]


class GroupCommit:
    """Batches appends into one commit each (see the module's description).

    ``writer`` is the store the batches go to (a connection used by nothing else: the
    batches are written in a thread of their own while the event loop goes on);
    ``max_batch`` caps the envelopes of one commit; ``max_wait`` is how long the first
    envelope of a batch waits for others when no commit is under way.
    """

    #: the default cap on the envelopes of one commit
    MAX_BATCH = 64
    #: the default wait for more envelopes when the writer is idle (seconds)
    MAX_WAIT = 0.0
    #: rounds of the event loop a batch waits for turns that are ready to be admitted
    ROUNDS = 4

    def __init__(
        self,
        writer: BatchStore,
        *,
        max_batch: int = MAX_BATCH,
        max_wait: float = MAX_WAIT,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        if max_wait < 0:
            raise ValueError("max_wait must not be negative")
        self.writer = writer
        self.max_batch = max_batch
        self.max_wait = max_wait
        self._queue: deque[_Entry] = deque()
        self._flusher: asyncio.Task[None] | None = None
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="flowc-commit")
        self._closed = False
        #: commits made, and envelopes written or refused through them
        self.commits = 0
        self.envelopes = 0

    def append_later(
        self,
        envelope: Envelope,
        lease: Lease | None = None,
        follows: str | None = None,
        *,
        release: bool = False,
    ) -> asyncio.Future[None]:
        """Queue ``envelope`` for the next commit; the future is done once it is committed
        (its result ``None``) or refused (its exception: a :class:`WalError`, a
        :class:`~flowc.runtime.wal.LeaseError` when the run's lease was lost); when
        writing the batch raised anything else than the database's errors
        (:func:`store_error`), a bug in flowc, its exception is that exception, as it is.
        ``release``: ``lease`` is given back in the same commit, after the envelope (a
        run's close)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        if self._closed:
            fut.set_exception(WalError("the worker's writer is closed"))
            return fut
        self._queue.append((envelope, lease, follows, release and lease is not None, fut))
        if self._flusher is None:
            self._flusher = loop.create_task(self._flush())
        return fut

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._queue:
                # the turns ready to be taken join this batch: the runs whose envelopes
                # the last commit just delivered take their next turns within a few
                # rounds of the event loop (their agents' replies at hand, e.g. scripted)
                for _ in range(self.ROUNDS):
                    if len(self._queue) >= self.max_batch:
                        break
                    await asyncio.sleep(0)
                if self.max_wait and len(self._queue) < self.max_batch:
                    await asyncio.sleep(self.max_wait)
                batch = [
                    self._queue.popleft() for _ in range(min(self.max_batch, len(self._queue)))
                ]
                entries = [(env, lease, follows) for env, lease, follows, _, _ in batch]
                releases = [lease for _, lease, _, release, _ in batch if release and lease]
                results: list[BaseException | None]
                try:
                    written: list[WalError | None] = await asyncio.shield(
                        loop.run_in_executor(
                            self._thread, self.writer.append_batch, entries, releases
                        )
                    )
                    results = list(written)
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    # the database failed: every entry is refused with a WalError (its run
                    # stalls); anything else is a bug in flowc, which every entry's hub
                    # gets as it is (the run ends as an internal error, not as a stall)
                    failed: BaseException = (
                        (err if isinstance(err, WalError) else _as_wal_error(err))
                        if store_error(err)
                        else err
                    )
                    results = [failed] * len(batch)
                self.commits += 1
                self.envelopes += len(batch)
                for (*_, fut), result in zip(batch, results, strict=True):
                    if fut.done():  # its hub stopped waiting (it was cancelled)
                        continue
                    if result is None:
                        fut.set_result(None)
                    else:
                        fut.set_exception(result)
        finally:
            self._flusher = None
            if self._queue and not self._closed:  # (cancelled with entries left)
                self._flusher = loop.create_task(self._flush())

    async def close(self) -> None:
        """Write what is queued, then close the writer."""
        while self._flusher is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._flusher)
        self._closed = True
        for *_, fut in self._queue:
            if not fut.done():
                fut.set_exception(WalError("the worker's writer is closed"))
        self._queue.clear()
        await asyncio.get_running_loop().run_in_executor(self._thread, self.writer.close)
        self._thread.shutdown(wait=True)
