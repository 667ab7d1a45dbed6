"""E116's help blames `max_turns` only when the run is cut by the cap before an
obligation is met (an `eventually`, an `after P, S` still waiting): not when the cap's
turn breaks a `never` / `at most` by what it does (raising the cap changes nothing
there), nor for `never ends "max_turns"`.

Each violated property's run is watched again turn by turn (``RunWatch``, the monitor
of one concrete run): the run is cut before an obligation is met exactly when its turns
break nothing while the run goes on, and the property waits for something."""

from __future__ import annotations

from flowc import compile_flow
from flowc.compiler.analysis import CheckOptions, findings_of
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.monitor import Observation, RunWatch
from flowc.compiler.properties import Eventually, Responds
from tests.check.check_replay import replay, stepper_for

FLOW = """\
speaker user: human
speaker bot {
  tool t
}
start user
max_turns 4
when from user then bot
when from bot then user
property twice: tool t at most 1 time
property capped: never ends "max_turns"
property no_call: never tool t
property called: eventually tool t
property answered: after tool t, tool t within 5 turns
property before_cap: eventually tool t before ends "max_turns"
property none_before_cap: never tool t before ends "max_turns"
"""

BLAMES_CAP = "before the property is met"


def _broken_while_going_on(prop: object, turns: list[tuple[str, str | None]]) -> bool:
    """Whether the turns break the property on a run that goes on after them."""
    watch = RunWatch([prop])  # type: ignore[list-item]
    return any(
        watch.turn(Observation(speaker, tool, {}, number))
        for number, (speaker, tool) in enumerate(turns, start=1)
    )


def test_the_cap_is_blamed_only_for_an_obligation_it_cuts_short() -> None:
    compiled = compile_flow(FLOW)
    system = system_of_flow(compiled)
    props = {p.name: p for p in compiled.properties}
    found = [
        f for f in findings_of(system, CheckOptions(), "f.flow") if f.diagnostic.code.id == "E116"
    ]
    assert len(found) == len(props)  # every one of them is broken
    blamed = set()
    for f in found:
        run = f.run
        assert run is not None
        name = f.diagnostic.message.split()[1]
        prop = props[name]
        if run.reason != "max_turns":
            replay(system, run)  # a real run
            continue
        # a real run that goes on after its last turn, which is the cap's
        assert system.max_turns is not None and len(run.turns) == system.max_turns
        stepper, expected = stepper_for(system), system.ids[system.start]
        for turn in run.turns:
            assert turn.speaker == expected
            expected = stepper.step(turn).next
        assert expected is not None
        turns = [(system.ids[system.speakers.index(t.speaker)], t.tool) for t in run.turns]
        cut_short = isinstance(prop.pattern, Eventually | Responds) and not _broken_while_going_on(
            prop, turns
        )
        help = f.diagnostic.help or ""
        assert (BLAMES_CAP in help) == cut_short, (name, help)
        if cut_short:
            blamed.add(name)
    # both kinds are there
    assert blamed and blamed != set(props)
