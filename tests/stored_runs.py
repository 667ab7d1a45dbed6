"""What the tests of stored runs share: the view's token, a run of
examples/context_routing.flow written by the real `flowc run` (:data:`SCRIPT`,
:func:`store_run`), a stored record rewritten (:func:`rewrite_row`, :func:`copy_with`), the
runs of a database (:func:`run_ids`), a fork's copy cut short (:func:`cut_short`), the
commands that read a run (:func:`cli_readers`) and every JSON path into a value
(:func:`json_paths`)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: the token of the `flowc view` apps the tests make
TOKEN = "test-token-0123456789abcdef"

#: a script of examples/context_routing.flow (a tool that routes and sets the context, a
#: human's reply, a tool that ends the run)
SCRIPT = """kickoff: "I was charged twice this month."
script:
  triage:
    - tool: route_billing
      say: "Passing you to billing."
  billing:
    - "I see two charges. Refund one?"
    - tool: close_ticket
      say: "Refunded."
  customer:
    - "Yes, please."
"""


def store_run(folder: Path) -> tuple[Path, str, list[tuple[int, Any]]]:
    """A closed run of :data:`SCRIPT` written by the real `flowc run` into
    ``folder/runs.db`` (its SQLite WAL folded into the file, so a copy of the file is
    the whole database): the database, the run id and its rows ``(seq, envelope)``."""
    from flowc.cli import main

    (folder / "s.yaml").write_text(SCRIPT, encoding="utf-8")
    db = folder / "runs.db"
    flow = ROOT / "examples" / "context_routing.flow"
    code = main(["run", str(flow), "--script", str(folder / "s.yaml"), "--db", str(db)])
    assert code == 0
    con = sqlite3.connect(db)
    rows = [
        (s, json.loads(e)) for s, e in con.execute("SELECT seq, envelope FROM wal ORDER BY seq")
    ]
    (cid,) = {r["channel_id"] for _, r in rows}
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return db, cid, rows


def rewrite_row(db: Path, seq: int, env: Any) -> None:
    """Store ``env`` (as JSON) in row ``seq`` of the SQLite database ``db``."""
    con = sqlite3.connect(db)
    con.execute("UPDATE wal SET envelope = ? WHERE seq = ?", (json.dumps(env), seq))
    con.commit()
    con.close()


def copy_with(db: Path, folder: Path, seq: int, env: Any) -> Path:
    """A copy of the SQLite database ``db`` in ``folder`` whose row ``seq`` holds ``env``."""
    copy = folder / "copy.db"
    shutil.copyfile(db, copy)
    rewrite_row(copy, seq, env)
    return copy


def run_ids(db: Path) -> list[str]:
    """The ids of the runs of the SQLite database ``db``, oldest first."""
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("SELECT channel_id FROM run ORDER BY number")]
    finally:
        con.close()


def cut_short(db: Path, fork: str, copied: int) -> None:
    """Cut the fork ``fork`` of the SQLite database ``db`` short, as if its process was
    killed after it copied ``copied`` turns: its rows from the next turn on deleted."""
    con = sqlite3.connect(db)
    try:
        seqs = [
            seq
            for seq, event in con.execute(
                "SELECT seq, event_type FROM wal WHERE channel_id = ? ORDER BY seq", (fork,)
            )
            if event in ("ag2.msg.text", "ag2.packet")
        ]
        con.execute("DELETE FROM wal WHERE channel_id = ? AND seq >= ?", (fork, seqs[copied]))
        con.commit()
    finally:
        con.close()


def cli_readers(db: Path, cid: str, *, why: int, scenario: int) -> list[list[str]]:
    """The commands that read the run ``cid`` of ``db``: `flowc log` (the list, the run,
    as JSON and JSON lines), `replay`, `log RUN --why` turn ``why``, `log RUN
    --scenario-upto` turn ``scenario``, and `resume` (what a worker does with a run it
    claims)."""
    return [
        ["log", "--db", str(db)],
        ["log", "--json", "--db", str(db)],
        ["log", cid, "--db", str(db)],
        ["log", cid, "--json", "--db", str(db)],
        ["log", cid, "--jsonl", "--db", str(db)],
        ["replay", cid, "--db", str(db)],
        ["log", cid, "--why", str(why), "--db", str(db)],
        ["log", cid, "--scenario-upto", str(scenario), "--db", str(db)],
        ["resume", cid, "--db", str(db)],
    ]


def json_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every JSON path into ``value`` (the value itself too), depth first.

    >>> json_paths({"a": [1, {"b": 2}]})
    [(), ('a',), ('a', 0), ('a', 1), ('a', 1, 'b')]
    """
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += json_paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += json_paths(v, (*path, i))
    return out
