"""Scripted turns as replies: declared tool effects applied, scripts checked before a run.

>>> import flowc
>>> from flowc.runtime.script import parse_script
>>> from flowc.runtime.target import RunTarget
>>> flow = flowc.compile_flow("speaker a: human\\nspeaker b\\nsequence a -> b")
>>> script = parse_script({"script": {"b": [{"tool": "t"}]}})
>>> check_script(RunTarget.from_compiled(flow), script)
Traceback (most recent call last):
  ...
flowc.runtime.script.ScriptError: script.b[0]: b has no tool `t` (it declares none)
"""

from __future__ import annotations

from flowc.compiler.tool_effects import (
    KICKOFF_TEXT_ONLY,
    AlternativeError,
    ToolEffectInfo,
    bare_alternative,
    bare_alternatives,
    bare_effect_refusal,
    human_write_refusal,
    match_alternative,
)
from flowc.runtime.contracts import SCRIPT_ADVICE, call_breach, reply_breach, seen_tools
from flowc.runtime.replies import Finish, Handoff, Reply, ToolCall
from flowc.runtime.script import Script, ScriptCall, ScriptError, ScriptTurn
from flowc.runtime.target import RunTarget

__all__ = [
    "bare_step",
    "bare_tool",
    "check_script",
    "pick_alternative",
    "refuse_bare_graph_keys",
    "reply_for",
]


# ── turning script turns into replies ─────────────────────────────────────────


def pick_alternative(
    alts: tuple[ToolEffectInfo, ...], call: ScriptCall, speaker: str, where: str
) -> ToolEffectInfo | None:
    """The declared alternative a scripted call takes (the compiler's rule, one for all)."""
    try:
        return match_alternative(
            alts,
            call.effects,
            call.handoff,
            call.finish,
            speaker,
            call.tool or "",
            (call.set, call.delete),
        )
    except AlternativeError as err:
        raise ScriptError(f"{where}: {err}") from None


def _tool_call(target: RunTarget, speaker: str, call: ScriptCall, where: str) -> ToolCall:
    sets = dict(call.set)
    deletes = list(call.delete)
    handoff, finish = call.handoff, call.finish
    bare: tuple[str, int] | None = None  # (a bare step: the tool it is a call of)
    if call.tool is not None and target.tools is not None:
        key = (speaker, call.tool)
        if key not in target.tools:
            declared = sorted(t for s, t in target.tools if s == speaker)
            hint = f" (declared: {', '.join(declared)})" if declared else " (it declares none)"
            raise ScriptError(f"{where}: {speaker} has no tool `{call.tool}`{hint}")
        alt = pick_alternative(target.tools[key], call, speaker, where)
        if alt is not None:
            deletes = [*alt.clears, *(k for k in deletes if k not in alt.clears)]
            sets = {**dict(alt.sets), **sets}
            handoff, finish = alt.handoff, alt.finish
    elif bare_step(target, speaker, call):
        # a flow's model speaker acts through its declared tools (AG2: a tool's return):
        # its bare step is a call of the one tool that does exactly that
        assert target.tools is not None
        alts = {t: a for (s, t), a in target.tools.items() if s == speaker}
        effect = ToolEffectInfo(tuple(sets.items()), tuple(deletes), handoff, finish)
        refusal = bare_effect_refusal(speaker, alts, effect, script=not where.startswith("line "))
        if refusal is not None:
            place = target.declared_at.get(speaker)
            if bare_alternatives(alts, effect):  # ambiguous: the words say what to write
                raise ScriptError(f"{where}: {refusal}")
            raise ScriptError(
                f"{where}: {refusal}; "
                + (
                    f"`{speaker}` is declared at {place}: give the call the "
                    "`tool` that does it, or declare one there"
                    if place
                    else "give the call the `tool` that does it, or declare one in the flow"
                )
            )
        bare = bare_alternative(alts, effect)
    if handoff is not None and handoff not in target.ids:
        raise ScriptError(
            f"{where}: hands off to `{handoff}`, which is not a participant "
            f"({', '.join(target.speakers)})"
        )
    result: Handoff | Finish | None = None
    if finish is not None:
        result = Finish(summary=call.summary, reason=finish)
    elif handoff is not None:
        # the handoff's own reason, as AG2 records it: not the call's `reason` argument
        result = Handoff(target=target.ids[handoff], reason=call.reason)
    name = call.tool or (
        bare[0]
        if bare is not None
        else "finish"
        if finish is not None
        else "handoff"
        if handoff is not None
        else "set_context"
    )
    out = ToolCall(name, dict(call.args), sets, tuple(deletes), result)
    if call.tool is not None and target.tools is not None:
        # the call as it will run (the declared effects and the script's own writes) is
        # held to the declaration as an agent's call is (flowc.runtime.contracts)
        key = (speaker, call.tool)
        breach = call_breach(
            speaker,
            out,
            target.tools[key],
            names=target.names,
            routed_on=frozenset(),
            place=target.tool_at.get(key),
        )
        if breach is not None:
            raise ScriptError(f"{where}: {breach.message}")
    return out


def bare_step(target: RunTarget, speaker: str, call: ScriptCall) -> bool:
    """Whether ``call`` is a flow's model speaker's bare step: a hand-off, finish or
    context write without a ``tool`` (a scenario's ``bot sets k = 1``, a script's ``set``),
    which is a call of the one declared tool that does exactly that."""
    return call.tool is None and target.tools is not None and speaker not in target.humans


def bare_tool(target: RunTarget, speaker: str, call: ScriptCall) -> tuple[str, int] | None:
    """The tool (and its alternative's index) a model speaker's bare step is a call of,
    for the hub (routing, the transcript) and the property monitors alike; ``None`` when
    ``call`` is no bare step, or no single tool does it (:func:`reply_for` refuses it)."""
    if not bare_step(target, speaker, call) or target.tools is None:
        return None
    alts = {t: a for (s, t), a in target.tools.items() if s == speaker}
    effect = ToolEffectInfo(tuple(call.set.items()), tuple(call.delete), call.handoff, call.finish)
    return bare_alternative(alts, effect)


def reply_for(target: RunTarget, speaker: str, turn: ScriptTurn) -> Reply:
    """A scripted turn as the reply an agent would give (declared tool effects applied)."""
    calls: tuple[ToolCall, ...] = tuple(
        _tool_call(target, speaker, c, turn.where) for c in turn.calls
    )
    return Reply(turn.say, calls)


#: the script keys only a bare JSON graph takes (a `.flow` declares these), and where a
#: flow declares each instead
_BARE_GRAPH_KEYS = {
    "participants": "`speaker NAME` declares each speaker",
    "humans": "`speaker NAME: human` declares a human",
    "creator": "`initiator NAME` names who opens the run",
    "context_vars": "`context KEY = VALUE` sets the initial context",
}


def refuse_bare_graph_keys(target: RunTarget, script: Script) -> None:
    """Refuse a script that opens a new run of a `.flow` and gives what only a bare graph
    takes from one (``participants``, ``humans``, ``creator``, ``context_vars``): the flow
    declares them. Only where a run is opened (run, submit, fork: a fork's script is
    given for the new run): a resumed or worked run is rebuilt from its stored opening,
    where these keys never had an effect, so a run stored before with one of them goes
    on as it did."""
    if target.tools is None:  # (a bare JSON graph: the script gives them)
        return
    given = [key for key in _BARE_GRAPH_KEYS if getattr(script, key) is not None]
    if given:
        key, others = given[0], ", ".join(f"`{k}`" for k in given[1:])
        raise ScriptError(
            f"{key}: only for a bare JSON graph, not for a .flow, where "
            f"{_BARE_GRAPH_KEYS[key]}; drop it from the script"
            + (f" (and {others}, for the same reason)" if others else "")
        )


def check_script(target: RunTarget, script: Script, *, opens: bool = True) -> None:
    """Refuse, before anything runs, a script the target cannot run; ``opens``: the run
    starts with it (a fork past turn 0 goes on from a kickoff posted already)."""
    known = set(target.speakers)
    if target.creator not in known:
        raise ScriptError(f"creator `{target.creator}` is not a participant")
    for who in target.humans or ():
        if who not in known:
            raise ScriptError(f"humans: `{who}` is not a participant")
    if target.start not in known:
        raise ScriptError(
            f"the start speaker `{target.start}` is not a participant "
            f"({', '.join(target.speakers)})"
        )
    seen = seen_tools(target)
    first = script.turns.get(target.start, ())
    if opens and script.kickoff is None and target.start not in target.humans and first:
        check_kickoff(target.start, first[0])
    for speaker, turns in script.turns.items():
        if speaker not in known:
            raise ScriptError(
                f"script.{speaker}: `{speaker}` is not a speaker of this flow "
                f"({', '.join(target.speakers)})"
            )
        for turn in turns:
            if not turn.calls:
                continue  # text alone: nothing to refuse (and a reply of just the text)
            if speaker in target.humans:
                check_human_turn(target, speaker, turn)
            reply = reply_for(target, speaker, turn)
            if target.tools is not None and speaker not in target.humans:
                whole = reply_breach(
                    speaker,
                    reply.tool_calls,
                    names=target.names,
                    seen=seen,
                    speaker_at=target.declared_at.get(speaker),
                    advice=SCRIPT_ADVICE,
                )
                if whole is not None:
                    raise ScriptError(f"{turn.where}: {whole.message}")


def check_kickoff(speaker: str, turn: ScriptTurn) -> None:
    """A model speaker's kickoff (its first scripted turn, with no ``kickoff`` text) is
    posted as a plain message, as AG2 does: its model never runs for that turn, so a call
    or a bare step there is refused."""
    if turn.calls:
        raise ScriptError(f"{turn.where}: {KICKOFF_TEXT_ONLY.format(speaker=speaker)}")


def check_human_turn(target: RunTarget, speaker: str, turn: ScriptTurn) -> None:
    """A human posts text and writes the context keys it declares (as on AG2's hub, where a
    human client has no model and no tools); anything else is refused at the turn's place."""
    if any(c.tool is not None or c.handoff is not None or c.finish is not None for c in turn.calls):
        raise ScriptError(
            f"{turn.where}: `{speaker}` is a human; a human's turn is text "
            "and context writes (`set` / `delete`), not tool calls"
        )
    if target.human_writes is None:
        return  # a bare graph declares nothing: any key goes
    allowed = target.human_writes.get(speaker, frozenset())
    for call in turn.calls:
        for key in (*call.set, *call.delete):
            if key not in allowed:
                raise ScriptError(
                    f"{turn.where}: {human_write_refusal(speaker, key, sorted(allowed))}"
                )
