"""A write-ahead log in PostgreSQL, shared by several hub processes (``--db postgresql://...``).

:class:`PgStore` implements :class:`~flowc.runtime.wal.WalStore` with the same records and
guarantees as :class:`~flowc.runtime.wal.SqliteStore`, for hubs on one host or many:

- every append is its own committed transaction (autocommit), done before the envelope is
  delivered; a refused append (duplicate id, lost lease, stale ``follows``) writes nothing;
- one writer per run: a run's lease is a row of ``flowc_lease`` (holder, fencing token,
  expiry). A fenced append is ONE statement that locks that row (``SELECT ... FOR UPDATE``),
  checks the token and the expiry and inserts only if both hold: a writer whose lease
  expired or was taken over is refused, never merged. Expiry uses the database's clock
  (``clock_timestamp()``), not the clock of each host. Taking a lease reads the row first
  and refuses a lease another live process holds without locking anything, then locks
  the row waiting a few milliseconds at most: a session cut off while it held the row
  keeps it locked until the server ends it, and nobody may wait for that;
- turns follow one another: a fenced append that names the envelope it follows
  (``follows``) is refused unless that is the run's last envelope, in the same statement;
- the tables are made on first use, under an advisory lock (several processes may start
  at once against an empty database).

Tables (unqualified names: put them in a schema of your own with
``?options=-csearch_path%3Dmyschema`` in the URL):

- ``flowc_wal(seq, channel_id, envelope_id UNIQUE, event_type, envelope TEXT, follows,
  token)``: the envelope as the exact JSON text the SQLite store keeps, and the fencing
  token it was written under (``NULL``: an unfenced append, such as a run's submission);
- ``flowc_lease(channel_id PRIMARY KEY, holder, token, expires_at timestamptz)``: one row per
  run a hub ever opened or took (a released lease has ``expires_at = -infinity``).
- ``flowc_lease_log(channel_id, token, holder, after_seq, previous, previous_state)``: every
  lease taken, with the ``seq`` of the run's last envelope then (0: none), the holder it
  was taken from and whether that lease was ``live``, ``expired`` or ``free`` (released or
  never held), so a reader can tell, from the rows alone, that no append was accepted
  under a token after a newer one was taken, and why each lease changed hands.

Notifications (``LISTEN`` on a connection of your own; :func:`listen` makes one), sent when
the writing transaction commits:

- ``flowc_wal``: every append; payload JSON ``{"run": ID, "seq": N, "envelope": ID,
  "event": TYPE}``;
- ``flowc_run``: a run was opened (its first envelope, ``ag2.channel.opened``); payload the
  run id;
- ``flowc_free``: a run's lease was released (its hub closed it or gave it up); payload the
  run id.

A URL's password never appears in a message: :func:`redact` drops it.

>>> redact("postgresql://alice:s3cret@db.example:5432/runs?sslmode=require&password=x")
'postgresql://alice@db.example:5432/runs?sslmode=require'
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from flowc._compat import psycopg_queue_sync
from flowc.runtime.envelope import (
    EV_CHANNEL_CLOSED,
    EV_CHANNEL_OPENED,
    EV_RUN_STALLED,
    Envelope,
)
from flowc.runtime.wal import (
    LEASE_SECONDS,
    Lease,
    LeaseBusy,
    LeaseError,
    StoreUnavailable,
    WalError,
    _held_message,
    _lost,
    decode_rows,
    holder_alive,
    unavailable,
)

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "NOTIFY_APPEND",
    "NOTIFY_FREE",
    "NOTIFY_RUN",
    "Claimed",
    "PgListener",
    "PgStore",
    "listen",
    "parse_payload",
    "redact",
]

#: the notification channel of every append (payload: JSON run, seq, envelope, event)
NOTIFY_APPEND = "flowc_wal"
#: the notification channel of every new run (payload: the run id)
NOTIFY_RUN = "flowc_run"
#: the notification channel of every released lease (payload: the run id)
NOTIFY_FREE = "flowc_free"

log = logging.getLogger(__name__)
_T = TypeVar("_T")

#: how long a session of ours may sit idle inside a transaction before the server ends it
#: (our transactions are a few statements long: only a frozen process waits that long)
_IDLE_MS = 5000


def _lock_wait_ms(lease_seconds: float) -> int:
    """How long taking a lease waits for its row: a tenth of the lease asked for, at most
    50 ms, at least 5 ms. A lease another process holds live is refused before the row is
    locked, so a wait here is for a take under way (done in milliseconds) or for a session
    cut off while it held the row; a claim pass may meet several of those, and their waits
    (up to four times this where a stalled session is ended and the row waited for
    again) add up on the worker's event loop, well inside the half lease its heartbeat
    leaves.

    >>> _lock_wait_ms(2.0), _lock_wait_ms(0.2), _lock_wait_ms(0.01)
    (50, 20, 5)
    """
    return max(5, min(50, int(lease_seconds * 100)))


#: how long a session of ours must have waited for its client, inside a transaction that
#: locked an expired lease's row, before a taker of that run ends it (see
#: :meth:`PgStore._end_stalled_locker`)
_STALLED_MS = 1000

#: the advisory lock key under which the tables are made (``flowc`` in ASCII)
_SCHEMA_LOCK = 0x666C6F7763

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS flowc_wal (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id  TEXT NOT NULL,
    envelope_id TEXT NOT NULL UNIQUE,
    event_type  TEXT NOT NULL,
    envelope    TEXT NOT NULL,
    follows     TEXT,
    token       BIGINT
);
ALTER TABLE flowc_wal ADD COLUMN IF NOT EXISTS token BIGINT;
CREATE INDEX IF NOT EXISTS flowc_wal_channel ON flowc_wal (channel_id, seq);
CREATE INDEX IF NOT EXISTS flowc_wal_closed ON flowc_wal (channel_id)
    WHERE event_type = '{EV_CHANNEL_CLOSED}';
CREATE TABLE IF NOT EXISTS flowc_lease (
    channel_id  TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    token       BIGINT NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS flowc_lease_log (
    channel_id  TEXT NOT NULL,
    token       BIGINT NOT NULL,
    holder      TEXT NOT NULL,
    after_seq   BIGINT NOT NULL,
    previous    TEXT NOT NULL,
    previous_state TEXT NOT NULL,
    PRIMARY KEY (channel_id, token)
);
"""


#: after the INSERT: the notifications, sent only if a row was written (``flowc_wal`` only
#: when the store notifies appends: see :class:`PgStore`)
def _returning(notify_appends: bool) -> str:
    append = (
        f"""pg_notify('{NOTIFY_APPEND}', json_build_object(
           'run', %(c)s::text, 'seq', seq, 'envelope', %(e)s::text, 'event', %(ty)s::text)::text),"""
        if notify_appends
        else ""
    )
    return f"""
SELECT seq, {append}
       CASE WHEN %(ty)s = '{EV_CHANNEL_OPENED}' THEN pg_notify('{NOTIFY_RUN}', %(c)s) END
FROM ins
"""


_INSERT = """
    INSERT INTO flowc_wal (channel_id, envelope_id, event_type, envelope, follows, token)
    VALUES (%(c)s, %(e)s, %(ty)s, %(env)s, %(f)s, %(t)s)"""

#: the fenced insert: the lease row is locked, then the row is written only while the lease
#: is the run's current, live one (``{fence}``) and (given ``follows``) the run's last
#: envelope is it (``{follows}``); the row records the writer's fencing token
_INSERT_FENCED = """
WITH held AS (
    SELECT 1 FROM flowc_lease
    WHERE channel_id = %(c)s AND {fence}
    FOR UPDATE
), ins AS (
    INSERT INTO flowc_wal (channel_id, envelope_id, event_type, envelope, follows, token)
    SELECT %(c)s, %(e)s, %(ty)s, %(env)s, %(f)s, %(t)s
    WHERE EXISTS (SELECT 1 FROM held)
      AND {follows}"""

_FENCE = "token = %(t)s AND expires_at > clock_timestamp()"
_FOLLOWS = """(%(f)s::text IS NULL OR %(f)s::text IS NOT DISTINCT FROM (
          SELECT envelope_id FROM flowc_wal WHERE channel_id = %(c)s
          ORDER BY seq DESC LIMIT 1))"""

#: the store's guards a test may switch off, one at a time (see :func:`_disabled_guard`)
GUARDS = ("fence", "follows", "expiry", "heartbeat", "retry")


def _disabled_guard() -> str | None:
    """The guard switched off in this process, if any: a TEST HOOK, honoured only when
    ``FLOWC_TEST_HOOKS=1`` is set too, read once when a :class:`PgStore` is made.
    tests/pg/test_seeded_bugs.py uses it to show that the independent history checker
    finds what each guard prevents. ``FLOWC_TEST_DISABLE_GUARD=``

    - ``fence``: a fenced append, and a renewal, go through whatever the lease's token and
      expiry (a renewal refused would stop the holder before its append is tried);
    - ``follows``: a fenced append goes through whatever the run's last envelope;
    - ``expiry``: every lease counts as expired (an open run is listed as free to take,
      and a lease another live process holds is taken);
    - ``heartbeat``: a renewal renews nothing (a lease lasts its first length only);
    - ``retry``: an append tried again on a new connection (its first try's answer lost
      with the old one) does not recognise its own envelope when the first try committed
      it: the envelope found in the WAL is not compared with the one being written
      (:meth:`PgStore._written` says no), and a batch's insert no longer passes over a
      row already there (``ON CONFLICT (envelope_id) DO NOTHING`` left out), so the
      retry is refused, as any other append is that finds its envelope id taken or its
      ``follows`` no longer the run's last envelope.
    """
    name = os.environ.get("FLOWC_TEST_DISABLE_GUARD")
    if not name or os.environ.get("FLOWC_TEST_HOOKS") != "1":
        return None
    if name not in GUARDS:
        raise WalError(f"FLOWC_TEST_DISABLE_GUARD={name}: not one of {', '.join(GUARDS)}")
    return name


#: in a batch, a row already there (a retry whose first try committed) is not an error
#: that would undo the batch: it is left out, and told apart after the commit
_SKIP_DUPLICATE = "\n    ON CONFLICT (envelope_id) DO NOTHING"


def _statements(notify_appends: bool, off: str | None = None) -> dict[tuple[bool, bool], str]:
    """The append's one statement, by (fenced, in a batch); ``off``: a guard left out
    (the test hook, see :func:`_disabled_guard`)."""
    tail = "\n    RETURNING seq\n)" + _returning(notify_appends)
    fenced_insert = _INSERT_FENCED.format(
        fence="TRUE" if off == "fence" else _FENCE,
        follows="TRUE" if off == "follows" else _FOLLOWS,
    )
    out = {}
    for fenced in (False, True):
        for batch in (False, True):
            head = fenced_insert if fenced else "\nWITH ins AS (" + _INSERT
            skip = _SKIP_DUPLICATE if batch and off != "retry" else ""
            out[(fenced, batch)] = head + skip + tail
    return out


_APPEND_SQL = {True: _statements(True), False: _statements(False)}

#: a lease given back (only while it is the run's current one), and the workers told
_RELEASE = (
    "WITH gone AS (UPDATE flowc_lease SET expires_at = '-infinity' "
    "WHERE channel_id = %(c)s AND token = %(t)s AND expires_at > '-infinity' "
    "RETURNING channel_id) "
    f"SELECT pg_notify('{NOTIFY_FREE}', channel_id) FROM gone"
)

#: lease row ``l``'s run is open: its WAL has rows, none is its close, and its last is
#: not its stall (what :meth:`PgStore.open_runs` lists and a claim takes)
_OPEN_RUN = f"""EXISTS (SELECT 1 FROM flowc_wal w WHERE w.channel_id = l.channel_id)
AND NOT EXISTS (SELECT 1 FROM flowc_wal w WHERE w.channel_id = l.channel_id
    AND w.event_type = '{EV_CHANNEL_CLOSED}')
AND NOT EXISTS (SELECT 1 FROM flowc_wal w WHERE w.channel_id = l.channel_id
    AND w.event_type = '{EV_RUN_STALLED}'
    AND w.seq = (SELECT MAX(seq) FROM flowc_wal m WHERE m.channel_id = l.channel_id))"""
#: the oldest run (its first row) first
_OLDEST_FIRST = "ORDER BY (SELECT MIN(seq) FROM flowc_wal w WHERE w.channel_id = l.channel_id)"

#: the runs a claim locks: free by ``{free}``, open, not stalled, ``{labelled}``, oldest
#: first, passing over rows another session holds
_CLAIMABLE = f"""
SELECT l.channel_id FROM flowc_lease l WHERE {{free}}
AND NOT l.channel_id = ANY(%(skip)s)
AND {_OPEN_RUN}
{{labelled}}
{_OLDEST_FIRST}
LIMIT %(n)s FOR UPDATE OF l SKIP LOCKED
"""

#: the leases of the runs a claim locked (``ids``) taken by ``h`` for ``s`` seconds (each
#: still free by ``{free}``: the row is locked, so it is as the claim found it), and
#: each take logged as :meth:`PgStore.acquire` logs it
_CLAIM = """
WITH prev AS (
    SELECT l.channel_id, l.holder, l.expires_at,
           CASE WHEN l.expires_at > clock_timestamp() THEN 'live'
                WHEN l.expires_at = '-infinity' THEN 'free' ELSE 'expired' END AS state
    FROM flowc_lease l WHERE l.channel_id = ANY(%(ids)s) AND {free}
), taken AS (
    UPDATE flowc_lease l SET holder = %(h)s, token = l.token + 1,
        expires_at = clock_timestamp() + make_interval(secs => %(s)s)
    FROM prev WHERE l.channel_id = prev.channel_id
    RETURNING l.channel_id, l.token, extract(epoch FROM l.expires_at)::float8 AS expires,
        prev.holder AS previous, prev.state
), logged AS (
    INSERT INTO flowc_lease_log (channel_id, token, holder, after_seq, previous, previous_state)
    SELECT t.channel_id, t.token, %(h)s,
        COALESCE((SELECT MAX(seq) FROM flowc_wal w WHERE w.channel_id = t.channel_id), 0),
        t.previous, t.state
    FROM taken t
)
SELECT channel_id, token, expires FROM taken
"""


@attrs.frozen
class Claimed:
    """A run :meth:`PgStore.claim` took: its lease, and its WAL (envelopes, and each
    one's ``(envelope id, follows)`` as :meth:`PgStore.links` gives them) as it stood once
    the lease was taken; for a run with a damaged row, no WAL and why (``damaged``: the
    runs claimed with it are not held up by it)."""

    lease: Lease
    envelopes: list[Envelope]
    links: list[tuple[str, str | None]]
    damaged: WalError | None = None


_LEASE_COLUMNS = (
    "holder, token, extract(epoch FROM expires_at)::float8, expires_at > clock_timestamp()"
)

_URL = re.compile(r"^(postgres(?:ql)?://)([^@/?#]*@)?", re.IGNORECASE)


def redact(url: str) -> str:
    """``url`` without its password (in the user part or as a ``password=`` parameter)."""
    m = _URL.match(url)
    if m is None:
        return url
    user = m.group(2) or ""
    if ":" in user:
        user = user[: user.index(":")] + "@"
    rest = url[m.end() :]
    base, sep, query = rest.partition("?")
    if sep:
        kept = [p for p in query.split("&") if p and not p.lower().startswith("password=")]
        rest = base + ("?" + "&".join(kept) if kept else "")
    return m.group(1) + user + rest


def _password(url: str) -> str | None:
    m = _URL.match(url)
    user = (m.group(2) or "") if m is not None else ""
    if ":" in user:
        return user[user.index(":") + 1 : -1] or None
    found = re.search(r"[?&]password=([^&#]*)", url, re.IGNORECASE)
    return found.group(1) or None if found else None


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise WalError(
            "a postgresql:// database needs the psycopg package: "
            "pip install 'psycopg[binary]' (flowc's postgres extra)"
        ) from None
    return psycopg


def listen(url: str, *channels: str) -> psycopg.Connection[Any]:
    """A new autocommit connection listening on ``channels`` (default: all three); read with
    ``conn.notifies(timeout=...)``. :class:`WalError` naming the URL if it cannot connect."""
    psycopg = _import_psycopg()
    shown = redact(url)
    try:
        conn = psycopg.connect(url, autocommit=True, application_name="flowc")
        for channel in channels or (NOTIFY_APPEND, NOTIFY_RUN, NOTIFY_FREE):
            conn.execute(f'LISTEN "{channel}"')
    except psycopg.Error as err:
        raise WalError(f"{shown}: cannot listen ({_first_line(err, url)})") from None
    return conn  # type: ignore[no-any-return]


class PgListener:
    """Wakes a worker when a run is opened or given up: ``LISTEN`` on ``flowc_run`` and
    ``flowc_free`` (or ``channels``) on a connection of its own, in a thread.

    ``start(wake)`` calls ``wake(run_id)`` for each notification, and ``wake(None)`` each
    time it (re)connects (anything sent while it was not listening is not replayed: look
    at the store then). A lost connection is retried every ``retry_seconds`` until
    ``stop()``. :meth:`PgStore.notifier` makes one for the store's database.
    """

    def __init__(
        self,
        url: str,
        channels: tuple[str, ...] = (NOTIFY_RUN, NOTIFY_FREE),
        *,
        retry_seconds: float = 1.0,
    ) -> None:
        self.url = url
        self.channels = channels
        self.retry_seconds = retry_seconds
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, wake: Callable[[str | None], None]) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._listen, args=(wake,), name="flowc-listen", daemon=True
        )
        self._thread.start()

    def _listen(self, wake: Callable[[str | None], None]) -> None:
        while not self._stopping.is_set():
            try:
                conn = listen(self.url, *self.channels)
            except WalError as err:
                log.warning("%s; polling until it is back", err)
                self._stopping.wait(self.retry_seconds)
                continue
            try:
                wake(None)
                while not self._stopping.is_set():
                    for note in conn.notifies(timeout=0.25):
                        wake(note.payload or None)
            except Exception as err:  # the connection broke: listen again
                log.warning(
                    "%s: listening stopped (%s); listening again",
                    redact(self.url),
                    _first_line(err, self.url),
                )
                self._stopping.wait(self.retry_seconds)
            finally:
                with contextlib.suppress(Exception):
                    conn.close()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


def _first_line(err: BaseException, url: str) -> str:
    text = (str(err).strip().splitlines() or [type(err).__name__])[0]
    text = text.removeprefix("connection failed: ").removeprefix("connection is bad: ")
    text = text.replace(url, redact(url))
    secret = _password(url)
    return text.replace(secret, "***") if secret else text


def _params(
    envelope: Envelope, text: str, lease: Lease | None, follows: str | None
) -> dict[str, Any]:
    return {
        "c": envelope.channel_id,
        "e": envelope.envelope_id,
        "ty": envelope.event_type,
        "env": text,
        "f": follows,
        "t": lease.token if lease is not None else None,
    }


class PgStore:
    """A WAL in a PostgreSQL database (see the module's description).

    ``PgStore(url)`` connects (``postgresql://`` or ``postgres://``, anything libpq takes),
    then makes the tables if they are missing. ``readonly=True`` (``flowc log``,
    ``flowc replay``) makes nothing and opens read-only transactions; a database without
    the tables then holds no runs. A connection lost (the server restarted) fails the call
    in flight with a :class:`WalError`, and the next call connects again. Every fault is a
    :class:`WalError` naming the URL without its password and, where there is one, the run.
    """

    def __init__(
        self,
        url: str,
        *,
        readonly: bool = False,
        connect_timeout: int = 10,
        notify_appends: bool = True,
    ) -> None:
        self._psycopg = _import_psycopg()
        self.url = url
        self._off = _disabled_guard()
        self._appends = (
            _APPEND_SQL
            if self._off is None
            else {n: _statements(n, self._off) for n in (True, False)}
        )
        if self._off is not None:
            log.warning("TEST HOOK: the store's %s guard is switched off", self._off)
        self._sql = self._appends[notify_appends]
        #: the URL as messages show it (no password)
        self.path = redact(url)
        self.readonly = readonly
        self._connect_timeout = connect_timeout
        self._conn: psycopg.Connection[Any] | None = None
        self._tables = False
        #: how many times a lost connection was made again
        self.reconnects = 0
        self._connect()

    @property
    def notify_appends(self) -> bool:
        """Whether each append sends ``flowc_wal`` (new runs and released leases always
        notify: workers wake on them). Settable."""
        return self._sql is self._appends[True]

    @notify_appends.setter
    def notify_appends(self, value: bool) -> None:
        self._sql = self._appends[bool(value)]

    # ── the connection ──────────────────────────────────────────────────────────

    def _connect(self) -> psycopg.Connection[Any]:
        pg = self._psycopg
        try:
            conn = pg.connect(
                self.url,
                autocommit=True,
                application_name="flowc",
                connect_timeout=self._connect_timeout,
            )
        except (pg.ProgrammingError, ValueError) as err:  # libpq's or psycopg's URL parse
            raise WalError(
                f"{self.path}: not a valid database URL ({_first_line(err, self.url)})"
            ) from None
        except pg.Error as err:
            raise StoreUnavailable(
                f"{self.path}: cannot connect to the database ({_first_line(err, self.url)})"
            ) from None
        try:
            # a process frozen inside one of its (short) transactions would keep the run's
            # lease row locked, so nobody could take the run over: the server ends such
            # a session after a while
            conn.execute(f"SET idle_in_transaction_session_timeout = '{_IDLE_MS}ms'")
            if self.readonly:
                conn.execute("SET default_transaction_read_only = on")
                self._tables = conn.execute(
                    "SELECT to_regclass('flowc_wal') IS NOT NULL"
                ).fetchone() == (True,)
            elif not self._tables:
                self._make_tables(conn)
        except pg.Error as err:
            conn.close()
            kind = StoreUnavailable if unavailable(err) else WalError
            raise kind(
                f"{self.path}: cannot open the run database ({_first_line(err, self.url)})"
            ) from None
        self._conn = conn
        return conn  # type: ignore[no-any-return]

    def _make_tables(self, conn: psycopg.Connection[Any]) -> None:
        present = conn.execute(
            "SELECT to_regclass('flowc_wal') IS NOT NULL AND to_regclass('flowc_lease') "
            "IS NOT NULL AND to_regclass('flowc_wal_closed') IS NOT NULL "
            "AND to_regclass('flowc_lease_log') IS NOT NULL"
        ).fetchone()
        if present != (True,):
            # CREATE ... IF NOT EXISTS is not safe against itself: one maker at a time
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                conn.execute(_SCHEMA)
        self._tables = True

    def _db(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
            self._conn = None
            conn = self._connect()
        return conn

    def _fault(self, err: BaseException, channel_id: str | None, what: str) -> WalError:
        """The error to raise for ``err``: :class:`StoreUnavailable` when it says the
        database is unavailable for now (:func:`~flowc.runtime.wal.unavailable`: the
        connection lost, the server shutting down or starting up, ...), which trying
        again later may mend; otherwise a :class:`WalError` (what was asked was refused)."""
        run = f"run {channel_id}: " if channel_id else ""
        kind = StoreUnavailable if unavailable(err) else WalError
        return kind(f"{self.path}: {run}cannot {what} ({_first_line(err, self.url)})")

    def _attempt(
        self,
        op: Callable[[psycopg.Connection[Any]], _T],
        channel_id: str | None,
        what: str,
        *,
        passthrough: tuple[type[BaseException], ...] = (),
    ) -> _T:
        """``op(connection)``; when the connection was lost (the server restarted, the
        network dropped), once more on a new one. Errors named in ``passthrough`` are
        raised as they are; any other is a :class:`WalError`."""
        conn = self._db()
        try:
            return op(conn)
        except passthrough:
            raise
        except self._psycopg.Error as err:
            if not (conn.closed or conn.broken):
                raise self._fault(err, channel_id, what) from None
            lost = err
        try:
            conn = self._db()
        except WalError as refused:  # still gone: say what failed first
            kind = StoreUnavailable if isinstance(refused, StoreUnavailable) else WalError
            raise kind(str(self._fault(lost, channel_id, what))) from None
        log.info(
            "%s: connected again after losing the connection (%s)",
            self.path,
            _first_line(lost, self.url),
        )
        self.reconnects += 1
        try:
            return op(conn)
        except passthrough:
            raise
        except self._psycopg.Error as err:
            raise self._fault(err, channel_id, what) from None

    def _query(
        self, sql: str, params: Any, channel_id: str | None, what: str
    ) -> list[tuple[Any, ...]]:
        return self._attempt(lambda conn: conn.execute(sql, params).fetchall(), channel_id, what)

    def notifier(self) -> PgListener:
        """What wakes a worker of this database when a run is opened or given up."""
        return PgListener(self.url)

    # ── the WAL ─────────────────────────────────────────────────────────────────

    def append(
        self, envelope: Envelope, lease: Lease | None = None, follows: str | None = None
    ) -> None:
        cid = envelope.channel_id
        if lease is not None and lease.channel_id != cid:
            raise _lost(lease, None)
        text = envelope.to_json()
        params = _params(envelope, text, lease, follows)
        sql = self._sql[(lease is not None, False)]
        tries = 0

        def write(conn: psycopg.Connection[Any]) -> tuple[Any, ...] | None:
            nonlocal tries
            tries += 1
            return conn.execute(sql, params).fetchone()

        try:
            row = self._attempt(
                write, cid, "write the WAL", passthrough=(self._psycopg.errors.UniqueViolation,)
            )
        except self._psycopg.errors.UniqueViolation:
            if tries > 1 and self._written(envelope.envelope_id, cid, text):
                return  # the first try committed; only its answer was lost
            raise WalError(f"duplicate envelope id {envelope.envelope_id!r}") from None
        if row is not None:
            return
        if tries > 1 and self._written(envelope.envelope_id, cid, text):
            return  # as above: the first try's row is the run's last envelope now
        assert lease is not None  # an unfenced append always writes its row
        raise self._refusal(envelope, lease, follows)

    def _refusal(self, envelope: Envelope, lease: Lease, follows: str | None) -> LeaseError:
        """Why a fenced append wrote nothing: the lease was lost, or (still holding it)
        another writer appended after ``follows``."""
        cid = envelope.channel_id
        current = self._lease_row(cid)
        if (
            current is not None
            and current[0].token == lease.token
            and current[1]
            and follows is not None
        ):
            last = self._query(
                "SELECT envelope_id FROM flowc_wal WHERE channel_id = %s ORDER BY seq DESC LIMIT 1",
                (cid,),
                cid,
                "read the WAL",
            )
            return LeaseError(
                f"run {cid}: envelope {envelope.envelope_id} was written after {follows}, but "
                f"the run's last envelope is {last[0][0] if last else 'none'}: another "
                "writer appended to it; this write is refused",
                cid,
                current[0].holder,
            )
        return _lost(lease, current[0] if current is not None else None)

    def append_batch(
        self,
        entries: Sequence[tuple[Envelope, Lease | None, str | None]],
        releases: Sequence[Lease] = (),
    ) -> list[WalError | None]:
        """Append the envelopes of several runs in ONE committed transaction (group
        commit: one durable commit for all of them); for each entry ``(envelope, lease,
        follows)``, ``None`` when it is written or the :class:`WalError` that refused it.

        Each entry is checked as :meth:`append` checks it, run by run: a run whose lease
        was lost (or whose ``follows`` is stale) is refused, and so are the run's later
        entries in the batch (they follow the refused one), while the other runs' entries
        are written. The entries of one run keep their order; the runs are written in the
        order of their ids, so two batches lock lease rows in one order. A fault of the
        whole transaction (the connection lost twice, a server error) is every entry's
        error: nothing of the batch is then written, or (the commit's answer lost) what
        was written is recognised, entry by entry, when the batch is tried again.
        ``releases``: leases given back in the same transaction, after the appends (a
        run's close and the end of its lease in one commit)."""
        order = sorted(range(len(entries)), key=lambda i: entries[i][0].channel_id)
        texts = [entry[0].to_json() for entry in entries]
        results: list[WalError | None] = [None] * len(entries)
        todo: list[int] = []
        for i in order:
            envelope, lease, _ = entries[i]
            if lease is not None and lease.channel_id != envelope.channel_id:
                results[i] = _lost(lease, None)
            else:
                todo.append(i)
        if not todo and not releases:
            return results
        sql = self._sql

        def write(conn: psycopg.Connection[Any]) -> list[bool]:
            # a Sync after each statement: the server counts a session idle in its
            # transaction (and ends it after ``_IDLE_MS``) only between synced
            # statements; without them, a writer cut off in the middle of the batch
            # would keep its runs' lease rows locked, and nobody could take them over,
            # for as long as the connection seems alive (tests/pg/test_faults.py). The
            # Syncs are queued, not waited for: the batch goes out at once and its
            # results come back together as the pipeline ends (one round trip, not one
            # per statement; an error is raised there, and the transaction rolled back,
            # as it is when each Sync is waited for)
            with conn.transaction(), conn.pipeline() as pipe:
                sync = psycopg_queue_sync(pipe)
                cursors = []
                for i in todo:
                    cursors.append(
                        conn.execute(
                            sql[(entries[i][1] is not None, True)],
                            _params(entries[i][0], texts[i], entries[i][1], entries[i][2]),
                        )
                    )
                    sync()
                for lease in releases:
                    conn.execute(_RELEASE, {"c": lease.channel_id, "t": lease.token})
                    sync()
            return [cur.fetchone() is not None for cur in cursors]

        runs = sorted({entries[i][0].channel_id for i in todo})
        try:
            written = self._attempt(write, runs[0] if len(runs) == 1 else None, "write the WAL")
        except WalError as err:
            for i in todo:
                results[i] = err
            return results
        for i, ok in zip(todo, written, strict=True):
            if ok:
                continue
            envelope, lease, follows = entries[i]
            cid = envelope.channel_id
            try:
                if self._written(envelope.envelope_id, cid, texts[i]):
                    continue  # an earlier try committed it (its answer was lost)
                if lease is None or self._query(
                    "SELECT 1 FROM flowc_wal WHERE envelope_id = %s",
                    (envelope.envelope_id,),
                    cid,
                    "read the WAL",
                ):
                    results[i] = WalError(f"duplicate envelope id {envelope.envelope_id!r}")
                else:
                    results[i] = self._refusal(envelope, lease, follows)
            except WalError as err:
                results[i] = err
        return results

    def writer(self) -> PgStore:
        """A store of the same database on a connection of its own (what a worker's group
        commit writes through, in a thread of its own)."""
        return PgStore(
            self.url, connect_timeout=self._connect_timeout, notify_appends=self.notify_appends
        )

    def _written(self, envelope_id: str, channel_id: str, text: str) -> bool:
        """Whether exactly this envelope is in the WAL already (never, with the test
        hook's ``retry`` guard off: see :func:`_disabled_guard`)."""
        if self._off == "retry":
            return False
        rows = self._query(
            "SELECT channel_id, envelope FROM flowc_wal WHERE envelope_id = %s",
            (envelope_id,),
            channel_id,
            "read the WAL",
        )
        return bool(rows) and rows[0][0] == channel_id and rows[0][1] == text

    def read(self, channel_id: str) -> Iterator[Envelope]:
        if not self._tables:
            return iter(())
        rows = self._query(
            "SELECT seq, envelope FROM flowc_wal WHERE channel_id = %s ORDER BY seq",
            (channel_id,),
            channel_id,
            "read the WAL",
        )
        return iter(decode_rows(self.path, channel_id, rows))

    def read_page(self, channel_id: str, after: int, limit: int) -> list[tuple[int, Envelope]]:
        """At most ``limit`` of the run's envelopes whose ``seq`` is past ``after`` (0: from
        the first), in order, each with its ``seq`` (as :meth:`SqliteStore.read_page
        <flowc.runtime.wal.SqliteStore.read_page>`)."""
        if not self._tables:
            return []
        rows = self._query(
            "SELECT seq, envelope FROM flowc_wal WHERE channel_id = %s AND seq > %s "
            "ORDER BY seq LIMIT %s",
            (channel_id, after, limit),
            channel_id,
            "read the WAL",
        )
        envelopes = decode_rows(self.path, channel_id, rows)
        return [(int(row[0]), env) for row, env in zip(rows, envelopes, strict=True)]

    def links(self, channel_id: str) -> list[tuple[str, str | None]]:
        if not self._tables:
            return []
        rows = self._query(
            "SELECT envelope_id, follows FROM flowc_wal WHERE channel_id = %s ORDER BY seq",
            (channel_id,),
            channel_id,
            "read the WAL",
        )
        return [(row[0], row[1]) for row in rows]

    def channel_ids(self) -> list[str]:
        if not self._tables:
            return []
        rows = self._query(
            "SELECT channel_id FROM flowc_wal GROUP BY channel_id ORDER BY MIN(seq)",
            (),
            None,
            "read the WAL",
        )
        return [row[0] for row in rows]

    def open_runs(self) -> list[tuple[str, Lease | None]]:
        """Every run a hub opened that has no close yet and did not stall (its last
        record is not ``flowc.run.stalled``), oldest first, with its live lease (``None``
        when the run is free to take: never leased, released, expired, or held by a dead
        process on this host). What a worker looks for."""
        if not self._tables:
            return []
        rows = self._query(
            f"SELECT l.channel_id, {_LEASE_COLUMNS} FROM flowc_lease l "
            f"WHERE {_OPEN_RUN} {_OLDEST_FIRST}",
            (),
            None,
            "read the runs' leases",
        )
        out: list[tuple[str, Lease | None]] = []
        for cid, holder, token, expires, live in rows:
            lease = Lease(cid, holder, int(token), float(expires))
            live = live and self._off != "expiry"  # the test hook: every lease expired
            out.append((cid, lease if live and holder_alive(holder) is not False else None))
        return out

    # ── leases ──────────────────────────────────────────────────────────────────

    def _lease_row(self, channel_id: str) -> tuple[Lease, bool] | None:
        """The run's lease row and whether it is unexpired by the database's clock."""
        if not self._tables:
            return None
        rows = self._query(
            f"SELECT {_LEASE_COLUMNS} FROM flowc_lease WHERE channel_id = %s",
            (channel_id,),
            channel_id,
            "read its lease",
        )
        if not rows:
            return None
        holder, token, expires, live = rows[0]
        return Lease(channel_id, holder, int(token), float(expires)), bool(live)

    def _refuse_if_held(self, channel_id: str, current: Lease, live: bool, holder: str) -> None:
        """A :class:`LeaseError` when another live process holds the run's live lease."""
        if (
            live
            and current.holder != holder
            and holder_alive(current.holder) is not False
            and self._off != "expiry"
        ):
            raise LeaseError(
                _held_message(channel_id, current.holder, current.expires_at),
                channel_id,
                current.holder,
            )

    def _end_stalled_locker(self, conn: psycopg.Connection[Any], channel_id: str) -> bool:
        """End the database session that keeps the row of the run's EXPIRED lease locked
        while it waits for its client since before the lease ran out; whether one was
        ended.

        Such a session belongs to a holder cut off in the middle of a transaction: the
        server received a statement (a fenced append that locked the row) but not the
        message that ends it (the Sync of the extended protocol), so it counts the
        session as running a statement (``active``, waiting to read from the client), not
        as idle in its transaction, and ``idle_in_transaction_session_timeout`` never
        ends it; nor does anything else while the connection seems alive (a proxy, a
        pooler or a NAT keeps it so). Nobody could take the run over. Ending the session
        rolls its transaction back: the holder's write was checked under a lease that
        has since expired, and its retry is refused by the new lease's token (a group
        commit's other runs are written again by that retry).

        Only such a session is ended: one of flowc's (its ``application_name``) in this
        database and of this role, whose transaction locked the row (the row's ``xmax``:
        flowc locks its lease rows only ``FOR UPDATE``, outside savepoints, so ``xmax`` is
        that transaction's id), the lease expired by the database's clock, and the
        session waiting for its client (or idle in its transaction) since before the
        expiry and for at least :data:`_STALLED_MS` (a healthy writer's pause between two
        statements is far shorter). Sessions of other roles are not seen (their state is
        hidden) and are left alone, as is everything when the server refuses the call.
        The session is signalled, not waited for: it ends within milliseconds, which the
        take's own waits for the row (:func:`_lock_wait_ms`, up to three) cover; if it has
        not ended by then, the take is refused as busy and tried again later."""
        try:
            rows = conn.execute(
                "SELECT pg_terminate_backend(a.pid) FROM flowc_lease l "
                "JOIN pg_stat_activity a ON a.backend_xid = l.xmax "
                "WHERE l.channel_id = %s AND l.expires_at < clock_timestamp() "
                "AND a.pid <> pg_backend_pid() AND a.datname = current_database() "
                "AND a.usename = current_user AND a.application_name = 'flowc' "
                "AND a.state_change < l.expires_at "
                "AND a.state_change < clock_timestamp() - make_interval(secs => %s) "
                "AND (a.state = 'idle in transaction' "
                "OR (a.state = 'active' AND a.wait_event = 'ClientRead'))",
                (channel_id, _STALLED_MS / 1000),
            ).fetchall()
        except self._psycopg.Error as err:
            log.debug("%s: run %s: not ending a session (%s)", self.path, channel_id, err)
            if conn.closed or conn.broken:
                raise  # the connection is lost: the caller's retry handles that
            return False
        ended = any(row[0] for row in rows)
        if ended:
            log.warning(
                "%s: run %s: ended the database session that kept its expired lease "
                "locked while waiting for its cut-off client",
                self.path,
                channel_id,
            )
        return ended

    def acquire(self, channel_id: str, holder: str, seconds: float = LEASE_SECONDS) -> Lease:
        # a lease another process holds is refused on a plain read, before anything is
        # locked: a process that locked a live lease's row and then was cut off (between
        # the statements of its take) would hold up its holder's renewals until the
        # server ended its session, and the holder would lose the run, and every other
        # run its stalled heartbeat did not renew in time
        seen = self._lease_row(channel_id)
        if seen is not None:
            self._refuse_if_held(channel_id, *seen, holder)
        tries = 0

        def take(conn: psycopg.Connection[Any]) -> tuple[Any, Any]:
            nonlocal tries
            tries += 1
            if tries > 1:
                # tried again on a new connection: the first try may have committed and
                # its answer been lost with the connection; the lease it took is ours,
                # and taking it again would log a second take (and a token more)
                token, expires = mine(conn)
                if token is not None:
                    return token, expires
            try:
                return take_locked(conn)
            except self._psycopg.errors.LockNotAvailable:
                if self._end_stalled_locker(conn, channel_id):
                    for _ in range(3):  # the ended session lets the row go in milliseconds
                        with contextlib.suppress(self._psycopg.errors.LockNotAvailable):
                            return take_locked(conn)
                # another session is inside its own take of this run (or is frozen
                # there, cut off from us, until the server ends it): it is theirs to
                # have or to lose, and this process must not wait for it
                raise LeaseBusy(
                    f"run {channel_id} is being taken by another process right now",
                    channel_id,
                    None,
                ) from None

        def mine(conn: psycopg.Connection[Any]) -> tuple[Any, Any]:
            """When this holder took the run's live lease since the read above (a token
            past the one read then): its token and expiry, the lease renewed in the same
            statement (the reconnection may have used much of it); else ``(None, None)``."""
            before = seen[0].token if seen is not None else 0
            row = conn.execute(
                "UPDATE flowc_lease SET expires_at = clock_timestamp() + make_interval(secs => %s) "
                "WHERE channel_id = %s AND holder = %s AND token > %s "
                "AND expires_at > clock_timestamp() "
                "RETURNING token, extract(epoch FROM expires_at)::float8",
                (seconds, channel_id, holder, before),
            ).fetchone()
            return (row[0], row[1]) if row is not None else (None, None)

        def take_locked(conn: psycopg.Connection[Any]) -> tuple[Any, Any]:
            with conn.transaction():
                # no wait for the disk: a lease taken is checked by every append, and an
                # append's durable commit makes the commits before it durable too; a
                # lease lost with a crash of the server was never written with, and its
                # holder's next append is refused
                # no long wait for the run's lease row either: a session that locked it
                # and was then cut off keeps it locked until the server ends that session
                # (``idle_in_transaction_session_timeout``, longer than a short lease),
                # and a worker waiting for it here would stop its own event loop, miss
                # the heartbeats of every run it holds, and lose them all
                # (both as SET LOCAL, in one statement: one round trip fewer per take)
                conn.execute(
                    "SELECT set_config('synchronous_commit', 'off', true), "
                    "set_config('lock_timeout', %s, true)",
                    (f"{_lock_wait_ms(seconds)}ms",),
                )
                conn.execute(
                    "INSERT INTO flowc_lease (channel_id, holder, token, expires_at) "
                    "VALUES (%s, '', 0, '-infinity') ON CONFLICT (channel_id) DO NOTHING",
                    (channel_id,),
                )
                conn.execute(
                    "SELECT 1 FROM flowc_lease WHERE channel_id = %s FOR UPDATE", (channel_id,)
                )
                # read once the row is ours: what a locking SELECT computes, it computes
                # before it waits for the lock
                current_holder, _, expires, live = conn.execute(
                    f"SELECT {_LEASE_COLUMNS} FROM flowc_lease WHERE channel_id = %s", (channel_id,)
                ).fetchone()  # type: ignore[misc]
                self._refuse_if_held(
                    channel_id, Lease(channel_id, current_holder, 0, float(expires)), live, holder
                )
                taken = conn.execute(
                    "UPDATE flowc_lease SET holder = %s, token = token + 1, "
                    "expires_at = clock_timestamp() + make_interval(secs => %s) "
                    "WHERE channel_id = %s "
                    "RETURNING token, extract(epoch FROM expires_at)::float8",
                    (holder, seconds, channel_id),
                ).fetchone()
                # the lease's history (what a checker of the runs' histories reads): who
                # took which token when the run's log ended where (the row lock orders
                # this after every append of the tokens before)
                state = "live" if live else "free" if expires == float("-inf") else "expired"
                conn.execute(
                    "INSERT INTO flowc_lease_log (channel_id, token, holder, after_seq, "
                    "previous, previous_state) "
                    "SELECT %s, %s, %s, COALESCE(MAX(seq), 0), %s, %s FROM flowc_wal "
                    "WHERE channel_id = %s",
                    (channel_id, taken[0], holder, current_holder, state, channel_id),  # type: ignore[index]
                )
                return taken  # type: ignore[return-value]

        token, expires = self._attempt(take, channel_id, "take its lease")
        return Lease(channel_id, holder, int(token), float(expires))

    def claim(
        self,
        holder: str,
        limit: int,
        seconds: float = LEASE_SECONDS,
        *,
        skip: Collection[str] = (),
        label: str | None = None,
    ) -> list[Claimed]:
        """Take the leases of up to ``limit`` open runs nobody holds (never leased,
        released or expired by the database's clock), oldest first, in ONE transaction,
        with each run's WAL as it stands once its lease is ours: what a worker claims.

        Runs named in ``skip``, closed runs, runs whose last record is their stall and
        (given ``label``) runs whose opening has no such label are left out; so is a run
        whose lease row another session has locked (``FOR UPDATE SKIP LOCKED``: a take or
        an append under way): two workers claiming at once take different runs, and
        neither waits for the other. Each take is logged as :meth:`acquire` logs it. A
        run held by a dead process on this host (its lease not yet expired) is not
        taken here: :meth:`acquire` takes it. A run ``holder`` itself holds and did not
        name in ``skip`` is taken again: a claim of this holder whose answer was lost (its
        commit went through, then the connection broke) left it held by nobody driving it."""
        if limit < 1 or not self._tables:
            return []
        expired = "TRUE" if self._off == "expiry" else "l.expires_at <= clock_timestamp()"
        free = f"({expired} OR l.holder = %(h)s)"
        labelled = (
            "AND (SELECT w.envelope::jsonb #> '{event_data,metadata,labels}' ? %(label)s "
            "FROM flowc_wal w WHERE w.channel_id = l.channel_id ORDER BY w.seq LIMIT 1) "
            if label is not None
            else ""
        )

        def take(conn: psycopg.Connection[Any]) -> list[Claimed]:
            # one transaction in one pipeline: the locking SELECT is one round trip; the
            # rest (the takes, the WALs, the commit) go out at once as a second, each
            # statement followed by a Sync (as a group commit's, so that a claimer cut
            # off between them is ended by the server's idle timeout, not left holding
            # the rows while its connection seems alive)
            with conn.pipeline() as pipe, conn.transaction():
                sync = psycopg_queue_sync(pipe)
                ids = [
                    row[0]
                    for row in conn.execute(
                        _CLAIMABLE.format(free=free, labelled=labelled),
                        {"skip": list(skip), "n": limit, "label": label, "h": holder},
                    ).fetchall()
                ]
                if not ids:
                    return []
                # the rows are ours now: these statements see every append committed
                # before (a locking SELECT computes what it returns before it locks);
                # no wait for the disk, as in :meth:`acquire`
                conn.execute("SELECT set_config('synchronous_commit', 'off', true)")
                sync()
                taken = conn.execute(
                    _CLAIM.format(free=free), {"ids": ids, "h": holder, "s": seconds}
                )
                sync()
                wal = conn.execute(
                    "SELECT channel_id, seq, envelope, envelope_id, follows FROM flowc_wal "
                    "WHERE channel_id = ANY(%s) ORDER BY channel_id, seq",
                    (ids,),
                )
                sync()
            leases = {row[0]: (int(row[1]), float(row[2])) for row in taken.fetchall()}
            rows: dict[str, list[tuple[Any, ...]]] = {}
            for row in wal.fetchall():
                rows.setdefault(row[0], []).append(row[1:])
            out = []
            for cid in ids:  # oldest first
                if cid not in leases:
                    continue
                token, expires = leases[cid]
                got = rows.get(cid, [])
                lease = Lease(cid, holder, token, expires)
                try:
                    envs = decode_rows(self.path, cid, [(r[0], r[1]) for r in got])
                except WalError as err:  # a damaged row: said for this run alone
                    out.append(Claimed(lease, [], [], err))
                    continue
                out.append(Claimed(lease, envs, [(r[2], r[3]) for r in got]))
            return out

        return self._attempt(take, None, "claim runs")

    def renew(self, lease: Lease, seconds: float = LEASE_SECONDS) -> Lease:
        if self._off == "heartbeat":
            return lease  # the test hook: nothing renewed
        rows = self._query(
            "UPDATE flowc_lease SET expires_at = clock_timestamp() + make_interval(secs => %s) "
            "WHERE channel_id = %s AND (token = %s OR %s) "
            "RETURNING extract(epoch FROM expires_at)::float8",
            (seconds, lease.channel_id, lease.token, self._off == "fence"),
            lease.channel_id,
            "renew its lease",
        )
        if not rows:
            current = self._lease_row(lease.channel_id)
            raise _lost(lease, current[0] if current is not None else None)
        return attrs.evolve(lease, expires_at=float(rows[0][0]))

    def release(self, lease: Lease) -> None:
        self._query(
            _RELEASE,
            {"c": lease.channel_id, "t": lease.token},
            lease.channel_id,
            "release its lease",
        )

    def lease_of(self, channel_id: str) -> Lease | None:
        current = self._lease_row(channel_id)
        if current is None or not current[1] or holder_alive(current[0].holder) is False:
            return None
        return current[0]

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


def parse_payload(payload: str) -> dict[str, Any]:
    """A ``flowc_wal`` notification's payload as a dict (``run``, ``seq``, ``envelope``,
    ``event``)."""
    value = json.loads(payload)
    if not isinstance(value, dict):
        raise ValueError(f"not a flowc_wal payload: {payload!r}")
    return value
