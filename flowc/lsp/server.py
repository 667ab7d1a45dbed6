"""`flowc lsp`: the language server (pygls, over stdio).

Every document is read exactly as ``flowc check`` reads a file: the same
:func:`~flowc.compiler.analysis.check_source` with the options of the nearest
``pyproject.toml``'s ``[tool.flowc]`` table (re-read when the file changes), so an
editor shows what the command line reports. Features: diagnostics on open and on
change (debounced), hover, go to definition, document symbols and formatting.

A document that no longer parses keeps its last good analysis: the syntax error is
shown with the findings of the last version that parsed, and hover, definition,
references, symbols and the start of a rename answer from that version, placed where
the edits since put its text (:mod:`flowc.lsp.moves`). A document the editor has not
opened is not read: requests about it answer nothing, or say it is not open.
"""

from __future__ import annotations

import logging
import sys

from cattrs.errors import BaseValidationError
from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from flowc import collector
from flowc._compat import pygls_clamp_positions, pygls_document_lines
from flowc.compiler.render.options import RenderOptions
from flowc.diagnostics import Diagnostic, FlowError, elide_quoted
from flowc.dsl import nodes as n
from flowc.dsl.formatter import FormatterBug, format_source
from flowc.lsp import features
from flowc.lsp.core import (
    BOM,
    Cursor,
    FlowcServer,
    InternalError,
    RequestFailed,
    document_text,
    text_lines,
)
from flowc.lsp.index import Index, Occurrence, Refused
from flowc.lsp.moves import Since
from flowc.lsp.stdio import serve_stdio
from flowc.project.explain import page
from flowc.source import Span


class _QuietRefusals(logging.Filter):
    """pygls logs every request that ends in an error with its traceback; a refused
    rename (or a diagram of a flow with errors) is an answer, not a failure, so it stays
    out of the editor's server log, and an internal error is logged once, by the server
    (:meth:`~flowc.lsp.core.FlowcServer.internal_error`), with its own words.

    So is the traceback pygls logs for a message whose parameters do not fit its method
    (it logs it while it handles cattrs' validation error): the server answers it
    ``-32602`` and logs one line saying where and why (:mod:`flowc.lsp.stdio`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(sys.exc_info()[1], BaseValidationError):
            return False
        return not isinstance(exc, (RequestFailed, InternalError))


def _covers(span: Span, line: int, column: int) -> bool:
    """Whether a finding's span holds the cursor (1-based line, 0-based column)."""
    return (span.line, span.column - 1) <= (line, column) <= (span.end_line, span.end_column - 1)


def finding_markdown(d: Diagnostic) -> str:
    """A finding as the hover shows it: what ``flowc check`` prints (its message, which
    ends with the analysis's explanation, its notes and its fix), in Markdown.

    >>> from flowc.diagnostics import W203
    >>> print(finding_markdown(Diagnostic(W203, "rule 1 can never fire: why", notes=("a run",),
    ...                                   help="remove it")))
    **warning[W203]**: rule 1 can never fire: why
    <BLANKLINE>
    - note: a run
    - help: remove it
    """
    parts = [f"**{d.severity.value}[{d.code.id}]**: {elide_quoted(d.message)}"]
    items = [f"- note: {elide_quoted(note)}" for note in d.notes]
    if d.help:
        items.append(f"- help: {elide_quoted(d.help)}")
    if items:
        parts.append("\n".join(items))
    return "\n\n".join(parts)


def _symbol(
    name: str,
    kind: lsp.SymbolKind,
    whole: lsp.Range | None,
    selection: lsp.Range | None,
    detail: str | None = None,
    children: list[lsp.DocumentSymbol | None] | None = None,
) -> lsp.DocumentSymbol | None:
    """A symbol of the outline; None when an edit since its version replaced part of
    it (``whole`` or ``selection`` is None: see :func:`document_symbols`)."""
    if whole is None or selection is None:
        return None
    kept = [c for c in children or () if c is not None]
    return lsp.DocumentSymbol(
        name=name,
        kind=kind,
        range=whole,
        selection_range=selection,
        detail=detail,
        children=kept or None,
    )


def document_symbols(
    server: FlowcServer, index: Index, moves: Since | None = None
) -> list[lsp.DocumentSymbol]:
    """The outline: speakers with their tools, context keys, custom conditions and
    targets, rules, scenarios and properties, in file order. ``moves``: the edits since
    the index's version (its symbols placed in the text now; one an edit replaced part
    of is left out, with what it holds)."""
    if moves is None:
        moves = Since(index.source, index.source, (), ())
    lines = text_lines(moves.new.text)

    def rng(span: Span) -> lsp.Range | None:
        return server.place(moves, span, lines)

    out: list[lsp.DocumentSymbol | None] = []
    rule_no = 0
    for st in index.flow.statements:
        if isinstance(st, (n.SpeakerDecl, n.SpeakersDecl)):
            for sp in st.speakers if isinstance(st, n.SpeakersDecl) else (st,):
                tools = [
                    _symbol(
                        t.name.value, lsp.SymbolKind.Method, rng(t.span), rng(t.name.span), "tool"
                    )
                    for t in sp.tools
                ]
                out.append(
                    _symbol(
                        sp.name.value,
                        lsp.SymbolKind.Class,
                        rng(sp.span),
                        rng(sp.name.span),
                        "human" if sp.human else "speaker",
                        tools or None,
                    )
                )
        elif isinstance(st, n.ContextDecl):
            for entry in st.entries:
                out.append(
                    _symbol(
                        entry.key.value,
                        lsp.SymbolKind.Variable,
                        rng(entry.span),
                        rng(entry.key.span),
                        "context key",
                    )
                )
        elif isinstance(st, (n.ConditionDecl, n.TargetDecl)):
            what = "condition" if isinstance(st, n.ConditionDecl) else "target"
            out.append(
                _symbol(
                    st.name.value, lsp.SymbolKind.Function, rng(st.span), rng(st.name.span), what
                )
            )
        elif isinstance(st, n.Rule):
            rule_no += 1
            text = index.source.text[st.span.start : st.span.end].split("\n", 1)[0].strip()
            out.append(
                _symbol(
                    text, lsp.SymbolKind.Event, rng(st.span), rng(st.span), f"line {st.span.line}"
                )
            )
        elif isinstance(st, n.Otherwise):
            out.append(
                _symbol("otherwise", lsp.SymbolKind.Event, rng(st.span), rng(st.span), "default")
            )
        elif isinstance(st, n.Scenario):
            out.append(
                _symbol(
                    st.title.value,
                    lsp.SymbolKind.Namespace,
                    rng(st.span),
                    rng(st.title.span),
                    "scenario",
                )
            )
        elif isinstance(st, n.PropertyDecl):
            out.append(
                _symbol(
                    st.name.value,
                    lsp.SymbolKind.Property,
                    rng(st.span),
                    rng(st.name.span),
                    "property",
                )
            )
        elif isinstance(st, n.FlowDecl):
            out.append(
                _symbol(
                    st.name.value, lsp.SymbolKind.Module, rng(st.span), rng(st.name.span), "flow"
                )
            )
    return [symbol for symbol in out if symbol is not None]


def _occurrence(
    server: FlowcServer, uri: str, position: lsp.Position
) -> tuple[Cursor, Occurrence, list[str]] | None:
    """The name under the cursor for definition and references: the cursor (in the
    version of the document's index), the occurrence, and the lines of the text the
    editor has now (for ranges); None when there is none, or when an edit since that
    version changed it."""
    cursor = server.lookup(uri, position)
    if cursor is None:
        return None
    occ = cursor.index.at(cursor.line, cursor.column) if cursor.names_kept else None
    if occ is None or cursor.under(occ.span) is None:
        return None
    return cursor, occ, text_lines(cursor.moves.new.text)


def make_server(*, trust: bool = False, layout: RenderOptions | None = None) -> FlowcServer:
    """The server and its handlers; ``trust``: ``flowc lsp --trust`` (the plugins of
    every folder's configuration are imported, see :mod:`flowc.project.trust`);
    ``layout``: the diagram's budget (``--layout-timeout``, ``--max-layout-size``)."""
    server = FlowcServer(trust=trust, layout=layout)

    _register_document_sync(server)
    _register_hover(server)
    _register_navigation(server)
    _register_rename(server)
    _register_outline(server)
    _register_formatting(server)
    features.register(server)
    return server


def _register_document_sync(server: FlowcServer) -> None:
    """The documents' lifecycle: a document is analysed when it opens, again (debounced)
    when it changes and at once when it is saved; its findings are cleared when it
    closes. Its lines are flowc's (:func:`~flowc.lsp.core.text_lines`), on which an
    editor's changes are applied too."""

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: FlowcServer, params: lsp.InitializeParams) -> None:
        pygls_document_lines(ls.workspace, text_lines)
        pygls_clamp_positions(ls.workspace.position_codec)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: FlowcServer, params: lsp.DidOpenTextDocumentParams) -> None:
        # the first analysis, at once and before the next message: an editor asks for the
        # outline, folding and colours right after it opens a document
        ls.opened(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: FlowcServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.changed(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: FlowcServer, params: lsp.DidSaveTextDocumentParams) -> None:
        if ls.is_open(params.text_document.uri):
            ls.schedule(params.text_document.uri, 0)  # the config may have changed too

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: FlowcServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.closed(uri)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def _register_hover(server: FlowcServer) -> None:
    """The hover: what the name under the cursor is, the findings under it as
    ``flowc check`` explains them, then what their codes mean (``flowc explain``); on a
    code written in a comment (``# flowc: ignore[W204]``), that code's page."""

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: FlowcServer, params: lsp.HoverParams) -> lsp.Hover | None:
        # (from the last version that parsed: the cursor is looked up there, and what
        # is found is shown only when the edits since left it under the cursor)
        cursor = ls.lookup(params.text_document.uri, params.position)
        if cursor is None:
            return None
        index, line, column = cursor.index, cursor.line, cursor.column
        code = index.code_at(line, column) if cursor.tree_kept and cursor.line_kept() else None
        if code is not None:
            text = page(code)
            return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, text)) if text else None
        occ = index.at(line, column) if cursor.names_kept else None
        occ_span = cursor.under(occ.span) if occ is not None else None
        parts = []
        name_text = index.hover(occ) if occ is not None and occ_span is not None else None
        if name_text is not None:
            parts.append(name_text)
        # the findings under the cursor, as `flowc check` explains them, then what their
        # codes mean (`flowc explain`): the syntax errors of the text now, and the
        # findings of the index's version
        under: list[tuple[Diagnostic, Span]] = [
            (d, d.span)
            for d in (cursor.analysis.errors if cursor.fresh else ())
            if d.span is not None and _covers(d.span, *cursor.now)
        ]
        for d in cursor.analysis.findings:
            moved = cursor.under(d.span) if d.span is not None else None
            if d.span is not None and moved is not None and _covers(d.span, line, column):
                under.append((d, moved))
        parts += [finding_markdown(d) for d, _ in under]
        for code in dict.fromkeys(d.code.id for d, _ in under):
            explained = page(code)
            if explained:
                parts.append(explained)
        if not parts:
            return None
        lines = text_lines(cursor.moves.new.text)
        span = occ_span if occ_span is not None and name_text is not None else under[0][1]
        return lsp.Hover(
            lsp.MarkupContent(lsp.MarkupKind.Markdown, "\n\n---\n\n".join(parts)),
            range=ls.to_range(span, lines),
        )


def _register_navigation(server: FlowcServer) -> None:
    """Go to definition and find references of the name under the cursor (a speaker, a
    tool, a context key...), in the document's last analysis."""

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: FlowcServer, params: lsp.DefinitionParams) -> list[lsp.Location] | None:
        found = _occurrence(ls, params.text_document.uri, params.position)
        if found is None:
            return None
        cursor, occ, lines = found
        places = (
            ls.place(cursor.moves, d.span, lines)
            for d in cursor.index.definitions(occ.kind, occ.name)
        )
        return [lsp.Location(params.text_document.uri, r) for r in places if r is not None] or None

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def references(ls: FlowcServer, params: lsp.ReferenceParams) -> list[lsp.Location] | None:
        found = _occurrence(ls, params.text_document.uri, params.position)
        if found is None:
            return None
        cursor, occ, lines = found
        uses = cursor.index.references(
            occ.kind, occ.name, declarations=params.context.include_declaration
        )
        places = (ls.place(cursor.moves, u.span, lines) for u in uses)
        return [lsp.Location(params.text_document.uri, r) for r in places if r is not None]


def _register_rename(server: FlowcServer) -> None:
    """Rename: where a rename may start (and why not, as the request's error), then the
    edits, computed on the text the editor has now."""

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(
        ls: FlowcServer, params: lsp.PrepareRenameParams
    ) -> lsp.PrepareRenamePlaceholder | None:
        found = _occurrence(ls, params.text_document.uri, params.position)
        if found is None:
            return None  # the editor says "nothing to rename here"
        cursor, occ, lines = found
        try:
            cursor.index.can_rename(occ)
        except Refused as err:
            raise RequestFailed(str(err)) from None
        span = cursor.under(occ.span)
        assert span is not None  # (_occurrence checked it)
        return lsp.PrepareRenamePlaceholder(range=ls.to_range(span, lines), placeholder=occ.name)

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    def rename(ls: FlowcServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit | None:
        uri = params.text_document.uri
        if not ls.is_open(uri):
            raise RequestFailed(f"{uri} is not open")
        doc = ls.workspace.get_text_document(uri)
        analysis = ls.analyses.get(uri)
        if analysis is None or analysis.version != doc.version:
            ls.analyse(uri)  # edits are renamed on the text the editor has now
        cursor = ls.lookup(uri, params.position)
        if cursor is None or cursor.index.source.text != document_text(doc):
            raise RequestFailed("the file does not parse: fix the syntax error first, then rename")
        index, line, column = cursor.index, cursor.line, cursor.column
        occ = index.at(line, column)
        if occ is None:
            raise RequestFailed("there is no speaker, tool or context key here to rename")
        try:
            edits = index.rename(occ, params.new_name)
        except Refused as err:
            raise RequestFailed(str(err)) from None
        lines = text_lines(index.source.text)
        text_edits = [lsp.TextEdit(ls.to_range(span, lines), text) for span, text in edits]
        return lsp.WorkspaceEdit(
            document_changes=[
                lsp.TextDocumentEdit(
                    lsp.OptionalVersionedTextDocumentIdentifier(uri, doc.version), text_edits
                )
            ]
        )


def _register_outline(server: FlowcServer) -> None:
    """The outline (document symbols, :func:`document_symbols`) of the last version that
    parsed."""

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def symbols(ls: FlowcServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        found = ls.outline(params.text_document.uri)
        if found is None:
            return []
        index, moves = found
        return document_symbols(ls, index, moves)


def _register_formatting(server: FlowcServer) -> None:
    """Formatting the whole document with ``flowc fmt`` (nothing on a syntax error: the
    diagnostics already say where)."""

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def formatting(
        ls: FlowcServer, params: lsp.DocumentFormattingParams
    ) -> list[lsp.TextEdit] | None:
        if not ls.is_open(params.text_document.uri):
            return None
        doc = ls.workspace.get_text_document(params.text_document.uri)
        # a byte order mark stays, as `flowc fmt` keeps it
        bom = BOM if doc.source.startswith(BOM) else ""
        text = document_text(doc)[len(bom) :]
        try:
            out = bom + format_source(text, to_fs_path(doc.uri) or doc.uri)
        except FlowError:
            return None  # a syntax error: the diagnostics already say where
        except FormatterBug as err:
            ls.window_show_message(
                lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"flowc: {err}")
            )
            return None
        # compared with the text as the editor has it: like `flowc fmt`, formatting makes
        # each lone `\r` a newline
        if out == doc.source:
            return []
        whole = lsp.Range(lsp.Position(0, 0), ls.document_end(doc.lines))
        return [lsp.TextEdit(range=whole, new_text=out)]


def serve(*, trust: bool = False, layout: RenderOptions | None = None) -> None:
    """Run the server (``trust``, ``layout``: see :func:`make_server`) on stdin/stdout
    until the client says exit (or closes stdin), through
    flowc's own reader of the client's bytes (:func:`~flowc.lsp.stdio.serve_stdio`).

    The server owns its process's cycle collector (:mod:`flowc.collector`): it runs
    without automatic passes, which would walk every open document's tree while one
    file is checked (they hold no cycles); the server freezes what each analysis
    keeps and collects once it has been idle for a while (:meth:`FlowcServer.collect`)."""
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietRefusals())
    held = collector.hold()
    try:
        serve_stdio(make_server(trust=trust, layout=layout))
    finally:
        if held:
            collector.release(held)
