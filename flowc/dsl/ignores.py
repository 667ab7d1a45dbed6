"""What makes a comment an ignore comment (``# flowc: ignore[CODE, ...]``): read by
``flowc check``, which drops the findings it names, by ``flowc fmt``, which keeps it on
the line of the statement it silences, and by ``flowc lsp``'s quick fixes, which add a
code to it or remove one.

>>> match = IGNORE.match(" flowc: ignore[W204, , W207]")
>>> match is not None and named_codes(match)
['W204', 'W207']
>>> [named_codes(m) for m in map(IGNORE.match, [" flowc: ignore", " flowc: ignore[ ]"]) if m]
[[], []]
"""

from __future__ import annotations

import re

__all__ = ["IGNORE", "named_codes"]

#: an ignore comment's text (after its ``#``); ``codes``: what the brackets hold, if any
IGNORE = re.compile(r"^\s*flowc\s*:\s*ignore\b(?:\s*\[(?P<codes>[^\]]*)\])?")


def named_codes(match: re.Match[str]) -> list[str]:
    """The codes an :data:`IGNORE` match names, as ``flowc check`` reads them: what its
    brackets hold, split at commas, blanks left out. None named (no brackets, or nothing
    in them): the comment silences nothing (X001), and is not the ignore comment that
    counts for a statement written over several lines."""
    return [code.strip() for code in (match.group("codes") or "").split(",") if code.strip()]
