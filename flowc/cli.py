"""The `flowc` command line. Handlers are ``cmd_<name>(args) -> int``.

Exit codes: 0 ok, 1 the input has errors, 2 the command could not run.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from flowc.diagnostics import (
    E001,
    Diagnostic,
    has_errors,
    render_concise,
    render_github,
    render_json,
    render_sarif,
    render_text,
)
from flowc.source import SourceFile

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """The command could not run (exit 2)."""


# ── input ────────────────────────────────────────────────────────────────────


def read_source(path: str) -> tuple[SourceFile | None, tuple[Diagnostic, ...]]:
    """Read a file (``-`` is stdin) as UTF-8.

    A missing or unreadable file raises :class:`UsageError`; text that is not UTF-8
    is an E001 diagnostic pointing at the first bad byte.
    """
    name = "<stdin>" if path == "-" else path
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory") from None
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as err:
        raise UsageError(f"{path}: cannot read ({err.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        good = data[: err.start].decode("utf-8", errors="replace")
        source = SourceFile(name, good + "\ufffd")
        span = source.span(len(good), len(good) + 1)
        return None, (
            Diagnostic(
                E001,
                f"the file is not valid UTF-8 (byte 0x{data[err.start]:02x})",
                name,
                span,
                help="save the file as UTF-8",
            ),
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(name, text), ()


def is_json_input(path: str, text: str | None = None) -> bool:
    if path.endswith(".json"):
        return True
    return text is not None and not path.endswith(".flow") and text.lstrip().startswith("{")


def print_diagnostics(
    diags: Sequence[Diagnostic],
    sources: dict[str, SourceFile],
    fmt: str = "text",
    stream: TextIO | None = None,
) -> None:
    out = stream or sys.stderr
    if fmt == "text":
        color = hasattr(out, "isatty") and out.isatty() and not os.environ.get("NO_COLOR")
        text = render_text(diags, sources, color=bool(color))
    elif fmt == "concise":
        text = render_concise(diags)
    elif fmt == "json":
        text = render_json(diags)
    elif fmt == "sarif":
        text = render_sarif(diags)
    elif fmt == "github":
        text = render_github(diags)
    else:  # pragma: no cover - argparse restricts the choices
        raise UsageError(f"unknown format {fmt}")
    out.write(text)


def write_output(text: str, out: str | None) -> None:
    if out is None or out == "-":
        sys.stdout.write(text)
        return
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text, encoding="utf-8")
    except OSError as err:
        raise UsageError(f"{out}: cannot write ({err.strerror})") from None


def parse_bindings(items: Sequence[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, agent_id = item.partition("=")
        if not sep or not name or not agent_id:
            raise UsageError(f"--bind takes NAME=ID, got {item!r}")
        out[name] = agent_id
    return out


# ── commands ─────────────────────────────────────────────────────────────────


def cmd_compile(args: argparse.Namespace) -> int:
    # A one-shot batch job whose objects all live until it ends: the cycle collector
    # would only re-scan the whole AST again and again (~40% of the time at 10,000 rules).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _compile(args)
    finally:
        if was_enabled:
            gc.enable()


def _compile(args: argparse.Namespace) -> int:
    from flowc.compiler.pipeline import compile_source

    bindings = parse_bindings(args.bind)
    source, diags = read_source(args.file)
    if source is None:
        print_diagnostics(diags, {})
        return EXIT_ERRORS
    compiled, diags = compile_source(source, bindings)
    if diags:
        print_diagnostics(diags, {source.name: source})
    if compiled is None or has_errors(diags):
        return EXIT_ERRORS
    unknown = sorted(set(bindings) - set(compiled.speakers))
    if unknown:
        raise UsageError(f"--bind names no declared speaker: {', '.join(unknown)}")
    write_output(compiled.to_json(graph_only=args.graph), args.output)
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"compile": cmd_compile}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flowc",
        description="Compile, check, draw, test and run .flow workflow graphs for AG2.",
    )
    parser.add_argument("--version", action="version", version="flowc 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("compile", help="compile a .flow file to AG2's TransitionGraph JSON")
    p.add_argument("file", help="the .flow file (- for stdin)")
    p.add_argument("--graph", action="store_true", help="print the graph dict alone, not the knobs")
    p.add_argument("--bind", action="append", metavar="NAME=ID", help="bind a speaker to an agent id")
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of stdout")

    for register in EXTRA_PARSERS:
        register(sub)
    return parser


#: other modules add their subcommands here: ``register(subparsers)``
EXTRA_PARSERS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = []


#: the module that registers each subcommand (``compile`` lives here)
COMMAND_MODULES = {
    "check": "flowc.commands.check",
    "explain": "flowc.commands.check",
    "decompile": "flowc.commands.decompile",
    "fmt": "flowc.commands.fmt",
    "migrate": "flowc.commands.migrate",
    "render": "flowc.commands.render",
    "run": "flowc.commands.run",
    "resume": "flowc.commands.run",
    "test": "flowc.commands.testing",
    "scenarios": "flowc.commands.testing",
    "log": "flowc.commands.run",
    "replay": "flowc.commands.run",
}


def load_commands(argv: Sequence[str]) -> None:
    """Import the module of the requested subcommand only (all of them for help or
    an unknown command), so a command does not pay for the others' dependencies."""
    import importlib

    wanted = next((a for a in argv if not a.startswith("-")), None)
    if wanted == "compile" or (wanted is None and "--version" in argv):
        return
    module = COMMAND_MODULES.get(wanted or "")
    if module is not None:
        importlib.import_module(module)
    else:
        importlib.import_module("flowc.commands")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``flowc`` command; returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    load_commands(arguments)
    parser = build_parser()
    args = parser.parse_args(arguments)
    if not args.command:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return COMMANDS[args.command](args)
    except UsageError as err:
        print(f"flowc {args.command}: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


def run() -> None:
    sys.exit(main())
