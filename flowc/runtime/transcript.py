"""A run's result: the turns of a workflow channel re-folded from its WAL.

>>> transcript([])
([], None, None)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from flowc.runtime.adapters.workflow import WorkflowAdapter, WorkflowState
from flowc.runtime.clients import envelope_text
from flowc.runtime.envelope import (
    EV_CHANNEL_CLOSED,
    EV_CHANNEL_OPENED,
    EV_CONTEXT_SET,
    EV_PACKET,
    EV_TEXT,
    Envelope,
)

__all__ = ["RunResult", "TurnRecord", "transcript"]


# ── results ───────────────────────────────────────────────────────────────────


@attrs.frozen
class TurnRecord:
    """One turn of a run, with the routing decision its fold made."""

    number: int
    speaker: str
    agent_id: str
    kind: str  # "text" or "packet"
    routing: dict[str, Any] | None
    text: str
    context_set: dict[str, Any]
    context_delete: tuple[str, ...]
    next_speaker: str | None
    decided_by: int | str | None
    closes: str | None  # the close reason, when this turn closed the channel


@attrs.frozen
class RunResult:
    channel_id: str
    turns: tuple[TurnRecord, ...]
    close_reason: str | None
    context_vars: dict[str, Any]
    turn_count: int
    stalled_on: str | None = None
    error: str | None = None
    violations: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` shape of ``docs/runtime.md``."""
        out: dict[str, Any] = {
            "turns": [{"speaker": t.speaker, "kind": t.kind, "routing": t.routing}
                      for t in self.turns],
            "close_reason": self.close_reason,
            "context_vars": self.context_vars,
            "turn_count": self.turn_count,
        }
        if self.stalled_on is not None:
            out["stalled_on"] = self.stalled_on
        return out


def transcript(envelopes: Sequence[Envelope], adapter: WorkflowAdapter | None = None
               ) -> tuple[list[TurnRecord], str | None, WorkflowState | None]:
    """Re-fold a workflow channel's WAL into turn records, its close reason and state."""
    from flowc.runtime.adapters.base import ChannelMetadata

    if not envelopes or envelopes[0].event_type != EV_CHANNEL_OPENED:
        return [], None, None
    metadata = ChannelMetadata.from_dict(envelopes[0].event_data["metadata"])
    names = {p.agent_id: (p.name or p.agent_id) for p in metadata.participants}
    ad = adapter or WorkflowAdapter()
    state = ad.initial_state(metadata)
    records: list[TurnRecord] = []
    pending_set: dict[str, Any] = {}
    pending_delete: list[str] = []
    close: str | None = None
    for env in envelopes[1:]:
        if env.event_type == EV_CHANNEL_CLOSED:
            close = env.event_data.get("reason")
            if records and records[-1].closes is None:
                records[-1] = attrs.evolve(records[-1], closes=close)
            break
        state = ad.fold(env, state)
        if env.event_type == EV_CONTEXT_SET:
            for k in env.event_data.get("delete") or []:
                pending_set.pop(k, None)
                pending_delete.append(k)
            pending_set.update(env.event_data.get("set") or {})
            continue
        if env.event_type not in (EV_TEXT, EV_PACKET):
            continue
        routing = env.event_data.get("routing") if env.event_type == EV_PACKET else None
        if env.event_type == EV_PACKET:
            upd = env.event_data.get("context_updates") or {}
            for k in upd.get("delete") or []:
                pending_set.pop(k, None)
                pending_delete.append(k)
            pending_set.update(upd.get("set") or {})
        nxt = state.expected_next_speaker
        records.append(TurnRecord(
            len(records) + 1, names.get(env.sender_id, env.sender_id), env.sender_id,
            "packet" if env.event_type == EV_PACKET else "text", routing, envelope_text(env),
            pending_set, tuple(pending_delete), None if nxt is None else names.get(nxt, nxt),
            state.decided_by, None,
        ))
        pending_set, pending_delete = {}, []
    return records, close, state
