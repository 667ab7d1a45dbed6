"""A name quoted once as code in flowc's words.

:func:`~flowc.dsl.names.format_name` writes a name as a `.flow` file does: in
backquotes when it needs them (`` `bot 1` ``, `` `next` ``). A message that quotes a
name as code puts it in backquotes; wrapping a name that already has them again gave
``` ``bot 1`` ```. These quote it once: `` `bot` ``, `` `bot 1` ``.
"""

from __future__ import annotations

from flowc.dsl.names import format_name
from flowc.escaping import Code, Quoted

__all__ = ["name_piece", "once", "ticked", "written_piece"]


def once(shown: str) -> str:
    """A name as a `.flow` writes it (``format_name``'s), in backquotes once.

    >>> once("bot"), once("`bot 1`")
    ('`bot`', '`bot 1`')
    """
    return shown if len(shown) > 1 and shown[0] == shown[-1] == "`" else f"`{shown}`"


def ticked(name: str) -> str:
    """A name (as the flow declares it, without backquotes) quoted once as code.

    >>> ticked("bot"), ticked("bot 1"), ticked("next")
    ('`bot`', '`bot 1`', '`next`')
    """
    return once(format_name(name))


def name_piece(name: str) -> Code | Quoted:
    """A name as a piece of a :class:`~flowc.escaping.Phrase`: quoted once as code in
    text (a :class:`Code` of a name that needs backquotes wrapped them again), and as
    Markdown the code span it always was.

    >>> from flowc.escaping import phrase
    >>> str(phrase(name_piece("bot"), " and ", name_piece("bot 1")))
    '`bot` and `bot 1`'
    """
    return written_piece(format_name(name))


def written_piece(shown: str) -> Code | Quoted:
    """:func:`name_piece` of what a `.flow` writes already (a target: ``bot``,
    `` `bot 1` ``, ``terminate "done"``): a name in backquotes is quoted as it is.

    >>> from flowc.escaping import phrase
    >>> str(phrase(written_piece("`bot 1`"), " or ", written_piece('terminate "x"')))
    '`bot 1` or `terminate "x"`'
    """
    return Quoted(shown) if once(shown) == shown else Code(shown)
