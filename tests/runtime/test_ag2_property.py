"""``check --target ag2`` clean means the same run on the real ``ag2==1.2.1``: generated flows
and scripts that get none of the AG2 differences (W218-W222) run the same on flowc's hub
(``flowc.runtime``, as ``flowc run`` does) and on AG2's own hub (``ag2_harness``): the same
turns (speaker, kind, routing), close reason, context, turn count and ``stalled_on``.

The flows: a human who starts, one to three model speakers with tools (plain, writing or
clearing context, handing off, finishing; one or two alternatives), a human that may write
declared keys, rules on every built-in condition (nested in ``and`` / ``or`` / ``not`` too)
and target, priorities, ``otherwise``, ``initiator``, ``max_turns``. The scripts: text,
tool calls (one a reply that writes context, routes or ends, and plain calls beside it),
a human's context writes, empty replies. A flow with a difference is left out (the differences
themselves are ``test_ag2_fidelity.py``'s and ``test_ag2_differences.py``'s); so is a
script the runtime refuses before the run.

Under ``HYPOTHESIS_PROFILE=explore`` with ``FLOWC_AG2_EXAMPLES=N``, N fresh examples.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from flowc.compiler.analysis import CheckOptions, check_source
from flowc.compiler.analysis.ag2diff import AG2_CODES
from flowc.compiler.pipeline import compile_source
from flowc.runtime.script import ScriptError, parse_script
from flowc.runtime.script_run import run_script_sync
from flowc.runtime.scripted_replies import check_script
from flowc.runtime.target import RunTarget
from flowc.source import SourceFile

pytest.importorskip("ag2.network")
from tests.runtime.ag2_harness import parity, run_on_ag2

AGENTS = ["a", "b", "c"]
TOOLS = ["t1", "t2", "t3"]
KEYS: dict[str, list[str]] = {"k": ['"x"', '"y"', "true"], "j": ["1", "2"]}
VALUES: dict[str, list[Any]] = {"k": ["x", "y", True], "j": [1, 2]}
EXAMPLES = int(os.environ.get("FLOWC_AG2_EXAMPLES", "250"))


@st.composite
def conditions(draw: Any, speakers: list[str], depth: int = 0) -> str:
    kinds = ["from", "from", "tool", "tool", "ctx", "ctxne", "always"] + (
        ["and", "and", "or", "not"] if depth < 2 else []
    )
    kind = draw(st.sampled_from(kinds))
    if kind == "from":
        return f"from {draw(st.sampled_from(speakers))}"
    if kind == "tool":
        return f"tool {draw(st.sampled_from(TOOLS))}"
    if kind in ("ctx", "ctxne"):
        key = draw(st.sampled_from(sorted(KEYS)))
        op = "==" if kind == "ctx" else "!="
        return f"context.{key} {op} {draw(st.sampled_from([*KEYS[key], 'null']))}"
    if kind == "always":
        return "always"
    if kind == "not":
        return f"not ({draw(conditions(speakers, depth + 1))})"
    joint = " and " if kind == "and" else " or "
    return (
        f"({draw(conditions(speakers, depth + 1))}){joint}({draw(conditions(speakers, depth + 1))})"
    )


@st.composite
def alternatives(draw: Any, speakers: list[str]) -> list[dict[str, Any]]:
    """A tool's alternatives: each a dict of what it does (empty: a plain call)."""
    out: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 2))):
        effect = draw(st.sampled_from(["", "", "set", "clear", "handoff", "finish"]))
        key = draw(st.sampled_from(sorted(KEYS)))
        if effect == "set":
            out.append({"set": (key, draw(st.integers(0, len(KEYS[key]) - 1)))})
        elif effect == "clear":
            out.append({"clear": key})
        elif effect == "handoff":
            out.append({"handoff": draw(st.sampled_from(speakers))})
        elif effect == "finish":
            out.append({"finish": "fin"})
        else:
            out.append({})
    unique: list[dict[str, Any]] = []
    for alt in out:
        if alt not in unique:
            unique.append(alt)
    return unique if any(unique) else [{}]


def _effect_text(alt: dict[str, Any]) -> str:
    if "set" in alt:
        key, i = alt["set"]
        return f"sets {key} = {KEYS[key][i]}"
    if "clear" in alt:
        return f"clears {alt['clear']}"
    if "handoff" in alt:
        return f"hands off to {alt['handoff']}"
    return 'finishes "fin"'


@st.composite
def cases(draw: Any) -> tuple[str, dict[str, Any]]:
    """A flow and a script for it."""
    agents = AGENTS[: draw(st.integers(1, 3))]
    second_human = draw(st.booleans())
    speakers = ["user", *agents, *(["h2"] if second_human else [])]
    humans = {"user", "h2"} if second_human else {"user"}
    tools: dict[str, dict[str, list[dict[str, Any]]]] = {}
    lines: list[str] = []
    writes: dict[str, list[str]] = {}
    for s in speakers:
        if s in humans:
            keys = draw(st.lists(st.sampled_from(sorted(KEYS)), unique=True, max_size=2))
            writes[s] = keys
            lines += (
                [f"speaker {s}: human {{", f"  sets {', '.join(keys)}", "}"]
                if keys
                else [f"speaker {s}: human"]
            )
            continue
        mine = {
            t: draw(alternatives(speakers))
            for t in draw(st.lists(st.sampled_from(TOOLS), unique=True, max_size=2))
        }
        tools[s] = mine
        if not mine:
            lines.append(f"speaker {s}")
            continue
        lines.append(f"speaker {s} {{")
        for t, alts in mine.items():
            effects = " | ".join(_effect_text(a) for a in alts if a)
            lines.append(f"  tool {t} {effects}".rstrip())
        lines.append("}")
    lines.append("start user")
    if draw(st.booleans()):
        lines.append(f"initiator {draw(st.sampled_from(speakers))}")
    max_turns = draw(st.integers(3, 8))
    lines.append(f"max_turns {max_turns}")
    context: dict[str, Any] = {}
    if draw(st.booleans()):
        key = draw(st.sampled_from(sorted(KEYS)))
        i = draw(st.integers(0, len(KEYS[key]) - 1))
        lines.append(f"context {key} = {KEYS[key][i]}")
        context[key] = VALUES[key][i]
    targets = [*speakers, *speakers, "next", "initiator", 'terminate "t"', 'terminate "u"']
    # a backbone that keeps runs going (`from X then Y`, Y another speaker), then rules
    # of every kind before, among and after it
    rules: list[str] = []
    for sender in speakers:
        if draw(st.integers(0, 4)):
            then = draw(
                st.sampled_from([t for t in speakers if t != sender] + ["next", 'terminate "t"'])
            )
            rules.append(f"when from {sender} then {then}")
    for _ in range(draw(st.integers(0, 4))):
        prio = draw(st.sampled_from(["", " priority 5", " priority -1", " priority -1"]))
        cond = draw(conditions(speakers))
        # mostly away from a plain `from X` rule's sender (a turn back to it is W221's)
        mine = [t for t in targets if f"from {t}" != cond] if draw(st.integers(0, 3)) else targets
        if prio == " priority -1" and draw(st.integers(0, 3)):  # early rules end runs less often
            mine = [t for t in mine if not t.startswith("terminate")]
        then = draw(st.sampled_from([*mine, "stay"] if not draw(st.integers(0, 5)) else mine))
        rules.insert(draw(st.integers(0, len(rules))), f"when {cond} then {then}{prio}")
    if not rules:
        rules.append(f"when from user then {speakers[1]}")
    lines += rules
    if draw(st.booleans()):
        lines.append(f"otherwise {draw(st.sampled_from(targets))}")
    text = "\n".join(lines) + "\n"

    routing_names = {
        t for line in lines if line.startswith("when ") for t in TOOLS if f"tool {t}" in line
    }

    def routes(tool: str, alt: dict[str, Any]) -> bool:
        return "handoff" in alt or "finish" in alt or tool in routing_names

    def call(tool: str, alt: dict[str, Any], several: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": tool}
        if several:  # say which alternative
            if "handoff" in alt:
                out["handoff"] = alt["handoff"]
            elif "finish" in alt:
                out["finish"] = alt["finish"]
            elif "set" in alt:
                key, i = alt["set"]
                out["set"] = {key: VALUES[key][i]}
            elif "clear" in alt:
                out["delete"] = [alt["clear"]]
        if draw(st.booleans()):
            out["args"] = {"reason": draw(st.sampled_from(["why", "because"]))}
        return out

    script: dict[str, list[Any]] = {}
    for s in speakers:
        turns: list[Any] = []
        for n in range(draw(st.integers(max_turns // 2, max_turns))):
            said = draw(st.sampled_from([f"{s}{n}"] * 7 + [""]))
            if s in humans:
                if writes[s] and draw(st.booleans()):
                    key = draw(st.sampled_from(writes[s]))
                    if draw(st.booleans()):
                        turns.append({"say": said or f"{s}{n}", "delete": [key]})
                    else:
                        value = draw(st.sampled_from(VALUES[key] + ["other"]))
                        turns.append({"say": said or f"{s}{n}", "set": {key: value}})
                else:
                    turns.append(said or f"{s}{n}")
                continue
            mine = tools.get(s, {})
            if not mine or not draw(st.integers(0, 2)):  # a tool call in two turns of three
                turns.append(said)
                continue
            picked = draw(st.lists(st.sampled_from(sorted(mine)), min_size=1, max_size=2))
            calls: list[dict[str, Any]] = []
            seen = False
            for t in picked:
                alt = draw(st.sampled_from(mine[t]))
                if routes(t, alt) or alt:
                    if seen:
                        continue  # one call the flow can see a reply (the contracts)
                    seen = True
                calls.append(call(t, alt, len(mine[t]) > 1))
            turns.append(
                {"tools": calls, "say": said} if len(calls) > 1 else {**calls[0], "say": said}
            )
        if turns:
            script[s] = turns
    # (the flow declares its initial context: a script for a .flow gives none)
    data: dict[str, Any] = {"kickoff": "go", "script": script}
    return text, data


def run_both(text: str, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Both runs, or None when the case is left out (a difference, a refused script)."""
    compiled, diags = compile_source(SourceFile("gen.flow", text))
    assert compiled is not None, (text, [d.message for d in diags])
    found = {
        d.code.id for d in check_source(SourceFile("gen.flow", text), CheckOptions(target="ag2"))
    }
    if found & AG2_CODES:
        event(f"left out: {', '.join(sorted(found & AG2_CODES))}")
        return None
    script = parse_script(data)
    target = RunTarget.from_compiled(compiled)
    try:
        check_script(target.with_script_facts(script), script)
    except ScriptError:
        event("left out: a script the runtime refuses")
        return None
    ours = parity(run_script_sync(target, script).to_json())
    theirs = asyncio.run(run_on_ag2(compiled, script, settle=True))
    ended = "closed" if ours["close_reason"] is not None else "stalled"
    event(
        f"compared: {ended} after {'1' if ours['turn_count'] < 2 else '2-3' if ours['turn_count'] < 4 else '4+'} turns"
    )
    return ours, theirs


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cases())
def test_clean_under_target_ag2_runs_the_same_on_ag2(case: tuple[str, dict[str, Any]]) -> None:
    text, data = case
    both = run_both(text, data)
    if both is None:
        return
    ours, theirs = both
    # as JSON: `1` and `true` are equal in Python, not in the run's context
    assert json.dumps(ours, sort_keys=True) == json.dumps(theirs, sort_keys=True), (
        f"{text}\n{json.dumps(data)}\n{ours}\n{theirs}"
    )
