"""`flowc submit` and `flowc worker`: runs shared by several worker processes.

``flowc submit FLOW --script S --db URL`` writes a run's opening (its script stored
with it) and prints its id; ``flowc worker --db URL`` claims open runs and drives them
until it is stopped (SIGTERM or Ctrl-C: the runs in flight are given back at once).

Each line a worker prints is one event, whatever the event's message holds
(:func:`event_line`); its warnings on stderr are one line each too.

Exit codes: 0 ok, 1 input errors, 2 could not run (or, for a worker, a run it drove
was stopped by a bug in flowc: an internal error).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
import traceback
from collections.abc import Callable, Collection, Iterator
from typing import Any

from flowc.commands.config import add_plugin_option, setup_plugins
from flowc.commands.console import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, UsageError
from flowc.commands.run_options import (
    DEFAULT_DB,
    agents_option,
    contracts_option,
    flow_argument,
    on_violation_option,
    script_option,
    store_options,
)
from flowc.commands.texts import add_command
from flowc.diagnostics import counted, internal_error_text
from flowc.escaping import one_line
from flowc.runtime.script import ScriptError
from flowc.runtime.stores import db_name, is_url, open_store
from flowc.runtime.wal import WalError, WalStore

SHARED_DB = f"the shared run database (default {DEFAULT_DB})"


def _open(db: str) -> WalStore:
    if db == ":memory:":
        raise UsageError(
            "--db :memory: keeps the runs in this process: give a database "
            "the workers share (a SQLite file on this host, or postgresql://...)"
        )
    try:
        return open_store(db)
    except WalError as err:
        raise UsageError(str(err)) from None


def _notifier(db: str) -> Any:
    """What wakes the workers when a run is submitted or given back: PostgreSQL's
    notifications; SQLite has none (the workers look twice a second)."""
    if is_url(db):
        from flowc.runtime.worker import PgNotifier

        return PgNotifier(db)
    return None


#: The options that only a PostgreSQL run database acts on, by their ``args`` name: the
#: option and what a SQLite database does instead (:func:`postgres_only_warning`).
POSTGRES_ONLY: dict[str, tuple[str, str]] = {
    "commit_batch": ("--commit-batch", "commits each turn on its own"),
    "commit_wait": ("--commit-wait", "commits each turn on its own"),
    "notify_appends": ("--notify-appends", "sends no notifications"),
}

#: Their effective defaults: argparse's are ``None``, so that an option given on the
#: command line can be told from one left out (:func:`_resolve_defaults`).
POSTGRES_DEFAULTS: dict[str, Any] = {
    "commit_batch": 64,
    "commit_wait": 0.0,
    "notify_appends": False,
}


def postgres_only_warning(db: str, given: Collection[str]) -> str | None:
    """The warning for PostgreSQL-only options (``given``: their ``args`` names) given to a
    worker on a SQLite database, or ``None`` (a PostgreSQL URL, or none given). A warning,
    not an error: the same command line may serve both kinds of database, and on SQLite
    the worker works as it would without them; but a user who asked for a batch size or
    notifications is told they do nothing here rather than left to wonder.

    >>> print(postgres_only_warning("runs.db", ["commit_batch", "notify_appends"]))
    flowc worker: warning: --commit-batch and --notify-appends apply to a PostgreSQL run \
database only: SQLite commits each turn on its own and sends no notifications
    >>> postgres_only_warning("postgresql://db.example/runs", ["commit_batch"]) is None
    True
    """
    named = [name for name in POSTGRES_ONLY if name in given]
    if is_url(db) or not named:
        return None
    options = [POSTGRES_ONLY[name][0] for name in named]
    instead = list(dict.fromkeys(POSTGRES_ONLY[name][1] for name in named))
    verb = "applies" if len(options) == 1 else "apply"
    return (
        f"flowc worker: warning: {_joined(options)} {verb} to a PostgreSQL run database "
        f"only: SQLite {_joined(instead)}"
    )


def _joined(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _resolve_defaults(args: argparse.Namespace) -> list[str]:
    """Give the PostgreSQL-only options left out their defaults; the ones given (their
    ``args`` names), for :func:`postgres_only_warning`."""
    given = [name for name in POSTGRES_DEFAULTS if getattr(args, name, None) is not None]
    for name, default in POSTGRES_DEFAULTS.items():
        if getattr(args, name, None) is None:
            setattr(args, name, default)
    return given


def _group_commit(store: WalStore, args: argparse.Namespace) -> Any:
    """The worker's group commit (a store that appends batches: PostgreSQL), on a
    connection of its own; ``None`` with ``--commit-batch 1`` or SQLite."""
    if hasattr(store, "notify_appends"):
        store.notify_appends = args.notify_appends
    writer = getattr(store, "writer", None)
    if writer is None or args.commit_batch == 1:
        return None
    from flowc.runtime.groupcommit import GroupCommit

    try:
        return GroupCommit(writer(), max_batch=args.commit_batch, max_wait=args.commit_wait / 1000)
    except WalError as err:
        store.close()
        raise UsageError(str(err)) from None


# ── flowc submit ──────────────────────────────────────────────────────────────


def cmd_submit(args: argparse.Namespace) -> int:
    from flowc.commands.run import load_target, read_script
    from flowc.commands.run_output import graph_refused
    from flowc.runtime.script_run import graph_refusals
    from flowc.runtime.worker import check_submission, submit_run

    if args.count < 1:
        raise UsageError("--count must be at least 1")
    setup_plugins(args, [args.flow])
    target, _ = load_target(args.flow)
    if target is None:
        return EXIT_ERRORS
    doc: Any = {}
    if args.script:
        loaded = read_script(args.script)
        if loaded is None:
            return EXIT_ERRORS
        doc = loaded[0]
    try:
        checked, _ = check_submission(target, doc)  # before the database is opened (or created)
    except ScriptError as err:
        print(f"{args.script or args.flow}: error: {err}", file=sys.stderr)
        return EXIT_ERRORS
    refused = graph_refusals(checked)  # (as `run`: the channel would refuse the graph)
    if refused:
        return graph_refused(args.flow, checked, refused)
    store = _open(args.db)
    labels = {"script": args.script or ""}

    async def submit() -> None:
        for _ in range(args.count):
            run_id = await submit_run(store, target, doc, labels=labels)
            print(run_id, flush=True)

    try:
        asyncio.run(submit())
    except ScriptError as err:
        print(f"{args.script or args.flow}: error: {err}", file=sys.stderr)
        return EXIT_ERRORS
    except WalError as err:
        raise UsageError(str(err)) from None
    finally:
        store.close()
    return EXIT_OK


# ── flowc worker ──────────────────────────────────────────────────────────────


def event_line(what: str, run_id: str, detail: str = "") -> str:
    r"""One line of the worker's log: the event, the run and what it says, on one line
    whatever the detail holds (a database's error runs over several lines, a speaker's
    name may hold a control character): :func:`flowc.escaping.one_line`.

    >>> print(event_line("failed", "wf-1", "cannot write\nDETAIL:  the server restarted"))
    failed wf-1 cannot write\nDETAIL:  the server restarted
    """
    return one_line(f"{what} {run_id}" + (f" {detail}" if detail else ""))


class OneLineFormatter(logging.Formatter):
    """The worker's warnings on stderr (a lost notification connection, a lease that could
    not be renewed), one line each: :func:`flowc.escaping.one_line`."""

    def format(self, record: logging.LogRecord) -> str:
        return one_line(super().format(record))


@contextlib.contextmanager
def _one_line_warnings() -> Iterator[None]:
    """While the worker serves: flowc's warnings on stderr through
    :class:`OneLineFormatter`, instead of Python's last-resort handler."""
    logger = logging.getLogger("flowc")
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(OneLineFormatter("%(message)s"))
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def cmd_worker(args: argparse.Namespace) -> int:
    from flowc.commands.run import load_agents
    from flowc.runtime.worker import Worker

    given = _resolve_defaults(args)
    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if args.commit_batch < 1:
        raise UsageError("--commit-batch must be at least 1")
    if not 0 <= args.commit_wait <= 1000:
        raise UsageError("--commit-wait must be between 0 and 1000 (milliseconds)")
    setup_plugins(args, [args.db])
    agents = load_agents(args.agents) if args.agents else None
    store = _open(args.db)
    warning = postgres_only_warning(args.db, given)
    if warning is not None:  # once, before the `serving` line
        print(warning, file=sys.stderr, flush=True)
    quiet = args.quiet

    def event(what: str, run_id: str, detail: str) -> None:
        if quiet and what in ("claimed", "closed"):
            return
        print(event_line(what, run_id, detail), flush=True)

    def internal_error(run_id: str, err: BaseException) -> None:
        """A bug in flowc stopped a run (its ``failed`` line says so): its traceback
        when asked for (``--traceback``), as for an internal error of any command."""
        if getattr(args, "traceback", False):
            sys.stdout.flush()
            traceback.print_exception(type(err), err, err.__traceback__, file=sys.stderr)
            print(
                f"flowc worker: run {run_id}: {internal_error_text(err)}",
                file=sys.stderr,
                flush=True,
            )

    worker = Worker(
        store,
        agents=agents,
        concurrency=args.concurrency,
        notifier=_notifier(args.db),
        on_event=event,
        on_error=internal_error,
        contracts=args.contracts,
        group_commit=_group_commit(store, args),
        on_violation=args.on_violation,
    )

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, worker.stop)
        # said once SIGTERM and Ctrl-C stop it cleanly: whoever waits for this line may
        # stop the worker at once
        print(
            f"worker {worker.tag} (pid {worker.holder.split(':')[1]}) serving {db_name(args.db)}",
            flush=True,
        )
        await worker.serve()

    try:
        with _one_line_warnings():
            asyncio.run(serve())
    except WalError as err:
        raise UsageError(str(err)) from None
    finally:
        store.close()
    s = worker.stats
    internal = f" ({s.internal} by an internal error)" if s.internal else ""
    print(
        f"worker {worker.tag} stopped: {counted(s.closed, 'run')} closed, {s.stalled} stalled, "
        f"{s.taken_over} taken over, {s.lost} lost, {s.failed} failed{internal}",
        flush=True,
    )
    return EXIT_USAGE if s.internal else EXIT_OK  # a bug in flowc is never hidden by exit 0


# ── registration ──────────────────────────────────────────────────────────────


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "submit")
    flow_argument(p)
    script_option(
        p,
        "who says what (JSON or YAML), stored with the run; speakers it does "
        "not cover are taken by the workers' --agents",
    )
    p.add_argument(
        "--count",
        type=int,
        default=1,
        metavar="N",
        help="open N runs of the same flow and script (default 1)",
    )
    store_options(p, SHARED_DB, metavar="URL")

    p = add_command(sub, "worker")
    store_options(p, SHARED_DB, metavar="URL", plugin=False)
    agents_option(p, "other speakers follow each run's script")
    contracts_option(p)
    on_violation_option(p, worker=True)
    p.add_argument(
        "--concurrency",
        type=int,
        default=8,
        metavar="N",
        help="hold at most N runs at once (default 8)",
    )
    p.add_argument(
        "--commit-batch",
        type=int,
        default=None,  # given or not (postgres_only_warning); the default: POSTGRES_DEFAULTS
        metavar="N",
        help="PostgreSQL: commit the turns of the runs held together, at most N per "
        "transaction, each still before it is delivered (default 64; 1: every turn "
        "its own commit)",
    )
    p.add_argument(
        "--commit-wait",
        type=float,
        default=None,
        metavar="MS",
        help="PostgreSQL: how long the first turn of a batch waits for others when no "
        "commit is under way, in milliseconds (default 0)",
    )
    p.add_argument(
        "--notify-appends",
        action="store_true",
        default=None,
        help="PostgreSQL: send a `flowc_wal` notification for every turn written (for "
        "tools that follow the runs live with LISTEN; no worker needs them)",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="print only stalled, lost (taken over), failed and violated runs",
    )
    add_plugin_option(p)


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "submit": cmd_submit,
    "worker": cmd_worker,
}
