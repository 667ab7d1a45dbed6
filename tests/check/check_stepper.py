"""A small reference stepper: AG2's workflow fold, concretely, to replay counterexample runs.

It is written from the seed pages and ``ag2/network/adapters/workflow.py``, not from the
checker's code: context writes (delete, then set), then ``finish``, then a handoff's
target, then the rules in ascending priority (stable), then the default target.

An empty close reason is never what a run closes with: AG2 1.2.1's fold reads a tool's
``Finish`` as ``routing.get("reason") or "finished"`` (``WorkflowAdapter.fold``), and
``on_accepted`` closes a graph's ``terminate`` with ``pending_close_reason or
"workflow_terminated"``.
"""

from __future__ import annotations

from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.analysis.runs import Turn
from flowc.dsl.formatter import format_name, format_value

END = object()


@attrs.frozen
class Decision:
    next: str | None  # None: the run ends
    reason: str | None
    fired: int  # file index of the rule; -1 default, -2 handoff, -3 finish


def call_label(name: str, args: dict[str, Any]) -> str:
    inner = ", ".join(f"{format_name(k)} = {format_value(v)}" for k, v in args.items())
    return f"{format_name(name)}({inner})"


@attrs.define
class Stepper:
    graph: m.TransitionGraph
    participants: list[str]
    initiator: str
    context: dict[str, Any]
    custom_results: dict[str, tuple[str | None, ...] | None] = attrs.field(factory=dict)

    def holds(
        self, cond: m.Condition, sender: str, tool: str | None, assumed: dict[str, bool]
    ) -> bool:
        if isinstance(cond, m.Always):
            return True
        if isinstance(cond, m.FromSpeaker):
            return sender == cond.agent_id
        if isinstance(cond, m.ToolCalled):
            return tool == cond.tool_name
        if isinstance(cond, m.ContextEquals):
            return bool(self.context.get(cond.key) == cond.value)
        if isinstance(cond, m.AllOf):
            return all(self.holds(c, sender, tool, assumed) for c in cond.conditions)
        if isinstance(cond, m.AnyOf):
            return any(self.holds(c, sender, tool, assumed) for c in cond.conditions)
        if isinstance(cond, m.Not):
            return not self.holds(cond.condition, sender, tool, assumed)
        return assumed.get(call_label(cond.name, cond.args), False)

    def resolve(self, target: m.Target, sender: str, turn: Turn) -> tuple[str | None, str | None]:
        if isinstance(target, m.AgentTarget):
            return target.agent_id, None
        if isinstance(target, m.RoundRobinTarget):
            i = self.participants.index(sender)
            return self.participants[(i + 1) % len(self.participants)], None
        if isinstance(target, m.StayTarget):
            return sender, None
        if isinstance(target, m.RevertToInitiatorTarget):
            return self.initiator, None
        if isinstance(target, m.TerminateTarget):
            return None, target.reason or "workflow_terminated"
        assert turn.custom_choice is not None, "a custom target needs the run's choice"
        choice = turn.custom_choice[0]
        allowed = self.custom_results.get(target.name)
        assert allowed is None or choice in allowed
        return choice, None

    def apply(self, turn: Turn) -> None:
        for key in turn.clears:
            self.context.pop(key, None)
        for key, value in turn.sets:
            self.context[key] = value

    def step(self, turn: Turn) -> Decision:
        """Fold one turn; the turn's writes land before routing."""
        self.apply(turn)
        if turn.finish is not None:
            return Decision(None, turn.finish or "finished", -3)
        if turn.handoff is not None:
            return Decision(turn.handoff, None, -2)
        assumed = dict(turn.assumed)
        order = sorted(
            range(len(self.graph.transitions)), key=lambda i: self.graph.transitions[i].priority
        )
        for i in order:
            t = self.graph.transitions[i]
            if self.holds(t.when, turn.speaker, turn.tool, assumed):
                nxt, reason = self.resolve(t.then, turn.speaker, turn)
                return Decision(nxt, reason, i)
        nxt, reason = self.resolve(self.graph.default_target, turn.speaker, turn)
        return Decision(nxt, reason, -1)

    def first_in_file_order(self, turn: Turn) -> int | None:
        """Which rule would fire if the rules ran in file order (context already applied)."""
        assumed = dict(turn.assumed)
        for i, t in enumerate(self.graph.transitions):
            if self.holds(t.when, turn.speaker, turn.tool, assumed):
                return i
        return None
