"""A live run watched for its flow's properties (``flowc run``, ``resume``, the workers).

The hub hands each turn it is about to write to the channel's :class:`PropertyGuard`
(:meth:`flowc.runtime.hub.Hub.admit`): the turn is read as a property reads it (who
spoke, the tool it called, the context after it, its number, whether it ends the run
and with which reason) and stepped through the monitors of
:class:`flowc.compiler.monitor.RunWatch`, the very automata ``flowc check`` and
``flowc test`` use. A property the turn breaks is written into the turn's own envelope
(:data:`~flowc.runtime.transcript.PROPERTY_KEY`), so the transcript, ``--json``,
``--jsonl`` and ``flowc log`` show it, and it is in the WAL whatever happens next. A
property judged at the end of the run (``eventually``, an ``after P, S`` left waiting)
is judged on the turn that ends it, before its close is written.

What a violation does (``--on-violation``): ``warn`` (the default) lets the run go on
as the flow routes it; ``stop`` closes the run after the turn, with the close reason
:func:`stop_reason` (``property_violated:NAME``), written to the WAL as any close. A
run closed so was cut short by flowc, not ended by its flow: the properties still
waiting for the run's end are not judged.

A resumed run (``flowc resume``, a worker taking a run over) rebuilds its monitors
from the turns already in the WAL (:meth:`PropertyGuard.follow`), so a violation that
spans the resume (a ``within 3 turns`` started before it) is still caught, and a
property broken before it is not reported again.

>>> import flowc
>>> from flowc.runtime.script import parse_script
>>> from flowc.runtime.script_run import run_script_sync
>>> from flowc.runtime.target import RunTarget
>>> flow = flowc.compile_flow('''
... speaker user: human
... speaker bot
... sequence user -> bot
... property quiet: never from bot
... ''')
>>> script = parse_script({"kickoff": "hi", "script": {"bot": ["hello"]}})
>>> result = run_script_sync(RunTarget.from_compiled(flow), script, on_violation="stop")
>>> [(v["property"], v["turn"]) for v in result.property_violations]
[('quiet', 2)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from flowc.compiler.monitor import Broken, MState, Observation, RunWatch, claim_text, explain
from flowc.runtime.adapters.workflow import WorkflowState
from flowc.runtime.contracts import seen_tools
from flowc.runtime.envelope import EV_PACKET, EV_TEXT, Envelope
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import TranscriptFolder

__all__ = ["ON_VIOLATION", "STOP", "WARN", "PropertyGuard", "stop_reason", "stopped_by"]

WARN = "warn"
STOP = "stop"
#: ``--on-violation``'s choices, the default first
ON_VIOLATION = (WARN, STOP)

_STOP_PREFIX = "property_violated:"


def stop_reason(name: str) -> str:
    """The close reason of a run stopped for breaking the property ``name``.

    >>> stop_reason("no_publish"), stopped_by("property_violated:no_publish")
    ('property_violated:no_publish', 'no_publish')
    """
    return _STOP_PREFIX + name


def stopped_by(reason: str | None) -> str | None:
    """The property a close reason says stopped the run, or ``None``."""
    if reason is not None and reason.startswith(_STOP_PREFIX):
        return reason[len(_STOP_PREFIX) :]
    return None


def turn_tool(env: Envelope, seen: frozenset[str] = frozenset()) -> str | None:
    """The tool a turn called, as a property's ``tool T`` reads it: the tool that routed
    the turn, else the first call of a tool in ``seen`` (a rule or a property names it:
    the one call the flow sees, beside helpers), else the first tool it called."""
    if env.event_type != EV_PACKET:
        return None
    data = env.event_data
    routing = data.get("routing")
    if isinstance(routing, dict) and isinstance(routing.get("tool"), str):
        return str(routing["tool"])
    calls = data.get("tool_calls")
    names = [
        str(c["name"])
        for c in (calls if isinstance(calls, list) else ())
        if isinstance(c, dict) and isinstance(c.get("name"), str)
    ]
    return next((n for n in names if n in seen), names[0] if names else None)


class PropertyGuard:
    """The monitors of one run's properties, and what a violation does."""

    def __init__(self, target: RunTarget, on_violation: str = WARN) -> None:
        if on_violation not in ON_VIOLATION:
            raise ValueError(f"on_violation is one of {', '.join(ON_VIOLATION)}")
        self.watch = RunWatch(target.properties)
        #: the tools a rule or a property names (:func:`turn_tool`)
        self.seen = seen_tools(target)
        self.names: Mapping[str, str] = target.names
        self.on_violation = on_violation
        self.stop = on_violation == STOP
        #: the violations reported on this run so far (the stored turns' included)
        self.reported: list[dict[str, Any]] = []
        self._saved: list[MState | None] | None = None

    @classmethod
    def of(cls, target: RunTarget, on_violation: str = WARN) -> PropertyGuard | None:
        """The guard of ``target``'s properties, or ``None`` when it has none."""
        return cls(target, on_violation) if target.properties else None

    def observe(
        self, env: Envelope, state: WorkflowState, ended: bool, reason: str | None
    ) -> list[dict[str, Any]]:
        """The properties the turn ``env`` breaks (``state``: the run after it; ``ended``
        / ``reason``: whether it ends the run, and how). The monitors move on; until
        :meth:`undo`, which puts them back (the turn could not be written)."""
        self._saved = self.watch.states  # (a turn replaces the list, never changes it)
        seen = Observation(
            env.sender_id,
            turn_tool(env, self.seen),
            state.context_vars,
            state.turn_count,
            ended,
            reason,
        )
        out = [self._json(b) for b in self.watch.turn(seen)]
        self.reported += out
        return out

    def undo(self, broken: list[dict[str, Any]]) -> None:
        """Forget the last :meth:`observe` (its turn was not written)."""
        if self._saved is not None:
            self.watch.states = self._saved
            self._saved = None
        for v in broken:
            self.reported.remove(v)

    def follow(self, envelopes: Iterable[Envelope]) -> None:
        """Rebuild the monitors from a stored run's turns (before it goes on)."""
        folder = TranscriptFolder()
        for env in envelopes:
            record = folder.feed(env)
            if record is None or folder.state is None:
                continue
            if env.event_type == EV_TEXT or env.event_type == EV_PACKET:
                self.observe(env, folder.state, record.closes is not None, record.closes)
        self._saved = None

    def _json(self, broken: Broken) -> dict[str, Any]:
        prop = broken.prop
        return {
            "property": prop.name,
            "claim": claim_text(prop),
            "turn": broken.turn,
            "why": explain(prop, broken, self.names),
            "on_violation": self.on_violation,
        }
