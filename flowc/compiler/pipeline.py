"""The compile pipeline: source text -> parse -> lower, and JSON graph inputs.

Stages run in order and stop after the first stage with errors.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.compiled import BindingError, CompiledFlow
from flowc.compiler.lower import lower
from flowc.compiler.serde import ShapeError, is_knobs_dict, structure_graph, structure_knobs
from flowc.diagnostics import E001, E108, Diagnostic, has_errors
from flowc.dsl.parser import parse_source
from flowc.inputs import DataError, load_json
from flowc.source import SourceFile


def compile_source(
    source: SourceFile, bindings: Mapping[str, str] | None = None
) -> tuple[CompiledFlow | None, tuple[Diagnostic, ...]]:
    """Parse and lower one `.flow` source. Raises :class:`BindingError` when the flow
    compiles but ``bindings`` name no declared speaker or give two speakers one agent id
    (every caller that binds comes here: ``flowc compile --bind``, ``compile_flow``,
    ``render``)."""
    flow, diags = parse_source(source)
    if diags:
        return None, diags
    compiled, diags = lower(flow, source.name, bindings)
    if bindings and compiled is not None and not has_errors(diags):
        problem = compiled.binding_problem()
        if problem is not None:
            unknown = tuple(sorted(set(bindings) - set(compiled.speakers)))
            raise BindingError(problem, unknown)
    return compiled, diags


@attrs.frozen
class LoadedGraph:
    """A graph read from JSON: either a bare graph dict or a knobs dict."""

    graph: m.TransitionGraph
    context_vars: dict[str, Any]
    is_knobs: bool


def read_json(source: SourceFile, help: str | None = None) -> tuple[Any, tuple[Diagnostic, ...]]:
    """The JSON value of ``source``, or an E001 where it is not JSON or is refused:
    nested more than 500 levels, an integer over 4,300 digits, a number that is not
    finite (see :mod:`flowc.inputs`)."""
    try:
        return load_json(source.text), ()
    except json.JSONDecodeError as err:
        span = source.span(err.pos, min(err.pos + 1, len(source.text)))
        if not source.text[: err.pos].strip():
            # not JSON from its first character: the file may be anything (a link to a
            # key or /etc/passwd), so its text is not shown; the place is
            return None, (
                Diagnostic(
                    E001,
                    f"the file is not JSON ({err.msg}); its text is not shown, as it may "
                    "not be a JSON file",
                    source.name,
                    source.span(err.pos, err.pos),
                    quote_source=False,
                    help=help,
                ),
            )
        return None, (Diagnostic(E001, f"invalid JSON: {err.msg}", source.name, span, help=help),)
    except DataError as err:
        start = err.offset or 0
        span = source.span(start, min(start + 1, len(source.text)))
        at = f" (at {err.path})" if err.path else ""
        return None, (
            Diagnostic(E001, f"{err.message}{at}", source.name, span, json_path=err.path),
        )


def load_graph_json(source: SourceFile) -> tuple[LoadedGraph | None, tuple[Diagnostic, ...]]:
    """Read a JSON graph dict or knobs dict, validating its shape (E108 with JSON paths)."""
    data, diags = read_json(
        source, help="the file must hold one JSON object: a graph or a knobs dict"
    )
    if diags:
        return None, diags
    is_knobs = is_knobs_dict(data)
    try:
        if is_knobs:
            knobs = structure_knobs(data)
            return LoadedGraph(knobs.graph, dict(knobs.context_vars), True), ()
        return LoadedGraph(structure_graph(data), {}, False), ()
    except ShapeError as err:
        return None, tuple(
            Diagnostic(
                E108,
                f"{p.path or '(top level)'}: {p.message}" if p.path else p.message,
                source.name,
                json_path=p.path,
                help="the graph must have AG2's TransitionGraph.to_dict() shape",
            )
            for p in err.problems
        )
