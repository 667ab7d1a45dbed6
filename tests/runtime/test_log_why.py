"""`flowc log RUN --why N` and `flowc log RUN --scenario-upto N`, end to end on real SQLite
runs: the explanation's text and JSON, bad input as one line, and the written scenario
passing `flowc test` and replaying the stored run's first N turns."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowc
from flowc.cli import main
from flowc.runtime.fork import ForkError, scenario_upto
from flowc.runtime.scenarios import run_scenario
from flowc.runtime.script import parse_script
from flowc.runtime.script_run import run_script
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import transcript
from flowc.runtime.wal import SqliteStore
from flowc.runtime.why import SCHEMA, TurnOutOfRange, explain_turn
from tests.coverage.flows import TYPED

FLOW = """flow review "drafter and reviewer"
speaker user: human { sets approved, notes }
speaker drafter {
  tool search
  tool transfer hands off to reviewer
  tool decide sets notes = "kept" | hands off to user
}
speaker reviewer {
  tool approve sets approved = true
  tool close finishes "closed"
}
start user
max_turns 9
when context.approved == true then terminate "approved"
when tool search then reviewer
when from user then drafter
when from drafter and context.notes != "kept" then reviewer
when from reviewer then user
otherwise drafter
"""

SCRIPT = {
    "kickoff": "Write on HTTPS",
    "script": {
        "drafter": [
            {"tool": "search", "args": {"q": "tls"}, "say": "Looking"},
            {"tool": "decide", "set": {"notes": "kept"}, "say": "Kept"},
            "Draft 2",
            {"tool": "transfer", "say": "Over to you"},
        ],
        "reviewer": ["Tighten it", {"tool": "approve", "say": "Approved"}],
        "user": [{"say": "Keep notes", "set": {"notes": "short"}}],
    },
}


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, Path]:
    """The flow file and a SQLite WAL holding one run of it (8 turns, "approved")."""
    flow = tmp_path / "review.flow"
    flow.write_text(FLOW)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    db = tmp_path / "runs.db"
    assert main(["run", str(flow), "--script", str(script), "--db", str(db), "--json"]) == 0
    return flow, db


def _log(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["log", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_why_names_the_rule_the_false_rules_and_the_default(
    stored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = stored
    code, out, _ = _log(capsys, "last", "--db", str(db))
    assert code == 0
    # turn 5 (drafter, no tool): rule 4 is false by its `!=` part, so the default decides
    code, out, err = _log(capsys, "last", "--why", "5", "--db", str(db))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "turn 5: drafter → drafter, by otherwise drafter"
    assert "  no rule of this speaker fired:" in lines
    at = lines.index(
        '    rule 4, line 17: when from drafter and context.notes != "kept" then reviewer'
    )
    assert lines[at + 1 : at + 4] == [
        '      `from drafter and context.notes != "kept"` was false: a part was false',
        "        `from drafter` held: the speaker was drafter",
        '        `context.notes != "kept"` was false: `notes` was "kept" after the turn',
    ]
    assert "      `tool search` was false: the turn called decide, which does not route" in lines
    assert "  not checked: 2 rules for other speakers only (rules 3, 5)" in lines
    # turn 2: `tool search` fired; the rule above it was false on the context
    code, out, _ = _log(capsys, "last", "--why", "2", "--db", str(db))
    lines = out.splitlines()
    assert lines[:3] == [
        "turn 2: drafter → reviewer, by rule 2, line 15: when tool search then reviewer",
        "  rule 2, line 15: when tool search then reviewer",
        "    `tool search` held: the turn called search",
    ]
    assert (
        "      `context.approved == true` was false: `approved` was unset after the turn" in lines
    )
    assert lines[-1] == "  the default (otherwise drafter) would have chosen drafter"
    # turn 7: a hand-off bypassed the rules; without it, the default would have decided
    code, out, _ = _log(capsys, "last", "--why", "7", "--db", str(db))
    lines = out.splitlines()
    assert lines[0] == "turn 7: drafter → reviewer, by handoff"
    assert lines[1] == (
        "  the turn's tool transfer handed off to reviewer: a hand-off bypasses every rule"
    )
    assert lines[2] == (
        "  without it, no rule would have fired: the default would have chosen drafter"
    )
    # turn 8: the reviewer's approval ends the run by rule 1
    code, out, _ = _log(capsys, "last", "--why", "8", "--db", str(db))
    lines = out.splitlines()
    assert lines[0] == (
        'turn 8: reviewer ■ ended the run: "approved", by rule 1, line 14: '
        'when context.approved == true then terminate "approved"'
    )
    assert "    `context.approved == true` held: `approved` was true after the turn" in lines


def test_why_json_is_the_library_document(
    stored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = stored
    store = SqliteStore(str(db), readonly=True)
    try:
        cid = store.channel_ids()[-1]
        records, _, _ = transcript(list(store.read(cid)))
        for n, record in enumerate(records, start=1):
            code, out, _ = _log(capsys, cid[:9], "--why", str(n), "--json", "--db", str(db))
            doc = json.loads(out)
            assert code == 0 and doc == explain_turn(store.read(cid), n).to_json()
            assert doc["schema"] == SCHEMA and doc["turn"] == n and doc["agrees"] is True
            assert doc["speaker"] == record.speaker
            assert doc["next_speaker"] == record.next_speaker
            if isinstance(record.decided_by, int):
                assert doc["kind"] == "rule" and doc["fired"]["rule"] == record.decided_by + 1
            else:
                assert doc["kind"] == record.decided_by
            code, line, _ = _log(capsys, cid, "--why", str(n), "--jsonl", "--db", str(db))
            assert line.count("\n") == 1 and json.loads(line) == doc
        with pytest.raises(TurnOutOfRange):
            explain_turn(store.read(cid), len(records) + 1)
    finally:
        store.close()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["last", "--why", "0"],
            "flowc log: error: --why takes a turn number (1 or more), not '0'",
        ),
        (
            ["last", "--why", "-3"],
            "flowc log: error: --why takes a turn number (1 or more), not '-3'",
        ),
        (
            ["last", "--why", "two"],
            "flowc log: error: --why takes a turn number (1 or more), not 'two'",
        ),
        (["last", "--why", "9"], "flowc log: error: run {cid} has 8 turns: no turn 9"),
        (["last", "--scenario-upto", "99"], "flowc log: error: run {cid} has 8 turns: no turn 99"),
        (
            ["nosuchrun", "--why", "1"],
            "flowc log: error: no run 'nosuchrun' (flowc log lists them)",
        ),
        (["--why", "1"], "flowc log: error: --why N explains one run: give its id (or `last`)"),
        (
            ["last", "--name", "x"],
            "flowc log: error: --name titles the scenario of --scenario-upto N: give both",
        ),
        (
            ["last", "--scenario-upto", "2", "--json"],
            "flowc log: error: --scenario-upto prints a scenario block, as text: drop --json/--jsonl",
        ),
    ],
)
def test_bad_input_is_one_line(
    stored: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    _, db = stored
    store = SqliteStore(str(db), readonly=True)
    cid = store.channel_ids()[-1]
    store.close()
    code, out, err = _log(capsys, *argv, "--db", str(db))
    assert (code, out, err) == (2, "", message.format(cid=cid) + "\n")


def test_the_scenario_upto_n_passes_flowc_test_and_replays_the_run(
    stored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    flow, db = stored
    store = SqliteStore(str(db), readonly=True)
    cid = store.channel_ids()[-1]
    records, close, _ = transcript(list(store.read(cid)))
    store.close()
    assert (len(records), close) == (8, "approved")
    blocks = []
    for n in range(1, len(records) + 1):
        code, out, err = _log(
            capsys, "last", "--scenario-upto", str(n), "--name", f"upto {n}", "--db", str(db)
        )
        assert (code, err) == (0, "")
        assert out.startswith(f'scenario "upto {n}" {{\n') and out.endswith("}\n")
        blocks.append(out)
    code, out, _ = _log(capsys, "last", "--scenario-upto", "3", "--db", str(db))
    assert out.startswith(f'scenario "run {cid} up to turn 3" {{\n')
    assert '  drafter calls search with {"q": "tls"}: "Looking"\n' in blocks[1]
    assert '  drafter calls decide sets notes = "kept": "Kept"\n' in blocks[4]
    assert '  expect terminate "approved"\n  expect turns 8\n' in blocks[7]
    flow.write_text(FLOW + "\n" + "\n".join(blocks))
    assert main(["test", str(flow)]) == 0
    out = capsys.readouterr().out
    assert "8 scenarios: 8 passed, 0 failed" in out
    _replays(flow, records)


def _replays(flow: Path, records: list[Any]) -> int:
    """Each scenario of ``flow`` (the N-th replays N turns) passes and takes the stored
    run's first N turns: the same speakers, decided the same way. The turns compared."""
    text = flow.read_text()
    compiled = flowc.compile_flow(text)
    target = RunTarget.from_compiled(compiled, source_text=text)
    compared = 0
    for sc in compiled.scenarios:
        result = run_scenario(target, sc)
        assert result.passed, result.failure
        n = result.turns
        want = [(r.speaker, r.decided_by) for r in records[:n]]
        assert [(s.speaker, s.decided_by) for s in result.steps] == want
        compared += n
    return compared


# ── the fork on random runs ───────────────────────────────────────────────────

_texts = st.sampled_from(["ok", "x y", 'say "hi"', "line\nbreak \\ \t ✓ \u2028", ""])
USER = st.one_of(
    _texts.filter(bool),
    st.builds(
        lambda s, v: {"say": s or "n", "set": {"notes": v}}, _texts, st.sampled_from(["a", "kept"])
    ),
    st.builds(lambda s, v: {"say": s or "n", "set": {"approved": v}}, _texts, st.booleans()),
    st.builds(lambda s: {"say": s or "n", "delete": ["notes"]}, _texts),
    st.builds(lambda s: {"say": s or "n", "set": {"approved": False}, "delete": ["notes"]}, _texts),
)
DRAFTER = st.one_of(
    _texts.filter(bool),
    st.builds(
        lambda s, q: {"tool": "search", "args": {"q": q}, "say": s},
        _texts,
        st.sampled_from(["a", 'b"c']),
    ),
    st.builds(lambda s: {"tool": "transfer", "say": s}, _texts),
    st.builds(lambda s: {"tool": "decide", "set": {"notes": "kept"}, "say": s or "k"}, _texts),
    st.builds(lambda s: {"tool": "decide", "handoff": "user", "say": s}, _texts),
    st.just({"handoff": "reviewer", "say": "bare"}),
)
REVIEWER = st.one_of(
    _texts.filter(bool),
    st.builds(lambda s: {"tool": "approve", "say": s or "a"}, _texts),
    st.builds(lambda s: {"tool": "close", "say": s}, _texts),
)
_dbs = itertools.count()


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(USER, max_size=4), st.lists(DRAFTER, max_size=5), st.lists(REVIEWER, max_size=4))
def test_a_forked_scenario_replays_any_scripted_run(
    tmp_path: Path, user: list[Any], drafter: list[Any], reviewer: list[Any]
) -> None:
    target = RunTarget.from_compiled(flowc.compile_flow(FLOW), source_text=FLOW)
    script = parse_script(
        {"kickoff": "go", "script": {"user": user, "drafter": drafter, "reviewer": reviewer}}
    )
    db = tmp_path / f"fork-{next(_dbs)}.db"
    store = SqliteStore(str(db))
    try:
        result = asyncio.run(run_script(target, script, store=store))
        envs = list(store.read(result.channel_id))
    finally:
        store.close()
    records, _, _ = transcript(envs)
    blocks = [scenario_upto(envs, n, f"upto {n}") for n in range(1, len(records) + 1)]
    flow = tmp_path / f"fork-{next(_dbs)}.flow"
    flow.write_text(FLOW + "\n" + "\n".join(blocks))
    assert _replays(flow, records) == len(records) * (len(records) + 1) // 2


def _envelopes(target: RunTarget, script: Any, db: Path) -> list[Any]:
    """The envelopes of ``script`` run on ``target`` into a new SQLite store at ``db``."""
    store = SqliteStore(str(db))
    try:
        result = asyncio.run(run_script(target, script, store=store))
        return list(store.read(result.channel_id))
    finally:
        store.close()


def test_a_turn_no_scenario_line_can_write_is_refused(tmp_path: Path) -> None:
    """Two tool calls in one turn (`fetch`, a declared tool with no effects that no rule
    routes on, beside the one call the flow sees): a scenario line calls one tool, so the
    fork says so."""
    text = FLOW.replace("  tool search\n", "  tool search\n  tool fetch\n")
    target = RunTarget.from_compiled(flowc.compile_flow(text), source_text=text)
    script = parse_script(
        {
            "kickoff": "go",
            "script": {
                "drafter": [{"say": "both", "tools": [{"tool": "fetch"}, {"tool": "transfer"}]}]
            },
        }
    )
    envs = _envelopes(target, script, tmp_path / "runs.db")
    assert scenario_upto(envs, 1).count("expect") == 2
    with pytest.raises(ForkError, match=r"turn 2 \(drafter\) called 2 tools \(fetch, transfer\)"):
        scenario_upto(envs, 2)


@pytest.mark.parametrize("value,written", [(1, "1"), (1.0, "1.0"), (True, "true")])
def test_a_forked_call_names_the_alternative_that_wrote_its_very_value(
    tmp_path: Path, value: Any, written: str
) -> None:
    """`sets done = true | sets done = 1 | sets done = 1.0` are equal under `==`: the
    script's call takes the one that writes its value, and the fork names that one."""
    target = RunTarget.from_compiled(flowc.compile_flow(TYPED), source_text=TYPED)
    script = parse_script(
        {"kickoff": "go", "script": {"bot": [{"tool": "mark", "set": {"done": value}, "say": "m"}]}}
    )
    envs = _envelopes(target, script, tmp_path / "runs.db")
    block = scenario_upto(envs, 2, "typed")
    assert f"  bot calls mark sets done = {written}" in block
    assert f"  expect context.done == {written}\n" in block
    flow = tmp_path / "typed.flow"
    flow.write_text(TYPED + "\n" + block)
    compiled = flowc.compile_flow(flow.read_text())
    [run] = [run_scenario(RunTarget.from_compiled(compiled), sc) for sc in compiled.scenarios]
    assert run.passed, run.failure


ROOT = Path(__file__).resolve().parents[2]


def _doc_example(command: str) -> str:
    """The output docs/runtime.md shows under ``$ COMMAND``."""
    text = (ROOT / "docs" / "runtime.md").read_text()
    start = text.index(f"$ {command}\n") + len(command) + 3
    return text[start : text.index("```", start)]


def test_the_docs_show_what_the_commands_print(
    stored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The examples of docs/runtime.md are this file's run, printed as it is."""
    _, db = stored
    for argv in (
        ["last", "--why", "5"],
        ["last", "--scenario-upto", "3", "--name", "searched, then sent back"],
    ):
        code, out, _ = _log(capsys, *argv, "--db", str(db))
        shown = " ".join(f'"{a}"' if " " in a else a for a in argv)
        assert code == 0 and out == _doc_example(f"flowc log {shown}")


def _stored_run(tmp_path: Path, script: dict[str, Any]) -> list[Any]:
    target = RunTarget.from_compiled(flowc.compile_flow(FLOW), source_text=FLOW)
    return _envelopes(target, parse_script(script), tmp_path / "runs.db")


def test_a_finish_and_the_turn_cap_are_explained(tmp_path: Path) -> None:
    envs = _stored_run(
        tmp_path,
        {
            "kickoff": "go",
            "script": {
                "drafter": [{"tool": "transfer", "say": "t"}],
                "reviewer": [{"tool": "close", "say": "bye"}],
            },
        },
    )
    why = explain_turn(envs, 3)
    assert (why.kind, why.closes, why.close_kind, why.next_speaker) == (
        "finish",
        "closed",
        "finish",
        None,
    )
    assert why.routing is not None and why.routing["tool"] == "close"
    lines = why.text().splitlines()
    assert lines[:4] == [
        'turn 3: reviewer ■ ended the run: "closed", by finish',
        '  the turn\'s tool close finished the run ("closed"): a finish bypasses every rule',
        "  without it, this rule would have fired:",
        "    rule 5, line 18: when from reviewer then user",
    ]
    (tmp_path / "cap").mkdir()
    capped = _stored_run(
        tmp_path / "cap",
        {
            "kickoff": "go",
            "script": {
                "drafter": ["d1", "d2", "d3"],
                "reviewer": ["r1", "r2", "r3"],
                "user": ["u2", "u3"],
            },
        },
    )
    why = explain_turn(capped, 9)
    assert (why.kind, why.closes, why.close_kind, why.next_speaker) == (
        "rule",
        "max_turns",
        "max_turns",
        "user",
    )
    assert why.fired is not None and why.fired.rule == 5
    assert why.text().splitlines()[-1] == (
        '  the run then reached max_turns 9 (turn 9) and closed: "max_turns"'
    )
    # the first line already says the run ended there, not only the last one
    head = why.text().splitlines()[0]
    assert head.startswith("turn 9: ") and head.endswith("; max_turns 9 then closed the run")
    assert not explain_turn(capped, 8).text().splitlines()[0].endswith("closed the run")
    assert explain_turn(capped, 8).close_kind is None


def test_the_output_stays_proportional_to_the_flow_and_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two hundred rules reading one large value, and a condition nested fifty deep:
    the value is shown cut in each sentence and once whole in the JSON, a nested part's
    text is cut, so neither output is a product of the flow's size and the run's."""
    big = "v" * 100_000
    deep: dict[str, Any] = {"name": "context_equals", "args": {"key": "k", "value": "no"}}
    for _ in range(50):
        deep = {"name": "not", "args": {"condition": {"name": "not", "args": {"condition": deep}}}}
    rules = [
        {
            "when": {"name": "context_equals", "args": {"key": "k", "value": f"x{i}"}},
            "then": {"name": "agent", "args": {"agent_id": "b"}},
            "priority": 0,
        }
        for i in range(200)
    ]
    rules.append(
        {"when": deep, "then": {"name": "agent", "args": {"agent_id": "b"}}, "priority": 0}
    )
    rules.append(
        {
            "when": {"name": "from_speaker", "args": {"agent_id": "a"}},
            "then": {"name": "agent", "args": {"agent_id": "b"}},
            "priority": 0,
        }
    )
    knobs = {
        "graph": {
            "initial_speaker": "a",
            "transitions": rules,
            "max_turns": None,
            "default_target": {"name": "terminate", "args": {"reason": "done"}},
        },
        "context_vars": {"k": big},
    }
    graph_file = tmp_path / "graph.json"
    graph_file.write_text(json.dumps(knobs))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"kickoff": "hi", "script": {"b": ["ok"]}}))
    db = str(tmp_path / "runs.db")
    assert main(["run", str(graph_file), "--script", str(script), "--db", db]) == 0
    capsys.readouterr()
    size = len(json.dumps(knobs))
    code, text, _ = _log(capsys, "last", "--why", "1", "--db", db)
    assert code == 0 and "rule 202" in text and len(text) < size
    assert '`k` was "' + "v" * 58 + "… after the turn" in text
    code, out, _ = _log(capsys, "last", "--why", "1", "--json", "--db", db)
    doc = json.loads(out)
    assert doc["context"] == {"k": big} and len(doc["checked"]) == 201
    assert len(json.dumps(doc, ensure_ascii=False)) < 2 * size  # (the indents aside)


HOSTILE = """speaker `when`: human { sets `then`, `my key` }
speaker `next bot` { tool `do it` sets `then` = 1 | hands off to `when` }
when context.`then` == 1 then terminate "one"
when from `when` then `next bot`
otherwise `when`
"""


def test_names_that_need_quoting_are_quoted_in_the_why_and_the_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Keywords and spaces as speaker, tool and key names: the scenario written with them
    passes `flowc test`."""
    flow, script, db = tmp_path / "h.flow", tmp_path / "s.json", str(tmp_path / "r.db")
    flow.write_text(HOSTILE)
    script.write_text(
        json.dumps(
            {
                "kickoff": "go",
                "script": {
                    "when": [{"say": "k", "set": {"my key": "v"}}],
                    "next bot": [
                        {"tool": "do it", "handoff": "when", "say": "h"},
                        {"tool": "do it", "set": {"then": 1}, "say": "s"},
                    ],
                },
            }
        )
    )
    assert main(["run", str(flow), "--script", str(script), "--db", db]) == 0
    capsys.readouterr()
    code, out, _ = _log(capsys, "last", "--why", "2", "--db", db)
    assert code == 0 and out.splitlines()[:2] == [
        "turn 2: `next bot` → `when`, by handoff",
        "  the turn's tool `do it` handed off to `when`: a hand-off bypasses every rule",
    ]
    code, block, _ = _log(capsys, "last", "--scenario-upto", "4", "--db", db)
    assert code == 0
    assert '  `next bot` calls `do it` hands off to `when`: "h"\n' in block
    assert '  `when` sets `my key` = "v": "k"\n' in block
    flow.write_text(HOSTILE + "\n" + block)
    assert main(["test", str(flow)]) == 0
    assert "1 scenario: 1 passed, 0 failed" in capsys.readouterr().out


def test_a_folder_that_forgets_its_records_numbers_and_explains_as_one_that_keeps_them(
    stored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from flowc.runtime.transcript import TranscriptFolder

    _, db = stored
    capsys.readouterr()
    store = SqliteStore(db)
    try:
        (cid,) = store.channel_ids()
        envs = list(store.read(cid))
    finally:
        store.close()
    records, close, _ = transcript(envs)
    forgetful = TranscriptFolder()
    fed = []
    for i, env in enumerate(envs):
        record = forgetful.feed(env)
        if record is not None:
            fed.append(record)
        forgetful.forget()
        # a checkpoint taken here holds no record, and explaining any later turn from it
        # gives what explaining that turn from the run's start gives
        mark = forgetful.copy(records=False)
        assert mark.records == [] and mark.turns == forgetful.turns
        if mark.metadata is not None and mark.close is None:
            for n in range(mark.turns + 1, len(records) + 1):
                from_mark = explain_turn(envs[i + 1 :], n, start=mark).to_json()
                assert from_mark == explain_turn(envs, n).to_json(), (i, n)
    assert fed == records and forgetful.records == [] and forgetful.close == close
    assert forgetful.turns == len(records) == 8
