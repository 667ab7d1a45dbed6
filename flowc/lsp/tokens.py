"""Semantic tokens (what each word is, for colouring) and folding ranges.

Both read the document through flowc's own lexer and parse: keywords, strings,
numbers and comments are the lexer's tokens; a name is coloured by what the
:class:`~flowc.lsp.index.Index` says it names (a speaker, a tool, a context key, a
custom condition or target), with the ``declaration`` modifier where it is declared.
Positions here are flowc's (1-based lines, 0-based character columns); the server
turns them into the client's units.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from flowc.dsl import nodes as n
from flowc.dsl.parser import KEYWORDS, scan
from flowc.lsp.index import CONDITION, KEY, PROPERTY, SPEAKER, TARGET, TOOL, Index
from flowc.source import Span

#: the legend: token types in the order their numbers refer to
TOKEN_TYPES = (
    "keyword",
    "string",
    "number",
    "comment",
    "class",
    "method",
    "variable",
    "function",
    "parameter",
    "type",
    "operator",
    "property",
)
TOKEN_MODIFIERS = ("declaration",)
_TYPE = {name: i for i, name in enumerate(TOKEN_TYPES)}
_KIND = {
    SPEAKER: "class",
    TOOL: "method",
    KEY: "variable",
    CONDITION: "function",
    TARGET: "function",
    PROPERTY: "property",
}
_LITERALS = {"true", "false", "null"}
_OPERATORS = frozenset({"==", "!=", "->", "|", "<", "<=", ">", ">="})


@attrs.frozen
class Piece:
    """One coloured token on one line: 1-based line, 0-based start column, length."""

    line: int
    column: int
    length: int
    type: str
    declaration: bool = False


def _params(index: Index) -> Iterator[tuple[Span, str]]:
    """Parameter names and types of custom declarations, and argument names of calls."""

    def calls(node: object) -> Iterator[n.CallCond | n.CallTarget]:
        if isinstance(node, (n.CallCond, n.CallTarget)):
            yield node
        elif isinstance(node, (n.AndCond, n.OrCond)):
            for item in node.items:
                yield from calls(item)
        elif isinstance(node, n.NotCond):
            yield from calls(node.item)

    for st in index.flow.statements:
        if isinstance(st, (n.ConditionDecl, n.TargetDecl)):
            for p in st.params:
                yield p.name.span, "parameter"
                yield p.type.span, "type"
        elif isinstance(st, (n.Rule, n.Otherwise)):
            parts = [st.cond, st.target] if isinstance(st, n.Rule) else [st.target]
            for part in parts:
                for call in calls(part):
                    for arg in call.args:
                        yield arg.name.span, "parameter"


def semantic_pieces(text: str, index: Index | None) -> list[Piece]:
    """Every coloured token of ``text`` in order. Names are coloured only when ``index``
    is the analysis of this very text (while it does not parse, the lexer's tokens)."""
    names: dict[int, tuple[str, bool]] = {}
    if index is not None and index.source.text == text:
        for occ in index.occurrences:
            names[occ.span.start] = (_KIND[occ.kind], occ.definition)
        for span, what in _params(index):
            names.setdefault(span.start, (what, False))
    out: list[Piece] = []
    for tok_kind, value, start, line, column in scan(text, comments=True):
        column -= 1
        kind: str | None = None
        declaration = False
        if tok_kind == "COMMENT":
            kind = "comment"
        elif tok_kind == "STRING":
            kind = names.get(start, ("string", False))[0]  # a speaker passed as a string
        elif tok_kind == "NUMBER":
            kind = "number"
        elif tok_kind in ("NAME", "QUOTED_NAME"):
            found = names.get(start)
            if found is not None:
                kind, declaration = found
        elif value in KEYWORDS:
            kind = names.get(start, ("keyword", False))[0]  # `speaker` as a parameter type
        elif value in _OPERATORS:
            kind = "operator"
        if tok_kind in _LITERALS:
            kind = "keyword"
        if kind is not None:
            out.append(Piece(line, column, len(value), kind, declaration))
    return out


def encode(pieces: list[Piece], units: list[tuple[int, int]]) -> list[int]:
    """The LSP's relative encoding: per token, line delta, start delta (from the last
    token on the same line), length, type, modifier bits. ``units`` gives each piece's
    (start, length) in the client's position units."""
    data: list[int] = []
    prev_line, prev_start = 0, 0
    for piece, (start, length) in zip(pieces, units, strict=True):
        line = piece.line - 1
        delta_line = line - prev_line
        delta_start = start - prev_start if delta_line == 0 else start
        data += [delta_line, delta_start, length, _TYPE[piece.type], 1 if piece.declaration else 0]
        prev_line, prev_start = line, start
    return data


@attrs.frozen
class Fold:
    """A foldable region: first and last 1-based line; ``comment`` for comment runs."""

    start: int
    end: int
    comment: bool = False


def folds(index: Index) -> list[Fold]:
    """Statements that span lines (speaker blocks, `context { }`, scenarios, long rules)
    and runs of two or more comment lines."""
    out: list[Fold] = []
    for st in index.flow.statements:
        if st.span.end_line > st.span.line:
            out.append(Fold(st.span.line, st.span.end_line))
    run: list[int] = []
    lines = index.source.text.split("\n")
    for comment in index.flow.comments:
        whole_line = lines[comment.span.line - 1].lstrip().startswith("#")
        if whole_line and run and comment.span.line == run[-1] + 1:
            run.append(comment.span.line)
            continue
        if len(run) > 1:
            out.append(Fold(run[0], run[-1], comment=True))
        run = [comment.span.line] if whole_line else []
    if len(run) > 1:
        out.append(Fold(run[0], run[-1], comment=True))
    return sorted(out, key=lambda f: (f.start, f.end))
