"""`flowc fmt`: rewrite files in the canonical layout (``--check``, ``--diff``, ``-``)."""

from __future__ import annotations

import argparse
import codecs
import difflib
import sys
from collections.abc import Callable
from pathlib import Path

from flowc.commands import console
from flowc.commands.batch import collector_paused
from flowc.commands.texts import add_command
from flowc.diagnostics import FlowError, counted
from flowc.dsl.formatter import FormatterBug, format_source
from flowc.project.config import Config


def summary(changed: int, unchanged: int, failed: int, *, check: bool) -> str:
    """What ``fmt`` did, as ruff and black say it.

    >>> summary(0, 3, 0, check=True)
    '3 files already formatted'
    >>> summary(1, 2, 0, check=True)
    '1 file would be reformatted, 2 files already formatted'
    >>> summary(2, 0, 1, check=False)
    '2 files reformatted, 1 file could not be formatted'
    """
    parts = []
    if changed:
        parts.append(
            f"{counted(changed, 'file')} {'would be reformatted' if check else 'reformatted'}"
        )
    if unchanged:
        parts.append(
            f"{counted(unchanged, 'file')} {'already formatted' if check else 'left unchanged'}"
        )
    if failed:
        parts.append(f"{counted(failed, 'file')} could not be formatted")
    return ", ".join(parts) or "no .flow files"


def _write_stdout(text: str) -> None:
    """``text`` on stdout as UTF-8 bytes, its line endings as they are (a text stream
    may translate them)."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # stdout replaced by a plain text stream (an in-process caller)
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    buffer.write(text.encode("utf-8"))
    buffer.flush()


def cmd_fmt(args: argparse.Namespace) -> int:
    status = console.EXIT_OK
    changed_files = unchanged_files = failed_files = 0
    # a folder as `check` walks it: an entry that cannot be read is said, the rest formatted
    inputs = console.collect(args.files)
    # (fmt takes no setting, but a broken [tool.flowc] is refused as every command does)
    Config.for_inputs(args.files)
    paths = [path for path, _ in inputs.files]
    if not paths and not inputs.problems:
        raise console.no_inputs(args.files, ".flow files", "nothing to format")
    for path in paths:
        read = inputs.read(path)
        if read is None:
            continue
        data, source, diags = read
        if source is None:
            console.print_diagnostics(diags, {})
            status = max(status, console.EXIT_ERRORS)
            failed_files += 1
            continue
        try:
            with collector_paused():
                formatted = format_source(source.text, source.name, verify=not args.fast)
        except FlowError as err:
            console.print_diagnostics(err.diagnostics, {source.name: source})
            status = max(status, console.EXIT_ERRORS)
            failed_files += 1
            continue
        except FormatterBug as err:
            print(
                f"flowc fmt: internal error: {err}; the file was left unchanged; please "
                "report it with the command and the input",
                file=sys.stderr,
            )
            status = console.EXIT_USAGE
            failed_files += 1
            continue
        # (the bytes, not the text read: that has each lone `\r` made a newline already)
        written = data.removeprefix(codecs.BOM_UTF8)  # (what is in the file, its BOM left aside)
        # a byte order mark stays, as the line endings do: fmt changes the layout, never
        # how the file is encoded, so `--check` and `fmt` agree on a file with one
        bom = "\ufeff" if len(written) < len(data) else ""
        changed = formatted.encode("utf-8") != written
        changed_files += changed
        unchanged_files += not changed
        if args.diff and changed:
            sys.stdout.writelines(
                difflib.unified_diff(
                    written.decode("utf-8").splitlines(keepends=True),
                    formatted.splitlines(keepends=True),
                    f"{source.name}",
                    f"{source.name} (formatted)",
                )
            )
        if args.check or args.diff:
            if changed:
                if args.check:
                    print(f"would reformat {source.name}", file=sys.stderr)
                status = max(status, console.EXIT_ERRORS)
            continue
        # the text's own line endings, written as they are (never translated)
        if path == "-":
            _write_stdout(bom + formatted)
        elif changed:
            try:
                Path(path).write_bytes((bom + formatted).encode("utf-8"))
            except OSError as err:
                raise console.UsageError(f"{path}: cannot write ({err.strerror})") from None
            print(f"reformatted {source.name}", file=sys.stderr)
    inputs.report("fmt")
    if paths and paths != ["-"]:
        # (a path that could not be read is a file that could not be formatted)
        failed_files += len(inputs.problems)
        print(
            summary(changed_files, unchanged_files, failed_files, check=args.check or args.diff),
            file=sys.stderr,
        )
    return console.EXIT_USAGE if inputs.problems else status


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "fmt")
    p.add_argument("files", nargs="+", metavar="FILE", help=".flow files or folders (- for stdin)")
    p.add_argument(
        "--check", action="store_true", help="exit 1 if a file would change; write nothing"
    )
    p.add_argument(
        "--diff", action="store_true", help="print how files would change; write nothing"
    )
    p.add_argument(
        "--fast",
        action="store_true",
        help="skip the check that the output keeps the meaning and is stable",
    )


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"fmt": cmd_fmt}
