"""The throw-away PostgreSQL cluster the store's tests run against (tests/pgcluster.py)."""

from __future__ import annotations

import glob
import os
import pwd
from pathlib import Path

import psycopg
import pytest

from tests import pgcluster
from tests.pgcluster import PgCluster, PgClusterError


def test_the_cluster_serves_a_fresh_database_per_test(pg_cluster: PgCluster, pg_dsn: str) -> None:
    assert pg_dsn.startswith("postgresql://") and pg_dsn != pg_cluster.dsn()
    with psycopg.connect(pg_dsn) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone()
        assert tables == (0,)
        conn.execute("CREATE TABLE mine (x int)")
    # the unix socket in the cluster's own folder reaches the same server
    with psycopg.connect(pg_cluster.socket_dsn()) as conn:
        directory = conn.execute("SHOW unix_socket_directories").fetchone()
        assert directory == (str(pg_cluster.socket_dir),)
        data = conn.execute("SHOW data_directory").fetchone()
        assert data == (str(pg_cluster.data),)
    assert str(pg_cluster.root).startswith(("/tmp/", os.environ.get("TMPDIR") or "/tmp/"))


def test_the_server_runs_unprivileged(pg_cluster: PgCluster) -> None:
    pid = int((pg_cluster.data / "postmaster.pid").read_text().split()[0])
    uid = os.stat(f"/proc/{pid}").st_uid
    assert uid != 0
    if os.geteuid() == 0:
        assert pwd.getpwuid(uid).pw_name == pgcluster.TEST_USER
        # the folder lives where that user can reach it (not under root's 0700 folders)
        for parent in [pg_cluster.root, *pg_cluster.root.parents]:
            assert os.stat(parent).st_mode & 0o001, parent
    else:
        assert uid == os.geteuid()


def test_a_private_cluster_stops_restarts_and_is_deleted() -> None:
    with PgCluster() as cluster:
        dsn = cluster.create_database("kept")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (x int)")
            conn.execute("INSERT INTO t VALUES (1)")
        cluster.stop()
        assert not cluster.running()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(dsn, connect_timeout=5)
        cluster.start()
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]
        root = cluster.root
    assert not root.exists()


def test_missing_server_programs_fail_with_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glob, "glob", lambda pattern: [])
    with pytest.raises(PgClusterError, match=r"scripts/deps/postgresql\.sh"):
        pgcluster.find_server_bin()


def test_the_deps_script_and_makefile_install_the_server() -> None:
    root = Path(__file__).resolve().parents[2]
    assert "scripts/deps/postgresql.sh" in (root / "Makefile").read_text()
    script = (root / "scripts/deps/postgresql.sh").read_text()
    assert 'apt_install "' in script and " postgresql" in script
