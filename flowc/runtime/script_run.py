"""Scripted runs: ``flowc run --script`` (and ``flowc.run``) on a fresh hub.

Scripts are checked before the run: an unknown speaker, a tool the flow does not
declare, or a handoff to a non-speaker is refused with a :class:`ScriptError` and
nothing runs.

>>> import flowc
>>> from flowc.runtime.script import parse_script
>>> flow = flowc.compile_flow('''
... speaker user: human
... speaker bot
... sequence user -> bot
... ''')
>>> script = parse_script({"kickoff": "hi", "script": {"bot": ["hello"]}})
>>> result = run_script_sync(RunTarget.from_compiled(flow), script)
>>> result.close_reason, [t.speaker for t in result.turns]
('sequence_complete', ['user', 'bot'])
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.shape_problems import ShapeProblem
from flowc.runtime.adapters.base import ChannelState, Expectation, ProtocolError
from flowc.runtime.adapters.workflow import GraphError, compile_graph, merge_context_writes
from flowc.runtime.clients import AgentClient, HumanClient, Turn
from flowc.runtime.contracts import ENFORCE, Contract
from flowc.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, FORKED_FROM, Envelope
from flowc.runtime.guard import WARN, PropertyGuard
from flowc.runtime.hub import Channel, Hub
from flowc.runtime.replies import Reply
from flowc.runtime.script import Script, ScriptError, ScriptTurn, parse_script
from flowc.runtime.scripted_replies import (
    check_human_turn,
    check_script,
    refuse_bare_graph_keys,
    reply_for,
)
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import (
    RunResult,
    SilentRound,
    TranscriptFolder,
    TurnRecord,
    in_order,
    transcript_folder,
)
from flowc.runtime.wal import Lease, MemoryStore, WalError, WalStore
from flowc.runtime.watch import RunWatcher, WatchedStore

__all__ = [
    "AgentFn",
    "AskHuman",
    "WatchStopped",
    "post_turn",
    "resume_script",
    "run_flow",
    "run_script",
    "run_script_sync",
]


# ── running a script ──────────────────────────────────────────────────────────

AgentFn = Callable[[Turn], Awaitable[Any]]

#: ``ask_human(name, turn)``: a human's answer (text, or a turn with the context writes
#: it declares), or ``None`` when nobody answers (the run stalls on that human)
AskHuman = Callable[[str, Turn | None], Awaitable[str | ScriptTurn | None]]


async def run_script(
    target: RunTarget,
    script: Script,
    *,
    store: WalStore | None = None,
    agents: Mapping[str, AgentFn] | None = None,
    ask_human: AskHuman | None = None,
    expectations: Sequence[Expectation] | None = None,
    labels: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    watch: RunWatcher | None = None,
    channel_id: str | None = None,
    contracts: str = ENFORCE,
    on_violation: str = WARN,
) -> RunResult:
    """Run ``target`` with scripted speakers (and real ``agents``) on a fresh hub.

    ``agents`` maps speaker names to async callables that take those speakers' turns;
    ``ask_human(name, turn)`` answers for humans that the script does not cover.
    ``watch`` sees the run id and then each turn the moment it is in the WAL
    (:mod:`flowc.runtime.watch`). ``contracts`` says what happens to a turn of a real
    agent (or a custom target's choice) that breaks the flow's declarations:
    ``"enforce"`` refuses it (the run stops open on that speaker, ``error`` and
    ``refused`` say why), ``"warn"`` lets it through with the breaches on the turn
    (:mod:`flowc.runtime.contracts`). The flow's properties are watched on every turn;
    ``on_violation`` says what a violation does: ``"warn"`` records it on the turn and
    goes on, ``"stop"`` also closes the run (:mod:`flowc.runtime.guard`).

    Cancelling the run (Ctrl-C under ``asyncio.run``) stops it between two turns:
    nothing half-done is written, the channel stays open and ``flowc resume``
    continues it.
    """
    refuse_bare_graph_keys(target, script)  # (a new run: before the script applies)
    target = target.with_script_facts(script)
    check_script(target, script)
    real = dict(agents or {})
    unknown = sorted(set(real) - set(target.speakers))
    if unknown:
        raise ScriptError(f"--agents names no speaker of this flow: {', '.join(unknown)}")
    both = sorted(s for s in real if script.turns.get(s))
    if both:
        raise ScriptError(
            f"{', '.join(both)}: both scripted and given as agents; a speaker is one or the other"
        )
    watched = (
        WatchedStore(store if store is not None else MemoryStore(), watch)
        if watch is not None
        else None
    )
    hub = await Hub.open(watched if watched is not None else store)
    hub.driver = asyncio.current_task()
    queues: dict[str, deque[ScriptTurn]] = {
        s: deque(script.turns.get(s, ())) for s in target.speakers
    }
    ch_box: list[Channel] = []
    _attach(hub, target, real, queues, ask_human, ch_box)
    all_labels = {**target.labels(), **(labels or {})}
    ch = hub.open_channel(
        target.ids[target.creator],
        "workflow",
        [target.ids[s] for s in target.speakers],
        target.knobs,
        expectations=expectations,
        labels=all_labels,
        channel_id=channel_id,
    )
    ch.contract = Contract.of(target, contracts, held=frozenset(real))
    ch.guard = PropertyGuard.of(target, on_violation)
    ch_box.append(ch)
    try:
        await _kickoff(hub, ch, target, script, queues, real, ask_human)
        await asyncio.wait_for(ch.done.wait(), timeout)
        await hub.idle()
    except ProtocolError as err:
        hub.fail(ch.channel_id, ch.stalled_on or target.ids[target.start], err)
    finally:
        await hub.close(close_store=False)
    _raise_failure(hub, watched)
    return _finished(_result(hub, ch, target, watched), watched)


def graph_refusals(target: RunTarget) -> list[ShapeProblem]:
    """Why the run's channel would refuse ``target``'s graph when it opens (its
    participants in the run's order, every custom name with the classes registered
    now), each with its JSON path; [] when it opens. ``flowc run`` asks before it opens
    (or creates) the database: a refused graph leaves no file behind."""
    try:
        compile_graph(target.graph, tuple(target.ids[s] for s in target.speakers))
    except GraphError as err:
        return list(err.problems)
    return []


def _refuse_cut_short(stored: Sequence[Envelope]) -> None:
    """Refuse (:class:`ScriptError`) a fork that holds fewer turns than it names (its copy
    was cut short): it is not the state it was forked from. Asked before the run's turns
    are shown (``flowc resume`` prints none of a run it refuses so)."""
    if stored and FORKED_FROM in stored[0].event_data:
        # (what a run that is no fork need not import: a worker's first run would)
        from flowc.runtime.fork import cut_short

        short = cut_short(stored)
        if short is not None:  # the copy stopped short (its process was killed)
            cut, turns = short
            raise ScriptError(
                f"this run is a fork of run {cut.run_id} at turn {cut.turn}, but only "
                f"{turns} of the turns were copied before the fork stopped: fork the run again"
            )


def _taken(stored: Sequence[Envelope], adapter: Any) -> tuple[dict[str, list[bool]], bool]:
    """What each speaker of a stored run (``stored``: its WAL, folded with ``adapter``) did,
    by name and in order: ``True`` for a turn, ``False`` for a silent round, read as every
    transcript reads them (:class:`~flowc.runtime.transcript.TranscriptFolder`, one
    meaning of a silent round); and whether the run has begun (a turn is stored). A forked
    run's first turns are its parent's, not its script's, and so are the silent rounds
    among them: they are not counted (:func:`flowc.runtime.fork.fork_run`, which copies no
    round after its last turn; a fork whose copy was cut short is refused first,
    :func:`_refuse_cut_short`)."""
    copied = 0
    if stored and FORKED_FROM in stored[0].event_data:
        from flowc.runtime.fork import forked_from

        fork = forked_from(stored[0])
        copied = fork.turn if fork is not None else 0
    folder = transcript_folder(stored, adapter)
    taken: dict[str, list[bool]] = {}
    for done in in_order(folder.records, folder.rounds()):
        if isinstance(done, TurnRecord):
            if done.number > copied:
                taken.setdefault(done.speaker, []).append(True)
        elif done.after >= copied:
            taken.setdefault(done.speaker, []).append(False)
    return taken, bool(folder.records)


def _script_left(
    hub: Hub,
    ch: Channel,
    target: RunTarget,
    script: Script,
    done: Mapping[str, list[bool]],
) -> dict[str, deque[ScriptTurn]]:
    """Each speaker's scripted turns that a resumed run has not played yet: ``done`` (what
    :func:`_taken` read from the WAL) tells how many were. Each stored turn took one
    scripted turn (the kickoff is the start speaker's first turn, not one of its
    scripted turns); a stored silent round took the scripted turn it meets when that
    turn is silent too (it says nothing and routes nothing: the same script, resumed
    again), so that a resume never plays it, nor writes its context, a second time. A
    turn that speaks where the round was silent is the one written in its place (the
    round's fix, "give the turn a text"): it is played."""
    queues: dict[str, deque[ScriptTurn]] = {}
    for name in target.speakers:
        turns = script.turns.get(name, ())
        skip_kickoff = script.kickoff is not None and name == target.start
        i = 0
        for spoke in done.get(name, ()):
            if spoke and skip_kickoff:
                skip_kickoff = False
            elif spoke or (i < len(turns) and _says_nothing(hub, ch, target, name, turns[i])):
                i += 1
        queues[name] = deque(turns[i:])
    return queues


def _says_nothing(hub: Hub, ch: Channel, target: RunTarget, name: str, turn: ScriptTurn) -> bool:
    """Whether the scripted agent turn ``turn`` of ``name`` posts no message when played (as
    :func:`post_turn` and the scripted agent build it): a silent round."""
    if name in target.humans:  # (a human's turn is always a text)
        return False
    try:
        reply = reply_for(target, name, turn)
    except ScriptError:  # (said when the turn is played)
        return False
    envs = ch.adapter.build_round_envelopes(  # type: ignore[attr-defined]
        ch.metadata, ch.state, target.ids[name], reply, hub.name_to_id()
    )
    return not any(e.event_type in (EV_TEXT, EV_PACKET) for e in envs)


class WatchStopped(Exception):
    """The run's watcher failed (``flowc run``'s transcript could not print a turn, say):
    it was dropped and the run went on to its end. ``result`` is the run's result,
    ``shown`` how many turns the watcher had taken, ``__cause__`` the watcher's
    exception."""

    def __init__(self, result: RunResult, shown: int, error: BaseException) -> None:
        what = f"{type(error).__name__}: {error}"
        super().__init__(f"the transcript stopped after {shown} turn(s): {what}")
        self.result = result
        self.shown = shown
        self.error = error


def _raise_failure(hub: Hub, watched: WatchedStore | None) -> None:
    """A bug in flowc stopped the run (:meth:`Hub.fail`): raise it, never pass it off as
    a run that stalled (the run stays open, as a stalled one does)."""
    if hub.failure is not None:
        with contextlib.suppress(AttributeError):  # told apart from a damaged run's error
            hub.failure.flowc_internal = True  # type: ignore[attr-defined]
        raise hub.failure


def _finished(result: RunResult, watched: WatchedStore | None) -> RunResult:
    """``result``, or, when the watcher failed and was dropped while the run went on,
    :class:`WatchStopped` with it: never lost (``flowc run``'s transcript would be
    missing turns)."""
    if watched is not None and watched.failed is not None:
        raise WatchStopped(result, watched.shown, watched.failed) from watched.failed
    return result


async def resume_script(
    store: WalStore,
    channel_id: str,
    script: Script | None = None,
    *,
    agents: Mapping[str, AgentFn] | None = None,
    ask_human: AskHuman | None = None,
    timeout: float | None = None,
    watch: RunWatcher | None = None,
    holder: str | None = None,
    lease_seconds: float | None = None,
    on_claim: Callable[[Lease], None] | None = None,
    contracts: str = ENFORCE,
    record_stall: bool = False,
    on_violation: str = WARN,
    turns: bool = True,
) -> RunResult:
    """Continue the stored run ``channel_id`` from its WAL (``flowc resume``).

    The run's own participants, humans, tools and graph come from the WAL. ``script``
    is the script the run started with, possibly longer: each speaker's turns already
    in the WAL are skipped (the kickoff counts as the start speaker's first turn), so
    resuming after any interruption continues where the WAL ends. ``agents`` take the
    turns of the speakers they name. A closed run is returned as it is. ``watch`` sees
    the turns already stored, then each new one as it is accepted. ``holder`` and
    ``lease_seconds`` are the hub's (see :meth:`Hub.open`); ``on_claim`` is given the
    run's lease once it is taken, when the run is still open (workers count their runs,
    and the runs they take over, so).
    ``contracts`` as for :func:`run_script`. ``record_stall``: a run that stalls gets
    its stall written in the WAL before its lease is given back (:meth:`Hub.record_stall`;
    a worker's runs, which no worker then claims until the WAL grows).
    ``on_violation`` as for :func:`run_script`: the properties' monitors are rebuilt from
    the turns in the WAL first, so a violation spanning the resume is caught.
    ``turns=False``: for a flow without properties, the result leaves out the run's
    turns, and its close reason, context and turn count are the hub's own fold of the
    run, instead of a fold of the whole WAL read back once the run ends (a worker, which
    reports only those, and would otherwise read and fold every run it drives a second
    time); a run with properties keeps its turns, which hold its property violations.
    A forked run's script (``flowc fork``) holds the turns after those it copied from
    its parent: only the turns past the fork are counted as taken.
    """
    script = script if script is not None else Script(None, {})
    watched = WatchedStore(store, watch) if watch is not None else None
    hub = await Hub.open(
        watched if watched is not None else store, holder=holder, lease_seconds=lease_seconds
    )
    hub.driver = asyncio.current_task()
    try:
        read: dict[str, list[Envelope]] = {}
        await hub.hydrate([channel_id], schedule=False, read=read)
        ch = hub.channel(channel_id)
        if on_claim is not None and ch.is_open and ch.lease is not None:
            on_claim(ch.lease)
        # the WAL as the hub rebuilt the run from it: the run is open and its lease ours,
        # so nobody else appends to it meanwhile (and nothing is appended here before its
        # turns are counted)
        stored = read.get(channel_id)
        if stored is None:  # (the hub had the run already: nothing was rebuilt here)
            stored = list(hub.read_wal(channel_id))
        if ch.is_open:
            _refuse_cut_short(stored)  # (before the watcher is shown any of its turns)
        if watched is not None:
            watched.follow(hub.read_wal(channel_id))
        target = RunTarget.from_metadata(ch.metadata)  # (ProtocolError: damaged)
        if not ch.is_open:
            return _finished(_result(hub, ch, target, watched, turns=turns), watched)
        check_script(target, script)
        real = dict(agents or {})
        unknown = sorted(set(real) - set(target.speakers))
        if unknown:
            raise ScriptError(
                f"--agents names no speaker of this run: {', '.join(unknown)} "
                f"(its speakers: {', '.join(target.speakers)})"
            )
        names = target.names
        done, started = _taken(stored, ch.adapter)
        queues = _script_left(hub, ch, target, script, done)
        both = sorted(s for s in real if queues[s])
        if both:
            raise ScriptError(
                f"{', '.join(both)}: both scripted and given as agents; "
                "a speaker is one or the other"
            )
        ch.contract = Contract.of(target, contracts, held=frozenset(real))
        guard = PropertyGuard.of(target, on_violation)
        if guard is not None:
            guard.follow(stored)
        ch.guard = guard
        ch_box = [ch]
        drivers = _attach(hub, target, real, queues, ask_human, ch_box)
        try:
            if not started:
                await _kickoff(hub, ch, target, script, queues, real, ask_human)
            else:
                nxt = ch.expected_next()
                if nxt is not None and names.get(nxt, nxt) in drivers:
                    drivers[names.get(nxt, nxt)](ch.recent[-1])
                elif nxt is not None and not hub.resume(channel_id):
                    hub.stall(channel_id, nxt)
            await asyncio.wait_for(ch.done.wait(), timeout)
            await hub.idle()
        except ProtocolError as err:
            failed = ch.stalled_on or ch.expected_next()
            if failed is not None:
                hub.fail(ch.channel_id, failed, err)
            else:
                ch.error = str(err)
        if record_stall and hub.failure is None:
            with contextlib.suppress(WalError):  # a lost lease or a failed store says so
                hub.record_stall(channel_id)
        _raise_failure(hub, watched)
        return _finished(_result(hub, ch, target, watched, turns=turns), watched)
    finally:
        await hub.close(close_store=False)


def _attach(
    hub: Hub,
    target: RunTarget,
    real: Mapping[str, AgentFn],
    queues: dict[str, deque[ScriptTurn]],
    ask_human: AskHuman | None,
    ch_box: list[Channel],
) -> dict[str, Callable[[Envelope], None]]:
    """Register every speaker: real agents, scripted humans (driven by what they see)
    and scripted agents; returns the humans' drivers by speaker name."""

    def scripted_agent(name: str) -> AgentFn:
        async def take(turn: Turn) -> Reply | None:
            q = queues[name]
            return reply_for(target, name, q.popleft()) if q else None

        return take

    drivers: dict[str, Callable[[Envelope], None]] = {}
    relay = _Relay()
    for name in target.speakers:
        aid = target.ids[name]
        if name in real:
            hub.register_agent(name, real[name], agent_id=aid)
        elif name in target.humans:
            human = hub.register_human(name, agent_id=aid, buffer=False)
            drivers[name] = human.on_envelope(
                _human_driver(hub, human, name, target, queues[name], ch_box, ask_human, relay)
            )
        else:
            hub.register_agent(name, scripted_agent(name), agent_id=aid)
    return drivers


async def _kickoff(
    hub: Hub,
    ch: Channel,
    target: RunTarget,
    script: Script,
    queues: dict[str, deque[ScriptTurn]],
    real: Mapping[str, AgentFn],
    ask_human: AskHuman | None,
) -> None:
    """The run's first turn: the script's kickoff, the start speaker's first scripted
    turn, its agent, or the person at the terminal."""
    start_id = target.ids[target.start]
    if script.kickoff is not None:
        hub.admit(Envelope(ch.channel_id, start_id, None, EV_TEXT, {"text": script.kickoff}))
    elif queues[target.start] and target.start not in real:
        post_turn(hub, ch, target, target.start, queues[target.start].popleft(), kickoff=True)
    else:
        client = hub.client(start_id)
        if isinstance(client, AgentClient):
            await client.take_turn(ch, Envelope(ch.channel_id, start_id, None, EV_TEXT, {}))
        elif isinstance(client, HumanClient) and ask_human is not None:
            answer = await ask_human(target.start, None)
            if answer is None:
                hub.stall(ch.channel_id, start_id)
            else:
                _post_answer(hub, ch, target, target.start, answer)
        else:
            hub.stall(ch.channel_id, start_id)


def post_turn(
    hub: Hub, ch: Channel, target: RunTarget, name: str, turn: ScriptTurn, *, kickoff: bool = False
) -> bool:
    """Post one scripted turn; ``False`` when it says nothing and routes nothing."""
    aid = target.ids[name]
    if not turn.calls and (kickoff or name in target.humans):
        # text alone (most turns of a scripted human): no reply to build and no context
        # to write, so the one text envelope the general path below would post
        hub.admit_fields(ch.channel_id, aid, EV_TEXT, {"text": turn.say})
        return True
    if name in target.humans or (kickoff and not turn.calls):
        if name in target.humans:
            check_human_turn(target, name, turn)
        reply = reply_for(target, name, turn)
        sets, deletes = merge_context_writes(reply.tool_calls)
        if sets or deletes:
            hub.admit(
                Envelope(ch.channel_id, aid, None, EV_CONTEXT_SET, {"set": sets, "delete": deletes})
            )
        hub.admit(Envelope(ch.channel_id, aid, None, EV_TEXT, {"text": turn.say}))
        return True
    envs = ch.adapter.build_round_envelopes(  # type: ignore[attr-defined]
        ch.metadata, ch.state, aid, reply_for(target, name, turn), hub.name_to_id()
    )
    for env in envs:
        hub.admit(env)
    return any(e.event_type in (EV_TEXT, EV_PACKET) for e in envs)


def _post_answer(
    hub: Hub, ch: Channel, target: RunTarget, name: str, answer: str | ScriptTurn
) -> None:
    """Post what a human answered when asked: text, or a turn with context writes (held
    to the keys the human declares, as a scripted human's turn is)."""
    if isinstance(answer, ScriptTurn):
        post_turn(hub, ch, target, name, answer)
    else:
        hub.admit(Envelope(ch.channel_id, target.ids[name], None, EV_TEXT, {"text": answer}))


class _Relay:
    """Runs the scripted humans' turns of one run one after the other.

    A human's driver hands over its turn when the run waits for that human; the relay
    runs it in a loop callback of its own (never inside the delivery of the turn
    before). A turn handed over while the relay runs is run next in the same callback,
    up to :attr:`TURNS` in a row, so that a scripted stretch does not pay an event-loop
    round per turn; after that the next turn waits for the loop's next round, so
    timers and other tasks still come between turns. Once the run's task is being
    cancelled (Ctrl-C, a closed output) no further turn is taken: the run stops after
    the turn in hand.
    """

    #: turns run back to back before the event loop gets a round
    TURNS = 64

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        self.busy = False
        self.next: Callable[[], None] | None = None

    def take(self, act: Callable[[], None]) -> None:
        """``act`` is the turn to take next (its human is the one the run waits for)."""
        if self.busy:
            self.next = act
        else:
            self.loop.call_soon(self.run, act)

    def run(self, act: Callable[[], None]) -> None:
        task = self.task
        pending: Callable[[], None] | None = None
        self.busy = True
        try:
            for _ in range(self.TURNS):
                if task is not None and task.cancelling():
                    return  # the run is being stopped
                self.next = None
                act()
                nxt = self.next
                if nxt is None:
                    return
                act = nxt
            pending = act
        except BaseException:
            pending = self.next  # a turn handed over before the failure still comes
            raise
        finally:
            self.busy = False
            self.next = None
            if pending is not None:  # the loop's next round takes it
                self.loop.call_soon(self.run, pending)


def _human_driver(
    hub: Hub,
    human: HumanClient,
    name: str,
    target: RunTarget,
    queue: deque[ScriptTurn],
    ch_box: list[Channel],
    ask_human: AskHuman | None,
    relay: _Relay,
) -> Callable[[Envelope], None]:
    loop = asyncio.get_running_loop()
    aid = human.agent_id

    def act() -> None:
        ch = ch_box[0]
        try:
            take_turn(ch)
        except Exception as err:  # a bug in flowc: the run stops (run_script raises it)
            hub.crash(ch.channel_id, aid, err)

    def take_turn(ch: Channel) -> None:
        if ch.expected_next() != aid:  # (``None`` once the run is closed)
            return
        if queue:
            try:
                post_turn(hub, ch, target, name, queue.popleft())
            except ProtocolError as err:
                hub.fail(ch.channel_id, human.agent_id, err)
        elif ask_human is not None:

            async def ask() -> None:
                try:
                    await answer(ch, ask_human)
                except Exception as err:  # the asker's or flowc's: the run stops with it
                    hub.crash(ch.channel_id, aid, err)

            hub.track(loop.create_task(ask()))
        else:
            hub.stall(ch.channel_id, human.agent_id)

    async def answer(
        ch: Channel, ask_human: Callable[[str, Turn | None], Awaitable[str | ScriptTurn | None]]
    ) -> None:
        turn = Turn(
            ch.channel_id,
            human.agent_id,
            name,
            ch.recent[-1],
            tuple(ch.recent),
            dict(ch.state.context_vars),
        )
        reply = await ask_human(name, turn)
        if reply is None:
            hub.stall(ch.channel_id, human.agent_id)
        elif ch.is_open:
            try:
                _post_answer(hub, ch, target, name, reply)
            except ProtocolError as err:  # refused, or a plugin raised as it routed
                hub.fail(ch.channel_id, human.agent_id, err)
            except ScriptError as err:
                hub.stall(ch.channel_id, human.agent_id, str(err))

    def on_envelope(env: Envelope) -> None:
        # only the human the run now waits for acts (`act` checks again when it runs)
        if (
            (env.event_type == EV_TEXT or env.event_type == EV_PACKET)
            and ch_box
            and ch_box[0].expected_next() == aid
        ):
            relay.take(act)

    return on_envelope


def _result(
    hub: Hub,
    ch: Channel,
    target: RunTarget,
    watched: WatchedStore | None = None,
    *,
    turns: bool = True,
) -> RunResult:
    folder: TranscriptFolder | None = watched.folder if watched is not None else None
    records: list[TurnRecord]
    rounds: tuple[SilentRound, ...] = ()
    if not turns and not target.properties:
        # what the hub folded as it admitted the run's envelopes (or re-folded from the
        # WAL when it took the run): no turn records, and nothing read again (a run
        # with properties has its violations in its turns' records: those are read)
        records, close, state = [], ch.close_reason, ch.state
    else:
        if (
            folder is None
            or watched is None
            or watched.failed is not None
            or watched.partial
            or folder.channel_id != ch.channel_id
        ):
            folder = transcript_folder(hub.read_wal(ch.channel_id))
        # (else already folded as the run went)
        records, close, state, rounds = folder.records, folder.close, folder.state, folder.rounds()
    names = target.names
    stalled = None
    if ch.status is not ChannelState.CLOSED:
        who = ch.stalled_on or ch.expected_next()
        stalled = names.get(who, who) if who else None
    return RunResult(
        ch.channel_id,
        tuple(records),
        close,
        dict(state.context_vars) if state is not None else {},
        state.turn_count if state is not None else 0,
        stalled,
        ch.error,
        tuple(ch.violations),
        ch.refused if stalled is not None else (),
        ch.failure,
        ch.silent and stalled is not None,
        rounds,
    )


def run_script_sync(target: RunTarget, script: Script, **kwargs: Any) -> RunResult:
    """:func:`run_script` in a fresh event loop."""
    return asyncio.run(run_script(target, script, **kwargs))


def run_flow(
    flow: CompiledFlow | Mapping[str, Any],
    script: Script | Mapping[str, Any],
    *,
    store: WalStore | None = None,
    agents: Mapping[str, AgentFn] | None = None,
    plugins: Sequence[str] = (),
) -> RunResult:
    """Run a compiled flow, or a graph / knobs dict, with a script (``flowc.run``).

    ``plugins`` (module names or ``.py`` files) are imported first, so that the custom
    conditions and targets they register are known; a compiled flow whose custom names
    nobody implements raises :class:`~flowc.runtime.plugins.PluginError` naming them.

    >>> import flowc
    >>> flow = flowc.compile_flow("speaker a: human\\nspeaker b\\nsequence a -> b")
    >>> flowc.run(flow, {"kickoff": "hi", "script": {"b": ["hello"]}}).close_reason
    'sequence_complete'
    """
    from flowc.compiler.serde import is_knobs_dict, structure_graph, structure_knobs
    from flowc.runtime.plugins import (
        PluginError,
        implementation_problems,
        implementations_text,
        load_plugins,
    )

    if plugins:
        load_plugins(plugins, origin="plugin")
    if isinstance(flow, CompiledFlow):
        problems = implementation_problems(flow, "<flow>")
        if problems:
            raise PluginError(implementations_text(problems).rstrip("\n"))
        target = RunTarget.from_compiled(flow)
    elif is_knobs_dict(dict(flow)):
        knobs = structure_knobs(dict(flow))
        target = RunTarget.from_graph(knobs.graph, knobs.context_vars)
    else:
        target = RunTarget.from_graph(structure_graph(dict(flow)))
    parsed = script if isinstance(script, Script) else parse_script(dict(script))
    return asyncio.run(run_script(target, parsed, store=store, agents=agents))
