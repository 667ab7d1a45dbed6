"""A stored run's first turns as a ``scenario`` block (``flowc log RUN --scenario-upto N``).

:func:`scenario_upto` writes, in the flow language's scenario syntax, the turns 1 to N
of a run as its WAL recorded them — each speaker's text, the tool it called (with the
declared alternative the call took, when the tool has several), a human's context
writes — with an ``expect`` line after each turn for where the run went, and at the
end the turn count and the context keys the turns changed. Pasted into the flow, the
block makes ``flowc test`` replay those turns and check that they route as the run
did.

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

from collections.abc import Iterable
from typing import Any

from flowc.compiler.tool_effects import ToolEffectInfo, same_effect
from flowc.dsl.formatter import format_name, format_value
from flowc.runtime.envelope import Envelope
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import TurnRecord
from flowc.runtime.transitions import TransitionRegistry
from flowc.runtime.why import WhyError, fold_to_turn

__all__ = ["ForkError", "scenario_upto"]


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
        if not writes:
            raise ForkError(f"{where} called `{tool}`, which the flow does not declare")
        return f"{who} {writes}{_text(record.text)}"
    line = f"{who} calls {format_name(tool)}"
    if args:
        line += f" with {format_value(args)}"
    if declared:
        fitting = [alt for alt in declared if same_effect(alt, effect)]
        if not fitting:
            options = " | ".join(a.text() for a in declared)
            raise ForkError(
                f"{where}: its call of `{tool}` did {effect.text()}, which is none of what "
                f"the tool is declared to do ({options})"
            )
        if len(declared) > 1:
            line += " " + fitting[0].text()
    elif target.tools is not None and effect != ToolEffectInfo():
        raise ForkError(
            f"{where}: `{tool}` is declared with no effects, but the call did {effect.text()}"
        )
    return line + _text(record.text)


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
    for record in folder.records:
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
