"""Options shared by every renderer."""

from __future__ import annotations

import attrs

DIRECTIONS = ("LR", "TB")
FORMATS = ("svg", "png", "pdf", "dot", "mermaid", "html")
#: the formats that are not text: `flowc render` writes them to a file or a pipe, never to
#: a terminal
BINARY_FORMATS = frozenset({"png", "pdf"})


def _check_direction(_: object, __: attrs.Attribute[str], value: str) -> None:
    if value not in DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, got {value!r}")


@attrs.frozen(kw_only=True)
class RenderOptions:
    """How to draw: ``direction`` is ``"LR"`` (left to right) or ``"TB"`` (top to bottom).

    >>> RenderOptions(direction="TB").direction
    'TB'
    """

    direction: str = attrs.field(default="LR", validator=_check_direction)


# colours of the marks (also used by the legend and the HTML page)
COLORS = {
    "dead": "#9a9a9a",
    "trap": "#d9480f",
    "loop": "#d9480f",
    "tool": "#1c6fd1",
    "human_fill": "#fff4d6",
    "human_line": "#b08000",
    "speaker_fill": "#eaf2fd",
    "speaker_line": "#3b6fb6",
    "terminal_fill": "#f2f2f2",
    "dead_fill": "#f4f4f4",
    "warning_fill": "#fff0e6",
    "added": "#2b8a3e",  # flowc diff --render
    "removed": "#c92a2a",
}
