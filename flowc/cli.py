"""The `flowc` command line: builds the parser from the command modules and runs one.

Each subcommand lives in a module of :mod:`flowc.commands` that defines
``register(subparsers)`` and ``HANDLERS = {name: cmd_<name>}``; this module imports
only the module of the command asked for, and nothing imports this module back.

Exit codes: 0 ok, 1 the input has errors, 2 the command could not run (a usage
error, or an internal error: a bug in flowc, reported in one line; ``--traceback`` or
``FLOWC_TRACEBACK=1`` adds Python's traceback).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import NoReturn

from flowc import collector
from flowc._compat import argparse_subparser, run_exit_functions

Handler = Callable[[argparse.Namespace], int]

#: the global option that prints an internal error's traceback (also ``FLOWC_TRACEBACK=1``)
TRACEBACK_OPTION = "--traceback"

#: every subcommand, in the order ``flowc --help`` lists them, and the module that registers it
COMMAND_MODULES = {
    "compile": "flowc.commands.compile",
    "check": "flowc.commands.check",
    "explain": "flowc.commands.check",
    "fmt": "flowc.commands.fmt",
    "decompile": "flowc.commands.decompile",
    "render": "flowc.commands.render",
    "test": "flowc.commands.testing",
    "scenarios": "flowc.commands.testing",
    "run": "flowc.commands.run",
    "resume": "flowc.commands.run",
    "fork": "flowc.commands.run",
    "log": "flowc.commands.run",
    "replay": "flowc.commands.run",
    "submit": "flowc.commands.worker",
    "worker": "flowc.commands.worker",
    "migrate": "flowc.commands.migrate",
    "diff": "flowc.commands.diff",
    "lsp": "flowc.commands.lsp",
    "trust": "flowc.commands.trust_list",
    "view": "flowc.commands.view",
}


def wanted_modules(argv: Sequence[str]) -> list[str]:
    """The modules to import for ``argv``: the requested subcommand's only (so a command
    does not pay for the others' dependencies), all of them for help or an unknown command,
    none for ``--version``."""
    wanted = next((a for a in argv if not a.startswith("-")), None)
    if wanted is None and "--version" in argv:
        return []
    if wanted in COMMAND_MODULES:
        return [COMMAND_MODULES[wanted]]
    return list(dict.fromkeys(COMMAND_MODULES.values()))


def _help_width() -> int:
    """The width argparse gives its help: ``shutil.get_terminal_size().columns - 2``,
    worked out the same way (``COLUMNS``, else the terminal of stdout, else 80)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns - 2


class _Parser(argparse.ArgumentParser):
    """argparse's parser, with the help sized as argparse sizes it but without importing
    :mod:`shutil` (and with it bz2 and lzma) for that: argparse makes a help formatter
    for every option it registers, and a command prints its help rarely. Subcommands'
    parsers are of this class too."""

    def _get_formatter(self) -> argparse.HelpFormatter:
        return self.formatter_class(prog=self.prog, width=_help_width())  # type: ignore[call-arg]


def build_parser(modules: Sequence[ModuleType]) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="flowc",
        description="Compile, check, draw, test and run .flow workflow graphs for AG2.",
    )
    parser.add_argument("--version", action="version", version="flowc 0.1.0")
    parser.add_argument(
        TRACEBACK_OPTION,
        action="store_true",
        help="on an internal error (a bug in flowc: exit 2), print Python's traceback too; "
        "given before or after the command, or set FLOWC_TRACEBACK=1",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in modules:
        module.register(sub)
    return parser


def _subparser(
    parser: argparse.ArgumentParser, command: str | None
) -> argparse.ArgumentParser | None:
    return argparse_subparser(parser, command)


def handlers(modules: Sequence[ModuleType]) -> dict[str, Handler]:
    out: dict[str, Handler] = {}
    for module in modules:
        out.update(module.HANDLERS)
    return out


def traceback_wanted(
    argv: Sequence[str], environ: Mapping[str, str] | None = None
) -> tuple[list[str], bool]:
    """``argv`` without ``--traceback`` (a global option, taken before or after the
    command, but not after a ``--``), and whether an internal error should print its
    traceback: the option was given, or ``FLOWC_TRACEBACK`` is set to anything but
    empty or ``0``.

    >>> traceback_wanted(["check", "a.flow", "--traceback"], {})
    (['check', 'a.flow'], True)
    >>> traceback_wanted(["check", "--", "--traceback"], {"FLOWC_TRACEBACK": "0"})
    (['check', '--', '--traceback'], False)
    >>> traceback_wanted(["check"], {"FLOWC_TRACEBACK": "1"})
    (['check'], True)
    """
    env = os.environ if environ is None else environ
    end = argv.index("--") if "--" in argv else len(argv)
    kept = [a for a in argv[:end] if a != TRACEBACK_OPTION]
    given = len(kept) < end
    return kept + list(argv[end:]), given or env.get("FLOWC_TRACEBACK", "") not in ("", "0")


def main(argv: Sequence[str] | None = None, *, loading: bool = False) -> int:
    """Entry point of the ``flowc`` command; returns the exit code. ``loading``: the
    cycle collector was turned off for the start-up (by :func:`run`), and is turned on
    again once the command's modules are loaded.

    An exception no command expects (a bug in flowc, not in its input) ends it with exit
    2 and one line on stderr (:func:`internal_error`), never exit 1, which says the
    input has errors."""
    arguments, show_traceback = traceback_wanted(list(sys.argv[1:] if argv is None else argv))
    command: str | None = None
    try:
        modules = [importlib.import_module(name) for name in wanted_modules(arguments)]
        parser = build_parser(modules)
        args, extra = parser.parse_known_args(arguments)  # `--version` ends here
        from flowc.commands.console import EXIT_USAGE, UsageError

        if extra:  # a mistake in a subcommand's options: that subcommand's usage, not flowc's
            (_subparser(parser, args.command) or parser).error(
                f"unrecognized arguments: {' '.join(extra)}"
            )
        if not args.command:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        command = args.command
        args.traceback = show_traceback  # for a command that reports internal errors and goes on
        collector.release(loading)  # on again for the command's work (run() held it)
        # an agent's or a plugin's failure shows its traceback under --traceback too (the
        # runtime reads FLOWC_TRACEBACK); the environment is put back after the command
        given = show_traceback and os.environ.get("FLOWC_TRACEBACK", "") in ("", "0")
        saved = os.environ.get("FLOWC_TRACEBACK")
        if given:
            os.environ["FLOWC_TRACEBACK"] = "1"
        from flowc.commands.output_encoding import UnencodableOutput, output_kind, stdout_for

        try:
            with stdout_for(output_kind(args)):  # (what its encoding lacks: escaped, or said)
                code = handlers(modules)[args.command](args)
            # what the command wrote may still be in stdout's buffer: a reader that went
            # away is found here, where it takes the one path below, not at exit (where
            # Python reports an ignored BrokenPipeError and ends with status 120)
            _flush_stdout()
            return code
        except UsageError as err:
            print(f"flowc {args.command}: error: {err}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:
            return _stdout_closed()
        except UnencodableOutput as err:
            print(f"flowc {args.command}: error: {err}", file=sys.stderr)
            return EXIT_USAGE
        except MemoryError:
            pass  # said below: past this block, the work its traceback holds is let go
        finally:
            if given:
                if saved is None:
                    os.environ.pop("FLOWC_TRACEBACK", None)
                else:
                    os.environ["FLOWC_TRACEBACK"] = saved
        # (only a MemoryError comes here: saying so within the `except` block, the memory
        # was still taken, and the words themselves could run out of it)
        print(f"flowc {args.command}: error: {out_of_memory()}", file=sys.stderr)
        return EXIT_USAGE
    except (SystemExit, KeyboardInterrupt, GeneratorExit):
        raise
    except BaseException as err:  # the one place that reports flowc's own bugs
        return internal_error(err, command, show_traceback)


def out_of_memory() -> str:
    """What a command says when the memory it may use ran out (a ``MemoryError``: under an
    address-space limit, an allocation refused): one line, not a traceback. flowc's own
    bounds (docs/trust.md) keep its work within a gigabyte; past them, this."""
    limit = ""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            limit = f" (an address-space limit of {soft // 2**20:,} MiB)"
    except (ImportError, OSError, ValueError):  # pragma: no cover - not POSIX
        pass
    return (
        f"out of memory: the input needs more memory than this process may use{limit}; "
        "run it with more memory, or report the input (docs/trust.md lists flowc's bounds)"
    )


def internal_error(err: BaseException, command: str | None, show_traceback: bool) -> int:
    """Report an exception that escaped a command, a bug in flowc: its one line on
    stderr (:func:`internal_error_line`), Python's traceback before it when asked for;
    returns the exit code, 2."""
    import contextlib
    import traceback

    from flowc.commands.console import EXIT_USAGE

    for stream in (sys.stdout, sys.stderr):  # what the command printed comes first
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    if show_traceback:
        traceback.print_exception(type(err), err, err.__traceback__, file=sys.stderr)
        print(internal_error_line(err, command), file=sys.stderr)
    else:
        print(
            f"{internal_error_line(err, command)} (run it again with {TRACEBACK_OPTION} "
            "to see where)",
            file=sys.stderr,
        )
    return EXIT_USAGE


def internal_error_line(err: BaseException, command: str | None) -> str:
    """``flowc CMD: internal error: ...`` (:func:`flowc.diagnostics.internal_error_text`)."""
    from flowc.diagnostics import internal_error_text

    return f"flowc{' ' + command if command else ''}: {internal_error_text(err)}"


def _flush_stdout() -> None:
    """Flush stdout, so that a broken pipe raises :class:`BrokenPipeError` while the
    command's result is still being handed back; not when there is none (a process
    started with it closed) or the command closed it (``flowc lsp``'s server does)."""
    stream = sys.stdout
    if stream is not None and not getattr(stream, "closed", False):
        stream.flush()


def _stdout_closed() -> int:
    """The reader of stdout went away (``flowc log | head -1``): stop writing at once,
    with no traceback and no "Exception ignored" when Python flushes stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is no file (in-process callers)
        pass
    from flowc.commands.console import EXIT_PIPE

    return EXIT_PIPE


def run() -> None:
    """The ``flowc`` program: :func:`main`, with the cycle collector off while the
    command's modules load (they make no garbage, and each pass would walk all of
    them again), and the process ended without the interpreter's tear-down
    (:func:`_end`)."""
    held = collector.hold()
    code = main(loading=held)
    # The process ends here: the objects a command made (e.g. a 2,400-turn run's
    # envelopes) need no more passes of the cycle collector, nor freeing one by one
    collector.freeze()
    _end(code)


def _observed() -> bool:
    """Whether a profiler, tracer, debugger or coverage tool watches this process: the
    ones of :func:`sys.setprofile`/:func:`sys.settrace`, and on Python 3.12+ those that
    use :mod:`sys.monitoring` (3.12's ``cProfile``, coverage, debuggers). They write
    their results once the program returns, so the process must end as usual."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:
        return False
    return any(monitoring.get_tool(tool) is not None for tool in range(6))


def _end(code: int) -> NoReturn:
    """End the process with ``code`` as :func:`sys.exit` does, less the interpreter's
    tear-down.

    The functions registered with :mod:`atexit` run and stdout and stderr are flushed,
    as at any exit; then the process ends without freeing, module by module, every
    object the command made (7-9 ms of CPU after a scripted 2,400-turn ``flowc run``;
    mypy ends its runs the same way). Python does not promise to finalize objects still
    alive at exit, and flowc's commands close what they open (the WAL store included)
    before they return. The usual exit is taken when another thread still runs (it
    waits for non-daemon threads), when a profiler, tracer or debugger watches
    (:func:`_observed`), when this Python cannot run the exit functions itself, or
    when a flush fails (its error is then reported as usual)."""
    threading = sys.modules.get("threading")
    if (
        _observed()
        or (threading is not None and threading.active_count() > 1)
        or not run_exit_functions()
    ):  # each runs once: the list is emptied
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        sys.exit(code)
    os._exit(code)
