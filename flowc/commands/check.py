"""`flowc check PATH...` (static analysis) and `flowc explain CODE` (a code's page).

Exit codes: 0 no errors (warnings allowed); 1 an error, or a warning under
``--strict``; 2 the command could not run (a missing or unreadable file, a bad
option or configuration).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from flowc.commands import console
from flowc.commands.batch import collector_paused
from flowc.commands.config import add_plugin_option, setup_plugins
from flowc.commands.console import (
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    Inputs,
    UsageError,
    print_diagnostics,
    read_source,
)
from flowc.commands.texts import add_command
from flowc.compiler.analysis import PARTIAL_CODES, CheckOptions, check_source
from flowc.compiler.analysis.facts import DEFAULT_MAX_STATES
from flowc.diagnostics import CODES, Diagnostic, Severity, counted
from flowc.project.config import Config, options_from
from flowc.project.explain import documented_codes, page
from flowc.source import SourceFile

FORMATS = ("text", "concise", "json", "sarif", "github")


# ── inputs ───────────────────────────────────────────────────────────────────


def collect(paths: Sequence[str]) -> Inputs:
    """Files named, and ``*.flow`` / ``*.json`` under folders (recursively, hidden folders skipped)."""
    return console.collect(paths, (".flow", ".json"))


def _looks_like_graph(text: str) -> bool:
    import json

    from flowc.inputs import DataError, DuplicateKeyError, load_json

    try:
        data = load_json(text)
    except DuplicateKeyError:
        # JSON all the same: another tool's file (package.json, ...) is still skipped
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return True
    except (ValueError, DataError):
        return True  # malformed or refused: report it
    return isinstance(data, dict) and ("initial_speaker" in data or "graph" in data)


def check_files(
    inputs: Inputs, options: CheckOptions
) -> tuple[list[Diagnostic], dict[str, SourceFile], int]:
    """Check every input; returns the findings, the sources and how many files were checked."""
    diags: list[Diagnostic] = []
    sources: dict[str, SourceFile] = {}
    checked = 0
    for path, walked in inputs.files:
        try:
            source, read_diags = read_source(path)
        except UsageError as err:
            inputs.problems.append(str(err))
            continue
        checked += 1
        if source is None:
            diags.extend(read_diags)
            continue
        as_json = console.is_json_input(path, source.text)
        if walked and as_json and not _looks_like_graph(source.text):
            checked -= 1  # some other JSON file in the folder (package.json, ...)
            continue
        sources[source.name] = source
        with collector_paused():
            diags.extend(check_source(source, options, as_json=as_json))
    return diags, sources, checked


def _unimplemented(sources: dict[str, SourceFile], diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    """With plugins loaded: E115 for each custom name of a clean `.flow` that nobody
    implements (at its declaration), and each use its class cannot be built from (at the
    `NAME(...)`), as `flowc run` would refuse them."""
    from flowc.compiler.pipeline import compile_source
    from flowc.runtime.plugins import implementation_problems

    broken = {d.filename for d in diags if d.is_error}
    found: list[Diagnostic] = []
    for name, source in sources.items():
        if name in broken or console.is_json_input(name, source.text):
            continue
        compiled, _ = compile_source(source)
        if compiled is not None:
            found.extend(p.diagnostic() for p in implementation_problems(compiled, name))
    return found


def _summary(diags: Sequence[Diagnostic], files: int) -> str:
    counts = {sev: sum(1 for d in diags if d.severity is sev) for sev in Severity}
    parts = []
    for sev, word, words in (
        (Severity.ERROR, "error", "errors"),
        (Severity.WARNING, "warning", "warnings"),
        (Severity.INFO, "info", "info"),
    ):
        k = counts[sev]
        if k:
            parts.append(counted(k, word, words))
    what = ", ".join(parts) if parts else "no findings"
    return f"{what} in {counted(files, 'file')}\n"


# ── commands ─────────────────────────────────────────────────────────────────


def cmd_check(args: argparse.Namespace) -> int:
    """Check `.flow` files, folders and JSON graphs; print the findings to stdout."""
    paths: list[str] = args.paths or ["."]
    config = Config.for_inputs(paths)
    options = options_from(args, config.table, config.where)
    plugins = setup_plugins(args, paths)
    inputs = collect(paths)
    diags, sources, checked = check_files(inputs, options)
    if not checked and not inputs.problems:
        inputs.problems.append(
            str(console.no_inputs(paths, ".flow files or JSON graphs", "nothing to check"))
        )
    if plugins:
        diags.extend(_unimplemented(sources, diags))
    diags.sort(key=Diagnostic.sort_key)
    print_diagnostics(diags, sources, args.format, stream=sys.stdout)
    if args.format in ("text", "concise") and (checked or not inputs.problems):
        # a path that could not be read is the whole story: no "no findings in 0 files"
        sys.stdout.write(_summary(diags, checked))
    inputs.report("check")
    if inputs.problems:
        return EXIT_USAGE
    # under --strict a partial analysis fails too: the exploration stopped at the bound
    # (I301), a property could not be decided (I305)
    failing = any(
        d.is_error
        or (options.strict and (d.severity is Severity.WARNING or d.code.id in PARTIAL_CODES))
        for d in diags
    )
    return EXIT_ERRORS if failing else EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    """Print a code's page; with no code, list the codes."""
    if not args.code:
        for code in documented_codes():
            c = CODES[code]
            sys.stdout.write(f"{code}  {c.name:<28} {c.severity.value:<8} {c.summary}\n")
        return EXIT_OK
    code = args.code.upper()
    text = page(code) if code in CODES else None
    if text is None:
        raise UsageError(f"no page for `{args.code}`; `flowc explain` lists the codes")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "check")
    p.add_argument(
        "paths", nargs="*", metavar="PATH", help=".flow files, JSON graphs, folders (default: .)"
    )
    p.add_argument(
        "--format", choices=FORMATS, default="text", help="output format (default: text)"
    )
    p.add_argument(
        "--strict",
        action="store_true",
        default=False,
        help="warnings, an analysis cut short at the state bound (I301) and a property it"
        " could not decide (I305) fail the check (exit 1)",
    )
    p.add_argument(
        "--select", metavar="CODES", help="report only these codes or prefixes, e.g. W2,I301"
    )
    p.add_argument("--ignore", metavar="CODES", help="do not report these codes or prefixes")
    p.add_argument(
        "--max-states",
        type=int,
        metavar="N",
        help=f"bound on abstract states (default {DEFAULT_MAX_STATES})",
    )
    p.add_argument(
        "--target",
        choices=("flowc", "ag2"),
        default="flowc",
        help="ag2: also report (E112) what a bare AG2 1.2.1 registry cannot load, "
        "as `flowc compile --target ag2` refuses it",
    )
    add_plugin_option(p)
    e = add_command(sub, "explain")
    e.add_argument("code", nargs="?", metavar="CODE", help="e.g. W204; without it, list the codes")


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check": cmd_check,
    "explain": cmd_explain,
}
