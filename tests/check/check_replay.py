"""Replaying a finding's counterexample run on the reference stepper."""

from __future__ import annotations

from typing import Any

from flowc.compiler import model as m
from flowc.compiler.analysis import Finding
from flowc.compiler.analysis.runs import Run, Turn
from flowc.compiler.analysis.system import UNSET, System
from tests.check.check_stepper import Stepper

#: the codes whose findings must carry a run (the catalogue's W201–W206 and W210, and more)
RUN_CODES = frozenset(
    {
        "W201",
        "W202",
        "W203",
        "W204",
        "W205",
        "W206",
        "W210",
        "W212",
        "W213",
        "W215",
        "W217",
        "W218",
        "W219",
        "W220",
        "W221",
        "W222",
    }
)


def graph_of(system: System) -> m.TransitionGraph:
    return m.TransitionGraph(
        system.ids[system.start],
        tuple(m.Transition(r.when, r.then, r.priority) for r in system.rules),
        system.default,
        system.max_turns,
    )


def stepper_for(system: System) -> Stepper:
    return Stepper(
        graph_of(system),
        list(system.ids),
        system.ids[system.initiator],
        dict(system.initial_context),
        dict(system.custom_results),
    )


def _allowed(system: System, turn: Turn, first: bool) -> bool:
    """The turn is one the speaker may take: the kickoff is plain; tools as declared."""
    plain = (
        turn.tool is None
        and not turn.sets
        and not turn.clears
        and turn.handoff is None
        and turn.finish is None
    )
    if system.compiled is not None and turn.speaker in system.compiled.humans:
        # a human posts text and writes the keys it declares (any value, or clears them)
        declared = set(system.compiled.human_writes.get(turn.speaker, ()))
        return (
            turn.tool is None
            and turn.handoff is None
            and turn.finish is None
            and {k for k, _ in turn.sets} | set(turn.clears) <= declared
        )
    if first or plain:
        return plain or not first
    if system.json_mode:
        return turn.tool is None or turn.tool in system.tool_names
    assert system.compiled is not None
    for tool in system.compiled.tools_of(turn.speaker):
        if tool.name != turn.tool:
            continue
        if not tool.alternatives:
            return not (turn.sets or turn.clears or turn.handoff or turn.finish)
        for alt in tool.alternatives:
            if (alt.sets, alt.clears, alt.handoff, alt.finish) == (
                turn.sets,
                turn.clears,
                turn.handoff,
                turn.finish,
            ):
                return True
    return False


def _abstract_context(system: System, context: dict[str, Any]) -> tuple[int, ...]:
    return tuple(
        system.abstract(i, context[k]) if k in context else UNSET for i, k in enumerate(system.keys)
    )


def replay(
    system: System, run: Run
) -> tuple[Stepper, list[tuple[str, tuple[int, ...]]], list[int]]:
    """Step through the run; returns the stepper, the states before each turn, and what fired."""
    stepper = stepper_for(system)
    expected: str | None = system.ids[system.start]
    states: list[tuple[str, tuple[int, ...]]] = []
    fired: list[int] = []
    for i, turn in enumerate(run.turns):
        assert expected is not None, f"the run goes on after it ended: {run.render()}"
        assert turn.speaker == expected, f"turn {i + 1}: {turn.speaker} speaks, {expected} expected"
        assert _allowed(system, turn, i == 0), f"turn {i + 1} is not allowed: {turn}"
        states.append((turn.speaker, _abstract_context(system, stepper.context)))
        decision = stepper.step(turn)
        assert decision.fired == turn.fired, (
            f"turn {i + 1}: rule {decision.fired} fired, run says {turn.fired}"
        )
        fired.append(decision.fired)
        expected = decision.next
        if expected is None and run.reason is not None:
            assert decision.reason == run.reason
    assert expected == run.next, f"the run ends at {expected}, it claims {run.next}"
    return stepper, states, fired


def replay_finding(system: System, finding: Finding) -> None:
    """Replay a finding's run and check that it reaches the state the finding claims."""
    code = finding.diagnostic.code.id
    run = finding.run
    if code in RUN_CODES:
        assert run is not None, f"{code} carries no run"
        assert run.render() in "\n".join(finding.diagnostic.notes)
    if run is None:
        return
    stepper, states, fired = replay(system, run)
    last = run.turns[-1] if run.turns else None
    cap = system.max_turns
    to_turn = ("a run that reaches such a turn", "a shortest run that calls it")
    if cap is not None and any(n.startswith(to_turn) for n in finding.diagnostic.notes):
        # a run to the turn the finding is about is a real run: the cap closes every run
        # after turn `max_turns` (W212 and W215 show the runs it cuts off, in other words)
        assert len(run.turns) <= cap, f"{code}: the run is longer than the cap: {run.render()}"
    if run.loop_from is not None:
        # a lasso: the state after the last turn is the state where the loop began
        final = (run.next, _abstract_context(system, stepper.context))
        assert final == states[run.loop_from], f"{code}: the loop does not close: {run.render()}"
        assert run.next is not None
    if code in ("W203", "W204") and "fires first" in "\n".join(finding.diagnostic.notes):
        assert last is not None and finding.rule is not None
        rule = system.rules[finding.rule]
        assert fired[-1] != finding.rule
        assert stepper.holds(rule.when, last.speaker, last.tool, dict(last.assumed)), (
            "the dead rule does not match there"
        )
        if code == "W204":
            assert stepper.first_in_file_order(last) == finding.rule
    if code == "W205" and cap is not None and run.loop_from is None:
        # the cap closes the run before it is back where the loop began: the run shows the
        # cap's turns, the rule routing a turn inside the cap (not only the last turn)
        assert len(run.turns) == cap and run.next is not None, run.render()
        assert finding.rule in fired[:-1], f"W205: the rule routes no turn: {run.render()}"
    elif code == "W205":
        assert run.loop_from is not None and finding.rule in fired[run.loop_from :]
    if code == "W205" and cap is not None:
        # every run the flow has is within the cap: the loop's next turn comes inside it
        assert len(run.turns) + (run.loop_from is not None) <= cap, run.render()
    if code == "W206":
        assert run.loop_from is not None
    if code == "W210":
        # a loop, or, where the loop is longer than the cap, a run the cap closes
        assert run.loop_from is not None or (
            run.next is not None and cap is not None and len(run.turns) == cap
        )
    if cap is not None and code not in ("W212", "W215") and run.loop_from is None:
        # only W212 and W215 show runs the cap cuts off (in their words); every other
        # finding's run that is no loop (a loop repeats until the cap), a sample
        # included, is a run of the flow
        assert len(run.turns) <= cap, f"{code}: the run is longer than the cap: {run.render()}"
    if code == "W212":
        assert (
            run.next is None and system.max_turns is not None and len(run.turns) > system.max_turns
        )
    if code == "W215":
        # the shortest run to it is longer than the cap allows
        cap = system.max_turns
        assert cap is not None
        if finding.rule is not None:  # the rule fires on the run's last turn, after the cap
            assert fired[-1] == finding.rule and len(run.turns) > cap
        elif run.turns and "speaker" in finding.diagnostic.message:
            assert run.next is not None and len(run.turns) >= cap
    if code == "W217":
        # a run of exactly the implied cap's turns that goes on (the cap closes it), the
        # rule the message names routing its last turn
        assert run.next is not None and len(run.turns) == system.max_turns
        if finding.rule is not None:
            assert fired[-1] == finding.rule
    if code == "W221":  # the last turn goes back to its own speaker, before the cap
        assert last is not None and run.next == last.speaker
        assert system.max_turns is None or len(run.turns) < system.max_turns
    if code == "W218":  # the last turn calls the nested tool and routes by the rules
        assert (
            last is not None and last.tool is not None and last.tool in finding.diagnostic.message
        )
        assert fired[-1] >= -1
    if code in ("W219", "W222"):  # a run to the speaker's turn
        assert run.next is not None and f"`{run.next}`" in finding.diagnostic.message
    if code == "W220":
        assert run.loop_from is not None
    if code == "W213":
        assert last is not None and last.tool is None and fired[-1] == -1
        assert run.next is None and run.reason == "after_work"
