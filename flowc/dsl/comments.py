"""A file's comments, kept as the offsets of their ``#``.

A comment runs from its ``#`` to the end of its line, so its offset is all there is to
keep: its text is a slice of the file's, its line and columns come from the file's line
index. :class:`Comments` holds 4 bytes a comment (a tuple of
:class:`~flowc.dsl.nodes.Comment` nodes with their spans took about 300), and builds a
node when one is read; a file of 16 MB of ``#`` lines is 8 million comments.

>>> from flowc.source import SourceFile
>>> source = SourceFile("f.flow", "speaker a  # hi\\n# two\\n")
>>> comments = Comments(source, [11, 16])
>>> [(c.text, c.span.line, c.span.column) for c in comments]
[(' hi', 1, 12), (' two', 2, 1)]
>>> comments[1] == comments.at(1), len(comments)
(True, 2)

A comment stops where its line does, before the ``\\r`` of a ``\\r\\n`` too (a lone
``\\r`` is a newline in a :class:`~flowc.source.SourceFile`'s text already):

>>> crlf = SourceFile("f.flow", "speaker a  # hi\\r\\n")
>>> [(c.text, c.span.end_column, c.span.end) for c in Comments(crlf, [11])]
[(' hi', 16, 15)]
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from flowc.dsl.nodes import Comment
from flowc.source import SourceFile, Span, offsets

__all__ = ["Comments", "line_end"]


class Comments(Sequence[Comment]):
    """The comments of ``source`` that start at ``starts`` (ascending offsets of their
    ``#``), as a sequence of :class:`~flowc.dsl.nodes.Comment`. Equal to another sequence
    of the same comments (text and span)."""

    __slots__ = ("source", "starts")

    def __init__(self, source: SourceFile, starts: Iterable[int] = ()) -> None:
        self.source = source
        if isinstance(starts, array):
            self.starts: array[int] = starts
        else:
            self.starts = offsets(len(source.text))
            self.starts.extend(starts)

    def __len__(self) -> int:
        return len(self.starts)

    @overload
    def __getitem__(self, index: int) -> Comment: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Comment]: ...
    def __getitem__(self, index: int | slice) -> Comment | Sequence[Comment]:
        if isinstance(index, slice):
            return Comments(self.source, self.starts[index])
        return self.at(index)

    # ── one comment, without building its node ───────────────────────────────

    def start(self, index: int) -> int:
        """The offset of comment ``index``'s ``#``."""
        return self.starts[index]

    def end(self, index: int) -> int:
        """The offset after comment ``index``'s last character (the end of its line)."""
        return line_end(self.source.text, self.starts[index])

    def line(self, index: int) -> int:
        """Comment ``index``'s 1-based line."""
        return bisect.bisect_right(self.source.line_starts, self.starts[index])

    def text(self, index: int) -> str:
        """Comment ``index``'s text, without its ``#``."""
        return self.source.text[self.starts[index] + 1 : self.end(index)]

    def at(self, index: int) -> Comment:
        """Comment ``index`` as a node."""
        start = self.starts[index]
        return self._comment(start, self.line(index))

    def _comment(self, start: int, line: int) -> Comment:
        text = self.source.text
        end = line_end(text, start)
        column = start - self.source.line_starts[line - 1] + 1
        return Comment(
            text[start + 1 : end], Span(line, column, line, column + end - start, start, end)
        )

    def __iter__(self) -> Iterator[Comment]:
        for index, line in self.lines(0, len(self)):
            yield self._comment(self.starts[index], line)

    def lines(self, first: int, stop: int) -> Iterator[tuple[int, int]]:
        """``(index, line)`` of the comments ``first`` to ``stop - 1``: the lines ascend
        with the offsets, so the line index is walked rather than searched each time."""
        if first >= stop:
            return
        line_starts = self.source.line_starts
        lines = len(line_starts)
        starts = self.starts
        line = self.line(first)
        for index in range(first, stop):
            start = starts[index]
            while line < lines and line_starts[line] <= start:
                line += 1
            yield index, line

    # ── queries ──────────────────────────────────────────────────────────────

    def containing(self, word: str) -> Iterator[Comment]:
        """The comments whose text holds ``word`` (no line break in it), found by
        searching the file's text rather than reading every comment."""
        text = self.source.text
        starts = self.starts
        at = text.find(word)
        while at >= 0:
            i = bisect.bisect_right(starts, at) - 1
            if i >= 0 and starts[i] < at and at + len(word) <= self.end(i):
                yield self.at(i)
                at = text.find(word, self.end(i))  # the next comment's, at the earliest
            else:
                at = text.find(word, at + 1)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        if len(other) != len(self):
            return False
        if isinstance(other, Comments) and other.source.text == self.source.text:
            return other.starts == self.starts
        return all(a == b and a.span == b.span for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{len(self)} comments of {self.source.name}>"


def line_end(text: str, offset: int) -> int:
    """Where the line that ``offset`` is on ends in ``text`` (a SourceFile's, where a lone
    ``\\r`` is a ``\\n`` already): at its ``\\n``, or at the ``\\r`` of its ``\\r\\n``, which is
    a line end too (docs/language.md), never part of a comment (its span, its text, an
    edit made over it) nor a place to write at the end of a line (the language server's
    ignore comment).

    >>> line_end("a # b\\r\\nc", 2), line_end("a # b\\r\\nc", 6), line_end("a\\nc", 2)
    (5, 5, 3)
    """
    stop = text.find("\n", offset)
    if stop < 0:
        return len(text)
    return stop - 1 if stop > 0 and text[stop - 1] == "\r" else stop


def comments_containing(comments: Sequence[Comment], word: str) -> Iterable[Comment]:
    """The comments whose text holds ``word``: searched for in the file's text when
    ``comments`` are :class:`Comments`, else read one by one."""
    if isinstance(comments, Comments):
        return comments.containing(word)
    return (c for c in comments if word in c.text)
