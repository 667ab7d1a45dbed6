"""An independent check of the runs' history in a PostgreSQL run database.

It reads the database's rows and nothing else (no code of ``flowc.runtime``: the store,
the hub and the folds are what it judges), and says for every run what breaks:

- the envelopes follow one another: each row names (``follows``) the envelope before
  it in the run, none is missing, none comes twice, and envelope ids are unique;
- the run starts with its opening and nothing follows its close;
- its turns (text and packet envelopes) are, in order, the turns it was expected to
  take (each scripted turn exactly once), and it ends as expected (closed with a
  reason, or visibly open);
- a run that is open has a lease row (someone may take it);
- fencing: each row names the token it was written under (``flowc_wal.token``) and
  ``flowc_lease_log`` every lease taken with the run's last ``seq`` then; a row's token
  was taken, tokens only grow along the run's log, and no row was written under a token
  after a newer one was taken (a holder whose lease was taken over writes nothing more);
- given the fault schedule (``faulted``: the process ids the test killed, paused or cut
  off, ``killed``: those of them it killed), each lease changed hands for a reason: a
  live lease was taken only from a killed process (a dead holder on the same host), an
  expired one only from a faulted process (a live worker renews its leases), and one
  given back in the middle of the run (taken again as free while the run's last record
  was neither its opening, nor a recorded stall, nor its close) only by a faulted
  process (a worker that is not cut off from the database goes on with its runs). A
  commit whose answer was lost, the connection working again at once, is no such
  fault: the writer's retry must find its write and go on.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Collection
from typing import Any

import psycopg

OPENED = "ag2.channel.opened"
CLOSED = "ag2.channel.closed"
STALLED = "flowc.run.stalled"
TURNS = ("ag2.msg.text", "ag2.packet")

#: what a run should have been: its turns' texts in order, and its close reason (``None``:
#: left open)
Expected = tuple[list[str], str | None]


def _text(doc: dict[str, Any]) -> str:
    data = doc.get("event_data") or {}
    text = data.get("text", data.get("body", ""))
    return text if isinstance(text, str) else ""


def check_history(
    dsn: str,
    expected: Callable[[str], Expected],
    *,
    faulted: Collection[int] | None = None,
    killed: Collection[int] = (),
) -> list[str]:
    """Every anomaly found in the database at ``dsn`` (empty: none); ``expected(run_id)``
    says what each run should be; ``faulted`` and ``killed`` (process ids), the fault
    schedule the takeovers are judged by (``None``: takeovers not judged)."""
    problems: list[str] = []
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT seq, channel_id, envelope_id, event_type, envelope, follows, token "
            "FROM flowc_wal ORDER BY seq"
        ).fetchall()
        leased = {r[0] for r in conn.execute("SELECT channel_id FROM flowc_lease").fetchall()}
        grants: dict[str, dict[int, int]] = {}
        takeovers = conn.execute(
            "SELECT channel_id, token, after_seq, holder, previous, previous_state "
            "FROM flowc_lease_log ORDER BY channel_id, token"
        ).fetchall()
        for cid, token, after, *_ in takeovers:
            grants.setdefault(cid, {})[int(token)] = int(after)
    if faulted is not None:
        kinds = {(row[1], row[0]): row[3] for row in rows}
        firsts = {row[1]: row[0] for row in reversed(rows)}
        for cid, token, after, holder, previous, state in takeovers:
            pid = _pid(previous)
            if state == "free":
                # given back: mid-way unless the run was only opened (submitted), or its
                # last record then was its stall (parked) or its close
                kind = kinds.get((cid, after))
                explained = kind in (None, STALLED, CLOSED) or after == firsts.get(cid)
                if not explained and pid not in faulted:
                    problems.append(
                        f"run {cid}: token {token} was taken after {previous} gave the run back "
                        f"mid-way (its last record then {kind}), and no fault touched that "
                        "process"
                    )
                continue
            if previous == holder:
                continue
            if state == "live" and pid not in killed:
                problems.append(
                    f"run {cid}: token {token} was taken from {previous} while its lease was "
                    "live, and that process was not killed"
                )
            if state == "expired" and pid not in faulted:
                problems.append(
                    f"run {cid}: token {token} was taken from {previous} whose lease expired, "
                    "and no fault touched that process"
                )
    runs: dict[str, list[tuple[Any, ...]]] = {}
    seen: set[str] = set()
    for row in rows:
        if row[2] in seen:
            problems.append(f"envelope {row[2]} is written twice")
        seen.add(row[2])
        runs.setdefault(row[1], []).append(row)
    for run, rs in runs.items():
        problems += [f"run {run}: {p}" for p in _check_run(rs, expected(run), run in leased)]
        problems += [f"run {run}: {p}" for p in _check_fencing(rs, grants.get(run, {}))]
    return problems


def _pid(holder: str) -> int | None:
    """The process id in a holder's name (``host:pid:...``)."""
    parts = holder.split(":")
    return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else None


def _check_fencing(rows: list[tuple[Any, ...]], grants: dict[int, int]) -> list[str]:
    """What the writers' tokens break: ``grants`` maps each token taken on the run to the
    ``seq`` of the run's last row when it was taken."""
    out: list[str] = []
    last = 0
    for row in rows:
        seq, token = row[0], row[6]
        if token is None:
            continue  # an unfenced append (the run's submission)
        if token not in grants:
            out.append(f"row {seq} is written under token {token}, which nobody took")
        if token < last:
            out.append(f"row {seq} is written under token {token} after token {last}")
        last = max(last, token)
        newer = [t for t, after in grants.items() if t > token and after < seq]
        if newer:
            out.append(
                f"row {seq} is written under token {token} after token {min(newer)} was "
                "taken: a holder that lost its lease wrote on"
            )
    return out


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
