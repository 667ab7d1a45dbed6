"""``flowc.render(...)``: a flow (or graph) drawn, as an object that shows itself in
Jupyter and writes any of the formats."""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.pipeline import LoadedGraph, compile_source
from flowc.compiler.render.diagram import Diagram, build_diagram, mark_findings
from flowc.compiler.render.dot import render_dot
from flowc.compiler.render.image import (
    LAYOUT_TIMEOUT,
    MAX_LAYOUT_SIZE,
    DotNotFoundError,
    LayoutError,
    LayoutTooLarge,
    render_image,
)
from flowc.compiler.render.mermaid import render_mermaid
from flowc.compiler.render.options import FORMATS, RenderOptions
from flowc.compiler.render.page import render_html
from flowc.compiler.serde import canonical_json, unstructure_graph
from flowc.diagnostics import Diagnostic, FlowError, has_errors
from flowc.source import SourceFile

#: file suffix -> format, for ``save`` and ``flowc render -o``
SUFFIX_FORMATS = {
    ".svg": "svg",
    ".png": "png",
    ".pdf": "pdf",
    ".dot": "dot",
    ".gv": "dot",
    ".mmd": "mermaid",
    ".mermaid": "mermaid",
    ".html": "html",
    ".htm": "html",
}


class CheckerUnavailableError(RuntimeError):
    """``flowc.compiler.analysis.analyze`` does not exist (yet)."""


def run_checker(
    flow: CompiledFlow | LoadedGraph,
    source: SourceFile | None = None,
    options: Any = None,
    declared: Any = None,
) -> tuple[Diagnostic, ...]:
    """The checker's findings for ``flow``, for marking on the diagram: what
    ``flowc check`` reports for ``source`` when it is given (ignore comments apply),
    else the analysis of the compiled flow or graph. ``options`` is a
    :class:`~flowc.compiler.analysis.CheckOptions` (None: the defaults). A graph's
    ``declared`` (a :class:`~flowc.compiler.analysis.system.Declarations`: what a stored
    run kept of its flow, for ``flowc view``) has its properties decided too.

    Raises :class:`CheckerUnavailableError` when the analysis package has no ``analyze``.
    """
    try:
        analysis = importlib.import_module("flowc.compiler.analysis")
    except ImportError as err:  # pragma: no cover - the package ships with flowc
        raise CheckerUnavailableError(f"the checker could not be imported: {err}") from None
    analyze = getattr(analysis, "analyze", None)
    analyze_graph = getattr(analysis, "analyze_graph", None)
    check_source = getattr(analysis, "check_source", None)
    if analyze is None or analyze_graph is None:
        raise CheckerUnavailableError(
            "the checker is not available in this build (flowc.compiler.analysis has no `analyze`)"
        )
    graph = isinstance(flow, LoadedGraph)
    extra = {"declared": declared} if graph and declared is not None else {}
    if source is not None and check_source is not None:
        found = check_source(source, options, as_json=graph, **extra)
    elif isinstance(flow, LoadedGraph):
        found = analyze_graph(flow, options, filename=source.name if source else "<input>", **extra)
    else:
        found = analyze(flow, options, filename=source.name if source else "<input>")
    return tuple(d for d in found if isinstance(d, Diagnostic))


@attrs.frozen
class Rendering:
    """A drawn flow. ``dot`` and ``mermaid`` are text; ``svg()``, ``image()`` and
    ``html()`` need Graphviz's ``dot`` (else :class:`DotNotFoundError`), within the
    options' budget (else :class:`~flowc.compiler.render.image.LayoutError`: a diagram
    past ``max_layout_size`` is refused before ``dot`` starts).

    Displays inline in Jupyter (``_repr_svg_`` / ``_repr_mimebundle_``).
    """

    diagram: Diagram
    options: RenderOptions = attrs.field(factory=RenderOptions)
    source: SourceFile | None = None

    @property
    def dot(self) -> str:
        return render_dot(self.diagram, self.options)

    @property
    def mermaid(self) -> str:
        return render_mermaid(self.diagram, self.options)

    @property
    def findings(self) -> tuple[Diagnostic, ...]:
        return tuple(f.diagnostic for f in self.diagram.findings)

    @property
    def layout_size(self) -> int:
        """What the layout's size budget counts: the diagram's nodes and edges."""
        return len(self.diagram.nodes) + len(self.diagram.edges)

    def check_layout_size(self) -> None:
        """Raise :class:`~flowc.compiler.render.image.LayoutTooLarge` when the diagram is
        past the options' ``max_layout_size`` (what ``svg()`` and ``image()`` do first)."""
        if self.layout_size > self.options.max_layout_size:
            raise LayoutTooLarge(self.layout_size, self.options.max_layout_size)

    def svg(self) -> str:
        return self.image("svg").decode("utf-8")

    def image(self, fmt: str) -> bytes:
        """``svg``, ``png`` or ``pdf`` bytes."""
        self.check_layout_size()
        return render_image(self.dot, fmt, timeout=self.options.layout_timeout)

    def html(self) -> str:
        return render_html(self.diagram, self.svg(), self.source)

    def to_bytes(self, fmt: str) -> bytes:
        """The drawing in any of :data:`~flowc.compiler.render.options.FORMATS`."""
        if fmt == "dot":
            return self.dot.encode("utf-8")
        if fmt == "mermaid":
            return self.mermaid.encode("utf-8")
        if fmt == "html":
            return self.html().encode("utf-8")
        if fmt in ("svg", "png", "pdf"):
            return self.image(fmt)
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")

    def save(self, path: str | os.PathLike[str], fmt: str | None = None) -> Path:
        """Write the drawing; the format defaults to the one the suffix names."""
        target = Path(path)
        fmt = fmt or SUFFIX_FORMATS.get(target.suffix.lower())
        if fmt is None:
            raise ValueError(f"cannot tell the format from {target.name!r}: pass fmt=...")
        target.write_bytes(self.to_bytes(fmt))
        return target

    def _repr_svg_(self) -> str | None:
        try:
            return self.svg()
        except (DotNotFoundError, LayoutError):  # the Markdown's Mermaid is drawn instead
            return None

    def _repr_mimebundle_(
        self, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None
    ) -> dict[str, str]:
        bundle = {
            "text/plain": f"<flowc rendering of {self.diagram.title or 'a flow'}: "
            f"{len(self.diagram.nodes)} nodes, {len(self.diagram.edges)} edges>",
            # JupyterLab draws Mermaid in Markdown: the fallback without Graphviz
            "text/markdown": f"```mermaid\n{self.mermaid}```\n",
        }
        svg = self._repr_svg_()
        if svg is not None:
            bundle["image/svg+xml"] = svg
        if include is not None:
            keep = set(include)
            bundle = {k: v for k, v in bundle.items() if k in keep}
        if exclude is not None:
            drop = set(exclude)
            bundle = {k: v for k, v in bundle.items() if k not in drop}
        return bundle


def _load(
    flow: Any, filename: str, bindings: Mapping[str, str] | None
) -> tuple[CompiledFlow | LoadedGraph, SourceFile | None]:
    if isinstance(flow, CompiledFlow | LoadedGraph):
        return flow, None
    if isinstance(flow, m.TransitionGraph):
        text = canonical_json(unstructure_graph(flow))
        return LoadedGraph(flow, {}, False), SourceFile(filename, text)
    if isinstance(flow, Mapping):
        source = SourceFile(filename, json.dumps(flow, indent=2, sort_keys=True) + "\n")
        loaded, diags = _load_graph(source)
        if loaded is None:
            raise FlowError(diags, {source.name: source})
        return loaded, source
    if isinstance(flow, os.PathLike):
        from flowc.diagnostics import decode_source
        from flowc.inputs import read_bytes

        path = Path(flow)
        # as every command reads a file: a regular file of at most 16 MiB, UTF-8
        read, diags = decode_source(str(path), read_bytes(str(path)))
        if read is None:
            raise FlowError(diags, {})
        return _load_text(read.text, str(path), path.suffix == ".json", bindings)
    if isinstance(flow, str):
        return _load_text(flow, filename, flow.lstrip().startswith("{"), bindings)
    raise TypeError(f"cannot render a {type(flow).__name__}")


def _load_graph(source: SourceFile) -> tuple[LoadedGraph | None, tuple[Diagnostic, ...]]:
    """A JSON graph as ``flowc check`` and ``run`` read it: one that names a custom
    condition or target that loads nothing is refused (E103), not drawn."""
    from flowc.compiler.analysis import load_checked_graph

    return load_checked_graph(source)


def _load_text(
    text: str, filename: str, is_json: bool, bindings: Mapping[str, str] | None
) -> tuple[CompiledFlow | LoadedGraph, SourceFile]:
    source = SourceFile(filename, text)
    if is_json:
        loaded, diags = _load_graph(source)
        if loaded is None:
            raise FlowError(diags, {filename: source})
        return loaded, source
    compiled, diags = compile_source(source, bindings)
    if compiled is None or has_errors(diags):
        raise FlowError(diags, {filename: source})
    return compiled, source


def render(
    flow: Any,
    *,
    check: bool = False,
    findings: Iterable[Diagnostic] | None = None,
    direction: str = "LR",
    filename: str = "<input>",
    bindings: Mapping[str, str] | None = None,
    layout_timeout: float = LAYOUT_TIMEOUT,
    max_layout_size: int = MAX_LAYOUT_SIZE,
) -> Rendering:
    """Draw a flow: ``.flow`` text, a path (``.flow`` or ``.json``), a compiled flow,
    a graph dict / knobs dict or a :class:`~flowc.compiler.model.TransitionGraph`.

    ``check=True`` runs the checker and marks its findings; ``findings`` marks the
    diagnostics given instead. Raises :class:`~flowc.diagnostics.FlowError` when the
    flow has errors. ``layout_timeout`` (seconds) and ``max_layout_size`` (nodes and
    edges) are Graphviz's budget for the SVG, PNG, PDF and HTML drawings.

    >>> r = render("speaker user: human\\nspeaker bot\\nwhen from user then bot")
    >>> print(r.mermaid.splitlines()[4])
      n3(["terminate #quot;after_work#quot;"])
    """
    loaded, source = _load(flow, filename, bindings)
    diagram = build_diagram(loaded)
    if check or findings is not None:
        diags = tuple(findings) if findings is not None else run_checker(loaded, source)
        diagram = mark_findings(diagram, diags)
    options = RenderOptions(
        direction=direction, layout_timeout=layout_timeout, max_layout_size=max_layout_size
    )
    return Rendering(diagram, options, source)
