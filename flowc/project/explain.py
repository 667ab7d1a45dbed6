"""The page of each diagnostic code (``flowc/docs/CODE.md``): what ``flowc explain``
prints and the language server shows on hover.

>>> page("E001") is not None, page("X999")
(True, None)
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources

from flowc.diagnostics import CODES

__all__ = ["documented_codes", "page"]


def page(code: str) -> str | None:
    """The docs page of a code (``flowc/docs/CODE.md``), or None."""
    try:
        return (resources.files("flowc") / "docs" / f"{code}.md").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None


def documented_codes() -> Iterator[str]:
    """Every code that has a page, in order."""
    for code in sorted(CODES):
        if page(code) is not None:
            yield code
