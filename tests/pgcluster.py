"""A throw-away PostgreSQL cluster for the tests: Debian's server programs, a temporary folder.

:class:`PgCluster` runs ``initdb`` and ``pg_ctl`` from ``/usr/lib/postgresql/*/bin`` (the
newest version there) on a data folder under a temporary folder, listening on 127.0.0.1 on
a free port and on a unix socket in that folder. As root it runs them as the unprivileged
system user ``flowc-test`` (created with ``useradd`` when missing), since PostgreSQL refuses
to run as root; the temporary folder is then made under ``/tmp`` (other users cannot enter
``/root`` nor pytest's own ``/tmp/pytest-of-root``) and given to that user.

Fixtures (registered for every test directory by ``tests/conftest.py``):

- ``pg_cluster`` (session): one cluster, started on first use and stopped (folder deleted)
  at the end of the session. Its ``create_database()`` gives a fresh database's URL.
- ``pg_dsn`` (function): the URL of a fresh, empty database of ``pg_cluster`` for one test,
  e.g. ``postgresql://flowc@127.0.0.1:PORT/t_3``.
- ``make_store`` (function): ``make_store(kind)`` opens a WAL store of ``kind`` (one of
  :data:`STORES`: ``memory``, ``sqlite``, ``postgres``); every call of one test opens the
  same WAL again (one SQLite file, one database), a memory store excepted. Its
  ``make_store.db(kind)`` is what ``--db`` takes for it. Parametrize a test over
  :data:`STORES` (or :data:`DURABLE`) to run it against each store.

A test that must stop and restart the server (faults) makes a private cluster instead::

    with PgCluster() as cluster:
        dsn = cluster.create_database()
        cluster.stop(); cluster.start()

Nothing is skipped: when the server programs are missing the fixture fails, saying how to
install them (``bash scripts/deps/postgresql.sh``, run by ``make setup``/``make test``).
The cluster runs with ``fsync=off`` unless made with ``fsync=True`` (a throw-away cluster
need not survive a power cut; benchmarks that compare durable commits turn it on).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from flowc.runtime.wal import WalStore

__all__ = [
    "DURABLE",
    "STORES",
    "PgCluster",
    "PgClusterError",
    "StoreMaker",
    "find_server_bin",
    "make_store",
    "pg_cluster",
    "pg_dsn",
]

#: every WAL store, as ``make_store`` names them
STORES = ("memory", "sqlite", "postgres")
#: the stores that outlive their process
DURABLE = ("sqlite", "postgres")

#: the unprivileged user the server runs as when the tests run as root
TEST_USER = "flowc-test"
#: the cluster's superuser (trust authentication: no password)
SUPERUSER = "flowc"


class PgClusterError(RuntimeError):
    """The cluster could not be made, started or stopped (the message says why)."""


def find_server_bin() -> Path:
    """The newest ``/usr/lib/postgresql/VERSION/bin`` holding ``initdb`` and ``pg_ctl``."""
    found = []
    for path in glob.glob("/usr/lib/postgresql/*/bin"):
        bin_dir = Path(path)
        version = bin_dir.parent.name
        if (bin_dir / "initdb").is_file() and (bin_dir / "pg_ctl").is_file() and version.isdigit():
            found.append((int(version), bin_dir))
    if not found:
        raise PgClusterError(
            "PostgreSQL's server programs (initdb, pg_ctl under /usr/lib/postgresql/*/bin) "
            "are missing: install them with `bash scripts/deps/postgresql.sh` "
            "(apt: postgresql; `make setup` runs it)"
        )
    return max(found)[1]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _test_user() -> pwd.struct_passwd:
    """The unprivileged user (made when missing: we are root here). Made under a file lock:
    two test jobs side by side may both find it missing, and ``useradd`` refuses to run while
    another holds ``/etc/passwd``."""
    try:
        return pwd.getpwnam(TEST_USER)
    except KeyError:
        pass
    with open(Path(tempfile.gettempdir()) / f"{TEST_USER}-useradd.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _make_test_user()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _make_test_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(TEST_USER)
    except KeyError:
        pass
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    done = subprocess.run(
        [
            useradd,
            "--system",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            "--user-group",
            TEST_USER,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return pwd.getpwnam(TEST_USER)
    except KeyError:
        raise PgClusterError(
            f"the tests run as root, and PostgreSQL will not: cannot create the user "
            f"{TEST_USER} to run it ({done.stderr.strip() or 'useradd failed'})"
        ) from None


class PgCluster:
    """One throw-away cluster; a context manager (``start()`` on enter, ``destroy()`` on exit)."""

    def __init__(self, *, fsync: bool = False, settings: dict[str, str] | None = None) -> None:
        self.bin = find_server_bin()
        self.fsync = fsync
        #: more server settings (``-c NAME=VALUE``), e.g. for a benchmark's statistics
        self.settings = dict(settings or {})
        self.user: pwd.struct_passwd | None = _test_user() if os.geteuid() == 0 else None
        # as root the folder must be reachable by the server's user: under /tmp (sticky,
        # world-searchable), not under a 0700 folder of root's
        base = "/tmp" if self.user is not None else None
        self.root = Path(tempfile.mkdtemp(prefix="flowc-pg-", dir=base))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self.log = self.root / "server.log"
        self.port = 0
        self._names = itertools.count(1)
        self._initdb()

    # ── running the server's programs ───────────────────────────────────────────

    def _as_user(self) -> dict[str, Any]:
        if self.user is None:
            return {}
        uid, gid = self.user.pw_uid, self.user.pw_gid
        return {"user": uid, "group": gid, "extra_groups": []}

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "LC_ALL": "C.UTF-8",
            "LANG": "C.UTF-8",
            "HOME": str(self.root),
        }
        try:
            done = subprocess.run(
                list(args),
                capture_output=True,
                text=True,
                env=env,
                cwd=self.root,
                timeout=timeout,
                check=False,
                **self._as_user(),
            )
        except subprocess.TimeoutExpired:
            raise PgClusterError(
                f"{Path(args[0]).name} did not finish in {timeout:.0f} s; "
                f"server log: {self._log_tail()}"
            ) from None
        if done.returncode != 0:
            raise PgClusterError(
                f"{Path(args[0]).name} failed (exit {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()}; server log: {self._log_tail()}"
            )
        return done

    def _log_tail(self) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").splitlines()[-8:]) or "empty"
        except OSError:
            return "none"

    def _initdb(self) -> None:
        self.socket_dir.mkdir()
        if self.user is not None:
            os.chmod(self.root, 0o755)
            for path in (self.root, self.socket_dir):
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
        self._run(
            str(self.bin / "initdb"),
            "--pgdata",
            str(self.data),
            "--username",
            SUPERUSER,
            "--auth",
            "trust",
            "--encoding",
            "UTF8",
            "--locale",
            "C.UTF-8",
            "--no-sync",
        )

    # ── the cluster's life ──────────────────────────────────────────────────────

    def start(self) -> None:
        """Start the server (on a new free port the first time, the same one after)."""
        options = [
            f"-c listen_addresses=127.0.0.1 -k {self.socket_dir}",
            f"-c fsync={'on' if self.fsync else 'off'}",
            "-c max_connections=200 -c shared_buffers=32MB",
            *(f"-c {name}={value}" for name, value in self.settings.items()),
        ]
        for attempt in range(5):
            if self.port == 0 or attempt:
                self.port = _free_port()  # another process may take it before we do: retry
            try:
                self._run(
                    str(self.bin / "pg_ctl"),
                    "start",
                    "--wait",
                    "--timeout",
                    "60",
                    "-D",
                    str(self.data),
                    "-l",
                    str(self.log),
                    "-o",
                    " ".join([*options, f"-p {self.port}"]),
                )
                return
            except PgClusterError as err:
                if "could not bind" not in self._log_tail() or attempt == 4:
                    raise err from None

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: roll back open transactions, close the sessions;
        ``immediate``: as a crash would)."""
        self._run(str(self.bin / "pg_ctl"), "stop", "--wait", "-D", str(self.data), "-m", mode)

    def processes(self) -> list[int]:
        """The server's processes: the postmaster (first) and its children (Linux /proc)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        out = [postmaster]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:  # gone meanwhile
                continue
            if int(fields[1]) == postmaster:
                out.append(int(stat.parent.name))
        return out

    def signal(self, sig: int) -> None:
        """Send ``sig`` to every process of the server (SIGKILL: a crash of the whole
        server, as the out-of-memory killer or a power cut would leave it; SIGSTOP and
        SIGCONT: a server frozen, then thawed)."""
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def destroy(self) -> None:
        """Stop the server if it runs and delete its folder."""
        if self.running():
            with contextlib.suppress(PgClusterError):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PgCluster:
        try:
            self.start()
        except BaseException:
            self.destroy()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    # ── databases ───────────────────────────────────────────────────────────────

    def dsn(self, dbname: str = "postgres") -> str:
        """The URL of a database of this cluster, over TCP."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def socket_dsn(self, dbname: str = "postgres") -> str:
        """The URL of a database of this cluster, over its unix socket."""
        return f"postgresql://{SUPERUSER}@/{dbname}?host={self.socket_dir}&port={self.port}"

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database (named ``t_N`` unless ``name`` is given); its URL."""
        import psycopg

        name = name or f"t_{next(self._names)}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """The session's throw-away cluster (started on first use, stopped at the end)."""
    try:
        cluster = PgCluster()
        cluster.start()
    except PgClusterError as err:
        pytest.fail(f"cannot start the test PostgreSQL cluster: {err}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def pg_dsn(pg_cluster: PgCluster) -> str:
    """The URL of a fresh, empty database for this test."""
    return pg_cluster.create_database()


class StoreMaker:
    """``make_store(kind)``: a WAL store of ``kind``, the same WAL at every call of a test."""

    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self._request = request
        self._tmp_path = tmp_path
        self._dsn: str | None = None

    def db(self, kind: str) -> str:
        """What ``--db`` takes for the test's WAL of ``kind``."""
        if kind == "sqlite":
            return str(self._tmp_path / "wal.db")
        if kind == "postgres":
            if self._dsn is None:
                self._dsn = str(self._request.getfixturevalue("pg_dsn"))
            return self._dsn
        if kind == "memory":
            return ":memory:"
        raise ValueError(f"no store {kind!r} (one of {', '.join(STORES)})")

    def __call__(self, kind: str, **options: Any) -> WalStore:
        from flowc.runtime.wal import MemoryStore, SqliteStore

        if kind == "memory":
            return MemoryStore()
        if kind == "sqlite":
            return SqliteStore(self.db(kind), **options)
        from flowc.runtime.pgstore import PgStore

        return PgStore(self.db(kind), **options)


@pytest.fixture
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreMaker:
    """Opens the test's WAL store of a kind (see :class:`StoreMaker`)."""
    return StoreMaker(request, tmp_path)
