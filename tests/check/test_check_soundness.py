"""Soundness on generated flows: every counterexample replays, and random concrete runs
never contradict a finding (a dead rule never fires, an unreachable speaker never speaks,
a dead default is never taken, no run terminates when W210 says none can)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowc.compiler.analysis import CheckOptions, findings_of
from flowc.compiler.analysis.explore import explore
from flowc.compiler.analysis.runs import Turn
from flowc.compiler.analysis.system import System, system_of_flow
from flowc.compiler.pipeline import compile_source
from flowc.source import SourceFile
from tests.check.check_replay import replay_finding, stepper_for
from tests.check.check_stepper import call_label

NAMES = ["user", "a", "b", "c", "d"]
KEYS = {"k": ['"x"', '"y"', "true"], "j": ["1", "2", "[1, 2]", '{"a": 1}']}


@st.composite
def cond_text(draw: Any, speakers: list[str], depth: int = 0) -> str:
    kinds = ["from", "tool", "ctx", "ctxne", "always", "custom"] + (
        ["and", "not"] if depth < 2 else []
    )
    kind = draw(st.sampled_from(kinds))
    if kind == "from":
        return f"from {draw(st.sampled_from(speakers))}"
    if kind == "tool":
        return f"tool {draw(st.sampled_from(['t1', 't2', 't3']))}"
    if kind in ("ctx", "ctxne"):
        key = draw(st.sampled_from(sorted(KEYS)))
        op = "==" if kind == "ctx" else "!="
        return f"context.{key} {op} {draw(st.sampled_from([*KEYS[key], 'null']))}"
    if kind == "always":
        return "always"
    if kind == "custom":
        return draw(st.sampled_from(["urgent()", "urgent(level = 2)"]))
    if kind == "not":
        return f"not ({draw(cond_text(speakers, depth + 1))})"
    return f"({draw(cond_text(speakers, depth + 1))}) and ({draw(cond_text(speakers, depth + 1))})"


@st.composite
def flow_text(draw: Any) -> str:
    n = draw(st.integers(2, 5))
    speakers = NAMES[:n]
    human = draw(st.booleans())
    lines = [
        "condition urgent(level: int = 1)",
        "target pick() -> " + " | ".join(speakers[1:]) + " | terminate",
    ]
    for s in speakers:
        tools = []
        # a human calls no tools (E113): it posts text
        for t in (
            []
            if (s == "user" and human)
            else draw(st.lists(st.sampled_from(["t1", "t2", "t3"]), unique=True, max_size=2))
        ):
            alts = []
            for _ in range(draw(st.integers(1, 2))):
                effect = draw(st.sampled_from(["", "set", "clear", "handoff", "finish"]))
                key = draw(st.sampled_from(sorted(KEYS)))
                if effect == "set":
                    alts.append(f"sets {key} = {draw(st.sampled_from(KEYS[key]))}")
                elif effect == "clear":
                    alts.append(f"clears {key}")
                elif effect == "handoff":
                    alts.append(f"hands off to {draw(st.sampled_from(speakers))}")
                elif effect == "finish":
                    alts.append('finishes "fin"')
            alts = [a for a in alts if a]
            tools.append(f"  tool {t} " + " | ".join(alts) if alts else f"  tool {t}")
        role = ": human" if (s == "user" and human) else ""
        if role:  # the context keys the human may write (`sets`), if any
            writes = draw(st.lists(st.sampled_from(sorted(KEYS)), unique=True, max_size=2))
            tools = [f"  sets {', '.join(writes)}"] if writes else []
        lines.append(f"speaker {s}{role} {{" if tools else f"speaker {s}{role}")
        if tools:
            lines += [*tools, "}"]
    if draw(st.booleans()):
        lines.append(f"max_turns {draw(st.integers(1, 12))}")
    if draw(st.booleans()):
        lines.append(f"initiator {draw(st.sampled_from(speakers))}")
    if draw(st.booleans()):
        lines.append('context k = "x"')
    targets = [*speakers, "next", "stay", "initiator", 'terminate "t"', "pick()"]
    for _ in range(draw(st.integers(1, 7))):
        prio = draw(st.sampled_from(["", " priority 5", " priority -1"]))
        lines.append(
            f"when {draw(cond_text(speakers))} then {draw(st.sampled_from(targets))}{prio}"
        )
    if draw(st.booleans()):
        lines.append(f"otherwise {draw(st.sampled_from(targets))}")
    return "\n".join(lines) + "\n"


def random_runs(
    system: System, seed: int, runs: int = 30, turns: int = 14
) -> tuple[set[int], set[str], bool, bool]:
    """Concrete runs with random choices: rules fired, speakers scheduled, default taken, terminated."""
    rng = random.Random(seed)
    fired: set[int] = set()
    scheduled: set[str] = set()
    default = terminated = False
    labels = sorted({call_label("urgent", {"level": 1}), call_label("urgent", {"level": 2})})
    for _ in range(runs):
        stepper = stepper_for(system)
        speaker: str | None = system.ids[system.start]
        for i in range(turns):
            if speaker is None:
                break
            scheduled.add(speaker)
            index = system.ids.index(speaker)
            action = system.actions[index][0] if i == 0 else rng.choice(system.actions[index])
            choices = system.custom_results.get("pick")
            options = list(choices) if choices is not None else [*system.speakers, None]
            turn = Turn(
                speaker=speaker,
                tool=action.tool,
                sets=action.sets,
                clears=action.clears,
                handoff=system.speakers[action.handoff] if action.handoff is not None else None,
                finish=action.finish,
                assumed=tuple((label, rng.random() < 0.5) for label in labels),
                custom_choice=(rng.choice(options),),
            )
            decision = stepper.step(turn)
            if decision.fired >= 0:
                fired.add(decision.fired)
            default |= decision.fired == -1
            speaker = decision.next
            terminated |= speaker is None
    return fired, scheduled, default, terminated


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=flow_text(), seed=st.integers(0, 2**16))
def test_findings_hold_on_generated_flows(text: str, seed: int) -> None:
    compiled, diags = compile_source(SourceFile("gen.flow", text))
    assert compiled is not None, (text, diags)
    system = system_of_flow(compiled)
    found = findings_of(system, CheckOptions(max_states=5_000), "gen.flow")
    for finding in found:
        replay_finding(system, finding)
    codes = {f.diagnostic.code.id for f in found}
    if "I301" in codes:
        return
    fired, scheduled, default, terminated = random_runs(system, seed)
    for f in found:
        code = f.diagnostic.code.id
        if code in ("W203", "W204"):
            assert f.rule not in fired, (text, f.diagnostic.message)
        if code == "W201":
            assert not any(f"`{s}`" in f.diagnostic.message for s in scheduled), text
        if code == "W202":
            assert not default, text
        if code == "W210":
            assert not terminated, text
    # the explored abstract system covers every concrete run
    space = explore(system, 5_000)
    assert fired <= space.fired
    assert {system.ids.index(s) for s in scheduled} <= {
        space.speaker_of(v) for v in range(len(space.keys))
    }
    assert not default or space.default_fired
    # every rule a random run fired is not reported dead
    dead = {f.rule for f in found if f.diagnostic.code.id in ("W203", "W204")}
    assert not (dead & fired)
