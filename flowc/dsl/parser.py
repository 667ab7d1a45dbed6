"""Text -> AST.

A file is parsed by the hand-written parser of :mod:`flowc.dsl.descent`, which
answers only for files that parse cleanly; any other file goes to Lark's LALR parser
(:mod:`flowc.dsl.lalr`), which finds and words the error. Both build the same tree,
so which one parsed a file never shows; Lark is imported only when a file has an
error (a command on valid files starts without it).

>>> flow, diags = parse_source(SourceFile("f.flow", 'speaker a\\nspeaker b\\nwhen from a then b'))
>>> (len(flow.statements), diags)
(3, ())
>>> flow, diags = parse_source(SourceFile("f.flow", 'speaker a\\nwhen from a then'))
>>> diags[0].message
'unexpected end of file; expected ...'
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flowc.diagnostics import Diagnostic
from flowc.dsl import nodes as n
from flowc.dsl.keywords import KEYWORDS, MAX_NESTING
from flowc.source import SourceFile

__all__ = ["KEYWORDS", "MAX_NESTING", "parse", "parse_source", "scan", "tokens"]


def parse_source(source: SourceFile) -> tuple[n.Flow, tuple[Diagnostic, ...]]:
    """Parse a source file into a :class:`~flowc.dsl.nodes.Flow`.

    Never raises on user input: a syntax error is an E001 diagnostic and the
    returned flow is then empty.
    """
    from flowc.dsl.comments import Comments
    from flowc.dsl.descent import parse_valid

    text = source.text
    parsed = parse_valid(text)
    if parsed is None:
        from flowc.dsl.lalr import parse_lalr

        return parse_lalr(source)
    statements, comments = parsed
    return n.Flow(tuple(statements), Comments(source, comments), source.span(0, len(text))), ()


def parse(text: str, filename: str = "<input>") -> n.Flow:
    """Parse ``.flow`` text; raise :class:`~flowc.diagnostics.FlowError` on a syntax error.

    >>> flow = parse('flow demo\\nspeaker user: human\\nspeaker bot')
    >>> [s.name.value for s in flow.speakers()]
    ['user', 'bot']
    """
    from flowc.diagnostics import FlowError

    source = SourceFile(filename, text)
    flow, diags = parse_source(source)
    if diags:
        raise FlowError(diags, {filename: source})
    return flow


def tokens(text: str, *, comments: bool = False) -> Iterator[Any]:
    """The tokens of ``text`` as the parser sees them (keywords typed by their own
    terminal, blanks left out, comments only when asked for), up to the first character
    no token starts with, as Lark's tokens, which Lark's interactive parser takes: for the
    language server's completion. (This loads Lark; :func:`scan` gives the same tokens as
    tuples without it.)

    >>> [(t.type, str(t)) for t in tokens('when from a then "b" # c')]
    [('WHEN', 'when'), ('FROM', 'from'), ('NAME', 'a'), ('THEN', 'then'), ('STRING', '"b"')]
    >>> [t.type for t in tokens('a # c\\nb', comments=True)]
    ['NAME', 'COMMENT', 'NAME']
    """
    from flowc.dsl.lalr import tokens as lalr_tokens

    return lalr_tokens(text, comments=comments)


def scan(text: str, *, comments: bool = False) -> Iterator[tuple[str, str, int, int, int]]:
    """The tokens :func:`tokens` gives, as (kind, text, offset, line, column) tuples
    without loading Lark: a keyword's or punctuation's kind is its own text (``when``,
    ``{``), the others' ``NAME``, ``QUOTED_NAME``, ``STRING``, ``NUMBER`` and ``COMMENT``.
    For the language server's highlighting, which reads every token after each edit.

    >>> [(kind, line, column) for kind, _, _, line, column in scan('when\\n  a')]
    [('when', 1, 1), ('NAME', 2, 3)]
    """
    from flowc.dsl.descent import scan as scan_tokens

    return scan_tokens(text, comments=comments)


def _parser() -> Any:
    """Lark's LALR parser of the grammar (this loads Lark), for tools that use Lark's own
    machinery, such as the language server's completion."""
    from flowc.dsl.lalr import _parser as lark_parser

    return lark_parser()
