"""The language server's state: per document, its last analysis (findings and the
index of the last version that parsed), and the ``[tool.flowc]`` settings it is
checked with. The requests are answered in :mod:`flowc.lsp.server` and
:mod:`flowc.lsp.features`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from flowc.commands.check import options_from
from flowc.commands.config import Config, find_pyproject, load_config, load_plugins_for
from flowc.commands.console import UsageError
from flowc.compiler.analysis import CheckOptions, check_compiled, check_source
from flowc.compiler.lower import lower
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import E001, Diagnostic, Severity, has_errors
from flowc.lsp.incremental import Reparser
from flowc.lsp.index import Index
from flowc.source import SourceFile, Span

#: how long after the last keystroke a changed document is analysed again
DEBOUNCE_SECONDS = 0.05

_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}
#: findings about code that never runs: editors grey it out
_UNNECESSARY = frozenset({"W202", "W203", "W204"})


@attrs.define
class Analysis:
    """The last analysis of a document: its findings and, from the last version that
    parsed, the index that hover, definition and symbols use."""

    version: int | None
    diagnostics: tuple[Diagnostic, ...]
    index: Index | None


@attrs.define
class _Config:
    path: Path | None
    stamp: tuple[int, int]
    options: CheckOptions
    problem: str | None


def _no_cli_options() -> argparse.Namespace:
    return argparse.Namespace(select=None, ignore=None, strict=False, max_states=None, target="flowc")


class FlowcServer(LanguageServer):
    """The language server and the state it keeps per document."""

    def __init__(self) -> None:
        super().__init__("flowc", "0.1.0")
        self.analyses: dict[str, Analysis] = {}
        self._pending: dict[str, asyncio.Task[None]] = {}
        #: per document, the last tree that parsed: an edit parses only what it touched
        self.reparsers: dict[str, Reparser] = {}
        #: per document, the last findings as LSP diagnostics (see :meth:`publish`)
        self._converted: dict[str, dict[tuple[object, ...], lsp.Diagnostic]] = {}
        self._configs: dict[Path, _Config] = {}
        self._reported: set[str] = set()

    # ── configuration ────────────────────────────────────────────────────────

    def options_for(self, path: str) -> CheckOptions:
        """The check options of ``[tool.flowc]`` in the pyproject.toml nearest ``path``;
        re-read whenever that file's modification time changes. A broken table is
        reported once (a message) and the defaults are used."""
        folder = Path(path).parent if path else Path.cwd()
        pyproject = find_pyproject(folder if folder.is_dir() else Path.cwd())
        if pyproject is None:
            return CheckOptions()
        try:
            stat = pyproject.stat()
            mtime = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            return CheckOptions()
        cached = self._configs.get(pyproject)
        if cached is None or cached.stamp != mtime:
            try:
                table = load_config(pyproject)
                options = options_from(_no_cli_options(), table, str(pyproject))
                # the plugins it names, as `flowc check` loads them (Python imports a module
                # once: an edited plugin takes effect when the server restarts)
                load_plugins_for(None, Config(pyproject, table))
                cached = _Config(pyproject, mtime, options, None)
            except UsageError as err:
                cached = _Config(pyproject, mtime, CheckOptions(), str(err))
            self._configs[pyproject] = cached
        if cached.problem and cached.problem not in self._reported:
            self._reported.add(cached.problem)
            self.window_show_message(lsp.ShowMessageParams(
                type=lsp.MessageType.Error,
                message=f"flowc: {cached.problem}; checking with the default settings"))
        return cached.options

    # ── analysis ─────────────────────────────────────────────────────────────

    def analyse(self, uri: str) -> None:
        """Check the document now and publish its diagnostics."""
        doc = self.workspace.get_text_document(uri)
        path = to_fs_path(uri) or uri
        source = SourceFile(path, doc.source)
        options = self.options_for(path)
        previous = self.analyses.get(uri)
        # the server keeps every open document's tree alive: the cycle collector would walk
        # them all many times while one file is checked (it finds nothing: the trees hold
        # no cycles), so it waits until the check is done, as `parse_source` does
        paused = gc.isenabled()
        gc.disable()
        try:
            flow, syntax = self.reparsers.setdefault(uri, Reparser()).parse(source)
            if syntax:
                # keep the last good analysis for everything but the syntax error
                kept = previous.diagnostics if previous else ()
                old = tuple(d for d in kept if d.code is not E001)
                index = previous.index if previous else None
                self.analyses[uri] = Analysis(doc.version, (*syntax, *old), index)
            else:
                # parsed and lowered once: the findings (as `flowc check`) and the index
                compiled, compile_diags = lower(flow, source.name)
                diags = check_compiled(compiled, compile_diags, options, filename=source.name)
                self.analyses[uri] = Analysis(doc.version, diags, Index.build(source, flow, compiled))
        finally:
            if paused:
                gc.enable()
        self.publish(uri)

    def publish(self, uri: str) -> None:
        analysis = self.analyses[uri]
        doc = self.workspace.get_text_document(uri)
        lines = doc.lines
        # most findings survive an edit unchanged: in an ASCII text (where a column is the
        # same in every position encoding) the converted ones are kept per document and
        # reused by code, message and place
        ascii_text = doc.source.isascii()
        cache = self._converted.get(uri, {}) if ascii_text else {}
        kept: dict[tuple[object, ...], lsp.Diagnostic] = {}
        out = []
        for d in analysis.diagnostics:
            s = d.span
            key = (d.code.id, d.message, d.help, s.line, s.column, s.end_line, s.end_column) \
                if s is not None else (d.code.id, d.message, d.help)
            converted = cache.get(key)
            if converted is None:
                converted = self.lsp_diagnostic(d, lines)
            kept[key] = converted
            out.append(converted)
        if ascii_text:
            self._converted[uri] = kept
        else:
            self._converted.pop(uri, None)
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=out, version=analysis.version))

    def forget_converted(self, uri: str) -> None:
        self._converted.pop(uri, None)

    def to_range(self, span: Span | None, lines: Sequence[str]) -> lsp.Range:
        """A flowc span (1-based lines and columns, in characters) as an LSP range in the
        position encoding agreed with the client."""
        if span is None:
            return lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
        server_range = lsp.Range(
            lsp.Position(span.line - 1, span.column - 1),
            lsp.Position(span.end_line - 1, span.end_column - 1),
        )
        return self.workspace.position_codec.range_to_client_units(lines, server_range)

    def lsp_diagnostic(self, d: Diagnostic, lines: Sequence[str]) -> lsp.Diagnostic:
        message = d.message
        if d.help:
            message += f"\nhelp: {d.help}"
        tags = [lsp.DiagnosticTag.Unnecessary] if d.code.id in _UNNECESSARY else None
        return lsp.Diagnostic(
            range=self.to_range(d.span, lines),
            message=message,
            severity=_SEVERITY[d.severity],
            code=d.code.id,
            source="flowc",
            tags=tags,
        )

    def schedule(self, uri: str, delay: float) -> None:
        """Analyse ``uri`` after ``delay`` seconds, replacing an analysis already waiting."""
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()

        async def later() -> None:
            await asyncio.sleep(delay)
            self._pending.pop(uri, None)
            self.analyse(uri)

        self._pending[uri] = asyncio.ensure_future(later())

    def config_changed(self) -> None:
        """A pyproject.toml changed (the editor's file watch): check every open
        document again with the settings read afresh."""
        self._configs.clear()
        self._reported.clear()
        for uri in list(self.analyses):
            self.schedule(uri, 0)

    def diagram(self, uri: str) -> dict[str, Any]:
        """The flow drawn as ``flowc render --check`` draws it: SVG, with the findings
        the editor shows marked on it."""
        from flowc.compiler.render.diagram import build_diagram, mark_findings
        from flowc.compiler.render.image import DotNotFoundError
        from flowc.compiler.render.options import RenderOptions
        from flowc.compiler.render.rendering import Rendering

        if uri not in self.analyses:
            raise RequestFailed(f"{uri} is not open")
        doc = self.workspace.get_text_document(uri)
        source = SourceFile(to_fs_path(uri) or uri, doc.source)
        compiled, diags = compile_source(source)
        if compiled is None or has_errors(diags):
            errors = "; ".join(f"{d.code.id} line {d.span.line if d.span else '?'}: {d.message}"
                               for d in diags if d.is_error)
            raise RequestFailed(f"the flow has errors, so it cannot be drawn: {errors}")
        findings = check_source(source, self.options_for(source.name), as_json=False)
        diagram = mark_findings(build_diagram(compiled), findings)
        try:
            svg = Rendering(diagram, RenderOptions(), source).svg()
        except DotNotFoundError as err:
            raise RequestFailed(f"drawing needs Graphviz: {err}") from None
        return {"svg": svg, "findings": len(findings)}

    def document_end(self, lines: Sequence[str]) -> lsp.Position:
        """The position after the last character of a document's ``lines``."""
        if not lines:
            return lsp.Position(0, 0)
        if lines[-1].endswith("\n"):
            return lsp.Position(len(lines), 0)
        return lsp.Position(len(lines) - 1, self.workspace.position_codec.client_num_units(lines[-1]))

    # ── helpers for the requests ─────────────────────────────────────────────

    def lookup(self, uri: str, position: lsp.Position) -> tuple[Index, int, int] | None:
        """The document's index and the cursor as flowc's 1-based line, 0-based column."""
        analysis = self.analyses.get(uri)
        if analysis is None or analysis.index is None:
            return None
        index = analysis.index
        lines = index.source.text.splitlines(keepends=True)
        at = self.workspace.position_codec.position_from_client_units(lines, position)
        return index, at.line + 1, at.character


class RequestFailed(JsonRpcException):
    """A request the server understood but cannot answer (a refused rename, a diagram of
    a flow with errors): the response's error, whose message the editor shows."""

    CODE = -32803  # RequestFailed
