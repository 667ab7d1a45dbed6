"""Failure classes of issue 12 beyond the corpus goldens: options and exact messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.cli import main
from flowc.migrate import migrate_source
from flowc.source import SourceFile

CORPUS = Path(__file__).resolve().parent / "corpus"


def _migrate(name: str, pick: str | None = None) -> tuple[str | None, list[tuple[str, str]]]:
    path = CORPUS / name
    result = migrate_source(SourceFile(name, path.read_text(encoding="utf-8")), pick=pick)
    return result.text, [(d.code.id, d.message) for d in result.findings]


def test_several_teams_each_dropped_one_is_reported_and_can_be_picked(
        capsys: pytest.CaptureFixture[str]) -> None:
    text, findings = _migrate("real_several_teams.py")
    assert text is not None and "speaker selector" in text  # the last team, by default
    assert ("M001", "this file builds 2 teams; `selector_team` (line 28) was translated and this one, "
                    "`team` (line 18), was left out") in findings
    text, findings = _migrate("real_several_teams.py", pick="team")
    assert text is not None and "speaker selector" not in text
    assert 'when text_contains(text = "APPROVE") then terminate' in text
    assert any("`selector_team` (line 28), was left out" in m for _, m in findings)
    assert _migrate("real_several_teams.py", pick="28")[0] == _migrate("real_several_teams.py")[0]
    # the command line
    assert main(["migrate", str(CORPUS / "real_several_teams.py"), "--pick", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no team is named `nope`; the file has `team` (line 18), `selector_team` (line 28)" in err


def test_an_unreadable_default_chat_falls_back_to_the_next_one() -> None:
    src = ("import autogen\n"
           "sketch = autogen.GroupChat(agents=make_agents(), messages=[])\n"
           "a = autogen.AssistantAgent('a')\nb = autogen.AssistantAgent('b')\n"
           "real = autogen.GroupChat(agents=[a, b], messages=[], max_round=3,"
           " speaker_selection_method='round_robin')\n")
    result = migrate_source(SourceFile("two.py", src))
    assert result.text is not None and "speaker a" in result.text
    left_out = [d.message for d in result.findings if d.code.id == "M001"]
    assert len(left_out) == 1 and "`sketch` (line 2), was left out" in left_out[0]


def test_unknown_agent_classes_take_part_and_are_reported() -> None:
    text, findings = _migrate("real_unknown_agents.py")
    assert text is not None and "speaker location_specialist" in text and "speaker planner" in text
    assert [c for c, _ in findings] == ["M002", "M002"]
    text, findings = _migrate("real_agentchat_unknown_agents.py")
    assert text is not None and "speaker web_surfer" in text and "speaker counter" in text
    assert sum("an agent class flowc does not model" in m for _, m in findings) == 2
    # no claim of a statically known order when a class is not modelled
    assert "scenario" not in text
