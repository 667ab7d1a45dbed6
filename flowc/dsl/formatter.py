"""`flowc fmt`: the one canonical layout of a `.flow` file."""

from __future__ import annotations

import re

from flowc.dsl.parser import KEYWORDS

_PLAIN_NAME = re.compile(r"[A-Za-z_](?:[A-Za-z0-9_]|-(?!>))*\Z")


def format_name(name: str) -> str:
    """A name as written in a file: backquoted when it is a keyword or not an identifier.

    >>> format_name("drafter"), format_name("next")
    ('drafter', '`next`')
    """
    if _PLAIN_NAME.match(name) and name not in KEYWORDS and not name.endswith("-"):
        return name
    return f"`{name}`"
