"""`flowc lsp`: the language server for editors, over stdin/stdout.

pygls is imported only when the command runs, so other commands do not pay for it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from flowc.commands.console import EXIT_OK
from flowc.commands.texts import add_command


def cmd_lsp(args: argparse.Namespace) -> int:
    """Serve the Language Server Protocol on stdin/stdout until the editor closes it."""
    from flowc.commands.render import check_layout_options
    from flowc.compiler.render.options import RenderOptions
    from flowc.lsp.server import serve

    check_layout_options(args)
    layout = RenderOptions(layout_timeout=args.layout_timeout, max_layout_size=args.max_layout_size)
    serve(trust=args.trust, layout=layout)
    return EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "lsp")
    p.add_argument(
        "--stdio",
        action="store_true",
        help="accepted for editors that pass it; stdin/stdout is the only transport",
    )
    from flowc.commands.config import add_trust_option
    from flowc.commands.render import add_layout_options

    add_layout_options(p, "diagram command's")

    add_trust_option(
        p,
        "import the plugins that [tool.flowc] lists in every folder the server opens, "
        "trusted or not (docs/trust.md): an editor passes it only where its user's own "
        "settings ask for it, never a workspace's",
    )


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"lsp": cmd_lsp}
