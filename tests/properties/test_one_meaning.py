"""One meaning of a flow: on random flows with scenarios, whenever `check` reports no
error, `compile`, `test` and `run` accept the flow and agree with each other and with
`check`'s findings.

A flow comes from the generator of the checker's soundness test; its scenarios are walks
of the reference stepper (``tests/check/check_stepper.py``, written from AG2's fold, not
from flowc's code) with random choices: each turn is one the speaker may take (a tool
alternative, a human's context write, plain text), each step is followed by the
expectation the stepper computes (`expect next X` / `expect terminate "r"`). A few are
spoiled on purpose in ways `check` must refuse (an undeclared tool, a close reason the
flow never writes). Then:

- `compile` accepts the flow, its scenarios included;
- `test` passes every scenario (the runtime routes as the reference stepper);
- `run`, with the script derived from each scenario, takes the same turns and ends (or
  waits) where the scenario does;
- no rule `check` calls dead (W203, W204) or never firing within `max_turns` (W215)
  fires, no speaker it calls unreachable (W201, W215) speaks, a dead default (W202) is
  never taken and no run terminates where W210 says none can.

In process for speed; `test_the_commands_agree_on_generated_flows` runs the real CLI on
a few of them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest
from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st

import flowc
from flowc.compiler import model as m
from flowc.compiler.analysis import check_source
from flowc.compiler.analysis.runs import Turn
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.lower import CompiledFlow, ToolEffectInfo
from flowc.compiler.registry import default_registry
from flowc.diagnostics import Diagnostic, has_errors
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_flow, format_name, format_value
from flowc.runtime.scenarios import run_scenario
from flowc.runtime.script_run import run_flow
from flowc.runtime.target import RunTarget
from flowc.runtime.transitions import TransitionDecision
from flowc.source import NO_SPAN, SourceFile
from tests.check.check_replay import stepper_for
from tests.check.check_stepper import Stepper, call_label
from tests.check.test_check_soundness import flow_text
from tests.dsl.strategies import flows

# ── the custom condition and target of the generated flows, and their meaning ──────────
# `urgent(level = N)` holds when the turn's text carries the marker `!N`; `pick()` routes
# to the speaker named by `@name` in the text (`@end` closes the run with "picked").

PICKED = "picked"


def _text_of(envelope: Any) -> str:
    data = envelope.event_data or {}
    text = data.get("text", data.get("body", ""))
    return text if isinstance(text, str) else ""


@attrs.frozen
class Urgent:
    name: ClassVar[str] = "urgent"
    level: int = 1

    def evaluate(self, state: Any, envelope: Any) -> bool:
        return f"!{self.level}" in _text_of(envelope).split()


@attrs.frozen
class Over:
    name: ClassVar[str] = "over"
    limit: int = 0

    def evaluate(self, state: Any, envelope: Any) -> bool:
        return f"!{self.limit}" in _text_of(envelope).split()


@attrs.frozen
class Pick:
    name: ClassVar[str] = "pick"
    pool: Any = None

    def resolve(self, state: Any, envelope: Any) -> TransitionDecision:
        text = _text_of(envelope)
        choice = text.split("@", 1)[1].split()[0] if "@" in text else "end"
        return TransitionDecision(None, PICKED) if choice == "end" else TransitionDecision(choice)


@pytest.fixture(scope="module", autouse=True)
def custom_names() -> Iterator[None]:
    """`urgent`, `over` and `pick` registered for this module's tests only: the default
    registry is process-wide, and no other test may see them (a did-you-mean among the
    custom names, a plugin test's list of names)."""
    registry = default_registry()
    saved = registry.copy()
    registry.register_condition(Urgent)
    registry.register_condition(Over)
    registry.register_target(Pick)
    yield
    registry._conditions, registry._targets = saved._conditions, saved._targets


PLUGIN = """\
from typing import Any, ClassVar

import attrs

import flowc
from flowc.runtime import TransitionDecision


def _text_of(envelope: Any) -> str:
    data = envelope.event_data or {}
    text = data.get("text", data.get("body", ""))
    return text if isinstance(text, str) else ""


@flowc.register_condition
@attrs.frozen
class Urgent:
    name: ClassVar[str] = "urgent"
    level: int = 1

    def evaluate(self, state: Any, envelope: Any) -> bool:
        return f"!{self.level}" in _text_of(envelope).split()


@flowc.register_condition
@attrs.frozen
class Over:
    name: ClassVar[str] = "over"
    limit: int = 0

    def evaluate(self, state: Any, envelope: Any) -> bool:
        return f"!{self.limit}" in _text_of(envelope).split()


@flowc.register_target
@attrs.frozen
class Pick:
    name: ClassVar[str] = "pick"
    pool: Any = None

    def resolve(self, state: Any, envelope: Any) -> TransitionDecision:
        text = _text_of(envelope)
        choice = text.split("@", 1)[1].split()[0] if "@" in text else "end"
        return TransitionDecision(None, "picked") if choice == "end" else TransitionDecision(choice)
"""


def _customs(cond: m.Condition) -> Iterator[m.CustomCondition]:
    if isinstance(cond, m.CustomCondition):
        yield cond
    elif isinstance(cond, m.AllOf | m.AnyOf):
        for c in cond.conditions:
            yield from _customs(c)
    elif isinstance(cond, m.Not):
        yield from _customs(cond.condition)


# ── scenarios as walks of the reference stepper ────────────────────────────────────────


@attrs.frozen
class Step:
    """One scenario turn: its `.flow` line, its run-script form and the stepper's turn."""

    speaker: str
    line: str
    script: str | dict[str, Any]
    turn: Turn


@attrs.define
class Walk:
    steps: list[Step] = attrs.field(factory=list)
    lines: list[str] = attrs.field(factory=list)
    #: the close reason, when the walk ended the run
    closed: str | None = None
    #: who the run waits for when the walk stops while the run is open
    waiting: str | None = None
    fired: set[int] = attrs.field(factory=set)  # rule file indices
    defaulted: bool = False


def _text(draw: Any, compiled: CompiledFlow, speakers: list[str]) -> tuple[str, str | None]:
    """Text for a turn, with markers for `urgent(...)` and `pick()`, and the pick made."""
    words = [draw(st.sampled_from(["hi", "ok", "next please", "done?"]))]
    words += [f"!{level}" for level in draw(st.lists(st.integers(0, 9), max_size=3, unique=True))]
    results = next((c.results for c in compiled.customs if c.name == "pick"), None)
    options = [*(speakers[1:] if results is None else [r for r in results if r is not None]), "end"]
    choice = draw(st.sampled_from(options))
    words.append(f"@{choice}")
    return " ".join(words), (None if choice == "end" else choice)


def _turn_for(
    draw: Any, compiled: CompiledFlow, speaker: str, first: bool, speakers: list[str]
) -> tuple[str, str | dict[str, Any], Turn]:
    text, choice = _text(draw, compiled, speakers)
    assumed = tuple(
        (
            call_label(c.name, c.args),
            f"!{c.args.get('level', c.args.get('limit', 1 if c.name == 'urgent' else 0))}"
            in text.split(),
        )
        for t in compiled.graph.transitions
        for c in _customs(t.when)
    )
    quoted = json.dumps(text)
    if speaker in compiled.humans:
        keys = list(compiled.human_writes.get(speaker, ()))
        if keys and draw(st.booleans()):
            key = draw(st.sampled_from(keys))
            value = draw(st.sampled_from(['"x"', '"y"', "true", "1", "2"]))
            turn = Turn(
                speaker=speaker,
                sets=((key, json.loads(value)),),
                assumed=assumed,
                custom_choice=(choice,),
            )
            return (
                f"{format_name(speaker)} sets {format_name(key)} = {value}: {quoted}",
                {"say": text, "set": {key: json.loads(value)}},
                turn,
            )
    tools = [] if first or speaker in compiled.humans else list(compiled.tools_of(speaker))
    if tools and draw(st.integers(0, 2)) > 0:
        tool = draw(st.sampled_from(tools))
        alt: ToolEffectInfo | None = (
            draw(st.sampled_from(tool.alternatives)) if tool.alternatives else None
        )
        call: dict[str, Any] = {"say": text, "tool": tool.name}
        bare = _bare_form(alt)
        if bare is not None and _doing(tools, alt) == [tool.name] and draw(st.booleans()):
            # the bare step (`a hands off to b`, a script's `handoff` without `tool`): a
            # model speaker's turn may do it when one alternative of its tools does just
            # that, and no other tool has one that does: the step is then that tool's call,
            # for the routing (`when tool`) and the properties alike (with two such tools
            # it says no tool, and is refused as ambiguous)
            line, effect = bare
            turn = Turn(
                speaker=speaker,
                tool=tool.name,
                sets=alt.sets if alt else (),
                clears=alt.clears if alt else (),
                handoff=alt.handoff if alt else None,
                assumed=assumed,
                custom_choice=(choice,),
            )
            return f"{format_name(speaker)} {line}: {quoted}", {"say": text, **effect}, turn
        effects = ""
        if alt is not None:
            effects = " " + alt.text()
            if alt.finish is not None:  # a finish wins over a handoff beside it, as in AG2
                call["finish"] = alt.finish
            elif alt.handoff is not None:
                call["handoff"] = alt.handoff
            call["set"], call["delete"] = dict(alt.sets), list(alt.clears)
        turn = Turn(
            speaker=speaker,
            tool=tool.name,
            sets=alt.sets if alt else (),
            clears=alt.clears if alt else (),
            handoff=alt.handoff if alt else None,
            finish=alt.finish if alt else None,
            assumed=assumed,
            custom_choice=(choice,),
        )
        return (
            f"{format_name(speaker)} calls {format_name(tool.name)}{effects}: {quoted}",
            call,
            turn,
        )
    return (
        f"{format_name(speaker)}: {quoted}",
        text,
        Turn(speaker=speaker, assumed=assumed, custom_choice=(choice,)),
    )


def _doing(tools: Sequence[Any], alt: ToolEffectInfo | None) -> list[str]:
    """The tools with an alternative that does exactly what ``alt`` does: the same writes
    (in any order), hand-off and finish (written here, not taken from flowc)."""
    if alt is None:
        return []

    def effect(a: ToolEffectInfo) -> tuple[object, ...]:
        # (the last write of a key is the one that holds; the values compare with
        # Python's `==`, as the declarations are matched today: `1` is `true` there)
        return (dict(a.sets), set(a.clears), a.handoff, a.finish)

    wanted = effect(alt)
    return [t.name for t in tools if any(effect(a) == wanted for a in t.alternatives)]


def _bare_form(alt: ToolEffectInfo | None) -> tuple[str, dict[str, Any]] | None:
    """An alternative as a bare scenario step and script call, when it has one with a text:
    it only hands off, only sets or only clears (a bare `finishes` carries no text)."""
    if alt is None or alt.finish is not None:
        return None
    if alt.handoff is not None and not alt.sets and not alt.clears:
        return f"hands off to {format_name(alt.handoff)}", {"handoff": alt.handoff}
    if alt.handoff is None and alt.sets and not alt.clears and len(dict(alt.sets)) == len(alt.sets):
        assigns = ", ".join(f"{format_name(k)} = {format_value(v)}" for k, v in alt.sets)
        return f"sets {assigns}", {"set": dict(alt.sets)}
    if alt.handoff is None and alt.clears and not alt.sets:
        return f"clears {', '.join(format_name(k) for k in alt.clears)}", {
            "delete": list(alt.clears)
        }
    return None


NextTurn = Callable[[str, int], tuple[str, "str | dict[str, Any]", Turn]]


def _walk(next_turn: NextTurn, compiled: CompiledFlow, stepper: Stepper, length: int) -> Walk:
    """``length`` turns (fewer when the run ends), each from ``next_turn(speaker, number)``,
    with the stepper's expectations after each."""
    walk = Walk()
    speaker: str | None = compiled.start
    max_turns = compiled.graph.max_turns
    for number in range(1, length + 1):
        assert speaker is not None
        line, script, turn = next_turn(speaker, number)
        walk.steps.append(Step(speaker, line, script, turn))
        walk.lines.append(line)
        decision = stepper.step(turn)
        if decision.fired >= 0:
            walk.fired.add(decision.fired)
        walk.defaulted |= decision.fired == -1
        if decision.next is None:
            reason = decision.reason if decision.reason is not None else PICKED
            walk.closed = reason
        elif max_turns is not None and number >= max_turns:
            walk.closed = "max_turns"
        if walk.closed is not None:
            walk.lines.append(f"expect terminate {format_value(walk.closed)}")
            break
        speaker = decision.next
        walk.lines.append(f"expect next {format_name(speaker)}")
    else:
        walk.waiting = speaker
    walk.lines.append(f"expect turns {len(walk.steps)}")
    return walk


#: ways to spoil a scenario that `check` must refuse (and so nothing else is asked)
SPOILS = ("none", "none", "none", "none", "tool", "reason", "bare")


Case = tuple[str, list[Walk], str]


def _case(text: str, compiled: CompiledFlow, walks: list[Walk], spoil: str) -> Case:
    """The flow with its walks as scenarios (the first one spoiled as ``spoil`` says)."""
    blocks: list[str] = []
    for i, walk in enumerate(walks):
        lines = list(walk.lines)
        if i == 0 and spoil == "tool":
            lines.insert(1, f'{format_name(compiled.start)} calls no_such_tool: "x"')
        if i == 0 and spoil == "bare":  # a model speaker's finish none of its tools makes
            model = next(sp for sp in compiled.speakers if sp not in compiled.humans)
            lines.insert(1, f'{format_name(model)} finishes "no tool finishes this"')
        if i == 0 and spoil == "reason":  # the flow never writes it
            lines.insert(len(lines) - 1, 'expect terminate "no such reason"')
        blocks.append(f'scenario "walk {i + 1}" {{\n' + "".join(f"  {x}\n" for x in lines) + "}\n")
    return text + "\n" + "\n".join(blocks), walks, spoil


def case_of(text: str, *turns: tuple[str, str | dict[str, Any], Turn]) -> Case:
    """A case with one scenario of the given turns (``@example``s: the failures found)."""
    compiled = flowc.compile_flow(text, filename="gen.flow")
    queue = list(turns)

    def next_turn(speaker: str, number: int) -> tuple[str, str | dict[str, Any], Turn]:
        line, script, turn = queue.pop(0)
        assert turn.speaker == speaker, (turn, speaker)
        return line, script, turn

    walk = _walk(next_turn, compiled, stepper_for(system_of_flow(compiled)), len(turns))
    assert not queue, "the run ended before the example's last turn"
    return _case(text, compiled, [walk], "none")


@st.composite
def ast_flow_text(draw: Any) -> str:
    """A flow of the language tests' AST generator, printed. Half of those without an
    `otherwise` get one that goes on (`next` or a speaker): their runs would mostly close
    after the kickoff (AG2's implicit `terminate "after_work"`), before any tool is called."""
    flow = draw(flows())
    if not any(isinstance(st_, n.Otherwise) for st_ in flow.statements) and draw(st.booleans()):
        speakers = [d.name.value for d in flow.statements if isinstance(d, n.SpeakerDecl)]
        target: n.Target = draw(
            st.one_of(
                st.just(n.NextTarget(NO_SPAN)),
                st.sampled_from(speakers).map(
                    lambda s: n.SpeakerTarget(n.Name(s, NO_SPAN), NO_SPAN)
                ),
            )
        )
        flow = attrs.evolve(flow, statements=(*flow.statements, n.Otherwise(target, NO_SPAN)))
    return format_flow(flow)


#: flow texts: the soundness test's generator, and the AST generator of the language tests
#: (odd names, keywords as backquoted names, any JSON value, several humans)
SOURCES = st.one_of(flow_text(), ast_flow_text())


@st.composite
def flows_with_scenarios(draw: Any) -> Case:
    text = draw(SOURCES)
    try:
        compiled = flowc.compile_flow(text, filename="gen.flow")
    except flowc.FlowError:
        assume(False)
        raise
    speakers = list(compiled.speakers)
    spoil = draw(st.sampled_from(SPOILS))
    targets = [t.then for t in compiled.graph.transitions] + [compiled.graph.default_target]
    if spoil == "reason" and any(isinstance(t, m.CustomTarget) for t in targets):
        spoil = "none"  # a custom target may end a run with any reason
    if spoil == "bare" and all(sp in compiled.humans for sp in compiled.speakers):
        spoil = "none"

    def next_turn(speaker: str, number: int) -> tuple[str, str | dict[str, Any], Turn]:
        return _turn_for(draw, compiled, speaker, number == 1, speakers)

    walks = [
        _walk(next_turn, compiled, stepper_for(system_of_flow(compiled)), draw(st.integers(1, 8)))
        for _ in range(draw(st.integers(1, 3)))
    ]
    return _case(text, compiled, walks, spoil)


# ── what must agree ────────────────────────────────────────────────────────────────────


def _findings(
    diags: tuple[Diagnostic, ...], compiled: CompiledFlow
) -> tuple[set[int], set[str], bool, bool]:
    """Rules check calls dead, speakers it calls silent, a dead default, no terminate."""
    # a finding points at the rule, or at its own branch when the rule was split (`or`,
    # `from a, b`): the branches of one rule share a line, so they are told apart by span
    by_span = {
        (r.rule.span if r.rule is not None and r.span == r.rule.cond.span else r.span): r.index
        for r in compiled.rules
    }
    dead: set[int] = set()
    silent: set[str] = set()
    for d in diags:
        code = d.code.id
        if code in ("W203", "W204") or (code == "W215" and "never fires" in d.message):
            assert d.span is not None
            dead.add(by_span[d.span])
        if code == "W201" or (code == "W215" and "never speaks" in d.message):
            silent.add(d.message.split("`")[1])
    codes = {d.code.id for d in diags}
    return dead, silent, "W202" in codes, "W210" in codes


def _script(walk: Walk) -> dict[str, Any]:
    turns: dict[str, list[Any]] = {}
    for step in walk.steps[1:]:
        turns.setdefault(step.speaker, []).append(step.script)
    first = walk.steps[0].script
    kickoff = first if isinstance(first, str) else None
    if kickoff is None:  # a human's kickoff that writes context: its first scripted turn
        turns.setdefault(walk.steps[0].speaker, []).insert(0, first)
    return {"kickoff": kickoff, "script": turns}


def assert_one_meaning(text: str, walks: list[Walk], spoil: str) -> str:
    """The property; returns what happened, for statistics."""
    found = check_source(SourceFile("gen.flow", text))
    # a property some run breaks (E116) is a verdict about the runs, not a refusal of the
    # flow: compile, test and run take it as they would without the property
    diags = tuple(d for d in found if d.code.id != "E116")
    if has_errors(diags):
        assert spoil != "none" or any(d.code.id == "I301" for d in diags), [str(d) for d in diags]
        return "refused by check"
    assert spoil == "none", f"check missed a spoiled scenario ({spoil}):\n{text}"
    if any(d.code.id == "I301" for d in diags):
        return "partial analysis"
    compiled = flowc.compile_flow(text, filename="gen.flow")
    assert len(compiled.scenarios) == len(walks)
    dead, silent, dead_default, never_ends = _findings(diags, compiled)
    target = RunTarget.from_compiled(compiled, source_text=text)
    for walk, scenario in zip(walks, compiled.scenarios, strict=True):
        # test: every scenario passes
        result = run_scenario(target, scenario)
        assert result.passed, (result.failure, text)
        # a scenario's run breaks only properties check does not say hold (I306)
        watched = run_scenario(target, scenario, compiled.properties)
        if not watched.passed:
            assert watched.failure is not None and "property " in watched.failure, text
            name = watched.failure.split("property ", 1)[1].split(" ", 1)[0]
            verdicts = {d.code.id for d in found if d.message.startswith(f"property {name} ")}
            assert verdicts and "I306" not in verdicts, (watched.failure, verdicts, text)
        decided = {s.decided_by for s in result.steps}
        # run: the derived script takes the same turns and ends where the scenario does
        run = run_flow(compiled, _script(walk))
        assert run.error is None, (run.error, text)
        assert [r.speaker for r in run.turns] == [s.speaker for s in walk.steps], text
        assert run.close_reason == walk.closed, (run.close_reason, walk.closed, text)
        if walk.closed is None:
            assert run.stalled_on == walk.waiting, (run.stalled_on, walk.waiting, text)
        assert {r.decided_by for r in run.turns} == decided, text
        # check: what it calls dead or silent never happens
        fired = {d for d in decided if isinstance(d, int)}
        assert fired == walk.fired
        assert not fired & dead, (sorted(fired & dead), text)
        spoke = {r.speaker for r in run.turns}
        assert not spoke & silent, (sorted(spoke & silent), text)
        assert not (dead_default and "default" in decided), text
        assert not (never_ends and walk.closed is not None and walk.closed != "max_turns"), text
    return "agreed"


#: found by this test: a tool whose alternatives only write context could be named in a
#: scenario (`calls rate sets j = 2`), but a run script could not say which one it took
TWO_WRITES = """\
speaker user: human
speaker a {
  tool rate sets j = 1 | sets j = 2 | clears j | clears j
}
when from user then a
when context.j == 2 then terminate "two"
"""


#: found by this test (AST flows): an empty close reason. AG2 closes `finishes ""` as
#: "finished" and `terminate ""` as "workflow_terminated"; a script's `handoff` named the
#: first alternative with that handoff, which here also finishes
EMPTY_REASONS = """\
speaker user: human
speaker bot {
  tool both hands off to user, finishes "" | hands off to user
}
when from user then bot
otherwise terminate ""
"""


@example(
    case=case_of(
        TWO_WRITES,
        ('user: "hi"', "hi", Turn(speaker="user")),
        (
            'a calls rate sets j = 2: "two"',
            {"say": "two", "tool": "rate", "set": {"j": 2}},
            Turn(speaker="a", tool="rate", sets=(("j", 2),)),
        ),
    )
)
@example(
    case=case_of(
        TWO_WRITES.replace("when context.j == 2", "when from a"),
        ('user: "hi"', "hi", Turn(speaker="user")),
        (
            'a calls rate clears j: "none"',
            {"say": "none", "tool": "rate", "delete": ["j"]},
            Turn(speaker="a", tool="rate", clears=("j",)),
        ),
    )
)
@example(
    case=case_of(
        EMPTY_REASONS,
        ('user: "hi"', "hi", Turn(speaker="user")),
        (
            'bot calls both hands off to user, finishes "": "bye"',
            {"say": "bye", "tool": "both", "finish": "", "set": {}, "delete": []},
            Turn(speaker="bot", tool="both", handoff="user", finish=""),
        ),
    )
)
@example(
    case=case_of(
        EMPTY_REASONS,
        ('user: "hi"', "hi", Turn(speaker="user")),
        (
            'bot calls both hands off to user: "back"',
            {"say": "back", "tool": "both", "handoff": "user", "set": {}, "delete": []},
            Turn(speaker="bot", tool="both", handoff="user"),
        ),
        ('user: "again"', "again", Turn(speaker="user")),
        ('bot: "done"', "done", Turn(speaker="bot")),
    )
)
#: found by this test: a script's writes that include two alternatives' (`clears done` and
#: `sets done = null, clears done`) were refused as not saying which; the one making the most
#: of them is taken
@example(
    case=case_of(
        "speaker user: human\nspeaker a {\n  tool approve clears done | sets done = null, clears done\n}\n"
        "when from user then a\nwhen from a then user\n",
        ('user: "hi"', "hi", Turn(speaker="user")),
        (
            'a calls approve clears done, sets done = null: "ok"',
            {"say": "ok", "tool": "approve", "set": {"done": None}, "delete": ["done"]},
            Turn(speaker="a", tool="approve", sets=(("done", None),), clears=("done",)),
        ),
    )
)
@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=flows_with_scenarios())
def test_check_compile_test_and_run_agree_on_generated_flows(
    case: tuple[str, list[Walk], str],
) -> None:
    event(assert_one_meaning(*case))


# ── the same through the real command line, on a few flows ─────────────────────────────


def _flowc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowc", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=flows_with_scenarios())
def test_the_commands_agree_on_generated_flows(
    tmp_path: Path, case: tuple[str, list[Walk], str]
) -> None:
    text, walks, _ = case
    (tmp_path / "customs.py").write_text(PLUGIN)
    (tmp_path / "gen.flow").write_text(text)
    checked = _flowc(
        "check", "--plugin", "customs.py", "--format", "json", "gen.flow", cwd=tmp_path
    )
    in_process = check_source(SourceFile("gen.flow", text))
    assert sorted(
        (d["code"], d["location"]["row"], d["message"]) for d in json.loads(checked.stdout)
    ) == sorted((d.code.id, d.span.line if d.span else None, d.message) for d in in_process)
    clean = not has_errors(in_process)
    assert checked.returncode == (0 if clean else 1), checked.stderr
    compiled = _flowc("compile", "--plugin", "customs.py", "gen.flow", cwd=tmp_path)
    # (a property some run breaks, E116, is check's verdict on the runs: the flow still
    # compiles, to the same dict it would without the property)
    compiles = not has_errors([d for d in in_process if d.code.id != "E116"])
    assert compiled.returncode == (0 if compiles else 1), compiled.stderr
    if not clean:
        return
    assert json.loads(compiled.stdout) == flowc.compile_flow(text).knobs
    tested = _flowc("test", "--plugin", "customs.py", "gen.flow", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert f"{len(walks)} passed, 0 failed" in tested.stdout, tested.stdout
    script = tmp_path / "walk.json"
    script.write_text(json.dumps(_script(walks[0])))
    ran = _flowc(
        "run", "--plugin", "customs.py", "gen.flow", "--script", script.name, "--json", cwd=tmp_path
    )
    out = json.loads(ran.stdout)
    assert [t["speaker"] for t in out["turns"]] == [s.speaker for s in walks[0].steps], ran.stderr
    assert out["close_reason"] == walks[0].closed, ran.stdout
