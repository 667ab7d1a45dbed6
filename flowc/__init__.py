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
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowc.compiler.analysis import CheckOptions
    from flowc.compiler.compiled import CompiledFlow
    from flowc.compiler.decompile import decompile
    from flowc.compiler.render.rendering import render
    from flowc.diagnostics import Diagnostic, FlowError
    from flowc.dsl.formatter import format_source
    from flowc.dsl.nodes import Flow
    from flowc.dsl.parser import parse
    from flowc.runtime.hub import Hub
    from flowc.runtime.plugins import PluginError
    from flowc.runtime.script_run import run_flow as run
    from flowc.runtime.transitions import register_condition, register_target

#: everything loads on first use, so that each command imports only what it needs
#: (`flowc --version` none of it, `flowc run` no formatter, decompiler or checker)
_LAZY = {
    "decompile": ("flowc.compiler.decompile", "decompile"),
    "CompiledFlow": ("flowc.compiler.compiled", "CompiledFlow"),
    "Diagnostic": ("flowc.diagnostics", "Diagnostic"),
    "FlowError": ("flowc.diagnostics", "FlowError"),
    "format_source": ("flowc.dsl.formatter", "format_source"),
    "Flow": ("flowc.dsl.nodes", "Flow"),
    "parse": ("flowc.dsl.parser", "parse"),
    "PluginError": ("flowc.runtime.plugins", "PluginError"),
    "register_condition": ("flowc.runtime.transitions", "register_condition"),
    "register_target": ("flowc.runtime.transitions", "register_target"),
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
    "PluginError",
    "__version__",
    "check",
    "compile_flow",
    "decompile",
    "format_source",
    "load_plugins",
    "parse",
    "register_condition",
    "register_target",
    "render",
    "run",
]


def load_plugins(*specs: str, base: str | os.PathLike[str] | None = None) -> None:
    """Import plugins (module names or ``.py`` files, relative to ``base``, default the
    current folder) so that the custom conditions and targets they register are known
    to :func:`run` and the hub. Raises :class:`PluginError` when one cannot be imported.

    >>> load_plugins("no_such_plugin_module")
    Traceback (most recent call last):
    ...
    flowc.runtime.plugins.PluginError: plugin no_such_plugin_module: no module named 'no_such_plugin_module' (looked in ... and on the Python path)
    """
    from flowc.runtime.plugins import load_plugins as load

    load(specs, base=base, origin="plugin")


def _require_implementations(compiled: CompiledFlow, filename: str) -> None:
    from flowc.runtime.plugins import PluginError, implementation_problems, implementations_text

    problems = implementation_problems(compiled, filename)
    if problems:
        raise PluginError(implementations_text(problems).rstrip("\n"))


def check(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    options: CheckOptions | None = None,
    filename: str | None = None,
    plugins: Sequence[str] = (),
) -> tuple[Diagnostic, ...]:
    """Check `.flow` text, a `.flow` / JSON file, or a graph dict (as ``flowc check``).

    ``plugins`` are loaded first (:func:`load_plugins`); with plugins, a clean flow
    whose custom names they do not implement raises :class:`PluginError`. See
    :func:`flowc.compiler.analysis.check` for the rest.

    >>> [d.code.id for d in check("speaker user: human\\nspeaker bot\\nwhen from user then bot\\n")]
    []
    """
    from flowc.compiler.analysis import check as check_any
    from flowc.compiler.pipeline import compile_source
    from flowc.diagnostics import has_errors

    if plugins:
        load_plugins(*plugins)
    diags = check_any(source, options=options, filename=filename)
    if plugins and not has_errors(diags) and not isinstance(source, Mapping):
        from flowc.compiler.analysis import read_input

        read, _, as_json = read_input(source, filename)
        if read is not None and not as_json:
            compiled, _ = compile_source(read)
            if compiled is not None:
                _require_implementations(compiled, read.name)
    return diags


def compile_flow(
    text: str,
    *,
    filename: str = "<input>",
    bindings: Mapping[str, str] | None = None,
    plugins: Sequence[str] = (),
) -> CompiledFlow:
    """Compile `.flow` text; raise :class:`FlowError` carrying the diagnostics on errors.

    ``bindings`` maps speaker names to agent ids (as ``flowc compile --bind``): each
    names a declared speaker, and no two speakers end up with one id (an unbound
    speaker keeps its name as its id; ids may be exchanged, as ``a=b b=a``).
    ``plugins`` are loaded first (:func:`load_plugins`), and then the flow's custom
    names must be implemented (:class:`PluginError` otherwise), as for a run.

    >>> c = compile_flow("speaker a\\nspeaker b\\nsequence a -> b", bindings={"b": "agent-7"})
    >>> c.graph_dict["transitions"][0]["then"]["args"]
    {'agent_id': 'agent-7'}

    Bindings that would merge two speakers, or name no speaker, raise ``ValueError``
    (a :class:`~flowc.compiler.compiled.BindingError`), as ``flowc compile`` refuses
    them:

    >>> compile_flow("speakers a, b, c", bindings={"a": "x", "c": "x"})
    Traceback (most recent call last):
      ...
    flowc.compiler.compiled.BindingError: bindings: a=x and c=x bind speakers a and c to one agent id `x` (each speaker needs one of its own)
    """
    from flowc.compiler.pipeline import compile_source
    from flowc.diagnostics import FlowError, has_errors
    from flowc.source import SourceFile

    source = SourceFile(filename, text)
    compiled, diags = compile_source(source, bindings)
    if compiled is None or has_errors(diags):
        raise FlowError(diags, {filename: source})
    if plugins:
        load_plugins(*plugins)
        _require_implementations(compiled, filename)
    return compiled
