"""What flowc says when Graphviz did not draw a diagram: the command line and the
language server word it alike.

>>> text_fallback("my flow.flow")
"`flowc render 'my flow.flow' -f dot` (or `-f mermaid`) writes the graph as text, which needs no layout"
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flowc.compiler.render.image import LayoutError

__all__ = ["layout_failure", "text_fallback"]


def layout_failure(err: LayoutError, fallback: str, options: str = "") -> str:
    """What a command says when Graphviz did not draw: ``err``, how to raise the budget it
    ran past (``options`` is how the flags are given: ``flowc lsp `` for the server) and
    ``fallback``, the text formats that need no layout."""
    from flowc.compiler.render.image import LayoutTimeout, LayoutTooLarge

    text = str(err)
    if isinstance(err, LayoutTimeout):
        text += f": give it more time with {options}--layout-timeout SECONDS"
    elif isinstance(err, LayoutTooLarge):
        text += (
            f": raise the bound with {options}--max-layout-size N (its layout may then take "
            f"minutes: {options}--layout-timeout SECONDS)"
        )
    return f"{text}; {fallback}"


def text_fallback(file: str) -> str:
    """The commands that write ``file``'s graph without Graphviz."""
    spelled = shlex.quote(file) if file else "FILE"
    return (
        f"`flowc render {spelled} -f dot` (or `-f mermaid`) writes the graph as text, "
        "which needs no layout"
    )
