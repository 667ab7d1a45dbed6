"""Names and values as a `.flow` file writes them: what the runtime's messages quote
without loading the syntax tree and the formatter (:mod:`flowc.dsl.formatter`
re-exports both)."""

from __future__ import annotations

import json
import re
from typing import Any

from flowc.dsl.keywords import KEYWORDS

__all__ = ["format_name", "format_value"]

_PLAIN_NAME = re.compile(r"[A-Za-z_](?:[A-Za-z0-9_]|-(?!>))*\Z")


def format_name(name: str) -> str:
    """A name as written in a file: backquoted when it is a keyword or not an identifier.

    >>> format_name("drafter"), format_name("next")
    ('drafter', '`next`')
    """
    if _PLAIN_NAME.match(name) and name not in KEYWORDS and not name.endswith("-"):
        return name
    return f"`{name}`"


def format_value(value: Any) -> str:
    """A JSON literal on one line: ``{"a": [1, 2]}``."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
