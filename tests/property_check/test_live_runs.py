"""Issue 27, point 3: the properties watched on a live run (``flowc run``'s runtime, with
its SQLite WAL) report what the independent brute force says of that very run.

For generated flows (:mod:`tests.property_check.strategies`, without custom conditions
or targets, which a plain run cannot resolve) with generated properties written into
the flow as ``property`` statements, random runs are drawn from the brute force's
enumeration (:mod:`tests.property_check.runs`: each turn one of the choices it tries)
and turned into a run script (the speaker's text, the tool and alternative it calls,
the keys a human writes). The script is run on the hub runtime into a SQLite WAL file
under ``--on-violation warn``; then, for each property:

- the run takes exactly the brute force's turns (speakers, tools, the end and its reason);
- the turn the run reports the property broken on (``property_violations``, in the
  result and in the WAL's transcript alike) is
  :func:`tests.property_check.meaning.violation_turn` of the brute force's run: the
  meaning read off the docstring of :mod:`flowc.compiler.properties` with no automaton.

The same runs are also cut in two at a random turn: the first part runs until it stalls
(its script stops there), then ``resume`` runs the rest from the WAL, its monitors
rebuilt from the stored turns; the two parts together report what the whole run does.

A few runs go through the real command line (``flowc run --json`` and ``flowc log``).
``FLOWC_LIVE_FLOWS=N`` draws N flows instead of :data:`FLOWS`.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from flowc import compile_flow
from flowc.cli import main
from flowc.compiler.describe import property_text
from flowc.runtime.script import parse_script
from flowc.runtime.script_run import resume_script, run_script_sync
from flowc.runtime.stores import open_store
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import transcript
from tests.diff import brute_force as bf
from tests.property_check.meaning import violation_turn
from tests.property_check.runs import Record, Runs
from tests.property_check.strategies import case_of_seed

#: flows drawn, random runs per flow, properties per flow
FLOWS, RUNS, PROPERTIES = int(os.environ.get("FLOWC_LIVE_FLOWS", "60")), 4, 8
#: the runs that go through `flowc run` itself
CLI_RUNS = 6


def _turn(label: bf.Label, n: int) -> str | dict[str, Any]:
    """A brute force's choice as a script turn."""
    say = f"turn {n}"
    if label.kind == "say":
        return say
    if label.kind == "tool":
        turn: dict[str, Any] = {"tool": label.tool, "say": say}
        effect = label.effect
        if effect is not None:  # which alternative of several: say it as the script does
            if effect.handoff is not None:
                turn["handoff"] = effect.handoff
            if effect.finish is not None:
                turn["finish"] = effect.finish
            if effect.sets:
                turn["set"] = {k: json.loads(v) for k, v in effect.sets}
            if effect.clears:
                turn["delete"] = list(effect.clears)
        return turn
    sets = {k: x for k, x in label.writes if x != bf.UNSET}
    clears = [k for k, x in label.writes if x == bf.UNSET]
    turn = {"say": say}
    if sets:
        turn["set"] = sets
    if clears:
        turn["delete"] = clears
    return turn


def random_run(runs: Runs, rng: random.Random) -> tuple[tuple[Record, ...], dict[str, Any]]:
    """A run of the brute force, one random choice a turn, and its script."""
    state = runs.initial
    records: list[Record] = []
    script: dict[str, list[Any]] = {}
    while True:
        succ = rng.choice(runs.successors(state))
        label, world = succ.choices[rng.randrange(len(succ.choices))]
        assert world == (), "no custom calls in these flows"
        records.append(succ.record)
        script.setdefault(succ.record.speaker, []).append(_turn(label, succ.record.number))
        nxt = runs.after(succ)
        if nxt is None:
            return tuple(records), {"script": script}
        state = nxt


def _cases() -> list[tuple[str, Any]]:
    out = []
    seed = 0
    while len(out) < FLOWS:
        seed += 1
        case = case_of_seed(seed, PROPERTIES)
        if "condition urgent" in case.text:  # custom calls: a plugin's, not a plain run's
            continue
        out.append((case.text + "".join(f"{property_text(p)}\n" for p in case.props), case))
    return out


def test_a_live_run_reports_what_the_brute_force_says_of_it(tmp_path: Path) -> None:
    rng = random.Random(27)
    compared = broken = runs_done = 0
    for i, (text, case) in enumerate(_cases()):
        flow = compile_flow(text)
        assert flow.properties == case.props
        target = RunTarget.from_compiled(flow)
        for j in range(RUNS):
            records, doc = random_run(case.runs, rng)
            db = tmp_path / f"runs-{i}-{j}.db"
            store = open_store(str(db))
            try:
                result = run_script_sync(target, parse_script(doc), store=store)
                stored, close, _ = transcript(list(store.read(result.channel_id)))
            finally:
                store.close()
            where = f"{text}\nscript {json.dumps(doc)}\nrun {' | '.join(map(str, records))}"
            # the runtime took the brute force's run
            assert [(t.speaker, _tool(t.tool_calls, t.routing)) for t in result.turns] == [
                (r.speaker, r.tool) for r in records
            ], where
            assert result.close_reason == records[-1].ended, where
            assert close == records[-1].ended, where
            reported = {v["property"]: v["turn"] for v in result.property_violations}
            in_wal = {v["property"]: v["turn"] for t in stored for v in t.violated}
            assert in_wal == reported, where
            for prop in case.props:
                expected = violation_turn(prop, records)
                assert reported.get(prop.name) == expected, (where, prop)
                compared += 1
                broken += expected is not None
            runs_done += 1
    print(f"\n{runs_done} runs, {compared} (run, property) verdicts agree, {broken} violated")
    assert runs_done == FLOWS * RUNS
    assert compared > 1500 and broken > compared // 10 and compared - broken > compared // 10


def _tool(calls: Any, routing: Any) -> str | None:
    if isinstance(routing, dict) and routing.get("tool"):
        return str(routing["tool"])
    return str(calls[0]["name"]) if calls else None


def test_the_command_line_reports_what_the_brute_force_says(tmp_path: Path, capsys: Any) -> None:
    """`flowc run --json` and `flowc log --json` on a few of the runs above."""
    rng = random.Random(2727)
    done = 0
    for i, (text, case) in enumerate(_cases()):
        records, doc = random_run(case.runs, rng)
        expected = {p.name: violation_turn(p, records) for p in case.props}
        if not any(expected.values()):
            continue
        flow_file = tmp_path / f"f{i}.flow"
        flow_file.write_text(text)
        script = tmp_path / f"s{i}.json"
        script.write_text(json.dumps(doc))
        db = str(tmp_path / "runs.db")
        code = main(["run", str(flow_file), "--script", str(script), "--db", db, "--json"])
        out = json.loads(capsys.readouterr().out)
        assert code == 3, out
        got = {v["property"]: v["turn"] for v in out["property_violations"]}
        assert got == {k: v for k, v in expected.items() if v is not None}, (text, doc)
        assert main(["log", out["run_id"], "--db", db, "--json"]) == 0
        logged = json.loads(capsys.readouterr().out)
        assert logged["property_violations"] == out["property_violations"]
        done += 1
        if done == CLI_RUNS:
            break
    assert done == CLI_RUNS


def _cut(doc: dict[str, Any], records: tuple[Record, ...], k: int) -> dict[str, Any]:
    """The script of the run's first ``k`` turns (the run stalls on turn k + 1)."""
    counts: dict[str, int] = {}
    for r in records[:k]:
        counts[r.speaker] = counts.get(r.speaker, 0) + 1
    return {"script": {s: turns[: counts.get(s, 0)] for s, turns in doc["script"].items()}}


def test_a_resumed_run_reports_what_the_brute_force_says_of_the_whole_run(
    tmp_path: Path,
) -> None:
    import asyncio

    rng = random.Random(2707)
    compared = spanning = 0
    for i, (text, case) in enumerate(_cases()):
        target = RunTarget.from_compiled(compile_flow(text))
        for j in range(RUNS):
            records, doc = random_run(case.runs, rng)
            if len(records) < 2:
                continue
            k = rng.randrange(1, len(records))
            db = str(tmp_path / f"cut-{i}-{j}.db")
            store = open_store(db)
            try:
                first = run_script_sync(target, parse_script(_cut(doc, records, k)), store=store)
                assert first.close_reason is None and first.turn_count == k, (text, doc, k)
            finally:
                store.close()
            store = open_store(db)  # another process's view: the WAL alone
            try:
                whole = asyncio.run(resume_script(store, first.channel_id, parse_script(doc)))
            finally:
                store.close()
            where = f"{text}\nscript {json.dumps(doc)}\ncut after turn {k}"
            assert [t.speaker for t in whole.turns] == [r.speaker for r in records], where
            assert whole.close_reason == records[-1].ended, where
            reported = [(v["property"], v["turn"]) for v in whole.property_violations]
            assert len({name for name, _ in reported}) == len(reported), where  # once each
            for prop in case.props:
                expected = violation_turn(prop, records)
                assert dict(reported).get(prop.name) == expected, (where, prop)
                compared += 1
                spanning += expected is not None and expected > k
    print(f"\n{compared} (resumed run, property) verdicts agree, {spanning} broken after the cut")
    assert compared > 1000 and spanning > 100


def _bare(target: RunTarget, doc: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """``doc`` with every model speaker's tool call that one of its tools alone makes
    (an alternative with effects no other tool of the speaker has) written bare, without
    its ``tool`` (a script's ``set`` / ``delete`` / ``handoff`` / ``finish``), and how many."""
    from flowc.compiler.tool_effects import ToolEffectInfo, bare_alternative
    from flowc.runtime.replies import Finish, Handoff
    from flowc.runtime.scripted_replies import reply_for

    assert target.tools is not None
    out: dict[str, list[Any]] = {}
    made = 0
    for speaker, turns in doc["script"].items():
        alts = {t: a for (s, t), a in target.tools.items() if s == speaker}
        for turn in turns:
            out.setdefault(speaker, []).append(turn)
            if not isinstance(turn, dict) or "tool" not in turn:
                continue
            script = parse_script({"script": {speaker: [turn]}})
            call = reply_for(target, speaker, script.turns[speaker][0]).tool_calls[0]
            res = call.result
            handoff = target.names.get(res.target, res.target) if isinstance(res, Handoff) else None
            finish = res.reason if isinstance(res, Finish) else None
            effect = ToolEffectInfo(tuple(call.set.items()), call.delete, handoff, finish)
            if effect == ToolEffectInfo() or bare_alternative(alts, effect) is None:
                continue
            if bare_alternative(alts, effect)[0] != turn["tool"]:
                continue
            bare: dict[str, Any] = {"say": turn["say"]}
            if call.set:
                bare["set"] = dict(call.set)
            if call.delete:
                bare["delete"] = list(call.delete)
            if handoff is not None:
                bare["handoff"] = handoff
            if finish is not None:
                bare["finish"] = finish
            out[speaker][-1] = bare
            made += 1
    return {"script": out}, made


def test_a_bare_step_runs_as_the_call_of_its_tool(tmp_path: Path) -> None:
    """A model speaker's bare ``set`` / ``delete`` / ``handoff`` / ``finish`` is a call
    of the one tool that does exactly that: the same runs as above, their tool calls
    written bare where the speaker's tools allow it, take the brute force's turns (the
    `when tool` rules route on the bare step), and the properties report what it says."""
    rng = random.Random(2728)
    made = compared = broken = 0
    for text, case in _cases()[: FLOWS // 2]:
        target = RunTarget.from_compiled(compile_flow(text))
        for _ in range(RUNS):
            records, doc = random_run(case.runs, rng)
            doc, bare = _bare(target, doc)
            if not bare:
                continue
            made += bare
            result = run_script_sync(target, parse_script(doc))
            where = f"{text}\nscript {json.dumps(doc)}\nrun {' | '.join(map(str, records))}"
            assert [(t.speaker, _tool(t.tool_calls, t.routing)) for t in result.turns] == [
                (r.speaker, r.tool) for r in records
            ], where
            assert result.close_reason == records[-1].ended, where
            reported = {v["property"]: v["turn"] for v in result.property_violations}
            for prop in case.props:
                expected = violation_turn(prop, records)
                assert reported.get(prop.name) == expected, (where, prop)
                compared += 1
                broken += expected is not None
    print(f"\n{made} bare steps, {compared} (run, property) verdicts agree, {broken} violated")
    assert made > 50 and broken > compared // 10 and compared - broken > compared // 10
