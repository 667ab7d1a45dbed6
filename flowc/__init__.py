"""flowc: compile, check, draw, test and run `.flow` workflow graphs for AG2.

>>> import flowc
>>> compiled = flowc.compile_flow('''
... speaker user: human
... speaker bot
... when from user then bot
... ''')
>>> compiled.graph_dict["transitions"][0]["then"]
{'name': 'agent', 'args': {'agent_id': 'bot'}}
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flowc.compiler.decompile import decompile
from flowc.compiler.lower import CompiledFlow
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import Diagnostic, FlowError, has_errors
from flowc.dsl.formatter import format_source
from flowc.dsl.nodes import Flow
from flowc.dsl.parser import parse
from flowc.source import SourceFile

if TYPE_CHECKING:
    from flowc.compiler.analysis import check
    from flowc.compiler.render.rendering import render
    from flowc.runtime.hub import Hub
    from flowc.runtime.script_run import run_flow as run

#: heavier parts (networkx, asyncio, graphviz) load on first use, so that
#: `flowc compile` and `flowc fmt` start fast
_LAZY = {
    "check": ("flowc.compiler.analysis", "check"),
    "render": ("flowc.compiler.render.rendering", "render"),
    "Hub": ("flowc.runtime.hub", "Hub"),
    "run": ("flowc.runtime.script_run", "run_flow"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'flowc' has no attribute {name!r}")

__version__ = "0.1.0"

__all__ = [
    "CompiledFlow",
    "Diagnostic",
    "Flow",
    "FlowError",
    "Hub",
    "__version__",
    "check",
    "compile_flow",
    "decompile",
    "format_source",
    "parse",
    "render",
    "run",
]


def compile_flow(
    text: str, *, filename: str = "<input>", bindings: Mapping[str, str] | None = None
) -> CompiledFlow:
    """Compile `.flow` text; raise :class:`FlowError` carrying the diagnostics on errors.

    ``bindings`` maps speaker names to agent ids (as ``flowc compile --bind``).

    >>> c = compile_flow("speaker a\\nspeaker b\\nsequence a -> b", bindings={"b": "agent-7"})
    >>> c.graph_dict["transitions"][0]["then"]["args"]
    {'agent_id': 'agent-7'}
    """
    source = SourceFile(filename, text)
    compiled, diags = compile_source(source, bindings)
    if compiled is None or has_errors(diags):
        raise FlowError(diags, {filename: source})
    return compiled
