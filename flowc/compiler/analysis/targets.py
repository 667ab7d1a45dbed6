"""Coverage targets: what a flow's scenarios can exercise, and the shortest run to each.

A flow's targets are its compiled rules (each ``from`` part of an expanded rule, and
each ``or`` branch, on its own), its default, every terminal reason it can write (and
``max_turns``), every alternative of every declared tool, and every speaker. They
come from the same explored state space as ``flowc check``: a rule that ``check``
proves dead is not coverable and carries the code of the finding that proves it
(W203, W204, W201, W205, W208, W209, W210); a target that no run within
``max_turns`` exercises is not coverable either. The rest are *live*, and each has
a witness: the first turn (breadth-first, so after the fewest turns) that
exercises it.

>>> from flowc import compile_flow
>>> flow = compile_flow("speaker user: human\\nspeaker bot\\nsequence user -> bot")
>>> cov = coverage_targets(flow)
>>> [(t.label, t.dead) for t in cov.targets if t.kind == "rule"]
[('rule 1, line 3: when from user then bot', None)]
>>> [t.label for t in cov.targets if t.kind == "end"]
['terminate "sequence_complete"', 'max_turns 2']
>>> cov.witness_run(("end", "sequence_complete")).render()
'user → bot → terminate "sequence_complete"'
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeAlias

import attrs

from flowc.compiler import model as m
from flowc.compiler.analysis import facts_of
from flowc.compiler.analysis.explore import (
    DEFAULT,
    KICKOFF,
    NodeKey,
    Step,
)
from flowc.compiler.analysis.facts import MAX_CAP_RUN, CheckOptions, Facts, Finding
from flowc.compiler.analysis.proven import dead_rule_findings
from flowc.compiler.analysis.runs import Run, Turn, run_along
from flowc.compiler.analysis.system import Action, System, system_of_flow
from flowc.compiler.analysis.worst import worst_case
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.tool_effects import (
    ToolEffectInfo,
    alternative_index,
    finish_reason,
    terminate_reason,
)
from flowc.diagnostics import counted
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_name, format_value

__all__ = ["CAP_REASON", "Coverable", "Target", "TargetKey", "coverage_targets"]

#: ("rule", index) | ("default",) | ("end", reason) | ("tool", speaker, tool, alternative)
#: | ("speaker", name)
TargetKey: TypeAlias = tuple[Any, ...]

CAP_REASON = "max_turns"


@attrs.frozen
class Target:
    """One thing a scenario can exercise."""

    key: TargetKey
    kind: str  # "rule", "default", "end", "tool" or "speaker"
    label: str
    line: int | None
    #: why no run exercises it (``None``: live)
    dead: str | None = None
    #: the code of the ``flowc check`` finding that proves it dead, if any
    code: str | None = None

    @property
    def live(self) -> bool:
        return self.dead is None

    @property
    def name(self) -> str:
        """The key as one string, for JSON and XML: ``rule:3``, ``tool:triage:escalate:0``."""
        return ":".join(str(part) for part in self.key)


@attrs.define
class Coverable:
    """A flow's coverage targets and the shortest witness of each live one."""

    system: System
    facts: Facts
    findings: tuple[Finding, ...]
    targets: tuple[Target, ...]
    #: live target -> (node the turn is taken from, the turn)
    witnesses: dict[TargetKey, tuple[int, Step]]
    #: the nodes of a run of exactly ``max_turns`` turns that the cap ends, if any
    cap_walk: list[int] | None
    truncated: bool
    _index: dict[NodeKey, int] | None = None

    @property
    def live(self) -> tuple[Target, ...]:
        return tuple(t for t in self.targets if t.live)

    def distance(self, key: TargetKey) -> int:
        """How many turns the shortest run that exercises ``key`` takes."""
        if key == ("end", CAP_REASON) and key not in self.witnesses:
            assert self.cap_walk is not None
            return len(self.cap_walk) - 1
        node, _ = self.witnesses[key]
        return self.facts.space.dist[node] + 1

    def witness_run(self, key: TargetKey) -> Run:
        """The shortest run that exercises ``key`` (a live target)."""
        space = self.facts.space
        if key == ("end", CAP_REASON) and key not in self.witnesses:
            assert self.cap_walk is not None
            return run_along(space, self.cap_walk)
        node, step = self.witnesses[key]
        return run_along(space, space.path_to(node), step)

    def best_run(self, key: TargetKey, covered: set[TargetKey]) -> Run:
        """A shortest run that exercises ``key`` and, among those, as many targets
        outside ``covered`` as a pass over the shortest-path graph finds."""
        if key == ("end", CAP_REASON) and key not in self.witnesses:
            return self.witness_run(key)
        space, system = self.facts.space, self.system
        goal, final = self.witnesses[key]
        speaker = space.speaker_of(goal)
        finals = [
            (len(hits - covered), i, step)
            for i, step in enumerate(space.explorer.steps(space.keys[goal]))
            if key in (hits := set(_step_hits(system, goal, speaker, step)))
        ]
        final = max(finals, key=lambda f: (f[0], -f[1]))[2] if finals else final
        dist = space.dist
        ancestors = {goal}
        frontier = [goal]
        while frontier:  # the nodes on some shortest path to the goal
            y = frontier.pop()
            for x in space.graph.predecessors(y):
                if dist[x] + 1 == dist[y] and x not in ancestors:
                    ancestors.add(x)
                    frontier.append(x)
        index = self._node_index()
        best: dict[int, tuple[int, int, Step | None]] = {0: (0, -1, None)}
        for x in sorted(ancestors, key=lambda v: (dist[v], v)):
            if x == goal or x not in best:
                continue
            speaker = space.speaker_of(x)
            for step in space.explorer.steps(space.keys[x]):
                to = index.get(space.explorer.next_key(step))
                if to is None or to not in ancestors or dist[to] != dist[x] + 1:
                    continue
                gain = best[x][0] + len(set(_step_hits(system, x, speaker, step)) - covered)
                if to not in best or gain > best[to][0]:
                    best[to] = (gain, x, step)
        path = [goal]
        chosen: list[Step] = []
        while path[-1] != 0:
            _, before, taken = best[path[-1]]
            assert taken is not None
            chosen.append(taken)
            path.append(before)
        path.reverse()
        chosen.reverse()
        return run_along(space, path, final, chosen=dict(enumerate(chosen)))

    def _node_index(self) -> dict[NodeKey, int]:
        if self._index is None:
            self._index = {k: i for i, k in enumerate(self.facts.space.keys)}
        return self._index

    def hits(self, run: Run) -> set[TargetKey]:
        """Every target a run exercises (what the runtime will count when it runs)."""
        out: set[TargetKey] = set()
        for i, turn in enumerate(run.turns):
            out.add(("speaker", turn.speaker))
            if turn.tool is not None and i > 0:
                alt = alternative_of(self.system, turn)
                if alt is not None:
                    out.add(("tool", turn.speaker, turn.tool, alt))
            if turn.fired >= 0:
                out.add(("rule", turn.fired))
            elif turn.fired == DEFAULT:
                out.add(("default",))
        cap = self.system.max_turns
        if run.next is None:
            if run.reason is not None:
                out.add(("end", run.reason))
        elif cap is not None and len(run.turns) >= cap:
            out.add(("end", CAP_REASON))
        return out


def alternative_of(system: System, turn: Turn) -> int | None:
    """The index of the declared alternative a run's tool turn takes
    (:func:`~flowc.compiler.tool_effects.alternative_index`)."""
    compiled = system.compiled
    if compiled is None:
        return None
    for tool in compiled.tools_of(turn.speaker):
        if tool.name != turn.tool:
            continue
        if not tool.alternatives:
            return 0
        effect = ToolEffectInfo(turn.sets, turn.clears, turn.handoff, turn.finish)
        return alternative_index(tool.alternatives, effect)
    return None


def _action_alternative(system: System, speaker: int, action: Action) -> int | None:
    compiled = system.compiled
    if compiled is None or action.tool is None:
        return None
    name = system.speakers[speaker]
    for tool in compiled.tools_of(name):
        if tool.name != action.tool:
            continue
        if not tool.alternatives:
            return 0
        handoff = system.speakers[action.handoff] if action.handoff is not None else None
        effect = ToolEffectInfo(action.sets, action.clears, handoff, action.finish)
        return alternative_index(tool.alternatives, effect)
    return None


# ── building ──────────────────────────────────────────────────────────────────


def coverage_targets(
    compiled: CompiledFlow, options: CheckOptions | None = None, *, filename: str = "<input>"
) -> Coverable:
    """The coverage targets of a compiled `.flow`, with the shortest witness of each."""
    system = system_of_flow(compiled)
    facts, findings = facts_of(system, options or CheckOptions(), filename)
    witnesses = _witnesses(facts)
    cap_walk = facts.cap_walk
    targets = _Classifier(facts, findings, witnesses, cap_walk).targets()
    return Coverable(system, facts, findings, targets, witnesses, cap_walk, facts.space.truncated)


def _step_hits(system: System, node: int, speaker: int, step: Step) -> Iterator[TargetKey]:
    yield ("speaker", system.speakers[speaker])
    if node != 0 and step.action.tool is not None:
        alt = _action_alternative(system, speaker, step.action)
        if alt is not None:
            yield ("tool", system.speakers[speaker], step.action.tool, alt)
    out = step.outcome
    if out.fired >= 0:
        yield ("rule", out.fired)
    elif out.fired == DEFAULT:
        yield ("default",)
    if out.speaker < 0 and out.reason is not None:
        yield ("end", out.reason)


def _witnesses(facts: Facts) -> dict[TargetKey, tuple[int, Step]]:
    """For every target: the first turn, breadth-first within ``max_turns``, that exercises it."""
    space, system = facts.space, facts.system
    cap = system.max_turns
    found: dict[TargetKey, tuple[int, Step]] = {}
    for node, key in enumerate(space.keys):
        if key[0] == "end":
            continue
        if cap is not None and space.dist[node] >= cap:
            continue  # the cap has closed every run that gets here
        speaker = space.speaker_of(node)
        for step in space.explorer.steps(key):
            for hit in _step_hits(system, node, speaker, step):
                found.setdefault(hit, (node, step))
    return found


class _Classifier:
    def __init__(
        self,
        facts: Facts,
        findings: tuple[Finding, ...],
        witnesses: dict[TargetKey, tuple[int, Step]],
        cap_walk: list[int] | None,
    ):
        self.facts = facts
        self.system = facts.system
        compiled = facts.system.compiled
        assert compiled is not None
        self.compiled = compiled
        self.findings = findings
        self.witnesses = witnesses
        self.cap_walk = cap_walk
        self.truncated = facts.space.truncated
        self.codes = {f.diagnostic.code.id for f in findings}
        #: a rule's proof on another line (the finding it is folded into): " (line N)"
        self.rule_at: dict[int, str] = {}
        self.rule_codes = self._rule_codes()
        self.dead = {d.rule.index for d in facts.dead_rules}

    # what check proves -------------------------------------------------------

    def _rule_codes(self) -> dict[int, str]:
        """Each rule check proves never fires -> the code of the printed finding that proves
        it, with that finding's line when it is on another line (it folds the rule in)."""
        facts = self.facts
        out: dict[int, str] = {}
        for index, f in dead_rule_findings(facts, self.findings).items():
            code, span = f.diagnostic.code.id, f.diagnostic.span
            line = facts.system.line_of(facts.system.rules[index])
            if span is not None and span.line != line:
                self.rule_at[index] = f" (line {span.line})"
            out[index] = code
        for index in facts.after_cap_rules:
            if index >= 0:
                out.setdefault(index, "W212" if facts.folded_into_w212(index) else "W215")
        return out

    def _unreached(self, key: TargetKey) -> str | None:
        """Why a target check calls live is still not coverable (``None``: it is)."""
        if key in self.witnesses or (key == ("end", CAP_REASON) and self.cap_walk is not None):
            return None  # (a rule's or tool's `"max_turns"`, or the cap's)
        if self.truncated:
            return (
                f"not reached in the {counted(len(self.facts.space.keys), 'state')} explored (I301)"
            )
        cap = self.system.max_turns
        if cap is not None:
            return f"no run within `max_turns {cap}` exercises it"
        return "no run exercises it"

    # the targets -------------------------------------------------------------

    def targets(self) -> tuple[Target, ...]:
        head = (*self.speakers(), *self.rules(), self.default())
        tools = tuple(self.tools())
        sources = {t.key: t for t in (*head, *tools)}
        return (*head, *self.ends(sources), *tools)

    def rules(self) -> Iterator[Target]:
        for rule in self.system.rules:
            key = ("rule", rule.index)
            label = self.system.label(rule, code=False)
            line = self.system.line_of(rule)
            code = self.rule_codes.get(rule.index)
            if code in ("W215", "W212") and rule.index in self.facts.after_cap_rules:
                yield Target(
                    key,
                    "rule",
                    label,
                    line,
                    f"{code}: no run within `max_turns {self.system.max_turns}` fires it",
                    code,
                )
            elif code is not None:
                yield Target(
                    key,
                    "rule",
                    label,
                    line,
                    f"{code}{self.rule_at.get(rule.index, '')}: `flowc check` proves it never fires",
                    code,
                )
            elif rule.index in self.dead and not self.truncated:  # its finding not printed
                yield Target(key, "rule", label, line, "`flowc check` proves it never fires")
            else:
                yield Target(key, "rule", label, line, self._unreached(key))

    def default(self) -> Target:
        compiled = self.compiled
        key = ("default",)
        label = f"otherwise {self.system.describe_target(self.system.default)}"
        line = compiled.default_span.line if compiled.default_span is not None else None
        if line is None and compiled.default_implied:
            line = next(
                (
                    st.span.line
                    for st in compiled.flow.statements
                    if isinstance(st, n.SequenceDecl | n.RoundRobinDecl)
                ),
                None,
            )
        if DEFAULT in self.facts.after_cap_rules:
            code = "W212" if self.facts.folded_into_w212(DEFAULT) else "W215"
            return Target(
                key,
                "default",
                label,
                line,
                f"{code}: no run within `max_turns {self.system.max_turns}` reaches it",
                code,
            )
        if not self.truncated and not self.facts.space.default_fired:
            if "W202" in self.codes and compiled.default_span is not None:
                return Target(
                    key,
                    "default",
                    label,
                    line,
                    "W202: `flowc check` proves it is never reached",
                    "W202",
                )
            return Target(
                key, "default", label, line, "on every turn of every run some rule matches"
            )
        return Target(key, "default", label, line, self._unreached(key))

    def _reasons(self, sources: dict[TargetKey, Target]) -> dict[str, list[Target]]:
        """Every terminal reason the flow writes, with the targets that write it."""
        out: dict[str, list[Target]] = {}
        for rule in self.system.rules:
            if isinstance(rule.then, m.TerminateTarget):
                out.setdefault(terminate_reason(rule.then.reason), []).append(
                    sources[("rule", rule.index)]
                )
        default = sources[("default",)]
        if isinstance(self.system.default, m.TerminateTarget) and (
            default.live or default.line is not None
        ):  # an implicit default that never fires writes no reason
            out.setdefault(terminate_reason(self.system.default.reason), []).append(default)
        for tool in self.compiled.tools:
            for i, alt in enumerate(tool.alternatives):
                if alt.finish is not None:
                    out.setdefault(finish_reason(alt.finish), []).append(
                        sources[("tool", tool.speaker, tool.name, i)]
                    )
        return out

    def ends(self, sources: dict[TargetKey, Target]) -> Iterator[Target]:
        """A target per reason a run may end with. A rule or tool that ends the run with
        `"max_turns"` writes the very reason the cap writes (as in AG2): one target, live
        when either is."""
        ends = list(self._ends(sources))
        mine = [t for t in ends if t.key == ("end", CAP_REASON)]
        if len(mine) == 2:
            ends.remove(mine[1] if mine[0].live or not mine[1].live else mine[0])
        return iter(ends)

    def _ends(self, sources: dict[TargetKey, Target]) -> Iterator[Target]:
        for reason, written_by in self._reasons(sources).items():
            key = ("end", reason)
            label = f"terminate {format_value(reason)}"
            line = written_by[0].line
            if key in self.witnesses:
                yield Target(key, "end", label, line)
            elif "W210" in self.codes:
                yield Target(key, "end", label, line, "W210: no run reaches a `terminate`", "W210")
            elif "W212" in self.codes:
                yield Target(
                    key, "end", label, line, "W212: every run ends at the cap first", "W212"
                )
            elif all(not s.live for s in written_by) and not self.truncated:
                first = written_by[0]
                yield Target(
                    key,
                    "end",
                    label,
                    line,
                    f"only {', '.join(s.label for s in written_by)} "
                    f"{'writes' if len(written_by) == 1 else 'write'} it, and "
                    f"{'it is' if len(written_by) == 1 else 'they are'} not coverable",
                    first.code,
                )
            else:
                yield Target(key, "end", label, line, self._unreached(key) or "no run reaches it")
        cap = self.system.max_turns
        if cap is not None:
            key = ("end", CAP_REASON)
            line = self._cap_line()
            label = f"max_turns {cap}"
            if self.cap_walk is not None:
                yield Target(key, "end", label, line)
            elif cap > MAX_CAP_RUN and not self.truncated:
                # (a run that long is not built: the target counts, a scenario may reach
                # it, but `flowc scenarios` writes none for it)
                # (some run takes `cap` turns without ending: the worst case is the cap)
                worst = worst_case(self.facts)
                reached = worst is not None and worst.kind == "cap"
                yield Target(
                    key,
                    "end",
                    label,
                    line,
                    None if reached else "every run ends by itself within the cap",
                )
            else:  # (a partial exploration says only what it did not reach)
                yield Target(
                    key,
                    "end",
                    label,
                    line,
                    self._unreached(key) or "every run ends by itself within the cap",
                )

    def _cap_line(self) -> int | None:
        for st in self.compiled.flow.statements:
            if isinstance(st, n.MaxTurnsDecl):
                return st.span.line
        for st in self.compiled.flow.statements:
            if isinstance(st, n.SequenceDecl):
                return st.span.line
        return None

    def speakers(self) -> Iterator[Target]:
        facts = self.facts
        for i, name in enumerate(self.system.speakers):
            key = ("speaker", name)
            span = facts.speaker_span(i)
            label = f"speaker {format_name(name)}"
            line = span.line if span is not None else None
            if not self.truncated and i not in facts.scheduled:
                code = self._speaker_code(i)
                yield Target(key, "speaker", label, line, f"{code}: no run routes to it", code)
            elif i in facts.after_cap_speakers:
                yield Target(
                    key,
                    "speaker",
                    label,
                    line,
                    f"W215: no run within `max_turns {self.system.max_turns}` reaches it",
                    "W215",
                )
            else:
                yield Target(key, "speaker", label, line, self._unreached(key))

    def _speaker_code(self, speaker: int) -> str:
        span = self.facts.speaker_span(speaker)
        for f in self.findings:
            if f.diagnostic.code.id == "W201" and f.diagnostic.span == span:
                return "W201"
        agent = self.system.ids[speaker]
        for rule in self.system.rules:
            if isinstance(rule.then, m.AgentTarget) and rule.then.agent_id == agent:
                code = self.rule_codes.get(rule.index)
                if code is not None:
                    return code
        return "W201"

    def tools(self) -> Iterator[Target]:
        for tool in self.compiled.tools:
            alts: tuple[ToolEffectInfo | None, ...] = tool.alternatives or (None,)
            speaker = self.system.speaker_index(tool.speaker)
            for i, alt in enumerate(alts):
                key = ("tool", tool.speaker, tool.name, i)
                label = f"{format_name(tool.speaker)} calls {format_name(tool.name)}"
                if len(alts) > 1 and alt is not None:
                    label += f" ({alt.text()})"
                line = tool.span.line
                if not self.truncated and speaker not in self.facts.scheduled:
                    code = self._speaker_code(speaker)
                    yield Target(
                        key,
                        "tool",
                        label,
                        line,
                        f"{code}: {format_name(tool.speaker)} never speaks",
                        code,
                    )
                elif speaker in self.facts.after_cap_speakers:
                    yield Target(
                        key,
                        "tool",
                        label,
                        line,
                        f"W215: {format_name(tool.speaker)} never speaks within "
                        f"`max_turns {self.system.max_turns}`",
                        "W215",
                    )
                elif not self.truncated and not self._speaks_after_kickoff(speaker):
                    yield Target(
                        key,
                        "tool",
                        label,
                        line,
                        f"{format_name(tool.speaker)} speaks only the kickoff, a plain message",
                    )
                else:
                    yield Target(key, "tool", label, line, self._unreached(key))

    def _speaks_after_kickoff(self, speaker: int) -> bool:
        space = self.facts.space
        return any(k != KICKOFF and k[0] != "end" and k[0] == speaker for k in space.keys)
