"""Which of a store's errors say the database is unavailable for now (a run stopped by
one is given back to be tried again) and which say it refused what was asked (a run
stopped by one stalls, recorded, so that no worker runs the same turn over and over):
``flowc.runtime.wal.unavailable``, on errors the real SQLite and psycopg raise."""

from __future__ import annotations

import errno
import os
import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from flowc.runtime.wal import StoreUnavailable, WalError, unavailable


def _raised(db: Path, *statements: str, timeout: float = 0.0) -> sqlite3.Error:
    conn = sqlite3.connect(db, timeout=timeout, isolation_level=None)
    try:
        for sql in statements:
            conn.execute(sql)
    except sqlite3.Error as err:
        return err
    finally:
        conn.close()
    raise AssertionError("nothing was raised")


def test_sqlite_busy_is_unavailable_a_missing_table_or_a_constraint_is_not(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")
    holder.execute("INSERT INTO t VALUES (1)")
    holder.execute("BEGIN EXCLUSIVE")  # another process writing: the database is busy
    busy = _raised(db, "INSERT INTO t VALUES (2)")
    holder.execute("COMMIT")
    holder.close()
    assert "locked" in str(busy) and unavailable(busy)
    missing = _raised(db, "SELECT * FROM nowhere")
    assert isinstance(missing, sqlite3.OperationalError) and not unavailable(missing)
    duplicate = _raised(db, "INSERT INTO t VALUES (1)")
    assert not unavailable(duplicate)


@pytest.mark.parametrize(
    ("err", "expected"),
    [
        (psycopg.OperationalError("server closed the connection unexpectedly"), True),
        (psycopg.errors.AdminShutdown("terminating connection"), True),  # 57P01
        (psycopg.errors.CannotConnectNow("the database system is starting up"), True),
        (psycopg.errors.DeadlockDetected("deadlock detected"), True),  # 40P01
        (psycopg.errors.TooManyConnections("too many clients"), True),  # 53300
        (psycopg.errors.ProgramLimitExceeded("index row size exceeds"), False),  # 54000
        (psycopg.errors.ConfigurationLimitExceeded("too many"), False),  # 53400
        (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), False),
        (psycopg.errors.DatabaseDropped("the database was dropped"), False),  # 57P04
        (psycopg.errors.UniqueViolation("duplicate key"), False),
        (psycopg.errors.UndefinedTable("relation does not exist"), False),
        (OSError("an error without a number"), True),
        (BrokenPipeError(errno.EPIPE, "broken pipe"), True),
        (OSError(errno.ENOSPC, "no space left on device"), True),  # space may be freed
        (OSError(errno.EIO, "input/output error"), True),
        (OSError(errno.EMFILE, "too many open files"), True),
        (OSError(errno.EROFS, "read-only file system"), False),  # would come again
        (PermissionError(errno.EACCES, "permission denied"), False),
        (StoreUnavailable("the database went away"), True),
        (WalError("duplicate envelope id"), False),
        (ValueError("a bug"), False),
    ],
    ids=lambda x: type(x).__name__ if isinstance(x, BaseException) else str(x),
)
def test_which_errors_say_the_database_is_unavailable(err: BaseException, expected: bool) -> None:
    assert unavailable(err) is expected


def _os_error(call: Callable[[], object]) -> OSError:
    try:
        call()
    except OSError as err:
        return err
    raise AssertionError("nothing was raised")


def test_os_errors_the_system_really_raises(tmp_path: Path) -> None:
    """A path that is not there or not a file refuses again (the run stalls, recorded,
    instead of being given back and retried for ever); a refused connection is worth
    another try."""
    missing = _os_error(lambda: os.open(tmp_path / "nowhere" / "runs.sqlite", os.O_RDONLY))
    assert missing.errno == errno.ENOENT and not unavailable(missing)
    folder = _os_error(lambda: os.open(tmp_path, os.O_WRONLY))
    assert folder.errno == errno.EISDIR and not unavailable(folder)
    (tmp_path / "file").write_text("")
    below = _os_error(lambda: os.open(tmp_path / "file" / "runs.sqlite", os.O_RDONLY))
    assert below.errno == errno.ENOTDIR and not unavailable(below)
    with socket.socket() as s:  # a port nothing listens on (bound, not listening)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        refused = _os_error(lambda: socket.create_connection(("127.0.0.1", port), timeout=5))
    assert refused.errno == errno.ECONNREFUSED and unavailable(refused)
