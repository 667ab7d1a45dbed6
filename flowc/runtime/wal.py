"""Write-ahead log stores: every accepted envelope is appended here before delivery.

One small interface (:class:`WalStore`) and three stores: :class:`MemoryStore` (tests,
benchmarks), :class:`SqliteStore` (one file, the default for ``flowc run``) and
:class:`~flowc.runtime.pgstore.PgStore` (a PostgreSQL database shared by several hub
processes, ``--db postgresql://...``); :func:`flowc.runtime.stores.open_store` picks
one from ``--db``.

One writer per run: a hub takes a :class:`Lease` on a run before it writes to it
(:meth:`WalStore.acquire`), renews it while it runs and releases it when done. A
lease has a holder, an expiry and a fencing token that grows by one each time the
run changes hands; an append made with a lease that is no longer the run's current
one is refused (:class:`LeaseError`), so a writer that lost its run (paused past its
lease, or replaced by a resume) cannot write to it. A lease whose holder is a dead
process on this host is free at once; any other lease is free when it expires. The
PostgreSQL store implements the same methods with the lease as a row locked and
checked in the append's own statement.

>>> store = MemoryStore()
>>> from flowc.runtime.envelope import Envelope, EV_TEXT
>>> lease = store.acquire("c1", "host:1:0:hub-a")
>>> store.append(Envelope("c1", "user", None, EV_TEXT, {"text": "hi"}, envelope_id="e1"), lease)
>>> [e.envelope_id for e in store.read("c1")], store.channel_ids()
(['e1'], ['c1'])
>>> store.acquire("c1", "host:1:0:hub-b")
Traceback (most recent call last):
...
flowc.runtime.wal.LeaseError: run c1 is being written by another hub (hub-a, pid 1 on host)
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import attrs

from flowc.diagnostics import counted
from flowc.runtime.adapters.base import DamagedRecord, damaged_text
from flowc.runtime.envelope import EV_CHANNEL_OPENED, STAMPED, Envelope
from flowc.runtime.stored import check_envelope, check_row

__all__ = [
    "LEASE_SECONDS",
    "PAGE_SIZE",
    "DamagedRow",
    "Lease",
    "LeaseBusy",
    "LeaseError",
    "MemoryStore",
    "PassThroughStore",
    "SqliteStore",
    "StoreUnavailable",
    "WalError",
    "WalStore",
    "decode_rows",
    "describe_holder",
    "encode_row",
    "holder_alive",
    "holder_id",
    "lease_seconds_from_env",
    "unavailable",
]

#: how long a lease lasts unless renewed (a hub renews it at least every half of that)
LEASE_SECONDS = 30.0


def lease_seconds_from_env() -> float:
    """``$FLOWC_LEASE_SECONDS`` if it is a positive number, else :data:`LEASE_SECONDS`."""
    try:
        value = float(os.environ.get("FLOWC_LEASE_SECONDS", ""))
    except ValueError:
        return LEASE_SECONDS
    return value if 0 < value < float("inf") else LEASE_SECONDS


class WalError(Exception):
    """The store refused an append (e.g. a duplicate envelope id) or cannot be opened."""


class DamagedRow(WalError):
    """A stored row that is not an envelope of its run, or holds a value not of the type
    flowc writes (:func:`decode_rows`): the run is damaged, not the store unreachable.
    Its message names the database ``db``; :attr:`in_run` is the same without it."""

    def __init__(self, db: str, in_run: str):
        super().__init__(f"{db}: {in_run}")
        self.in_run = in_run


class StoreUnavailable(WalError):
    """The store could not do it now, and trying again later may: the connection to the
    database was lost or cannot be made (the server restarted, the network failed), or
    the database was busy or failed to read or write its files. A run this stops is not
    a run that stalled (:meth:`flowc.runtime.hub.Hub.record_stall`): any worker takes it
    again once its lease is given back or expires."""


#: the operating system's errors that trying again would meet again: the path or the
#: file system refuses what is asked (a full disk, an I/O error, a lost connection, too
#: many open files, and an error without a number are worth another try)
_OS_REFUSED = frozenset(
    getattr(errno, name)
    for name in (
        "EROFS",
        "EACCES",
        "EPERM",
        "ENOENT",
        "ENOTDIR",
        "EISDIR",
        "ENAMETOOLONG",
        "ELOOP",
        "EINVAL",
        "EFBIG",
        "EXDEV",
    )
    if hasattr(errno, name)
)

#: SQLite's result codes that say the database's state, which may mend (busy, locked,
#: out of memory, its files unreadable, unwritable or full, a lock protocol race), not
#: what was asked of it (a missing table, a constraint, a bad value: the same again)
_SQLITE_UNAVAILABLE = frozenset(
    getattr(sqlite3, name)
    for name in (
        "SQLITE_BUSY",
        "SQLITE_LOCKED",
        "SQLITE_NOMEM",
        "SQLITE_IOERR",
        "SQLITE_FULL",
        "SQLITE_CANTOPEN",
        "SQLITE_PROTOCOL",
    )
)


#: PostgreSQL's SQLSTATEs that say the server's state, not the statement, by class (two
#: characters) or in full: 08 (connection), 40 (a transaction rolled back: serialisation,
#: deadlock), 53100/53200/53300 (disk full, out of memory, too many connections),
#: 57P01-57P03 (the server shutting down or starting up), 58 (system error: I/O). Not 54
#: (a program limit: too big, the same again), nor 53400 (a configuration limit), nor
#: 57014 (a statement cancelled: its timeout would cancel it again)
_PG_UNAVAILABLE = frozenset(
    {"08", "40", "58", "53100", "53200", "53300", "57P01", "57P02", "57P03"}
)


def unavailable(err: BaseException) -> bool:
    """Whether ``err`` (raised by a store or its database driver) says the database is
    unavailable for now, which trying again later may mend (:class:`StoreUnavailable`):
    an operating-system error but those that would come again (:data:`_OS_REFUSED`: a
    read-only file system, a missing or forbidden path, a name too long...); SQLite's
    busy, locked, out of memory, I/O, full, cannot open (its primary result code);
    psycopg's connection errors (an ``OperationalError``
    the client raised itself, with no SQLSTATE) and the SQLSTATE classes above. Not what
    the database refuses in what was asked (a missing table, a constraint, a bad value,
    a limit), which it would refuse again."""
    if isinstance(err, StoreUnavailable):
        return True
    if isinstance(err, OSError):
        return err.errno not in _OS_REFUSED
    if isinstance(err, sqlite3.Error):
        code = getattr(err, "sqlite_errorcode", None)
        return code is not None and code & 0xFF in _SQLITE_UNAVAILABLE
    psycopg = sys.modules.get("psycopg")  # loaded when a PostgreSQL store is in use
    if psycopg is None or not isinstance(err, psycopg.Error):
        return False
    sqlstate = getattr(err, "sqlstate", None)
    if sqlstate is None:
        return isinstance(err, psycopg.OperationalError)
    return str(sqlstate)[:2] in _PG_UNAVAILABLE or str(sqlstate) in _PG_UNAVAILABLE


class LeaseError(WalError):
    """Another holder has the run, or this holder's lease on it is gone."""

    def __init__(self, message: str, channel_id: str, holder: str | None) -> None:
        super().__init__(message)
        self.channel_id = channel_id
        self.holder = holder


class LeaseBusy(LeaseError):
    """Another process is in the middle of taking the run (it holds the lease row locked):
    the run is theirs to have or to lose, and is worth looking at again only later."""


@attrs.frozen
class Lease:
    """The right to write one run: who holds it, its fencing token, until when."""

    channel_id: str
    holder: str
    token: int
    expires_at: float  # seconds since the epoch


# ── holders ──────────────────────────────────────────────────────────────────


def _process_start(pid: int) -> str:
    """The start time of process ``pid`` in clock ticks since boot ("0" if unknown)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return "0"
    # the command name (field 2) may hold spaces and parentheses: split after the last ")"
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else "0"


def holder_id(tag: str) -> str:
    """``host:pid:start:tag``: this process (its start time guards against pid reuse)
    and ``tag``, which tells apart several hubs of one process."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_process_start(pid)}:{tag}"


def _parse_holder(holder: str) -> tuple[str, int, str, str] | None:
    tag_start = holder.rsplit(":", 3)
    if len(tag_start) != 4 or not tag_start[1].isdigit():
        return None
    return tag_start[0], int(tag_start[1]), tag_start[2], tag_start[3]


def holder_alive(holder: str) -> bool | None:
    """Whether the process holding a lease is alive: ``None`` when it runs on another
    host (or the id is not one of :func:`holder_id`'s), so only its expiry can tell."""
    parsed = _parse_holder(holder)
    if parsed is None or parsed[0] != socket.gethostname():
        return None
    _, pid, start, _ = parsed
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, under another user
    return start == "0" or _process_start(pid) in (start, "0")


def describe_holder(holder: str) -> str:
    """``hub-a, pid 1 on host`` (the id itself when it is not one of ours)."""
    parsed = _parse_holder(holder)
    if parsed is None:
        return holder
    host, pid, _, tag = parsed
    return f"{tag}, pid {pid} on {host}"


def _held_message(channel_id: str, holder: str, expires_at: float) -> str:
    return f"run {channel_id} is being written by another hub ({describe_holder(holder)})"


def _free(holder: str, expires_at: float, now: float) -> bool:
    """A lease is free when it expired or its holder is a dead process on this host."""
    return expires_at <= now or holder_alive(holder) is False


def _next_lease(
    channel_id: str, holder: str, current: Lease | None, now: float, seconds: float
) -> Lease:
    """The lease ``holder`` takes on ``channel_id`` at ``now`` for ``seconds``, after
    ``current`` (``None`` when the run never had one): its token one higher. A
    :class:`LeaseError` when another holder's lease is not free (:func:`_free`)."""
    if (
        current is not None
        and current.holder != holder
        and not _free(current.holder, current.expires_at, now)
    ):
        raise LeaseError(
            _held_message(channel_id, current.holder, current.expires_at),
            channel_id,
            current.holder,
        )
    return Lease(channel_id, holder, (current.token if current else 0) + 1, now + seconds)


# ── the interface ────────────────────────────────────────────────────────────


@runtime_checkable
class WalStore(Protocol):
    """Where a hub keeps its write-ahead log, per channel, in admission order."""

    def append(
        self, envelope: Envelope, lease: Lease | None = None, follows: str | None = None
    ) -> None:
        """Durably record one accepted envelope; raise :class:`WalError` on a duplicate id.

        With a ``lease``, the append is refused (:class:`LeaseError`, nothing written)
        unless it is the run's current lease and has not expired, checked atomically
        with the write. ``follows`` is the id of the channel's last envelope as the
        writer saw it (kept with the envelope, see :meth:`links`).
        """

    def read(self, channel_id: str) -> Iterator[Envelope]:
        """The channel's envelopes in the order they were appended."""

    def links(self, channel_id: str) -> list[tuple[str, str | None]]:
        """``(envelope id, follows)`` of the channel's envelopes, in order: in a WAL one
        writer wrote, each envelope follows the one before it."""

    def channel_ids(self) -> list[str]:
        """Every channel with at least one envelope, in order of first append."""

    def acquire(self, channel_id: str, holder: str, seconds: float = LEASE_SECONDS) -> Lease:
        """Take the run's lease for ``seconds`` (a new fencing token); :class:`LeaseError`
        naming the holder if another holder's lease is still live."""

    def renew(self, lease: Lease, seconds: float = LEASE_SECONDS) -> Lease:
        """Extend a lease still current (same token); :class:`LeaseError` if it is gone."""

    def release(self, lease: Lease) -> None:
        """Give the run up (nothing happens if the lease is no longer current)."""

    def lease_of(self, channel_id: str) -> Lease | None:
        """The run's live lease, if a holder has one."""

    def close(self) -> None:
        """Release the store's resources."""


class PassThroughStore:
    """A :class:`WalStore` that hands every call to ``store``, the real one: the base of
    a wrapper that watches some calls (it overrides those) and passes the rest on."""

    def __init__(self, store: WalStore) -> None:
        self.store = store

    def append(
        self, envelope: Envelope, lease: Lease | None = None, follows: str | None = None
    ) -> None:
        self.store.append(envelope, lease, follows)

    def read(self, channel_id: str) -> Iterator[Envelope]:
        return self.store.read(channel_id)

    def links(self, channel_id: str) -> list[tuple[str, str | None]]:
        return self.store.links(channel_id)

    def channel_ids(self) -> list[str]:
        return self.store.channel_ids()

    def acquire(self, channel_id: str, holder: str, seconds: float = LEASE_SECONDS) -> Lease:
        return self.store.acquire(channel_id, holder, seconds)

    def renew(self, lease: Lease, seconds: float = LEASE_SECONDS) -> Lease:
        return self.store.renew(lease, seconds)

    def release(self, lease: Lease) -> None:
        self.store.release(lease)

    def lease_of(self, channel_id: str) -> Lease | None:
        return self.store.lease_of(channel_id)

    def close(self) -> None:
        self.store.close()


def _lost(lease: Lease, current: Lease | None) -> LeaseError:
    if current is not None and current.token != lease.token:
        msg = (
            f"run {lease.channel_id} was taken over by another hub "
            f"({describe_holder(current.holder)}): this hub's writes to it are refused"
        )
    else:
        msg = f"run {lease.channel_id}: this hub's lease expired; its writes to the run are refused"
    return LeaseError(msg, lease.channel_id, current.holder if current is not None else None)


class MemoryStore:
    """An in-process WAL: fast, gone when the process exits."""

    def __init__(self) -> None:
        self._logs: dict[str, list[Envelope]] = {}
        self._ids: set[str] = set()
        self._leases: dict[str, Lease] = {}
        self._follows: dict[str, str | None] = {}

    def append(
        self, envelope: Envelope, lease: Lease | None = None, follows: str | None = None
    ) -> None:
        if lease is not None:
            current = self._leases.get(lease.channel_id)
            if (
                current is None
                or current.token != lease.token
                or current.expires_at <= time.time()
                or lease.channel_id != envelope.channel_id
            ):
                raise _lost(lease, current)
        if envelope.envelope_id in self._ids:
            raise WalError(f"duplicate envelope id {envelope.envelope_id!r}")
        self._ids.add(envelope.envelope_id)
        if follows is not None:
            self._follows[envelope.envelope_id] = follows
        log = self._logs.get(envelope.channel_id)
        if log is None:
            log = self._logs[envelope.channel_id] = []
        log.append(envelope)

    def read(self, channel_id: str) -> Iterator[Envelope]:
        return iter(list(self._logs.get(channel_id, ())))

    def links(self, channel_id: str) -> list[tuple[str, str | None]]:
        return [
            (e.envelope_id, self._follows.get(e.envelope_id))
            for e in self._logs.get(channel_id, ())
        ]

    def channel_ids(self) -> list[str]:
        return list(self._logs)

    def acquire(self, channel_id: str, holder: str, seconds: float = LEASE_SECONDS) -> Lease:
        now = time.time()
        lease = _next_lease(channel_id, holder, self._leases.get(channel_id), now, seconds)
        self._leases[channel_id] = lease
        return lease

    def renew(self, lease: Lease, seconds: float = LEASE_SECONDS) -> Lease:
        current = self._leases.get(lease.channel_id)
        if current is None or current.token != lease.token:
            raise _lost(lease, current)
        renewed = attrs.evolve(current, expires_at=time.time() + seconds)
        self._leases[lease.channel_id] = renewed
        return renewed

    def release(self, lease: Lease) -> None:
        current = self._leases.get(lease.channel_id)
        if current is not None and current.token == lease.token:
            self._leases[lease.channel_id] = attrs.evolve(current, expires_at=0.0)

    def lease_of(self, channel_id: str) -> Lease | None:
        current = self._leases.get(channel_id)
        if current is None or _free(current.holder, current.expires_at, time.time()):
            return None
        return current

    def close(self) -> None:
        pass


#: the page size of a new SQLite file (see :class:`SqliteStore`)
PAGE_SIZE = 1024

#: ``seq`` of a file made by this version: the run's number times this, plus the
#: envelope's place in the run (1, 2, ...)
RUN_SPAN = 1 << 32

# A file made by this version keeps each run's envelopes under its own range of ``seq``
# (a ``run`` table numbers the runs in the order they began), so reading a run needs no
# index of its own: an append writes the row and one index entry, its id's, which keeps
# ids unique across the file. The layout may change until flowc 1.0: a file made by an
# earlier development version is refused (:data:`_EARLIER`), never converted.
_TABLES = (
    """CREATE TABLE wal (
    seq         INTEGER PRIMARY KEY,
    channel_id  TEXT NOT NULL,
    envelope_id TEXT NOT NULL UNIQUE,
    event_type  TEXT NOT NULL,
    envelope    TEXT NOT NULL,
    follows     TEXT
)""",
    """CREATE TABLE run (
    number      INTEGER PRIMARY KEY,
    channel_id  TEXT NOT NULL UNIQUE
)""",
)
_LEASE_TABLE = """CREATE TABLE IF NOT EXISTS lease (
    channel_id  TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    token       INTEGER NOT NULL,
    expires_at  REAL NOT NULL
)"""
#: what opening a file of an earlier, unreleased layout says
_EARLIER = (
    "{path}: this run database was made by an earlier development version of flowc, "
    "whose layout this one does not read (the layout is not stable before flowc 1.0): "
    "finish its runs with the version that made it, or move it away to start a new one"
)

#: the next place in the run whose range is [low, high]: one past its last row, capped at
#: high, so a full run's append collides with its last row (a PRIMARY KEY error). A single
#: row of VALUES, not ``INSERT ... SELECT``: an INSERT whose SELECT reads the table it
#: writes copies its rows to a temporary table first (SQLite's ``OpenEphemeral``, a b-tree
#: opened, cleared and closed on every append), while a VALUES row's subquery is read
#: before the write, in the statement's own write transaction. Plain ``?`` placeholders
#: (numbered ones, ``?1``, count as named for Python 3.12's sqlite3, which warns when
#: they are given a sequence and refuses it from 3.14): :func:`_run_values` orders the
#: values, low and high twice each
_INSERT_RUN = (
    "INSERT INTO wal (seq, channel_id, envelope_id, event_type, envelope, follows) VALUES ("
    "MIN(IFNULL((SELECT seq FROM wal WHERE seq BETWEEN ? AND ? ORDER BY seq DESC LIMIT 1), "
    "?), ? - 1) + 1, {channel}, ?, ?, ?, ?)"
)
#: VALUES has no WHERE: a fenced append's run is NULL unless the lease is the run's current,
#: live one, and the NOT NULL column refuses the row (an error told apart from the others)
_INSERT_RUN_FENCED = _INSERT_RUN.format(
    channel="CASE WHEN EXISTS (SELECT 1 FROM lease WHERE channel_id = ? AND token = ? "
    "AND expires_at > ?) THEN ? END"
)
_INSERT_RUN = _INSERT_RUN.format(channel="?")


def _run_values(
    low: int, channel_id: str, rest: tuple[Any, ...], fence: tuple[Any, ...]
) -> tuple[Any, ...]:
    """The values of :data:`_INSERT_RUN` (no ``fence``) or :data:`_INSERT_RUN_FENCED`
    (``fence`` = the lease's token and the time now), for a run whose places start at
    ``low``; ``rest`` = envelope id, event type, row, follows."""
    high = low + RUN_SPAN - 1
    if fence:
        return (low, high, low, high, channel_id, *fence, channel_id, *rest)
    return (low, high, low, high, channel_id, *rest)


#: the SQLite errors of an append that :meth:`SqliteStore.append` tells apart
_REFUSED = sqlite3.SQLITE_CONSTRAINT_NOTNULL  # the fence: the lease is not current
_FULL = sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY  # the run's last place is taken
_DUPLICATE = sqlite3.SQLITE_CONSTRAINT_UNIQUE  # the envelope id is in the file

#: sorted keys, as :meth:`Envelope.to_json`; one encoder for every row
_ENCODE = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode
#: a string as that encoder writes it
_quote: Callable[[str], str] = json.encoder.encode_basestring


def _json(value: Any) -> str:
    """``value`` as :data:`_ENCODE` writes it, strings and ``None`` without the encoder's
    set-up (which costs more than a short row)."""
    if value.__class__ is str:
        return _quote(value)
    return "null" if value is None else _ENCODE(value)


def _data(data: Any) -> str:
    """:func:`_json` of an envelope's data; a one-string dict (a text turn's) directly."""
    if data.__class__ is dict and len(data) == 1:
        for key, value in data.items():
            if key.__class__ is str and value.__class__ is str:
                return "{" + _quote(key) + ": " + _quote(value) + "}"
    return _ENCODE(data)


def _row_writer(cls: type[Envelope] = Envelope) -> Callable[[Envelope], str]:
    """:func:`encode_row`, written from the fields of :class:`Envelope` (``cls``): the JSON a SQLite row
    keeps for an envelope is :meth:`Envelope.to_json` without the optional fields that
    hold their default (``null``, priority ``normal``, depth ``0``); the fields without a
    default and those the hub stamps (:data:`~flowc.runtime.envelope.STAMPED`) are always
    written.

    A row is written before each delivery, so its size is paid on every turn: a plain
    text turn is ~40 % shorter this way. :meth:`Envelope.from_json` (ours and AG2's) gives
    the omitted fields their defaults, so the row reads back as the same envelope, and rows
    written in full read as before. The function is generated (as attrs writes
    ``__init__``): the usual turn, every optional field at its default, is one f-string in
    sorted-key order, the same text as ``_ENCODE`` of the fields without the encoder's
    set-up, which costs more than the row; a field added to :class:`Envelope` is written
    with no edit here.

    >>> from flowc.runtime.envelope import EV_TEXT
    >>> env = Envelope("c1", "a", None, EV_TEXT, {"text": "hi"}, envelope_id="e1")
    >>> encode_row(env)
    '{"audience": null, "channel_id": "c1", "created_at": "", "envelope_id": "e1", \
"event_data": {"text": "hi"}, "event_type": "ag2.msg.text", "sender_id": "a"}'
    >>> Envelope.from_json(encode_row(env)) == env
    True
    """
    namespace: dict[str, Any] = {"_quote": _quote, "_json": _json, "_data": _data}
    fields: list[attrs.Attribute[Any]] = sorted(
        attrs.fields(cls), key=lambda f: str(f.name)
    )  # sorted keys, as to_json

    def value(f: attrs.Attribute[Any], usual: bool) -> str:
        kind = str(f.type)  # the annotation as written ("str", "dict[str, Any]")
        if kind.startswith("dict["):
            return f"_data(e.{f.name})"
        if not usual:
            return f"_json(e.{f.name})"
        # the usual turn's strings: _quote, which refuses anything else (TypeError)
        if kind == "str":
            return f"_quote(e.{f.name})"
        return f'"null" if e.{f.name} is None else _json(e.{f.name})'

    def at_default(f: attrs.Attribute[Any]) -> str:
        if f.default is None:
            return f"e.{f.name} is None"
        namespace[f"_default_{f.name}"] = f.default
        return f"e.{f.name} == _default_{f.name}"

    always = [f for f in fields if f.default is attrs.NOTHING or f.name in STAMPED]
    optional = [f for f in fields if f not in always]
    usual = ", ".join(f'"{f.name}": {{{value(f, True)}}}' for f in always)
    lines = [
        "def encode_row(e):",
        f"    if {' and '.join(at_default(f) for f in optional)}:",
        "        try:",
        f"            return f'{{{{{usual}}}}}'",
        "        except TypeError:  # not a string where one is declared: written below",
        "            pass",
        "    parts = []",
    ]
    for f in fields:
        add = f"parts.append('\"{f.name}\": ' + {value(f, False)})"
        lines.append(f"    {add}" if f in always else f"    if not ({at_default(f)}): {add}")
    lines.append("    return '{' + ', '.join(parts) + '}'")
    exec(compile("\n".join(lines), "<encode_row>", "exec"), namespace)
    write: Callable[[Envelope], str] = namespace["encode_row"]
    write.__doc__ = "The JSON a SQLite row keeps for an envelope (see :func:`_row_writer`)."
    return write


encode_row = _row_writer()


def _names(db: sqlite3.Connection) -> set[str]:
    """The tables and indexes of a database."""
    return {row[0] for row in db.execute("SELECT name FROM sqlite_master")}


def _refuse_foreign(db: sqlite3.Connection, path: str) -> None:
    """Refuse to write a database of another program (``--db app.db`` given by mistake):
    one with tables of its own and no WAL table. Making flowc's tables there (and turning
    its journal into WAL mode) would change a file that is not flowc's, which ``flowc
    log`` would then list as a run database; a new or empty file is made into one."""
    names = _names(db)
    if "wal" in names:
        return
    # (flowc makes its `wal` and `run` tables in one transaction, `lease` after them: a
    # file without `wal` holds none of flowc's, whatever its tables are called)
    foreign = sorted(n for n in names if not n.startswith("sqlite_"))
    if foreign:
        shown = ", ".join(foreign[:5]) + (
            f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        )
        raise WalError(
            f"{path}: not a run database (it has no WAL table, and holds another "
            f"program's tables or indexes: {shown}); flowc writes runs only to a run "
            "database or a new file: give another path"
        )


def decode_rows(db: str, channel_id: str, rows: list[tuple[Any, str]]) -> list[Envelope]:
    """``(row key, envelope JSON)`` rows of one run, in order -> its envelopes; a row that
    is not an envelope of this run, or holds a value its readers cannot read
    (:func:`flowc.runtime.stored.check_envelope`), raises :class:`DamagedRow` naming
    ``db``, the run, the envelope's place, the row and the value's JSON path."""
    out = []
    for i, (seq, text) in enumerate(rows, start=1):
        raw: Any = None
        try:
            raw = json.loads(text)
            check_row(raw)
            if raw["channel_id"] != channel_id:
                raise ValueError("not an envelope of this run")
            env = Envelope.from_dict(raw)
            check_envelope(env)
            _opens_this_run(env, channel_id)
        except DamagedRecord as err:
            et = raw.get("event_type") if isinstance(raw, dict) else None
            et = et if isinstance(et, str) else "no event type"
            raise DamagedRow(
                db, damaged_text(f"run {channel_id}", i, et, err.path, err.what, seq)
            ) from None
        except (ValueError, TypeError, RecursionError) as err:
            # (what json.loads raises for a row that is no JSON)
            raise DamagedRow(
                db,
                f"run {channel_id} is damaged: record {i} (row {seq}) is no envelope "
                f"of this run ({type(err).__name__}: {err})",
            ) from None
        out.append(env)
    return out


def _opens_this_run(env: Envelope, channel_id: str) -> None:
    """An opening whose metadata names another run than the one it is stored under is
    damaged (a run rebuilt from it would answer to that other id, and wait for ever)."""
    if env.event_type != EV_CHANNEL_OPENED:
        return
    metadata = env.event_data.get("metadata")
    named = metadata.get("channel_id") if isinstance(metadata, dict) else None
    if isinstance(named, str) and named != channel_id:
        raise DamagedRecord("event_data.metadata.channel_id", "this run's id", named)


#: the files SQLite keeps beside a database ``PATH``: ``PATH-wal``, ``PATH-shm`` and, while
#: it is made, ``PATH-journal``
_BESIDE = ("", "-wal", "-shm", "-journal")


def _identity(path: str) -> tuple[int, int] | None:
    """The file a path names (device, inode), or None when nothing is there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _refuse_links(path: str) -> None:
    """Refuse a run database that is a symbolic link, or one of the files SQLite keeps
    beside it: SQLite would follow it and make, write or grow whatever it points to into
    a database (a folder of a repository can hold such a link: ``.flowc/runs.db`` to a
    file of the user's elsewhere). The folders on the way may be links (``/tmp`` is one
    on macOS): only the files themselves are checked. The store makes no links itself.

    >>> _refuse_links("no/such/runs.db")
    """
    for name in (path + suffix for suffix in _BESIDE):
        if os.path.islink(name):
            raise WalError(
                f"{name}: is a symbolic link (to {os.readlink(name)}); a run database is "
                "opened only as a file of its own, never through a link (SQLite would write "
                "to the file it points to): give the database's own path"
            )


class SqliteStore:
    """A WAL in one SQLite file; each append is its own committed transaction.

    ``synchronous="NORMAL"`` (the default) survives a killed process with nothing lost;
    ``"FULL"`` also survives a power cut, at the cost of an fsync per envelope. A
    fenced append checks the lease and writes in one statement, which holds SQLite's
    write lock from its start: no other writer can take the run in between.

    Each append costs a commit: the pages it changed are written to the ``-wal`` file
    in full before it returns. So a new file has small pages (:data:`PAGE_SIZE`), rows
    without the fields at their default (:func:`encode_row`) and a single index, the
    envelope ids': a run's envelopes are numbered within a range of ``seq`` of their
    own (:data:`RUN_SPAN`), which is what reading a run looks up. The layout is not
    stable before flowc 1.0: a file made by an earlier development version (one ``seq``
    for the whole file, no ``run`` table) is refused with a :class:`WalError`.

    ``readonly=True`` opens an existing file for reading only (``flowc log``,
    ``flowc replay``): it works on a read-only file or folder. Every fault of the file
    (full disk, damaged pages or rows, no permission) is a :class:`WalError` naming
    the database and, where there is one, the run; so is a path that is a symbolic link,
    or whose ``-wal``, ``-shm`` or ``-journal`` file is one, which is never opened.
    """

    def __init__(
        self, path: str | Path, *, synchronous: str = "NORMAL", readonly: bool = False
    ) -> None:
        if synchronous not in ("OFF", "NORMAL", "FULL"):
            raise ValueError(f"synchronous must be OFF, NORMAL or FULL, got {synchronous!r}")
        self.path = str(path)
        #: run -> its number, in a file that numbers its runs (a number never changes)
        self._numbers: dict[str, int] = {}
        if self.path != ":memory:":
            _refuse_links(self.path)
        if self.path != ":memory:" and Path(self.path).is_dir():
            # (SQLite would say only "unable to open database file")
            raise WalError(f"{self.path}: is a folder, not a run database: give a file's path")
        if readonly:
            self._db = self._open_readonly()
            return
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                blocker = next(
                    (p for p in Path(self.path).parents if p.exists() and not p.is_dir()), None
                )
                why = (
                    f"{blocker} is a file, not a folder"
                    if blocker is not None
                    else err.strerror or str(err)
                )
                raise WalError(f"{self.path}: cannot create its folder ({why})") from None
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as err:
            raise WalError(f"{self.path}: cannot open the run database ({err})") from None
        try:
            _refuse_foreign(self._db, self.path)  # (before a pragma changes the file)
            # a new file gets 1 KiB pages (an existing one keeps its own): each commit
            # writes every page it changed in full to the -wal file (for one short row:
            # the row's page and its id's index page), so 4 KiB pages wrote ~3x the bytes
            self._db.execute(f"PRAGMA page_size={PAGE_SIZE}")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            # checkpoint the -wal file every 10,000 pages (10 MiB at 1 KiB) instead of
            # every 1,000: fewer stalls on a long run, still bounded
            self._db.execute("PRAGMA wal_autocheckpoint=10000")
            self._prepare()
        except sqlite3.Error as err:
            self._rollback()
            self._db.close()
            raise WalError(f"{self.path}: cannot open the run database ({err})") from None
        #: the file this store writes (device, inode), or None in memory: each commit
        #: checks that the path still names it (:meth:`_still_there`)
        self._identity = None if self.path == ":memory:" else _identity(self.path)

    def _prepare(self) -> None:
        """Make the tables of a new file; refuse a file an earlier version made."""
        db = self._db
        if {"wal", "run", "lease"} <= _names(db):
            return  # made by this version: nothing to write
        db.execute("BEGIN IMMEDIATE")  # one maker at a time: all tables or none
        names = _names(db)
        if "wal" in names and "run" not in names:
            db.execute("ROLLBACK")
            raise WalError(_EARLIER.format(path=self.path))
        if "wal" not in names:
            for statement in _TABLES:
                db.execute(statement)
        db.execute(_LEASE_TABLE)
        db.execute("COMMIT")

    def _open_readonly(self) -> sqlite3.Connection:
        if not Path(self.path).is_file():
            raise WalError(f"{self.path}: no run database there")
        from urllib.parse import quote

        last: sqlite3.Error | None = None
        # a WAL-mode file in a read-only folder opens only as immutable (nobody can be
        # writing it: nobody can create its -shm file either)
        for flags in ("mode=ro", "mode=ro&immutable=1"):
            try:
                db = sqlite3.connect(
                    f"file:{quote(self.path)}?{flags}",
                    uri=True,
                    isolation_level=None,
                    check_same_thread=False,
                )
            except sqlite3.Error as err:
                last = err
                continue
            try:
                columns = {row[1] for row in db.execute("PRAGMA table_info(wal)")}
            except sqlite3.Error as err:
                db.close()
                last = err
                continue
            if not columns:
                db.close()
                raise WalError(f"{self.path}: not a run database (it has no WAL table)")
            try:
                earlier = "run" not in _names(db)
            except sqlite3.Error as err:
                db.close()
                last = err
                continue
            if earlier:
                db.close()
                raise WalError(_EARLIER.format(path=self.path))
            return db
        raise WalError(f"{self.path}: cannot open the run database ({last})")

    def _fault(self, err: sqlite3.Error, channel_id: str | None, what: str) -> WalError:
        run = f"run {channel_id}: " if channel_id else ""
        kind = StoreUnavailable if unavailable(err) else WalError
        return kind(f"{self.path}: {run}cannot {what} ({err})")

    def append(
        self, envelope: Envelope, lease: Lease | None = None, follows: str | None = None
    ) -> None:
        channel_id = envelope.channel_id
        if lease is not None and lease.channel_id != channel_id:
            raise _lost(lease, None)
        number = self._numbers.get(channel_id)  # known once the run has begun
        if number is None:
            self._append_slow(envelope, lease, follows)
            self._still_there(channel_id)
            return
        # a begun run: one statement, its values in one tuple (this runs on every turn)
        low = number * RUN_SPAN
        try:
            if lease is None:
                high = low + RUN_SPAN - 1
                self._db.execute(
                    _INSERT_RUN,
                    (
                        low,
                        high,
                        low,
                        high,
                        channel_id,
                        envelope.envelope_id,
                        envelope.event_type,
                        encode_row(envelope),
                        follows,
                    ),
                )
            else:
                high = low + RUN_SPAN - 1
                self._db.execute(
                    _INSERT_RUN_FENCED,
                    (
                        low,
                        high,
                        low,
                        high,
                        channel_id,
                        lease.token,
                        time.time(),
                        channel_id,
                        envelope.envelope_id,
                        envelope.event_type,
                        encode_row(envelope),
                        follows,
                    ),
                )
        except sqlite3.Error as err:
            raise self._append_failed(err, envelope, lease) from None
        except UnicodeEncodeError as err:
            raise self._not_utf8(err, envelope) from None
        self._still_there(channel_id)

    def _still_there(self, channel_id: str | None) -> None:
        """After a commit: the path still names the file this store wrote it to.

        SQLite keeps writing a deleted file (the open handle keeps it) and never looks
        at its path again, so a run database deleted or replaced during a run would
        take every later turn into a file nobody can read, and the run would end as if
        all was well. A stat per commit (about 2 us against the commit's 20-100 us)
        finds it on the first turn that is not where the run's readers look.
        """
        if self._identity is None:
            return
        now = _identity(self.path)
        if now == self._identity:
            return
        run = f"run {channel_id}: " if channel_id else ""
        what = "was deleted or moved away" if now is None else "was replaced by another file"
        raise WalError(
            f"{self.path}: {run}the run database {what} during the run: the turn just "
            "written is not in the file at that path, so the run stops here"
        )

    def _append_slow(self, envelope: Envelope, lease: Lease | None, follows: str | None) -> None:
        """The first append a store makes to a run."""
        channel_id = envelope.channel_id
        fields = (
            channel_id,
            envelope.envelope_id,
            envelope.event_type,
            encode_row(envelope),
            follows,
        )
        fence = () if lease is None else (lease.token, time.time())
        try:
            number = self._number(channel_id)
            if number is None:
                self._append_first(channel_id, fields, fence)
            else:
                low = number * RUN_SPAN
                self._db.execute(
                    _INSERT_RUN_FENCED if fence else _INSERT_RUN,
                    _run_values(low, channel_id, fields[1:], fence),
                )
        except sqlite3.Error as err:
            raise self._append_failed(err, envelope, lease) from None
        except UnicodeEncodeError as err:
            raise self._not_utf8(err, envelope) from None

    def _not_utf8(self, err: UnicodeEncodeError, envelope: Envelope) -> WalError:
        """An envelope holding a lone surrogate (a script's ``"\\ud800"`` reads as one):
        SQLite keeps text as UTF-8, which cannot encode it, so nothing was written."""
        self._rollback()
        char = err.object[err.start : err.end]
        return WalError(
            f"{self.path}: run {envelope.channel_id}: cannot write envelope "
            f"{envelope.envelope_id!r} to the WAL: it holds {char!a}, a lone "
            f"surrogate, which is not Unicode text"
        )

    def _append_failed(
        self, err: sqlite3.Error, envelope: Envelope, lease: Lease | None
    ) -> WalError:
        """What a failed append's SQLite error means: its lease is gone, its run is full,
        its id is taken, or a fault of the file (nothing was written)."""
        self._rollback()
        channel_id = envelope.channel_id
        if isinstance(err, sqlite3.IntegrityError):
            code = err.sqlite_errorcode
            if code == _REFUSED and lease is not None:
                return _lost(lease, self._lease_row(channel_id))
            if code == _FULL:
                return WalError(
                    f"{self.path}: run {channel_id}: cannot write the WAL "
                    f"(the run holds {counted(RUN_SPAN - 1, 'envelope')}, the most a run can)"
                )
            if code == _DUPLICATE:
                return WalError(f"duplicate envelope id {envelope.envelope_id!r}")
        return self._fault(err, channel_id, "write the WAL")

    def _number(self, channel_id: str) -> int | None:
        """The run's number (``None`` before its first envelope)."""
        number = self._numbers.get(channel_id)
        if number is None:
            row = self._db.execute(
                "SELECT number FROM run WHERE channel_id = ?", (channel_id,)
            ).fetchone()
            if row is None:
                return None
            number = self._numbers[channel_id] = int(row[0])
        return number

    def _append_first(
        self, channel_id: str, fields: tuple[Any, ...], fence: tuple[Any, ...]
    ) -> None:
        """The run's first envelope: number the run and write the envelope in one
        transaction (a refused envelope numbers nothing)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        number = self._number(channel_id)  # another writer may have begun it meanwhile
        if number is None:
            number = int(
                db.execute("INSERT INTO run (channel_id) VALUES (?)", (channel_id,)).lastrowid or 0
            )
        low = number * RUN_SPAN
        db.execute(
            _INSERT_RUN_FENCED if fence else _INSERT_RUN,
            _run_values(low, channel_id, fields[1:], fence),
        )
        db.execute("COMMIT")
        self._numbers[channel_id] = number

    def _rows(self, channel_id: str, columns: str) -> list[Any]:
        try:
            number = self._number(channel_id)
            if number is None:
                return []
            return self._db.execute(
                f"SELECT {columns} FROM wal WHERE seq BETWEEN ? AND ? ORDER BY seq",
                (number * RUN_SPAN, (number + 1) * RUN_SPAN - 1),
            ).fetchall()
        except sqlite3.Error as err:
            raise self._fault(err, channel_id, "read the WAL") from None

    def read(self, channel_id: str) -> Iterator[Envelope]:
        return iter(decode_rows(self.path, channel_id, self._rows(channel_id, "seq, envelope")))

    def read_page(self, channel_id: str, after: int, limit: int) -> list[tuple[int, Envelope]]:
        """At most ``limit`` of the run's envelopes whose row key is past ``after`` (0: from
        the first), in order, each with its row key: what a reader that follows a run
        while another process writes it asks for, one page at a time (``flowc view``)."""
        try:
            number = self._number(channel_id)
            if number is None:
                return []
            low = number * RUN_SPAN
            rows = self._db.execute(
                "SELECT seq, envelope FROM wal WHERE seq BETWEEN ? AND ? ORDER BY seq LIMIT ?",
                (max(low, after + 1), low + RUN_SPAN - 1, limit),
            ).fetchall()
        except sqlite3.Error as err:
            raise self._fault(err, channel_id, "read the WAL") from None
        envelopes = decode_rows(self.path, channel_id, rows)
        return [(int(row[0]), env) for row, env in zip(rows, envelopes, strict=True)]

    def links(self, channel_id: str) -> list[tuple[str, str | None]]:
        rows = self._rows(channel_id, "envelope_id, follows")
        return [(row[0], row[1]) for row in rows]

    def channel_ids(self) -> list[str]:
        try:
            rows = self._db.execute("SELECT channel_id FROM run ORDER BY number").fetchall()
        except sqlite3.Error as err:
            raise self._fault(err, None, "read the WAL") from None
        return [row[0] for row in rows]

    def _lease_row(self, channel_id: str) -> Lease | None:
        try:
            row = self._db.execute(
                "SELECT holder, token, expires_at FROM lease WHERE channel_id = ?", (channel_id,)
            ).fetchone()
        except sqlite3.Error as err:
            raise self._fault(err, channel_id, "read its lease") from None
        return None if row is None else Lease(channel_id, row[0], int(row[1]), float(row[2]))

    def acquire(self, channel_id: str, holder: str, seconds: float = LEASE_SECONDS) -> Lease:
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as err:
            raise self._fault(err, channel_id, "take its lease") from None
        try:
            now = time.time()
            lease = _next_lease(channel_id, holder, self._lease_row(channel_id), now, seconds)
            db.execute(
                "INSERT INTO lease (channel_id, holder, token, expires_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (channel_id) DO UPDATE SET holder = excluded.holder, "
                "token = excluded.token, expires_at = excluded.expires_at",
                (channel_id, holder, lease.token, lease.expires_at),
            )
            db.execute("COMMIT")
        except sqlite3.Error as err:
            self._rollback()
            raise self._fault(err, channel_id, "take its lease") from None
        except BaseException:
            self._rollback()
            raise
        return lease

    def _rollback(self) -> None:
        # no transaction may be left to roll back (SQLite ends some on the error)
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("ROLLBACK")

    def renew(self, lease: Lease, seconds: float = LEASE_SECONDS) -> Lease:
        expires = time.time() + seconds
        try:
            cur = self._db.execute(
                "UPDATE lease SET expires_at = ? WHERE channel_id = ? AND token = ?",
                (expires, lease.channel_id, lease.token),
            )
        except sqlite3.Error as err:
            raise self._fault(err, lease.channel_id, "renew its lease") from None
        if cur.rowcount != 1:
            raise _lost(lease, self._lease_row(lease.channel_id))
        return attrs.evolve(lease, expires_at=expires)

    def release(self, lease: Lease) -> None:
        try:
            self._db.execute(
                "UPDATE lease SET expires_at = 0 WHERE channel_id = ? AND token = ?",
                (lease.channel_id, lease.token),
            )
        except sqlite3.Error as err:
            raise self._fault(err, lease.channel_id, "release its lease") from None

    def lease_of(self, channel_id: str) -> Lease | None:
        current = self._lease_row(channel_id)
        if current is None or _free(current.holder, current.expires_at, time.time()):
            return None
        return current

    def close(self) -> None:
        # closing a connection whose file failed: nothing more to save
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
