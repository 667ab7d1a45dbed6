"""A stored run from turn N: as a ``scenario`` block (``flowc log RUN --scenario-upto N``),
or as a new run of its own (``flowc fork RUN N``).

:func:`scenario_upto` writes, in the flow language's scenario syntax, the turns 1 to N
of a run as its WAL recorded them — each speaker's text, the tool it called (with the
declared alternative the call took, when the tool has several), a human's context
writes — with an ``expect`` line after each turn for where the run went, and at the
end the turn count and the context keys the turns changed. Pasted into the flow, the
block makes ``flowc test`` replay those turns and check that they route as the run
did.

:func:`fork_run` copies the run's records up to turn N into a new run of the same
database, linked to its parent (:func:`forked_from`); ``flowc fork`` then continues
the new run as ``flowc resume`` does.

>>> import asyncio, flowc
>>> from flowc.runtime.script import parse_script
>>> from flowc.runtime.script_run import run_script
>>> from flowc.runtime.target import RunTarget
>>> from flowc.runtime.wal import MemoryStore
>>> src = '''speaker user: human { sets ok }
... speaker bot { tool done finishes "solved" }
... when from user then bot
... when from bot then user'''
>>> target = RunTarget.from_compiled(flowc.compile_flow(src), source_text=src)
>>> store = MemoryStore()
>>> script = parse_script({"kickoff": "hi", "script": {"bot": ["hello", {"tool": "done"}],
...                                                    "user": [{"say": "yes", "set": {"ok": True}}]}})
>>> result = asyncio.run(run_script(target, script, store=store))
>>> print(scenario_upto(store.read(result.channel_id), 3, name="up to 3"), end="")
scenario "up to 3" {
  user: "hi"
  expect next bot
  bot: "hello"
  expect next user
  user sets ok = true: "yes"
  expect next bot
  expect turns 3
  expect context.ok == true
}
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from flowc.compiler.model import json_text
from flowc.compiler.tool_effects import (
    ToolEffectInfo,
    alternative_index,
    bare_alternative,
    same_effect,
)
from flowc.dsl.names import format_name, format_value
from flowc.escaping import one_line
from flowc.runtime.envelope import EV_CHANNEL_OPENED, EV_PACKET, EV_TEXT, FORKED_FROM, Envelope
from flowc.runtime.script import SCRIPT_LABEL, Script, ScriptError
from flowc.runtime.stores import LAST
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import SilentRound, TurnRecord
from flowc.runtime.transitions import TransitionRegistry
from flowc.runtime.wal import LEASE_SECONDS, WalError, WalStore, holder_id
from flowc.runtime.why import TurnOutOfRange, WhyError, fold_to_turn

__all__ = [
    "FORKED_FROM",
    "UNADDRESSABLE",
    "ForkError",
    "ForkedFrom",
    "check_fork_script",
    "check_turn",
    "fork_run",
    "forked_from",
    "records_upto",
    "refuse_broken",
    "scenario_upto",
    "unaddressable",
    "wal_breaks",
]


class ForkError(WhyError):
    """A turn of the run has no scenario line that reproduces it (the message says why)."""


def _text(text: str) -> str:
    return f": {format_value(text)}" if text else ""


def _writes(record: TurnRecord, *, nulls: bool) -> str | None:
    """``sets k = 1, j = null`` / ``clears k`` for a turn's context writes (``None``: none).
    With ``nulls``, clears beside sets are written as ``= null`` (a human's write)."""
    sets = [f"{format_name(k)} = {format_value(v)}" for k, v in record.context_set.items()]
    clears = list(record.context_delete)
    if sets and clears:
        if not nulls:
            return None
        sets += [f"{format_name(k)} = null" for k in clears]
    if sets:
        return "sets " + ", ".join(sets)
    if clears:
        return "clears " + ", ".join(format_name(k) for k in clears)
    return ""


def _effect(record: TurnRecord, names: dict[str, str]) -> ToolEffectInfo:
    routing = record.routing or {}
    handoff = routing.get("target") if routing.get("kind") == "handoff" else None
    finish = routing.get("reason") or "finished" if routing.get("kind") == "finish" else None
    return ToolEffectInfo(
        tuple(record.context_set.items()),
        tuple(record.context_delete),
        None if handoff is None else names.get(handoff, handoff),
        finish,
    )


def _turn_line(target: RunTarget, record: TurnRecord) -> str:
    who = format_name(record.speaker)
    where = f"turn {record.number} ({record.speaker})"
    if record.warnings:
        raise ForkError(
            f"{where} broke the flow's declarations and was let through with a warning: "
            "no scenario line does that"
        )
    if record.kind == "text" or record.speaker in target.humans:
        if record.tool_calls:
            raise ForkError(f"{where}: a text turn with tool calls has no scenario line")
        writes = _writes(record, nulls=True)
        return f"{who}{' ' + writes if writes else ''}{_text(record.text)}"
    calls = record.tool_calls
    effect = _effect(record, target.names)
    if len(calls) > 1:
        listed = ", ".join(format_name(str(c.get("name"))) for c in calls)
        raise ForkError(f"{where} called {len(calls)} tools ({listed}); a scenario line calls one")
    if not calls:
        if effect != ToolEffectInfo():
            raise ForkError(f"{where} routed or wrote context without a tool call")
        return f"{who}{_text(record.text)}"
    tool = str(calls[0].get("name"))
    args = calls[0].get("args") or {}
    declared = None if target.tools is None else target.tools.get((record.speaker, tool))
    if target.tools is not None and declared is None:
        # a bare step (a script's `handoff:`, `finish:` or `set:` without a tool)
        if effect.finish is not None:
            if effect.sets or effect.clears:
                raise ForkError(f"{where} wrote context and finished without a tool")
            return f"{who} finishes {format_value(effect.finish)}"
        if effect.handoff is not None:
            if effect.sets or effect.clears:
                raise ForkError(f"{where} wrote context and handed off without a tool")
            return f"{who} hands off to {format_name(effect.handoff)}{_text(record.text)}"
        writes = _writes(record, nulls=False)
        if not writes and (record.routing or {}).get("kind") == "text":
            # a helper the flow does not declare (a search tool), which did nothing the
            # flow can see (the contracts let it through only so): the turn is its text
            return f"{who}{_text(record.text)}"
        if not writes:
            raise ForkError(
                f"{where} called `{one_line(str(tool))}`, which the flow does not declare"
            )
        return f"{who} {writes}{_text(record.text)}"
    line = f"{who} calls {format_name(tool)}"
    if args:
        line += f" with {format_value(args)}"
    if declared:
        index = alternative_index(declared, effect, same_effect)
        if index is None:
            options = " | ".join(a.text() for a in declared)
            raise ForkError(
                f"{where}: its call of `{tool}` did {effect.text()}, which is none of what "
                f"the tool is declared to do ({options})"
            )
        if len(declared) > 1:
            line += " " + declared[index].text()
    elif target.tools is not None and effect != ToolEffectInfo():
        raise ForkError(
            f"{where}: `{tool}` is declared with no effects, but the call did {effect.text()}"
        )
    return line + _text(record.text)


def _silent_line(target: RunTarget, silent: SilentRound) -> str:
    """The scenario line of a silent round: a model speaker's call, with no text, of the
    tool whose declared alternative writes exactly what the round wrote (a bare step
    ``sets`` / ``clears`` for a bare JSON graph, which declares no tools). ``flowc test``
    takes it as the round it was: the writes land, no turn is taken, and the same
    speaker's next line is its next turn (as ``flowc resume`` gives it one)."""
    who = format_name(silent.speaker)
    where = f"the silent round of {silent.speaker} after turn {silent.after}"
    if silent.warnings:
        raise ForkError(
            f"{where} broke the flow's declarations and was let through with a warning: "
            "no scenario line does that"
        )
    if silent.speaker in target.humans:
        raise ForkError(f"{where}: a human's context writes with no text have no scenario line")
    effect = ToolEffectInfo(tuple(silent.context_set.items()), tuple(silent.context_delete))
    if target.tools is None:
        sets = [f"{format_name(k)} = {format_value(v)}" for k, v in silent.context_set.items()]
        if sets and not silent.context_delete:
            return f"{who} sets " + ", ".join(sets)
        if silent.context_delete and not sets:
            return f"{who} clears " + ", ".join(format_name(k) for k in silent.context_delete)
        raise ForkError(f"{where} both set and cleared context: a bare step does one of them")
    alts = {t: a for (s, t), a in target.tools.items() if s == silent.speaker}
    picked = bare_alternative(alts, effect)
    if picked is None:
        raise ForkError(
            f"{where} did {effect.text()}, which no single tool of {silent.speaker} is "
            "declared to do"
        )
    tool, index = picked
    line = f"{who} calls {format_name(tool)}"
    return line + (f" {alts[tool][index].text()}" if len(alts[tool]) > 1 else "")


def scenario_upto(
    envelopes: Iterable[Envelope],
    n: int,
    name: str | None = None,
    registry: TransitionRegistry | None = None,
) -> str:
    """The ``scenario`` block that reproduces turns 1 to ``n`` of a stored run
    (``envelopes``: ``store.read(run_id)``), titled ``name`` (default ``run ID up to
    turn N``). Raises :class:`~flowc.runtime.why.TurnOutOfRange` for a turn the run
    does not have and :class:`ForkError` for a turn no scenario line can write."""
    folder, _, _, _ = fold_to_turn(envelopes, n, registry)
    metadata, state = folder.metadata, folder.state
    assert metadata is not None and state is not None
    target = RunTarget.from_metadata(metadata)
    title = name if name is not None else f"run {metadata.channel_id} up to turn {n}"
    lines: list[str] = []
    rounds = list(folder.silent)  # (those after turn n are not settled yet: left out)
    for record in folder.records:
        while rounds and rounds[0].after < record.number:
            silent = rounds.pop(0)
            if silent.speaker != record.speaker:
                raise ForkError(
                    f"the context writes of {silent.speaker} after turn {silent.after} have "
                    f"no scenario line: the next turn is {record.speaker}'s, not theirs"
                )
            lines.append(_silent_line(target, silent))
            lines.append(f"expect next {format_name(silent.speaker)}")
        lines.append(_turn_line(target, record))
        if record.closes is not None:
            lines.append(f"expect terminate {format_value(record.closes)}")
        else:
            lines.append(f"expect next {format_name(record.next_speaker or '')}")
    lines.append(f"expect turns {n}")
    initial: dict[str, Any] = dict(target.context_vars)
    final = state.context_vars
    for key in sorted({*initial, *final}):
        if key in final and (key not in initial or not _same(initial[key], final[key])):
            lines.append(f"expect context.{format_name(key)} == {format_value(final[key])}")
        elif key not in final:
            lines.append(f"expect context.{format_name(key)} == null")
    body = "".join(f"  {line}\n" for line in lines)
    return f"scenario {format_value(title)} {{\n{body}}}\n"


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


# ── a new run from turn N ────────────────────────────────────────────────────


@attrs.frozen
class ForkedFrom:
    """Where a forked run came from: its parent run and the parent's last turn it copied
    (0: only the opening)."""

    run_id: str
    turn: int

    def text(self) -> str:
        return f"forked from {self.run_id} at turn {self.turn}"

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "turn": self.turn}


def forked_from(opening: Envelope) -> ForkedFrom | None:
    """The parent of the run whose opening record is ``opening`` (``None``: not a fork,
    or a link that is not a run id and a turn number, which is ignored)."""
    link = opening.event_data.get(FORKED_FROM)
    if not isinstance(link, Mapping):
        return None
    run_id, turn = link.get("run_id"), link.get("turn")
    if not isinstance(run_id, str) or type(turn) is not int or turn < 0:
        return None
    return ForkedFrom(run_id, turn)


def cut_short(stored: Iterable[Envelope]) -> tuple[ForkedFrom, int] | None:
    """For a fork whose copy stopped before its last turn (the process that forked it
    was killed mid-copy), where it came from and how many of its turns were copied;
    ``None`` for a run that is no fork or holds every turn it names. Such a run is not
    the state it was forked from: ``flowc resume`` refuses it and ``flowc log`` says so.
    (A copy still going on looks the same until it ends; its lease is held meanwhile.)"""
    fork: ForkedFrom | None = None
    turns = 0
    for i, env in enumerate(stored):
        if i == 0:
            fork = forked_from(env)
            if fork is None:
                return None
        elif env.event_type == EV_TEXT or env.event_type == EV_PACKET:
            turns += 1
            if fork is not None and turns >= fork.turn:
                return None
    if fork is None or turns >= fork.turn:
        return None
    return fork, turns


def check_fork_script(target: RunTarget, script: Script, n: int) -> None:
    """Raise :class:`~flowc.runtime.script.ScriptError` unless ``script`` can drive a fork
    of a run of ``target`` at turn ``n``: it fits the run (its speakers, tools and humans'
    writes, as ``flowc run`` checks a script), it gives none of the keys only a bare
    graph takes for a run of a `.flow` (as ``flowc run`` refuses them: the fork's opening
    is the run's, so they would be ignored), and it has no kickoff unless ``n`` is 0 (a
    fork at turn ``n`` goes on from there: its script holds the turns after it)."""
    from flowc.runtime.scripted_replies import check_script, refuse_bare_graph_keys

    refuse_bare_graph_keys(target, script)
    _refuse_another_opening(target, script)
    if n > 0 and script.kickoff is not None:
        raise ScriptError(
            f"the fork goes on from turn {n}, so it has no kickoff: the script holds the "
            "turns after it (drop `kickoff`, or fork at turn 0)"
        )
    check_script(target, script, opens=n == 0)


def _refuse_another_opening(target: RunTarget, script: Script) -> None:
    """For a run of a bare JSON graph, whose script gave its participants, humans,
    creator and initial context: a fork's script may give them again only as the run has
    them (the same script, used again), since the fork's opening is a copy of the run's
    and a different value would be ignored. (A `.flow` takes none of them:
    :func:`~flowc.runtime.scripted_replies.refuse_bare_graph_keys`.)"""
    if target.tools is not None:
        return
    wanted = target.with_script_facts(script)
    for key, given, stored in (
        ("participants", list(wanted.speakers), list(target.speakers)),
        ("humans", sorted(wanted.humans), sorted(target.humans)),
        ("creator", wanted.creator, target.creator),
        ("context_vars", wanted.context_vars, target.context_vars),
    ):
        # (as JSON: `1 == True` in Python, but the fork's context would hold `true`)
        if getattr(script, key) is not None and json_text(given) != json_text(stored):
            raise ScriptError(
                f"{key}: a fork keeps the opening of the run it forks, where it is"
                f" {json_text(stored)}; the script's"
                f" {json_text(getattr(script, key))} would be"
                " ignored: drop it from the script, or give the run's own"
            )


def _now() -> str:
    """``2026-12-04T14:52:49.422177Z`` (UTC), as the hub stamps its envelopes."""
    ns = time.time_ns()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + (
        f".{ns // 1000 % 10**6:06d}Z"
    )


def _cut(envelopes: list[Envelope], n: int) -> list[Envelope]:
    """The run's records up to and including turn ``n``: its opening, and each record
    before the (n+1)-th turn's first one. What follows turn ``n`` (the next speaker's
    context write, a failure, a stall, the close) belongs to the parent's later life."""
    if not envelopes:
        raise ForkError("the database has no such run")
    if envelopes[0].event_type != EV_CHANNEL_OPENED:
        raise ForkError("its WAL does not start with the run's opening")
    if n == 0:
        return envelopes[:1]
    cut = records_upto(envelopes, n)
    turns = sum(1 for env in cut if env.is_substantive)
    if turns < n:
        raise TurnOutOfRange(n, turns)
    return cut


def check_turn(records: list[Envelope], n: int) -> None:
    """Raise :class:`~flowc.runtime.why.TurnOutOfRange` when the run whose records
    (``store.read``) are ``records`` has no turn ``n`` (and :class:`ForkError` when it is
    damaged), as :func:`fork_run` does: ``flowc fork --script`` asks it before it reads
    the script, so that a turn the run does not have is said so as it is without a
    script, whatever the script says."""
    if n > 0:
        _cut(records, n)


def refuse_broken(store: WalStore, run_id: str, records: list[Envelope]) -> str | None:
    """Raise :class:`~flowc.runtime.adapters.base.ProtocolError` (``the WAL is broken at
    envelope N (ID): ...``) when ``records`` (the run ``run_id``'s, all of them or its
    first ones) break the rules their admission checked, as the hub re-folds a run for
    ``flowc replay`` and ``flowc resume``: a sender who is no participant, a turn by a
    speaker the run was not waiting for, a record after the close, a record the flow's
    rules refuse (a hand-off to someone who is no participant), two writers. The one
    check of ``replay``, ``resume``, ``fork`` and ``log``: a run that fails it is none a
    hub could have written, so none of them shows or continues it. Returns where a
    plugin's condition or target fails on the records now, or ``None``, for the caller
    to say in its own words."""
    from flowc.runtime.adapters.base import ProtocolError

    breaks, failed = wal_breaks(store, run_id, records)
    if breaks:
        raise ProtocolError(f"the WAL is broken at {breaks[0]}")
    return failed


def wal_breaks(
    store: WalStore, run_id: str, records: list[Envelope]
) -> tuple[list[str], str | None]:
    """Where ``records`` (the run ``run_id``'s first ones) break the rules their admission
    checked, each ``envelope N (ID)...`` as :func:`refuse_broken` says the first of them:
    two writers' (the envelopes' links) first, then the hub's re-fold's; and where a
    plugin fails on them now, or ``None``. Each check stops at its first break, so the
    records up to envelope M break where a break of the list is at envelope M or before
    (what ``flowc view`` answers for a prefix of a run it checked whole)."""
    from flowc.runtime.hub import Hub
    from flowc.runtime.refold import broken_in

    # (the hub's own re-fold, as `replay` and `resume` run it: it reads, writes nothing)
    _, _, _, broken, failed = Hub(store)._refold(records)
    found = [b for b in (broken_in(store.links(run_id)[: len(records)]), broken) if b is not None]
    return found, failed


#: why a new run's id is refused that no page of ``flowc view`` can name (:func:`unaddressable`)
UNADDRESSABLE = (
    "a run id holds no '/' nor control character and is not '.' or '..' (flowc view names "
    "a run in its pages' paths, where these would name another page or none)"
)


def unaddressable(run_id: str) -> bool:
    """Whether ``run_id`` holds a ``/`` or a control character, or is ``.`` or ``..``: no
    page of ``flowc view`` could name it (:data:`UNADDRESSABLE`), so no new run is given
    it."""
    import unicodedata

    return (
        "/" in run_id
        or run_id in (".", "..")
        or any(unicodedata.category(c) == "Cc" for c in run_id)
    )


def records_upto(records: list[Envelope], n: int) -> list[Envelope]:
    """The records of a run up to and including its turn ``n`` (all of them when it has
    fewer turns): what ``flowc log RUN --why N`` and ``--scenario-upto N`` read."""
    turns = 0
    for i, env in enumerate(records):
        if env.is_substantive:
            turns += 1
            if turns == n:
                return records[: i + 1]
    return records


def _refolds(store: WalStore, parent: str, copied: list[Envelope]) -> None:
    """Raise :class:`~flowc.runtime.adapters.base.ProtocolError` (as ``resume`` does)
    when the records to copy do not re-fold as the hub re-folds a run it takes up
    (:func:`refuse_broken`), or a plugin's condition or target fails on them now (each
    said in ``flowc resume``'s words). A copy of them would be a run written that
    ``resume`` refuses."""
    from flowc.runtime.adapters.base import ProtocolError

    failed = refuse_broken(store, parent, copied)
    if failed is not None:
        # (said as `run RUN: cannot be re-folded: ...`, as replay and resume say it)
        raise ProtocolError(f"cannot be re-folded: {failed}")


def fork_run(
    store: WalStore,
    parent: str,
    n: int,
    *,
    run_id: str | None = None,
    labels: Mapping[str, Any] | None = None,
    records: list[Envelope] | None = None,
) -> str:
    """Write a new run into ``store`` whose records are the run ``parent``'s up to and
    including turn ``n`` (0: its opening only), and return its id (``run_id``, or a new
    one). The parent is only read: ``records``, when given, are its records as
    ``store.read(parent)`` gave them (a caller that read them already), else it is read
    here.

    The copies keep what the parent stored (the graph, the flow's properties, each
    turn's text, tool calls and context writes, their times); they get the new run's id
    and envelope ids of their own (ids are unique across a database), with the links
    between them (``causation_id``, ``follows``) renamed to match. The opening record
    gets the time of the fork, ``labels`` over the parent's labels, and the link to the
    parent (:data:`FORKED_FROM`). A parent submitted for the workers (``flowc submit``)
    holds its script in its labels, which marks a run for the workers to take: the fork
    leaves it out, since the process that forks a run drives it (``flowc fork``, the
    view), and a worker woken by the lease given back must not take it first and play the
    parent's script (``flowc resume`` goes on with a fork that was left open). The new
    run is written under a lease of its own, as a hub writes a run, renewed while the
    copy goes on, and given back: ``resume`` takes it from there (a parent that closed on
    turn ``n`` gives a run whose close ``resume`` writes).

    Raises :class:`~flowc.runtime.why.TurnOutOfRange` for a turn the run does not
    have, :class:`ForkError` for a negative turn, a damaged parent, a ``run_id``
    already taken, ``"last"`` (which names the newest run) or one no page of ``flowc
    view`` could name (:func:`unaddressable`),
    :class:`~flowc.runtime.adapters.base.ProtocolError` for a parent whose graph its
    participants cannot run or whose records up to turn ``n`` a plugin's condition or
    target fails on now (all of these before anything is written),
    :class:`~flowc.runtime.wal.WalError` if the store fails.
    """
    if n < 0:
        raise ForkError(f"turn {n}: give a turn number, 0 or more")
    if run_id == LAST:
        raise ForkError(f"{LAST!r} names a database's newest run, so it is no run's id")
    if run_id is not None and unaddressable(run_id):
        raise ForkError(f"{run_id!r}: {UNADDRESSABLE}")
    copied = _cut(records if records is not None else list(store.read(parent)), n)
    from flowc.runtime.adapters.base import ChannelMetadata
    from flowc.runtime.adapters.workflow import WorkflowAdapter

    # a graph the run's participants cannot run (it names a speaker who is none of them):
    # the parent is damaged (ProtocolError), and a copy of it a run no reader could read
    WorkflowAdapter(None).initial_state(ChannelMetadata.from_dict(copied[0].event_data["metadata"]))
    _refolds(store, parent, copied)
    new = run_id if run_id is not None else f"wf-{os.urandom(6).hex()}"
    if new in store.channel_ids():
        raise ForkError(f"the database already has a run {new!r}")
    prefix = os.urandom(4).hex()
    ids = {env.envelope_id: f"{prefix}-{i:08x}" for i, env in enumerate(copied, start=1)}
    opening = copied[0]
    data = dict(opening.event_data)
    metadata = dict(data["metadata"])
    now = _now()
    kept = {**metadata.get("labels", {}), **(labels or {})}
    kept.pop(SCRIPT_LABEL, None)  # not a run for the workers: its forker drives it
    metadata.update(channel_id=new, created_at=now, labels=kept)
    data["metadata"] = metadata
    data[FORKED_FROM] = ForkedFrom(parent, n).to_json()
    lease = store.acquire(new, holder_id(f"fork-{prefix}"), LEASE_SECONDS)
    renewed = time.monotonic()
    try:
        follows: str | None = None
        for i, env in enumerate(copied):
            if time.monotonic() - renewed >= LEASE_SECONDS / 3:  # a long copy keeps its lease
                lease = store.renew(lease, LEASE_SECONDS)
                renewed = time.monotonic()
            copy = attrs.evolve(
                env,
                channel_id=new,
                envelope_id=ids[env.envelope_id],
                causation_id=ids.get(env.causation_id or "", env.causation_id),
            )
            if i == 0:
                copy = attrs.evolve(copy, event_data=data, created_at=now)
            store.append(copy, lease, follows)
            follows = copy.envelope_id
    finally:
        with contextlib.suppress(WalError):  # the lease expires anyway; an append's error says more
            store.release(lease)
    return new
