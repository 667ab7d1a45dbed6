"""The one module through which flowc reaches private APIs of CPython and of its
dependencies.

Each use below says what it reaches, why flowc needs it, and the versions it was
checked against; ``tests/test_compat.py`` exercises each one directly, in a test named
after that version, so an upgrade that changes one fails one named test.
``tests/test_architecture.py`` checks that no other module of flowc names any of
:data:`PRIVATE_NAMES`.

It imports no flowc module and, at import, only what ``re`` has already loaded: the
dependencies are imported by the functions that use them, so loading this module costs
nothing to a command that uses none of them.

>>> items, flags = re_parse("(?i)a|b")
>>> [str(op) for op, _ in items], bool(flags & RE_CONSTANTS.SRE_FLAG_IGNORECASE)
(['IN'], True)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    import asyncio

__all__ = [
    "CHECKED_AGAINST",
    "PRIVATE_NAMES",
    "RE_CONSTANTS",
    "RE_TYPE_FLAGS",
    "PyglsOpenDocumentChanges",
    "PyglsRawJson",
    "argparse_subparser",
    "dd_out_of_memory",
    "networkx_digraph",
    "networkx_successors",
    "psycopg_queue_sync",
    "pygls_clamp_positions",
    "pygls_document_lines",
    "pygls_send",
    "re_extra_cases",
    "re_parse",
    "run_exit_functions",
    "unicode_iscased",
    "unicode_tolower",
]

#: the versions each wrapped use was checked against (the smoke tests name them)
CHECKED_AGAINST = {
    "CPython": ("3.11.7", "3.12.1", "3.13.0"),
    "pygls": ("2.1.1",),
    "dd": ("0.6.0",),
    "networkx": ("3.2.1", "3.6.1"),
    "psycopg": ("3.2.1", "3.3.9"),
}

#: every private name flowc reaches; only this module may name them (modules, then
#: attributes; `tests/test_architecture.py` reads this list)
PRIVATE_NAMES = frozenset(
    {
        "re._parser",
        "re._constants",
        "re._casefix",
        "_sre",
        "_EXTRA_CASES",
        "_send_data",
        "_include_headers",
        "_run_exitfuncs",
        "_actions",
        "_succ",
        "_pred",
        "_node",
        "_enqueue_sync",
        "lsp_method",
        "lsp_text_document__did_change",
    }
)


# ── CPython: the regular-expression parser and case rules (flowc.regex) ─────────────

_re_parser: Any = importlib.import_module("re._parser")
_re_casefix: Any = importlib.import_module("re._casefix")
_sre: Any = importlib.import_module("_sre")

#: ``re._constants``: the opcodes of a parsed pattern (``LITERAL``, ``IN``, ``SUBPATTERN``,
#: ``BRANCH``, ``MAX_REPEAT``, ``AT_*``, ``CATEGORY_*``, ``FAILURE``, ...), its flags
#: (``SRE_FLAG_*``) and ``MAXREPEAT``. :mod:`flowc.regex` reads the tree that
#: :func:`re_parse` returns with them. Checked against CPython 3.11.7, 3.12.1, 3.13.0.
RE_CONSTANTS: Any = importlib.import_module("re._constants")

#: ``re._parser.TYPE_FLAGS``: the flags of which a group sets at most one (``a``, ``u``,
#: ``L``): a group that sets one clears the others. Checked against CPython 3.11.7-3.13.0.
RE_TYPE_FLAGS: int = _re_parser.TYPE_FLAGS


def re_parse(pattern: str) -> tuple[list[tuple[Any, Any]], int]:
    """``re._parser.parse(pattern, 0)``: Python's own parse of a ``str`` pattern, as a list
    of ``(opcode, argument)`` items (opcodes of :data:`RE_CONSTANTS`), and the pattern's
    global flags.

    Why: ``text_matches`` means Python's ``re.search``; parsing with Python's own parser
    makes what is valid, and what each escape, class and flag means, Python's. It raises
    what that parser raises: ``re.error`` (with ``msg`` and ``pos``) for an invalid
    pattern, ``OverflowError`` for a repeat count over ``MAXREPEAT``, ``RecursionError``
    when nesting exhausts the stack (:mod:`flowc.regex` refuses deep nesting before).

    Checked against CPython 3.11.7, 3.12.1 and 3.13.0; the trees differ in one place:
    3.13 parses an empty negative lookaround (``(?!)``, ``(?<!)``) as ``FAILURE``.
    """
    tree = _re_parser.parse(pattern, 0)
    return list(tree), int(tree.state.flags)


def re_extra_cases() -> dict[int, tuple[int, ...]]:
    """``re._casefix._EXTRA_CASES``: the code points that ``(?i)`` also treats as equal
    beyond simple lower-casing (the Kelvin sign and ``k``, long s and ``s``, ...), by
    lower-cased code point.

    Why: :mod:`flowc.regex` computes the exact set of characters a case-insensitive class
    accepts from the cased characters and these. Checked against CPython 3.11.7, 3.12.1
    and 3.13.0 (the same table in each).
    """
    return dict(_re_casefix._EXTRA_CASES)


def unicode_tolower(code: int) -> int:
    """``_sre.unicode_tolower``: the code point Python's engine lower-cases ``code`` to
    under ``(?i)`` (its own rule, not ``str.lower``). Checked against CPython 3.11.7,
    3.12.1 and 3.13.0."""
    return int(_sre.unicode_tolower(code))


def unicode_iscased(code: int) -> bool:
    """``_sre.unicode_iscased``: whether Python's engine treats ``code`` as having case
    under ``(?i)``. Checked against CPython 3.11.7, 3.12.1 and 3.13.0."""
    return bool(_sre.unicode_iscased(code))


# ── pygls: messages the language server has already written as JSON (flowc.lsp) ──────


class PyglsRawJson:
    """A mixin for a subclass of pygls' ``JsonRPCProtocol`` that also writes messages
    already serialised: its override of pygls' private ``_send_data`` (the one method
    every outgoing message goes through) writes the text :meth:`raw_json` returns as it
    is, with the headers and encoding pygls' ``_send_data`` uses (``_include_headers``,
    ``CONTENT_TYPE``, ``CHARSET``, ``writer``); any other message goes to pygls.

    Why: the diagnostics of a large file are mostly the same from one version to the
    next; the language server keeps their JSON, which pygls would convert and encode
    again. Checked against pygls 2.1.1.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: writes still under way on an asynchronous transport (kept until done)
        self.writing: set[asyncio.Future[Any]] = set()

    def raw_json(self, data: Any) -> str | None:
        """The message's JSON text, or None for a message pygls serialises itself."""
        return None

    def _send_data(self, data: Any) -> None:
        import asyncio
        import inspect

        body_text = self.raw_json(data)
        me: Any = self
        if body_text is None:
            parent: Any = super()
            parent._send_data(data)
            return
        if me.writer is None:
            return
        body = body_text.encode(me.CHARSET)
        if me._include_headers:
            body = (
                f"Content-Length: {len(body)}\r\n"
                f"Content-Type: {me.CONTENT_TYPE}; charset={me.CHARSET}\r\n\r\n"
            ).encode(me.CHARSET) + body
        written = me.writer.write(body)
        if inspect.isawaitable(written):  # an asynchronous transport (not stdio)
            future = asyncio.ensure_future(written)
            self.writing.add(future)
            future.add_done_callback(self.writing.discard)


def pygls_send(protocol: Any, data: Any) -> None:
    """``protocol._send_data(data)``: write one message now, from the server's thread,
    without the request/notification bookkeeping of pygls' public ``notify``.

    Why: the language server publishes diagnostics it has already serialised (a
    :class:`PyglsRawJson` protocol writes them as they are). Checked against pygls 2.1.1.
    """
    protocol._send_data(data)


# ── pygls: an editor's changes of its documents (flowc.lsp) ──────────────────────────


def pygls_document_lines(workspace: Any, split: Callable[[str], Sequence[str]]) -> None:
    """Make the pygls ``Workspace`` ``workspace`` keep its documents with ``split`` as
    their lines: it makes each document through its private ``_create_text_document``,
    replaced on this workspace only by one making a subclass of pygls' ``TextDocument``
    whose ``lines`` are ``split(source)`` (the arguments pygls passes, its private
    ``_sync_kind`` and its ``position_codec`` included).

    Why: pygls splits a document with ``str.splitlines``, which also ends a line at a
    form feed, U+2028 and the like, and applies an editor's change of a range on those
    lines: after such a character every change went in a line off, and the server
    checked a text the user did not see. Checked against pygls 2.1.1.
    """
    from pygls.workspace import TextDocument

    class _Document(TextDocument):
        @property
        def lines(self) -> Sequence[str]:
            return tuple(split(self.source))

    def create(
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> Any:
        return _Document(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=workspace._sync_kind,
            position_codec=workspace.position_codec,
        )

    workspace._create_text_document = create


def pygls_clamp_positions(codec: Any) -> None:
    """Make the pygls ``PositionCodec`` ``codec`` (this instance only) read a position
    whose character is past the end of its line as the end of that line, before its line
    end, as the protocol says; and read it without changing the caller's position: its
    ``position_from_client_units`` is replaced, on this instance, by one that clamps the
    character to the line's length in the client's units (``client_num_units``), its line
    end left out, then calls pygls' own.

    Why: pygls' ``position_from_client_units`` puts such a position one character short
    of its line's length, line end counted (a CRLF counted as one character): on the last
    line, which has none, that is before its last character (an editor's change up to
    `(line, 99)` left that character behind), and a character of exactly that length
    stays past the line end (a change ending there joined two lines, or wrote between the
    two characters of a CRLF); and it writes the position it moved into the editor's own
    message. Checked against pygls 2.1.1.
    """
    from lsprotocol import types as lsp

    convert = codec.position_from_client_units

    def position_from_client_units(lines: Sequence[str], position: Any) -> Any:
        character = position.character
        if 0 <= position.line < len(lines):
            # (a line holds no line end but its own, at its end: see pygls_document_lines)
            content = lines[position.line].rstrip("\r\n")
            character = min(character, codec.client_num_units(content))
        return convert(lines, lsp.Position(position.line, character))

    codec.position_from_client_units = position_from_client_units


class PyglsOpenDocumentChanges:
    """A mixin for a subclass of pygls' ``LanguageServerProtocol`` that replaces pygls'
    built-in handler of ``textDocument/didChange``, ``lsp_text_document__did_change``
    (which applies the changes, then calls the server's own handler; pygls registers as
    built-in each method marked with the ``method_name`` its decorator ``lsp_method``
    sets): a change of a document that is not open (not among the workspace's
    ``text_documents``, which pygls keys by the unquoted URI) is dropped, and
    :meth:`unopened_change` is called; in the others, a range whose end comes before its
    start is read from the one to the other; then pygls' handler does the rest.

    Why: pygls' handler raised ``KeyError`` on a change of a document the editor had not
    opened (it closed it, or the server skipped its ``didOpen`` as unreadable), and the
    user saw `Error in server: KeyError` at each keystroke: there is no text to apply it
    to. And it applied a reversed range as it came, writing the text between twice (on a
    line) or losing the lines between, where the protocol's own text documents read it
    from end to start. Checked against pygls 2.1.1.
    """

    def unopened_change(self, uri: str) -> None:
        """A change of ``uri``, which is not open, was dropped (say so in a log)."""

    def lsp_text_document__did_change(self, params: Any) -> Iterator[Any]:
        """pygls' handler, for a document that is open; see the class."""
        from urllib.parse import unquote

        from lsprotocol import types as lsp

        me: Any = self
        uri = params.text_document.uri
        if unquote(uri) not in me.workspace.text_documents:
            self.unopened_change(uri)
            return
        for change in params.content_changes:
            if isinstance(change, lsp.TextDocumentContentChangePartial):
                start, end = change.range.start, change.range.end
                if (end.line, end.character) < (start.line, start.character):
                    change.range = lsp.Range(end, start)
        parent: Any = super()
        yield from parent.lsp_text_document__did_change(params)

    # what pygls' `lsp_method(TEXT_DOCUMENT_DID_CHANGE)` sets (pygls is not imported here)
    handler: Any = lsp_text_document__did_change
    handler.method_name = "textDocument/didChange"
    del handler


# ── CPython: the exit functions and argparse's subcommands (flowc.cli) ───────────────


def run_exit_functions() -> bool:
    """Run the functions registered with :mod:`atexit` now, as the interpreter does at
    exit (each once: the list is emptied), through CPython's ``atexit._run_exitfuncs``;
    False, running nothing, on an interpreter without it.

    Why: the ``flowc`` program ends its process without the interpreter's tear-down
    (``os._exit``) once its exit functions have run. Checked against CPython 3.11.7,
    3.12.1, 3.13.0.
    """
    import atexit

    run = getattr(atexit, "_run_exitfuncs", None)
    if not callable(run):
        return False
    run()
    return True


def argparse_subparser(
    parser: argparse.ArgumentParser, command: str | None
) -> argparse.ArgumentParser | None:
    """The parser of subcommand ``command`` of ``parser`` (None without one): argparse
    keeps them in the choices of its private ``_SubParsersAction`` among ``_actions``.

    Why: an unknown option of a subcommand is reported with that subcommand's usage,
    not flowc's. Checked against CPython 3.11.7, 3.12.1, 3.13.0.
    """
    import argparse

    if not command:
        return None
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(command)
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


# ── dd: how CUDD says an operation failed (flowc.compiler.analysis.symbolic) ──────────


def dd_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is how ``dd.cudd`` reports an operation CUDD could not finish:
    CUDD returns NULL when the manager's memory ceiling (``max_memory``) is reached, and
    dd then raises ``ValueError("`DdNode *node` is `NULL` pointer.")`` when it wraps the
    result (some operations raise a ``RuntimeError`` of their own, "... failed"); and a
    ``MemoryError`` from Python itself. This is not documented by dd.

    Why: the symbolic explorer gives up on a flow whose diagrams outgrow their memory
    (as it does past its other budgets) instead of failing. Checked against dd 0.6.0.

    Only dd's own words count: a ``RuntimeError`` that says an operation failed, a NULL
    result or that CUDD ran out of memory (not a subclass such as ``RecursionError``, nor
    Python's "generator raised StopIteration", which are bugs).

    >>> dd_out_of_memory(ValueError("`DdNode *node` is `NULL` pointer.")), dd_out_of_memory(ValueError("x"))
    (True, False)
    >>> dd_out_of_memory(RuntimeError("compose failed")), dd_out_of_memory(RecursionError("failed"))
    (True, False)
    >>> dd_out_of_memory(RuntimeError("generator raised StopIteration"))
    False
    """
    if isinstance(error, MemoryError):
        return True
    said = str(error).lower()
    if type(error) is RuntimeError:
        return any(word in said for word in ("failed", "null", "out of memory"))
    return type(error) is ValueError and "null" in said


# ── networkx: a graph's adjacency without a view per lookup (flowc.compiler.analysis) ──


def networkx_successors(graph: Any) -> Any:
    """A ``networkx.DiGraph``'s successors as the dict of dicts it keeps them in (node ->
    successor -> edge data): ``graph._succ``. Read it, never change it.

    Why: ``graph.succ[v]`` makes a view object on every lookup, a third of the time of a
    search over a 160,000-state space (the loops' search, :mod:`flowc.compiler.analysis.facts`);
    the dict iterates the same successors in the same order. Checked against networkx
    3.2.1 and 3.6.1.
    """
    return graph._succ


def networkx_digraph(size: int, edges: Iterable[tuple[int, int]]) -> Any:
    """The ``networkx.DiGraph`` over the nodes ``0 .. size - 1`` with ``edges`` (no edge
    data), as ``add_nodes_from`` and ``add_edges_from`` make it, the same successors and
    predecessors in the same order, filled straight into its ``_node``, ``_succ`` and
    ``_pred`` dicts.

    Why: ``add_edges_from`` checks each edge's shape and merges its data, about 2 us an
    edge; the explorer's 270,000 edges on a 160,000-state space take half as long this
    way. Checked against networkx 3.2.1 and 3.6.1.
    """
    import networkx as nx

    graph = nx.DiGraph()
    nodes, succ, pred = graph._node, graph._succ, graph._pred
    for v in range(size):
        nodes[v] = {}
        succ[v] = {}
        pred[v] = {}
    for u, v in edges:
        if v not in succ[u]:
            data: dict[str, Any] = {}
            succ[u][v] = data
            pred[v][u] = data
    return graph


# ── psycopg: a Sync queued in a pipeline, not waited for (flowc.runtime.pgstore) ─────────


def psycopg_queue_sync(pipe: Any) -> Any:
    """What puts a Sync in the psycopg pipeline ``pipe`` after the statement just sent,
    without waiting for the results before it: ``Pipeline._enqueue_sync``; where a
    psycopg lacks it, the public ``Pipeline.sync``, which sends the same messages but
    waits for each (a round trip per statement).

    Why: a worker's group commit puts a Sync after each statement of its batch (so the
    server's idle-in-transaction timeout can end a writer cut off mid-batch); waiting at
    each made a batch one round trip per statement. Checked against psycopg 3.2.1 and
    3.3.9.
    """
    queue = getattr(pipe, "_enqueue_sync", None)
    return queue if callable(queue) else pipe.sync
