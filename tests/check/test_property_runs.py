"""Properties watched on one concrete run: the monitor turn by turn (RunWatch), and
``flowc test``'s scenarios, which fail on a definite violation and never on an
obligation a scenario leaves pending."""

from __future__ import annotations

from flowc import compile_flow
from flowc.compiler import model as m
from flowc.compiler.monitor import Observation, RunWatch, explain
from flowc.compiler.properties import (
    AfterUntil,
    AtMost,
    Between,
    Ends,
    Eventually,
    Never,
    OnlyAfter,
    Property,
    Responds,
)
from flowc.runtime.scenarios import run_scenario
from flowc.runtime.target import RunTarget


def turn(speaker: str, number: int, tool: str | None = None, **context: object) -> Observation:
    return Observation(speaker, tool, context, number)


def test_a_watch_reports_what_a_turn_breaks_for_good() -> None:
    approved = m.ContextEquals("approved", True)
    first = Property("first", OnlyAfter(m.ToolCalled("publish"), approved))
    watch = RunWatch([first])
    assert watch.turn(turn("user", 1)) == ()
    assert watch.turn(turn("bot", 2, approved=False)) == ()
    (broken,) = watch.turn(turn("bot", 3, "publish", approved=False))
    assert (broken.prop.name, broken.turn, broken.why) == ("first", 3, "bad")
    # approved first: the same turn counts
    watch = RunWatch([first])
    assert watch.turn(turn("bot", 1, "publish", approved=True)) == ()
    assert watch.turn(turn("bot", 2, "publish", approved=False)) == ()


def test_an_unset_key_equals_null_only() -> None:
    watch = RunWatch([Property("p", Never(m.ContextEquals("stage", None)))])
    assert [b.turn for b in watch.turn(turn("user", 1))] == [1]
    watch = RunWatch([Property("p", Never(m.ContextEquals("stage", None)))])
    assert watch.turn(turn("user", 1, stage="x")) == ()


def test_a_between_interval_counts_only_once_r_closes_it() -> None:
    """`never from bot after tool escalate before from human`: the bot speaking after an
    escalation breaks it only when the human comes (a run that stops before is not judged);
    `after ... until` judges it at once."""
    esc, bot, human = m.ToolCalled("escalate"), m.FromSpeaker("bot"), m.FromSpeaker("human")
    between = Property("between", Never(bot), Between(esc, human))
    until = Property("until", Never(m.FromSpeaker("user")), AfterUntil(esc, human))
    watch = RunWatch([between, until])
    assert watch.turn(turn("bot", 1, "escalate")) == ()
    assert [b.prop.name for b in watch.turn(turn("user", 2))] == ["until"]
    assert watch.turn(turn("bot", 3)) == ()
    assert [(b.prop.name, b.why) for b in watch.turn(turn("human", 4))] == [("between", "close")]


def test_the_end_of_a_run_judges_what_is_pending() -> None:
    answered = Property("answered", Responds(m.FromSpeaker("user"), m.FromSpeaker("bot")))
    watch = RunWatch([answered])
    assert watch.turn(turn("user", 1)) == ()
    # a run that stops here (a scenario that is over) is not judged: it could go on
    (broken,) = watch.turn(Observation("user", None, {}, 2, ended=True, reason="max_turns"))
    assert broken.why == "end"


FLOW = """\
speaker user: human
speaker bot { tool publish }
speaker reviewer { tool approve sets approved = true }
max_turns 6
when from user then bot
when tool publish then terminate "published"
when from bot then reviewer
when from reviewer then bot
scenario "publishes at once" {
  user: "hi"
  bot calls publish: "done"
  expect terminate "published"
}
scenario "approved first" {
  user: "hi"
  bot: "draft"
  reviewer calls approve: "ok"
  bot calls publish: "done"
}
scenario "stops early" {
  user: "hi"
  bot: "draft"
}
scenario "reaches the cap" {
  user: "hi"
  bot: "draft"
  reviewer: "no"
  bot: "draft"
  reviewer: "no"
  bot: "draft"
  expect terminate "max_turns"
}
"""

APPROVED_FIRST = Property(
    "approved_first",
    OnlyAfter(m.ToolCalled("publish"), m.ContextEquals("approved", True)),
    text="tool publish only after context.approved == true",
)
PUBLISHED = Property("published", Eventually(Ends("published")), text='eventually ends "published"')


def test_a_scenario_that_breaks_a_property_fails_there() -> None:
    flow = compile_flow(FLOW)
    target = RunTarget.from_compiled(flow)
    results = {
        sc.title.value: run_scenario(target, sc, (APPROVED_FIRST, PUBLISHED))
        for sc in flow.scenarios
    }
    failed = results["publishes at once"]
    assert not failed.passed
    assert failed.failure == (
        "turn 2 (line 11): property approved_first (`tool publish only after"
        " context.approved == true`) is violated: turn 2 has `tool publish`, and no turn"
        " up to it has `context.approved == true`; the run: user → bot (publish)"
    )
    assert results["approved first"].passed
    # `eventually ends "published"` is still pending when the scenario stops: no failure
    assert results["stops early"].passed
    # but a run that ended (at the cap) without it broke it
    capped = results["reaches the cap"]
    assert not capped.passed and capped.failure is not None
    assert capped.failure.startswith("turn 6 (line 30): property published")
    assert 'the run ends after turn 6, and no turn has `ends "published"`' in capped.failure
    # without properties, the same scenarios pass
    assert all(run_scenario(target, sc).passed for sc in flow.scenarios)


def test_a_long_run_that_breaks_a_property_shows_its_ends_as_check_does() -> None:
    """A scenario's failure shows the run as `check` shows one: past 30 turns, the first
    and last 15 with how many are left out (not each of them: 13 KB at 1,500 turns)."""
    turns = "".join('  user: "a"\n  bot: "b"\n' for _ in range(20))
    flow = compile_flow(
        "speaker user: human\nspeaker bot\nstart user\nmax_turns 100\n"
        "when from user then bot\nwhen from bot then user\n"
        "property short: always turn < 40\n"
        f'scenario "long" {{\n{turns}}}\n'
    )
    (sc,) = flow.scenarios
    result = run_scenario(RunTarget.from_compiled(flow), sc, flow.properties)
    assert result.failure is not None
    run = result.failure.split("; the run: ")[1]
    assert run == " → ".join(
        ["user → bot"] * 7 + ["user", "(10 more turns)", "bot"] + ["user → bot"] * 7
    )


def test_an_at_most_interval_a_scope_closes_is_told_in_a_sentence() -> None:
    """`P at most N times after Q before R` broken when R closes an interval: how many
    turns had P, in the words of the other explanations (not "more than once have")."""
    said = {}
    for times in (0, 1, 2):
        prop = Property(
            "p", AtMost(m.FromSpeaker("b"), times), Between(m.FromSpeaker("a"), m.FromSpeaker("d"))
        )
        watch = RunWatch([prop])
        broken = [b for i, s in enumerate("abbbd", 1) for b in watch.turn(turn(s, i))]
        (one,) = broken
        assert (one.turn, one.why) == (5, "close")
        said[times] = explain(prop, one)
    closes = "turn 5 has `from d`, which ends an interval in which "
    assert said == {
        0: closes + "a turn has `from b`",
        1: closes + "more than 1 turn has `from b`",
        2: closes + "more than 2 turns have `from b`",
    }
