"""``# flowc: ignore[CODE]`` comments: silence a code on a line; report those that silence nothing."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

import attrs

from flowc.diagnostics import CODES, X001, Diagnostic
from flowc.dsl import nodes as n
from flowc.dsl.comments import comments_containing
from flowc.dsl.ignores import IGNORE as _IGNORE
from flowc.dsl.ignores import named_codes


def apply_ignores(
    diagnostics: Sequence[Diagnostic],
    comments: Sequence[n.Comment],
    filename: str,
    hidden: Sequence[Diagnostic] = (),
    unchecked: Collection[str] = (),
    joined: Mapping[int, range] | None = None,
) -> tuple[Diagnostic, ...]:
    """Drop the findings an ignore comment on their line names, and add X001 for bad ignores.

    ``joined`` (:func:`flowc.dsl.formatter.joined_lines`): for each line of a statement
    written over several lines, that statement's lines. An ignore comment on any of them
    is one on each: ``flowc fmt`` writes the statement on one line, and what it silences
    must not change with the layout.

    ``hidden`` findings are not reported, but an ignore comment naming one on its line is
    not "unused" (W218-W222 are the one note I304 without ``--target ag2``, and the other
    way round with it: a comment for either form holds in both). Nor is one naming a code
    of ``unchecked``, whose check did not run (an opt-in code such as I307 that this check
    did not select): it silences that code when a check selects it.

    >>> from flowc.source import Span
    >>> from flowc.diagnostics import W207
    >>> d = Diagnostic(W207, "m", "f", Span(2, 1, 2, 5))
    >>> c = n.Comment(" flowc: ignore[W207]", Span(2, 9, 2, 30))
    >>> apply_ignores([d], [c], "f")
    ()
    """
    kept: list[Diagnostic] = []
    ignores: list[tuple[n.Comment, list[str]]] = []
    out_extra: list[Diagnostic] = []
    # only a comment that says `flowc` can be one: found in the file's text, not by
    # reading each of (maybe) millions of comments
    for c in comments_containing(comments, "flowc"):
        match = _IGNORE.match(c.text)
        if match is None:
            continue
        codes = named_codes(match)
        if not codes:
            out_extra.append(
                Diagnostic(
                    X001,
                    "this ignore comment names no code, so it silences nothing",
                    filename,
                    c.span,
                    help="name the code it silences: `# flowc: ignore[W205]`",
                )
            )
            continue
        unknown = [x for x in codes if x not in CODES]
        for x in unknown:
            out_extra.append(
                Diagnostic(
                    X001,
                    f"`{x}` is not a flowc code",
                    filename,
                    c.span,
                    help="use a code from `flowc explain`, e.g. `W205`",
                )
            )
        ignores.append((c, [x for x in codes if x in CODES]))
    used: set[tuple[int, str]] = set()
    on_line: dict[int, list[tuple[n.Comment, list[str]]]] = {}  # a file may hold thousands
    # of the ignore comments of an item written over several lines, the first counts
    # (`flowc fmt`, which writes the item on one line, keeps it at its end): another one
    # is X001, as it is once moved off the item's line
    first_of: dict[range, tuple[n.Comment, list[str]]] = {}
    seconds: set[int] = set()
    for c, codes in ignores:
        lines = joined.get(c.span.line) if joined else None
        if lines is not None:
            first, named = first_of.setdefault(lines, (c, codes))
            if first is not c:
                seconds.add(id(c))
                merged = ", ".join(dict.fromkeys([*named, *codes]))
                out_extra += [
                    _second(c, code, lines, first, merged, filename)
                    for code in codes
                    if code not in unchecked
                ]
                continue
        for line in lines if lines is not None else (c.span.line,):
            on_line.setdefault(line, []).append((c, codes))
    for d in diagnostics:
        silenced = False
        if d.span is not None:
            for c, codes in on_line.get(d.span.line, ()):
                if d.code.id in codes:
                    used.add((id(c), d.code.id))
                    silenced = True
        if not silenced:
            kept.append(d)
    for d in hidden:
        if d.span is not None:
            for c, codes in on_line.get(d.span.line, ()):
                if d.code.id in codes:
                    used.add((id(c), d.code.id))
    for c, codes in ignores:
        if id(c) in seconds:
            continue
        lines = joined.get(c.span.line) if joined else None
        where = (
            "on this line"
            if lines is None
            else f"on lines {lines.start}-{lines.stop - 1} (one item, which `flowc fmt` writes"
            " on one line)"
        )
        for code in codes:
            if (id(c), code) not in used and code not in unchecked:
                out_extra.append(
                    Diagnostic(
                        X001,
                        f"`# flowc: ignore[{code}]` silences nothing: there is no {code} finding {where}",
                        filename,
                        c.span,
                        help="remove it",
                    )
                )
    return tuple(sorted(kept + out_extra, key=Diagnostic.sort_key))


def _second(
    c: n.Comment, code: str, lines: range, first: n.Comment, merged: str, filename: str
) -> Diagnostic:
    """X001 for ``code`` in an ignore comment after the first on an item written over
    ``lines`` (``merged``: the codes of both)."""
    return Diagnostic(
        X001,
        f"`# flowc: ignore[{code}]` silences nothing: on lines {lines.start}-{lines.stop - 1}"
        " (one item, which `flowc fmt` writes on one line) only the first ignore comment"
        f" counts, the one on line {first.span.line}",
        filename,
        c.span,
        help=f"name every code in the first and remove this one: `# flowc: ignore[{merged}]`",
    )


#: the finding a W210's help names as the one that says why its terminate rule never
#: fires (:func:`flowc.compiler.analysis.reachability.check_unreachable_terminate`)
_CITED = re.compile(r"\b([A-Z]\d{3}) on line (\d+) says why")


def note_silenced_causes(
    shown: Sequence[Diagnostic], kept: Sequence[Diagnostic], found: Sequence[Diagnostic]
) -> tuple[Diagnostic, ...]:
    """``shown`` (what ``--select`` / ``--ignore`` keep of ``kept``, which is what
    :func:`apply_ignores` left of ``found``), a W210 whose help names the finding that says
    why (``W209 on line 7 says why this one never does``) saying why the reader does not
    see that finding: an ignore comment silenced it, or the codes selected leave it out.

    >>> from flowc.source import Span
    >>> from flowc.diagnostics import W209, W210
    >>> w209 = Diagnostic(W209, "m", "f", Span(7, 1, 7, 5))
    >>> w210 = Diagnostic(W210, "m", "f", Span(9, 1, 9, 5), help="x: W209 on line 7 says why")
    >>> note_silenced_causes([w210], [w210], [w209, w210])[0].help
    'x: W209 on line 7 (silenced there by an ignore comment) says why'
    >>> note_silenced_causes([w210], [w209, w210], [w209, w210])[0].help
    'x: W209 on line 7 (not reported: the codes selected leave it out) says why'
    >>> note_silenced_causes([w209, w210], [w209, w210], [w209, w210])[1].help
    'x: W209 on line 7 says why'
    """
    out = list(shown)
    for i, d in enumerate(out):
        cited = _CITED.search(d.help) if d.code.id == "W210" and d.help else None
        if cited is None or d.help is None:
            continue
        place = (cited[1], int(cited[2]))
        if any(_place(x) == place for x in out) or not any(_place(x) == place for x in found):
            continue
        why = (
            "not reported: the codes selected leave it out"
            if any(_place(x) == place for x in kept)
            else "silenced there by an ignore comment"
        )
        said = f"{cited[1]} on line {cited[2]} ({why}) says why"
        out[i] = attrs.evolve(d, help=d.help.replace(cited[0], said, 1))
    return tuple(out)


def _place(d: Diagnostic) -> tuple[str, int] | None:
    return (d.code.id, d.span.line) if d.span is not None else None
