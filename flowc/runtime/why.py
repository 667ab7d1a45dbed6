"""Why a stored run's turn went where it went (``flowc log RUN --why N``).

:func:`explain_turn` re-folds a run's WAL up to turn N with the runtime's own adapter,
then evaluates the speaker's rules on the state that turn's rules were evaluated on,
part by part, with the adapter's own tests
(:func:`~flowc.runtime.adapters.workflow.trace_condition`): the rule that fired, each
higher-priority rule that did not and which part of its condition was false with the
values it read, what the default target would have done, and a hand-off, a finish or
the turn cap when one decided instead.

>>> import flowc
>>> from flowc.runtime.script import parse_script
>>> from flowc.runtime.script_run import run_script
>>> from flowc.runtime.target import RunTarget
>>> from flowc.runtime.wal import MemoryStore
>>> import asyncio
>>> src = '''speaker user: human { sets ok }
... speaker bot
... when context.ok == true then terminate "done"
... when from user then bot
... when from bot then user'''
>>> target = RunTarget.from_compiled(flowc.compile_flow(src), source_text=src)
>>> store = MemoryStore()
>>> script = parse_script({"kickoff": "hi", "script": {"bot": ["hello"]}})
>>> result = asyncio.run(run_script(target, script, store=store))
>>> why = explain_turn(store.read(result.channel_id), 1)
>>> print(why.text())
turn 1: user → bot, by rule 2, line 4: when from user then bot
  rule 2, line 4: when from user then bot
    `from user` held: the speaker was user
  higher-priority rules that did not fire:
    rule 1, line 3: when context.ok == true then terminate "done"
      `context.ok == true` was false: `ok` was unset after the turn
  the default (otherwise terminate "after_work") would have ended the run: "after_work"
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.diagnostics import counted
from flowc.dsl.names import format_name, format_value
from flowc.escaping import one_line
from flowc.runtime.adapters.base import ChannelState
from flowc.runtime.adapters.workflow import (
    DEFAULT,
    FINISH,
    HANDOFF,
    ConditionTrace,
    WorkflowAdapter,
    WorkflowState,
    priority_order,
    routing_tool,
    rule_state,
    senders_of,
    trace_condition,
)
from flowc.runtime.envelope import EV_CHANNEL_OPENED, EV_PACKET, Envelope
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import TranscriptFolder, TurnRecord
from flowc.runtime.transitions import TransitionRegistry

__all__ = [
    "SCHEMA",
    "ConditionWhy",
    "DefaultWhy",
    "RuleWhy",
    "TurnOutOfRange",
    "TurnWhy",
    "WhyError",
    "explain_turn",
    "fold_to_turn",
]

#: the ``schema`` of :meth:`TurnWhy.to_json` (a new one if a field changes meaning)
SCHEMA = "flowc.why/1"

#: the most characters of a nested part's text, or of a value, shown in a sentence
SHOWN = 60


def _short(text: str) -> str:
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


class WhyError(ValueError):
    """The run cannot be explained (not a workflow run, or damaged)."""


class TurnOutOfRange(WhyError):
    """Turn ``turn`` is not a turn of the run, which has ``turns``."""

    def __init__(self, turn: int, turns: int) -> None:
        self.turn, self.turns = turn, turns
        span = "it has no turns" if turns == 0 else f"its turns are 1 to {turns}"
        super().__init__(f"the run has {counted(turns, 'turn')}: no turn {turn} ({span})")


# ── the explanation ──────────────────────────────────────────────────────────


@attrs.frozen
class ConditionWhy:
    """One condition (or part of one) as it was evaluated on the turn.

    ``holds`` is ``None`` when it was not evaluated (an earlier part of its ``and`` /
    ``or`` decided); ``because`` says what it read, in words, and ``reads`` the same
    as data (``{"key", "is_set"}`` for a context test, whose value is in
    :attr:`TurnWhy.context`; ``{"speaker"}`` for ``from``; ``{"tool"}`` for ``tool``,
    the tool the turn routed with; empty for a composite or a custom condition). The
    text of a composite part is cut at :data:`SHOWN` characters (the rule gives it
    whole), as a value in ``because`` is: the output stays proportional to the flow
    and the run however deeply conditions nest and however large values are.
    """

    text: str
    holds: bool | None
    because: str = ""
    reads: dict[str, Any] = attrs.field(factory=dict)
    parts: tuple[ConditionWhy, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "holds": self.holds,
            "because": self.because,
            "reads": dict(self.reads),
            "parts": [p.to_json() for p in self.parts],
        }

    def lines(self, indent: str) -> list[str]:
        if self.holds is None:
            return [f"{indent}`{self.text}` was not evaluated (an earlier part decided)"]
        verdict = "held" if self.holds else "was false"
        head = f"{indent}`{self.text}` {verdict}" + (f": {self.because}" if self.because else "")
        out = [head]
        for part in self.parts:
            out += part.lines(indent + "  ")
        return out


@attrs.frozen
class RuleWhy:
    """One rule of the flow evaluated on the turn: its number (from 1), line and text as
    the transcript quotes it, whether its condition held, and the condition's parts."""

    rule: int
    line: int | None
    label: str  # ``rule 3, line 14: when from drafter then reviewer``
    text: str  # the rule as written in the flow
    holds: bool
    condition: ConditionWhy

    def to_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self, recurse=False), "condition": self.condition.to_json()}

    def lines(self, indent: str) -> list[str]:
        return [f"{indent}{self.label}", *self.condition.lines(indent + "  ")]


@attrs.frozen
class DefaultWhy:
    """What the default target (``otherwise ...``) chooses on the turn's state."""

    target: str  # ``otherwise terminate "after_work"``
    next_speaker: str | None
    close_reason: str | None  # when it ends the run

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "next_speaker": self.next_speaker,
            "close_reason": self.close_reason,
        }

    def phrase(self) -> str:
        if self.next_speaker is None:
            return f"would have ended the run: {format_value(self.close_reason or '')}"
        return f"would have chosen {format_name(self.next_speaker)}"


@attrs.frozen
class TurnWhy:
    """Why turn ``turn`` of run ``run_id`` went where it went.

    ``kind`` is what decided: ``"rule"``, ``"default"``, ``"handoff"`` or ``"finish"``
    (a hand-off or a finish bypasses every rule). ``checked`` are the speaker's rules
    evaluated before the one that fired, in priority order, each false (for
    ``"default"``: all of them); ``fired`` the rule that fired (for a hand-off or a
    finish: the rule that would have fired without it, or ``None``). Rules that name
    other speakers only (``from X``, ``from X and ...``) cannot fire on this speaker's
    turn: ``other_speakers`` lists their numbers. ``agrees`` is whether this
    evaluation reaches the decision the transcript shows (the WAL re-folded, as
    ``flowc log`` does); only a custom condition that reads something else (the clock,
    how often it was asked) can make it false.
    """

    run_id: str
    turn: int
    speaker: str
    kind: str
    decided_by: str  # as the transcript words it
    next_speaker: str | None
    closes: str | None  # the close reason, when the turn ended the run
    close_kind: str | None  # "terminate", "finish" or "max_turns"
    fired: RuleWhy | None
    checked: tuple[RuleWhy, ...]
    other_speakers: tuple[int, ...]
    default: DefaultWhy
    routing: dict[str, Any] | None  # the hand-off or finish that decided, as recorded
    max_turns: int | None
    turn_count: int
    agrees: bool
    #: the context keys the evaluated conditions read that were set after the turn,
    #: with their values (each once, however many conditions read it)
    context: dict[str, Any] = attrs.field(factory=dict)
    #: the names of the tools the turn called, in order
    tool_calls: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The ``--why`` ``--json`` document (``schema``: :data:`SCHEMA`)."""
        return {
            "schema": SCHEMA,
            "run_id": self.run_id,
            "turn": self.turn,
            "speaker": self.speaker,
            "kind": self.kind,
            "decided_by": self.decided_by,
            "next_speaker": self.next_speaker,
            "closes": self.closes,
            "close_kind": self.close_kind,
            "fired": None if self.fired is None else self.fired.to_json(),
            "checked": [r.to_json() for r in self.checked],
            "other_speakers": list(self.other_speakers),
            "default": self.default.to_json(),
            "routing": self.routing,
            "max_turns": self.max_turns,
            "turn_count": self.turn_count,
            "agrees": self.agrees,
            "context": dict(self.context),
            "tool_calls": list(self.tool_calls),
        }

    def text(self) -> str:
        """The explanation as ``flowc log RUN --why N`` prints it."""
        if self.next_speaker is not None:
            where = f"→ {format_name(self.next_speaker)}"
        else:
            where = f"■ ended the run: {format_value(self.closes or '')}"
        out = [f"turn {self.turn}: {format_name(self.speaker)} {where}, by {self.decided_by}"]
        if self.close_kind == "max_turns":  # routed, but the run ended there: said at once
            out[0] += f"; max_turns {self.max_turns} then closed the run"
        if self.kind in (HANDOFF, FINISH):
            r = self.routing or {}
            tool = format_name(str(r.get("tool") or self.kind))
            if self.kind == HANDOFF:
                out.append(
                    f"  the turn's tool {tool} handed off to "
                    f"{format_name(self.next_speaker or '')}: a hand-off bypasses every rule"
                )
            else:
                out.append(
                    f"  the turn's tool {tool} finished the run "
                    f"({format_value(self.closes or '')}): a finish bypasses every rule"
                )
            if self.fired is not None:
                out.append("  without it, this rule would have fired:")
                out += self.fired.lines("    ")
            else:
                out.append(
                    f"  without it, no rule would have fired: the default {self.default.phrase()}"
                )
        elif self.fired is not None:
            out += self.fired.lines("  ")
        if self.checked:
            what = (
                "no rule of this speaker fired"
                if self.kind == DEFAULT
                else "higher-priority rules that did not fire"
                if self.kind == "rule"
                else "the rules checked before it, none of which would have fired"
                if self.fired is not None
                else "the speaker's rules, none of which would have fired"
            )
            out.append(f"  {what}:")
            for rule in self.checked:
                out += rule.lines("    ")
        elif self.kind == DEFAULT and self.fired is None:
            out.append("  no rule can fire on this speaker's turn")
        if self.other_speakers:
            nums = ", ".join(str(n) for n in self.other_speakers)
            out.append(
                f"  not checked: {counted(len(self.other_speakers), 'rule')} for other "
                f"speakers only ({'rule' if len(self.other_speakers) == 1 else 'rules'} {nums})"
            )
        if self.kind != DEFAULT and not (self.kind in (HANDOFF, FINISH) and self.fired is None):
            out.append(f"  the default ({self.default.target}) {self.default.phrase()}")
        if self.close_kind == "max_turns":
            out.append(
                f"  the run then reached max_turns {self.max_turns} "
                f'(turn {self.turn_count}) and closed: "max_turns"'
            )
        if not self.agrees:
            out.append(
                "  note: evaluating the rules again does not reach the decision the transcript "
                "shows (a custom condition that reads more than the turn and the context?)"
            )
        # one line per item: a name or a value the run holds (an agent's tool name, a
        # rule's label from a JSON graph) is written with its newlines and terminal
        # controls escaped, never acted on, so it cannot forge a line of the explanation
        return "\n".join(one_line(line) for line in out)


# ── building it ──────────────────────────────────────────────────────────────


def _tool_names(record: TurnRecord) -> list[str]:
    return [str(c.get("name")) for c in record.tool_calls]


def _condition_why(
    trace: ConditionTrace,
    state: WorkflowState,
    env: Envelope,
    record: TurnRecord,
    names: dict[str, str],
    read: dict[str, Any],
    top: bool = True,
) -> ConditionWhy:
    """``trace`` in words; the context keys it read (set ones) go into ``read``."""
    from flowc.compiler.describe import condition_text  # (the syntax tree: not for a worker)

    cond = trace.condition
    text = condition_text(cond, names)
    if not top and isinstance(cond, m.AllOf | m.AnyOf | m.Not):
        text = _short(text)
    holds = trace.holds
    if holds is None:
        return ConditionWhy(text, None)
    speaker = names.get(env.sender_id, env.sender_id)
    if isinstance(cond, m.Not) and isinstance(cond.condition, m.ContextEquals):
        cond = cond.condition  # `context.k != v`: one test, written as one
    if isinstance(cond, m.ContextEquals):
        key = cond.key
        is_set = key in state.context_vars
        value = state.context_vars.get(key)
        shown = _short(format_value(value)) if is_set else "unset"
        if is_set:
            read[key] = value
        return ConditionWhy(
            text,
            holds,
            f"`{_short(key)}` was {shown} after the turn",
            {"key": key, "is_set": is_set},
        )
    if isinstance(cond, m.FromSpeaker) or (
        isinstance(cond, m.AnyOf)
        and cond.conditions
        and all(isinstance(c, m.FromSpeaker) for c in cond.conditions)
    ):
        return ConditionWhy(
            text, holds, f"the speaker was {format_name(speaker)}", {"speaker": speaker}
        )
    if isinstance(cond, m.ToolCalled):
        routed = routing_tool(env) if env.event_type == EV_PACKET else None
        calls = _tool_names(record)
        if holds or routed is not None:
            because = f"the turn called {_short(format_name(str(routed)))}"
        elif calls:
            listed = ", ".join(_short(format_name(c)) for c in calls[:3])
            if len(calls) > 3:
                listed += f" and {len(calls) - 3} more"
            because = f"the turn called {listed}, " + (
                "which does not route" if len(calls) == 1 else "none of which routes"
            )
        else:
            because = "the turn called no tool"
        return ConditionWhy(text, holds, because, {"tool": routed})
    if isinstance(cond, m.Always):
        return ConditionWhy(text, holds, "it always holds")
    if isinstance(cond, m.AllOf | m.AnyOf | m.Not):
        parts = tuple(
            _condition_why(p, state, env, record, names, read, False) for p in trace.parts
        )
        if isinstance(cond, m.Not):
            because = "its part held" if parts[0].holds else "its part was false"
        elif isinstance(cond, m.AllOf):
            because = "every part held" if holds else "a part was false"
        else:
            because = "a part held" if holds else "no part held"
        return ConditionWhy(text, holds, because, {}, parts)
    return ConditionWhy(
        text,
        holds,
        f"the custom condition `{m.condition_name(cond)}` returned {str(holds).lower()}",
    )


def fold_to_turn(
    envelopes: Iterable[Envelope],
    n: int,
    registry: TransitionRegistry | None = None,
    *,
    start: TranscriptFolder | None = None,
) -> tuple[TranscriptFolder, WorkflowState, Envelope, TurnRecord]:
    """Re-fold a run's envelopes (``store.read(run_id)``) up to turn ``n`` (from 1):
    the folder after it, the state before it, its envelope and its record. Reads no
    further than turn ``n``. Raises :class:`TurnOutOfRange` or :class:`WhyError`.

    ``start``: a folder that folded the run's first envelopes (its opening among them,
    fewer than ``n`` turns), which ``envelopes`` continue; a copy of it goes on, so a
    reader that asks about many turns of a long run need not fold it from the start each
    time (``flowc view`` keeps such folders)."""
    if start is None:
        folder = TranscriptFolder(WorkflowAdapter(registry))
        first = True
    else:
        if start.metadata is None or start.turns >= n:
            raise WhyError(f"the folder to start from is not before turn {n}")
        folder = start.copy()
        first = False
    for env in envelopes:
        if first and env.event_type != EV_CHANNEL_OPENED:
            raise WhyError("the WAL of this run does not start with its opening")
        first = False
        before = folder.state
        record = folder.feed(env)
        if record is not None and record.number == n:
            assert before is not None
            return folder, before, env, record
        if folder.close is not None:
            break
    if first:
        raise WhyError("the run has no envelopes")
    raise TurnOutOfRange(n, folder.turns)


def explain_turn(
    envelopes: Iterable[Envelope],
    n: int,
    registry: TransitionRegistry | None = None,
    *,
    start: TranscriptFolder | None = None,
) -> TurnWhy:
    """Why turn ``n`` (from 1) of a stored run went where it went; ``envelopes`` is the
    run as its store returns it (``store.read(run_id)``), or what follows ``start``
    (see :func:`fold_to_turn`). ``registry`` holds the custom conditions and targets of
    the run's flow (default: those registered globally, as by ``--plugin``). Raises
    :class:`TurnOutOfRange` for a turn the run does not have, :class:`WhyError` for a
    WAL that is no workflow run."""
    from flowc.compiler.describe import target_text  # (the syntax tree: not for a worker)

    folder, before, env, record = fold_to_turn(envelopes, n, registry, start=start)
    metadata = folder.metadata
    after = folder.state
    assert metadata is not None and after is not None and after.table is not None
    target = RunTarget.from_metadata(metadata)
    names = target.names
    table = after.table
    state = rule_state(before, after)
    reg = folder.adapter.registry
    read: dict[str, Any] = {}

    def rule_why(index: int, t: m.Transition, trace: ConditionTrace) -> RuleWhy:
        return RuleWhy(
            index + 1,
            target.rule_line(index),
            target.describe_rule(index),
            target.rule_texts[index] if index < len(target.rule_texts) else "",
            bool(trace.holds),
            _condition_why(trace, state, env, record, names, read),
        )

    checked: list[RuleWhy] = []
    others: list[int] = []
    first: RuleWhy | None = None
    for index, t in priority_order(table.graph):
        senders = senders_of(t.when)
        if senders is not None and env.sender_id not in senders:
            others.append(index + 1)
            continue
        trace = trace_condition(t.when, state, env, reg)
        why = rule_why(index, t, trace)
        if trace.holds:
            first = why
            break
        checked.append(why)
    nxt, reason = table.default(state, env)
    default = DefaultWhy(
        f"otherwise {target_text(table.graph.default_target, names)}",
        None if nxt is None else names.get(nxt, nxt),
        None if nxt is not None else (reason or "workflow_terminated"),
    )
    by = after.decided_by
    kind = "rule" if isinstance(by, int) else str(by)
    if kind == "rule":
        agrees = first is not None and first.rule == int(by) + 1  # type: ignore[arg-type]
    elif kind == DEFAULT:
        agrees = first is None
    else:
        agrees = True
    accepted = folder.adapter.on_accepted(metadata, env, after)
    closes = accepted.auto_close_reason if accepted.next_state is ChannelState.CLOSED else None
    close_kind = None
    if closes is not None:
        close_kind = (
            "max_turns"
            if after.expected_next_speaker is not None
            else "finish"
            if by == FINISH
            else "terminate"
        )
    routing = record.routing if kind in (HANDOFF, FINISH) else None
    return TurnWhy(
        metadata.channel_id,
        n,
        record.speaker,
        kind,
        target.describe_decision(by),
        record.next_speaker,
        closes,
        close_kind,
        first,
        tuple(checked),
        tuple(others),
        default,
        dict(routing) if isinstance(routing, dict) else None,
        table.max_turns,
        after.turn_count,
        agrees,
        dict(sorted(read.items())),
        tuple(_tool_names(record)),
    )
