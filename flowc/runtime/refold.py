"""What re-folding a stored run gives (:meth:`flowc.runtime.hub.Hub.replay`), and where
the re-fold stops short: a WAL that no single writer could have written (``broken``),
or a plugin that does not decide on replay what it decided when the run was written
(``failed``). Any other exception while a run is re-folded is a bug in flowc: the hub
lets it propagate, and it is said as an internal error, not as damage to the run.

>>> broken_in([("a", None), ("b", "a"), ("c", "a")])
'envelope 3 (c): it was written after a, not after the envelope before it (b); two writers wrote this run'
>>> stop_text("wf-1", None, "envelope 2 (x): the plugin's target `pick` failed on replay: ...")
"run wf-1: cannot be re-folded: envelope 2 (x): the plugin's target `pick` failed on replay: ..."
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

__all__ = ["ReplayResult", "broken_in", "refolded", "refusal", "stop_text"]

log = logging.getLogger("flowc.runtime")
T = TypeVar("T")


@attrs.frozen
class ReplayResult:
    """What re-folding a stored channel gave, and whether it matches what was recorded."""

    channel_id: str
    state: Any
    close_reason: str | None
    recorded_close_reason: str | None
    recorded_state: dict[str, Any] | None
    replayed_state: dict[str, Any] | None
    envelopes: int
    #: where the WAL stops being a run the hub could have written (e.g. a turn by a
    #: speaker the run was not waiting for: two writers), or ``None``
    broken: str | None = None
    #: where a plugin's condition or target failed on replay (it does not decide now
    #: what it decided when the run was written): the re-fold stops there; or ``None``
    failed: str | None = None

    @property
    def matches(self) -> bool:
        return (
            self.broken is None
            and self.failed is None
            and self.close_reason == self.recorded_close_reason
            and self.recorded_state == self.replayed_state
        )


def broken_in(links: list[tuple[str, str | None]]) -> str | None:
    """Where an envelope of ``links`` (a WAL's ``(envelope id, follows)``) was written
    after another envelope than the one before it (two writers), or ``None``."""
    for i in range(1, len(links)):
        eid, follows = links[i]
        if follows is not None and follows != links[i - 1][0]:
            return (
                f"envelope {i + 1} ({eid}): it was written after {follows}, not "
                f"after the envelope before it ({links[i - 1][0]}); two writers "
                "wrote this run"
            )
    return None


def refusal(cid: str, failed: str) -> str:
    """The one wording of every command that refuses the run ``cid`` because a plugin
    fails on its records as they are re-folded (``failed``, :attr:`ReplayResult.failed`):
    ``flowc replay`` and ``flowc resume`` (``flowc fork`` and the view's fork say the same
    through :func:`~flowc.runtime.transcript.run_error_text`, which names the run)."""
    return f"run {cid}: cannot be re-folded: {failed}"


def stop_text(cid: str, broken: str | None, failed: str | None) -> str | None:
    """Why the run ``cid`` cannot be re-folded from its WAL, or ``None``: ``broken`` (the
    WAL's break) before ``failed`` (a plugin failing on replay: :func:`refusal`)."""
    if broken is not None:
        return f"run {cid}: the WAL is broken at {broken}"
    return None if failed is None else refusal(cid, failed)


def refolded(
    refold: Callable[[list[Any]], T],
    envs: list[Any],
    cid: str,
    explicit: bool,
    leased: tuple[Any, Any] | None = None,
) -> T | None:
    """``refold(envs)`` for the run ``cid``, in :meth:`~flowc.runtime.hub.Hub.hydrate`.
    What it raises is a bug in flowc (the WAL's and a plugin's failures are its answer):
    the lease ``leased`` (the store, the lease) is released; then, for runs the caller
    named (``explicit``), it propagates; for every run of the store, it is logged as an
    internal error with its traceback and ``None`` says to go on to the other runs."""
    try:
        return refold(envs)
    except Exception:
        if leased is not None:
            leased[0].release(leased[1])
        if explicit:
            raise
        log.exception("run %s: internal error while it was re-folded; left as it is", cid)
        return None
