"""Small helpers for the render tests."""

from __future__ import annotations

from flowc import compile_flow
from flowc.compiler.lower import CompiledFlow
from flowc.compiler.render.diagram import Diagram, build_diagram


def diagram_of(text: str) -> tuple[CompiledFlow, Diagram]:
    compiled = compile_flow(text, filename="case.flow")
    return compiled, build_diagram(compiled)


def edge_set(diagram: Diagram, kind: str | None = None) -> set[tuple[str, str, str]]:
    """``(source title, target title, first label line)`` of the edges (of one kind)."""
    return {
        (diagram.node(e.source).title, diagram.node(e.target).title, e.label[0] if e.label else "")
        for e in diagram.edges
        if kind is None or e.kind == kind
    }
