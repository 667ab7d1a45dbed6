"""The ``scenario`` blocks of ``flowc test``: run one line by line, stop at the first divergence.

Every speaker is driven by the scenario's lines; ``expect`` lines check the graph's
choice, the close reason, context values and the turn count as the run goes.

>>> import flowc
>>> flow = flowc.compile_flow('''
... speaker user: human
... speaker bot
... sequence user -> bot
... scenario "hello" {
...   user: "hi"
...   expect next bot
...   bot: "hello"
...   expect terminate "sequence_complete"
... }
... ''')
>>> run_scenario(RunTarget.from_compiled(flow), flow.scenarios[0]).passed
True
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence

import attrs

from flowc.compiler.analysis.runs import shown_turns
from flowc.compiler.monitor import Broken, Observation, RunWatch, claim_text, explain
from flowc.compiler.properties import Property
from flowc.compiler.tool_effects import effects_info
from flowc.diagnostics import counted
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_value
from flowc.runtime.adapters.base import ProtocolError
from flowc.runtime.adapters.workflow import WorkflowState
from flowc.runtime.channel import Channel
from flowc.runtime.contracts import Contract
from flowc.runtime.hub import Hub
from flowc.runtime.script import ScriptCall, ScriptError, ScriptTurn
from flowc.runtime.script_run import post_turn
from flowc.runtime.scripted_replies import bare_tool, pick_alternative
from flowc.runtime.target import RunTarget

__all__ = ["ScenarioResult", "ScenarioStep", "run_scenario"]


# ── scenarios ─────────────────────────────────────────────────────────────────


@attrs.frozen
class ScenarioStep:
    """What one turn of a scenario exercised (what coverage counts)."""

    speaker: str
    tool: str | None  # the tool called, if any
    alternative: int | None  # which declared alternative of the tool (0 for a plain tool)
    decided_by: int | str | None  # a rule's file index, "default", "handoff" or "finish"


@attrs.frozen
class ScenarioResult:
    title: str
    line: int
    passed: bool
    failure: str | None
    turns: int
    #: the turns the run took, up to the first divergence
    steps: tuple[ScenarioStep, ...] = ()
    #: how the run closed (``None``: still open when the scenario ended)
    close_reason: str | None = None


def _scenario_turn(item: n.Turn, index: int) -> tuple[str, ScriptTurn]:
    where = f"line {item.span.line}"
    speaker = item.speaker.value
    if isinstance(item, n.SayTurn):
        return speaker, ScriptTurn(item.text.value, (), where)
    text = item.text.value if getattr(item, "text", None) is not None else ""  # type: ignore[union-attr]
    if isinstance(item, n.CallTurn):
        args = item.args.value if item.args is not None else {}
        if not isinstance(args, dict):
            raise ScriptError(f"{where}: `with` takes a JSON object of args")
        effects = effects_info(item.effects) if item.effects else None
        return speaker, ScriptTurn(
            text, (ScriptCall(item.tool.value, dict(args), effects=effects),), where
        )
    if isinstance(item, n.SetTurn):
        sets = {a.key.value: a.value.value for a in item.assigns}
        return speaker, ScriptTurn(text, (ScriptCall(set=sets),), where)
    if isinstance(item, n.ClearTurn):
        return speaker, ScriptTurn(
            text, (ScriptCall(delete=tuple(k.value for k in item.keys)),), where
        )
    if isinstance(item, n.HandoffTurn):
        return speaker, ScriptTurn(text, (ScriptCall(handoff=item.target.value),), where)
    reason = item.reason.value if item.reason is not None else "finished"
    return speaker, ScriptTurn("", (ScriptCall(finish=reason),), where)


def _items(sc: n.Scenario) -> Iterator[n.ScenarioItem]:
    yield from sc.items


def run_scenario(
    target: RunTarget, scenario: n.Scenario, properties: Sequence[Property] = ()
) -> ScenarioResult:
    """Run one ``scenario`` block line by line; stop at the first divergence.

    ``properties`` are watched on the run: a turn that breaks one for good (or ends the
    run with one broken) fails the scenario there, naming the property, the turn and the
    run. What a scenario leaves pending when it stops before the run ends (an
    ``eventually`` not met yet) is not a failure: the run could still meet it."""
    return asyncio.run(_run_scenario(target, scenario, properties))


async def _run_scenario(
    target: RunTarget, sc: n.Scenario, properties: Sequence[Property] = ()
) -> ScenarioResult:
    """Open the scenario's run, then play each turn and check each ``expect`` line in
    order (:class:`_ScenarioRun`); the first failure ends the scenario. The hub is closed
    however it ends."""
    run = await _ScenarioRun.open(target, sc, properties)
    try:
        if not sc.items:  # nothing ran, so nothing passed (`flowc check`: W214)
            return run.result(
                f"line {sc.span.line}: the scenario is empty: it has no turns and no expectations"
            )
        items = list(_items(sc))
        for i, item in enumerate(items):
            if isinstance(item, _TURNS):
                failure = run.play(item, _next_turn(items, i))
            else:
                failure = run.check(item)
            if failure is not None:
                return run.result(failure)
        return run.result(None)
    finally:
        await run.hub.close()


_TURNS = n.SayTurn | n.CallTurn | n.SetTurn | n.ClearTurn | n.HandoffTurn | n.FinishTurn


def _next_turn(items: Sequence[n.ScenarioItem], i: int) -> n.Turn | None:
    """The first turn line after ``items[i]`` (``expect`` lines between skipped), or None."""
    return next((item for item in items[i + 1 :] if isinstance(item, _TURNS)), None)


@attrs.define
class _ScenarioRun:
    """One scenario's run as it goes: its hub and channel, the turns taken so far and the
    properties watched. :meth:`play` and :meth:`check` take one line each and return why
    the scenario fails there, or ``None``."""

    target: RunTarget
    sc: n.Scenario
    hub: Hub
    ch: Channel
    watch: RunWatch | None
    steps: list[ScenarioStep] = attrs.Factory(list)
    turn_no: int = 0

    @classmethod
    async def open(
        cls, target: RunTarget, sc: n.Scenario, properties: Sequence[Property]
    ) -> _ScenarioRun:
        """A hub with every speaker a human driven by the scenario, and the flow's channel."""
        # every scenario of the target opens its channel on the same knobs, through the
        # same adapter: the graph is read and compiled once for all of them, not once a
        # scenario
        hub = await Hub.open(adapters=[target.shared_adapter()])
        for name in target.speakers:
            hub.register_human(name, agent_id=target.ids[name], buffer=False)
        ch = hub.open_channel(
            target.ids[target.creator],
            "workflow",
            [target.ids[s] for s in target.speakers],
            target.shared_knobs(),
            expectations=(),
        )
        # a plugin's custom target is held to its declared `-> A | B` (the scenario's own
        # turns were checked against the declarations when the flow compiled)
        ch.contract = Contract.of(target, held=frozenset())
        return cls(target, sc, hub, ch, RunWatch(properties) if properties else None)

    def chosen(self) -> str:
        """What the graph chose for the next turn (or that the run has ended), for a
        failure to show."""
        ch = self.ch
        st: WorkflowState = ch.state
        if not ch.is_open:
            return f"the run had already ended: {format_value(ch.close_reason)}"
        nxt = st.expected_next_speaker
        names = self.target.names
        return f"the graph chose {names.get(nxt or '', nxt)} ({self.target.describe_decision(st.decided_by)})"

    def result(self, failure: str | None) -> ScenarioResult:
        """The scenario's result now: passed when there is no ``failure``."""
        ch = self.ch
        close = None if ch.is_open else ch.close_reason
        return ScenarioResult(
            self.sc.title.value,
            self.sc.span.line,
            failure is None,
            failure,
            self.turn_no,
            tuple(self.steps),
            close,
        )

    def play(self, item: n.Turn, following: n.Turn | None = None) -> str | None:
        """Post one turn, when its speaker is the one the graph chose, and watch the
        properties on it. A turn that says nothing and routes nothing stalls the run, as
        in AG2, and fails the scenario, unless the scenario's next turn (``following``) is
        the same speaker's: then it was a silent round (its context writes landed, no turn
        was taken) and that line is the speaker's next turn, as ``flowc resume`` gives it
        one (``flowc log --scenario-upto`` writes a stored run's silent rounds so)."""
        target, ch = self.target, self.ch
        self.turn_no += 1
        turn_no = self.turn_no
        speaker, turn = _scenario_turn(item, turn_no)
        where = f"turn {turn_no} (line {item.span.line})"
        if not ch.is_open:
            return (
                f"{where}: expected {speaker}, but the run had already ended: "
                f"{format_value(ch.close_reason)}"
            )
        expected = ch.expected_next()
        if expected != target.ids.get(speaker, speaker):
            return f"{where}: expected {speaker}, {self.chosen()}"
        try:
            posted = post_turn(self.hub, ch, target, speaker, turn, kickoff=turn_no == 1)
        except (ScriptError, ProtocolError) as err:
            said = str(err)  # a script error names the line itself: say it once
            if said.startswith(f"{turn.where}: "):
                said = said[len(turn.where) + 2 :]
            return f"{where}: {said}"
        if not posted:
            if following is not None and following.speaker.value == speaker:
                self.turn_no -= 1  # (no turn was taken)
                return None
            return (
                f"{where}: {speaker}'s turn says nothing and routes nothing, so "
                "the run stalls here (as in AG2, a silent round posts no packet; "
                "context writes alone do not take a turn): give the turn a text"
            )
        steps = self.steps
        steps.append(_step(target, speaker, turn, ch.state.decided_by))
        if self.watch is not None:
            broken = self.watch.turn(
                Observation(
                    target.ids.get(speaker, speaker),
                    steps[-1].tool,
                    dict(ch.state.context_vars),
                    turn_no,
                    not ch.is_open,
                    None if ch.is_open else ch.close_reason,
                )
            )
            if broken:
                return f"{where}: {_broken_text(target, broken, steps)}"
        return None

    def check(self, item: n.Expectation) -> str | None:
        """Check one ``expect`` line against the run as it is now."""
        ch = self.ch
        if isinstance(item, n.ExpectNext):
            want = item.speaker.value
            if not ch.is_open or ch.expected_next() != self.target.ids.get(want, want):
                return f"line {item.span.line}: expected {want} next, {self.chosen()}"
        elif isinstance(item, n.ExpectTerminate):
            want_reason = item.reason.value if item.reason is not None else None
            if ch.is_open:
                return (
                    f"line {item.span.line}: expected the run to end"
                    f"{' with ' + format_value(want_reason) if want_reason else ''}, "
                    f"but {self.chosen()}"
                )
            if want_reason is not None and ch.close_reason != want_reason:
                return (
                    f"line {item.span.line}: expected the run to end with "
                    f"{format_value(want_reason)}, it ended with {format_value(ch.close_reason)}"
                )
        elif isinstance(item, n.ExpectContext):
            key, want_value = item.key.value, item.value.value
            have = ch.state.context_vars.get(key)
            if have != want_value or (want_value is not None and key not in ch.state.context_vars):
                shown = format_value(have) if key in ch.state.context_vars else "unset"
                return (
                    f"line {item.span.line}: expected context.{key} == "
                    f"{format_value(want_value)}, it is {shown}"
                )
        elif isinstance(item, n.ExpectTurns):
            have_turns = ch.state.turn_count
            if have_turns != item.count.value:
                return (
                    f"line {item.span.line}: expected "
                    f"{counted(item.count.value, 'turn')}, the run has {have_turns}"
                )
        return None


def _broken_text(target: RunTarget, broken: Sequence[Broken], steps: Sequence[ScenarioStep]) -> str:
    """``property NAME is violated: why; the run: a → b (tool)``, each property the turn
    broke in the file's order (a long run shown as ``check`` shows one: its first and last
    turns)."""
    from flowc.dsl.formatter import format_name

    names = target.names
    run = " → ".join(
        shown_turns(
            [
                format_name(s.speaker) + (f" ({format_name(s.tool)})" if s.tool is not None else "")
                for s in steps
            ]
        )
    )
    said = []
    for b in broken:
        claim = claim_text(b.prop)
        text = f" (`{claim}`)" if claim else ""
        said.append(
            f"property {format_name(b.prop.name)}{text} is violated: {explain(b.prop, b, names)}"
        )
    return f"{'; '.join(said)}; the run: {run}"


def _step(
    target: RunTarget, speaker: str, turn: ScriptTurn, decided_by: int | str | None
) -> ScenarioStep:
    call = next((c for c in turn.calls if c.tool is not None), None)
    if call is None or call.tool is None:
        bare = next((b for c in turn.calls if (b := bare_tool(target, speaker, c))), None)
        if bare is not None:
            return ScenarioStep(speaker, bare[0], bare[1], decided_by)
        return ScenarioStep(speaker, None, None, decided_by)
    alts = (target.tools or {}).get((speaker, call.tool), ())
    picked = pick_alternative(alts, call, speaker, turn.where) if alts else None
    # (the alternative itself: an equal one before it, `true` before `1`, is another)
    index = next((i for i, a in enumerate(alts) if a is picked), 0)
    return ScenarioStep(speaker, call.tool, index, decided_by)
