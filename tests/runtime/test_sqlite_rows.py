"""The SQLite WAL's file layout: 1 KiB pages for a new file, rows without default-valued
fields, and files written by earlier versions (4 KiB pages, rows in full) read and
continue as before.

``data/runs-d32a676.db`` was written by flowc at commit d32a676 (before these changes):
``flowc run`` of :data:`FLOW` with :data:`FULL` (closed after 9 turns), then with the first
two turns of each speaker (stalled after 6 turns, open)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.runtime.envelope import EV_TEXT, Envelope
from flowc.runtime.wal import PAGE_SIZE, SqliteStore, encode_row, holder_id

DATA = Path(__file__).resolve().parent / "data"

FLOW = """flow rr "three in turn"
speaker a: human
speaker b: human
speaker c: human
start a
max_turns 9
when from a then b
when from b then c
when from c then a
"""
FULL = {"script": {s: [f"{s}{i}" for i in range(3)] for s in "abc"}}
OPTIONAL = ("task_id", "causation_id", "trace_id", "priority", "depth", "idempotency_key",
            "ttl_seconds")


def _rows(db: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT channel_id, envelope FROM wal ORDER BY seq").fetchall()
    finally:
        con.close()


def _page_size(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        return int(con.execute("PRAGMA page_size").fetchone()[0])
    finally:
        con.close()


def test_a_new_file_has_small_pages_and_rows_without_defaults(tmp_path: Path) -> None:
    db = tmp_path / "wal.db"
    store = SqliteStore(db)
    lease = store.acquire("c1", holder_id("hub-t"))
    plain = Envelope("c1", "a", None, EV_TEXT, {"text": "hi"}, envelope_id="e1",
                     created_at="2026-01-01T00:00:00Z")
    every = Envelope("c1", "b", ("a",), EV_TEXT, {"text": "x"}, envelope_id="e2",
                     task_id="t", causation_id="e1", trace_id="tr", priority="urgent",
                     depth=2, idempotency_key="k", created_at="2026-01-01T00:00:01Z",
                     ttl_seconds=5)
    store.append(plain, lease)
    store.append(every, lease, "e1")
    assert list(store.read("c1")) == [plain, every]
    store.close()
    assert PAGE_SIZE == 1024 and _page_size(db) == PAGE_SIZE
    (_, first), (_, second) = _rows(db)
    assert not set(OPTIONAL) & set(json.loads(first))  # nothing at its default is kept
    assert json.loads(first)["audience"] is None  # AG2's envelope has no default for it
    assert set(OPTIONAL) <= set(json.loads(second))
    assert len(first) < len(plain.to_json()) * 0.7
    # the same JSON text as the full envelope, less the defaults
    full = json.loads(plain.to_json())
    assert json.loads(first) == {k: v for k, v in full.items() if k not in OPTIONAL}


def test_ag2_reads_a_row_without_its_defaults() -> None:
    from ag2.network import Envelope as Ag2Envelope

    env = Envelope("c1", "a", ("b",), EV_TEXT, {"text": "hi"}, envelope_id="e1",
                   created_at="2026-01-01T00:00:00Z")
    theirs = Ag2Envelope.from_json(encode_row(env))
    assert theirs.to_dict() == env.to_dict()


def test_a_file_written_before_reads_and_continues(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    shutil.copy(DATA / "runs-d32a676.db", db)
    (tmp_path / "rr.flow").write_text(FLOW)
    (tmp_path / "full.json").write_text(json.dumps(FULL))
    before = _rows(db)
    assert _page_size(db) == 4096 and all('"task_id": null' in row for _, row in before)
    closed, stalled = dict.fromkeys(cid for cid, _ in before)
    assert main(["log", "--db", str(db)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == [closed, stalled]
    assert "9 turns" in listed[0] and "6 turns  open" in listed[1]
    assert main(["replay", closed, "--db", str(db)]) == 0
    capsys.readouterr()
    # the open run continues in the old file: its page size stays, the new rows are short
    assert main(["resume", stalled, "--script", str(tmp_path / "full.json"),
                 "--db", str(db)]) == 0
    assert 'closed: "max_turns" after 9 turns' in capsys.readouterr().out
    after = _rows(db)
    assert after[:len(before)] == before and _page_size(db) == 4096
    added = [json.loads(row) for cid, row in after[len(before):]]
    assert [r["event_data"].get("text") for r in added if r["event_type"] == EV_TEXT] \
        == ["a2", "b2", "c2"]
    assert all(not set(OPTIONAL) & set(r) for r in added)
    assert main(["replay", stalled, "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["log", stalled, "--db", str(db), "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["close_reason"] == "max_turns"
    assert [t["text"] for t in run["turns"]] == [f"{s}{i}" for i in range(3) for s in "abc"]
