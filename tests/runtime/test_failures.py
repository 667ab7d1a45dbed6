"""Plugin and agent problems are diagnostics: a plugin class that does not fit its
declaration is an error finding (E115) at the call in every output format of `flowc
check`; an exception raised in an agent or in a plugin while a run goes names the team's
file and line and the exception in the transcript and in `flowc log` (the whole
traceback with ``FLOWC_TRACEBACK=1``), and the run stays resumable."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowc.cli import main
from tests.plugin_registry import remember_plugins

FLOW = """\
speaker user: human
speaker writer
speaker editor
condition long_reply(chars: int = 200)
start user
max_turns 6
when from writer and long_reply(chars = 5) then editor
when from user then writer
when from writer then user
when from editor then terminate "edited"
"""

PLUGIN = """\
from typing import Any, ClassVar

import attrs

import flowc


@flowc.register_condition
@attrs.frozen
class LongReply:
    name: ClassVar[str] = "long_reply"
    min_chars: int = 200

    def evaluate(self, state: Any, envelope: Any) -> bool:
        return len(envelope.event_data["text"]) >= self.min_chars
"""

AGENTS = """\
def lookup(table):
    return table["missing"]


async def writer(turn):
    return lookup({})

AGENTS = {"writer": writer}
"""

FIXED = 'AGENTS = {"writer": lambda turn: "a draft", "editor": lambda turn: "edited"}\n'


@pytest.fixture(autouse=True)
def isolated_registry() -> Iterator[None]:
    """Each test starts with no custom classes and no plugin imported."""
    restore = remember_plugins()
    yield
    restore()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "f.flow").write_text(FLOW)
    (tmp_path / "routing.py").write_text(PLUGIN)
    (tmp_path / "agents.py").write_text(AGENTS)
    (tmp_path / "kick.json").write_text(json.dumps({"kickoff": "brief"}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLOWC_TRACEBACK", raising=False)
    return tmp_path


# ── check: a class that does not fit is a finding ───────────────────────────

MISMATCH = (
    "`long_reply(chars = 5)`: the class registered for this condition, `LongReply` "
    "(routing.py:8), does not take these arguments: TypeError: LongReply.__init__() got "
    "an unexpected keyword argument 'chars'"
)


def test_a_class_that_does_not_fit_is_e115_at_the_call_in_every_format(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check = ["check", "f.flow", "--plugin", "routing.py"]
    assert main([*check, "--format", "concise"]) == 1
    out, err = capsys.readouterr()
    assert f"f.flow:7:22: E115 {MISMATCH}" in out and err == ""
    assert main([*check, "--format", "text"]) == 1
    out = capsys.readouterr().out
    assert f"error[E115]: {MISMATCH}\n --> f.flow:7:22\n" in out
    assert (
        "7 | when from writer and long_reply(chars = 5) then editor\n"
        "  |                      ^^^^^^^^^^^^^^^^^^^^^\n" in out
    )
    assert "1 error" in out
    assert main([*check, "--format", "json"]) == 1
    [found] = [d for d in json.loads(capsys.readouterr().out) if d["code"] == "E115"]
    assert found["message"] == MISMATCH and found["severity"] == "error"
    assert found["location"] == {"row": 7, "column": 22}
    assert found["end_location"] == {"row": 7, "column": 43}
    assert main([*check, "--format", "github"]) == 1
    out = capsys.readouterr().out
    assert (
        "::error file=f.flow,line=7,col=22,endLine=7,endColumn=43,title=E115 plugin-mismatch::"
        in out
    )
    assert main([*check, "--format", "sarif"]) == 1
    sarif = json.loads(capsys.readouterr().out)
    [result] = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "E115"]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 7
    assert result["locations"][0]["physicalLocation"]["region"]["startColumn"] == 22
    # the flow fixed: nothing
    (project / "f.flow").write_text(FLOW.replace("chars", "min_chars"))
    assert main([*check, "--format", "concise"]) == 0
    assert "E115" not in capsys.readouterr().out


def test_a_class_whose_constructor_fails_is_e115_naming_where(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "f.flow").write_text(FLOW.replace("chars", "min_chars"))
    (project / "routing.py").write_text(
        PLUGIN
        + """
    def __attrs_post_init__(self) -> None:
        raise RuntimeError("no model configured")
"""
    )
    assert main(["check", "f.flow", "--plugin", "routing.py", "--format", "concise"]) == 1
    out = capsys.readouterr().out
    assert (
        "f.flow:7:22: E115 `long_reply(min_chars = 5)`: building the class registered for "
        "this condition, `LongReply` (routing.py:8), failed: RuntimeError: no model "
        "configured (routing.py:18, in __attrs_post_init__)"
    ) in out


def test_a_name_no_plugin_implements_is_e115_at_its_declaration(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "other.py").write_text("X = 1\n")
    assert main(["check", "f.flow", "--plugin", "other.py", "--format", "json"]) == 1
    [found] = [d for d in json.loads(capsys.readouterr().out) if d["code"] == "E115"]
    assert found["message"] == "condition `long_reply` has no implementation (used on line 7)"
    assert found["location"] == {"row": 4, "column": 1}


# ── a run: an exception names the team's file and line ──────────────────────

AGENT_ERROR = "KeyError: 'missing' (agents.py:2, in lookup)"


def test_an_agents_exception_names_its_file_and_line_in_the_transcript_and_the_log(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "f.flow").write_text(
        FLOW.replace("condition long_reply(chars: int = 200)\n", "").replace(
            " and long_reply(chars = 5)", ""
        )
    )
    run = ["run", "f.flow", "--script", "kick.json", "--agents", "agents.py", "--db", "runs.db"]
    assert main(run) == 1
    out, err = capsys.readouterr()
    assert f"  turn 2 failed (writer): {AGENT_ERROR}\nstalled: writer's turn failed" in out
    assert "Traceback" not in out + err
    assert main(["log", "last", "--db", "runs.db"]) == 0
    out = capsys.readouterr().out
    assert (
        f"  turn 2 failed (writer): {AGENT_ERROR}\nopen: 1 turn so far, writer to speak next" in out
    )
    assert main(["log", "last", "--db", "runs.db", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["failures"] == [
        {"turn": 2, "speaker": "writer", "error": AGENT_ERROR, "where": "agents.py:2"}
    ]
    assert main([*run[:-2], "--db", ":memory:", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"] == AGENT_ERROR
    # the whole traceback when asked for
    monkeypatch.setenv("FLOWC_TRACEBACK", "1")
    assert main([*run[:-2], "--db", ":memory:"]) == 1
    out, err = capsys.readouterr()
    assert "Traceback (most recent call last)" in err and "line 6, in writer" in err
    assert main(["log", "last", "--db", "runs.db", "--json"]) == 0
    assert (
        'return table["missing"]' in json.loads(capsys.readouterr().out)["failures"][0]["traceback"]
    )
    monkeypatch.delenv("FLOWC_TRACEBACK")
    # --traceback says the same (and leaves the environment as it was)
    assert main([*run[:-2], "--db", ":memory:", "--traceback"]) == 1
    out, err = capsys.readouterr()
    assert "Traceback (most recent call last)" in err and "line 6, in writer" in err
    assert "FLOWC_TRACEBACK" not in os.environ
    # the run stays open: fixed agents continue it, and the WAL re-folds
    (project / "agents.py").write_text(FIXED)
    assert main(["resume", "last", "--db", "runs.db", "--agents", "agents.py"]) == 0
    assert 'closed: "edited" after 3 turns' in capsys.readouterr().out
    assert main(["replay", "last", "--db", "runs.db"]) == 0
    assert main(["log", "last", "--db", "runs.db"]) == 0
    out = capsys.readouterr().out  # the failure stays in the run's history, where it was
    assert out.count("turn 2 failed (writer)") == 1 and "  2  writer  a draft" in out


def test_a_plugins_exception_while_routing_names_its_file_and_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "f.flow").write_text(FLOW.replace("chars", "min_chars"))
    (project / "agents.py").write_text(FIXED)
    run = [
        "run",
        "f.flow",
        "--script",
        "kick.json",
        "--agents",
        "agents.py",
        "--db",
        "runs.db",
        "--plugin",
        "routing.py",
    ]
    assert main(run) == 1
    out = capsys.readouterr().out
    said = (
        "refused: routing the turn failed in a plugin's code: condition `long_reply`: "
        "KeyError: 'text' (routing.py:15, in evaluate)"
    )
    assert f"  turn 2 failed (writer): {said}\n" in out
    assert main(["log", "last", "--db", "runs.db", "--plugin", "routing.py"]) == 0
    assert f"  turn 2 failed (writer): {said}\n" in capsys.readouterr().out
