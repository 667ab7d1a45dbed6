"""What makes a comment an ignore comment (``# flowc: ignore[CODE, ...]``): read by
``flowc check``, which drops the findings it names, and by ``flowc fmt``, which keeps it
on the line of the statement it silences."""

from __future__ import annotations

import re

__all__ = ["IGNORE"]

#: an ignore comment's text (after its ``#``); ``codes``: what the brackets hold, if any
IGNORE = re.compile(r"^\s*flowc\s*:\s*ignore\b(?:\s*\[(?P<codes>[^\]]*)\])?")
