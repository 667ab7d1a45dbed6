"""A lone surrogate (a ``\\ud800`` escape with no partner) is not text: no UTF-8 output,
SQLite row or terminal can hold it. JSON and YAML inputs that hold one are refused when
read, with where, the same way in every command; an escaped pair is one character."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowc.inputs import DataError, load_json, load_yaml
from tests.hostile.limits import run_limited

GRAPH = (
    '{"initial_speaker": "a", "max_turns": 3, "transitions": [{"when": {"name": '
    '"from_agent", "args": {"agent_id": "a"}}, "then": {"name": "agent", "args": '
    '{"agent_id": "b\\udfff"}}, "priority": 0}], "default_target": {"name": '
    '"terminate", "args": {"reason": "done"}}}'
)


def test_every_command_refuses_a_graph_holding_a_lone_surrogate_alike(tmp_path: Path) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(GRAPH)
    script = tmp_path / "s.json"
    script.write_text('{"script": {}}')
    firsts = set()
    for args in (
        ["check", str(graph)],
        ["render", str(graph), "--format", "mermaid"],
        ["run", str(graph), "--script", str(script), "--db", ":memory:"],
        ["run", str(graph), "--script", str(script), "--db", str(tmp_path / "r.db")],
    ):
        result = run_limited(args, cwd=tmp_path, memory_mib=512, cpu_seconds=30, wall_seconds=60.0)
        out = result.stdout + result.stderr
        assert result.returncode == 1 and not result.traceback, (args, out[-2000:])
        firsts.add((result.stdout or result.stderr).splitlines()[0])  # check: stdout
        assert f"{graph}:1:" in out, (args, out)
    assert firsts == {
        "error[E001]: a string holds a lone surrogate (\\udfff), which is not "
        "Unicode text (at transitions[0].then.args.agent_id)"
    }


def test_an_escaped_pair_is_one_character_and_is_run(tmp_path: Path) -> None:
    flow = tmp_path / "pair.flow"
    flow.write_text(
        "speaker a: human\nspeaker b: human\nstart a\nmax_turns 2\nwhen from a then b\n"
    )
    script = tmp_path / "s.json"
    script.write_text('{"script": {"a": ["\\ud83d\\ude00 hi"], "b": ["ok"]}}')
    result = run_limited(
        ["run", str(flow), "--script", str(script), "--db", str(tmp_path / "r.db")],
        cwd=tmp_path,
        memory_mib=512,
        cpu_seconds=30,
        wall_seconds=60.0,
    )
    assert result.returncode == 0, result.stderr
    assert "  1  a  \U0001f600 hi" in result.stdout.splitlines()


@given(
    st.text(max_size=20),
    st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"]),
    st.text(max_size=20),
)
def test_a_lone_surrogate_anywhere_is_refused_at_its_place(
    before: str, lone: str, after: str
) -> None:
    value = before + lone + after
    doc = {"k": [1, {"x": value}]}
    text = json.dumps(doc)  # ASCII: every surrogate written as an escape
    with pytest.raises(DataError) as caught:
        load_json(text)
    assert caught.value.path == "k[1].x"
    message = f"a string holds a lone surrogate (\\u{ord(lone):04x}), which is not Unicode text"
    assert caught.value.message == message
    assert text[caught.value.offset or 0] == '"'
    with pytest.raises(DataError) as in_key:  # a key: where its object is
        load_json(json.dumps({"k": {value: 1}}))
    assert (in_key.value.message, in_key.value.path) == (message, "k")


@given(st.text(max_size=40).filter(lambda s: not any("\ud800" <= c <= "\udfff" for c in s)))
def test_text_without_a_lone_surrogate_reads_as_json_reads_it(value: str) -> None:
    text = json.dumps({"v": [value]})
    assert load_json(text) == json.loads(text)


def test_yaml_says_where() -> None:
    with pytest.raises(DataError) as caught:
        load_yaml('a:\n  - "ok"\n  - "x\\ud800"\n')
    assert (caught.value.line, caught.value.column, caught.value.path) == (3, 5, "a[1]")
    assert load_yaml('a: ["\\u00e9"]') == {"a": ["\u00e9"]}
