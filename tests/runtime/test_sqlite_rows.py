"""The SQLite WAL's file layout: 1 KiB pages for a new file, rows without default-valued
fields, each run under its own range of ``seq``; a file of an earlier, unreleased layout
is refused (the layout is not stable before 1.0).

``data/runs-d32a676.db`` was written by flowc at commit d32a676 (an earlier layout: 4 KiB
pages, rows in full, one ``seq`` for the file): ``flowc run`` of :data:`FLOW` with
:data:`FULL` (closed after 9 turns), then with the first two turns of each speaker
(stalled after 6 turns, open)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.runtime.envelope import EV_TEXT, Envelope
from flowc.runtime.wal import (
    PAGE_SIZE,
    RUN_SPAN,
    LeaseError,
    SqliteStore,
    WalError,
    encode_row,
    holder_id,
)

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
OPTIONAL = (
    "task_id",
    "causation_id",
    "trace_id",
    "priority",
    "depth",
    "idempotency_key",
    "ttl_seconds",
)


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
    plain = Envelope(
        "c1",
        "a",
        None,
        EV_TEXT,
        {"text": "hi"},
        envelope_id="e1",
        created_at="2026-01-01T00:00:00Z",
    )
    every = Envelope(
        "c1",
        "b",
        ("a",),
        EV_TEXT,
        {"text": "x"},
        envelope_id="e2",
        task_id="t",
        causation_id="e1",
        trace_id="tr",
        priority="urgent",
        depth=2,
        idempotency_key="k",
        created_at="2026-01-01T00:00:01Z",
        ttl_seconds=5,
    )
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

    env = Envelope(
        "c1",
        "a",
        ("b",),
        EV_TEXT,
        {"text": "hi"},
        envelope_id="e1",
        created_at="2026-01-01T00:00:00Z",
    )
    theirs = Ag2Envelope.from_json(encode_row(env))
    assert theirs.to_dict() == env.to_dict()


def test_a_file_of_an_earlier_layout_is_refused(tmp_path: Path) -> None:
    """The layout is not stable before 1.0: a file an earlier development version made
    (one ``seq`` for the file, no ``run`` table) is refused, to write or to read, and left
    as it was."""
    db = tmp_path / "runs.db"
    shutil.copy(DATA / "runs-d32a676.db", db)
    before = _rows(db)
    for readonly in (False, True):
        with pytest.raises(WalError, match="made by an earlier development version of flowc"):
            SqliteStore(db, readonly=readonly)
    assert _rows(db) == before and _page_size(db) == 4096


def _frames(db: Path) -> int:
    wal = db.with_name(db.name + "-wal")
    return (wal.stat().st_size - 32) // (24 + PAGE_SIZE) if wal.exists() else 0


def _env(cid: str, eid: str, text: str = "turn") -> Envelope:
    return Envelope(
        cid,
        "a",
        None,
        EV_TEXT,
        {"text": text},
        envelope_id=eid,
        created_at="2026-01-01T00:00:00.000000Z",
    )


def test_a_new_file_keeps_each_run_under_its_own_range(tmp_path: Path) -> None:
    db = tmp_path / "wal.db"
    one, two = SqliteStore(db), SqliteStore(db)  # two writers of one file
    lease = one.acquire("c1", holder_id("hub-1"))
    one.append(_env("c1", "a1"), lease)
    two.append(_env("c2", "b1"))  # unfenced
    one.append(_env("c1", "a2"), lease, "a1")
    two.append(_env("c1", "a3"))  # a run the other connection began
    one.append(_env("c2", "b2"))
    for store in (one, two, SqliteStore(db, readonly=True)):
        assert store.channel_ids() == ["c1", "c2"]
        assert [e.envelope_id for e in store.read("c1")] == ["a1", "a2", "a3"]
        assert store.links("c2") == [("b1", None), ("b2", None)]
        assert list(store.read("c3")) == [] and store.links("c3") == []
    con = sqlite3.connect(db)
    seqs = dict(con.execute("SELECT envelope_id, seq FROM wal").fetchall())
    indexes = con.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'wal'"
    ).fetchall()
    con.close()
    assert [seqs[e] - RUN_SPAN for e in ("a1", "a2", "a3")] == [1, 2, 3]
    assert [seqs[e] - 2 * RUN_SPAN for e in ("b1", "b2")] == [1, 2]
    assert indexes == [(None,)]  # one index of the table: its UNIQUE envelope ids
    # an id is unique in the whole file, and a refused first envelope begins no run
    with pytest.raises(WalError, match="duplicate envelope id 'a1'"):
        one.append(_env("c3", "a1"))
    gone = one.acquire("c4", holder_id("hub-1"))
    one.release(gone)
    two.acquire("c4", holder_id("hub-2"))
    with pytest.raises(LeaseError):
        one.append(_env("c4", "d1"), gone)
    assert one.channel_ids() == ["c1", "c2"]


def test_two_writers_taking_turns_on_one_run_append_in_order(tmp_path: Path) -> None:
    # each append finds the run's next place in its own statement: a writer that appended
    # before another one did lands after it (nothing of the run is remembered between appends)
    db = tmp_path / "wal.db"
    one, two = SqliteStore(db), SqliteStore(db)
    order = []
    for i in range(12):
        writer = (one, one, two)[i % 3]
        writer.append(_env("c1", f"e{i}"), None, f"e{i - 1}" if i else None)
        order.append(f"e{i}")
    assert [e.envelope_id for e in one.read("c1")] == order
    assert [e.envelope_id for e in two.read("c1")] == order
    con = sqlite3.connect(db)
    places = [seq - RUN_SPAN for (seq,) in con.execute("SELECT seq FROM wal ORDER BY seq")]
    con.close()
    assert places == list(range(1, 13))
    with pytest.raises(WalError, match="duplicate envelope id 'e4'"):
        one.append(_env("c1", "e4"))
    two.append(_env("c1", "e12"))
    assert [e.envelope_id for e in one.read("c1")] == [*order, "e12"]


def test_an_append_writes_the_row_and_one_index_entry(tmp_path: Path) -> None:
    db = tmp_path / "wal.db"
    store = SqliteStore(db)
    lease = store.acquire("c1", holder_id("hub-1"))
    store.append(_env("c1", "e0"), lease)
    before, n = _frames(db), 600
    for i in range(1, n + 1):
        store.append(_env("c1", f"e{i}"), lease, f"e{i - 1}")
    # 1 KiB pages, ~200-byte rows: the table's page, the id index's page, and now and
    # then a new page (with its parent and the file's header page); with a third tree
    # (an index of runs) it was 4.6 frames per append
    assert (_frames(db) - before) / n < 3.4
    store.close()


def test_a_run_that_is_full_is_refused_cleanly(tmp_path: Path) -> None:
    db = tmp_path / "wal.db"
    store = SqliteStore(db)
    store.append(_env("c1", "e1"))
    con = sqlite3.connect(db)
    con.execute("UPDATE wal SET seq = ? WHERE envelope_id = 'e1'", (2 * RUN_SPAN - 1,))
    con.commit()
    con.close()
    with pytest.raises(
        WalError,
        match=r"run c1: cannot write the WAL \(the run holds "
        r"4294967295 envelopes, the most a run can\)",
    ):
        store.append(_env("c1", "e2"))
    assert [e.envelope_id for e in store.read("c1")] == ["e1"]


_TEXT = st.text(max_size=12)
_JSONS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    channel=_TEXT,
    sender=_TEXT,
    audience=st.none() | st.lists(_TEXT, max_size=3),
    kind=_TEXT,
    data=st.dictionaries(_TEXT, _JSONS, max_size=3) | st.builds(lambda k, v: {k: v}, _TEXT, _TEXT),
    optional=st.fixed_dictionaries(
        {},
        optional={
            "task_id": _TEXT,
            "causation_id": _TEXT,
            "trace_id": _TEXT,
            "priority": st.sampled_from(["background", "normal", "urgent"]),
            "depth": st.integers(0, 5),
            "idempotency_key": _TEXT,
            "ttl_seconds": st.integers(0, 10**6),
        },
    ),
    envelope_id=_TEXT,
    created_at=_TEXT,
)
def test_a_row_is_the_sorted_json_of_the_fields_not_at_their_default(
    channel: str,
    sender: str,
    audience: list[str] | None,
    kind: str,
    data: dict[str, object],
    optional: dict[str, object],
    envelope_id: str,
    created_at: str,
) -> None:
    env = Envelope(
        channel,
        sender,
        None if audience is None else tuple(audience),
        kind,
        data,
        envelope_id=envelope_id,
        created_at=created_at,
        **optional,
    )  # type: ignore[arg-type]
    full = json.loads(env.to_json())
    kept = {
        k: v
        for k, v in full.items()
        if k not in OPTIONAL or v != {"priority": "normal", "depth": 0}.get(k)
    }
    assert encode_row(env) == json.dumps(kept, sort_keys=True, ensure_ascii=False)
    assert Envelope.from_json(encode_row(env)) == env


@settings(max_examples=200, deadline=None)
@given(
    runs=st.lists(_TEXT | st.text(min_size=101, max_size=120), min_size=1, max_size=3),
    senders=st.lists(_TEXT, min_size=1, max_size=3),
    texts=st.lists(_TEXT, min_size=1, max_size=6),
)
def test_a_row_is_the_same_text_when_its_run_and_sender_repeat(
    runs: list[str], senders: list[str], texts: list[str]
) -> None:
    # a run's id, its senders and event types are quoted once and kept (short ones only)
    for i, text in enumerate(texts * 2):
        env = Envelope(
            runs[i % len(runs)],
            senders[i % len(senders)],
            None,
            EV_TEXT,
            {"text": text},
            envelope_id=f"e{i}",
            created_at=text,
        )
        kept = {k: v for k, v in json.loads(env.to_json()).items() if k not in OPTIONAL}
        assert encode_row(env) == json.dumps(kept, sort_keys=True, ensure_ascii=False)


def _explained(db: Path, statements: list[str]) -> list[list[str]]:
    """The VDBE operations of each of ``statements`` (SQL with its values in place)."""
    con = sqlite3.connect(db)
    try:
        return [[row[1] for row in con.execute(f"EXPLAIN {sql}")] for sql in statements]
    finally:
        con.close()


def test_an_append_is_one_statement_that_copies_no_table(tmp_path: Path) -> None:
    # an INSERT whose SELECT reads the table it writes has SQLite copy the rows it reads to
    # a temporary table (OpenEphemeral) first, on every append: a b-tree opened, cleared
    # and closed per turn
    db = tmp_path / "wal.db"
    store = SqliteStore(db)
    lease = store.acquire("c1", holder_id("hub-t"))
    store.append(_env("c1", "e1"), lease)
    store.append(_env("c2", "f1"))
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)
    store.append(_env("c1", "e2"), lease, "e1")  # fenced
    store.append(_env("c2", "f2"), None, "f1")  # unfenced
    store._db.set_trace_callback(None)
    assert len(seen) == 2 and all(sql.startswith("INSERT INTO wal") for sql in seen)
    programs = _explained(db, seen)
    assert all("Insert" in ops and "OpenEphemeral" not in ops for ops in programs)
    assert [e.envelope_id for e in store.read("c1")][-2:] == ["e1", "e2"]
    assert store.links("c2")[-2:] == [("f1", None), ("f2", "f1")]
    store.close()


def test_an_append_refused_on_a_full_run_says_why_in_the_order_it_did(tmp_path: Path) -> None:
    # the lease is checked before the run's room, the run's room before the id
    db = tmp_path / "wal.db"
    store = SqliteStore(db)
    lease = store.acquire("c1", holder_id("hub-t"))
    store.append(_env("c1", "e1"), lease)
    store.append(_env("c1", "e2"), lease, "e1")
    con = sqlite3.connect(db)
    con.execute("UPDATE wal SET seq = ? WHERE envelope_id = 'e2'", (2 * RUN_SPAN - 1,))
    con.commit()
    con.close()
    with pytest.raises(WalError, match=r"run c1: cannot write the WAL \(the run holds"):
        store.append(_env("c1", "e1"), lease)  # a duplicate id, too
    expired = store.renew(lease, -1)
    with pytest.raises(LeaseError, match="run c1: this hub's lease expired"):
        store.append(_env("c1", "e3"), expired)
    with pytest.raises(LeaseError, match="run c1: this hub's lease expired"):
        store.append(_env("c1", "e1"), expired)
    assert [e.envelope_id for e in store.read("c1")] == ["e1", "e2"]
    # the run not full: the id is refused, and an expired lease before it
    other = store.acquire("c2", holder_id("hub-t"))
    store.append(_env("c2", "f1"), other)
    with pytest.raises(WalError, match="duplicate envelope id 'e2'"):
        store.append(_env("c2", "e2"), other)
    with pytest.raises(LeaseError, match="lease expired"):
        store.append(_env("c2", "e2"), store.renew(other, -1))
    assert [e.envelope_id for e in store.read("c2")] == ["f1"]
    store.close()
