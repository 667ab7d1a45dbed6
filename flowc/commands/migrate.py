"""`flowc migrate INPUT [-o OUT.flow] [--format ...] [--pick NAME]`: group chats -> `.flow`.

Exit 0: translated (lossy parts are reported as M002 warnings, dropped settings as
M003 notes); 1: something was left out (M001); 2: the input could not be read or is
not a recognised configuration (nothing is written).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from flowc.commands import console
from flowc.commands.texts import add_command
from flowc.project.config import Config


def cmd_migrate(args: argparse.Namespace) -> int:
    from flowc.migrate import migrate_source

    console.check_output(args.output, inputs=[args.input])
    Config.for_inputs([args.input])  # (no setting is read, but a broken table is refused)
    source, diags = console.read_source(args.input)
    if source is None:
        console.print_diagnostics(diags, {}, args.format)
        return console.EXIT_USAGE
    result = migrate_source(source, pick=args.pick)
    sources = {source.name: source}
    if result.text is None:
        console.print_diagnostics(result.findings, sources, args.format)
        return console.EXIT_USAGE
    console.write_output(result.text, args.output)
    if result.findings or args.format in ("json", "sarif"):
        console.print_diagnostics(
            sorted(result.findings, key=lambda d: d.sort_key()), sources, args.format
        )
    return console.EXIT_ERRORS if result.left_out else console.EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "migrate")
    p.add_argument(
        "input", help="a classic Python file or an AgentChat component JSON (- for stdin)"
    )
    p.add_argument("-o", "--output", metavar="OUT", help="write the .flow to OUT instead of stdout")
    p.add_argument(
        "--format",
        choices=("text", "concise", "json", "sarif", "github"),
        default="text",
        help="how findings are printed on stderr (default: text)",
    )
    p.add_argument(
        "--pick",
        metavar="NAME",
        help="when the file builds several chats or teams, translate the one assigned to "
        "the variable NAME (or built on line NAME); the others are reported",
    )


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"migrate": cmd_migrate}
