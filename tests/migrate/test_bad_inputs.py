"""Inputs `flowc migrate` cannot translate: each is a clean E- or M-coded finding and
exit 2 (or a usage error), never a traceback, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.migrate import MAX_INPUT_BYTES, migrate_source
from flowc.source import SourceFile

CORPUS = Path(__file__).resolve().parent / "corpus"


def run(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, list[dict[str, object]]]:
    code = main(["migrate", *args, "--format", "json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, json.loads(err) if err.strip() else []


def test_python_syntax_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, findings = run([str(CORPUS / "syntax_error.py")], capsys)
    assert code == 2 and out == ""
    assert [f["code"] for f in findings] == ["E001"]
    assert findings[0]["location"] == {"row": 3, "column": 23}
    assert "never closed" in str(findings[0]["message"])


def test_file_without_a_group_chat(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, findings = run([str(CORPUS / "no_group_chat.py")], capsys)
    assert code == 2 and out == ""
    assert [f["code"] for f in findings] == ["M001"]
    assert "no classic group chat" in str(findings[0]["message"])


def test_component_of_an_unknown_provider(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "team.json"
    path.write_text(
        json.dumps(
            {
                "provider": "my_company.teams.HierarchicalTeam",
                "component_type": "team",
                "config": {"participants": []},
            }
        ),
        encoding="utf-8",
    )
    code, out, findings = run([str(path)], capsys)
    assert code == 2 and out == ""
    assert [f["code"] for f in findings] == ["M001"]
    assert findings[0]["json_path"] == "provider"
    assert "HierarchicalTeam" in str(findings[0]["message"])


def test_a_5_mb_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "huge.py"
    line = "x = 'padding padding padding padding padding padding padding padding'\n"
    path.write_text(line * (5_000_000 // len(line) + 1), encoding="utf-8")
    assert path.stat().st_size > 5_000_000 > MAX_INPUT_BYTES
    code, out, findings = run([str(path)], capsys)
    assert code == 2 and out == ""
    assert [f["code"] for f in findings] == ["M001"]
    assert "bytes" in str(findings[0]["message"])


@pytest.mark.parametrize(
    ("name", "text", "code_id"),
    [
        ("broken.json", '{"provider": "autogen_agentchat.teams.Swarm", ', "E001"),
        ("list.json", "[1, 2, 3]", "M001"),
        ("studio.json", '{"type": "groupchat", "name": "x"}', "M001"),
        ("noparts.json", '{"provider": "autogen_agentchat.teams.Swarm", "config": {}}', "M001"),
        ("deep.py", "x = " + "(" * 400 + "1" + ")" * 400 + "\n", None),
        ("nul.py", "import autogen\x00\n", "E001"),
    ],
)
def test_other_unreadable_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, code_id: str | None
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, out, findings = run([str(path)], capsys)
    assert code == 2 and out == ""
    assert len(findings) == 1
    if code_id is not None:
        assert findings[0]["code"] == code_id


def test_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin.py"
    path.write_bytes(b"name = 'caf\xe9'\n")
    code, out, findings = run([str(path)], capsys)
    assert code == 2 and out == ""
    assert [f["code"] for f in findings] == ["E001"]


def test_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["migrate", str(tmp_path / "nope.py")])
    _, err = capsys.readouterr()
    assert code == 2 and "no such file" in err


def test_api_returns_no_text_for_bad_input() -> None:
    result = migrate_source(SourceFile("x.py", "def f(:\n"))
    assert result.text is None and result.left_out
    assert result.findings[0].code.id == "E001"


def test_agentchat_python_is_recognised_but_reported(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, findings = run([str(CORPUS / "magentic_python.py")], capsys)
    assert code == 2 and out == ""
    assert [f["code"] for f in findings] == ["M001"]
    assert "MagenticOneGroupChat" in str(findings[0]["message"])


def test_an_internal_error_is_no_finding(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bug in flowc is not a finding about the input: the command's internal error
    (exit 2, one line), whatever the output format, and nothing written."""
    import flowc.migrate as migrate

    def broken(source: SourceFile, pick: str | None = None) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(migrate, "_migrate_python", broken)
    monkeypatch.delenv("FLOWC_TRACEBACK", raising=False)
    code = main(["migrate", str(CORPUS / "round_robin_blog.py"), "--format", "json"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == (
        "flowc migrate: internal error: KeyError: 'boom'; please report it with the "
        "command and the input (run it again with --traceback to see where)\n"
    )
    with pytest.raises(KeyError):
        migrate_source(SourceFile("team.py", "x = 1\n"))
