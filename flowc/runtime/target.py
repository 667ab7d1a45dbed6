"""What a scripted run runs: a :class:`RunTarget` (a compiled flow, or a bare graph).

It carries the participants (names and agent ids, in order), the humans, the creator,
the declared tool effects and each rule's text, so transcripts and failures can name
rules in the flow's own terms.

>>> import flowc
>>> flow = flowc.compile_flow("speaker a: human\\nspeaker b\\nsequence a -> b")
>>> t = RunTarget.from_compiled(flow)
>>> t.start, t.speakers, t.describe_decision(0)
('a', ('a', 'b'), 'rule 1, line 3: when from a then b')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.properties import Property, property_json, property_of_json
from flowc.compiler.serde import ShapeError, structure_graph, unstructure_graph
from flowc.compiler.shape_problems import describe
from flowc.compiler.tool_effects import ToolEffectInfo
from flowc.runtime.adapters.base import ChannelMetadata, DamagedRecord
from flowc.runtime.adapters.workflow import DEFAULT, WorkflowAdapter
from flowc.runtime.script import Script
from flowc.source import Span

__all__ = ["RunTarget"]


# ── describing rules in the flow's terms ──────────────────────────────────────


def _rule_texts(
    compiled: CompiledFlow | None,
    graph: m.TransitionGraph,
    names: Mapping[str, str],
    source_text: str | None,
) -> list[str]:
    from flowc.compiler.describe import transition_text  # (the syntax tree: not for a worker)

    out: list[str] = []
    infos = {r.index: r for r in compiled.rules} if compiled is not None else {}
    for i, t in enumerate(graph.transitions):
        info = infos.get(i)
        span = info.statement.span if info is not None else None
        if (
            info is not None
            and span is not None
            and source_text is not None
            and span.end > span.start
        ):
            text = " ".join(source_text[span.start : span.end].split())
            if info.rule is None:  # implied by sequence / round_robin
                text = f"{transition_text(t, names)}, from `{text}`"
            out.append(text)
        else:
            out.append(transition_text(t, names))
    return out


def _rule_lines(compiled: CompiledFlow | None, count: int) -> tuple[int | None, ...]:
    infos = {r.index: r.line for r in compiled.rules} if compiled is not None else {}
    return tuple(infos.get(i) for i in range(count))


# ── what runs ─────────────────────────────────────────────────────────────────


@attrs.frozen
class RunTarget:
    """A graph ready to run: participants (names, in order), humans, creator, tools."""

    graph: m.TransitionGraph
    context_vars: dict[str, Any]
    speakers: tuple[str, ...]
    humans: frozenset[str]
    creator: str
    ids: dict[str, str]  # speaker name -> agent id
    #: (speaker, tool) -> declared effects; ``None`` for a bare graph (any tool goes)
    tools: dict[tuple[str, str], tuple[ToolEffectInfo, ...]] | None
    rule_texts: tuple[str, ...]
    label: str = ""
    #: the line each rule is written on (``None`` for a bare graph)
    rule_lines: tuple[int | None, ...] = ()
    #: human -> the context keys it may write; ``None`` for a bare graph (any key goes)
    human_writes: dict[str, frozenset[str]] | None = None
    #: speaker -> where the flow declares it, ``FILE:LINE:COL`` (when the file is known)
    declared_at: dict[str, str] = attrs.field(factory=dict)
    #: (speaker, tool) -> where the flow declares the tool (when the file is known)
    tool_at: dict[tuple[str, str], str] = attrs.field(factory=dict)
    #: custom target -> the speakers (``None``: terminate) its ``-> A | B`` list names,
    #: and where it is declared; only targets declared with such a list
    custom_targets: dict[str, tuple[tuple[str | None, ...], str | None]] = attrs.field(factory=dict)
    #: the flow's ``property`` statements, watched on every run of it
    #: (:mod:`flowc.runtime.guard`)
    properties: tuple[Property, ...] = ()
    #: where the graph is in its JSON file (``"graph."`` in a knobs file): the JSON paths
    #: of a graph the channel refuses are said from the file's top, as `check` says them
    json_prefix: str = ""
    #: what the runs of this target share (:meth:`shared_knobs`, :meth:`shared_adapter`),
    #: made on the first run
    _shared: dict[str, Any] = attrs.field(factory=dict, init=False, eq=False, repr=False)

    @property
    def names(self) -> dict[str, str]:
        """agent id -> speaker name"""
        return {v: k for k, v in self.ids.items()}

    @property
    def start(self) -> str:
        return self.names.get(self.graph.initial_speaker, self.graph.initial_speaker)

    @property
    def knobs(self) -> dict[str, Any]:
        return {"graph": unstructure_graph(self.graph), "context_vars": dict(self.context_vars)}

    def shared_knobs(self) -> dict[str, Any]:
        """:attr:`knobs`, made once and the same object on every call: for runs that
        only read it (each scenario of ``flowc test`` and ``flowc scenarios`` opens a
        channel with it, and :meth:`shared_adapter` compiles its graph once)."""
        found = self._shared.get("knobs")
        if found is None:
            found = self._shared["knobs"] = self.knobs
        return found

    def shared_adapter(self) -> WorkflowAdapter:
        """One workflow adapter for every run of this target: opened on
        :meth:`shared_knobs`, it reads and compiles the graph once, not once a run."""
        found = self._shared.get("adapter")
        if found is None:
            found = self._shared["adapter"] = WorkflowAdapter()
        return found

    @classmethod
    def from_compiled(
        cls,
        flow: CompiledFlow,
        *,
        source_text: str | None = None,
        label: str = "",
        filename: str | None = None,
    ) -> RunTarget:
        """From a compiled `.flow` (``source_text`` lets transcripts quote the rules;
        ``filename``, the file it was read from, lets refusals name a declaration's place)."""
        ids = {s: flow.agent_id(s) for s in flow.speakers}
        names = {v: k for k, v in ids.items()}
        tools = {(t.speaker, t.name): t.alternatives for t in flow.tools}

        def at(span: Span) -> str | None:
            return None if filename is None else f"{filename}:{span.line}:{span.column}"

        return cls(
            flow.graph,
            dict(flow.context_vars),
            tuple(flow.speakers),
            frozenset(flow.humans),
            flow.initiator,
            ids,
            tools,
            tuple(_rule_texts(flow, flow.graph, names, source_text)),
            label or (flow.name or ""),
            _rule_lines(flow, len(flow.graph.transitions)),
            {h: frozenset(keys) for h, keys in flow.human_writes.items()},
            {}
            if filename is None
            else {
                d.name.value: f"{filename}:{d.name.span.line}:{d.name.span.column}"
                for d in flow.flow.speakers()
            },
            {}
            if filename is None
            else {
                (t.speaker, t.name): f"{filename}:{t.span.line}:{t.span.column}" for t in flow.tools
            },
            {
                c.name: (c.results, at(c.span))
                for c in flow.customs
                if c.kind == "target" and c.results is not None
            },
            tuple(flow.properties),
        )

    @classmethod
    def from_graph(
        cls,
        graph: m.TransitionGraph,
        context_vars: Mapping[str, Any] | None = None,
        *,
        participants: Sequence[str] | None = None,
        humans: Sequence[str] = (),
        creator: str | None = None,
        label: str = "",
        json_prefix: str = "",
    ) -> RunTarget:
        """From a bare graph; participants default to every agent id the graph names."""
        speakers = tuple(dict.fromkeys(participants or m.agent_ids(graph)))
        ids = {s: s for s in speakers}
        return cls(
            graph,
            dict(context_vars or {}),
            speakers,
            frozenset(humans),
            creator or graph.initial_speaker,
            ids,
            None,
            tuple(_rule_texts(None, graph, {}, None)),
            label,
            json_prefix=json_prefix,
        )

    def with_script_facts(self, script: Script) -> RunTarget:
        """Apply a script's ``participants`` / ``humans`` / ``creator`` / ``context_vars``."""
        speakers = tuple(script.participants) if script.participants is not None else self.speakers
        ids = dict(self.ids)
        for s in speakers:
            ids.setdefault(s, s)
        ids = {k: v for k, v in ids.items() if k in speakers}
        context = dict(self.context_vars)
        if script.context_vars is not None:
            context.update(script.context_vars)
        return attrs.evolve(
            self,
            speakers=speakers,
            ids=ids,
            context_vars=context,
            humans=frozenset(script.humans) if script.humans is not None else self.humans,
            creator=script.creator if script.creator is not None else self.creator,
        )

    def labels(self) -> dict[str, Any]:
        """What a run's channel records besides its graph, so that a later process can
        rebuild this target from the WAL (:meth:`from_metadata`): the flow's label, each
        rule's text, the humans and the declared tools."""
        tools = (
            None
            if self.tools is None
            else [
                [speaker, tool, [_effect_json(alt) for alt in alts]]
                for (speaker, tool), alts in self.tools.items()
            ]
        )
        writes = (
            None
            if self.human_writes is None
            else {h: sorted(keys) for h, keys in self.human_writes.items()}
        )
        out: dict[str, Any] = {
            "flow": self.label,
            "rules": list(self.rule_texts),
            "rule_lines": list(self.rule_lines),
            "humans": sorted(self.humans),
            "tools": tools,
            "human_writes": writes,
        }
        if self.declared_at or self.tool_at or self.custom_targets:
            # what a later process needs to hold the run to its declarations, and to say
            # where they are written (see flowc.runtime.contracts)
            out["declared"] = {
                "speakers": dict(self.declared_at),
                "tools": [[s, t, place] for (s, t), place in self.tool_at.items()],
                "targets": [
                    [name, list(results), place]
                    for name, (results, place) in self.custom_targets.items()
                ],
            }
        if self.properties:
            out["properties"] = [property_json(p) for p in self.properties]
        return out

    @classmethod
    def from_metadata(cls, metadata: ChannelMetadata) -> RunTarget:
        """The target a stored run ran (its ``ag2.channel.opened`` metadata and labels).

        Raises :class:`~flowc.runtime.adapters.base.DamagedRecord` when the stored graph or
        labels are not valid (the run is damaged). A run
        recorded without ``humans`` has none; without ``tools``, any tool goes.
        """
        try:
            graph = structure_graph(metadata.knobs.get("graph"))
        except ShapeError as err:
            first = err.problems[0]  # (the first: the JSON path of the value named)
            at = "event_data.metadata.knobs.graph"
            at += "" if not first.path else first.path if first.path[0] == "[" else f".{first.path}"
            raise DamagedRecord.said(at, first.message) from None
        names = {p.agent_id: (p.name or p.agent_id) for p in metadata.participants}
        ids = {names[a]: a for a in metadata.participant_ids}
        labels = metadata.labels
        rules = labels.get("rules")
        context = metadata.knobs.get("context_vars", {})  # (null: the adapter refuses it)
        if not isinstance(context, dict):
            raise DamagedRecord("event_data.metadata.knobs.context_vars", "an object", context)
        humans = labels.get("humans") or []
        tools = None
        writes: dict[str, frozenset[str]] | None = None
        at, shape = "tools", "a list of [speaker, tool, [effect, ...]]"
        try:  # (the label being read: ``at``, of the ``shape`` flowc writes)
            if labels.get("tools") is not None:
                tools = {
                    (str(speaker), str(tool)): tuple(_effect(a) for a in alts)
                    for speaker, tool, alts in labels["tools"]
                }
            at, shape = "humans", "a list of names"
            humans = frozenset(str(h) for h in humans)
            at, shape = "human_writes", "an object of lists of keys"
            if labels.get("human_writes") is not None:
                writes = {
                    str(h): frozenset(str(k) for k in keys)
                    for h, keys in labels["human_writes"].items()
                }
        except (TypeError, ValueError, AttributeError) as err:
            raise DamagedRecord.said(
                f"event_data.metadata.labels.{at}", f"expected {shape} ({err})"
            ) from None
        strangers = sorted(humans - set(ids))
        if strangers:  # (flowc's humans are the run's participants)
            raise DamagedRecord.said(
                "event_data.metadata.labels.humans", f"expected participants, got {strangers[0]!r}"
            )
        creator = names.get(metadata.creator_id, metadata.creator_id)
        lines = labels.get("rule_lines")
        declared_at, tool_at, custom_targets = _declared(labels.get("declared"))
        stored = labels.get("properties") or []
        if not isinstance(stored, list):
            raise DamagedRecord("event_data.metadata.labels.properties", "a list", stored)
        try:
            properties = tuple(property_of_json(p) for p in stored)
        except ValueError as err:
            raise DamagedRecord.said(
                "event_data.metadata.labels.properties", f"expected properties flowc wrote ({err})"
            ) from None
        return cls(
            graph,
            dict(context),
            tuple(ids),
            humans,
            creator,
            ids,
            tools,
            tuple(str(r) for r in rules)
            if isinstance(rules, list)
            else tuple(_rule_texts(None, graph, {}, None)),
            str(labels.get("flow") or ""),
            tuple(x if isinstance(x, int) and not isinstance(x, bool) else None for x in lines)
            if isinstance(lines, list)
            else (),
            writes,
            declared_at,
            tool_at,
            custom_targets,
            properties,
        )

    def rule_line(self, index: int) -> int | None:
        return self.rule_lines[index] if index < len(self.rule_lines) else None

    def describe_rule(self, index: int) -> str:
        """``rule 3, line 14: when from drafter then reviewer`` (see :func:`rule_label`)."""
        from flowc.compiler.describe import rule_label

        text = self.rule_texts[index] if index < len(self.rule_texts) else ""
        return rule_label(index, self.rule_line(index), text)

    def describe_decision(self, decided_by: int | str | None) -> str:
        """``rule 3, line 14: when from drafter then reviewer``, ``otherwise ...``, ..."""
        if isinstance(decided_by, int):
            return self.describe_rule(decided_by)
        if decided_by == DEFAULT:
            from flowc.compiler.describe import target_text

            return f"otherwise {target_text(self.graph.default_target, self.names)}"
        if decided_by is None:
            return "start"
        return str(decided_by)


def _declared(
    data: Any,
) -> tuple[
    dict[str, str], dict[tuple[str, str], str], dict[str, tuple[tuple[str | None, ...], str | None]]
]:
    """The ``declared`` label of a stored run (see :meth:`RunTarget.labels`); a run
    stored without it (or by an earlier version) declares no places and no targets."""
    if not isinstance(data, dict):
        return {}, {}, {}
    try:
        speakers = {str(k): str(v) for k, v in (data.get("speakers") or {}).items()}
        tools = {(str(s), str(t)): str(place) for s, t, place in data.get("tools") or ()}
        targets = {
            str(name): (
                tuple(None if r is None else str(r) for r in results),
                None if place is None else str(place),
            )
            for name, results, place in data.get("targets") or ()
        }
    except (TypeError, ValueError, AttributeError) as err:
        raise DamagedRecord.said(
            "event_data.metadata.labels.declared",
            f"expected speakers, tools and targets as flowc writes them ({err})",
        ) from None
    return speakers, tools, targets


def _effect_json(alt: ToolEffectInfo) -> dict[str, Any]:
    return {
        "sets": [[k, v] for k, v in alt.sets],
        "clears": list(alt.clears),
        "handoff": alt.handoff,
        "finish": alt.finish,
    }


def _effect(data: Mapping[str, Any]) -> ToolEffectInfo:
    for key in ("handoff", "finish"):
        if not isinstance(data.get(key), str | None):
            raise DamagedRecord.said(
                "event_data.metadata.labels.tools",
                f"a tool's `{key}` is a string or null, not {describe(data.get(key))}",
            )
    return ToolEffectInfo(
        tuple((str(k), v) for k, v in data.get("sets") or ()),
        tuple(str(k) for k in data.get("clears") or ()),
        data.get("handoff"),
        data.get("finish"),
    )
