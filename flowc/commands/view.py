"""``flowc view [--db DB] [RUN] [--port P] [--no-open] [--max-states N] [--plugin M]``: a local web page showing the runs
of a run database, and each run on its diagram with its transcript streaming live.

The server (:mod:`flowc.view.server`) binds 127.0.0.1 only, asks for a random token on
every request and opens the database read-only, but for the one request that starts a
new run from a turn of a run (``flowc fork``), which writes only that run. It needs the ``view`` extra
(Starlette and uvicorn); without it the command says how to install it (exit 2).

Exit codes: 0 the server was stopped (Ctrl-C); 1 the run given has a broken WAL (none a
hub could have written: refused as ``flowc log RUN`` and ``flowc replay`` refuse it); 2 it
could not start (no such database or run, the port is taken, the extra is
missing).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import quote

from flowc.commands.config import setup_plugins
from flowc.commands.console import EXIT_ERRORS, EXIT_OK, UsageError
from flowc.commands.run_options import STORES, store_options
from flowc.commands.texts import add_command

if TYPE_CHECKING:  # uvicorn is an optional extra (`.[view]`): imported where it serves
    import uvicorn

    from flowc.view.server import ViewSettings

#: the environment variable that gives the token instead of a random one, so that a
#: server started again (same ``--port``) keeps the pages already open working
TOKEN_ENV = "FLOWC_VIEW_TOKEN"

INSTALL_HINT = (
    "flowc view needs Starlette and uvicorn: pip install '.[view]' in flowc's checkout "
    "(or pip install starlette uvicorn)"
)


def _desktop() -> bool:
    """Whether a browser can be opened here: macOS or Windows, or a Linux/BSD session
    with a display, and not a session over SSH."""
    if os.environ.get("SSH_CONNECTION") or os.environ.get("SSH_TTY"):
        return False
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _token() -> str:
    from flowc.view.server import new_token

    given = os.environ.get(TOKEN_ENV)
    if given is None:
        return new_token()
    if len(given) < 16 or not all(c.isalnum() or c in "-_" for c in given):
        raise UsageError(
            f"{TOKEN_ENV} must be at least 16 letters, digits, '-' or '_' (or unset, "
            "for a random token)"
        )
    return given


def _check_db(db: str, run: str | None) -> str | None:
    """The database can be read (and has ``run``, whose full id is returned)."""
    from flowc.commands.run import find_run
    from flowc.runtime.stores import is_url, open_store
    from flowc.runtime.wal import WalError

    if not is_url(db) and not os.path.lexists(db):
        raise UsageError(f"{db}: no run database (flowc run writes one)")
    try:
        store = open_store(db, readonly=True)
    except WalError as err:
        raise UsageError(str(err)) from None
    try:
        return None if run is None else find_run(store, run, db)
    finally:
        store.close()


def _refuse_broken(db: str, run: str) -> bool:
    """Say (as ``flowc log RUN`` and ``flowc replay`` say it) and return True when the
    run's WAL is none a hub could have written (a sender who is no participant, a turn
    after the close, ...): the page would show a run that never was. A record that
    cannot be read at all, or a plugin that fails on the records now, the run's page
    says itself, in the same words (its status ``damaged`` or ``plugin-failed``)."""
    from flowc.runtime.adapters.base import DamagedRecord, ProtocolError
    from flowc.runtime.envelope import EV_CHANNEL_OPENED
    from flowc.runtime.failures import PluginFailed
    from flowc.runtime.fork import refuse_broken
    from flowc.runtime.stores import db_name, open_store
    from flowc.runtime.transcript import READ_ERRORS, run_error_text

    store = open_store(db, readonly=True)
    try:
        try:
            envs = list(store.read(run))
        except READ_ERRORS:
            return False  # (damaged: shown on the page)
        if not envs or envs[0].event_type != EV_CHANNEL_OPENED:
            return False
        try:
            refuse_broken(store, run, envs)
        except DamagedRecord:
            return False  # (shown on the page)
        except ProtocolError as err:  # ("the WAL is broken at ...")
            print(f"flowc view: error: {run_error_text(run, err, db_name(db))}", file=sys.stderr)
            return True
        except (*READ_ERRORS, PluginFailed):
            return False  # (shown on the page)
    finally:
        store.close()
    return False


def _bind(port: int) -> socket.socket:
    # a TCP socket by name: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on the
    # connections of a socket whose protocol says TCP, and with it on, an answer written
    # in two parts (head, then body) waits for the browser's delayed ACK (about 40 ms)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as err:
        sock.close()
        raise UsageError(f"--port {port}: cannot listen on it ({err.strerror})") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def cmd_view(args: argparse.Namespace) -> int:
    try:
        import uvicorn  # noqa: F401 (served by _server)

        from flowc.view.server import ViewSettings
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    if not 0 <= args.port <= 65535:
        raise UsageError("--port must be between 0 (any free port) and 65535")
    if args.max_states is not None and args.max_states < 1:
        raise UsageError("--max-states must be >= 1")
    token = _token()
    run = _check_db(args.db, args.run)
    setup_plugins(args, [args.db])
    if run is not None and _refuse_broken(args.db, run):
        return EXIT_ERRORS
    sock = _bind(args.port)
    port = sock.getsockname()[1]
    path = "/" if run is None else "/run/" + quote(run, safe="")
    url = f"http://127.0.0.1:{port}{path}?token={token}"
    server = _server(ViewSettings(args.db, token, max_states=args.max_states))
    # Ctrl-C from the moment the server is said to be ready stops it as documented (exit
    # 0, nothing more said), also while it is still starting: until uvicorn handles the
    # signal itself (and after), it only asks the server to stop; the process's own
    # handler is put back after. Only the main thread may set a handler (flowc.cli.main may
    # be called from another), and one installed from C (None) could not be put back: it
    # is then left alone
    previous = None
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is not None
    ):
        previous = signal.signal(signal.SIGINT, lambda *_: setattr(server, "should_exit", True))
    try:
        print(f"flowc view: serving {args.db} at {url}", flush=True)
        print("(Ctrl-C stops the server)", flush=True)
        if not args.no_open and _desktop():
            import webbrowser

            webbrowser.open(url)
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        sock.close()
    return EXIT_OK


def _server(settings: ViewSettings) -> uvicorn.Server:
    """The uvicorn server of the pages."""
    import uvicorn

    from flowc.view.server import make_app

    config = uvicorn.Config(
        make_app(settings),
        log_level="warning",
        lifespan="off",
        # open streams are cut after a second: a stopped server does not wait for pages
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    # stopped (Ctrl-C), the open streams end by themselves: none is cancelled mid-answer
    # (uvicorn would print each as an error with its traceback)
    settings.stopping = lambda: server.should_exit
    return server


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "view")
    p.add_argument(
        "run", nargs="?", help="open this run's page (a run id, a unique prefix, or `last`)"
    )
    # --plugin: the custom conditions and targets of the runs' flows, for the checker's
    # findings on a run's page and for a fork run from a turn (as `flowc resume` takes them)
    store_options(p, f"the WAL to show: {STORES}")
    p.add_argument(
        "--port",
        type=int,
        default=0,
        metavar="P",
        help="the port to listen on (default 0: any free port); give one, with "
        f"{TOKEN_ENV} set, to restart the server under the same URL",
    )
    p.add_argument(
        "--no-open", action="store_true", help="print the URL only, never open a browser"
    )
    p.add_argument(
        "--max-states",
        type=int,
        metavar="N",
        help="the bound on abstract states of the checker whose findings a run's page "
        "shows, as in flowc check (default 300000); an analysis stopped at it is shown "
        "as partial",
    )


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"view": cmd_view}
