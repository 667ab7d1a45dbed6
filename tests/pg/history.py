"""An independent check of the runs' history in a PostgreSQL run database.

It reads the database's rows and nothing else (no code of ``flowc.runtime``: the store,
the hub and the folds are what it judges), and says for every run what breaks:

- the envelopes follow one another: each row names (``follows``) the envelope before
  it in the run, none is missing, none comes twice, and envelope ids are unique;
- the run starts with its opening and nothing follows its close;
- its turns (text and packet envelopes) are, in order, the turns it was expected to
  take (each scripted turn exactly once), and it ends as expected (closed with a
  reason, or visibly open);
- a run that is open has a lease row (someone may take it).

What it does not check yet: the fencing tokens of the writers (the log's rows do not
record them).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import psycopg

OPENED = "ag2.channel.opened"
CLOSED = "ag2.channel.closed"
TURNS = ("ag2.msg.text", "ag2.packet")

#: what a run should have been: its turns' texts in order, and its close reason (``None``:
#: left open)
Expected = tuple[list[str], str | None]


def _text(doc: dict[str, Any]) -> str:
    data = doc.get("event_data") or {}
    text = data.get("text", data.get("body", ""))
    return text if isinstance(text, str) else ""


def check_history(dsn: str, expected: Callable[[str], Expected]) -> list[str]:
    """Every anomaly found in the database at ``dsn`` (empty: none); ``expected(run_id)``
    says what each run should be."""
    problems: list[str] = []
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT seq, channel_id, envelope_id, event_type, envelope, follows "
            "FROM flowc_wal ORDER BY seq"
        ).fetchall()
        leased = {r[0] for r in conn.execute("SELECT channel_id FROM flowc_lease").fetchall()}
    runs: dict[str, list[tuple[Any, ...]]] = {}
    seen: set[str] = set()
    for row in rows:
        if row[2] in seen:
            problems.append(f"envelope {row[2]} is written twice")
        seen.add(row[2])
        runs.setdefault(row[1], []).append(row)
    for run, rs in runs.items():
        problems += [f"run {run}: {p}" for p in _check_run(rs, expected(run), run in leased)]
    return problems


def _check_run(rows: list[tuple[Any, ...]], expected: Expected, leased: bool) -> list[str]:
    out: list[str] = []
    if rows[0][3] != OPENED:
        out.append(f"starts with {rows[0][3]}, not its opening")
    for before, row in itertools.pairwise(rows):
        if row[5] is not None and row[5] != before[2]:
            out.append(f"envelope {row[2]} follows {row[5]}, but the one before it is {before[2]}")
        if before[3] == CLOSED:
            out.append(f"envelope {row[2]} comes after the close")
    docs = [json.loads(row[4]) for row in rows]
    for row, doc in zip(rows, docs, strict=True):
        if doc.get("envelope_id") != row[2] or doc.get("event_type") != row[3]:
            out.append(f"row {row[0]} does not hold the envelope its columns name")
    turns = [_text(doc) for row, doc in zip(rows, docs, strict=True) if row[3] in TURNS]
    want_turns, want_close = expected
    if turns != want_turns:
        out.append(f"its turns are {turns}, not {want_turns}")
    close = docs[-1].get("event_data", {}).get("reason") if rows[-1][3] == CLOSED else None
    if close != want_close:
        out.append(f"ends {'closed ' + repr(close) if close else 'open'}, not as expected")
    if rows[-1][3] != CLOSED and not leased:
        out.append("is open and has no lease row: nobody can take it")
    return out
