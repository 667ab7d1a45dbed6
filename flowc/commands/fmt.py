"""`flowc fmt`: rewrite files in the canonical layout (``--check``, ``--diff``, ``-``)."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from flowc import cli
from flowc.diagnostics import FlowError
from flowc.dsl.formatter import FormatterBug, format_source


def expand_paths(paths: list[str], suffixes: tuple[str, ...] = (".flow",)) -> list[str]:
    """Files as given; folders expanded recursively to their matching files, sorted."""
    out: list[str] = []
    for p in paths:
        path = Path(p)
        if p != "-" and path.is_dir():
            out.extend(
                str(f) for f in sorted(path.rglob("*")) if f.is_file() and f.suffix in suffixes
            )
        else:
            out.append(p)
    return out


def cmd_fmt(args: argparse.Namespace) -> int:
    status = cli.EXIT_OK
    for path in expand_paths(args.files):
        source, diags = cli.read_source(path)
        if source is None:
            cli.print_diagnostics(diags, {})
            status = max(status, cli.EXIT_ERRORS)
            continue
        try:
            formatted = format_source(source.text, source.name, verify=not args.fast)
        except FlowError as err:
            cli.print_diagnostics(err.diagnostics, {source.name: source})
            status = max(status, cli.EXIT_ERRORS)
            continue
        except FormatterBug as err:
            print(f"flowc fmt: internal error: {err}; the file was left unchanged. "
                  "Please report this with the file.", file=sys.stderr)
            status = cli.EXIT_USAGE
            continue
        changed = formatted != source.text
        if args.diff and changed:
            sys.stdout.writelines(
                difflib.unified_diff(
                    source.text.splitlines(keepends=True),
                    formatted.splitlines(keepends=True),
                    f"{source.name}",
                    f"{source.name} (formatted)",
                )
            )
        if args.check or args.diff:
            if changed:
                if args.check:
                    print(f"would reformat {source.name}", file=sys.stderr)
                status = max(status, cli.EXIT_ERRORS)
            continue
        if path == "-":
            sys.stdout.write(formatted)
        elif changed:
            try:
                Path(path).write_text(formatted, encoding="utf-8")
            except OSError as err:
                raise cli.UsageError(f"{path}: cannot write ({err.strerror})") from None
            print(f"reformatted {source.name}", file=sys.stderr)
    return status


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("fmt", help="rewrite .flow files in the canonical layout")
    p.add_argument("files", nargs="+", metavar="FILE", help=".flow files or folders (- for stdin)")
    p.add_argument("--check", action="store_true", help="exit 1 if a file would change; write nothing")
    p.add_argument("--diff", action="store_true", help="print how files would change; write nothing")
    p.add_argument("--fast", action="store_true",
                   help="skip the check that the output keeps the meaning and is stable")


cli.EXTRA_PARSERS.append(register)
cli.COMMANDS["fmt"] = cmd_fmt
