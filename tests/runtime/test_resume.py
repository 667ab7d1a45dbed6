"""`flowc resume`: a stalled run continues from its WAL with the script it started with."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main

FLOW = """flow review "drafter and reviewer"
speaker user: human
speaker drafter
speaker reviewer { tool approve sets done = true }
start user
max_turns 12
context done = false
when context.done == true then terminate "approved"
when from user then drafter
when from drafter then reviewer
when from reviewer then drafter
"""

SHORT = {
    "kickoff": "Write on HTTPS",
    "script": {"drafter": ["Draft 1"], "reviewer": ["Tighten it"]},
}
LONG = {
    "kickoff": "Write on HTTPS",
    "script": {
        "drafter": ["Draft 1", "Draft 2"],
        "reviewer": ["Tighten it", {"tool": "approve", "say": "Approved"}],
    },
}


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "review.flow").write_text(FLOW)
    (tmp_path / "short.json").write_text(json.dumps(SHORT))
    (tmp_path / "long.json").write_text(json.dumps(LONG))
    return tmp_path


def _texts(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    rows = con.execute("SELECT envelope FROM wal ORDER BY seq").fetchall()
    con.close()
    out = []
    for (row,) in rows:
        data = json.loads(row)["event_data"]
        if "body" in data or "text" in data:
            out.append(data.get("body", data.get("text")))
    return out


def test_a_stalled_run_resumes_with_a_longer_script(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = files / "runs.db"
    assert (
        main(
            [
                "run",
                str(files / "review.flow"),
                "--script",
                str(files / "short.json"),
                "--db",
                str(db),
            ]
        )
        == 1
    )
    assert "stalled: drafter has no turn to take after 3 turns" in capsys.readouterr().out
    code = main(["resume", "last", "--script", str(files / "long.json"), "--db", str(db)])
    out = capsys.readouterr().out
    assert code == 0, out
    # the turns taken before are skipped, the tool's declared effect comes from the WAL
    assert _texts(db) == ["Write on HTTPS", "Draft 1", "Tighten it", "Draft 2", "Approved"]
    assert "context: done = true" in out
    assert out.rstrip().endswith('closed: "approved" after 5 turns\ncontext: {"done": true}')
    # a closed run has nothing left: resuming it again changes nothing
    assert main(["resume", "last", "--script", str(files / "long.json"), "--db", str(db)]) == 0
    assert _texts(db) == ["Write on HTTPS", "Draft 1", "Tighten it", "Draft 2", "Approved"]
    assert main(["replay", "last", "--db", str(db)]) == 0


def test_resume_without_anything_to_say_stalls_again(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = files / "runs.db"
    main(
        ["run", str(files / "review.flow"), "--script", str(files / "short.json"), "--db", str(db)]
    )
    capsys.readouterr()
    assert main(["resume", "last", "--json", "--db", str(db)]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["stalled_on"] == "drafter" and result["turn_count"] == 3


def test_resume_errors(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = files / "runs.db"
    assert main(["resume", "nope", "--db", str(db)]) == 2
    assert "no run database" in capsys.readouterr().err
    main(
        ["run", str(files / "review.flow"), "--script", str(files / "short.json"), "--db", str(db)]
    )
    capsys.readouterr()
    assert main(["resume", "nope", "--db", str(db)]) == 2
    assert "no run 'nope'" in capsys.readouterr().err
    bad = files / "bad.json"
    bad.write_text(json.dumps({"script": {"nobody": ["hi"]}}))
    assert main(["resume", "last", "--script", str(bad), "--db", str(db)]) == 1
    assert "`nobody` is not a speaker" in capsys.readouterr().err
    assert len(_texts(db)) == 3


def test_resume_without_turns_reports_what_the_wal_says(files: Path) -> None:
    """``resume_script(..., turns=False)`` (what a worker asks for) leaves the turns out,
    and reads the run's WAL once (when it takes the run), but its close reason, context, turn count
    and stalled speaker are those of the whole WAL's fold, for a run it drives to its
    close, for one found closed, and for one that stalls."""
    import asyncio

    from flowc import compile_flow
    from flowc.runtime.script import parse_script
    from flowc.runtime.script_run import resume_script, run_script_sync
    from flowc.runtime.target import RunTarget
    from flowc.runtime.wal import MemoryStore

    def summary(result: Any) -> tuple[Any, ...]:
        return (
            result.close_reason,
            result.context_vars,
            result.turn_count,
            result.stalled_on,
            result.error,
        )

    target = RunTarget.from_compiled(compile_flow(FLOW))
    for script in (LONG, SHORT):
        store = MemoryStore()
        first = run_script_sync(target, parse_script(SHORT), store=store)
        assert first.close_reason is None
        reads: list[str] = []
        read = store.read

        def counted(channel_id: str, read: Any = read, reads: list[str] = reads) -> Any:
            reads.append(channel_id)
            return read(channel_id)

        store.read = counted  # type: ignore[method-assign]
        lean = asyncio.run(
            resume_script(store, first.channel_id, parse_script(script), turns=False)
        )
        assert lean.turns == ()
        assert reads == [first.channel_id]  # the WAL read once, when the run is taken
        whole = asyncio.run(resume_script(store, first.channel_id, parse_script(script)))
        assert summary(lean) == summary(whole)
        if script is LONG:
            assert lean.close_reason == "approved"
            found = asyncio.run(
                resume_script(store, first.channel_id, parse_script(script), turns=False)
            )
            assert summary(found) == summary(whole)
