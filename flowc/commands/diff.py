"""`flowc diff OLD NEW`: what a change to a flow changes in its runs.

Either side is a `.flow` file, a JSON graph or knobs dict, ``-`` (stdin) or a git revision
``REV:path``. Exit 0 when the behaviour is the same, 1 when it changed, 2 when it cannot
decide (the state bound, custom conditions or targets, a property the checker could not
decide in a version) or an input has errors.
With ``--git`` it takes the seven arguments git passes a diff driver.
"""

from __future__ import annotations

import argparse
import json
import secrets
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flowc.commands.console import (
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    check_distinct_outputs,
    check_output,
    decode_source,
    is_json_input,
    print_diagnostics,
    read_source,
    use_color,
    write_file,
    write_output,
)
from flowc.commands.texts import add_command
from flowc.diagnostics import shown
from flowc.escaping import Code, Phrase, md_code, md_text, phrase
from flowc.source import SourceFile

FORMATS = ("text", "markdown", "json")

#: exit codes: the behaviour is the same, it changed, flowc could not decide (the state
#: bound, custom conditions and targets deciding the only differences, or a property of
#: both versions not decided in one); an input that cannot be read or has errors is
#: EXIT_USAGE too
EXIT_SAME, EXIT_CHANGED, EXIT_UNKNOWN = EXIT_OK, EXIT_ERRORS, EXIT_USAGE


# ── input ────────────────────────────────────────────────────────────────────


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], capture_output=True, timeout=60, check=False)


def _git_error(spec: str, proc: subprocess.CompletedProcess[bytes], fallback: str) -> UsageError:
    message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    return UsageError(f"{spec}: {message[-1] if message else fallback}")


def _git_blob(spec: str) -> bytes | None:
    """The bytes of the file ``REV:path`` in git, or None when ``spec`` is not a git
    revision. Only one file is read (``git cat-file blob``): a revision that does not
    exist, a path not in it, a folder or a range is an error, and a spec starting with
    ``-`` is refused before git sees it (git would take it as an option)."""
    rev, sep, path = spec.partition(":")
    if not sep or not rev or not path:
        return None
    if spec.startswith("-"):
        raise UsageError(f"{spec}: no such file, and a revision REV:path cannot start with '-'")
    try:
        # `--` ends the options (older git than --end-of-options knows it too)
        proc = _git("cat-file", "blob", "--", spec)
        if proc.returncode == 0:
            return proc.stdout
        kind = _git("cat-file", "-t", "--", spec)  # why: missing, or not a file
    except (OSError, subprocess.TimeoutExpired):
        return None
    if kind.returncode != 0:
        raise _git_error(spec, kind, "git cat-file failed")
    found = kind.stdout.decode("utf-8", "replace").strip()
    if found == "tree":
        raise UsageError(f"{spec}: a folder in that revision, not a file")
    if found and found != "blob":
        raise UsageError(f"{spec}: a git {found}, not a file")
    raise _git_error(spec, proc, "git cat-file failed")  # a blob now: it changed meanwhile


def read_version_source(
    spec: str, label: str | None = None
) -> tuple[SourceFile | None, tuple[Any, ...], str]:
    """The source of one side: a file, ``-``, or ``REV:path``; and the name its path has."""
    if spec == "-" or Path(spec).exists() or ":" not in spec:
        source, diags = read_source(spec)
        if source is not None and label is not None:
            source = SourceFile(label, source.text)
        return source, diags, spec
    data = _git_blob(spec)
    if data is None:  # pragma: no cover - a spec with ':' that is neither: read_source says why
        source, diags = read_source(spec)
        return source, diags, spec
    source, diags = decode_source(label or spec, data)
    return source, diags, spec.partition(":")[2]


def load_version(spec: str, label: str | None = None) -> Any:
    """A :class:`Version` of one side, or exits with its errors printed."""
    from flowc.compiler.analysis import load_checked_graph
    from flowc.compiler.analysis.changes import Version
    from flowc.compiler.pipeline import compile_source
    from flowc.diagnostics import has_errors

    source, diags, path = read_version_source(spec, label)
    if source is None:
        print_diagnostics(diags, {})
        raise _Failed
    if is_json_input(path, source.text):
        loaded, diags = load_checked_graph(source)  # as `flowc check` reads it
        if loaded is None:
            print_diagnostics(diags, {source.name: source})
            raise _Failed
        return Version(source.name, loaded=loaded, source=source)
    compiled, diags = compile_source(source)
    if compiled is None or has_errors(diags):
        print_diagnostics(diags, {source.name: source})
        raise _Failed
    return Version(source.name, compiled=compiled, source=source)


class _Failed(Exception):
    """An input did not load; its errors are printed."""


# ── output ───────────────────────────────────────────────────────────────────


def _routing_phrases(
    change: Any, old_rules: dict[int, str], new_rules: dict[int, str]
) -> list[Phrase]:
    """A behavioural change's distinguishing run and where OLD and NEW go after it, one
    line a phrase (the first starts ``run:``, the next ``OLD:`` and ``NEW:``)."""
    from flowc.compiler.analysis.run_phrases import routed_phrase, run_phrase

    if change.run is None or change.old is None or change.new is None:
        return []
    if not change.run:
        return [
            phrase("OLD starts with ", Code(change.old.next), ", NEW with ", Code(change.new.next))
        ]
    lines = [
        phrase("run: ", run_phrase(change.run)),
        phrase("OLD: → ", routed_phrase(change.old, old_rules)),
        phrase("NEW: → ", routed_phrase(change.new, new_rules)),
    ]
    if change.then:
        lines.append(
            phrase(f"then {change.then_side.upper()} goes on: ", phrase(" → ").join(change.then))
        )
    return lines


def _routing_lines(change: Any, old_rules: dict[int, str], new_rules: dict[int, str]) -> list[str]:
    return [str(p) for p in _routing_phrases(change, old_rules, new_rules)]


def _then_text(change: Any) -> str:
    return " → ".join(map(str, change.then))


#: the escape sequences the text report writes itself, with colour: green, red, bold, reset
_COLOR_CODES = ("\x1b[32m", "\x1b[31m", "\x1b[1m", "\x1b[0m")


def render_text(diff: Any, color: bool = False) -> str:
    """The text report, with the control characters of what it quotes (a name holding
    ESC) written as escapes. With ``color``, the report is made with a random mark for
    each colour, no name can hold, then escaped, then each mark is made its colour: so
    only the report's own colours reach the terminal."""
    if not color:
        return shown(_render_text(diff, ("",) * 4))
    nonce = secrets.token_hex(8)
    marks = tuple(f"\ue000{nonce}{i}\ue001" for i in range(len(_COLOR_CODES)))
    text = shown(_render_text(diff, marks))
    for mark, code in zip(marks, _COLOR_CODES, strict=True):
        text = text.replace(mark, code)
    return text


def _render_text(diff: Any, colors: tuple[str, ...]) -> str:
    from flowc.compiler.analysis.changes import SAME, UNKNOWN, rule_labels

    old_rules, new_rules = rule_labels(diff.old), rule_labels(diff.new)
    green, red, bold, reset = colors
    out = [f"{bold}flowc diff {diff.old.label} → {diff.new.label}{reset}"]
    if diff.as_graphs and not diff.notes:
        out.append(
            "(compared as graphs: any participant may call any tool, write any context and"
            " hand off to any participant)"
        )
    out += [f"note: {n}" for n in diff.notes]
    out.append("")
    out.append(f"structural changes: {len(diff.structural) or 'none'}")
    for c in diff.structural:
        mark = (
            f"{green}+{reset}"
            if c.kind.endswith("added")
            else f"{red}-{reset}"
            if c.kind.endswith("removed")
            else "~"
        )
        out.append(f"  {mark} {c.text}")
    out.append("")
    if diff.verdict == SAME:
        out.append("behaviour: the same — no run routes differently")
        for c in diff.behavioural:  # findings that changed without any run changing
            out.append(f"  note: {c.text}")
        if diff.truncated:
            out.append(
                "  (a single version's exploration reached the state bound: these notes may be "
                "incomplete; raise --max-states)"
            )
        return "\n".join(out) + "\n"
    from flowc.compiler.analysis.changes import PROPERTY_FLIPS, PROPERTY_UNKNOWN

    if diff.verdict == UNKNOWN:
        out.append(f"{bold}behaviour: unknown{reset} — {diff.reason}")
        if diff.first is not None:
            out.append(
                "  a run that routes differently if custom conditions and targets decide as shown:"
            )
            out += [f"    {line}" for line in _routing_lines(diff.first, old_rules, new_rules)]
        for c in diff.behavioural:
            # a property not decided is no "possibly": it is why the verdict is unknown
            out.append(f"  {'*' if c.kind == PROPERTY_UNKNOWN else 'possibly:'} {c.text}")
        return "\n".join(out) + "\n"
    if diff.first is None:  # only a property's verdict changed
        out.append(
            f"{bold}behaviour: changed{reset} — no run routes differently, but a run breaks "
            "a property in one version only"
        )
    else:
        out.append(f"{bold}behaviour: changed{reset}")
        out.append("  shortest distinguishing run:")
        out += [f"    {line}" for line in _routing_lines(diff.first, old_rules, new_rules)]
    for c in diff.behavioural:
        if diff.first is None and c.kind not in (*PROPERTY_FLIPS, PROPERTY_UNKNOWN):
            # no run routes differently: the others are notes, as when nothing changed
            out.append(f"  note: {c.text}")
            continue
        out.append(f"  * {c.text}")
        if (
            diff.first is not None
            and c.run is not None
            and (c.run, c.old, c.new)
            == (
                diff.first.run,
                diff.first.old,
                diff.first.new,
            )
        ):
            above = (
                "the shortest distinguishing run above"
                if diff.first.run
                else "none (the versions differ at the first speaker, above)"
            )
            out.append(
                f"      run: {above}"
                + (f"; then {c.then_side.upper()} goes on: {_then_text(c)}" if c.then else "")
            )
            continue
        out += [f"      {line}" for line in _routing_lines(c, old_rules, new_rules)]
    if diff.truncated:
        out.append("  (the state bound was reached: more changes may exist; raise --max-states)")
    return "\n".join(out) + "\n"


def render_markdown(diff: Any) -> str:
    """The report as GitHub Flavored Markdown, for a pull-request comment. flowc's words
    are escaped text; every name, value, rule and file name the flows bring is a code
    span (:mod:`flowc.escaping`), so none becomes HTML, a link, an autolink or a mention."""
    from flowc.compiler.analysis.changes import PROPERTY_FLIPS, PROPERTY_UNKNOWN, rule_labels

    old_rules, new_rules = rule_labels(diff.old), rule_labels(diff.new)
    verdict = {
        "changed": "**behaviour changed**",
        "same": "behaviour unchanged",
        "unknown": "**behaviour unknown**",
    }[diff.verdict]
    out = [
        f"### `flowc diff` {md_code(diff.old.label)} → {md_code(diff.new.label)}: {verdict}",
        "",
    ]
    if diff.as_graphs and not diff.notes:
        out += [
            "_Compared as graphs: any participant may call any tool, write any context and"
            " hand off to any participant._",
            "",
        ]
    if diff.notes:
        out += [f"_Note: {n.markdown()}_" for n in diff.notes]
        out.append("")
    if diff.structural:
        out += [f"**Structural changes** ({len(diff.structural)})", ""]
        out += [f"- {c.phrase.markdown()}" for c in diff.structural]
        out.append("")
    else:
        out += ["No structural change.", ""]
    if diff.verdict == "same":
        out.append("No run routes differently.")
        out += [f"- note: {c.phrase.markdown()}" for c in diff.behavioural]
        return "\n".join(out) + "\n"
    if diff.verdict == "changed" and diff.first is None:  # only a property's verdict changed
        out += ["No run routes differently, but a run breaks a property in one version only.", ""]
        out += [
            f"- {'' if c.kind in (*PROPERTY_FLIPS, PROPERTY_UNKNOWN) else 'note: '}"
            f"{c.phrase.markdown()}"
            for c in diff.behavioural
        ]
        return "\n".join(out) + "\n"
    if diff.verdict == "unknown":
        out += [f"flowc could not decide: {md_text(diff.reason)}.", ""]
        if diff.first is None:
            # the properties not decided (the table below, when there is a run)
            out += [
                f"- {c.phrase.markdown()}" for c in diff.behavioural if c.kind == PROPERTY_UNKNOWN
            ]
            return "\n".join(out) + "\n"
    title = (
        "**Behavioural changes**"
        if diff.verdict == "changed"
        else "**Possible behavioural changes** (if custom conditions and targets decide as shown)"
    )
    out += [title, "", "| change | distinguishing run | OLD | NEW |", "|---|---|---|---|"]
    for c in (diff.first, *diff.behavioural):
        lines = _routing_phrases(c, old_rules, new_rules)
        run = _after(lines[0], "run: ") if lines else phrase()
        if c.then:
            run = phrase(run, f" … then {c.then_side.upper()}: ", phrase(" → ").join(c.then))
        old = _after(lines[1], "OLD: ") if len(lines) > 1 else phrase()
        new = _after(lines[2], "NEW: ") if len(lines) > 2 else phrase()
        text = phrase("the shortest distinguishing run") if c is diff.first else c.phrase
        cells = (p.markdown(in_table=True) for p in (text, run, old, new))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _after(line: Phrase, head: str) -> Phrase:
    """``line`` without the words ``head`` when it starts with them."""
    first, *rest = line.pieces or ("",)
    if not isinstance(first, str):
        return line
    return phrase(first.removeprefix(head), *rest)


def _turn_json(turn: Any) -> dict[str, Any]:
    return {
        "speaker": turn.speaker,
        "tool": turn.tool,
        "alternative": turn.alternative,
        "effects": turn.effects,
        "context": dict(turn.context),
        "assumed": dict(turn.assumed),
        "chosen": list(turn.chosen),
        "handoff": turn.handoff,
    }


def _routed_json(r: Any, rules: dict[int, str]) -> dict[str, Any] | None:
    if r is None:
        return None
    from flowc.compiler.analysis.explore import DEFAULT, FINISH, HANDOFF
    from flowc.compiler.analysis.lockstep import REFUSED

    by = {DEFAULT: "default", HANDOFF: "handoff", FINISH: "finish", REFUSED: "refused"}.get(r.fired)
    out = {
        "next": r.next,
        "reason": r.reason,
        "rule": None if by else r.fired + 1,
        "by": by or rules.get(r.fired),
    }
    if r.refused is not None:
        out["refused"] = r.refused
    return out


def _change_json(c: Any, old_rules: dict[int, str], new_rules: dict[int, str]) -> dict[str, Any]:
    """A change as JSON; a behavioural one with its run: the turns, where each version
    goes after them (``None`` for the version a property's run is not about), how the
    changed version goes on, and for a property's verdict where its run's loop starts."""
    from flowc.compiler.analysis.changes import PROPERTY_FLIPS

    out: dict[str, Any] = {"kind": c.kind, "text": c.text, "subject": c.subject}
    if c.run is not None:
        out["run"] = [_turn_json(t) for t in c.run]
        out["old"] = _routed_json(c.old, old_rules)
        out["new"] = _routed_json(c.new, new_rules)
        if c.then:
            out["then"] = {"side": c.then_side, "speakers": [str(p) for p in c.then]}
        if c.kind in PROPERTY_FLIPS:
            out["loop_from"] = c.loop_from
    return out


def render_json(diff: Any) -> str:
    from flowc.compiler.analysis.changes import rule_labels

    old_rules, new_rules = rule_labels(diff.old), rule_labels(diff.new)
    data = {
        "old": diff.old.label,
        "new": diff.new.label,
        "behaviour_changed": diff.behaviour_changed,
        "verdict": diff.verdict,
        "reason": diff.reason or None,
        "truncated": diff.truncated,
        "as_graphs": diff.as_graphs,
        "notes": [str(n) for n in diff.notes],
        "structural": [_change_json(c, old_rules, new_rules) for c in diff.structural],
        "first": _change_json(diff.first, old_rules, new_rules) if diff.first is not None else None,
        "behavioural": [_change_json(c, old_rules, new_rules) for c in diff.behavioural],
    }
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def write_rendering(
    old: Any, new: Any, out: str, args: argparse.Namespace, new_spec: str = ""
) -> None:
    """NEW (read from ``new_spec``) drawn with the edges it adds green and the ones it
    removes red, as SVG or the HTML page, within the layout's budget (``args``:
    ``--layout-timeout`` and ``--max-layout-size``)."""
    from flowc.compiler.render.compare import mark_changes
    from flowc.compiler.render.diagram import build_diagram
    from flowc.compiler.render.image import DotNotFoundError, LayoutError
    from flowc.compiler.render.options import RenderOptions
    from flowc.compiler.render.rendering import Rendering
    from flowc.project.layout import layout_failure, text_fallback

    def diagram(version: Any) -> Any:
        return build_diagram(version.compiled if version.compiled is not None else version.loaded)

    options = RenderOptions(
        layout_timeout=args.layout_timeout, max_layout_size=args.max_layout_size
    )
    rendering = Rendering(mark_changes(diagram(old), diagram(new)), options, source=new.source)
    try:
        data = rendering.to_bytes(
            "html" if Path(out).suffix.lower() in (".html", ".htm") else "svg"
        )
    except DotNotFoundError as err:
        raise UsageError(f"--render needs Graphviz: {err}") from None
    except LayoutError as err:
        local = new_spec if Path(new_spec).is_file() else ""  # not REV:path nor stdin
        raise UsageError(f"--render: {layout_failure(err, text_fallback(local))}") from None
    write_file(data, out, "--render")


# ── command ──────────────────────────────────────────────────────────────────


def cmd_diff(args: argparse.Namespace) -> int:
    from flowc.compiler.analysis.changes import CHANGED, SAME, diff_versions
    from flowc.compiler.analysis.facts import CheckOptions

    specs: list[str] = args.versions
    labels: list[str | None] = [None, None]
    if args.git:
        # git's diff driver: path old-file old-hex old-mode new-file new-hex new-mode
        if len(specs) != 7:
            raise UsageError("--git takes the 7 arguments git passes a diff driver")
        path = specs[0]
        specs, labels = [specs[1], specs[4]], [f"a/{path}", f"b/{path}"]
        if "/dev/null" in specs:
            print(f"flowc diff {path}: {'added' if specs[0] == '/dev/null' else 'deleted'}")
            return EXIT_OK
    elif len(specs) != 2:
        raise UsageError("give two versions: flowc diff OLD NEW")
    if args.max_states < 1:
        raise UsageError("--max-states must be >= 1")
    from flowc.commands.config import setup_plugins
    from flowc.commands.render import check_layout_options

    check_layout_options(args)

    # custom conditions and targets registered by plugins (as for check and render); the
    # configuration is the first local side's
    setup_plugins(args, [s for s in specs if Path(s).exists()])
    if args.render and Path(args.render).suffix.lower() not in (".svg", ".html", ".htm"):
        raise UsageError("--render writes an .svg or .html file")
    inputs = [*specs, *(args.plugin or ())]  # REV:path and git's names match no file
    check_output(args.output, inputs=inputs)
    check_output(args.render, "--render", inputs)
    check_distinct_outputs([("-o", args.output), ("--render", args.render)])
    try:
        old = load_version(specs[0], labels[0])
        new = load_version(specs[1], labels[1])
    except _Failed:
        return EXIT_OK if args.git else EXIT_USAGE
    diff = diff_versions(
        old, new, CheckOptions(max_states=args.max_states), as_graphs=args.as_graphs
    )
    if args.format == "json":
        text = render_json(diff)
    elif args.format == "markdown":
        text = render_markdown(diff)
    else:
        text = render_text(diff, color=use_color(sys.stdout))
    if args.output:
        write_output(text, args.output)
    else:
        sys.stdout.write(text)
    if args.render:
        write_rendering(old, new, args.render, args, specs[1])
    if args.git:
        return EXIT_OK
    return {SAME: EXIT_OK, CHANGED: EXIT_CHANGED}.get(diff.verdict, EXIT_UNKNOWN)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "diff")
    p.add_argument(
        "versions",
        nargs="+",
        metavar="OLD NEW",
        help="the two versions: FILE, JSON graph, - or REV:path (with --git: git's 7 arguments)",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text (default), markdown (a pull-request comment) or json",
    )
    p.add_argument(
        "-o", "--output", metavar="OUT", help="write the report to OUT instead of stdout"
    )
    p.add_argument(
        "--render",
        metavar="OUT",
        help="draw NEW with the edges it adds green and the ones it removes red "
        "(OUT.svg, or OUT.html for the page)",
    )
    p.add_argument(
        "--max-states",
        type=int,
        default=100_000,
        metavar="N",
        help="bound on the states explored per flow and for the pair (default 100000)",
    )
    p.add_argument(
        "--as-graphs",
        action="store_true",
        help="compare the routing graphs only: any participant may call any tool, write "
        "any context and hand off to any participant (automatic when a side is JSON or "
        "declares no tools and no humans)",
    )
    from flowc.commands.config import add_plugin_option
    from flowc.commands.render import add_layout_options

    add_layout_options(p, "--render")
    add_plugin_option(p)
    p.add_argument(
        "--git",
        action="store_true",
        help="take git's diff-driver arguments (path old-file old-hex old-mode new-file "
        "new-hex new-mode); always exit 0 so that git goes on",
    )
    # two versions, not "OLD NEW [OLD NEW ...]" (argparse's way of writing nargs="+",
    # which --git needs for its 7)
    usage = p.format_usage().removeprefix("usage: ").rstrip("\n")
    p.usage = usage.replace("OLD NEW [OLD NEW ...]", "OLD NEW").replace(p.prog, "%(prog)s", 1)


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"diff": cmd_diff}
