"""Plugins: the Python that implements a flow's custom conditions and targets.

A ``condition NAME(...)`` or ``target NAME(...)`` declaration says what a custom
name takes; the class that answers ``evaluate`` / ``resolve`` lives in the team's
own Python. A plugin is a module name (``myproject.routing``, imported from the
project folder) or a ``.py`` file; importing it registers its classes, with
:func:`flowc.register_condition` / :func:`flowc.register_target` or with AG2's own
``register_condition`` / ``register_target`` (classes a plugin registers into AG2's
default registry are picked up too, so a module written for AG2 works unchanged).

Every command that reads a flow takes ``--plugin MODULE_OR_FILE`` (repeatable), and
``plugins = [...]`` in ``[tool.flowc]``, imported only from a trusted folder (the rule is
:mod:`flowc.project.trust`'s); the Python API takes ``plugins=[...]``.
The commands that run a flow (``test``, ``run``, ``scenarios``, ``replay``) need an
implementation for every custom name the graph uses, and say which are missing
(:func:`implementation_problems`); the others check the same when plugins are given.

>>> load_plugins(["no/such/plugin.py"])
Traceback (most recent call last):
...
flowc.runtime.plugins.PluginError: --plugin no/such/plugin.py: no such file
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.compiled import CompiledFlow
from flowc.diagnostics import E115, Diagnostic
from flowc.dsl import nodes as n
from flowc.runtime.transitions import (
    BUILTIN_CONDITION_NAMES,
    BUILTIN_TARGET_NAMES,
    TransitionRegistry,
    default_registry,
)
from flowc.source import Span

__all__ = [
    "ImplementationProblem",
    "PluginError",
    "implementation_problems",
    "implementations_text",
    "load_plugins",
    "used_customs",
]


class PluginError(Exception):
    """A plugin could not be found or imported; the message names it and says why."""


#: plugins already imported in this process: resolved file path or module name
_LOADED: set[str] = set()


def _import_error(label: str, file: Path | None, err: BaseException) -> str:
    """``LABEL: cannot import it: Kind: message (FILE:LINE)``, the deepest frame in the plugin."""
    where = ""
    if isinstance(err, SyntaxError) and err.filename:
        where = f"{err.filename}:{err.lineno}"
    else:
        frames = [
            f
            for f in traceback.extract_tb(err.__traceback__)
            if "importlib" not in f.filename and not f.filename.endswith("plugins.py")
        ]
        if file is not None:
            frames = [f for f in frames if Path(f.filename).resolve() == file.resolve()] or frames
        if frames:
            where = f"{frames[-1].filename}:{frames[-1].lineno}"
    return f"{label}: cannot import it: {type(err).__name__}: {err}" + (
        f" ({where})" if where else ""
    )


def _is_file_spec(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or "\\" in spec


def _load_file(spec: str, file: Path, label: str) -> None:
    if not file.is_file():
        raise PluginError(f"{label}: {'a folder, not a file' if file.is_dir() else 'no such file'}")
    key = str(file.resolve())
    if key in _LOADED:
        return
    import hashlib  # only for a plugin file: most runs load none

    digest = hashlib.sha1(key.encode()).hexdigest()[:8]
    name = "flowc_plugin_" + re.sub(r"\W", "_", file.stem) + "_" + digest
    try:
        import_file(file, name)
    except NotAModule:
        raise PluginError(f"{label}: cannot load it as a Python module") from None
    except (Exception, SystemExit) as err:  # (`sys.exit` while it loads ends no command)
        raise PluginError(_import_error(label, file, err)) from None
    _LOADED.add(key)


class NotAModule(Exception):
    """:func:`import_file`'s file cannot be loaded as a Python module."""


def import_file(file: Path, name: str) -> ModuleType:
    """Import the Python file ``file`` as the module ``name``, its folder on ``sys.path``
    while it runs (as ``python FILE``: its siblings import). :class:`NotAModule` when it
    cannot be loaded as a module; what its code raises is raised as it is (and the
    module is then not left in ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise NotAModule(str(file))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pydantic look their module up
    folder = str(file.resolve().parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    return module


def _load_module(spec: str, base: Path, label: str) -> None:
    if not all(part.isidentifier() for part in spec.split(".")):
        raise PluginError(f"{label}: not a module name (a.b.c) or a .py file")
    if spec in _LOADED:
        return
    folder = str(base.resolve())
    sys.path.insert(0, folder)
    try:
        importlib.import_module(spec)
    except ModuleNotFoundError as err:
        if err.name is not None and (spec == err.name or spec.startswith(err.name + ".")):
            raise PluginError(
                f"{label}: no module named {spec!r} (looked in {base} and on the Python path)"
            ) from None
        raise PluginError(_import_error(label, None, err)) from None
    except (Exception, SystemExit) as err:
        raise PluginError(_import_error(label, None, err)) from None
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    _LOADED.add(spec)


def _adopt_ag2(registry: TransitionRegistry) -> None:
    """Copy the custom classes registered into AG2's default registry, if a plugin loaded AG2.

    flowc does not import AG2 for this: the module is read only when a plugin has
    already imported it. The protocol (``name``, ``evaluate`` / ``resolve``) is the same.
    """
    transitions = sys.modules.get("ag2.network.transitions")
    if transitions is None:
        return
    ag2_registry = getattr(transitions, "TransitionRegistry", None)
    if ag2_registry is None or getattr(ag2_registry, "_DEFAULT", None) is None:
        return  # nobody registered anything into AG2
    default = ag2_registry.default()
    builtin_c = {getattr(c, "name", None) for c in getattr(transitions, "_BUILTIN_CONDITIONS", ())}
    builtin_t = {getattr(c, "name", None) for c in getattr(transitions, "_BUILTIN_TARGETS", ())}
    for name, cls in dict(getattr(default, "_conditions", {})).items():
        if name not in builtin_c and name not in BUILTIN_CONDITION_NAMES:
            registry.register_condition(cls)
    for name, cls in dict(getattr(default, "_targets", {})).items():
        if name not in builtin_t and name not in BUILTIN_TARGET_NAMES:
            registry.register_target(cls)


def load_plugins(
    specs: Sequence[str],
    *,
    base: str | os.PathLike[str] | None = None,
    origin: str = "--plugin",
    registry: TransitionRegistry | None = None,
) -> None:
    """Import each plugin (once per process) so that its classes are registered.

    A spec ending in ``.py`` or holding a ``/`` is a file, relative to ``base``
    (default: the current folder); any other is a module name, imported with
    ``base`` first on the path. ``origin`` names where the specs come from in errors
    (``--plugin``, or ``pyproject.toml: plugins``). Raises :class:`PluginError`.
    """
    folder = Path(base) if base is not None else Path.cwd()
    for spec in specs:
        if not isinstance(spec, str) or not spec.strip():
            raise PluginError(f"{origin}: a plugin is a module name or a .py file, got {spec!r}")
        label = f"{origin} {spec}"
        if _is_file_spec(spec):
            path = Path(spec)
            _load_file(spec, path if path.is_absolute() else folder / path, label)
        else:
            _load_module(spec, folder, label)
    _adopt_ag2(registry if registry is not None else default_registry())


# ── what a graph needs ────────────────────────────────────────────────────────


def used_customs(graph: m.TransitionGraph) -> Iterator[tuple[str, str, int | None]]:
    """``(kind, name, transition index)`` of every custom condition and target the graph
    uses, in file order; the index is ``None`` for the default target."""
    for i, t in enumerate(graph.transitions):
        for c in m.walk_condition(t.when):
            if isinstance(c, m.CustomCondition):
                yield "condition", c.name, i
        if isinstance(t.then, m.CustomTarget):
            yield "target", t.then.name, i
    if isinstance(graph.default_target, m.CustomTarget):
        yield "target", graph.default_target.name, None


@attrs.frozen
class ImplementationProblem:
    """A custom name with no implementation, or a use of one its class cannot be built
    from; at the declaration (``span``), or at the call (``NAME(...)``) in a rule."""

    filename: str
    line: int
    column: int
    message: str
    help: str | None = None
    span: Span | None = None

    def text(self) -> str:
        """``FILE:LINE:COL: error: MESSAGE`` and a help line."""
        out = f"{self.filename}:{self.line}:{self.column}: error: {self.message}\n"
        if self.help:
            out += f"  = help: {self.help}\n"
        return out

    def diagnostic(self) -> Diagnostic:
        """The problem as a finding (E115), for every output format of ``flowc check``."""
        return Diagnostic(E115, self.message, self.filename, self.span, help=self.help)


def _how_to_register(kind: str, name: str) -> str:
    method = (
        "evaluate(state, envelope) -> bool"
        if kind == "condition"
        else "resolve(state, envelope) -> TransitionDecision"
    )
    return (
        f'register a class with `name = "{name}"` and `{method}` '
        f"(`@flowc.register_{kind}`), and load its module with `--plugin MODULE_OR_FILE` "
        "or `plugins = [...]` under [tool.flowc] in pyproject.toml (imported only from a "
        "folder you trust: `flowc trust FOLDER`, or `--trust` for one command)"
    )


def implementation_problems(
    compiled: CompiledFlow, filename: str, registry: TransitionRegistry | None = None
) -> tuple[ImplementationProblem, ...]:
    """What opening ``compiled``'s channel would refuse for want of an implementation.

    Each custom name the graph uses and nobody registered is one problem, at its
    declaration, with the lines that use it; when every name is registered, each use is
    built from its arguments as the channel builds it when it opens, and a use its class
    refuses (or fails on) is a problem at that ``NAME(...)``, naming the class and where
    it is defined.

    >>> import flowc
    >>> flow = flowc.compile_flow("speaker a: human\\nspeaker b\\ncondition odd()\\n"
    ...                           "when odd() then b")
    >>> print(implementation_problems(flow, "f.flow")[0].text(), end="")
    f.flow:3:1: error: condition `odd` has no implementation (used on line 4)
      = help: register a class with `name = "odd"` and `evaluate(state, envelope) -> bool` (`@flowc.register_condition`), and load its module with `--plugin MODULE_OR_FILE` or `plugins = [...]` under [tool.flowc] in pyproject.toml (imported only from a folder you trust: `flowc trust FOLDER`, or `--trust` for one command)
    """
    reg = registry if registry is not None else default_registry()
    decls = {(c.kind, c.name): c for c in compiled.customs}
    lines = {r.index: r.span.line for r in compiled.rules}
    default_line = compiled.default_span.line if compiled.default_span is not None else None
    uses: dict[tuple[str, str], list[int]] = {}
    for kind, name, index in used_customs(compiled.graph):
        found = reg.condition(name) if kind == "condition" else reg.target(name)
        if found is not None:
            continue
        line = lines.get(index) if index is not None else default_line
        at = uses.setdefault((kind, name), [])
        if line is not None and line not in at:
            at.append(line)
    out: list[ImplementationProblem] = []
    for (kind, name), at in uses.items():
        decl = decls.get((kind, name))
        used = (
            f" (used on line{'s' if len(at) > 1 else ''} {', '.join(map(str, at))})" if at else ""
        )
        line, column = (
            (decl.span.line, decl.span.column) if decl is not None else ((at[0] if at else 1), 1)
        )
        out.append(
            ImplementationProblem(
                filename,
                line,
                column,
                f"{kind} `{name}` has no implementation{used}",
                _how_to_register(kind, name),
                decl.span if decl is not None else None,
            )
        )
    if out:
        return tuple(out)
    for kind, call, span in _custom_calls(compiled):
        cls = reg.condition(call.name) if kind == "condition" else reg.target(call.name)
        if cls is None:
            continue  # (flowc's own vocabulary, loaded when a run needs it)
        try:
            cls(**dict(call.args))
        except Exception as err:  # a constructor may raise anything: it is the team's code
            out.append(_unbuildable(compiled, filename, kind, call, cls, span, err))
    return tuple(out)


def _unbuildable(
    compiled: CompiledFlow,
    filename: str,
    kind: str,
    call: m.CustomCondition | m.CustomTarget,
    cls: Any,
    span: Span | None,
    err: Exception,
) -> ImplementationProblem:
    """The problem of a call whose registered class does not build from its arguments."""
    from flowc.dsl.formatter import format_value
    from flowc.runtime.failures import describe_exception, where_defined

    shown = ", ".join(f"{k} = {format_value(v)}" for k, v in call.args.items())
    what = f"`{call.name}({shown})`"
    defined = where_defined(cls)
    cls_text = f"`{getattr(cls, '__qualname__', cls)}`" + (f" ({defined})" if defined else "")
    if isinstance(err, TypeError | ValueError):
        message = (
            f"{what}: the class registered for this {kind}, {cls_text}, does not take "
            f"these arguments: {type(err).__name__}: {err}"
        )
        help = (
            f"make the class's fields match `{kind} {call.name}(...)`'s parameters, or the "
            "declaration match the class"
        )
    else:
        message = (
            f"{what}: building the class registered for this {kind}, {cls_text}, "
            f"failed: {describe_exception(err)}"
        )
        help = "fix the class's constructor; `--traceback` shows where it failed"
    line, column = (span.line, span.column) if span is not None else (1, 1)
    return ImplementationProblem(filename, line, column, message, help, span)


def _custom_calls(
    compiled: CompiledFlow,
) -> Iterator[tuple[str, m.CustomCondition | m.CustomTarget, Span | None]]:
    """Every use of a custom condition or target, with the span of its ``NAME(...)``."""
    flow = compiled.flow
    infos = {r.index: r for r in compiled.rules}
    for i, t in enumerate(compiled.graph.transitions):
        info = infos.get(i)
        source: list[n.CallCond] = []
        if info is not None and info.rule is not None:
            source = [
                c
                for c in n.walk_written_cond(info.rule.cond)
                if isinstance(c, n.CallCond) and _within(c.span, info.span)
            ]
        seen: dict[str, int] = {}
        for c in m.walk_condition(t.when):
            if isinstance(c, m.CustomCondition):
                k = seen.get(c.name, 0)
                seen[c.name] = k + 1
                named = [s for s in source if s.name.value == c.name]
                span = named[k].span if k < len(named) else (info.span if info else None)
                yield "condition", c, span
        if isinstance(t.then, m.CustomTarget):
            target = info.rule.target if info is not None and info.rule is not None else None
            yield (
                "target",
                t.then,
                target.span if isinstance(target, n.CallTarget) else (info.span if info else None),
            )
    if isinstance(compiled.graph.default_target, m.CustomTarget):
        written = next((st.target for st in flow.statements if isinstance(st, n.Otherwise)), None)
        yield (
            "target",
            compiled.graph.default_target,
            written.span if isinstance(written, n.CallTarget) else compiled.default_span,
        )


def _within(inner: Span, outer: Span) -> bool:
    return (outer.line, outer.column) <= (inner.line, inner.column) and (
        inner.end_line,
        inner.end_column,
    ) <= (outer.end_line, outer.end_column)


def implementations_text(problems: Sequence[ImplementationProblem]) -> str:
    return "".join(p.text() for p in problems)
