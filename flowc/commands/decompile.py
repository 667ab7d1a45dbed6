"""`flowc decompile GRAPH.json`: a graph dict (or knobs dict) back to a `.flow`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from flowc.commands import console
from flowc.commands.texts import add_command
from flowc.diagnostics import E001, Diagnostic, FlowError
from flowc.project.config import Config


def cmd_decompile(args: argparse.Namespace) -> int:
    from flowc.compiler.decompile import decompile, unrecovered_in
    from flowc.compiler.pipeline import read_json

    console.check_output(args.output, inputs=[args.file])
    Config.for_inputs([args.file])  # (no setting is read, but a broken table is refused)
    source, diags = console.read_source(args.file)
    if source is None:
        console.print_diagnostics(diags, {})
        return console.EXIT_ERRORS
    data, diags = read_json(source)
    if diags:
        console.print_diagnostics(diags, {source.name: source})
        return console.EXIT_ERRORS
    if not isinstance(data, dict):
        console.print_diagnostics(
            [
                Diagnostic(
                    E001,
                    "expected a JSON object (a graph or a knobs dict)",
                    source.name,
                    source.span(0, min(1, len(source.text))),
                )
            ],
            {source.name: source},
        )
        return console.EXIT_ERRORS
    participants = [p for p in (args.participants or "").split(",") if p]
    if args.initiator and participants and args.initiator not in participants:
        raise console.UsageError(
            f"--initiator {args.initiator} is not one of --participants "
            f"({', '.join(participants)}): name one of them"
        )
    try:
        text = decompile(
            data,
            participants=participants,
            title=args.name,
            filename=source.name,
            initiator=args.initiator,
        )
    except FlowError as err:
        console.print_diagnostics(err.diagnostics, {source.name: source})
        return console.EXIT_ERRORS
    console.write_output(text, args.output)
    # what the graph routes by but does not carry: the .flow can only guess it
    for path, what in unrecovered_in(data, participants, args.initiator):
        print(f"{source.name}: warning: {path}: {what}", file=sys.stderr)
    return console.EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "decompile")
    p.add_argument("file", metavar="GRAPH.json", help="a graph dict or knobs dict (- for stdin)")
    p.add_argument(
        "--participants",
        metavar="A,B,...",
        help="the channel's participants in order (a graph names only some of them, "
        "and `next` goes round all of them in this order)",
    )
    p.add_argument(
        "--initiator",
        metavar="NAME",
        help="the channel's creator, whom `initiator` routes back to (a graph does not "
        "carry it; default: the start speaker)",
    )
    p.add_argument("--name", help="the flow's name (`flow NAME`)")
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of stdout")


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"decompile": cmd_decompile}
