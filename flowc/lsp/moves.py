"""Where the places of a document's last version that parsed are in the text the
editor has now.

While a document does not parse, the server answers from the last version that did
(its findings, its names, its outline). The edits made since moved that version's text:
each edit is kept as the region of the text before it that it replaced and the length
of what it wrote (:class:`Edit`, told from the texts before and after it, so that an
editor's full and incremental changes are read alike). A place of the old text is moved
through the edits in order: one after an edit's region shifts by what the edit added,
one before it stays, and one that overlaps a region an edit replaced is dropped (its
text is not what the answer was about). A cursor in the new text is moved back the same
way, and dropped when it falls in what an edit wrote.

>>> edits = add((), edit_between("speaker a\\nspeaker b\\n", "speaker a\\n#\\nspeaker b\\n"))
>>> edits
(Edit(start=10, end=10, length=2),)
>>> forward(edits, 18, 19), forward(edits, 8, 9), back(edits, 11)
((20, 21), (8, 9), None)
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable, Sequence

import attrs

from flowc.source import SourceFile, Span

#: the longest part of two texts compared at once, past the first ones
_CHUNK = 1 << 16


@attrs.frozen
class Edit:
    """One change: the characters ``start`` .. ``end`` of the text before it replaced by
    ``length`` characters."""

    start: int
    end: int
    length: int

    @property
    def delta(self) -> int:
        """How many characters the edit added (negative: removed)."""
        return self.length - (self.end - self.start)


def common_prefix(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` start with in common.

    >>> common_prefix("speaker a", "speaker b"), common_prefix("ab", "ab")
    (8, 2)
    """
    return _common(a, b, min(len(a), len(b)), _head)


def common_suffix(a: str, b: str, limit: int) -> int:
    """How many characters (at most ``limit``) ``a`` and ``b`` end with in common.

    >>> common_suffix("a speaker", "b speaker", 9), common_suffix("ab", "ab", 1)
    (8, 1)
    """
    return _common(a, b, limit, _tail)


def _head(text: str, start: int, stop: int) -> str:
    """Characters ``start`` .. ``stop`` of ``text`` counted from its start."""
    return text[start:stop]


def _tail(text: str, start: int, stop: int) -> str:
    """Characters ``start`` .. ``stop`` of ``text`` counted from its end (in the text's
    order: ``_tail("abc", 0, 2)`` is ``"bc"``)."""
    return text[len(text) - stop : len(text) - start]


def _common(a: str, b: str, limit: int, part: Callable[[str, int, int], str]) -> int:
    """How many characters (at most ``limit``) ``a`` and ``b`` have in common from one
    end, ``part(text, start, stop)`` reading characters ``start`` .. ``stop`` counted from
    that end: compared a part at a time (each part once, without copying the texts), then
    the part that differs halved down to its character."""
    at, step = 0, 1024
    while at < limit:
        end = min(at + step, limit)
        if part(a, at, end) != part(b, at, end):
            lo, hi = at, end - 1
            while lo < hi:  # the first character that differs, in [at, end)
                mid = (lo + hi) // 2
                if part(a, at, mid + 1) == part(b, at, mid + 1):
                    lo = mid + 1
                else:
                    hi = mid
            return lo
        at, step = end, min(step * 2, _CHUNK)
    return limit


def edit_between(old: str, new: str) -> Edit | None:
    """The one region ``old`` and ``new`` differ in, as an edit of ``old``; None when
    they are the same text."""
    prefix = common_prefix(old, new)
    if prefix == len(old) == len(new):
        return None
    suffix = common_suffix(old, new, min(len(old), len(new)) - prefix)
    return Edit(prefix, len(old) - suffix, len(new) - suffix - prefix)


#: the most lines a changed region may have on either side to be told apart line by line
#: (:func:`edits_between`); past that, it is one region
_MOST_LINES = 400


def edits_between(old: str, new: str) -> tuple[Edit, ...]:
    r"""The edits that lead from ``old`` to ``new`` (each of the text the ones before it
    made): the region the texts differ in (:func:`edit_between`), told apart line by
    line (a whole text sent again with two changes far apart is two edits), each run of
    changed lines narrowed to the characters that differ in it.

    >>> edits_between("a 1\nb\nc 2\n", "a 3\nb\nc 4\n")
    (Edit(start=2, end=3, length=1), Edit(start=8, end=9, length=1))
    """
    one = edit_between(old, new)
    if one is None:
        return ()
    # the whole lines around it (the texts have the same ones before and after them)
    start = old.rfind("\n", 0, one.start) + 1
    old_end, new_end = old.find("\n", one.end), new.find("\n", one.start + one.length)
    old_end = len(old) if old_end < 0 else old_end + 1
    new_end = len(new) if new_end < 0 else new_end + 1
    old_lines, new_lines = _lines(old[start:old_end]), _lines(new[start:new_end])
    if max(len(old_lines), len(new_lines)) > _MOST_LINES:
        return (one,)
    starts = [0, *itertools.accumulate(map(len, old_lines))]
    out: list[Edit] = []
    shift = 0  # what the edits before added
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        begin = start + starts[i1]
        part = edit_between(old[begin : start + starts[i2]], "".join(new_lines[j1:j2]))
        if part is not None:
            out.append(Edit(begin + part.start + shift, begin + part.end + shift, part.length))
            shift += part.delta
    return tuple(out)


def _lines(text: str) -> list[str]:
    """``text``'s lines, each with its newline."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def add(edits: tuple[Edit, ...], edit: Edit | None) -> tuple[Edit, ...]:
    """``edits`` followed by ``edit``, made one with the last when the two touch (a word
    typed a character at a time is one edit).

    >>> add(add((), Edit(4, 4, 1)), Edit(5, 5, 1))
    (Edit(start=4, end=4, length=2),)
    """
    if edit is None:
        return edits
    if not edits:
        return (edit,)
    last = edits[-1]
    written_end = last.start + last.length  # where what `last` wrote ends, in its text
    if edit.start > written_end or edit.end < last.start:
        return (*edits, edit)
    start = min(last.start, edit.start)
    # the end of both, in the text before `last`
    end = last.end if edit.end <= written_end else edit.end - last.delta
    end = max(end, last.end)
    return (*edits[:-1], Edit(start, end, end + last.delta + edit.delta - start))


def forward(edits: Sequence[Edit], start: int, end: int) -> tuple[int, int] | None:
    """The region ``start`` .. ``end`` of the text before ``edits``, in the text after
    them; None when an edit replaced part of it."""
    for e in edits:
        if end <= e.start:
            continue  # before the edit
        if start >= e.end:
            start, end = start + e.delta, end + e.delta
            continue
        return None
    return start, end


def back(edits: Sequence[Edit], offset: int) -> int | None:
    """A cursor in the text after ``edits``, in the text before them; None when it is
    inside what an edit wrote (at either end of it, it is moved to that side)."""
    for e in reversed(edits):
        if offset <= e.start:
            continue
        if offset >= e.start + e.length:
            offset -= e.delta
            continue
        return None
    return offset


@attrs.frozen
class Since:
    """The last version of a document that parsed (``old``), the text the editor has now
    (``new``), and two ways from the one to the other: the edits made (``edits``, None
    when they are not known) and the one region the texts differ in (``whole``: coarser,
    but it keeps what lies before and after everything the editor changed, as an undo
    followed by an edit elsewhere leaves it). A place is moved the first way that keeps
    it."""

    old: SourceFile
    new: SourceFile
    edits: tuple[Edit, ...] | None
    whole: tuple[Edit, ...]

    def _ways(self) -> tuple[tuple[Edit, ...], ...]:
        return (self.whole,) if self.edits is None else (self.edits, self.whole)

    def span(self, span: Span) -> Span | None:
        """A span of the old text in the new one (None: an edit replaced part of it). Its
        offsets are read from its lines and columns, which every span has."""
        if not self.whole:
            return span
        start = _offset(self.old, span.line, span.column - 1)
        end = max(start, _offset(self.old, span.end_line, span.end_column - 1))
        for way in self._ways():
            moved = forward(way, start, end)
            if moved is not None and not self._runs_on(start, end, *moved):
                return self.new.span(*moved)
        return None

    def _runs_on(self, start: int, end: int, new_start: int, new_end: int) -> bool:
        """Whether the word at an end of the old text's ``start`` .. ``end`` runs on, at
        ``new_start`` .. ``new_end`` in the new text, into what an edit wrote beside it:
        `reviewer` typed on into `reviewer2` is no longer the name `reviewer`, though no
        edit replaced any of its characters."""
        old, new = self.old.text, self.new.text
        if start == end:
            return False
        # (a slice from -1 is empty: nothing is before the start of a text)
        before, now_before = old[start - 1 : start], new[new_start - 1 : new_start]
        after, now_after = old[end : end + 1], new[new_end : new_end + 1]
        at_start = _word(old[start]) and now_before != before and _word(now_before, old[start])
        at_end = (
            _word(old[end - 1])
            and now_after != after
            and _word(now_after, new[new_end + 1 : new_end + 2])
        )
        return at_start or at_end

    def cursor(self, line: int, column: int) -> tuple[int, int] | None:
        """A cursor in the new text (1-based line, 0-based column) in the old text; None
        when it is in what an edit wrote."""
        if not self.whole:
            return line, column
        offset = _offset(self.new, line, column)
        for way in self._ways():
            at = back(way, offset)
            if at is not None:
                old_line, old_column = self.old.position(at)
                return old_line, old_column - 1
        return None


def _word(char: str, next_char: str = "") -> bool:
    """Whether ``char`` (one character, or none) is part of a word: a letter, a digit,
    `_`, or a `-` that does not start `->` (``next_char``: the character after it)."""
    if char == "-":
        return next_char != ">"
    return char.isalnum() or char == "_"


def _offset(source: SourceFile, line: int, column: int) -> int:
    """The offset of 1-based ``line``, 0-based ``column`` (clamped to the text)."""
    starts = source.line_starts
    if line > len(starts):
        return len(source.text)
    return min(starts[max(line, 1) - 1] + max(column, 0), len(source.text))


def since(old: SourceFile, new: SourceFile, edits: Sequence[Edit] | None) -> Since:
    """The :class:`Since` of ``old`` and ``new``, by way of ``edits`` when they lead from
    the one to the other (their lengths add up)."""
    if old.text is new.text or old.text == new.text:
        return Since(old, new, (), ())
    whole = edits_between(old.text, new.text)
    if edits and len(old.text) + sum(e.delta for e in edits) == len(new.text):
        return Since(old, new, tuple(edits), whole)
    return Since(old, new, None, whole)
