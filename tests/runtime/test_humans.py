"""Humans, one rule everywhere (as AG2's hub: a human client posts text; any participant
may write context): a human posts text and writes the keys it declares, never calls a
tool. compile/check, test and run agree; the checker knows who writes the keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flowc
from flowc.cli import main

FLOW = """\
speaker user: human {
  sets approved
}
speaker drafter
start user
max_turns 8
when context.approved == true then terminate "approved"
when from user then drafter
when from drafter then user
"""


def test_a_key_only_a_human_sets_is_not_w209_and_its_rule_is_live() -> None:
    assert [d.code.id for d in flowc.check(FLOW)] == []
    undeclared = FLOW.replace("speaker user: human {\n  sets approved\n}", "speaker user: human")
    # nothing sets `approved` (W209), so no run terminates: each ends at the cap (W210)
    assert [d.code.id for d in flowc.check(undeclared)] == ["W210", "W209"]


def test_test_and_run_accept_declared_writes_and_refuse_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "f.flow"
    path.write_text(
        FLOW + 'scenario "ok" {\n  user: "brief"\n  drafter: "d"\n'
        '  user sets approved = true: "good"\n  expect terminate "approved"\n}\n'
    )
    assert main(["test", str(path)]) == 0
    capsys.readouterr()
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            {
                "kickoff": "brief",
                "script": {"drafter": ["d"], "user": [{"set": {"approved": True}, "say": "good"}]},
            }
        )
    )
    assert main(["run", str(path), "--script", str(script), "--db", ":memory:"]) == 0
    assert 'closed: "approved"' in capsys.readouterr().out
    script.write_text(
        json.dumps(
            {
                "kickoff": "brief",
                "script": {"drafter": ["d"], "user": [{"set": {"rating": 5}, "say": "good"}]},
            }
        )
    )
    assert main(["run", str(path), "--script", str(script), "--db", ":memory:"]) == 1
    assert (
        f"{script}: error: script.user[0]: `user` is a human that may write only "
        "context.approved, not context.rating"
    ) in capsys.readouterr().err


def test_a_human_with_a_tool_is_refused_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "f.flow"
    path.write_text(
        FLOW.replace("sets approved", "tool approve") + 'scenario "s" {\n  user calls approve\n}\n'
    )
    for command in (["compile"], ["check"], ["test"], ["render", "-f", "dot"]):
        assert main([*command, str(path)]) == 1, command
        out, err = capsys.readouterr()
        assert "E113" in out + err and "is a human" in out + err
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"kickoff": "brief", "script": {"user": [{"tool": "approve"}]}}))
    assert main(["run", str(path), "--script", str(script), "--db", ":memory:"]) == 1


def test_the_explorer_lets_a_human_write_any_value() -> None:
    """`approved` may become true only through the human: the terminate rule is reachable
    and a rule needing another value of it is too (any value, or unset)."""
    flow = FLOW + 'when context.approved == "maybe" then user priority -1\n'
    # (I304: the rule can give the human's own turn back to it, where AG2 stalls)
    assert [d.code.id for d in flowc.check(flow)] == ["I304"]
