"""Regular expressions under resource limits (issue 11, point 4), through the commands.

`text_matches(pattern = "^(a+)+$")` against 40 `a` and a `!` hung `flowc test` and
`flowc run` for more than a minute (Python's backtracking takes 2^40 steps); it now ends
in the time of start-up. A pattern flowc cannot match in linear time is E114 at its place
in every command that reads the flow: compile, check, render, test, run (a JSON graph:
check and run, with the JSON path).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.limits import Limited, run_limited

# CPU: a command's whole process, start-up included (about 1 s on a loaded machine);
# Python's `re` needs hours of CPU for the 40-character case
LIMITS = {"memory_mib": 512, "cpu_seconds": 10, "wall_seconds": 60.0, "output_mib": 8}

CATASTROPHIC = "a" * 40 + "!"

FLOW = f'''flow catastrophic "go"
speaker user: human
speaker bot
start user
max_turns 6
condition text_matches(pattern: string)
when from bot and text_matches(pattern = "^(a+)+$") then terminate "matched"
when from user then bot
when from bot then user

scenario "the catastrophic text does not match, the next one does" {{
  user: "go"
  bot: "{CATASTROPHIC}"
  expect next user
  user: "again"
  bot: "aaaa"
  expect terminate "matched"
}}
'''

SCRIPT = {"kickoff": "go", "script": {"user": ["again"], "bot": [CATASTROPHIC, "aaaa"]}}


def _ok(result: Limited) -> str:
    out = result.stdout + result.stderr
    assert not result.timed_out, f"timed out after {result.seconds:.0f}s"
    assert not result.traceback, out[-3000:]
    assert result.returncode == 0, out[-3000:]
    return out


def test_flowc_test_ends_in_start_up_time(tmp_path: Path) -> None:
    (tmp_path / "cat.flow").write_text(FLOW)
    result = run_limited(["test", "cat.flow"], cwd=tmp_path, **LIMITS)
    out = _ok(result)
    assert "1 passed, 0 failed" in out
    assert result.cpu < LIMITS["cpu_seconds"]


def test_flowc_run_ends_in_start_up_time(tmp_path: Path) -> None:
    (tmp_path / "cat.flow").write_text(FLOW)
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    result = run_limited(
        ["run", "cat.flow", "--script", "script.json", "--db", "runs.db"], cwd=tmp_path, **LIMITS
    )
    out = _ok(result)
    assert CATASTROPHIC in out and "matched" in out
    assert result.cpu < LIMITS["cpu_seconds"]


def test_a_long_text_is_matched_in_linear_time(tmp_path: Path) -> None:
    """200,000 characters: Python's engine would backtrack forever; RE2 reads them once."""
    script = {"kickoff": "go", "script": {"user": ["again"], "bot": ["a" * 200_000 + "!", "aaaa"]}}
    (tmp_path / "cat.flow").write_text(FLOW)
    (tmp_path / "script.json").write_text(json.dumps(script))
    result = run_limited(
        ["run", "cat.flow", "--script", "script.json", "--jsonl"], cwd=tmp_path, **LIMITS
    )
    _ok(result)
    assert '"matched"' in result.stdout


REFUSED_FLOW = """flow refused "go"
speaker user: human
speaker bot
start user
condition text_matches(pattern: string)
when from bot and text_matches(pattern = "^\\\\d+(?=px)") then terminate "sized"
when from user then bot
when from bot then user

scenario "never runs" {
  user: "go"
  bot: "12px"
  expect terminate "sized"
}
"""


@pytest.mark.parametrize(
    "command",
    [
        ["compile"],
        ["check"],
        ["render", "-f", "dot"],
        ["test"],
        ["run", "--script", "script.json", "--db", "runs.db"],
    ],
)
def test_a_refused_pattern_is_e114_at_its_place_in_every_command(
    tmp_path: Path, command: list[str]
) -> None:
    (tmp_path / "refused.flow").write_text(REFUSED_FLOW)
    (tmp_path / "script.json").write_text(
        json.dumps({"kickoff": "go", "script": {"bot": ["12px"]}})
    )
    result = run_limited([command[0], "refused.flow", *command[1:]], cwd=tmp_path, **LIMITS)
    out = result.stdout + result.stderr
    assert not result.timed_out and not result.traceback, out[-3000:]
    assert result.returncode == 1, out[-3000:]
    # the caret is under `(?=` in the source line (the pattern is written `^\\d+(?=px)`)
    assert "error[E114]: `text_matches`: a lookahead `(?=...)` (at offset 4)" in out, out
    assert "refused.flow:6:48" in out, out
    assert "|                                                ^^^" in out, out


GRAPH = {
    "initial_speaker": "user",
    "max_turns": 4,
    "default_target": {"name": "terminate", "args": {"reason": "done"}},
    "transitions": [
        {
            "when": {
                "name": "all_of",
                "args": {
                    "conditions": [
                        {"name": "from_speaker", "args": {"agent_id": "bot"}},
                        {"name": "text_matches", "args": {"pattern": "(a+)\\1"}},
                    ]
                },
            },
            "then": {"name": "terminate", "args": {"reason": "doubled"}},
        },
        {
            "when": {"name": "from_speaker", "args": {"agent_id": "user"}},
            "then": {"name": "agent", "args": {"agent_id": "bot"}},
        },
    ],
}


@pytest.mark.parametrize(
    "command", [["check"], ["run", "--script", "script.json", "--db", "runs.db"]]
)
def test_a_refused_pattern_in_a_json_graph_is_e114_with_its_path(
    tmp_path: Path, command: list[str]
) -> None:
    (tmp_path / "graph.json").write_text(json.dumps(GRAPH))
    (tmp_path / "script.json").write_text(json.dumps({"kickoff": "go", "script": {"bot": ["aa"]}}))
    result = run_limited([command[0], "graph.json", *command[1:]], cwd=tmp_path, **LIMITS)
    out = result.stdout + result.stderr
    assert not result.timed_out and not result.traceback, out[-3000:]
    assert result.returncode == 1, out[-3000:]
    assert "E114" in out and "transitions[0].when.args.conditions[1].args.pattern" in out, out
    assert "a backreference (at offset 4)" in out, out


def test_migrate_reports_a_guardrail_pattern_it_cannot_match(tmp_path: Path) -> None:
    """A regex guardrail with a lookbehind: M001 naming the construct, the rule left out
    (the flow it writes still compiles; before, it wrote a flow every command refused)."""
    corpus = Path(__file__).resolve().parents[1] / "migrate" / "corpus" / "group_guardrail.py"
    text = corpus.read_text().replace(
        r'condition=r"\b(?:\d[ -]?){13,16}\b"', r'condition=r"(?<=card )\d{16}"'
    )
    assert "(?<=card )" in text
    (tmp_path / "bank.py").write_text(text)
    result = run_limited(["migrate", "bank.py", "-o", "bank.flow"], cwd=tmp_path, **LIMITS)
    out = result.stdout + result.stderr
    assert not result.timed_out and not result.traceback, out[-3000:]
    assert result.returncode == 1, out[-3000:]
    assert (
        "error[M001]: the guardrail's regular expression cannot become a `text_matches` rule: "
        "a lookbehind `(?<=...)` (at offset 0)" in out
    ), out
    checked = run_limited(["check", "bank.flow"], cwd=tmp_path, **LIMITS)
    assert checked.returncode == 0 and "E114" not in checked.stdout + checked.stderr
