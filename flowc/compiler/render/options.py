"""Options shared by every renderer."""

from __future__ import annotations

from typing import Any

import attrs

from flowc.compiler.render.image import LAYOUT_TIMEOUT, MAX_LAYOUT_SIZE

DIRECTIONS = ("LR", "TB")
FORMATS = ("svg", "png", "pdf", "dot", "mermaid", "html")
#: the formats that are not text: `flowc render` writes them to a file or a pipe, never to
#: a terminal
BINARY_FORMATS = frozenset({"png", "pdf"})


def _check_direction(_: object, __: attrs.Attribute[str], value: str) -> None:
    if value not in DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, got {value!r}")


def _check_positive(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be positive, got {value!r}")


@attrs.frozen(kw_only=True)
class RenderOptions:
    """How to draw: ``direction`` is ``"LR"`` (left to right) or ``"TB"`` (top to bottom);
    Graphviz's budget for the images: ``layout_timeout`` seconds of ``dot``, and at most
    ``max_layout_size`` nodes and edges (see :mod:`~flowc.compiler.render.image`).

    >>> RenderOptions(direction="TB").direction
    'TB'
    """

    direction: str = attrs.field(default="LR", validator=_check_direction)
    layout_timeout: float = attrs.field(default=LAYOUT_TIMEOUT, validator=_check_positive)
    max_layout_size: int = attrs.field(default=MAX_LAYOUT_SIZE, validator=_check_positive)


# colours of the marks (also used by the legend and the HTML page)
COLORS = {
    "dead": "#9a9a9a",
    "trap": "#d9480f",
    "loop": "#d9480f",
    "violation": "#c2255c",  # the run that breaks a property
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
