"""The fault proxy's commit cut with a marker (``FaultProxy.cut_commits(n, after=...)``):
only the commit of a transaction that sent the marker loses its answer, whatever the
same connection sent before (a statement of its own, a transaction rolled back)."""

from __future__ import annotations

import psycopg
import pytest

from tests.pg.faultproxy import FaultProxy

MARKER = b'"event_data"'
ROW = '{"event_data": {}}'


def _proxy_and_table(pg_cluster: object) -> tuple[FaultProxy, str]:
    db = pg_cluster.create_database()  # type: ignore[attr-defined]
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (x text)")
    return FaultProxy(int(db.split("127.0.0.1:")[1].split("/")[0])), db


def _commit(conn: psycopg.Connection[object], marked: bool) -> bool:
    """A transaction (with the marker among its parameters, or not); whether its
    commit's answer was lost."""
    try:
        with conn.transaction():
            conn.execute("INSERT INTO t VALUES (%s)", (ROW if marked else "plain",))
    except psycopg.OperationalError:
        return True
    return False


@pytest.mark.parametrize("before", ["autocommit", "rolled back", "nothing"])
def test_only_a_transaction_that_sent_the_marker_has_its_commit_cut(
    pg_cluster: object, before: str
) -> None:
    proxy, db = _proxy_and_table(pg_cluster)
    try:
        conn = psycopg.connect(proxy.url(db), autocommit=True)
        proxy.cut_commits(1, after=MARKER)
        if before == "autocommit":  # the marker in a statement of its own
            conn.execute("INSERT INTO t VALUES (%s)", (ROW,))
        elif before == "rolled back":
            with pytest.raises(ZeroDivisionError), conn.transaction():
                conn.execute("INSERT INTO t VALUES (%s)", (ROW,))
                raise ZeroDivisionError
        assert not _commit(conn, marked=False)  # a claim's commit: let through
        assert proxy.commits_cut == 0
        assert _commit(conn, marked=True)  # an append's commit: its answer lost
        assert proxy.commits_cut == 1
        conn.close()
    finally:
        proxy.close()


def test_cuts_with_two_markers_at_once_are_refused(pg_cluster: object) -> None:
    proxy, _ = _proxy_and_table(pg_cluster)
    try:
        proxy.cut_commits(1, after=MARKER)
        with pytest.raises(ValueError, match="another marker"):
            proxy.cut_commits(1)
    finally:
        proxy.close()
