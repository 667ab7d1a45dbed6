"""``flowc render FILE [-f svg|png|pdf|dot|mermaid|html] [-o OUT] [--check] [--direction LR|TB]``.

Exit 0: drawn; 1: the input has errors; 2: could not run (no such file, Graphviz's
``dot`` missing for svg/png/pdf/html, or past its budget, ``--layout-timeout`` and
``--max-layout-size``, or failing; the checker unavailable for ``--check``, PNG or PDF
bytes bound for a terminal: they go to ``-o FILE``, a pipe or a redirected file).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from flowc.commands import config, console
from flowc.commands.console import EXIT_ERRORS, EXIT_OK, UsageError
from flowc.commands.texts import add_command
from flowc.project.layout import layout_failure, text_fallback


def check_layout_options(args: argparse.Namespace) -> None:
    """``--layout-timeout`` and ``--max-layout-size`` make sense (else exit 2)."""
    if not 0 < args.layout_timeout < float("inf"):
        raise UsageError("--layout-timeout must be a positive number of seconds")
    if args.max_layout_size < 1:
        raise UsageError("--max-layout-size must be >= 1")


def add_layout_options(p: argparse.ArgumentParser, what: str = "SVG, PNG, PDF and HTML") -> None:
    """``--layout-timeout SECONDS`` and ``--max-layout-size N``: Graphviz's budget."""
    from flowc.compiler.render.image import LAYOUT_TIMEOUT, MAX_LAYOUT_SIZE

    p.add_argument(
        "--layout-timeout",
        type=float,
        default=LAYOUT_TIMEOUT,
        metavar="SECONDS",
        help=f"the time Graphviz's dot is given to lay out the {what} drawings "
        f"(default {LAYOUT_TIMEOUT:g}); past it dot is stopped and the command says so",
    )
    p.add_argument(
        "--max-layout-size",
        type=int,
        default=MAX_LAYOUT_SIZE,
        metavar="N",
        help=f"the nodes and edges Graphviz's dot is given to lay out (default "
        f"{MAX_LAYOUT_SIZE}); a larger diagram is refused before dot starts",
    )


def cmd_render(args: argparse.Namespace) -> int:
    """Draw a flow or a compiled graph."""
    from flowc.compiler.analysis import load_checked_graph
    from flowc.compiler.compiled import CompiledFlow
    from flowc.compiler.pipeline import LoadedGraph, compile_source
    from flowc.compiler.render.diagram import build_diagram, mark_findings
    from flowc.compiler.render.image import IMAGE_FORMATS, DotNotFoundError, LayoutError
    from flowc.compiler.render.options import BINARY_FORMATS, RenderOptions
    from flowc.compiler.render.rendering import (
        SUFFIX_FORMATS,
        CheckerUnavailableError,
        Rendering,
        run_checker,
    )
    from flowc.diagnostics import has_errors, render_concise

    fmt = args.format
    if fmt is None:
        suffix = Path(args.output).suffix.lower() if args.output and args.output != "-" else ""
        if suffix and suffix not in SUFFIX_FORMATS:  # never SVG bytes under a .jpg name
            raise UsageError(
                f"-o {args.output}: no format writes `{suffix}` files; use one of "
                f"{', '.join(sorted(SUFFIX_FORMATS))}, or give -f"
            )
        fmt = SUFFIX_FORMATS.get(suffix, "svg")
    to_stdout = args.output is None or args.output == "-"
    console.check_output(args.output, inputs=[args.file, *(args.plugin or ())])
    if to_stdout and fmt in BINARY_FORMATS and console.isatty(sys.stdout):
        raise UsageError(
            f"-f {fmt} is binary data, which a terminal cannot show: give -o FILE, "
            f"or redirect the output (flowc render ... -f {fmt} > flow.{fmt})"
        )
    check_layout_options(args)
    plugins = config.setup_plugins(args, [args.file])
    source, diags = console.read_source(args.file)
    if source is None:
        console.print_diagnostics(diags, {})
        return EXIT_ERRORS
    loaded: CompiledFlow | LoadedGraph | None
    if console.is_json_input(args.file, source.text):
        # as `flowc check` and `run` read it: a custom name that loads nothing is refused
        loaded, diags = load_checked_graph(source)
    else:
        loaded, diags = compile_source(source)
    if loaded is None or has_errors(diags):
        console.print_diagnostics(diags, {source.name: source})
        return EXIT_ERRORS
    if (
        plugins
        and isinstance(loaded, CompiledFlow)
        and console.report_unimplemented(loaded, source.name)
    ):
        return EXIT_ERRORS
    diagram = build_diagram(loaded)
    if args.max_states is not None and args.max_states < 1:
        raise UsageError("--max-states must be >= 1")
    drawing = RenderOptions(
        direction=args.direction,
        layout_timeout=args.layout_timeout,
        max_layout_size=args.max_layout_size,
    )
    if fmt in (*IMAGE_FORMATS, "html"):
        try:  # a diagram past the size budget is refused at once, before the checker's work
            Rendering(diagram, drawing).check_layout_size()
        except LayoutError as err:
            raise UsageError(f"-f {fmt}: {layout_failure(err, text_fallback(args.file))}") from None
    if args.check:
        from flowc.compiler.analysis.facts import DEFAULT_MAX_STATES, CheckOptions

        options = CheckOptions(max_states=args.max_states or DEFAULT_MAX_STATES)
        try:
            findings = run_checker(loaded, source, options)
        except CheckerUnavailableError as err:
            raise UsageError(f"--check: {err}") from None
        diagram = mark_findings(diagram, findings)
        if findings:
            sys.stderr.write(render_concise(findings))
    rendering = Rendering(diagram, drawing, source)
    try:
        data = rendering.to_bytes(fmt)
    except DotNotFoundError as err:
        raise UsageError(f"-f {fmt} needs Graphviz: {err}") from None
    except LayoutError as err:
        raise UsageError(f"-f {fmt}: {layout_failure(err, text_fallback(args.file))}") from None
    if fmt == "mermaid":
        from flowc.compiler.render.mermaid import mermaid_limits

        past = mermaid_limits(diagram, data.decode())
        if past is not None:  # (valid text all the same: a viewer may allow more)
            sys.stderr.write(f"flowc render: warning: {past}\n")
    if to_stdout:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        console.write_file(data, args.output)
    return EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from flowc.compiler.render.options import DIRECTIONS, FORMATS

    p = add_command(sub, "render")
    p.add_argument("file", help="a .flow file or a JSON graph / knobs dict (- for stdin)")
    p.add_argument(
        "-f",
        "--format",
        choices=FORMATS,
        default=None,
        help="output format (default: from -o's suffix, else svg)",
    )
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of stdout")
    p.add_argument(
        "--check", action="store_true", help="run the checker and mark its findings on the diagram"
    )
    p.add_argument(
        "--max-states",
        type=int,
        metavar="N",
        help="with --check: the bound on abstract states, as in flowc check "
        "(default 300000); an analysis stopped at it is marked partial (I301)",
    )
    p.add_argument(
        "--direction",
        choices=DIRECTIONS,
        default="LR",
        help="layout direction: LR (left to right, default) or TB (top to bottom)",
    )
    add_layout_options(p)
    config.add_plugin_option(p)


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"render": cmd_render}
