"""The independent history checker (tests/pg/history.py) on runs that three workers
drove, one of them killed mid-way; and on damaged copies of such a history, which it
must reject, one damage at a time."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.pg.history import Expected, check_history
from tests.runtime.worker_harness import (
    closed_count,
    kill_inside_a_run,
    kill_left,
    open_db,
    start_worker,
    stop_worker,
    submit,
    wait_until,
    write_inputs,
)

TURNS = 60  # long enough that the worker is caught holding a run under load (12 raced to the end)


def _expected(run_id: str) -> Expected:
    """The 3-speaker loop's script, from the script alone: t0 ... t11, closed by its
    ``max_turns``."""
    return [f"t{i}" for i in range(TURNS)], "max_turns"


@pytest.fixture(scope="module")
def killed_history(tmp_path_factory: pytest.TempPathFactory, pg_cluster: object) -> tuple[str, int]:
    """A database where three workers ran 24 runs, one worker killed inside a run. On a
    busy machine the worker to kill may start so late that the others take every run
    before it claims one; that history has no worker killed inside a run, so it is made
    again, in a new database (at most three times)."""
    for _ in range(3):
        folder = tmp_path_factory.mktemp("history")
        db = pg_cluster.create_database()  # type: ignore[attr-defined]
        pid = _history(folder, db)
        if pid is not None:
            return db, pid
    raise AssertionError("in three histories, the worker never held a run it had written to")


def _history(folder: Path, db: str) -> int | None:
    """Three workers run 24 runs in ``db``, the first killed inside a run: its pid, or None
    when it never held a run it had written to."""
    (_, _), (flow, script) = write_inputs(folder, TURNS)
    ids = submit(db, flow, script, 24)
    logs = [folder / f"worker{i}.log" for i in range(3)]
    procs = [start_worker(db, log, "--concurrency", "4", lease_seconds=2.0) for log in logs]
    store = open_db(db)
    try:
        try:
            held = kill_inside_a_run(procs[0], logs[0], store)
        except AssertionError:
            return None
        assert held
        wait_until(lambda: closed_count(store, ids) == len(ids), 120, "every run", procs[1:])
        for proc in procs[1:]:
            stop_worker(proc)
    finally:
        kill_left(procs)
        store.close()
    return procs[0].pid


@pytest.fixture(scope="module")
def history(killed_history: tuple[str, int]) -> str:
    return killed_history[0]


def test_the_workers_history_has_no_anomaly(killed_history: tuple[str, int]) -> None:
    db, pid = killed_history
    # the killed worker's runs were taken while their leases were live (a dead holder on
    # this host): the only takeovers of the history, all explained by the kill
    assert check_history(db, _expected, faulted={pid}, killed={pid}) == []


def _damaged(history: str, pg_cluster: object, damage: str) -> str:
    """A copy of ``history`` with ``damage`` (SQL) done to it."""
    copy = pg_cluster.create_database()  # type: ignore[attr-defined]
    with psycopg.connect(history) as src, psycopg.connect(copy) as dst:
        dst.execute(
            "CREATE TABLE flowc_wal (seq BIGINT PRIMARY KEY, channel_id TEXT, "
            "envelope_id TEXT, event_type TEXT, envelope TEXT, follows TEXT, token BIGINT)"
        )
        dst.execute("CREATE TABLE flowc_lease (channel_id TEXT PRIMARY KEY)")
        dst.execute(
            "CREATE TABLE flowc_lease_log (channel_id TEXT, token BIGINT, after_seq BIGINT, "
            "holder TEXT, previous TEXT, previous_state TEXT)"
        )
        with dst.cursor() as cur:
            cur.executemany(
                "INSERT INTO flowc_wal VALUES (%s, %s, %s, %s, %s, %s, %s)",
                src.execute(
                    "SELECT seq, channel_id, envelope_id, event_type, envelope, follows, token "
                    "FROM flowc_wal"
                ).fetchall(),
            )
            cur.executemany(
                "INSERT INTO flowc_lease_log VALUES (%s, %s, %s, %s, %s, %s)",
                src.execute(
                    "SELECT channel_id, token, after_seq, holder, previous, previous_state "
                    "FROM flowc_lease_log"
                ).fetchall(),
            )
            cur.executemany(
                "INSERT INTO flowc_lease VALUES (%s)",
                src.execute("SELECT channel_id FROM flowc_lease").fetchall(),
            )
        dst.execute(damage)
    return copy


#: one run's 5th row, and its last
_FIFTH = "(SELECT seq FROM flowc_wal WHERE channel_id = (SELECT min(channel_id) FROM flowc_wal) ORDER BY seq OFFSET 4 LIMIT 1)"
_LAST = (
    "(SELECT max(seq) FROM flowc_wal WHERE channel_id = (SELECT min(channel_id) FROM flowc_wal))"
)


#: the last row of a run whose lease was taken over (a second token taken mid-run)
_TAKEN_LAST = (
    "(SELECT max(seq) FROM flowc_wal WHERE channel_id = (SELECT min(channel_id) FROM "
    "flowc_lease_log WHERE token = 2 AND after_seq > 0))"
)


@pytest.mark.parametrize(
    ("damage", "found"),
    [
        (f"DELETE FROM flowc_wal WHERE seq = {_FIFTH}", "follows"),  # a turn lost
        (  # a turn written twice (a retry not recognised)
            f"INSERT INTO flowc_wal SELECT seq + 100000, channel_id, envelope_id || 'x', "
            f"event_type, envelope, envelope_id FROM flowc_wal WHERE seq = {_FIFTH}",
            "its turns are",
        ),
        (  # a turn after the close (a writer that lost the run)
            f"INSERT INTO flowc_wal SELECT seq + 100000, channel_id, 'late', "
            f"'ag2.msg.text', envelope, envelope_id FROM flowc_wal WHERE seq = {_LAST}",
            "after the close",
        ),
        (  # two writers: a row that follows another than the one before it
            f"UPDATE flowc_wal SET follows = 'elsewhere' WHERE seq = {_FIFTH}",
            "follows elsewhere",
        ),
        (  # a holder that lost its lease wrote on: a taken-over run's last row under
            # the token before the takeover
            f"UPDATE flowc_wal SET token = token - 1 WHERE seq = {_TAKEN_LAST}",
            "a holder that lost its lease wrote on",
        ),
        (  # a row under a token nobody took
            f"UPDATE flowc_wal SET token = token + 7 WHERE seq = {_FIFTH}",
            "which nobody took",
        ),
        (  # the close lost: the run is left open with nobody's lease row
            f"DELETE FROM flowc_lease WHERE channel_id = (SELECT min(channel_id) FROM "
            f"flowc_wal); DELETE FROM flowc_wal WHERE seq = {_LAST}",
            "has no lease row",
        ),
    ],
)
def test_the_checker_finds_each_damage(
    history: str, pg_cluster: object, damage: str, found: str
) -> None:
    problems = check_history(_damaged(history, pg_cluster, damage), _expected)
    assert any(found in p for p in problems), problems


def test_takeovers_the_schedule_does_not_explain_are_found(
    killed_history: tuple[str, int],
) -> None:
    db, pid = killed_history
    problems = check_history(db, _expected, faulted=set(), killed=set())
    # the killed worker's runs were taken from it while its lease was live (its death
    # seen) or, on a busy machine, once its lease had expired: each is found, as each
    # state says it
    said = {
        "live": "while its lease was live, and that process was not killed",
        "expired": "whose lease expired, and no fault touched that process",
    }
    with psycopg.connect(db) as conn:
        taken = conn.execute(
            "SELECT channel_id, token, previous_state FROM flowc_lease_log"
            " WHERE previous LIKE %s AND holder <> previous",
            (f"%:{pid}:%",),
        ).fetchall()
    assert taken, "the killed worker's runs were never taken over"
    for cid, token, state in taken:
        if state in said:
            assert any(
                f"run {cid}: token {token} was taken" in p and said[state] in p for p in problems
            ), (cid, token, state, problems)
    assert any(said["live"] in p or said["expired"] in p for p in problems), problems
    # a killed process counts as faulted too: told it was killed but not faulted, the
    # checker still finds nothing wrong with the live takeovers
    assert check_history(db, _expected, faulted={pid}, killed={pid}) == []


def test_a_run_given_back_mid_way_is_found_unless_a_fault_explains_it(
    killed_history: tuple[str, int], pg_cluster: object
) -> None:
    """The killed worker's runs, taken over, as if it had given them back mid-way (a
    worker that gives a run back without being cut off, e.g. a write of its own not
    recognised when tried again)."""
    db, pid = killed_history
    given_back = _damaged(
        db, pg_cluster, "UPDATE flowc_lease_log SET previous_state = 'free' WHERE token > 2"
    )
    problems = check_history(given_back, _expected, faulted=set())
    assert any("gave the run back mid-way" in p for p in problems), problems
    assert check_history(given_back, _expected, faulted={pid}) == []
    # a run's first claim (the submitter gave it back after its opening) is no finding
    assert check_history(db, _expected, faulted={pid}, killed={pid}) == []
