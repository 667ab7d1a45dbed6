"""The monitor that watches one concrete run (``flowc.compiler.monitor.RunWatch``, which
``flowc test`` and the runtime use) against the brute force's meaning, on every run of
generated flows: a property is reported broken on a run exactly when
:func:`tests.property_check.meaning.violation_turn` says it is violated, and on the turn
at which the violation becomes definite.
"""

from __future__ import annotations

from hypothesis import given, settings

from flowc.compiler.monitor import Observation, RunWatch
from tests.property_check.meaning import violation_turn
from tests.property_check.strategies import Case, cases


@settings(max_examples=100)
@given(case=cases(20))
def test_the_run_watch_reports_what_the_meaning_says(case: Case) -> None:
    for run in case.runs.runs():
        watch = RunWatch(case.props)
        reported: dict[str, int] = {}
        for rec in run:
            seen = Observation(
                rec.speaker, rec.tool, rec.values, rec.number, rec.ended is not None, rec.ended
            )
            for broken in watch.turn(seen):
                assert broken.prop.name not in reported, "reported twice"
                reported[broken.prop.name] = broken.turn
        for prop in case.props:
            expected = violation_turn(prop, run)
            assert reported.get(prop.name) == expected, (
                case.text,
                prop,
                " | ".join(map(str, run)),
            )
