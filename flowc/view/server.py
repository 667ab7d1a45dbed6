"""The server of ``flowc view``: a Starlette application (served by uvicorn) that shows one
run database, read-only.

Every request goes through :class:`Guard` first:

- the ``Host`` header must name this server on the loopback interface (``127.0.0.1``,
  ``localhost`` or ``[::1]`` with its port), which a page of another site cannot make a
  browser send to us by renaming a domain to 127.0.0.1 (DNS rebinding);
- a request another site's page makes is refused: an ``Origin`` other than ours, or a
  ``Sec-Fetch-Site`` other than ``same-origin`` or ``none`` (typed in the address bar);
- the token must come with it, as ``?token=...`` (the URL the command prints) or as the
  cookie the first visit with the token sets (``HttpOnly``, ``SameSite=Strict``);
- only ``GET`` and ``HEAD``, but for the one request that writes: ``POST
  /api/run/ID/fork/N`` (start a new run from turn N of a run, ``flowc fork``), which
  must also carry our ``Origin`` (a browser sends it with every ``POST``), no
  ``Sec-Fetch-Site`` but ``same-origin``, and a JSON body (``application/json``, which
  another site's form cannot send, nor its script without a preflight we never answer).

Refusals are ``403``. Every answer forbids inline scripts (a Content-Security-Policy of
``script-src 'self'``), framing and sniffing, and is not cached.

Routes: ``/`` (the runs list), ``/run/ID`` (a run's page; 404 for an unknown run),
``/api/runs``, ``/api/run/ID`` (the run's summary and starting state),
``/api/run/ID/diagram.svg``, ``/api/run/ID/findings`` (the checker's findings on the
run's stored graph and what they mark on the diagram: :mod:`flowc.view.findings`),
``/api/run/ID/events`` (the turns, as server-sent events
whose id is the turn's number: a reconnecting page sends ``Last-Event-ID`` and gets the
turns after it), ``/api/run/ID/turns?after=N`` (the turns committed after turn N but the
last :data:`STREAMED_TAIL`, in one answer: lines of JSON, each an array of turns as the
event stream sends them; a page takes a long run's backlog so, then streams from its
last turn), ``/api/run/ID/why/N`` (why turn N went where it went: the
``flowc log RUN --why N --json`` document), ``/api/run/ID/scenario/N`` (the scenario block
of turns 1 to N: ``flowc log RUN --scenario-upto N``, as text), ``POST
/api/run/ID/fork/N`` (its body a script: a new run from turn N, as ``flowc fork``; the
only request that opens the database for writing, and it writes only the new run),
``/static/...``.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import os
import re
import secrets
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    MutableMapping,
)
from pathlib import Path
from typing import Any, Protocol

import attrs
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from flowc.runtime.adapters.base import ProtocolError
from flowc.runtime.envelope import Envelope
from flowc.runtime.failures import PluginFailed
from flowc.runtime.script import Script, ScriptError, parse_script
from flowc.runtime.stores import open_store
from flowc.runtime.transcript import (
    DAMAGED,
    DAMAGED_STATUS,
    PLUGIN_FAILED,
    READ_ERRORS,
    TranscriptFolder,
    run_error_text,
)
from flowc.runtime.wal import DamagedRow, WalError, WalStore
from flowc.view.broken import Break, Verdicts
from flowc.view.feed import PAGE_ROWS, ListedRun, RunView, TurnFeed, read_page, status_of

__all__ = ["POLL_SECONDS", "Guard", "ViewSettings", "make_app", "new_token"]

STATIC = Path(__file__).parent / "static"

#: how often a stream looks for new turns in the store (SQLite has no notifications):
#: a committed turn reaches an open page within this, plus the page's own drawing
POLL_SECONDS = 0.1
#: how often a stream looks whether the run's writer is still there (its lease)
STATUS_SECONDS = 1.0
#: a comment sent on an idle stream this often, so proxies keep it open
KEEPALIVE_SECONDS = 15.0
#: the runs whose view (target and diagram) and SVG the server keeps
CACHED_RUNS = 16
#: the runs list's feeds kept besides those of the runs a page follows (an open event
#: stream): the runs that least recently committed more lose theirs first, and are read
#: again from the start if they commit more (:class:`_Listing`)
LISTED_FEEDS = 32
#: the runs whose marks the why answers keep (:class:`_Explained`)
EXPLAINED_RUNS = 16
#: the turns between two folders kept of a run explained: explaining turn N folds at most
#: this many turns, whatever N
MARK_TURNS = 100
#: the rows read at a time when explaining a turn from a mark (about a mark's worth)
MARK_PAGE_ROWS = 64
#: the last turns of a run's backlog that ``/api/run/ID/turns`` leaves to the event
#: stream (a run with no more than these has all its turns streamed, as they come)
STREAMED_TAIL = 100

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: the answers' headers: no inline script, no framing, no sniffing, no caching
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}

_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
#: the one path a ``POST`` may have: start a new run from turn N of a run
_FORK_PATH = re.compile(r"/api/run/.+/fork/[0-9]+")
#: the largest script a fork's request may carry
FORK_BODY_BYTES = 1 << 20


def new_token() -> str:
    """A random token: 32 bytes from the OS's generator, URL-safe."""
    return secrets.token_urlsafe(32)


class ViewSettings:
    """What the application serves: the database (a SQLite path or PostgreSQL URL) and
    the token; ``poll`` is :data:`POLL_SECONDS` unless a test asks otherwise, and
    ``max_states`` the checker's bound on the states of a run's graph (None: the
    checker's default, as ``flowc check``'s)."""

    def __init__(
        self, db: str, token: str, *, poll: float = POLL_SECONDS, max_states: int | None = None
    ) -> None:
        self.db = db
        self.token = token
        self.poll = poll
        self.max_states = max_states
        #: whether the server is stopping (``flowc view`` sets it to its server's flag):
        #: each open stream then ends by itself, within a poll, rather than being
        #: cancelled mid-answer when the server's grace period runs out
        self.stopping: Callable[[], bool] = lambda: False

    def open(self) -> WalStore:
        return open_store(self.db, readonly=True)

    def open_for_fork(self) -> WalStore:
        """The store opened for writing: only to write a new run (:func:`_fork`)."""
        return open_store(self.db)


def _page(status: int, title: str, message: str) -> HTMLResponse:
    """A small page of its own (no script) for a refusal or an unknown run."""
    body = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
        f"{html.escape(title)}</title></head><body><h1>{html.escape(title)}</h1>"
        f"<p>{html.escape(message)}</p></body></html>"
    )
    return HTMLResponse(body, status_code=status)


class Guard:
    """The ASGI middleware that refuses any request without the token, from another
    site, to another host name, or that would change something but the one request that
    starts a new run from a turn, itself held to more (see the module's docstring); it
    adds :data:`SECURITY_HEADERS` to every answer."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    def cookie_name(self, scope: Scope) -> str:
        # cookies are shared by every port of a host: one name per port
        server = scope.get("server") or ("", 0)
        return f"flowc_view_{server[1]}"

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        request = Request(scope)
        headers = request.headers
        host = headers.get("host", "")
        server = scope.get("server") or ("", 0)
        name, _, port = host.rpartition(":")
        if name not in _LOOPBACK or port != str(server[1]):
            return 403, f"this server answers to 127.0.0.1:{server[1]} only"
        origin = headers.get("origin")
        if origin is not None and origin != f"http://{host}":
            return 403, "a request from another site is refused"
        site = headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            return 403, "a request from another site is refused"
        if request.method not in ("GET", "HEAD"):
            if request.method != "POST" or not _FORK_PATH.fullmatch(request.url.path):
                return 405, "this server only reads (but for starting a new run from a turn)"
            if origin is None or (site is not None and site != "same-origin"):
                return 403, "a request that writes must come from this server's own page"
            kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind != "application/json":
                return 415, "a new run's script is sent as JSON (application/json)"
        if not self._token_ok(request.query_params.get("token")) and not self._token_ok(
            request.cookies.get(self.cookie_name(scope))
        ):
            return 403, "the token is missing or wrong: open the URL flowc view printed"
        return None

    def _token_ok(self, given: str | None) -> bool:
        return given is not None and secrets.compare_digest(
            given.encode("utf-8", "replace"), self.token.encode("utf-8")
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # no route takes one: refused before it is read
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        refused = self.refusal(scope)
        if refused is not None:
            status, why = refused
            response = _page(status, "Refused", why)
            response.headers.update(SECURITY_HEADERS)
            await response(scope, receive, send)
            return
        request = Request(scope)
        set_cookie = self._token_ok(request.query_params.get("token")) and not self._token_ok(
            request.cookies.get(self.cookie_name(scope))
        )
        cookie = f"{self.cookie_name(scope)}={self.token}; Path=/; HttpOnly; SameSite=Strict"

        async def guarded_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                for key, value in SECURITY_HEADERS.items():
                    headers.append((key.encode(), value.encode()))
                if set_cookie:
                    headers.append((b"set-cookie", cookie.encode()))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, guarded_send)


class _Runs:
    """The views (target, diagram) and drawings of the runs last asked for, at most
    :data:`CACHED_RUNS`: a run's stored graph never changes."""

    def __init__(self, settings: ViewSettings) -> None:
        self.settings = settings
        self.views: OrderedDict[str, RunView] = OrderedDict()
        self.svgs: OrderedDict[str, str] = OrderedDict()
        #: the checker's findings on each run's stored graph (:mod:`flowc.view.findings`)
        self.findings_of: OrderedDict[str, dict[str, Any]] = OrderedDict()
        # the requests' threads share the caches
        self.lock = threading.Lock()
        # one checker per run at a time: a second ask for a run waits for the first's answer
        self.checking: dict[str, threading.Lock] = {}

    def _keep(self, cache: OrderedDict[str, Any], key: str, value: Any) -> None:
        with self.lock:
            cache[key] = value
            cache.move_to_end(key)
            while len(cache) > CACHED_RUNS:
                cache.popitem(last=False)

    def view(self, run_id: str) -> RunView:
        """The run's view; a 404 for a run the database does not have."""
        with self.lock:
            found = self.views.get(run_id)
        if found is not None:
            return found
        store = self.settings.open()
        try:
            view = RunView.load(store, run_id) if run_id in store.channel_ids() else None
            if view is not None:
                from flowc.runtime.adapters.workflow import WorkflowAdapter

                # the runtime folds the run's rows as it would run them: a graph it
                # refuses here (a custom condition no plugin registered) is said once, on
                # the page, not by each stream that tries to read the turns
                WorkflowAdapter(None).initial_state(view.metadata)
        except DAMAGED as err:  # (a bug is a 500; the store failing, a 503)
            raise HTTPException(422, run_error_text(run_id, err)) from None
        except WalError as err:
            raise HTTPException(503, run_error_text(run_id, err)) from None
        finally:
            store.close()
        if view is None:
            raise HTTPException(404, f"no run {run_id!r} in this database")
        self._keep(self.views, run_id, view)
        return view

    def svg(self, run_id: str) -> str:
        with self.lock:
            found = self.svgs.get(run_id)
        if found is not None:
            return found
        from flowc.compiler.render.rendering import Rendering

        svg = Rendering(self.view(run_id).diagram).svg()
        self._keep(self.svgs, run_id, svg)
        return svg

    def findings(self, run_id: str) -> dict[str, Any]:
        """The checker's findings on the run's stored graph, worked out once (a run's
        stored graph never changes) and kept as its drawing is."""
        from flowc.view.findings import run_findings

        with self.lock:
            found = self.findings_of.get(run_id)
            one = self.checking.setdefault(run_id, threading.Lock())
        if found is not None:
            return found
        with one:
            try:
                with self.lock:
                    found = self.findings_of.get(run_id)
                if found is None:
                    found = run_findings(self.view(run_id), self.settings.max_states)
                    self._keep(self.findings_of, run_id, found)
            finally:
                with self.lock:  # (a newer caller's lock, made since, stays)
                    if self.checking.get(run_id) is one:
                        del self.checking[run_id]
        return found


class _Listing:
    """The runs list, read on from one listing to the next: each run's
    :class:`~flowc.view.feed.ListedRun` (its line of the list and the row it was read up
    to) and, for a run that commits more, the feed that reads on from that row (the
    run's view and the fold's state, far more than its line).

    The feeds kept are those of the runs a page follows (:meth:`follow`, an open event
    stream: a run watched is one whose line changes from one listing to the next) and
    at most ``limit`` others, those whose run last committed more kept longest (a run
    that closed long ago needs its feed no more); so a server over thousands of runs
    does not keep a feed, a view and a diagram for each. A run whose feed was let go is
    listed from its line while it commits nothing (its status looked up again); once it
    commits more, a feed is made again and reads it from its start, which folds it to
    the same state as the feed that read it on page by page."""

    def __init__(
        self, settings: ViewSettings, limit: int = LISTED_FEEDS, verdicts: Verdicts | None = None
    ) -> None:
        self.settings = settings
        self.limit = limit
        #: whether each run's WAL is one a hub could have written (:mod:`flowc.view.broken`)
        self.verdicts = verdicts or Verdicts()
        self.feeds: OrderedDict[str, TurnFeed] = OrderedDict()
        self.lines: dict[str, ListedRun] = {}
        #: the runs that committed more since the listing before (read on in this one)
        self.moved: set[str] = set()
        #: the runs a page follows, with how many streams follow each
        self.followed: Counter[str] = Counter()
        # one listing at a time; the feeds and lines are the listing's
        self.lock = threading.Lock()
        # the streams (the event loop's thread) never wait for a listing
        self._follow_lock = threading.Lock()

    def follow(self, run_id: str) -> None:
        """A stream of the run opened: its feed, if one is kept, is kept while it is open."""
        with self._follow_lock:
            self.followed[run_id] += 1

    def unfollow(self, run_id: str) -> None:
        """A stream of the run closed: its feed may be let go again (now, unless a listing
        is under way, which lets it go when it ends)."""
        with self._follow_lock:
            self.followed[run_id] -= 1
            if self.followed[run_id] <= 0:
                del self.followed[run_id]
        if self.lock.acquire(blocking=False):
            try:
                self._let_go()
            finally:
                self.lock.release()

    def _let_go(self) -> None:
        """Let go the feeds of closed runs (their line is all the list needs: a closed run
        commits nothing more) and, past ``limit``, those of the runs that least recently
        committed more; never a followed run's, nor that of a run that committed since the
        last listing (so a listing reads only new rows however many runs are live, and
        what is kept is bounded by the live runs plus ``limit``)."""
        with self._follow_lock:
            followed = set(self.followed)
        others = []
        for run_id, feed in list(self.feeds.items()):
            if run_id in followed:
                continue
            if feed.closed is not None:
                del self.feeds[run_id]
            elif run_id not in self.moved:
                others.append(run_id)
        for run_id in others[: max(0, len(others) - self.limit)]:
            del self.feeds[run_id]

    def _line(self, store: WalStore, run_id: str) -> ListedRun | None:
        """The run read on to its last committed row (``None``: the channel is no run)."""
        line = self.lines.get(run_id)
        feed = self.feeds.get(run_id)
        if feed is not None:
            before = feed.after
            feed.drain(store)
            if feed.after != before:  # it read on: the run last to change is kept longest
                self.feeds.move_to_end(run_id)
                self.moved.add(run_id)
            return ListedRun.of(feed)
        if line is not None and not line.changed(store):
            return line
        view = RunView.load(store, run_id)
        if view is None:
            return None
        feed = self.feeds[run_id] = TurnFeed(view)
        feed.drain(store)
        self.moved.add(run_id)
        self._let_go()
        return ListedRun.of(feed)

    def list(self) -> list[dict[str, Any]]:
        """Every run's line, in the store's order; a run that cannot be read, or whose WAL
        is none a hub could have written, is listed ``damaged`` with the error (as ``flowc
        log`` says it), and one whose intact records a plugin fails on now
        ``plugin-failed`` with the plugin's failure (each read from its start at the next
        listing)."""
        with self.lock:
            self.moved = set()
            store = self.settings.open()
            try:
                out = []
                lines: dict[str, ListedRun] = {}
                for run_id in store.channel_ids():
                    try:
                        line = self._line(store, run_id)
                        found = line.summary(store) if line is not None else None
                        broken = None
                        if line is not None:
                            broken = self.verdicts.upto_rows(store, run_id, line.rows)
                        if broken is not None:
                            found = {
                                "run_id": run_id,
                                "status": DAMAGED_STATUS,
                                "error": broken.error,
                            }
                    except (*READ_ERRORS, PluginFailed) as err:
                        self.feeds.pop(run_id, None)
                        failed = isinstance(err, PluginFailed)
                        found = {
                            "run_id": run_id,
                            "status": PLUGIN_FAILED if failed else DAMAGED_STATUS,
                            "error": run_error_text(run_id, err),
                        }
                    else:
                        if line is not None:
                            lines[run_id] = line
                    if found is not None:
                        out.append(found)
                self.lines = lines  # a run no longer in the store is forgotten
                self._let_go()
                return out
            finally:
                store.close()


class _Kept:
    """A run explained: a folder that folded its rows up to row key ``after`` and a copy
    of it every :data:`MARK_TURNS` turns, ``marks`` of ``(row key, folder)``. No row is
    kept: explaining turn N reads again the rows from the last mark before it."""

    def __init__(self) -> None:
        self.after = 0
        self.folder: TranscriptFolder | None = None
        self.marks: list[tuple[int, TranscriptFolder]] = []

    def fold_to(self, store: WalStore, run_id: str, n: int) -> None:
        """Fold the run on until turn ``n`` (or its last committed row), marking every
        :data:`MARK_TURNS` turns."""
        from flowc.runtime.adapters.workflow import WorkflowAdapter

        folder = self.folder
        if folder is None:
            folder = self.folder = TranscriptFolder(WorkflowAdapter(None))
        while folder.turns < n and folder.close is None:
            page = read_page(store, run_id, self.after, PAGE_ROWS)
            if not page:
                return
            for key, env in page:
                record = folder.feed(env)
                self.after = key
                # no turn record is kept: explaining a turn needs the folder's state and
                # how many turns it folded, not the turns before (a mark holding them all
                # made the marks' memory grow with the square of the run's length)
                folder.forget()
                if record is not None and record.number % MARK_TURNS == 0:
                    self.marks.append((key, folder.copy(records=False)))
                if folder.turns >= n or folder.close is not None:
                    return

    def start_for(self, n: int) -> tuple[int, TranscriptFolder | None]:
        """Where explaining turn ``n`` can begin: the row key of the last mark before turn
        ``n`` and its folder (``(0, None)``: the start)."""
        best: tuple[int, TranscriptFolder | None] = (0, None)
        for key, mark in self.marks:
            if mark.turns >= n:
                break
            best = (key, mark)
        return best


def _rows(store: WalStore, run_id: str, after: int) -> Iterator[Envelope]:
    """The run's envelopes past row key ``after``, read a page at a time as they are
    wanted (a fold that stops at turn N reads no further)."""
    while page := read_page(store, run_id, after, MARK_PAGE_ROWS):
        yield from (env for _, env in page)
        after = page[-1][0]


class _Explained:
    """The runs last explained (``/why/N``), at most :data:`EXPLAINED_RUNS`, each with
    its marks (:class:`_Kept`), the least recently asked for dropped first. A run kept
    is folded on from its last row read: a live run's new turns are added. Rows are read
    again for each answer, from the mark before the turn: what is kept is a folded state
    per :data:`MARK_TURNS` turns, however long the runs (``/scenario/N`` reads turns 1
    to N, as it writes them)."""

    def __init__(self, settings: ViewSettings, limit: int = EXPLAINED_RUNS) -> None:
        self.settings = settings
        self.limit = limit
        self.runs: OrderedDict[str, _Kept] = OrderedDict()
        # one reader at a time: two asks for one run fold its new rows once
        self.lock = threading.Lock()

    def explain(self, run_id: str, n: int) -> dict[str, Any]:
        """``flowc log RUN --why N --json``'s document, folded from the last mark before
        turn ``n`` (from the run's start for the first turns)."""
        from flowc.runtime.why import explain_turn

        store = self.settings.open()
        try:
            with self.lock:
                kept = self.runs.pop(run_id, None) or _Kept()
                self.runs[run_id] = kept
                while len(self.runs) > self.limit:
                    self.runs.popitem(last=False)
                kept.fold_to(store, run_id, n)
                after, start = kept.start_for(n)
            return explain_turn(_rows(store, run_id, after), n, start=start).to_json()
        finally:
            store.close()

    def scenario(self, run_id: str, n: int) -> str:
        """``flowc log RUN --scenario-upto N``'s block, from the run's rows read as they
        are wanted."""
        from flowc.runtime.fork import scenario_upto

        store = self.settings.open()
        try:
            return scenario_upto(_rows(store, run_id, 0), n)
        finally:
            store.close()


def _sse(data: Any, event: str, event_id: int | None = None) -> str:
    """One server-sent event: its type, its id when it has one, its data as one line of
    JSON (a text's newlines are escaped in JSON, so they cannot end the event)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _after(request: Request) -> int:
    """The last turn the page has: ``Last-Event-ID`` (a reconnection), else ``?after=``;
    a value that is not a turn number (a whole number, at most 12 digits) is refused
    (400), never read as 0, which would send every turn again."""
    for name, given in (
        ("the Last-Event-ID header", request.headers.get("last-event-id")),
        ("?after=", request.query_params.get("after")),
    ):
        if given is None:
            continue
        if not re.fullmatch(r"[0-9]{1,12}", given.strip()):
            raise HTTPException(
                400, f"{name} must be a turn number (0 to 999999999999), not {given[:40]!r}"
            )
        return int(given)
    return 0


#: a route's handler
Endpoint = Callable[[Request], Awaitable[Response]]


def make_app(settings: ViewSettings) -> ASGIApp:
    """The application, guarded (:class:`Guard`). The routes are tried in this order: a
    run's answers (``/api/run/ID/...``) before ``/api/run/ID``, which would take them
    (a run's id may hold a ``/``)."""
    runs = _Runs(settings)
    # the runs list's state, kept from one listing to the next: a listing reads only the
    # rows committed since the last one
    listing = _Listing(settings)
    pages = _pages(runs)
    api = _run_api(settings, runs, listing)
    turns = _turn_api(settings, runs, listing.verdicts)
    app = Starlette(
        routes=[
            Route("/", pages.index),
            Route("/run/{run_id:path}", pages.run_page),
            Route("/api/runs", api.runs),
            Route("/api/run/{run_id:path}/diagram.svg", api.diagram),
            Route("/api/run/{run_id:path}/findings", api.findings),
            Route("/api/run/{run_id:path}/events", api.events),
            Route("/api/run/{run_id:path}/turns", api.backlog),
            Route("/api/run/{run_id:path}/ag-ui", api.agui),
            Route("/api/run/{run_id:path}/why/{n:int}", turns.why),
            Route("/api/run/{run_id:path}/scenario/{n:int}", turns.scenario),
            Route(
                "/api/run/{run_id:path}/fork/{n:int}",
                _fork_endpoint(settings, runs),
                methods=["POST"],
            ),
            Route("/api/run/{run_id:path}", api.run),
            Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
        ],
        exception_handlers={HTTPException: _not_found},
    )
    return Guard(app, settings.token)


def _static_page(name: str) -> Response:
    return HTMLResponse((STATIC / name).read_text(encoding="utf-8"))


async def _not_found(request: Request, exc: Exception) -> Response:
    """An unknown run or a run that cannot be read: JSON under ``/api/``, a page elsewhere."""
    assert isinstance(exc, HTTPException)
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
    title = "Not found" if exc.status_code == 404 else "Error"
    return _page(exc.status_code, title, str(exc.detail))


@attrs.frozen
class _Pages:
    """The handlers of the two pages (:func:`_pages`)."""

    index: Endpoint
    run_page: Endpoint


def _pages(runs: _Runs) -> _Pages:
    """The pages, static files whose script reads the API: the runs list, and a run's
    page (a 404 for a run the database does not have)."""

    async def index(request: Request) -> Response:
        return _static_page("runs.html")

    async def run_page(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        await run_in_threadpool(runs.view, run_id)
        return _static_page("run.html")

    return _Pages(index, run_page)


@attrs.frozen
class _RunApi:
    """The handlers of the runs list and of a run's summary, diagram and turns
    (:func:`_run_api`)."""

    runs: Endpoint
    run: Endpoint
    diagram: Endpoint
    #: the checker's findings on the run's stored graph (flowc.view.findings)
    findings: Endpoint
    events: Endpoint
    #: a long run's backlog in one answer (:func:`_backlog`)
    backlog: Endpoint
    #: the same turns as AG-UI protocol events (flowc.view.agui)
    agui: Endpoint


def _run_api(settings: ViewSettings, runs: _Runs, listing: _Listing) -> _RunApi:
    """The API the pages read: the runs list (read on from ``listing``), a run's summary
    and starting state, its diagram (SVG; a 503 without Graphviz or past the layout's
    budget) and its turns as server-sent events (the run followed in ``listing`` while
    the stream is open)."""

    def list_runs() -> list[dict[str, Any]]:
        return listing.list()

    async def api_runs(request: Request) -> Response:
        try:
            found = await run_in_threadpool(list_runs)
        except WalError as err:  # the store failed (a damaged run is listed as damaged)
            return JSONResponse({"error": str(err)}, status_code=503)
        return JSONResponse(found)

    async def api_run(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        view = await run_in_threadpool(runs.view, run_id)
        feed = TurnFeed(view)
        # the status comes with the stream, once it has read the run: a long run's page
        # does not wait for a second reading of it
        return JSONResponse(
            {
                "run_id": run_id,
                "flow": view.flow,
                "created_at": view.metadata.created_at,
                "speakers": [
                    {"name": name, "node": view.speaker_node(name)} for name in view.target.speakers
                ],
                "initial": feed.initial(),
                "forked_from": None if view.forked_from is None else view.forked_from.to_json(),
            }
        )

    async def diagram(request: Request) -> Response:
        from flowc.compiler.render.image import DotNotFoundError, LayoutError

        run_id = request.path_params["run_id"]
        await run_in_threadpool(runs.view, run_id)
        try:
            svg = await run_in_threadpool(runs.svg, run_id)
        except (DotNotFoundError, LayoutError) as err:
            return Response(str(err), status_code=503, media_type="text/plain")
        return Response(svg, media_type="image/svg+xml")

    async def findings(request: Request) -> Response:
        from flowc.compiler.render.rendering import CheckerUnavailableError

        run_id = request.path_params["run_id"]
        await run_in_threadpool(runs.view, run_id)
        try:
            found = await run_in_threadpool(runs.findings, run_id)
        except CheckerUnavailableError as err:
            return JSONResponse({"error": str(err)}, status_code=503)
        except MemoryError:
            return JSONResponse(
                {"error": "the checker ran out of memory on this graph"}, status_code=503
            )
        except DAMAGED as err:  # a stored graph or property flowc never writes
            return JSONResponse({"error": run_error_text(run_id, err)}, status_code=422)
        # (anything else is a bug in flowc or its checker: the server's 500)
        return JSONResponse(found)

    async def events(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        view = await run_in_threadpool(runs.view, run_id)
        after = _after(request)
        return StreamingResponse(
            _stream(settings, view, after, listing),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},
        )

    async def backlog(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        view = await run_in_threadpool(runs.view, run_id)
        return StreamingResponse(
            _backlog(settings, view, _after(request), listing.verdicts),
            media_type="application/x-ndjson",
            headers={"x-accel-buffering": "no"},
        )

    async def agui(request: Request) -> Response:
        from flowc.view.agui import AguiEncoder

        run_id = request.path_params["run_id"]
        view = await run_in_threadpool(runs.view, run_id)
        parent = None if view.forked_from is None else view.forked_from.to_json()
        encoder = AguiEncoder(run_id, view.target.humans, view.target.context_vars, parent)
        return StreamingResponse(
            _stream(settings, view, _after(request), listing, encoder),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},
        )

    return _RunApi(api_runs, api_run, diagram, findings, events, backlog, agui)


@attrs.frozen
class _TurnApi:
    """The handlers of a turn's explanation and scenario block (:func:`_turn_api`)."""

    why: Endpoint
    scenario: Endpoint


def _turn_api(settings: ViewSettings, runs: _Runs, verdicts: Verdicts) -> _TurnApi:
    """The answers about turn N of a run, from its rows (:class:`_Explained`): why it
    went where it went (``flowc log RUN --why N --json``) and the scenario block of turns
    1 to N (``flowc log RUN --scenario-upto N``, as text); neither of a turn whose records
    up to it are none a hub could have written (``verdicts``: refused as ``flowc log``
    refuses it)."""
    kept = _Explained(settings)

    def broken(run_id: str, n: int) -> Break | None:
        store = settings.open()
        try:
            return verdicts.upto_turn(store, run_id, n)
        finally:
            store.close()

    def explain(run_id: str, n: int) -> dict[str, Any]:
        return kept.explain(run_id, n)

    def scenario(run_id: str, n: int) -> str:
        return kept.scenario(run_id, n)

    async def turn_answer(request: Request, make: Callable[[str, int], Any]) -> Any:
        """``make(run_id, n)`` for the run and turn of the path; an answer with the error
        for a turn the run does not have (404) or cannot be explained or written (422)."""
        from flowc.runtime.why import TurnOutOfRange, WhyError

        run_id = request.path_params["run_id"]
        await run_in_threadpool(runs.view, run_id)
        n = request.path_params["n"]
        try:
            found = await run_in_threadpool(make, run_id, n)
        except TurnOutOfRange as err:
            return JSONResponse({"error": str(err)}, status_code=404)
        except (WhyError, PluginFailed, *READ_ERRORS) as err:  # (a plugin's failure: named)
            return JSONResponse({"error": run_error_text(run_id, err)}, status_code=422)
        refused = await run_in_threadpool(broken, run_id, n)
        if refused is not None:  # (checked after the turn was found, as `flowc log` does)
            return JSONResponse({"error": refused.error}, status_code=422)
        return found

    async def why(request: Request) -> Response:
        found = await turn_answer(request, explain)
        return found if isinstance(found, Response) else JSONResponse(found)

    async def scenario_block(request: Request) -> Response:
        found = await turn_answer(request, scenario)
        if isinstance(found, Response):
            return found
        return Response(found, media_type="text/plain; charset=utf-8")

    return _TurnApi(why, scenario_block)


class _PageEvents:
    """The events the run page reads (``/api/run/ID/events``): ``turn`` (each with its
    number as the SSE id), ``status`` and ``end``, each one JSON object."""

    def begin(self, after: int) -> str:
        # a page that loses the connection tries again after a second
        return "retry: 1000\n\n"

    def turn(self, event: dict[str, Any]) -> str:
        return _sse(event, "turn", event["n"])

    def status(self, data: dict[str, Any]) -> str:
        return _sse(data, "status")

    def end(self, data: dict[str, Any]) -> str:
        return _sse(data, "end")

    def damaged(self, error: str) -> str:
        return _sse({"error": error}, DAMAGED_STATUS)

    def plugin_failed(self, error: str) -> str:
        return _sse({"error": error}, PLUGIN_FAILED)


class _Encoder(Protocol):
    """How a stream writes the feed's events (:class:`_PageEvents`, or AG-UI's:
    :class:`flowc.view.agui.AguiEncoder`)."""

    def begin(self, after: int) -> str: ...
    def turn(self, event: dict[str, Any]) -> str: ...
    def status(self, data: dict[str, Any]) -> str: ...
    def end(self, data: dict[str, Any]) -> str: ...
    def damaged(self, error: str) -> str: ...
    def plugin_failed(self, error: str) -> str: ...


async def _stream(
    settings: ViewSettings,
    view: RunView,
    after: int,
    listing: _Listing | None = None,
    encoder: _Encoder | None = None,
) -> AsyncIterator[str]:
    """The run's turns after turn ``after`` as server-sent events, then each new turn as
    the store commits it, read a page at a time (nothing is kept but the fold's state);
    a ``status`` event when the run's status changes, and ``end`` once it closed (each
    written by ``encoder``: the page's events by default). While it is open, the run is
    followed in ``listing`` (its feed there is kept), whose verdicts say where the run's
    WAL breaks (:mod:`flowc.view.broken`)."""
    verdicts = listing.verdicts if listing is not None else Verdicts()
    if listing is not None:
        listing.follow(view.run_id)
    try:
        # closed with the stream (its store with it), not whenever it is collected
        events = _events(settings, view, after, encoder or _PageEvents(), verdicts)
        async with contextlib.aclosing(events) as chunks:
            async for chunk in chunks:
                yield chunk
    finally:
        if listing is not None:
            listing.unfollow(view.run_id)


async def _backlog(
    settings: ViewSettings, view: RunView, after: int, verdicts: Verdicts | None = None
) -> AsyncIterator[str]:
    """The run's turns after turn ``after`` committed now but the last
    :data:`STREAMED_TAIL`, a line of JSON per page of rows read: an array of the turns, each
    as the event stream sends it (the first with the whole context). Thousands of turns
    cost a page far more to take in as events, one each, than as a few arrays; the tail
    left, and whatever is committed next, comes over the event stream from the last turn
    sent. At most a page of turns and the tail is held at a time. A run whose WAL breaks
    (:mod:`flowc.view.broken`) ends, where the rows read reach the break, as a damaged
    one does."""
    held: list[dict[str, Any]] = []
    verdicts = verdicts or Verdicts()
    async with _feed_after(settings, view, after) as (store, feed):
        while True:
            before = feed.after
            try:
                held += await _turns_after(feed, store, after)
            except (*DAMAGED, PluginFailed) as err:  # the last line says so (a plugin: named)
                yield json.dumps({"error": run_error_text(view.run_id, err)}) + "\n"
                return
            broken = await _broken(verdicts, store, feed, before)
            if broken is not None:
                yield json.dumps({"error": broken.error}) + "\n"
                return
            if len(held) > STREAMED_TAIL:
                sent, held = held[:-STREAMED_TAIL], held[-STREAMED_TAIL:]
                yield json.dumps(sent, ensure_ascii=False) + "\n"
            if feed.after == before:
                return


@contextlib.asynccontextmanager
async def _feed_after(
    settings: ViewSettings, view: RunView, after: int
) -> AsyncIterator[tuple[WalStore, TurnFeed]]:
    """A store opened for reading the run, and a feed of its turns whose first one after
    turn ``after`` brings the whole context; the store closed at the end."""
    store = await run_in_threadpool(settings.open)
    feed = TurnFeed(view)
    feed.context_after = after  # the first turn sent brings the whole context
    try:
        yield store, feed
    finally:
        with contextlib.suppress(Exception):
            store.close()


async def _broken(verdicts: Verdicts, store: WalStore, feed: TurnFeed, before: int) -> Break | None:
    """Where the rows ``feed`` has read break the rules their admission checked, once it
    read more than row key ``before`` (``None``: nowhere, or nothing new was read)."""
    if feed.after == before:
        return None
    return await run_in_threadpool(verdicts.upto_rows, store, feed.view.run_id, feed.rows)


async def _turns_after(feed: TurnFeed, store: WalStore, after: int) -> list[dict[str, Any]]:
    """The next page of ``feed``'s turns, those after turn ``after`` only."""
    return [e for e in await run_in_threadpool(feed.poll, store) if e["n"] > after]


async def _events(
    settings: ViewSettings, view: RunView, after: int, encoder: _Encoder, verdicts: Verdicts
) -> AsyncGenerator[str, None]:
    """:func:`_stream`'s events: where the rows read reach a break of the run's WAL
    (:mod:`flowc.view.broken`), the turns before it, then ``damaged``, and the end."""
    async with _feed_after(settings, view, after) as (store, feed):
        yield encoder.begin(after)
        status: tuple[Any, ...] | None = None
        checked = 0.0
        quiet = time.monotonic()
        while not settings.stopping():  # (a page reconnects to the server started again)
            before = feed.after
            try:
                turns = await _turns_after(feed, store, after)
            except DAMAGED as err:  # a damaged record: said once, and the stream ends
                yield encoder.damaged(run_error_text(view.run_id, err))
                return
            except PluginFailed as err:  # a plugin fails on an intact record now: as well
                yield encoder.plugin_failed(run_error_text(view.run_id, err))
                return
            broken = await _broken(verdicts, store, feed, before)
            if broken is not None:  # none a hub could have written: said as damaged
                chunk = [encoder.turn(event) for event in turns if event["n"] <= broken.turns]
                if chunk:
                    yield "".join(chunk)
                yield encoder.damaged(broken.error)
                return
            chunk = [encoder.turn(event) for event in turns]
            if chunk:  # one write for the page of turns read (a long run's backlog)
                yield "".join(chunk)
                quiet = time.monotonic()
            if feed.after != before:
                continue  # more may be waiting: read on before sleeping
            now = time.monotonic()
            if status is None or now - checked >= STATUS_SECONDS or feed.closed is not None:
                checked = now
                state, holder = await run_in_threadpool(status_of, store, feed)
                silent = feed.silent_after
                current = (state, holder, feed.turns, feed.closed, feed.stalled_on, len(silent))
                if current != status:
                    status = current
                    yield encoder.status(
                        {
                            "status": state,
                            "holder": holder,
                            "turns": feed.turns,
                            "close_reason": feed.closed,
                            "next_speaker": feed.next_speaker,
                            "stalled_on": feed.stalled_on,
                            "silent_after": silent,
                        }
                    )
                    quiet = now
            if feed.closed is not None:
                yield encoder.end({"turns": feed.turns, "close_reason": feed.closed})
                return
            if now - quiet >= KEEPALIVE_SECONDS:
                yield ": keep-alive\n\n"
                quiet = now
            await asyncio.sleep(settings.poll)


def _fork(settings: ViewSettings, run_id: str, n: int, script: Script) -> dict[str, Any]:
    """Write a new run from turn ``n`` of ``run_id`` and drive it with ``script`` (as
    ``flowc fork RUN N --script S``, with nobody at a terminal: a human with no scripted
    turn left stalls it); what became of it, with the new run's id. The script is checked
    before anything is written; the parent is only read. Raises as
    :func:`~flowc.runtime.fork.check_fork_script` and :func:`~flowc.runtime.fork.fork_run`
    do, before anything is written; :class:`_Written` when the store failed once the new
    run was (partly) written. A failure of the run itself (a script that runs out, the
    store refusing a turn) is in the answer's ``error``."""
    from flowc.runtime.fork import ForkedFrom, check_fork_script, fork_run
    from flowc.runtime.script_run import resume_script
    from flowc.runtime.target import RunTarget
    from flowc.view.feed import opening

    store = settings.open_for_fork()
    try:
        metadata = opening(store, run_id)
        if metadata is None:
            raise HTTPException(404, f"no run {run_id!r} in this database")
        check_fork_script(RunTarget.from_metadata(metadata), script, n)
        new = f"wf-{os.urandom(6).hex()}"
        answer: dict[str, Any] = {"run_id": new, "forked_from": ForkedFrom(run_id, n).to_json()}
        try:
            fork_run(store, run_id, n, run_id=new, labels={"script": "flowc view"})
        except WalError as err:
            if new not in store.channel_ids():
                raise  # nothing written
            raise _Written({**answer, "error": f"the copy stopped: {err}"}) from err
        try:
            result = asyncio.run(resume_script(store, new, script))
        except (ScriptError, ProtocolError, WalError) as err:
            return {**answer, "turns": None, "error": str(err)}
        return {
            **answer,
            "turns": result.turn_count,
            "close_reason": result.close_reason,
            "stalled_on": result.stalled_on,
            "error": result.error,
        }
    finally:
        store.close()


class _Written(Exception):
    """The store failed after a fork's new run was written (in part): its answer, with
    the run's id."""

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__(answer.get("error"))
        self.answer = answer


def _fork_endpoint(settings: ViewSettings, runs: _Runs) -> Endpoint:
    """``POST /api/run/ID/fork/N``, its body a script document (JSON, as ``--script``
    takes; an empty body: no script): a new run from turn N (:func:`_fork`), ``201``
    with its id and what became of it; ``404`` for a run or turn the database does not
    have, ``413`` for a body past :data:`FORK_BODY_BYTES`, ``422`` for a script that is
    not JSON or does not fit the run, or a run that cannot be copied: damaged, its records
    breaking its rules, or a plugin failing on them now (nothing written), ``503`` when
    the database failed (with the new run's id when it was written in part)."""
    from flowc.inputs import SCRIPT_MAX_DEPTH, DataError, load_json

    async def fork(request: Request) -> Response:
        from flowc.runtime.fork import ForkError
        from flowc.runtime.why import TurnOutOfRange

        run_id = request.path_params["run_id"]
        n = request.path_params["n"]
        await run_in_threadpool(runs.view, run_id)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > FORK_BODY_BYTES:
                return JSONResponse({"error": "the script is too long"}, status_code=413)
        try:
            doc = load_json(body.decode("utf-8"), max_depth=SCRIPT_MAX_DEPTH) if body else {}
            script = parse_script(doc)
        except UnicodeDecodeError:
            return JSONResponse({"error": "the script is not UTF-8"}, status_code=422)
        except json.JSONDecodeError as err:
            return JSONResponse({"error": f"the script is not JSON: {err}"}, status_code=422)
        except (DataError, ScriptError) as err:
            return JSONResponse({"error": f"the script: {err}"}, status_code=422)
        try:
            found = await run_in_threadpool(_fork, settings, run_id, n, script)
        except TurnOutOfRange as err:
            return JSONResponse({"error": f"run {run_id}: {err}"}, status_code=404)
        except ScriptError as err:
            return JSONResponse({"error": f"the script: {err}"}, status_code=422)
        except ForkError as err:  # refused before anything was written
            return JSONResponse({"error": f"run {run_id}: {err}"}, status_code=422)
        except (ProtocolError, DamagedRow) as err:  # ... or the run is damaged, as the
            # answers about a turn say
            return JSONResponse({"error": run_error_text(run_id, err)}, status_code=422)
        except WalError as err:  # the store failed before anything was written
            return JSONResponse({"error": f"the database: {err}"}, status_code=503)
        except _Written as written:  # ... or once the new run was (in part)
            return JSONResponse(written.answer, status_code=503)
        return JSONResponse(found, status_code=201)

    return fork
