"""Source text and spans: where every node and diagnostic points."""

from __future__ import annotations

import bisect
import re
from functools import cached_property

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
_NEWLINE = re.compile("\n")


@attrs.frozen(eq=False)
class SourceFile:
    """The text of one input with a line index for offset -> line/column."""

    name: str
    text: str

    @cached_property
    def line_starts(self) -> tuple[int, ...]:
        starts = [0]
        starts.extend(m.end() for m in _NEWLINE.finditer(self.text))
        return tuple(starts)

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
