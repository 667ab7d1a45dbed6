"""Which WAL store ``--db`` names: a SQLite file, a PostgreSQL URL, or ``:memory:``.

>>> db_name("postgresql://alice:s3cret@db.example/runs"), db_name(".flowc/runs.db")
('postgresql://alice@db.example/runs', '.flowc/runs.db')
"""

from __future__ import annotations

from flowc.runtime.wal import MemoryStore, SqliteStore, WalStore

__all__ = ["LAST", "db_name", "is_url", "open_store"]

#: what names the newest run of a database wherever a run is named (``flowc log last``);
#: `fork --run-id` refuses it, and a run that has it as its id anyway (one opened from
#: Python with it) is reached by the run list, not by that name
LAST = "last"


def is_url(path: str | None) -> bool:
    """Whether ``--db`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return path is not None and path.lower().startswith(("postgresql://", "postgres://"))


def db_name(path: str) -> str:
    """``--db`` as messages name it: a PostgreSQL URL without its password, a path as it is."""
    if is_url(path):
        from flowc.runtime.pgstore import redact

        return redact(path)
    return path


def open_store(path: str | None, *, readonly: bool = False) -> WalStore:
    """``None`` or ``":memory:"`` gives a :class:`~flowc.runtime.wal.MemoryStore`, a
    ``postgresql://`` (or ``postgres://``) URL a :class:`~flowc.runtime.pgstore.PgStore`,
    anything else a :class:`~flowc.runtime.wal.SqliteStore` file. ``readonly`` opens a
    stored WAL for reading only (``flowc log``, ``flowc replay``). Raises
    :class:`~flowc.runtime.wal.WalError` when it cannot be opened.

    >>> isinstance(open_store(":memory:"), MemoryStore)
    True
    """
    if path is None or path == ":memory:":
        return MemoryStore()
    if is_url(path):
        from flowc.runtime.pgstore import PgStore  # psycopg only for a PostgreSQL URL

        return PgStore(path, readonly=readonly)
    return SqliteStore(path, readonly=readonly)
