"""Source text and spans: where every node and diagnostic points."""

from __future__ import annotations

import bisect
import re
from array import array
from functools import cached_property
from itertools import accumulate, islice

import attrs


@attrs.frozen(order=True)
class Span:
    """A region of a source file: 1-based lines and columns, end exclusive.

    ``start``/``end`` are 0-based character offsets into the text.

    >>> Span(1, 1, 1, 5, 0, 4).line
    1
    """

    line: int
    column: int
    end_line: int
    end_column: int
    start: int = 0
    end: int = 0

    @property
    def length(self) -> int:
        return self.end - self.start

    def cover(self, other: Span) -> Span:
        """The smallest span holding both ``self`` and ``other``."""
        first = self if (self.line, self.column) <= (other.line, other.column) else other
        last = (
            self
            if (self.end_line, self.end_column) >= (other.end_line, other.end_column)
            else other
        )
        return Span(first.line, first.column, last.end_line, last.end_column, first.start, last.end)


NO_SPAN = Span(1, 1, 1, 1, 0, 0)
#: characters split into lines at a time for the line index
_BLOCK = 1 << 20


def offsets(size: int) -> array[int]:
    """An empty array for offsets into a text of ``size`` characters: 4 bytes an offset
    (8 past 4 GiB), where a list of ints takes 36.

    >>> offsets(10).itemsize, offsets(2**32).itemsize
    (4, 8)
    """
    return array("I" if size < 2**32 else "Q")


def lone_returns_as_newlines(text: str) -> str:
    """``text`` with each carriage return that no newline follows (an old Mac line end)
    made a newline: flowc reads it as the end of a line, as editors and the language
    server protocol do (read as a space, it would let a comment run on and swallow what
    an editor shows on the next lines). One character for one, so every offset into the
    text stays where it was; a ``\\r\\n`` stays as it is.

    >>> lone_returns_as_newlines("# note\\rspeaker a\\r\\nspeaker b\\r")
    '# note\\nspeaker a\\r\\nspeaker b\\n'
    """
    if "\r" not in text or text.count("\r") == text.count("\r\n"):
        return text
    return _LONE_RETURN.sub("\n", text)


_LONE_RETURN = re.compile(r"\r(?!\n)")


@attrs.frozen(eq=False)
class SourceFile:
    """The text of one input with a line index for offset -> line/column. Its lines end
    at newlines; a lone carriage return is made one (:func:`lone_returns_as_newlines`)."""

    name: str
    text: str = attrs.field(converter=lone_returns_as_newlines)

    @cached_property
    def line_starts(self) -> array[int]:
        """The offset each line starts at (an array: a file of 8 million short lines
        holds 32 MB of them, not 290). Read it, never change it."""
        text = self.text
        starts = offsets(len(text))
        starts.append(0)
        # a block at a time, in C: each part a line splits into starts one past its end
        for pos in range(0, len(text), _BLOCK):
            parts = text[pos : pos + _BLOCK].split("\n")
            ends = accumulate(map((1).__add__, map(len, parts)), initial=pos)
            starts.extend(islice(ends, 1, len(parts)))
        return starts

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        offset = max(0, min(offset, len(self.text)))
        index = bisect.bisect_right(self.line_starts, offset) - 1
        return index + 1, offset - self.line_starts[index] + 1

    def span(self, start: int, end: int) -> Span:
        """The span of ``text[start:end]``."""
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Span(line, column, end_line, end_column, start, end)

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline."""
        if line < 1 or line > len(self.line_starts):
            return ""
        begin = self.line_starts[line - 1]
        stop = self.text.find("\n", begin)
        return self.text[begin : stop if stop >= 0 else len(self.text)].rstrip("\r")
