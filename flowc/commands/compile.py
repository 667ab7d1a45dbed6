"""`flowc compile FILE`: the knobs dict (or the graph alone) as canonical JSON."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from flowc import collector
from flowc.commands.config import add_plugin_option, setup_plugins
from flowc.commands.console import (
    EXIT_ERRORS,
    EXIT_OK,
    UsageError,
    check_output,
    parse_bindings,
    print_diagnostics,
    read_source,
    report_unimplemented,
    write_output,
)
from flowc.commands.texts import add_command
from flowc.diagnostics import has_errors


def cmd_compile(args: argparse.Namespace) -> int:
    # A one-shot batch job whose objects all live until it ends: the cycle collector
    # would only re-scan the whole AST again and again (~40% of the time at 10,000 rules).
    with collector.paused():
        return _compile(args)


def _compile(args: argparse.Namespace) -> int:
    from flowc.compiler.compiled import BindingError
    from flowc.compiler.pipeline import compile_source

    check_output(args.output, inputs=[args.file, *(args.plugin or ())])
    bindings = parse_bindings(args.bind)
    plugins = setup_plugins(args, [args.file])
    source, diags = read_source(args.file)
    if source is None:
        print_diagnostics(diags, {})
        return EXIT_ERRORS
    try:
        compiled, diags = compile_source(source, bindings)
    except BindingError as err:
        if err.unknown:
            raise UsageError(
                f"--bind names no declared speaker: {', '.join(err.unknown)}"
            ) from None
        raise UsageError(f"--bind: {err.problem}") from None
    if diags:
        print_diagnostics(diags, {source.name: source})
    if compiled is None or has_errors(diags):
        return EXIT_ERRORS
    from flowc.compiler.portability import bare_ag2_problems, registration_note

    if args.target == "ag2":
        problems = bare_ag2_problems(compiled, source.name)
        if problems:
            print_diagnostics(problems, {source.name: source})
            return EXIT_ERRORS
    if plugins and report_unimplemented(compiled, source.name):
        return EXIT_ERRORS
    write_output(compiled.to_json(graph_only=args.graph), args.output)
    note = registration_note(compiled)
    if note is not None:
        print(f"{source.name}: note: {note}", file=sys.stderr)
    return EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "compile")
    p.add_argument("file", help="the .flow file (- for stdin)")
    p.add_argument("--graph", action="store_true", help="print the graph dict alone, not the knobs")
    p.add_argument(
        "--bind", action="append", metavar="NAME=ID", help="bind a speaker to an agent id"
    )
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of stdout")
    p.add_argument(
        "--target",
        choices=("flowc", "ag2"),
        default="flowc",
        help="ag2: refuse, with the source span, every construct a bare AG2 1.2.1 registry "
        "cannot load (flowc's and/or/not/!= composites, custom conditions and targets); "
        "flowc (default): compile them, and note on stderr what AG2 must register",
    )
    add_plugin_option(p)


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"compile": cmd_compile}
