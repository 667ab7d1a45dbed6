"""Participants: ``AgentClient`` (an async callable takes its turns) and ``HumanClient``.

>>> import asyncio
>>> from flowc.runtime.hub import Hub
>>> async def demo() -> list[str]:
...     hub = await Hub.open()
...     user = hub.register_human("user")
...     async def bot(turn: Turn) -> str:
...         return f"echo: {turn.text}"
...     hub.register_agent("bot", bot)
...     graph = {"initial_speaker": "user", "max_turns": 2, "transitions": [
...         {"when": {"name": "always", "args": {}},
...          "then": {"name": "round_robin", "args": {}}, "priority": 0}],
...         "default_target": {"name": "terminate", "args": {"reason": "after_work"}}}
...     ch = await user.open("workflow", target=["bot"], knobs={"graph": graph})
...     await ch.send("hi")
...     await ch.wait()
...     return [e.event_data.get("body", e.event_data.get("text")) for e in ch.transcript()]
>>> asyncio.run(demo())
['hi', 'echo: hi']
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from flowc.runtime.adapters.base import Expectation, ProtocolError
from flowc.runtime.channel import Channel, ClientHub
from flowc.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope
from flowc.runtime.replies import Reply, as_reply, plain_reply
from flowc.runtime.stored import admissible, admitted, json_copy

__all__ = ["AgentClient", "ChannelHandle", "HumanClient", "Turn", "envelope_text"]

EnvelopeCallback = Callable[[Envelope], Any]


def envelope_text(env: Envelope) -> str:
    """The readable text of a text or packet envelope."""
    if env.event_type == EV_PACKET:
        body = env.event_data.get("body", "")
        return body if isinstance(body, str) else ""
    text = env.event_data.get("text", "")
    return text if isinstance(text, str) else ""


@attrs.frozen
class Turn:
    """What an agent callable gets: the envelope that put the turn on it, its view of
    the channel (the recent turns, the trigger last) and a copy of the channel's
    context; ``participants`` are the channel's agent ids in order and ``names`` maps
    agent ids to speaker names (both empty when the caller does not know them)."""

    channel_id: str
    agent_id: str
    name: str
    envelope: Envelope
    history: tuple[Envelope, ...]
    context: dict[str, Any]
    participants: tuple[str, ...] = ()
    names: dict[str, str] = attrs.field(factory=dict)

    def name_of(self, agent_id: str) -> str:
        """The speaker name of ``agent_id`` (the id itself when unknown)."""
        return self.names.get(agent_id, agent_id)

    @property
    def text(self) -> str:
        return envelope_text(self.envelope)


@attrs.define(eq=False)
class ChannelHandle:
    """A participant's handle on one channel (what ``open`` returns)."""

    client: _Client
    channel_id: str

    @property
    def channel(self) -> Channel:
        return self.client.hub.channel(self.channel_id)

    async def send(self, text: str, **kwargs: Any) -> Envelope:
        return await self.client.send(self.channel_id, text, **kwargs)

    async def set_context(
        self, set: dict[str, Any] | None = None, delete: Sequence[str] = ()
    ) -> Envelope:
        return await self.client.set_context(self.channel_id, set=set, delete=delete)

    async def wait(self, timeout: float | None = None) -> None:
        """Until the channel closes or its run stalls."""
        await asyncio.wait_for(self.channel.done.wait(), timeout)

    def transcript(self) -> list[Envelope]:
        """The channel's text and packet envelopes from the WAL."""
        return [
            e
            for e in self.client.hub.read_wal(self.channel_id)
            if e.event_type in (EV_TEXT, EV_PACKET)
        ]


class _Client:
    kind = "participant"

    def __init__(self, hub: ClientHub, name: str, *, agent_id: str | None = None) -> None:
        self.hub = hub
        self.name = name
        self.agent_id = agent_id or name

    async def open(
        self,
        type: str,
        *,
        target: Sequence[str],
        knobs: dict[str, Any] | None = None,
        expectations: Sequence[Expectation] | None = None,
        labels: dict[str, Any] | None = None,
    ) -> ChannelHandle:
        """Open a channel with ``target`` (AG2's ``open(type=..., target=[...])``)."""
        ch = self.hub.open_channel(
            self.agent_id, type, list(target), knobs, expectations=expectations, labels=labels
        )
        return ChannelHandle(self, ch.channel_id)

    def handle(self, channel_id: str) -> ChannelHandle:
        return ChannelHandle(self, channel_id)

    def send_nowait(
        self,
        channel_id: str,
        text: str = "",
        *,
        event_type: str = EV_TEXT,
        event_data: dict[str, Any] | None = None,
        audience: Sequence[str] | None = None,
        causation_id: str | None = None,
    ) -> Envelope:
        data = {"text": text} if event_data is None else event_data
        return self.hub.admit_fields(
            channel_id,
            self.agent_id,
            event_type,
            data,
            None if audience is None else tuple(audience),
            causation_id,
        )

    async def send(self, channel_id: str, text: str = "", **kwargs: Any) -> Envelope:
        """Post text (or ``event_type``/``event_data``); raises ``ProtocolError`` if refused."""
        return self.send_nowait(channel_id, text, **kwargs)

    async def set_context(
        self, channel_id: str, *, set: dict[str, Any] | None = None, delete: Sequence[str] = ()
    ) -> Envelope:
        """Post ``ag2.context.set`` (delete runs before set)."""
        return self.send_nowait(
            channel_id,
            event_type=EV_CONTEXT_SET,
            event_data={"set": dict(set or {}), "delete": list(delete)},
        )

    def deliver(self, envelope: Envelope) -> None:
        pass


class HumanClient(_Client):
    """A participant with no model: ``send``, ``on_envelope``, ``next_envelope``.

    Envelopes delivered while nobody waits are kept in an inbox for ``next_envelope``
    unless the client was made with ``buffer=False`` (then only callbacks and
    already-waiting ``next_envelope`` calls see them).
    """

    kind = "human"

    def __init__(
        self, hub: ClientHub, name: str, *, agent_id: str | None = None, buffer: bool = True
    ) -> None:
        super().__init__(hub, name, agent_id=agent_id)
        self._callbacks: list[EnvelopeCallback] = []
        self._waiters: list[tuple[Callable[[Envelope], bool] | None, asyncio.Future[Envelope]]] = []
        self._inbox: deque[Envelope] = deque()
        self._buffer = buffer
        self._pending: set[asyncio.Future[Any]] = set()

    def on_envelope(self, callback: EnvelopeCallback) -> EnvelopeCallback:
        """Call ``callback(envelope)`` for every envelope this participant can see.

        A coroutine function is scheduled as a task. Usable as a decorator.
        """
        self._callbacks.append(callback)
        return callback

    def deliver(self, envelope: Envelope) -> None:
        for callback in self._callbacks:
            result = callback(envelope)
            if result is not None and inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)
        for i, (predicate, fut) in enumerate(self._waiters):
            if fut.done():
                continue
            if predicate is None or predicate(envelope):
                fut.set_result(envelope)
                del self._waiters[i]
                return
        if self._buffer:
            self._inbox.append(envelope)

    async def next_envelope(
        self, predicate: Callable[[Envelope], bool] | None = None, timeout: float | None = None
    ) -> Envelope:
        """The next (buffered or future) envelope matching ``predicate``.

        Raises ``TimeoutError`` after ``timeout`` seconds.
        """
        for i, env in enumerate(self._inbox):
            if predicate is None or predicate(env):
                del self._inbox[i]
                return env
        fut: asyncio.Future[Envelope] = asyncio.get_running_loop().create_future()
        entry = (predicate, fut)
        self._waiters.append(entry)
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)


AgentFn = Callable[[Turn], Awaitable[Any]]


def _shown(env: Envelope) -> Envelope:
    """``env`` as an agent is shown it: its data a copy that shares nothing with the run's."""
    return attrs.evolve(env, event_data=json_copy(env.event_data))


class AgentClient(_Client):
    """A participant whose turns an async callable takes.

    The callable gets a :class:`Turn` and returns a :class:`~flowc.runtime.replies.Reply`
    (text plus tool calls with their effects), a string, or ``None``. The hub calls it
    whenever the channel expects this participant to speak; its reply is posted as
    the adapter's round envelopes (a workflow packet). A reply that says nothing and
    routes nothing stops the run (``stalled_on``), as in AG2.
    """

    kind = "agent"

    def __init__(
        self, hub: ClientHub, name: str, fn: AgentFn, *, agent_id: str | None = None
    ) -> None:
        super().__init__(hub, name, agent_id=agent_id)
        self.fn = fn

    def _envelopes(self, ch: Channel, reply: Reply) -> list[Envelope]:
        """The envelopes of a turn's ``reply`` (the adapter's round, or its text)."""
        build = getattr(ch.adapter, "build_round_envelopes", None)
        if build is None:
            return (
                [Envelope(ch.channel_id, self.agent_id, None, EV_TEXT, {"text": reply.text})]
                if reply.text
                else []
            )
        return list(build(ch.metadata, ch.state, self.agent_id, reply, self.hub.name_to_id()))

    def _admitted(self, ch: Channel, reply: Reply) -> tuple[Reply, list[Envelope]] | None:
        """``reply`` as the run records it (:func:`plain_reply`) and its envelopes,
        admitted (:func:`admitted`); ``None`` when the turn failed instead: a value no
        record can hold is refused as the hub refuses it when an envelope holds it, else
        the reply is malformed (the agent's failure, naming the part that holds it: a
        write a later call of the same reply overwrites)."""
        who = {self.agent_id: self}
        try:
            plain = plain_reply(reply)
        except TypeError as err:
            try:
                for env in self._envelopes_of_own(ch, reply):
                    admissible(env, who)
            except ProtocolError as refused:  # refused: nothing of the turn is written
                self.hub.fail(ch.channel_id, self.agent_id, refused)
                return None
            self.hub.fail(ch.channel_id, self.agent_id, err, by_agent=True)
            return None
        try:
            return plain, [admitted(env, who) for env in self._envelopes(ch, plain)]
        except ProtocolError as refused:  # refused: nothing of the turn is written
            self.hub.fail(ch.channel_id, self.agent_id, refused)
            return None

    def _envelopes_of_own(self, ch: Channel, reply: Reply) -> list[Envelope]:
        """The envelopes of a reply built from the agent's own objects, when they can be
        (what those objects do as they are read is theirs: none, when they fail)."""
        try:
            return self._envelopes(ch, reply)
        except Exception:
            return []

    async def take_turn(self, ch: Channel, trigger: Envelope) -> None:
        # copies of the run's envelopes that share nothing with what the hub keeps (and
        # folded into the context): what the agent does to them changes nothing
        recent = tuple(_shown(e) for e in ch.recent)
        turn = Turn(
            ch.channel_id,
            self.agent_id,
            self.name,
            recent[-1] if ch.recent and ch.recent[-1] is trigger else _shown(trigger),
            recent,
            # a copy that shares nothing with the run's: what the agent does to it (adds
            # to a list in it) changes nothing, as only what it writes is recorded
            json_copy(dict(getattr(ch.state, "context_vars", {}) or {})),
            tuple(ch.metadata.participant_ids),
            {aid: name for name, aid in self.hub.name_to_id().items()},
        )
        try:
            answer = await self.fn(turn)
            reply = as_reply(answer)
        except asyncio.CancelledError as err:
            task = asyncio.current_task()
            if task is None or task.cancelling():  # the hub cancelled the turn: it stops
                raise
            # the agent raised it of its own: its failure, as any other exception
            self.hub.fail(ch.channel_id, self.agent_id, err, by_agent=True)
            return
        except (Exception, SystemExit) as err:  # (`sys.exit` in an agent ends no run)
            self.hub.fail(ch.channel_id, self.agent_id, err, by_agent=True)
            return
        if not ch.is_open or self.hub.stopping():
            return
        contract = ch.contract
        judged = contract is not None and bool(reply.tool_calls)
        # the turn as the run records it: plain copies of the agent's values (the hub
        # writes and keeps those), so that the flow's declarations judge what is written
        # (a string whose `==` says yes to anything by its text, a dict whose `items`
        # hides a key by what JSON writes of it), and the envelopes built from them, as
        # admitted (a value no record can hold is refused first: the contract's words
        # quote the values)
        admitted_turn = self._admitted(ch, reply)
        if admitted_turn is None:
            return
        reply, envs = admitted_turn
        warnings: list[dict[str, Any]] = []
        if judged:
            assert contract is not None
            try:
                # the flow's declarations hold the agent's tool calls
                warnings = contract.check_reply(self.agent_id, reply)
            except ProtocolError as err:  # refused: nothing of the turn is written
                ch.refused = tuple(b.to_json() for b in getattr(err, "breaches", ()))
                self.hub.stall(ch.channel_id, self.agent_id, str(err))
                return
        if warnings and envs:  # let through, with the breaches on its (last) envelope
            last = envs[-1]
            envs[-1] = attrs.evolve(last, event_data=contract.annotate(last.event_data, warnings))
        try:
            for env in envs:
                self.hub.admit(env, checked=True)  # (admitted: not copied again)
        except ProtocolError as err:
            self.hub.fail(ch.channel_id, self.agent_id, err)
            return
        if not envs or not any(e.event_type in (EV_TEXT, EV_PACKET) for e in envs):
            # a silent round (its context writes, if any, are written, as AG2 writes
            # them), or no answer at all (``None``: a scripted speaker with no turn left)
            ch.silent = answer is not None
            self.hub.stall(ch.channel_id, self.agent_id)
