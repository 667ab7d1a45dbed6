"""DOT text to SVG / PNG / PDF through the ``graphviz`` package and the real ``dot``."""

from __future__ import annotations

import shutil

import graphviz

IMAGE_FORMATS = ("svg", "png", "pdf")

INSTALL_HINT = (
    "Graphviz's `dot` is not installed: install it (Debian/Ubuntu: `apt-get install graphviz`, "
    "macOS: `brew install graphviz`, or `make setup`), or use `-f dot` / `-f mermaid`, "
    "which need no Graphviz"
)


class DotNotFoundError(RuntimeError):
    """Graphviz's ``dot`` binary is not on ``PATH``."""

    def __init__(self) -> None:
        super().__init__(INSTALL_HINT)


def have_dot() -> bool:
    return shutil.which("dot") is not None


def render_image(dot_text: str, fmt: str) -> bytes:
    """Lay out DOT text with ``dot`` and return the image bytes.

    Raises :class:`DotNotFoundError` when ``dot`` is missing.

    >>> render_image('digraph { a -> b }', "svg").startswith(b"<?xml")  # doctest: +SKIP
    True
    """
    if fmt not in IMAGE_FORMATS:
        raise ValueError(f"image format must be one of {', '.join(IMAGE_FORMATS)}, got {fmt!r}")
    if not have_dot():
        raise DotNotFoundError()
    try:
        data: bytes = graphviz.pipe("dot", fmt, dot_text.encode("utf-8"), quiet=True)
    except graphviz.ExecutableNotFound:
        raise DotNotFoundError() from None
    return data


def render_svg(dot_text: str) -> str:
    """The SVG text of a DOT graph (see :func:`render_image`)."""
    return render_image(dot_text, "svg").decode("utf-8")
