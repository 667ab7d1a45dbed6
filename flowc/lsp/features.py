"""The editing features of `flowc lsp` beyond diagnostics and navigation: completion,
semantic tokens, folding, code actions, range formatting, the diagram command and the
configuration watch. Each handler reads the document through the server's last
analysis (the same parse, compile and check as ``flowc check``)."""

from __future__ import annotations

import difflib
from typing import Any, cast

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from flowc.diagnostics import FlowError
from flowc.dsl.formatter import FormatterBug, format_source
from flowc.dsl.nodes import Flow
from flowc.dsl.parser import parse_source
from flowc.lsp import actions as act
from flowc.lsp import completion as comp
from flowc.lsp import tokens as tk
from flowc.lsp.core import BOM, FlowcServer, RequestFailed, document_text, text_lines
from flowc.lsp.index import CONDITION, KEY, SPEAKER, TARGET, TOOL
from flowc.source import SourceFile, Span

#: the command that draws the flow (SVG, findings marked), for a preview pane
DIAGRAM_COMMAND = "flowc.diagram"

_ITEM_KIND = {
    SPEAKER: lsp.CompletionItemKind.Class,
    TOOL: lsp.CompletionItemKind.Method,
    KEY: lsp.CompletionItemKind.Variable,
    CONDITION: lsp.CompletionItemKind.Function,
    TARGET: lsp.CompletionItemKind.Function,
    comp.KEYWORD: lsp.CompletionItemKind.Keyword,
    comp.REASON: lsp.CompletionItemKind.Value,
}


def _offset(server: FlowcServer, text: str, position: lsp.Position) -> int:
    """A client position in ``text`` as a character offset."""
    lines = text_lines(text)
    at = server.workspace.position_codec.position_from_client_units(lines, position)
    source = SourceFile("", text)
    starts = source.line_starts
    if at.line >= len(starts):
        return len(text)
    return min(starts[at.line] + at.character, len(text))


def _range(server: FlowcServer, source: SourceFile, start: int, end: int) -> lsp.Range:
    return server.to_range(source.span(start, end), text_lines(source.text))


def range_format_edits(
    text: str, filename: str, first: int, last: int
) -> list[tuple[int, int, str]] | None:
    """Format the top-level statements on lines ``first`` .. ``last`` (0-based) as
    ``flowc fmt`` formats the whole file: the whole statements the range touches (a
    speaker block, a scenario), and the comments and blank lines between statements when
    the range takes in one of those lines, are replaced by the same statements of the
    whole file formatted (so a rule keeps the column its alignment group has), and only
    the lines that change: ``(first old line, end old line, new text)``. None on a syntax
    error."""
    flow, errors = parse_source(SourceFile(filename, text))
    if errors:
        return None
    formatted = format_source(text, filename)
    again, errors = parse_source(SourceFile(filename, formatted))
    if errors or len(again.statements) != len(flow.statements):
        raise FormatterBug(f"{filename}: formatting changed the statements of the file")
    lines, new_lines = text_lines(text), text_lines(formatted)
    lo, hi = first, min(last, len(lines) - 1)
    while lo <= hi and not lines[lo].strip():
        lo += 1
    while hi >= lo and not lines[hi].strip():
        hi -= 1
    groups = _groups(flow)
    old_parts = _parts(flow, len(lines), groups)
    touched = [
        i
        for i, (start, end) in enumerate(old_parts)
        if any(lines[k].strip() for k in range(max(start, lo), min(end, hi + 1)))
    ]
    if not touched:
        return []
    new_parts = _parts(again, len(new_lines), groups)
    start, end = old_parts[touched[0]][0], old_parts[touched[-1]][1]
    old = lines[start:end]
    new = new_lines[new_parts[touched[0]][0] : new_parts[touched[-1]][1]]
    if end == len(lines) and not old[-1].endswith("\n") and new:
        new[-1] = new[-1].rstrip("\r\n")  # the last line of a file without a final newline
    edits = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            edits.append((start + i1, start + i2, "".join(new[j1:j2])))
    return edits


def _parts(flow: Flow, count: int, groups: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A file's lines (``count`` of them, 0-based, end excluded) cut into what lies
    before each group of top-level statements (comments, blank lines), each group, and
    what lies after the last: the same number of parts in a file and in its formatted
    text, each part of one the counterpart of the same part of the other. ``groups``:
    the statements (first, last index) that share lines in the file (:func:`_groups`),
    one part together, in both texts (formatting may write them on lines of their own)."""
    parts: list[tuple[int, int]] = []
    at = 0
    statements = flow.statements
    for first, last in groups:
        begin = max(at, statements[first].span.line - 1)
        parts.append((at, begin))
        at = max(begin, max(st.span.end_line for st in statements[first : last + 1]))
        parts.append((begin, at))
    parts.append((at, max(at, count)))
    return parts


def _groups(flow: Flow) -> list[tuple[int, int]]:
    """The top-level statements of ``flow`` as runs (first, last index) that share lines:
    `speaker a when from u then a` is one (formatting one of them rewrites the others'
    line too; formatted, each may be on a line of its own)."""
    out: list[tuple[int, int]] = []
    end = 0
    for i, st in enumerate(flow.statements):
        if out and st.span.line <= end:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
        end = max(end, st.span.end_line)
    return out


def register(server: FlowcServer) -> None:
    """Add the handlers of this module to ``server``, a group at a time (in the order
    the server has always registered them)."""
    _register_reading_aids(server)
    _register_fixes(server)
    _register_diagram(server)
    _register_configuration_watch(server)


def _register_reading_aids(server: FlowcServer) -> None:
    """What helps read and type a flow: completion (after a ``.`` or on demand), semantic
    tokens (the colours) and folding ranges, each from the document's last analysis."""

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=["."]))
    def completion(ls: FlowcServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        uri = params.text_document.uri
        if not ls.is_open(uri):
            return lsp.CompletionList(is_incomplete=False, items=[])
        doc = ls.workspace.get_text_document(uri)
        text = document_text(doc)
        analysis = ls.analyses.get(uri)
        index = analysis.index if analysis else None
        offset = _offset(ls, text, params.position)
        found, start = comp.complete(text, offset, index)
        source = SourceFile(doc.uri, text)
        replace = _range(ls, source, start, offset)
        items = [
            lsp.CompletionItem(
                label=c.label,
                kind=_ITEM_KIND[c.kind],
                detail=c.detail or c.kind,
                text_edit=lsp.TextEdit(replace, c.label),
                sort_text=f"{i:05d}",
            )
            for i, c in enumerate(found)
        ]
        return lsp.CompletionList(is_incomplete=False, items=items)

    legend = lsp.SemanticTokensLegend(
        token_types=list(tk.TOKEN_TYPES), token_modifiers=list(tk.TOKEN_MODIFIERS)
    )

    @server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, legend)
    def semantic_tokens(ls: FlowcServer, params: lsp.SemanticTokensParams) -> lsp.SemanticTokens:
        uri = params.text_document.uri
        if not ls.is_open(uri):
            return lsp.SemanticTokens(data=[])
        text = document_text(ls.workspace.get_text_document(uri))
        analysis = ls.analyses.get(uri)
        pieces = tk.semantic_pieces(text, analysis.index if analysis else None)
        lines = text_lines(text)
        codec = ls.workspace.position_codec
        units = []
        for p in pieces:
            r = codec.range_to_client_units(
                lines,
                lsp.Range(
                    lsp.Position(p.line - 1, p.column),
                    lsp.Position(p.line - 1, p.column + p.length),
                ),
            )
            units.append((r.start.character, r.end.character - r.start.character))
        return lsp.SemanticTokens(data=tk.encode(pieces, units))

    @server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
    def folding(ls: FlowcServer, params: lsp.FoldingRangeParams) -> list[lsp.FoldingRange]:
        found = ls.outline(params.text_document.uri)
        if found is None:
            return []
        index, moves = found
        out = []
        for f in tk.folds(index):
            # the fold's lines, whole, where the edits since the index's version put them
            end = len(index.source.line_text(f.end)) + 1
            moved = moves.span(Span(f.start, 1, f.end, end))
            if moved is not None:
                out.append(
                    lsp.FoldingRange(
                        start_line=moved.line - 1,
                        end_line=moved.end_line - 1,
                        kind=lsp.FoldingRangeKind.Comment
                        if f.comment
                        else lsp.FoldingRangeKind.Region,
                    )
                )
        return out


def _register_fixes(server: FlowcServer) -> None:
    """What changes the text: the quick fixes of the findings under the cursor (on the
    text they were computed on only) and the formatting of a range (``flowc fmt`` of the
    whole statements it touches)."""

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
    )
    def code_actions(ls: FlowcServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        if not ls.is_open(uri):
            return []
        doc = ls.workspace.get_text_document(uri)
        analysis = ls.analyses.get(uri)
        if (
            analysis is None
            or analysis.index is None
            or analysis.index.source.text != document_text(doc)
        ):
            return []  # fixes apply to the text they were computed on
        index = analysis.index
        lines = text_lines(index.source.text)
        out = []
        for a in act.actions(
            index, analysis.diagnostics, params.range.start.line + 1, params.range.end.line + 1
        ):
            assert a.diagnostic.span is not None
            edits = [lsp.TextEdit(_range(ls, index.source, e.start, e.end), e.new) for e in a.edits]
            out.append(
                lsp.CodeAction(
                    title=a.title,
                    kind=lsp.CodeActionKind.QuickFix,
                    is_preferred=a.preferred or None,
                    diagnostics=[ls.lsp_diagnostic(a.diagnostic, lines)],
                    edit=lsp.WorkspaceEdit(
                        document_changes=[
                            lsp.TextDocumentEdit(
                                lsp.OptionalVersionedTextDocumentIdentifier(uri, doc.version), edits
                            )
                        ]
                    ),
                )
            )
        return out

    @server.feature(lsp.TEXT_DOCUMENT_RANGE_FORMATTING)
    def range_formatting(
        ls: FlowcServer, params: lsp.DocumentRangeFormattingParams
    ) -> list[lsp.TextEdit] | None:
        if not ls.is_open(params.text_document.uri):
            return None
        doc = ls.workspace.get_text_document(params.text_document.uri)
        # a byte order mark stays, as `flowc fmt` keeps it: the lines are formatted
        # without it, and it is put back before the first when that one changes
        bom = BOM if doc.source.startswith(BOM) else ""
        text = document_text(doc)[len(bom) :]
        try:
            begin, stop = params.range.start, params.range.end
            # a range that ends at the start of a line (a selection of whole lines) does
            # not take that line in
            last = stop.line - 1 if stop.character == 0 and stop.line > begin.line else stop.line
            edits = range_format_edits(text, to_fs_path(doc.uri) or doc.uri, begin.line, last)
        except FlowError:
            return None
        except FormatterBug as err:
            ls.window_show_message(
                lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"flowc: {err}")
            )
            return None
        if edits is None:
            return None
        lines = doc.lines
        out = []
        for first, end, new in edits:
            start = lsp.Position(first, 0)
            stop = lsp.Position(end, 0) if end < len(lines) else ls.document_end(lines)
            out.append(lsp.TextEdit(lsp.Range(start, stop), bom + new if first == 0 else new))
        return out


def _register_diagram(server: FlowcServer) -> None:
    """The :data:`DIAGRAM_COMMAND` command: the flow drawn for a preview pane."""

    @server.command(DIAGRAM_COMMAND)
    async def diagram(ls: LanguageServer, *args: Any) -> dict[str, Any]:
        """``flowc.diagram(uri)``: the flow drawn as ``flowc render --check`` draws it,
        off the thread that answers requests.
        (pygls reads this handler's annotations at run time, hence no FlowcServer here.)"""
        if not args or not isinstance(args[0], str):
            raise RequestFailed("flowc.diagram takes the document's URI")
        return await cast(FlowcServer, ls).diagram(args[0])


def _register_configuration_watch(server: FlowcServer) -> None:
    """The watch of ``pyproject.toml``: once initialised, the server asks a client that
    can register watchers dynamically to report the file's changes, and reads the
    configuration again when one comes."""

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: FlowcServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        changed = [to_fs_path(c.uri) or c.uri for c in params.changes]
        if any(path.endswith("pyproject.toml") for path in changed):
            ls.config_changed()

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: FlowcServer, params: lsp.InitializedParams) -> None:
        caps = ls.client_capabilities.workspace
        watch = caps.did_change_watched_files if caps else None
        if watch is None or not watch.dynamic_registration:
            return  # the server still notices a changed pyproject.toml at the next check
        try:
            await ls.client_register_capability_async(
                lsp.RegistrationParams(
                    registrations=[
                        lsp.Registration(
                            id="flowc-pyproject",
                            method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=lsp.DidChangeWatchedFilesRegistrationOptions(
                                watchers=[lsp.FileSystemWatcher(glob_pattern="**/pyproject.toml")]
                            ),
                        )
                    ]
                )
            )
        except Exception:
            return
