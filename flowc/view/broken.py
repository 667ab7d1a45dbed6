"""Whether a run's WAL is one a hub could have written, as ``flowc log`` and ``flowc
replay`` decide it (:func:`flowc.runtime.fork.refuse_broken`: a sender who is no
participant, a turn by a speaker the run was not waiting for, a record after the close,
two writers, ...), for the pages of ``flowc view``: a run that fails is listed
``damaged`` in ``flowc log``'s words, its stream ends with a ``damaged`` event where it
reaches the break, and no turn from the break on is explained.

The run is checked whole once per number of records (:class:`Verdicts`): a page that
polls a live run has it checked again only when records were added, and a question
about its first records (a stream's, a turn's) is answered from the check of the whole,
since each check stops at its first break.
"""

from __future__ import annotations

import re
import threading

import attrs

from flowc.runtime.adapters.base import ProtocolError
from flowc.runtime.envelope import EV_CHANNEL_OPENED
from flowc.runtime.failures import PluginFailed
from flowc.runtime.transcript import READ_ERRORS, run_error_text
from flowc.runtime.wal import WalStore

__all__ = ["Break", "Verdicts"]

_AT = re.compile(r"envelope ([0-9]+) ")


@attrs.frozen
class Break:
    """Where a run's WAL breaks: at its envelope ``at`` (1 is the opening), after
    ``turns`` turns; ``error`` is what ``flowc log RUN`` says of it (naming the run)."""

    at: int
    turns: int
    error: str


@attrs.frozen
class _Checked:
    """A run checked whole when it had ``rows`` records holding ``turns`` turns: its
    breaks, in the order :func:`~flowc.runtime.fork.refuse_broken` says them."""

    rows: int
    turns: int
    breaks: tuple[Break, ...]

    def upto_rows(self, rows: int) -> Break | None:
        return next((b for b in self.breaks if b.at <= rows), None)

    def upto_turn(self, n: int) -> Break | None:
        # (the records up to turn n hold the break when fewer than n turns come before it)
        return next((b for b in self.breaks if b.turns < n), None)


def _check(store: WalStore, run_id: str) -> _Checked | None:
    """The run checked whole as it is now; ``None`` when it cannot be read or re-folded
    at all (a damaged record, a plugin failing on it now: the stream and the list say so
    in their own words)."""
    from flowc.runtime.fork import wal_breaks

    try:
        records = list(store.read(run_id))
        if not records or records[0].event_type != EV_CHANNEL_OPENED:
            return None
        found, _ = wal_breaks(store, run_id, records)
    except (*READ_ERRORS, PluginFailed):
        return None
    turns_before = [0]
    for env in records:
        turns_before.append(turns_before[-1] + (1 if env.is_substantive else 0))
    breaks = []
    for where in found:
        at = _AT.match(where)
        if at is None:  # (each check says where: "envelope N (ID)...")
            raise AssertionError(f"a break that says no envelope: {where}")
        n = int(at.group(1))
        error = run_error_text(run_id, ProtocolError(f"the WAL is broken at {where}"))
        breaks.append(Break(n, turns_before[n - 1], error))
    return _Checked(len(records), turns_before[-1], tuple(breaks))


class Verdicts:
    """Each run's last check (:class:`_Checked`), one per run the server was asked about
    (a few numbers and at most two sentences: the runs list keeps a line per run too)."""

    def __init__(self) -> None:
        self.checked: dict[str, _Checked] = {}
        self.lock = threading.Lock()

    def _at_least(self, store: WalStore, run_id: str, rows: int, turns: int) -> _Checked | None:
        """The run's check of at least ``rows`` records and ``turns`` turns: the last one
        kept, else the run checked whole again."""
        with self.lock:
            found = self.checked.get(run_id)
        if found is not None and found.rows >= rows and found.turns >= turns:
            return found
        found = _check(store, run_id)
        if found is not None:
            with self.lock:
                kept = self.checked.get(run_id)
                if kept is None or kept.rows < found.rows:
                    self.checked[run_id] = found
        return found

    def upto_rows(self, store: WalStore, run_id: str, rows: int) -> Break | None:
        """Where the run's first ``rows`` records break (``None``: nowhere)."""
        found = self._at_least(store, run_id, rows, 0)
        return None if found is None else found.upto_rows(rows)

    def upto_turn(self, store: WalStore, run_id: str, n: int) -> Break | None:
        """Where the run's records up to its turn ``n`` break (``None``: nowhere), as
        ``flowc log RUN --why N`` refuses them."""
        found = self._at_least(store, run_id, 0, n)
        return None if found is None else found.upto_turn(n)
