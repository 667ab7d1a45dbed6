"""A run's result: the turns of a workflow channel folded from its WAL, all at once
(:func:`transcript`) or one envelope at a time as the run goes (:class:`TranscriptFolder`).

>>> transcript([])
([], None, None)
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from flowc.diagnostics import counted
from flowc.runtime.adapters.base import (
    AdapterResult,
    ChannelMetadata,
    ChannelState,
    DamagedRecord,
    ProtocolError,
)
from flowc.runtime.adapters.workflow import GraphError, WorkflowAdapter, WorkflowState
from flowc.runtime.contracts import CONTRACT_KEY
from flowc.runtime.envelope import (
    EV_CHANNEL_CLOSED,
    EV_CHANNEL_OPENED,
    EV_CONTEXT_SET,
    EV_PACKET,
    EV_TEXT,
    Envelope,
)
from flowc.runtime.failures import Failure, PluginFailed, tracebacks_wanted
from flowc.runtime.frozen import builder, writable_base
from flowc.runtime.wal import DamagedRow, Lease, WalError, WalStore

__all__ = [
    "DAMAGED",
    "READ_ERRORS",
    "RunResult",
    "SilentRound",
    "TranscriptFolder",
    "TurnRecord",
    "in_order",
    "plugin_hint",
    "read_error_text",
    "run_error_text",
    "stored_run_status",
    "transcript",
    "transcript_folder",
    "turn_json",
]

#: what reading or folding a damaged stored run raises: a row that is not an envelope of
#: the run or holds a value not of the type flowc writes (:class:`DamagedRow`, naming its
#: JSON path), a record or a graph the runtime refuses (:class:`ProtocolError`; a
#: :class:`GraphError` such as a custom condition no plugin loaded registers); a worker
#: gives such a run up
DAMAGED = (DamagedRow, ProtocolError)

#: what reading or folding a stored run raises when it cannot be read: :data:`DAMAGED`,
#: or the store failing (:class:`WalError`); every reader of runs (`flowc log`,
#: `replay`, `resume`, `fork`, `flowc view`) catches these for one run and goes on with
#: the others. Anything else (a ``KeyError``, ``TypeError``, ...) is a bug in flowc, an
#: internal error: the stored values are checked as they are read
#: (:mod:`flowc.runtime.stored`) and the checks raise :class:`ProtocolError`
READ_ERRORS = (WalError, ProtocolError)

#: said after a refused graph that names custom conditions or targets nothing registered
PLUGIN_HINT = (
    "a run whose flow has custom conditions or targets is read with the plugins that "
    "register them (--plugin MODULE_OR_FILE, or `plugins` under [tool.flowc])"
)


def plugin_hint(err: BaseException) -> str:
    """`` (PLUGIN_HINT)`` when ``err`` is a graph the runtime refused for a custom name
    nothing registered (no built-in name is close to it, nor is it a name of the other
    kind: then it reads as a misspelling, and its message says so), else ``""``.

    >>> from flowc.compiler.shape_problems import ShapeProblem
    >>> def refused(message: str) -> GraphError:
    ...     return GraphError([ShapeProblem("transitions[0].when.name", message)])
    >>> plugin_hint(refused("no condition registered as `long_text`")).startswith(" (a run")
    True
    >>> plugin_hint(refused(
    ...     "no condition registered as `from_speakr`; did you mean `from_speaker`?"))
    ''
    >>> plugin_hint(ValueError("no condition registered as `x`"))
    ''
    """
    if not isinstance(err, GraphError):
        return ""
    unregistered = ("no condition registered as `", "no target registered as `")
    for problem in err.problems:
        if problem.message.startswith(unregistered) and ";" not in problem.message:
            return f" ({PLUGIN_HINT})"
    return ""


def run_error_text(run_id: str, err: BaseException, db: str | None = None) -> str:
    """One of :data:`READ_ERRORS` reading the run ``run_id`` (of the database ``db``) in
    words, naming the run once: a damaged run as every command says it, ``run X is
    damaged: record N (event type), JSON path: what is wrong``
    (:func:`~flowc.runtime.adapters.base.damaged_text`), else ``run X: the error``; and
    a :class:`~flowc.runtime.failures.PluginFailed` (a plugin's condition or target that
    fails on the stored run now: the plugin's failure, not the run's damage), naming it."""
    where = "" if db is None else f"{db}: "
    if isinstance(err, PluginFailed):
        return (
            f"{where}run {run_id}: the plugin's {err.kind} `{err.name}` failed on it: {err.problem}"
        )
    if isinstance(err, DamagedRow):
        return where + err.in_run
    if isinstance(err, DamagedRecord):
        return where + err.in_run(run_id)
    return f"{where}run {run_id}: {read_error_text(err)}"


def read_error_text(err: BaseException) -> str:
    """One of :data:`READ_ERRORS` in words: a damaged row's error with its type, the
    store's or the protocol's as they are, and a graph that names an unregistered custom
    condition or target with what would read it (:func:`plugin_hint`)."""
    text = (
        str(err) if isinstance(err, (WalError, ProtocolError)) else f"{type(err).__name__}: {err}"
    )
    return text + plugin_hint(err)


#: where a turn's envelope records the properties it broke (:mod:`flowc.runtime.guard`),
#: and the name of that list in ``--json`` / ``--jsonl`` / ``log --json``
PROPERTY_KEY = "property_violations"

#: the states as plain constants: reading a member off the enum class
#: (``ChannelState.OPEN``) goes through ``EnumType.__getattr__`` on Python 3.11, about
#: 1.4 k instructions each, and the hot paths read them every turn
_CLOSED = ChannelState.CLOSED


# ── a run's status ────────────────────────────────────────────────────────────

#: the statuses of a stored run, as ``flowc log`` and ``flowc view`` list them
CLOSED, RUNNING, STALLED, OPEN = "closed", "running", "stalled", "open"
#: ... and of one they cannot read: a record flowc never writes (:data:`READ_ERRORS`),
#: or intact records that a plugin's condition or target fails on now
#: (:class:`~flowc.runtime.failures.PluginFailed`: no damage to the run)
DAMAGED_STATUS, PLUGIN_FAILED = "damaged", "plugin-failed"


def stored_run_status(
    store: WalStore, run_id: str, close: str | None, stalled: bool
) -> tuple[str, Lease | None]:
    """``(status, lease)`` of a stored run: ``closed`` once it closed; ``running`` while a
    holder has its lease (the lease given); ``stalled`` when its last envelope is a
    ``flowc.run.stalled`` record (``stalled``: a worker gave it back, and nobody takes it
    up until someone resumes it); else ``open`` (submitted and waiting for a worker, or
    left open by the process that ran it)."""
    if close is not None:
        return CLOSED, None
    lease = store.lease_of(run_id)
    if lease is not None:
        return RUNNING, lease
    return (STALLED if stalled else OPEN), None


# ── results ───────────────────────────────────────────────────────────────────


@attrs.frozen
@writable_base  # so that `_record` builds one the cheap way (flowc.runtime.frozen)
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
    #: the tool calls of the turn, in order: ``{"name": ..., "args": {...}}``
    tool_calls: tuple[dict[str, Any], ...] = ()
    #: how the turn broke the flow's declarations, let through under ``--contracts
    #: warn`` (each a :class:`~flowc.runtime.contracts.Breach` as JSON)
    warnings: tuple[dict[str, Any], ...] = ()
    #: the flow's properties this turn broke (each as :data:`PROPERTY_KEY` stores it:
    #: ``{"property", "claim", "turn", "why", "on_violation"}``, see
    #: :mod:`flowc.runtime.guard`)
    violated: tuple[dict[str, Any], ...] = ()


#: ``TurnRecord(...)`` built the cheap way (a run makes one record per turn): equal to,
#: and as frozen as, the one its ``__init__`` builds (:func:`flowc.runtime.frozen.builder`)
_record = builder(TurnRecord)


@attrs.frozen
class SilentRound:
    """Context writes of a speaker that no message of theirs carried: a silent round.

    In AG2's hub a speaker whose answer has no text and no routing posts no message (the
    run stalls on it), but the context its tools wrote is written. Such writes are no
    turn's: they are shown as a round of their own, after the turn they followed. So are
    writes that a message of someone else, a packet (whose writes ride on it) or any
    other record (a stall, a failure, the close) follows, and those still waiting at the
    end of the WAL. Each write is one round (a round writes once: a speaker silent twice
    in a row has two), unless its writer's text follows, whose turn they all are."""

    #: the turns before it: the round came after turn ``after`` (0: before the first)
    after: int
    speaker: str
    agent_id: str
    context_set: dict[str, Any]
    context_delete: tuple[str, ...]
    #: as :attr:`TurnRecord.warnings`: what the writes broke, let through with a warning
    warnings: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """``{"after_turn", "speaker", "context": {"set", "delete"}}`` (and ``warnings``)."""
        out: dict[str, Any] = {
            "after_turn": self.after,
            "speaker": self.speaker,
            "context": {"set": dict(self.context_set), "delete": list(self.context_delete)},
        }
        if self.warnings:
            out["warnings"] = [dict(w) for w in self.warnings]
        return out


Describe = Callable[[int | str | None], str]


def turn_json(record: TurnRecord, describe: Describe | None = None) -> dict[str, Any]:
    """One turn as ``--json`` / ``--jsonl`` / ``log --json`` write it.

    ``decided_by`` is what chose the next speaker in the words of the text transcript
    (``rule 3, line 14: when from drafter then reviewer``, ``otherwise ...``,
    ``handoff``, ``finish``) and ``rule`` the rule's number, or ``null``. A turn let
    through under ``--contracts warn`` has ``warnings`` besides, a turn that broke one of
    the flow's properties ``property_violations`` (:mod:`flowc.runtime.guard`).
    """
    by = record.decided_by
    out: dict[str, Any] = {
        "number": record.number,
        "speaker": record.speaker,
        "kind": record.kind,
        "text": record.text,
        "tool_calls": [dict(c) for c in record.tool_calls],
        "routing": record.routing,
        "context": {"set": record.context_set, "delete": list(record.context_delete)},
        "next_speaker": record.next_speaker,
        "decided_by": describe(by)
        if describe is not None
        else (None if by is None else str(by if not isinstance(by, int) else f"rule {by + 1}")),
        "rule": by + 1 if isinstance(by, int) else None,
        "closes": record.closes,
    }
    if record.warnings:
        out["warnings"] = [dict(w) for w in record.warnings]
    if record.violated:
        out[PROPERTY_KEY] = [dict(v) for v in record.violated]
    return out


@attrs.frozen
class RunResult:
    channel_id: str
    #: (shown as a count by ``repr``: asyncio formats the repr of a run's task result
    #: when ``asyncio.run`` restores its SIGINT handler, and 2,400 turns cost 30 ms)
    turns: tuple[TurnRecord, ...] = attrs.field(repr=lambda t: f"<{counted(len(t), 'turn')}>")
    close_reason: str | None
    context_vars: dict[str, Any]
    turn_count: int
    stalled_on: str | None = None
    error: str | None = None
    violations: tuple[dict[str, Any], ...] = ()
    #: the breaches of the flow's declarations that refused the turn the run stopped on
    refused: tuple[dict[str, Any], ...] = ()
    #: the exception that stopped the run, when a turn failed (its traceback is in the
    #: JSON only when asked for, see :func:`flowc.runtime.failures.tracebacks_wanted`)
    failure: Failure | None = attrs.field(default=None, repr=False)
    #: the speaker the run stalled on answered, but said nothing and routed nothing
    silent: bool = False
    #: the run's silent rounds, each where it happened (:class:`SilentRound`)
    silent_rounds: tuple[SilentRound, ...] = ()

    def to_json(self, describe: Describe | None = None) -> dict[str, Any]:
        """The ``--json`` shape of ``docs/runtime.md``: every turn whole (see
        :func:`turn_json`; ``describe`` names the rules), the close reason, context,
        turn count and the run id."""
        if describe is not None:  # a long run repeats a few decisions: name each once
            named: dict[int | str | None, str] = {}
            outer = describe

            def describe(by: int | str | None) -> str:
                text = named.get(by)
                if text is None:
                    text = named[by] = outer(by)
                return text

        out: dict[str, Any] = {
            "run_id": self.channel_id,
            "turns": [turn_json(t, describe) for t in self.turns],
            "close_reason": self.close_reason,
            "context_vars": self.context_vars,
            "turn_count": self.turn_count,
        }
        if self.stalled_on is not None:
            out["stalled_on"] = self.stalled_on
        if self.error:
            out["error"] = self.error
            if self.failure is not None and tracebacks_wanted():
                out["traceback"] = self.failure.traceback
        if self.refused:
            out["refused"] = [dict(b) for b in self.refused]
        if self.silent_rounds:
            out["silent_rounds"] = [r.to_json() for r in self.silent_rounds]
        broken = self.property_violations
        if broken:
            out[PROPERTY_KEY] = [dict(v) for v in broken]
        return out

    @property
    def property_violations(self) -> tuple[dict[str, Any], ...]:
        """The flow's properties the run broke, in the order of its turns."""
        return tuple(v for t in self.turns for v in t.violated)


# ── folding ───────────────────────────────────────────────────────────────────


class TranscriptFolder:
    """Turn records from a workflow channel's envelopes, fed one at a time in WAL order.

    :meth:`feed` returns the :class:`TurnRecord` of a text or packet envelope the
    moment it is folded, complete with its routing decision and, when the turn closes
    the channel, its close reason (the adapter's ``on_accepted`` says so before the
    close envelope is written). Anything before the channel's opening is ignored.
    """

    def __init__(self, adapter: WorkflowAdapter | None = None) -> None:
        self.adapter = adapter or WorkflowAdapter()
        self.metadata: ChannelMetadata | None = None
        self.state: WorkflowState | None = None
        #: the turn records folded since the last :meth:`forget` (all of them, without it)
        self.records: list[TurnRecord] = []
        #: the turns folded before ``records[0]`` (let go by :meth:`forget`)
        self.forgotten = 0
        self.close: str | None = None
        #: the silent rounds found so far, in order (:class:`SilentRound`; the writes
        #: still waiting for their writer's message are :meth:`pending`)
        self.silent: list[SilentRound] = []
        self._names: dict[str, str] = {}
        self._set: dict[str, Any] = {}
        self._delete: list[str] = []
        self._warnings: list[dict[str, Any]] = []
        #: who wrote the context writes waiting for the turn they belong to (``_set``,
        #: ``_delete``), or ``None``
        self._writer: str | None = None
        #: that writer's earlier writes, each a silent round of its own (a round writes
        #: once) unless that writer's text follows, which makes them all its turn's
        self._held: list[SilentRound] = []

    @property
    def channel_id(self) -> str | None:
        return self.metadata.channel_id if self.metadata is not None else None

    @property
    def turns(self) -> int:
        """The turns folded so far (those forgotten among them)."""
        return self.forgotten + len(self.records)

    def forget(self) -> None:
        """Let go of the turn records held: the folder goes on as before (it numbers the
        next turn after the ones forgotten), but keeps only the records folded from now
        on, so a reader that does not need the earlier turns does not hold them."""
        self.forgotten += len(self.records)
        self.records = []

    def copy(self, *, records: bool = True) -> TranscriptFolder:
        """A folder that goes on from where this one is, leaving this one as it is (a
        state is never changed once folded: only the lists being filled are copied).
        ``records=False``: the copy holds none of the turn records (as after
        :meth:`forget`), so its size does not grow with the turns folded before it."""
        other = _copy.copy(self)
        if records:
            other.records = list(self.records)
        else:
            other.records, other.forgotten = [], self.turns
        other._set = dict(self._set)
        other._delete = list(self._delete)
        other._warnings = list(self._warnings)
        other.silent = list(self.silent)
        other._held = list(self._held)
        return other

    def pending(self) -> SilentRound | None:
        """The context writes no message has carried yet, as the silent round they are if
        none comes (the run stopped after them), or ``None``. A reader at the end of a
        run's WAL shows them so; a turn of their writer that follows makes them its own."""
        writer = self._writer
        if writer is None:
            return None
        return SilentRound(
            self.turns,
            self._names.get(writer, writer),
            writer,
            self._set,
            tuple(self._delete),
            tuple(self._warnings),
        )

    def waiting(self) -> tuple[SilentRound, ...]:
        """The silent rounds the writes no message has carried yet are, if none comes:
        each write of their writer one round (:meth:`pending`, the last)."""
        last = self.pending()
        return (*self._held, last) if last is not None else ()

    def rounds(self) -> tuple[SilentRound, ...]:
        """Every silent round of the run read so far, the writes still waiting included."""
        return (*self.silent, *self.waiting())

    def _settle(self) -> None:
        """The waiting context writes are no turn's: they are silent rounds of their own."""
        self.silent.extend(self.waiting())
        self._set, self._delete, self._warnings, self._writer, self._held = {}, [], [], None, []

    def _hold(self) -> None:
        """Another write of the waiting writes' writer: those so far are a round of their
        own, unless that writer's text follows (:meth:`_carried`)."""
        last = self.pending()
        assert last is not None
        self._held.append(last)
        self._set, self._delete, self._warnings = {}, [], []

    def _carried(self) -> None:
        """The writer's text follows its writes: every one of them is that turn's."""
        groups = [*self._held, self.pending()]
        self._set, self._delete, self._warnings, self._held = {}, [], [], []
        for g in groups:
            if g is not None:
                self._write({"set": g.context_set, "delete": list(g.context_delete)})
                self._warnings.extend(g.warnings)

    def feed(
        self,
        env: Envelope,
        folded: WorkflowState | None = None,
        accepted: AdapterResult | None = None,
    ) -> TurnRecord | None:
        """The record of ``env`` if it is a turn. ``folded`` / ``accepted``: what
        folding ``env`` onto the current state and ``on_accepted`` give (for the opening
        envelope: the initial state), when the caller has them already (the hub that
        admitted it): nothing is folded or compiled again."""
        state = self.state
        if self.metadata is None or state is None:
            if env.event_type == EV_CHANNEL_OPENED:
                self.metadata = ChannelMetadata.from_dict(env.event_data["metadata"])
                self._names = {
                    p.agent_id: (p.name or p.agent_id) for p in self.metadata.participants
                }
                self.state = self.adapter.initial_state(self.metadata) if folded is None else folded
            return None
        if self.close is not None:
            return None
        et = env.event_type
        writer = self._writer
        if et == EV_CHANNEL_CLOSED:
            if writer is not None:
                self._settle()
            self.close = env.event_data.get("reason")
            if self.records and self.records[-1].closes is None:
                self.records[-1] = attrs.evolve(self.records[-1], closes=self.close)
            return None
        state = self.state = self.adapter.fold(env, state) if folded is None else folded
        data = env.event_data
        # context writes made before a message are its turn's only when they are a
        # human's, right before their text (as a human's turn is written); a packet
        # carries its own writes, so writes before it, like writes another message or
        # record follows, are a silent round (a speaker that answered with no text and
        # no routing, the run stalled, then was taken up again)
        if et == EV_TEXT:
            if writer is not None and writer != env.sender_id:
                self._settle()
            elif self._held:
                self._carried()
            kind, routing, text = "text", None, data.get("text", "")
        elif et == EV_PACKET:
            if writer is not None:
                self._settle()
            kind, routing, text = "packet", data.get("routing"), data.get("body", "")
            self._write(data.get("context_updates") or {})
        else:
            if et == EV_CONTEXT_SET:
                if writer is not None and writer != env.sender_id:
                    self._settle()
                elif writer is not None:
                    self._hold()
                self._writer = env.sender_id
                self._write(data)
                if CONTRACT_KEY in data:
                    self._warnings.extend(_warnings(data))
            elif writer is not None:
                self._settle()
            return None
        calls = data.get("tool_calls")
        result = (
            self.adapter.on_accepted(self.metadata, env, state) if accepted is None else accepted
        )
        closes = (result.auto_close_reason or "closed") if result.next_state is _CLOSED else None
        nxt = state.expected_next_speaker
        names = self._names
        sender = env.sender_id
        deleted = self._delete
        records = self.records
        warnings: tuple[dict[str, Any], ...] = ()
        if CONTRACT_KEY in data or self._warnings:
            warnings = (*self._warnings, *_warnings(data))
            self._warnings = []
        record = _record(
            self.forgotten + len(records) + 1,
            names.get(sender, sender),
            sender,
            kind,
            routing,
            text if isinstance(text, str) else "",  # as envelope_text reads it
            self._set,
            tuple(deleted) if deleted else (),
            None if nxt is None else names.get(nxt, nxt),
            state.decided_by,
            closes,
            tuple(c for c in calls if isinstance(c, dict)) if isinstance(calls, list) else (),
            warnings,
            _violated(data) if PROPERTY_KEY in data else (),
        )
        records.append(record)
        self._set = {}
        self._writer = None
        if deleted:
            self._delete = []
        return record

    def _write(self, data: dict[str, Any]) -> None:
        for k in data.get("delete") or []:
            self._set.pop(k, None)
            self._delete.append(k)
        self._set.update(data.get("set") or {})


def _warnings(data: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """The breaches a turn's envelope carries (:data:`CONTRACT_KEY`), as the WAL has them."""
    found = data.get(CONTRACT_KEY)
    return tuple(w for w in found if isinstance(w, dict)) if isinstance(found, list) else ()


def _violated(data: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """The properties a turn's envelope says it broke (:data:`PROPERTY_KEY`)."""
    found = data.get(PROPERTY_KEY)
    return tuple(v for v in found if isinstance(v, dict)) if isinstance(found, list) else ()


def in_order(
    records: Sequence[TurnRecord], rounds: Sequence[SilentRound]
) -> Iterator[TurnRecord | SilentRound]:
    """A run's turns and silent rounds in the order they happened: each round after the
    turn it followed (:attr:`SilentRound.after`), as every transcript shows them."""
    i = 0
    for record in records:
        while i < len(rounds) and rounds[i].after < record.number:
            yield rounds[i]
            i += 1
        yield record
    yield from rounds[i:]


def transcript_folder(
    envelopes: Sequence[Envelope], adapter: WorkflowAdapter | None = None
) -> TranscriptFolder:
    """A folder that folded a workflow channel's WAL up to its close: its turn records,
    close reason, state and silent rounds (:meth:`TranscriptFolder.rounds`)."""
    folder = TranscriptFolder(adapter)
    if not envelopes or envelopes[0].event_type != EV_CHANNEL_OPENED:
        return folder
    for env in envelopes:
        folder.feed(env)
        if folder.close is not None:
            break
    return folder


def transcript(
    envelopes: Sequence[Envelope], adapter: WorkflowAdapter | None = None
) -> tuple[list[TurnRecord], str | None, WorkflowState | None]:
    """Re-fold a workflow channel's WAL into turn records, its close reason and state."""
    folder = transcript_folder(envelopes, adapter)
    return folder.records, folder.close, folder.state
