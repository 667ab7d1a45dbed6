"""Runtime contracts: every turn a run takes is held to what its flow declares.

``flowc check`` reads a flow's declarations as facts: a tool does one of its declared
alternatives (``tool approve sets approved = true``), only a declared tool is routed on,
a custom target resolves to one of the speakers its ``-> A | B`` lists; and it takes
each turn as one call, so a reply makes at most one call the flow can see
(:func:`reply_breach`). A script is held to them before its run starts
(:mod:`flowc.runtime.scripted_replies`); a real agent (an async callable, an AG2
``Agent``) or a plugin's target class can only be held while the run goes: a
:class:`Contract` checks each turn as it is taken.

A turn that breaks a declaration is a :class:`Breach`. Under ``enforce`` (the default)
the turn is refused (:class:`ContractError`): nothing of it is written, the run stops
open on that speaker and ``flowc resume`` continues it. Under ``warn`` the turn goes
through and its breaches ride on its envelope (:data:`CONTRACT_KEY`), so the transcript,
``--json`` and ``flowc log`` show them.

>>> import flowc
>>> from flowc.runtime.replies import Reply, ToolCall
>>> from flowc.runtime.target import RunTarget
>>> flow = flowc.compile_flow('''
... speaker user: human
... speaker reviewer { tool approve sets approved = true }
... when from user then reviewer
... ''')
>>> contract = Contract.of(RunTarget.from_compiled(flow, filename="review.flow"))
>>> call = ToolCall("approve", set={"approved": "yes", "secret": 1})
>>> [b.message for b in contract.reply_breaches("reviewer", Reply("ok", (call,)))]
['`reviewer` called `approve`, which sets approved = "yes", sets secret = 1, but the flow declares that it sets approved = true (review.flow:3:20: `tool approve sets approved = true`)']
>>> contract.reply_breaches("reviewer", Reply("ok", (ToolCall("approve", set={"approved": True}),)))
[]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.quoting import ticked
from flowc.compiler.tool_effects import ToolEffectInfo, same_effect
from flowc.dsl.names import format_name
from flowc.runtime.adapters.base import ProtocolError
from flowc.runtime.adapters.workflow import DEFAULT, tool_rule_names
from flowc.runtime.replies import Finish, Handoff, Reply, ToolCall
from flowc.runtime.target import RunTarget

__all__ = [
    "AGENT_ADVICE",
    "CONTRACT_KEY",
    "CONTRACT_MODES",
    "ENFORCE",
    "SCRIPT_ADVICE",
    "WARN",
    "Breach",
    "Contract",
    "ContractError",
    "call_breach",
    "declaration_text",
    "reply_breach",
    "seen_calls",
    "seen_tools",
]

#: refuse a turn that breaks a declaration (the default) / let it through with a warning
ENFORCE, WARN = "enforce", "warn"
CONTRACT_MODES = (ENFORCE, WARN)

#: the key of a turn's envelope that holds its breaches, under ``warn`` (flowc's addition
#: to AG2's envelope, as ``tool_calls``: AG2's fold ignores it)
CONTRACT_KEY = "contract"


@attrs.frozen
class Breach:
    """One way a turn broke the flow's declarations: whose turn, which tool (or custom
    target) and where the declaration it broke is written (``FILE:LINE:COL``, when the
    flow's file is known)."""

    speaker: str
    tool: str | None = None
    target: str | None = None
    declared_at: str | None = None
    message: str = attrs.field(kw_only=True)

    def to_json(self) -> dict[str, Any]:
        """The fields, in their order (the message last)."""
        return attrs.asdict(self)


class ContractError(ProtocolError):
    """A turn refused because it breaks the flow's declarations (see :class:`Breach`)."""

    def __init__(self, breaches: list[Breach]) -> None:
        self.breaches = breaches
        super().__init__("refused: " + "; ".join(b.message for b in breaches))


def declaration_text(tool: str, alts: tuple[ToolEffectInfo, ...]) -> str:
    """A tool's declaration as the flow writes it.

    >>> declaration_text("decide", (ToolEffectInfo(handoff="b"), ToolEffectInfo(finish="x")))
    'tool decide hands off to b | finishes "x"'
    """
    name = f"tool {format_name(tool)}"
    return f"{name} {' | '.join(a.text() for a in alts)}" if alts else name


def effect_of(call: ToolCall, names: Mapping[str, str]) -> ToolEffectInfo:
    """What ``call`` did, in the terms of a declaration (a hand-off's agent id as the
    speaker's name, ``names``: agent id -> name)."""
    result = call.result
    handoff = finish = None
    if isinstance(result, Finish):
        finish = result.reason
    elif isinstance(result, Handoff):
        handoff = names.get(result.target, result.target)
    return ToolEffectInfo(tuple(call.set.items()), tuple(call.delete), handoff, finish)


def _returned(alt: ToolEffectInfo) -> ToolEffectInfo:
    """What a call doing ``alt`` returns: a tool returns one ``Handoff`` or ``Finish``, and
    of an alternative that hands off and finishes, the finish wins (the run ends)."""
    return attrs.evolve(alt, handoff=None) if alt.finish is not None else alt


def call_breach(
    speaker: str,
    call: ToolCall,
    alts: tuple[ToolEffectInfo, ...] | None,
    *,
    names: Mapping[str, str],
    routed_on: frozenset[str],
    declared: tuple[str, ...] = (),
    place: str | None = None,
    speaker_at: str | None = None,
    read: frozenset[str] = frozenset(),
) -> Breach | None:
    """Why ``speaker``'s ``call`` breaks the flow's declarations, or ``None`` when it
    does not: the one check of a tool call, for scripts and agents alike.

    ``alts`` are the alternatives the flow declares for that tool of that speaker
    (``None``: the speaker does not declare it). A declared tool's call must do exactly
    one of them (a plain tool: nothing at all). A call of a tool the speaker does not
    declare must do nothing the flow's routing could see: no context write, no hand-off,
    no finish, no ``tool`` rule routes on its name (``routed_on``) and no property's
    ``tool`` reads it (``read``). ``declared`` are
    the speaker's declared tools, ``place`` where the tool is declared and ``speaker_at``
    where the speaker is (for the message).

    >>> call_breach("a", ToolCall("go"), (ToolEffectInfo(handoff="b"),), names={},
    ...             routed_on=frozenset()).message
    '`a` called `go`, which does nothing, but the flow declares that it hands off to b (`tool go hands off to b`)'
    >>> call_breach("a", ToolCall("search"), None, names={}, routed_on=frozenset()) is None
    True
    """
    effect = effect_of(call, names)
    tool = call.name
    if alts is not None:
        if (not alts and effect == ToolEffectInfo()) or any(
            same_effect(_returned(a), effect) for a in alts
        ):
            return None
        said = "does nothing" if effect == ToolEffectInfo() else effect.text()
        if not alts:
            declares = "declares it with no effects"
        elif len(alts) == 1:
            declares = f"declares that it {alts[0].text()}"
        else:
            declares = f"declares that it does one of: {' | '.join(a.text() for a in alts)}"
        where = f"{place}: " if place else ""
        return Breach(
            speaker,
            message=f"`{speaker}` called `{tool}`, which {said}, but the flow "
            f"{declares} ({where}`{declaration_text(tool, alts)}`)",
            tool=tool,
            declared_at=place,
        )
    doing = []
    if effect != ToolEffectInfo():
        doing.append(effect.text())
    if tool in routed_on:
        doing.append(f"a `tool {format_name(tool)}` rule routes on it")
    elif tool in read:
        doing.append(f"a property reads `tool {format_name(tool)}`")
    if not doing:
        return None
    mine = f"it declares {', '.join(declared)}" if declared else "it declares none"
    there = f"; declare it at {speaker_at}" if speaker_at else "; declare it on the speaker"
    return Breach(
        speaker,
        message=f"`{speaker}` called `{tool}`, a tool the flow does not declare for "
        f"it ({mine}), and {' and '.join(doing)}{there}, with what it does",
        tool=tool,
        declared_at=speaker_at,
    )


def seen_tools(target: RunTarget) -> frozenset[str]:
    """The tools whose every call the flow sees, even a call that does nothing: those a
    ``tool`` rule routes on, and those a property's ``tool`` atom names."""
    from flowc.compiler.monitor import walk
    from flowc.compiler.properties import expressions

    named = {
        e.tool_name
        for prop in target.properties
        for top in expressions(prop)
        for e in walk(top)
        if isinstance(e, m.ToolCalled)
    }
    return tool_rule_names(target.graph) | frozenset(named)


def seen_calls(
    calls: tuple[ToolCall, ...], names: Mapping[str, str], seen: frozenset[str]
) -> list[ToolCall]:
    """The calls of one reply that the flow can see: each writes context, hands off,
    finishes, or is of a tool in ``seen`` (:func:`seen_tools`)."""
    return [c for c in calls if c.name in seen or effect_of(c, names) != ToolEffectInfo()]


#: what :func:`reply_breach` advises: an agent's reply, a script's turn
AGENT_ADVICE = "make them in separate replies (turn off parallel tool calls in the model config)"
SCRIPT_ADVICE = "make them separate turns of the script"


def reply_breach(
    speaker: str,
    calls: tuple[ToolCall, ...],
    *,
    names: Mapping[str, str],
    seen: frozenset[str],
    speaker_at: str | None = None,
    advice: str = AGENT_ADVICE,
) -> Breach | None:
    """Why one reply of ``speaker`` breaks the declarations as a whole, or ``None``: it
    makes two different calls or more that the flow can see (:func:`seen_calls`;
    ``seen``: the tools :func:`seen_tools` names; the same call twice, as the run records
    it, is one: :func:`_identity`). ``flowc check`` takes a turn as one
    call (one of the speaker's tools doing one of its alternatives), so a reply whose
    calls together write two tools' keys, or route on one and write another's, would
    leave the runs every verdict rests on. The same call made twice (the same tool, doing
    the same) is one call as the flow sees it.

    >>> print(reply_breach("a", (ToolCall("x", set={"k": 1}), ToolCall("y", delete=("k",))),
    ...                    names={}, seen=frozenset(), speaker_at="f.flow:2:9").message)
    `a` (f.flow:2:9) made 2 calls in one reply that the flow can see (`x`, `y`): flowc's analysis takes a turn as one call that writes context, hands off, finishes, is routed on or is read by a property, with calls beside it that do none of these; make them in separate replies (turn off parallel tool calls in the model config)
    >>> reply_breach("a", (ToolCall("search"), ToolCall("y", delete=("k",))), names={},
    ...              seen=frozenset()) is None
    True
    >>> twice = (ToolCall("y", set={"k": 1}), ToolCall("y", set={"k": 1}))
    >>> reply_breach("a", twice, names={}, seen=frozenset()) is None
    True
    >>> spaced = (ToolCall("go on", set={"k": 1}), ToolCall("go on", set={"k": 2}))
    >>> "(`go on` 2 times" in reply_breach("a", spaced, names={}, seen=frozenset()).message
    True
    """
    made = seen_calls(calls, names, seen)
    if len({_identity(c, names) for c in made}) < 2:
        return None
    if len({c.name for c in made}) == 1:
        listed = f"{ticked(made[0].name)} {len(made)} times, not all doing the same"
    else:
        listed = ", ".join(ticked(c.name) for c in made)
    where = f" ({speaker_at})" if speaker_at else ""
    return Breach(
        speaker,
        message=f"`{speaker}`{where} made {len(made)} calls in one reply that the flow can "
        f"see ({listed}): flowc's analysis takes a turn as one call that writes context, "
        "hands off, finishes, is routed on or is read by a property, with calls beside it "
        f"that do none of these; {advice}",
        tool=made[1].name,
        declared_at=speaker_at,
    )


def _identity(call: ToolCall, names: Mapping[str, str]) -> str:
    """What the run records of a call the flow sees: its tool, its writes (in any order;
    ``1`` and ``true`` differ, as in the run's context), its hand-off or finish with their
    reason and summary, and the ``reason`` a routing record takes from its args."""
    effect = effect_of(call, names)
    result = call.result
    return json.dumps(
        {
            "tool": call.name,
            # (an agent's keys may be anything: ordered by their text)
            "sets": sorted(effect.sets, key=lambda kv: repr(kv[0])),
            "clears": sorted(effect.clears, key=repr),
            "result": None if result is None else attrs.asdict(result),
            "reason": (call.args or {}).get("reason"),
        },
        sort_keys=True,
        default=str,
    )


@attrs.frozen
class Contract:
    """A run's declarations, as the hub checks each turn against them.

    ``enforce``: refuse a turn that breaks them (else let it through with a warning).
    Built from a :class:`~flowc.runtime.target.RunTarget` (:meth:`of`); a bare graph
    declares nothing about its tools, so only its custom targets would be held (it has
    none with ``->`` lists): :meth:`of` returns a contract that lets everything through.
    """

    enforce: bool
    #: agent id -> speaker name
    names: dict[str, str]
    #: (speaker, tool) -> declared alternatives; ``None``: tools are not declared
    tools: dict[tuple[str, str], tuple[ToolEffectInfo, ...]] | None
    routed_on: frozenset[str]
    tool_at: dict[tuple[str, str], str]
    declared_at: dict[str, str]
    #: ``decided_by`` (a rule's index, or ``"default"``) -> the custom target there: its
    #: name, the agent ids it may resolve to (``None``: terminate), the speakers' names
    #: as declared, and where it is declared
    targets: dict[int | str, tuple[str, frozenset[str | None], tuple[str | None, ...], str | None]]
    #: the speakers whose replies are checked (``None``: every agent's)
    held: frozenset[str] | None = None
    #: the tools whose calls the flow sees even when they do nothing (:func:`seen_tools`)
    seen: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls, target: RunTarget, mode: str = ENFORCE, held: frozenset[str] | None = None
    ) -> Contract:
        """The contract of ``target``'s declarations, in ``mode`` (``enforce`` / ``warn``);
        ``held``: the speakers whose replies are checked (``None``: every agent's)."""
        if mode not in CONTRACT_MODES:
            raise ValueError(f"contracts: {mode!r} is not one of {', '.join(CONTRACT_MODES)}")
        graph = target.graph
        targets: dict[
            int | str, tuple[str, frozenset[str | None], tuple[str | None, ...], str | None]
        ] = {}
        decls = target.custom_targets
        if decls:
            ids = target.ids

            def entry(
                then: m.Target,
            ) -> tuple[str, frozenset[str | None], tuple[str | None, ...], str | None] | None:
                if not isinstance(then, m.CustomTarget):
                    return None
                found = decls.get(then.name)
                if found is None:
                    return None
                results, place = found
                return (
                    then.name,
                    frozenset(None if r is None else ids.get(r, r) for r in results),
                    results,
                    place,
                )

            for i, t in enumerate(graph.transitions):
                got = entry(t.then)
                if got is not None:
                    targets[i] = got
            got = entry(graph.default_target)
            if got is not None:
                targets[DEFAULT] = got
        return cls(
            mode == ENFORCE,
            target.names,
            target.tools,
            tool_rule_names(graph),
            dict(target.tool_at),
            dict(target.declared_at),
            targets,
            None if held is None else frozenset(target.ids.get(h, h) for h in held),
            seen_tools(target),
        )

    def reply_breaches(self, speaker_id: str, reply: Reply) -> list[Breach]:
        """How an agent's ``reply`` breaks the declarations of its speaker's tools."""
        calls = reply.tool_calls
        tools = self.tools
        if not calls or tools is None or (self.held is not None and speaker_id not in self.held):
            return []
        speaker = self.names.get(speaker_id, speaker_id)
        declared = tuple(t for s, t in tools if s == speaker)
        out = []
        for call in calls:
            key = (speaker, call.name)
            breach = call_breach(
                speaker,
                call,
                tools.get(key),
                names=self.names,
                routed_on=self.routed_on,
                declared=declared,
                place=self.tool_at.get(key),
                speaker_at=self.declared_at.get(speaker),
                read=self.seen,
            )
            if breach is not None:
                out.append(breach)
        whole = reply_breach(
            speaker,
            calls,
            names=self.names,
            seen=self.seen,
            speaker_at=self.declared_at.get(speaker),
        )
        if whole is not None:
            out.append(whole)
        return out

    def decision_breach(
        self, sender_id: str, decided_by: int | str | None, next_speaker: str | None
    ) -> Breach | None:
        """How a turn's routing breaks a custom target's ``-> A | B`` list: the target
        that decided (``decided_by``) chose ``next_speaker`` (``None``: it terminated),
        which its declaration does not list."""
        if decided_by is None:
            return None
        entry = self.targets.get(decided_by)
        if entry is None:
            return None
        name, allowed, listed, place = entry
        if next_speaker in allowed:
            return None
        chose = (
            "terminate"
            if next_speaker is None
            else f"`{self.names.get(next_speaker, next_speaker)}`"
        )
        rule = "the `otherwise` target" if decided_by == DEFAULT else f"rule {int(decided_by) + 1}"
        decl = " | ".join("terminate" if r is None else format_name(r) for r in listed)
        where = f"{place}: " if place else ""
        speaker = self.names.get(sender_id, sender_id)
        return Breach(
            speaker,
            message=f"after `{speaker}`'s turn, custom target `{name}` ({rule}) chose "
            f"{chose}, which its declaration does not list "
            f"({where}`target {format_name(name)}(...) -> {decl}`)",
            target=name,
            declared_at=place,
        )

    # what the hub calls on each turn -----------------------------------------------

    def check_reply(self, speaker_id: str, reply: Reply) -> list[dict[str, Any]]:
        """Hold an agent's ``reply`` to its tools' declarations: raises
        :class:`ContractError` under ``enforce``; under ``warn``, the breaches as JSON (to
        :meth:`annotate` the turn's envelope with)."""
        breaches = self.reply_breaches(speaker_id, reply)
        if breaches and self.enforce:
            raise ContractError(breaches)
        return [b.to_json() for b in breaches]

    def check_decision(self, sender_id: str, state: Any) -> dict[str, Any] | None:
        """Hold the routing a turn's fold chose (``state``: the workflow state after it) to
        the ``-> A | B`` list of the custom target that chose it: raises
        :class:`ContractError` under ``enforce``; under ``warn``, the breach as JSON."""
        breach = self.decision_breach(
            sender_id,
            getattr(state, "decided_by", None),
            getattr(state, "expected_next_speaker", None),
        )
        if breach is None:
            return None
        if self.enforce:
            raise ContractError([breach])
        return breach.to_json()

    @staticmethod
    def annotate(data: dict[str, Any], warnings: list[dict[str, Any]]) -> dict[str, Any]:
        """A turn envelope's data with ``warnings`` added under :data:`CONTRACT_KEY`."""
        return {**data, CONTRACT_KEY: [*(data.get(CONTRACT_KEY) or ()), *warnings]}
