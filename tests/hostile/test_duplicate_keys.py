"""A key given twice in one JSON object or YAML mapping is refused, never resolved.

``json`` and PyYAML keep the last value of a repeated key and drop the others without a
word: a graph with two ``transitions`` lost every rule of the first, a run script with two
lists for one speaker lost a list. Every reader of what a user writes (JSON graphs, run
scripts in JSON and YAML, a value a human types; a script sent to ``flowc view`` goes
through the same reader, not tested here) now refuses the second key with its place: line,
column and JSON path, and where the first is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.commands.human_prompt import HumanPrompt, PromptError
from flowc.inputs import DataError, load_json, load_yaml

ROOT = Path(__file__).resolve().parents[2]
FLOW = str(ROOT / "examples" / "feedback_loop.flow")


# ── the readers ────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "text, path, at, first",
    [
        ('{"a": 1, "a": 2}', "a", (1, 10), "1:2"),
        ('{"x": [{"k": 1}, {"k": 2, "b": 0, "k": 3}]}', "x[1].k", (1, 35), "1:19"),
        # the same key, written once with an escape
        ('{"a": 1,\n "\\u0061": 2}', "a", (2, 2), "1:2"),
        ('{"a b": {}, "a b": {}}', '["a b"]', (1, 13), "1:2"),
    ],
)
def test_json_refuses_a_key_given_twice(
    text: str, path: str, at: tuple[int, int], first: str
) -> None:
    with pytest.raises(DataError) as caught:
        load_json(text)
    err = caught.value
    assert (err.path, (err.line, err.column)) == (path, at)
    assert "is given twice in one object" in err.message
    assert f"(first at {first})" in err.message


def test_json_keys_of_different_objects_may_repeat() -> None:
    text = '{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}], "c": {"b": {"a": 0}}}'
    assert load_json(text) == json.loads(text)


@pytest.mark.parametrize(
    "text, path, at",
    [
        ("script:\n  a: [x]\n  b: [y]\n  a: [z]\n", "script.a", (4, 3)),
        ("a: 1\n'a': 2\n", "a", (2, 1)),
        # the same key once read (an integer), or once written as JSON (text): the path
        # and the message name it as the data holds it, JSON's spelling (`true`, `null`)
        ("1: x\n0x1: y\n", '["1"]', (2, 1)),
        ('1: x\n"1": y\n', '["1"]', (2, 1)),
        ("null: x\n~: y\n", "null", (2, 1)),
        ("a:\n  true: 1\n  'true': 2\n", "a.true", (3, 3)),
        ("k: {a: 1, a: 2}\n", "k.a", (1, 11)),
    ],
)
def test_yaml_refuses_a_key_given_twice(text: str, path: str, at: tuple[int, int]) -> None:
    with pytest.raises(DataError) as caught:
        load_yaml(text)
    err = caught.value
    assert (err.path, (err.line, err.column)) == (path, at)
    assert "is given twice in one mapping (first at " in err.message


def test_yaml_keys_merged_in_may_be_overridden() -> None:
    text = "base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  x: 3\n"
    assert load_yaml(text) == {"base": {"x": 1, "y": 2}, "m": {"x": 3, "y": 2}}


# ── the commands ───────────────────────────────────────────────────────────────


def _graph_with_two_transitions(tmp_path: Path) -> Path:
    out = tmp_path / "g.json"
    assert main(["compile", FLOW, "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    graph = data.get("graph", data)
    rules = json.dumps(graph.pop("transitions"))
    body = json.dumps(graph)[:-1]
    # the real rules first, then an empty list that `json` alone would keep
    out.write_text(f'{body}, "transitions": {rules}, "transitions": []}}')
    return out


@pytest.mark.parametrize("command", ["check", "render", "decompile", "run"])
def test_a_json_graph_with_a_key_given_twice_is_refused(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = _graph_with_two_transitions(tmp_path)
    capsys.readouterr()
    args = [command, str(graph)]
    if command == "run":
        script = tmp_path / "s.json"
        script.write_text('{"kickoff": "hi"}')
        args += ["--script", str(script), "--db", str(tmp_path / "r.db")]
    assert main(args) == 1
    out = "".join(capsys.readouterr())
    assert "E001" in out and f"{graph}:1:" in out
    assert 'the key "transitions" is given twice in one object' in out
    assert "(at transitions)" in out


@pytest.mark.parametrize(
    "name, text, where",
    [
        (
            "s.json",
            '{"kickoff": "hi", "script": {"drafter": ["A"], "reviewer": ["r"], "drafter": ["B"]}}',
            ":1:67: ",
        ),
        (
            "s.yaml",
            "kickoff: hi\nscript:\n  drafter: [A]\n  reviewer: [r]\n  drafter: [B]\n",
            ":5:3: ",
        ),
        # no suffix: read as JSON, then as YAML
        ("s", '{"kickoff": "hi", "kickoff": "again"}', ":1:19: "),
    ],
)
def test_a_run_script_with_a_key_given_twice_is_refused(
    tmp_path: Path, name: str, text: str, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / name
    script.write_text(text)
    db = tmp_path / "r.db"
    assert main(["run", FLOW, "--script", str(script), "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert f"{script}{where}error: the key " in err
    assert "is given twice in one" in err
    assert "(at script.drafter)" in err or "(at kickoff)" in err
    assert not db.exists()  # refused before anything ran


def test_a_value_a_human_types_with_a_key_given_twice_is_refused() -> None:
    prompt = HumanPrompt("client", ("notes",))
    with pytest.raises(PromptError, match='the key "a" is given twice in one object'):
        prompt.feed('/set notes = {"a": 1, "a": 2}')


def test_a_folder_walk_reports_a_graph_with_a_key_given_twice_and_skips_other_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "flows"
    folder.mkdir()
    graph = _graph_with_two_transitions(tmp_path)
    graph.rename(folder / "g.json")
    # another tool's file: JSON (if sloppy), not a graph, so not checked
    (folder / "package.json").write_text('{"name": "x", "name": "y"}')
    capsys.readouterr()
    assert main(["check", str(folder)]) == 1
    out = "".join(capsys.readouterr())
    assert f"{folder / 'g.json'}:1:" in out and "(at transitions)" in out
    assert "package.json" not in out and "1 error in 1 file" in out


def test_yaml_says_a_key_as_json_writes_it() -> None:
    for text, key in (("null: x\n~: y\n", "null"), ("true: x\nTrue: y\n", "true")):
        with pytest.raises(DataError) as caught:
            load_yaml(text)
        assert caught.value.message.startswith(f'the key "{key}" is given twice'), text
