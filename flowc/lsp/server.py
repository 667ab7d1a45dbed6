"""`flowc lsp`: the language server (pygls, over stdio).

Every document is read exactly as ``flowc check`` reads a file: the same
:func:`~flowc.compiler.analysis.check_source` with the options of the nearest
``pyproject.toml``'s ``[tool.flowc]`` table (re-read when the file changes), so an
editor shows what the command line reports. Features: diagnostics on open and on
change (debounced), hover, go to definition, document symbols and formatting.

A document that no longer parses keeps its last good analysis: the syntax error is
shown with the findings of the last version that parsed, and hover, definition and
symbols answer from that version.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from flowc.commands.check import options_from, page
from flowc.commands.config import Config, find_pyproject, load_config, load_plugins_for
from flowc.commands.console import UsageError
from flowc.compiler.analysis import CheckOptions, check_source
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import E001, Diagnostic, FlowError, Severity, has_errors
from flowc.dsl import nodes as n
from flowc.dsl.formatter import FormatterBug, format_source
from flowc.dsl.parser import parse_source
from flowc.lsp import features
from flowc.lsp.features import RequestFailed
from flowc.lsp.index import Index, Refused
from flowc.source import SourceFile, Span

#: how long after the last keystroke a changed document is analysed again
DEBOUNCE_SECONDS = 0.15

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
        diags = check_source(source, options, as_json=False)
        previous = self.analyses.get(uri)
        flow, syntax = parse_source(source)
        if syntax:
            # keep the last good analysis for everything but the syntax error
            kept = previous.diagnostics if previous else ()
            old = tuple(d for d in kept if d.code is not E001)
            index = previous.index if previous else None
            self.analyses[uri] = Analysis(doc.version, (*diags, *old), index)
        else:
            compiled, _ = compile_source(source)
            self.analyses[uri] = Analysis(doc.version, diags, Index.build(source, flow, compiled))
        self.publish(uri)

    def publish(self, uri: str) -> None:
        analysis = self.analyses[uri]
        doc = self.workspace.get_text_document(uri)
        lines = doc.lines
        out = [self.lsp_diagnostic(d, lines) for d in analysis.diagnostics]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=out, version=analysis.version))

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


class _QuietRefusals(logging.Filter):
    """pygls logs every request that ends in an error with its traceback; a refused
    rename (or a diagram of a flow with errors) is an answer, not a failure, so it stays
    out of the editor's server log."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, RequestFailed)


def _covers(span: Span, line: int, column: int) -> bool:
    """Whether a finding's span holds the cursor (1-based line, 0-based column)."""
    return (span.line, span.column - 1) <= (line, column) <= (span.end_line, span.end_column - 1)


def _symbol(name: str, kind: lsp.SymbolKind, whole: lsp.Range, selection: lsp.Range,
            detail: str | None = None, children: list[lsp.DocumentSymbol] | None = None
            ) -> lsp.DocumentSymbol:
    return lsp.DocumentSymbol(name=name, kind=kind, range=whole, selection_range=selection,
                              detail=detail, children=children)


def document_symbols(server: FlowcServer, index: Index) -> list[lsp.DocumentSymbol]:
    """The outline: speakers with their tools, context keys, custom conditions and
    targets, rules and scenarios, in file order."""
    lines = index.source.text.splitlines(keepends=True)

    def rng(span: Span) -> lsp.Range:
        return server.to_range(span, lines)

    out: list[lsp.DocumentSymbol] = []
    rule_no = 0
    for st in index.flow.statements:
        if isinstance(st, (n.SpeakerDecl, n.SpeakersDecl)):
            for sp in st.speakers if isinstance(st, n.SpeakersDecl) else (st,):
                tools = [_symbol(t.name.value, lsp.SymbolKind.Method, rng(t.span), rng(t.name.span),
                                 "tool") for t in sp.tools]
                out.append(_symbol(sp.name.value, lsp.SymbolKind.Class, rng(sp.span),
                                   rng(sp.name.span), "human" if sp.human else "speaker",
                                   tools or None))
        elif isinstance(st, n.ContextDecl):
            for entry in st.entries:
                out.append(_symbol(entry.key.value, lsp.SymbolKind.Variable, rng(entry.span),
                                   rng(entry.key.span), "context key"))
        elif isinstance(st, (n.ConditionDecl, n.TargetDecl)):
            what = "condition" if isinstance(st, n.ConditionDecl) else "target"
            out.append(_symbol(st.name.value, lsp.SymbolKind.Function, rng(st.span),
                               rng(st.name.span), what))
        elif isinstance(st, n.Rule):
            rule_no += 1
            text = index.source.text[st.span.start:st.span.end].split("\n", 1)[0].strip()
            out.append(_symbol(text, lsp.SymbolKind.Event, rng(st.span), rng(st.span),
                               f"line {st.span.line}"))
        elif isinstance(st, n.Otherwise):
            out.append(_symbol("otherwise", lsp.SymbolKind.Event, rng(st.span), rng(st.span),
                               "default"))
        elif isinstance(st, n.Scenario):
            out.append(_symbol(st.title.value, lsp.SymbolKind.Namespace, rng(st.span),
                               rng(st.title.span), "scenario"))
        elif isinstance(st, n.FlowDecl):
            out.append(_symbol(st.name.value, lsp.SymbolKind.Module, rng(st.span),
                               rng(st.name.span), "flow"))
    return out


def make_server() -> FlowcServer:
    server = FlowcServer()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: FlowcServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: FlowcServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, DEBOUNCE_SECONDS)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: FlowcServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)  # the config may have changed too

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: FlowcServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        pending = ls._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        ls.analyses.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: FlowcServer, params: lsp.HoverParams) -> lsp.Hover | None:
        found = ls.lookup(params.text_document.uri, params.position)
        if found is None:
            return None
        index, line, column = found
        code = index.code_at(line, column)
        if code is not None:
            text = page(code)
            return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, text)) if text else None
        occ = index.at(line, column)
        parts = []
        name_text = index.hover(occ) if occ is not None else None
        if name_text is not None:
            parts.append(name_text)
        # the findings under the cursor: what their codes mean (`flowc explain`)
        under = [d for d in ls.analyses[params.text_document.uri].diagnostics
                 if d.span is not None and _covers(d.span, line, column)]
        for code in dict.fromkeys(d.code.id for d in under):
            explained = page(code)
            if explained:
                parts.append(explained)
        if not parts:
            return None
        lines = index.source.text.splitlines(keepends=True)
        span = occ.span if occ is not None and name_text is not None else under[0].span
        return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, "\n\n---\n\n".join(parts)),
                         range=ls.to_range(span, lines))

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: FlowcServer, params: lsp.DefinitionParams) -> list[lsp.Location] | None:
        found = ls.lookup(params.text_document.uri, params.position)
        if found is None:
            return None
        index, line, column = found
        occ = index.at(line, column)
        if occ is None:
            return None
        lines = index.source.text.splitlines(keepends=True)
        return [lsp.Location(params.text_document.uri, ls.to_range(d.span, lines))
                for d in index.definitions(occ.kind, occ.name)] or None

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def references(ls: FlowcServer, params: lsp.ReferenceParams) -> list[lsp.Location] | None:
        found = ls.lookup(params.text_document.uri, params.position)
        if found is None:
            return None
        index, line, column = found
        occ = index.at(line, column)
        if occ is None:
            return None
        lines = index.source.text.splitlines(keepends=True)
        uses = index.references(occ.kind, occ.name,
                                declarations=params.context.include_declaration)
        return [lsp.Location(params.text_document.uri, ls.to_range(u.span, lines)) for u in uses]

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(ls: FlowcServer, params: lsp.PrepareRenameParams
                       ) -> lsp.PrepareRenamePlaceholder | None:
        found = ls.lookup(params.text_document.uri, params.position)
        if found is None:
            return None
        index, line, column = found
        occ = index.at(line, column)
        if occ is None:
            return None  # the editor says "nothing to rename here"
        try:
            index.can_rename(occ)
        except Refused as err:
            raise RequestFailed(str(err)) from None
        lines = index.source.text.splitlines(keepends=True)
        return lsp.PrepareRenamePlaceholder(range=ls.to_range(occ.span, lines), placeholder=occ.name)

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    def rename(ls: FlowcServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit | None:
        uri = params.text_document.uri
        doc = ls.workspace.get_text_document(uri)
        analysis = ls.analyses.get(uri)
        if analysis is None or analysis.version != doc.version:
            ls.analyse(uri)  # edits are renamed on the text the editor has now
        found = ls.lookup(uri, params.position)
        if found is None or found[0].source.text != doc.source:
            raise RequestFailed("the file does not parse: fix the syntax error first, then rename")
        index, line, column = found
        occ = index.at(line, column)
        if occ is None:
            raise RequestFailed("there is no speaker, tool or context key here to rename")
        try:
            edits = index.rename(occ, params.new_name)
        except Refused as err:
            raise RequestFailed(str(err)) from None
        lines = index.source.text.splitlines(keepends=True)
        text_edits = [lsp.TextEdit(ls.to_range(span, lines), text) for span, text in edits]
        return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
            lsp.OptionalVersionedTextDocumentIdentifier(uri, doc.version), text_edits)])

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def symbols(ls: FlowcServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        analysis = ls.analyses.get(params.text_document.uri)
        if analysis is None or analysis.index is None:
            return []
        return document_symbols(ls, analysis.index)

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls: FlowcServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit] | None:
        doc = ls.workspace.get_text_document(params.text_document.uri)
        text = doc.source
        try:
            out = format_source(text, to_fs_path(doc.uri) or doc.uri)
        except FlowError:
            return None  # a syntax error: the diagnostics already say where
        except FormatterBug as err:
            ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error,
                                                         message=f"flowc: {err}"))
            return None
        if out == text:
            return []
        whole = lsp.Range(lsp.Position(0, 0), ls.document_end(doc.lines))
        return [lsp.TextEdit(range=whole, new_text=out)]

    features.register(server)
    return server


def serve() -> None:
    """Run the server on stdin/stdout until the client says exit."""
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietRefusals())
    make_server().start_io()

