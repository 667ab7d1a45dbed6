"""The options the commands that run flows share (`flowc run`, `resume`, `log`, `replay`,
`submit`, `worker`): each is defined once here, so their default and wording cannot drift
apart from one command to the next. Only argparse is imported: `flowc submit` and
`flowc worker` do not pay for the run commands' imports to register them."""

from __future__ import annotations

import argparse

from flowc.commands.config import add_plugin_option

#: the run store every run command uses when --db is not given
DEFAULT_DB = ".flowc/runs.db"

#: the stores a --db names (where the default is a SQLite file)
STORES = f"a SQLite file (default {DEFAULT_DB}) or a PostgreSQL database (postgresql://...)"

AGENTS = "a Python file mapping speaker names to agents (AGENTS = {...})"

FLOW = "a .flow file, or JSON holding a graph or knobs dict"


def flow_argument(parser: argparse.ArgumentParser) -> None:
    """The FLOW to run (positional)."""
    parser.add_argument("flow", help=FLOW)


def script_option(parser: argparse.ArgumentParser, help: str) -> None:
    """``--script SCRIPT``: who says what; ``help`` says what this command does with it."""
    parser.add_argument("--script", metavar="SCRIPT", help=help)


def agents_option(parser: argparse.ArgumentParser, more: str = "") -> None:
    """``--agents MODULE.py``; ``more`` follows the common help after a semicolon."""
    parser.add_argument(
        "--agents", metavar="MODULE.py", help=AGENTS + (f"; {more}" if more else "")
    )


def store_options(
    parser: argparse.ArgumentParser, db_help: str, *, metavar: str = "PATH|URL", plugin: bool = True
) -> None:
    """``--db`` (default :data:`DEFAULT_DB`; ``db_help`` whole) then, unless ``plugin`` is
    false, ``--plugin``."""
    parser.add_argument("--db", default=DEFAULT_DB, metavar=metavar, help=db_help)
    if plugin:
        add_plugin_option(parser)


#: ``--contracts``' choices, the default first (flowc.runtime.contracts.CONTRACT_MODES)
CONTRACTS = ("enforce", "warn")


def contracts_option(parser: argparse.ArgumentParser) -> None:
    """``--contracts enforce|warn``: what happens to a turn of a real agent (or a custom
    target's choice) that breaks the flow's declarations."""
    parser.add_argument(
        "--contracts",
        choices=CONTRACTS,
        default=CONTRACTS[0],
        help="a real agent's turn (or a custom target's choice) that breaks the flow's "
        "declarations: `enforce` refuses it and stops the run open on that speaker "
        "(the default), `warn` lets it through with a warning in the transcript, "
        "--json and `flowc log`",
    )


#: ``--on-violation``'s choices, the default first (flowc.runtime.guard.ON_VIOLATION)
ON_VIOLATION = ("warn", "stop")


def on_violation_option(parser: argparse.ArgumentParser, *, worker: bool = False) -> None:
    """``--on-violation warn|stop``: what a turn that breaks one of the flow's
    properties does to the run."""
    parser.add_argument(
        "--on-violation",
        choices=ON_VIOLATION,
        default=ON_VIOLATION[0],
        help="a turn that breaks one of the flow's `property` statements: `warn` marks "
        "the turn in the transcript, --json and `flowc log` and lets the run go on (the "
        "default), `stop` also closes the run with the reason "
        "`property_violated:NAME`; "
        + (
            "either way a `violated RUN ...` line is printed (also under --quiet); the "
            "worker's exit status does not change"
            if worker
            else "either way the command exits 3"
        ),
    )
