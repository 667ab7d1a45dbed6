"""A stored run as the page of ``flowc view`` shows it: its summary, its diagram, and its
turns as events, read from the store a page at a time while another process writes it.

Nothing here keeps a run's turns: a :class:`TurnFeed` holds the fold's state (the
channel's context and whose turn it is), the row key it has read up to and the number
of turns so far; each :meth:`TurnFeed.poll` reads at most :data:`PAGE_ROWS` envelopes
and hands back the turns they finish. So the memory a feed takes does not grow with the
length of the run it follows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from flowc.compiler.pipeline import LoadedGraph
from flowc.compiler.render.diagram import (
    CAP,
    DEFAULT,
    HUMAN,
    RULE,
    SPEAKER,
    START,
    TERMINAL,
    TOOL,
    Diagram,
    Edge,
    build_stored_diagram,
)
from flowc.diagnostics import counted
from flowc.dsl.formatter import format_name
from flowc.runtime.adapters.base import ChannelMetadata, ProtocolError
from flowc.runtime.adapters.workflow import WorkflowState
from flowc.runtime.envelope import EV_CHANNEL_OPENED, EV_RUN_STALLED, Envelope
from flowc.runtime.fork import FORKED_FROM, ForkedFrom, forked_from
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import (
    CLOSED,
    OPEN,
    PROPERTY_KEY,
    RUNNING,
    STALLED,
    SilentRound,
    TranscriptFolder,
    TurnRecord,
    stored_run_status,
)
from flowc.runtime.wal import WalStore, describe_holder

__all__ = [
    "PAGE_ROWS",
    "ListedRun",
    "RunView",
    "TurnFeed",
    "read_page",
    "run_summary",
    "status_of",
]

#: the envelopes one poll of a feed reads at most
PAGE_ROWS = 500

#: the statuses of a run, as the runs list shows them, are ``flowc log``'s
#: (:func:`flowc.runtime.transcript.stored_run_status`)
STATUSES = (CLOSED, RUNNING, STALLED, OPEN)


def read_page(
    store: WalStore, channel_id: str, after: int, limit: int
) -> list[tuple[int, Envelope]]:
    """The run's envelopes past row key ``after``, at most ``limit``, with their keys.
    The SQLite and PostgreSQL stores read just those rows; any other store (in memory)
    numbers its envelopes 1, 2, ... and is sliced."""
    paged: Callable[[str, int, int], list[tuple[int, Envelope]]] | None = getattr(
        store, "read_page", None
    )
    if paged is not None:
        return paged(channel_id, after, limit)
    out: list[tuple[int, Envelope]] = []
    for i, env in enumerate(store.read(channel_id), start=1):
        if i > after:
            out.append((i, env))
            if len(out) >= limit:
                break
    return out


def opening(store: WalStore, channel_id: str) -> ChannelMetadata | None:
    """The metadata of the run's opening envelope (``None``: the channel is no run)."""
    first = _opening(store, channel_id)
    return None if first is None else ChannelMetadata.from_dict(first.event_data["metadata"])


def _opening(store: WalStore, channel_id: str) -> Envelope | None:
    """The run's first record, its opening (``None``: no such run); a run whose first
    record is something else is damaged, as ``flowc log`` says (:class:`ProtocolError`)."""
    first = read_page(store, channel_id, 0, 1)
    if not first:
        return None
    if first[0][1].event_type != EV_CHANNEL_OPENED:
        raise ProtocolError("the WAL of this run does not start with its opening")
    return first[0][1]


@attrs.frozen
class RunView:
    """What the page needs once per run: its target (names, rules) and its diagram, with
    the speakers' and endings' node ids and the edges by decision, looked up once."""

    run_id: str
    metadata: ChannelMetadata
    target: RunTarget
    diagram: Diagram
    #: speaker name -> its node id
    speakers: dict[str, str] = attrs.field(factory=dict)
    #: close reason -> the node a run closed for it ends on (``None``: chosen at run time)
    endings: dict[str | None, str] = attrs.field(factory=dict)
    #: (kind, rule index or tool label, source node id) -> the edges drawn for it
    edges: dict[tuple[str, object, str], tuple[Edge, ...]] = attrs.field(factory=dict)
    #: the run and turn this run was forked from (``flowc fork``), or ``None``
    forked_from: ForkedFrom | None = None

    @classmethod
    def load(cls, store: WalStore, run_id: str) -> RunView | None:
        """The run's view (``None`` when the store has no such run); raises
        :class:`~flowc.runtime.adapters.base.ProtocolError` when its stored graph is not valid."""
        first = _opening(store, run_id)
        if first is None:
            return None
        metadata = ChannelMetadata.from_dict(first.event_data["metadata"])
        target = RunTarget.from_metadata(metadata)
        # the drawing `flowc render` makes of the run's stored graph, with the humans and
        # the tools' hand-offs and finishes the run recorded besides it
        diagram = build_stored_diagram(
            LoadedGraph(target.graph, dict(target.context_vars), True),
            names=target.names,
            humans=target.humans,
            tools=target.tools,
        )
        by_key = {n.key: n.id for n in diagram.nodes if n.kind in (SPEAKER, HUMAN)}
        speakers = {name: by_key[agent] for name, agent in target.ids.items() if agent in by_key}
        endings: dict[str | None, str] = {}
        for node in diagram.nodes:
            if node.kind == CAP:
                endings.setdefault("max_turns", node.id)
            elif node.kind == TERMINAL:
                reason = None if node.title == "terminate" else _reason(node.title)
                endings.setdefault(reason, node.id)
        edges: dict[tuple[str, object, str], list[Edge]] = {}
        for edge in diagram.edges:
            what: object = edge.rule if edge.kind == RULE else edge.label[0] if edge.label else None
            edges.setdefault((edge.kind, what, edge.source), []).append(edge)
            if diagram.node(edge.source).kind not in (SPEAKER, HUMAN):  # a note's edges
                edges.setdefault((edge.kind, what, ""), []).append(edge)
        return cls(
            run_id,
            metadata,
            target,
            diagram,
            speakers,
            endings,
            {k: tuple(v) for k, v in edges.items()},
            forked_from(first),
        )

    @property
    def flow(self) -> str:
        return str(self.metadata.labels.get("flow") or self.metadata.type)

    def speaker_node(self, name: str | None) -> str | None:
        """The node id of speaker ``name``."""
        return None if name is None else self.speakers.get(name)

    def ending_node(self, reason: str | None) -> str | None:
        """The node a run closed for ``reason`` ends on: ``max_turns``' cap, the terminal
        of that reason, else the terminal whose reason is chosen at run time."""
        found = self.endings.get(reason)
        return found if found is not None else self.endings.get(None)

    def start_node(self) -> str | None:
        return next((n.id for n in self.diagram.nodes if n.kind == START), None)

    def edge_of(self, record: TurnRecord) -> str | None:
        """The diagram's edge of the turn's decision: the rule (or the default) that chose
        the next speaker, or the tool that handed off or finished, from the turn's speaker
        to that speaker (or to the ending, when the turn closed the run); ``None`` when no
        edge draws it (a tool the flow does not declare, the turn cap)."""
        by = record.decided_by
        source = self.speaker_node(record.speaker) or ""
        keys: list[tuple[str, object]]
        if isinstance(by, int):
            keys = [(RULE, by)]
        elif by == "default":
            keys = [(DEFAULT, "otherwise")]
        elif by in ("handoff", "finish"):
            keys = [(TOOL, f"tool {format_name(str(c.get('name')))}") for c in record.tool_calls]
        else:
            return None
        mine: list[Edge] = []
        for kind, what in keys:
            mine += self.edges.get((kind, what, source)) or self.edges.get((kind, what, "")) or ()
        if record.next_speaker is not None:
            target = self.speaker_node(record.next_speaker)
        else:
            target = self.ending_node(record.closes)
        exact = [e for e in mine if e.target == target]
        if exact:
            return exact[0].id
        return mine[0].id if len(mine) == 1 else None


def _reason(title: str) -> str | None:
    """The reason of a terminal node titled ``terminate "REASON"``."""
    import json

    try:
        reason = json.loads(title[len("terminate ") :])
    except ValueError:
        return None
    return reason if isinstance(reason, str) else None


class TurnFeed:
    """One run's turns as events, read on from where the last poll stopped.

    Each event is a dict (see :meth:`event`); ``n`` is the turn's number, which the
    server sends as the event's id, so a page that reconnects asks for the turns after
    the last one it has.
    """

    def __init__(self, view: RunView) -> None:
        self.view = view
        self.folder = TranscriptFolder()
        #: the row key read up to
        self.after = 0
        #: the records read so far (the opening is the first)
        self.rows = 0
        #: turns folded so far
        self.turns = 0
        #: the close reason, once the run closed
        self.closed: str | None = None
        #: the last envelope read is a stall record (``flowc.run.stalled``)
        self.stalled = False
        #: the speaker a stall was recorded on (the last envelope read, when it is one)
        self.stalled_on: str | None = None
        #: the names of the properties the run broke so far, in the order it broke them
        self.violated: list[str] = []
        #: the silent rounds after the last turn handed out (each goes with the next turn
        #: as its ``silent_before``; :attr:`silent_after` has them with those still waiting)
        self.silent: list[SilentRound] = []
        self._context: dict[str, Any] | None = None
        #: the first turn after this one carries the whole context (a page reconnecting
        #: after turn N may have missed the turn that last changed it); None: only the
        #: turns that change it do
        self.context_after: int | None = 0

    def poll(self, store: WalStore, limit: int = PAGE_ROWS) -> list[dict[str, Any]]:
        """The turns finished by the next ``limit`` envelopes at most (none when nothing
        new was committed)."""
        out: list[dict[str, Any]] = []
        folder = self.folder
        for key, env in read_page(store, self.view.run_id, self.after, limit):
            self.after = key
            self.rows += 1
            if env.event_type == EV_RUN_STALLED:
                who = env.event_data.get("agent_id")
                self.stalled_on = self.view.target.names.get(who, who) if who else None
                self.stalled = True
                continue
            self.stalled, self.stalled_on = False, None
            record = folder.feed(env)
            # the feed keeps no turn: each is handed out, then dropped
            folder.forget()
            if folder.silent:  # (and no silent round: each goes with the turn after it)
                self.silent += folder.silent
                folder.silent = []
            if record is not None:
                self.turns += 1
                self.violated += [str(v.get("property")) for v in record.violated]
                out.append(self.event(record, folder.state))
            if folder.close is not None and self.closed is None:
                self.closed = folder.close
                if out and out[-1]["closes"] is None:
                    # the turn that closed the run (its cap, max_turns): its node is the
                    # ending reached, as a finish's is, not the speaker who would be next
                    out[-1]["closes"] = folder.close
                    ending = self.view.endings.get(folder.close)
                    if ending is not None:
                        out[-1]["node"] = ending
        return out

    def drain(self, store: WalStore) -> None:
        """Read to the end of what is committed now, keeping no turn."""
        while True:
            before = self.after
            self.poll(store)
            if self.after == before:
                return

    @property
    def silent_after(self) -> list[dict[str, Any]]:
        """The silent rounds after the last turn read (the run stopped after them, or its
        next turn is not in yet), each as ``SilentRound.to_json`` has it."""
        return [r.to_json() for r in (*self.silent, *self.folder.waiting())]

    @property
    def next_speaker(self) -> str | None:
        state = self.folder.state
        if state is None or self.closed is not None:
            return None
        nxt = state.expected_next_speaker
        return None if nxt is None else self.view.target.names.get(nxt, nxt)

    def event(self, record: TurnRecord, state: WorkflowState | None) -> dict[str, Any]:
        """One turn as the page gets it: who spoke and what (text, tool calls, context
        changes), the rule that decided and its line, and the state after it (the
        whole context when the turn changed it, the next speaker, the turn count) with
        the diagram's node and edge for it."""
        view = self.view
        target = view.target
        by = record.decided_by
        context = dict(state.context_vars) if state is not None else {}
        changed = context != self._context
        self._context = context
        # the turn that closed the run is outlined on the ending it reached (the cap's for
        # max_turns, though the rules had chosen the next speaker), else on that speaker
        ending = None if record.closes is None else view.endings.get(record.closes)
        node = (
            ending
            if ending is not None
            else view.speaker_node(record.next_speaker)
            if record.next_speaker is not None
            else view.ending_node(record.closes)
        )
        event: dict[str, Any] = {
            "n": self.turns,
            "speaker": record.speaker,
            "kind": record.kind,
            "text": record.text,
            "tool_calls": [dict(c) for c in record.tool_calls],
            "context_set": dict(record.context_set),
            "context_delete": list(record.context_delete),
            "next_speaker": record.next_speaker,
            "decided_by": target.describe_decision(by),
            "rule": by + 1 if isinstance(by, int) else None,
            "rule_line": target.rule_line(by) if isinstance(by, int) else None,
            "decision": by if isinstance(by, str) else "rule" if isinstance(by, int) else None,
            "closes": record.closes,
            "turn_count": state.turn_count if state is not None else self.turns,
            "from_node": view.speaker_node(record.speaker),
            "node": node,
            "edge": view.edge_of(record),
        }
        first = self.context_after is not None and self.turns > self.context_after
        if changed or first:
            # (the context after this very turn: what the page lacks, not the state after
            # the whole page of rows read)
            event["context"] = context
        if first:
            self.context_after = None
        if self.silent:  # the silent rounds between the turn before and this one
            event["silent_before"] = [r.to_json() for r in self.silent]
            self.silent = []
        if record.warnings:
            event["warnings"] = [dict(w) for w in record.warnings]
        if record.violated:  # the properties the turn broke, each with its claim and why
            event[PROPERTY_KEY] = [dict(v) for v in record.violated]
        return event

    def initial(self) -> dict[str, Any]:
        """The state before the first turn: the initial context and the start speaker."""
        view = self.view
        return {
            "context": dict(view.target.context_vars),
            "next_speaker": view.target.start,
            "node": view.speaker_node(view.target.start),
            "start_node": view.start_node(),
        }


def status_of(store: WalStore, feed: TurnFeed) -> tuple[str, str | None]:
    """``(status, holder)`` of the run ``feed`` has read, as ``flowc log`` says it
    (:func:`~flowc.runtime.transcript.stored_run_status`): ``closed``, ``running`` (its holder
    described), ``stalled`` (the last envelope is a stall record) or ``open``."""
    return _status(store, feed.view.run_id, feed.closed, feed.stalled)


def _status(
    store: WalStore, run_id: str, closed: str | None, stalled: bool
) -> tuple[str, str | None]:
    """``(status, holder)`` of a run whose close reason and stall are known (a feed's
    or a :class:`ListedRun`'s): the lease, which comes and goes without a row, looked
    up now."""
    status, lease = stored_run_status(store, run_id, closed, stalled)
    return status, describe_holder(lease.holder) if lease is not None else None


@attrs.frozen
class ListedRun:
    """What the runs list shows of a run, as its feed had read it up to row key
    ``after``, without the feed (the run's view and the fold's state): the runs list
    keeps one for every run and lets most feeds go. Until the run commits a row past
    ``after`` it is all the list needs: only the status (a holder's lease comes and
    goes without a row) is looked up again (:meth:`summary`)."""

    run_id: str
    after: int
    flow: str
    created_at: str
    turns: int
    closed: str | None
    stalled: bool
    stalled_on: str | None
    next_speaker: str | None
    violated: tuple[str, ...]
    forked_from: ForkedFrom | None = None
    #: the records read up to :attr:`after` (the opening is the first)
    rows: int = 0

    @classmethod
    def of(cls, feed: TurnFeed) -> ListedRun:
        view = feed.view
        return cls(
            view.run_id,
            feed.after,
            view.flow,
            view.metadata.created_at,
            feed.turns,
            feed.closed,
            feed.stalled,
            feed.stalled_on,
            feed.next_speaker,
            tuple(feed.violated),
            view.forked_from,
            feed.rows,
        )

    def changed(self, store: WalStore) -> bool:
        """Whether the run committed a row past :attr:`after` (one row read, at most)."""
        return bool(read_page(store, self.run_id, self.after, 1))

    def summary(self, store: WalStore) -> dict[str, Any]:
        """The run's line of the runs list, its status looked up now."""
        status, holder = _status(store, self.run_id, self.closed, self.stalled)
        summary: dict[str, Any] = {
            "run_id": self.run_id,
            "flow": self.flow,
            "created_at": self.created_at,
            "turns": self.turns,
            "turns_text": counted(self.turns, "turn"),
            "status": status,
            "holder": holder,
            "close_reason": self.closed,
            "stalled_on": self.stalled_on if status == STALLED else None,
            "next_speaker": self.next_speaker,
        }
        if self.violated:  # the properties the run broke, by name (as `flowc log` lists them)
            summary[PROPERTY_KEY] = list(self.violated)
        if self.forked_from is not None:
            summary[FORKED_FROM] = self.forked_from.to_json()
        return summary


def run_summary(
    store: WalStore, run_id: str, feed: TurnFeed | None = None
) -> dict[str, Any] | None:
    """One run as the runs list shows it (``None`` for a channel that is no run): read
    through a feed, so a long run is never held whole. Given the ``feed`` that read the
    run before (its :attr:`TurnFeed.view` is the run's), only what was committed since is
    read."""
    if feed is None:
        view = RunView.load(store, run_id)
        if view is None:
            return None
        feed = TurnFeed(view)
    feed.drain(store)
    return ListedRun.of(feed).summary(store)
