"""The private APIs flowc reaches, one smoke test each (issue 24, point 7).

Each test exercises the private API itself, as :mod:`flowc._compat` uses it, and is
named after the version of the dependency it was checked against: when an upgrade
breaks one, one named test fails, and the wrapper in ``flowc/_compat.py`` says what
flowc needs from it.
"""

from __future__ import annotations

import importlib
import io
import json
import re
import sys
from typing import Any

import pytest

from flowc import _compat

_parser: Any = importlib.import_module("re._parser")
_constants: Any = importlib.import_module("re._constants")


def _shape(items: Any) -> Any:
    """A parsed pattern as nested tuples of opcode names and plain values."""
    out = []
    for op, av in items:
        name = str(op)
        if name in ("SUBPATTERN",):
            group, add, remove, inner = av
            out.append((name, group, add, remove, _shape(inner)))
        elif name == "BRANCH":
            out.append((name, tuple(_shape(alt) for alt in av[1])))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, inner = av
            out.append((name, low, "MAX" if high == _constants.MAXREPEAT else high, _shape(inner)))
        elif name in ("ASSERT", "ASSERT_NOT"):
            out.append((name, av[0], _shape(av[1])))
        elif name == "ATOMIC_GROUP":
            out.append((name, _shape(av)))
        elif name == "GROUPREF_EXISTS":
            group, yes, no = av
            out.append((name, group, _shape(yes), _shape(no) if no else None))
        elif name == "IN":
            out.append(
                (
                    name,
                    tuple(
                        (str(i), a if a is None or type(a) in (int, tuple) else str(a))
                        for i, a in av
                    ),
                )
            )
        elif name == "AT":
            out.append((name, str(av)))
        else:
            out.append((name, av))
    return tuple(out)


def test_cpython_3_11_to_3_13_re_parser_parse() -> None:
    """``re._parser.parse``: the tree of every opcode flowc.regex reads, with its
    arguments as flowc reads them, and the global flags on ``.state.flags``. Checked
    against CPython 3.11.7, 3.12.1 and 3.13.0; they differ only in `(?!)`."""
    pattern = r"(?s)^a.[^b-c\d](x|yz)*?(?i:k)+\b(?=p)(?<!q)\1(?(1)r|s)(?>t)u*+\Z$"
    tree = _parser.parse(pattern, 0)
    assert tree.state.flags & _constants.SRE_FLAG_DOTALL
    assert _shape(tree) == (
        ("AT", "AT_BEGINNING"),
        ("LITERAL", 97),
        ("ANY", None),
        ("IN", (("NEGATE", None), ("RANGE", (98, 99)), ("CATEGORY", "CATEGORY_DIGIT"))),
        (
            "MIN_REPEAT",
            0,
            "MAX",
            (
                (
                    "SUBPATTERN",
                    1,
                    0,
                    0,
                    (("BRANCH", ((("LITERAL", 120),), (("LITERAL", 121), ("LITERAL", 122)))),),
                ),
            ),
        ),
        (
            "MAX_REPEAT",
            1,
            "MAX",
            (("SUBPATTERN", None, _constants.SRE_FLAG_IGNORECASE, 0, (("LITERAL", 107),)),),
        ),
        ("AT", "AT_BOUNDARY"),
        ("ASSERT", 1, (("LITERAL", 112),)),
        ("ASSERT_NOT", -1, (("LITERAL", 113),)),
        ("GROUPREF", 1),
        ("GROUPREF_EXISTS", 1, (("LITERAL", 114),), (("LITERAL", 115),)),
        ("ATOMIC_GROUP", (("LITERAL", 116),)),
        ("POSSESSIVE_REPEAT", 0, "MAX", (("LITERAL", 117),)),
        ("AT", "AT_END_STRING"),
        ("AT", "AT_END"),
    )
    empty_negative = _shape(_parser.parse("(?!)", 0))
    if sys.version_info >= (3, 13):
        assert empty_negative == (("FAILURE", ()),)
    else:
        assert empty_negative == (("ASSERT_NOT", 1, ()),)
    items, flags = _compat.re_parse(pattern)
    assert (_shape(items), flags) == (_shape(tree), tree.state.flags)
    with pytest.raises(re.error) as caught:
        _parser.parse("a{2,1}", 0)
    assert (caught.value.msg, caught.value.pos) == ("min repeat greater than max repeat", 2)
    with pytest.raises(OverflowError):
        _parser.parse("a{4294967296}", 0)


def test_cpython_3_11_to_3_13_re_constants() -> None:
    """``re._constants``: the names flowc.regex reads exist. Checked against CPython
    3.11.7, 3.12.1 and 3.13.0."""
    names = [
        "LITERAL",
        "NOT_LITERAL",
        "ANY",
        "IN",
        "NEGATE",
        "RANGE",
        "CATEGORY",
        "SUBPATTERN",
        "BRANCH",
        "MAX_REPEAT",
        "MIN_REPEAT",
        "MAXREPEAT",
        "AT",
        "ASSERT",
        "ASSERT_NOT",
        "GROUPREF",
        "GROUPREF_EXISTS",
        "ATOMIC_GROUP",
        "POSSESSIVE_REPEAT",
        "FAILURE",
        "AT_BEGINNING",
        "AT_BEGINNING_STRING",
        "AT_BEGINNING_LINE",
        "AT_END",
        "AT_END_LINE",
        "AT_END_STRING",
        "AT_BOUNDARY",
        "AT_NON_BOUNDARY",
        "SRE_FLAG_ASCII",
        "SRE_FLAG_IGNORECASE",
        "SRE_FLAG_DOTALL",
        "SRE_FLAG_MULTILINE",
        "SRE_FLAG_VERBOSE",
    ]
    assert [n for n in names if not hasattr(_constants, n)] == []
    assert _compat.RE_CONSTANTS is _constants
    assert _constants.SRE_FLAG_IGNORECASE == re.IGNORECASE


def test_cpython_3_11_to_3_13_re_parser_type_flags() -> None:
    """``re._parser.TYPE_FLAGS``: a, u and L. Checked against CPython 3.11.7-3.13.0."""
    assert _parser.TYPE_FLAGS == re.ASCII | re.LOCALE | re.UNICODE == _compat.RE_TYPE_FLAGS


def test_cpython_3_11_to_3_13_re_casefix_extra_cases() -> None:
    """``re._casefix._EXTRA_CASES``: lower-cased code point -> its other equivalents.
    Checked against CPython 3.11.7, 3.12.1 and 3.13.0."""
    extra = importlib.import_module("re._casefix")._EXTRA_CASES
    assert extra[ord("s")] == (0x17F,) and extra[ord("i")] == (0x131,)
    assert _compat.re_extra_cases() == extra
    assert re.fullmatch("(?i)s", "\u017f")


def test_cpython_3_11_to_3_13_sre_unicode_case() -> None:
    """``_sre.unicode_tolower`` and ``_sre.unicode_iscased``. Checked against CPython
    3.11.7, 3.12.1 and 3.13.0."""
    sre = importlib.import_module("_sre")
    assert sre.unicode_tolower(0x212A) == ord("k") == _compat.unicode_tolower(0x212A)
    assert sre.unicode_iscased(ord("A")) and not sre.unicode_iscased(ord("1"))
    assert _compat.unicode_iscased(ord("A")) and not _compat.unicode_iscased(ord("1"))


class _Writer:
    def __init__(self) -> None:
        self.out = io.BytesIO()

    def write(self, data: bytes) -> None:
        self.out.write(data)

    def close(self) -> None:
        pass


def test_pygls_2_1_1_send_data() -> None:
    """pygls' ``JsonRPCProtocol._send_data`` (overridden by :class:`flowc._compat.PyglsRawJson`
    and called by :func:`flowc._compat.pygls_send`), its ``_include_headers``, ``writer``,
    ``CHARSET`` and ``CONTENT_TYPE``. Checked against pygls 2.1.1."""
    from pygls.lsp.server import LanguageServer
    from pygls.protocol import LanguageServerProtocol

    assert callable(LanguageServerProtocol._send_data)

    class Raw:
        body = '{"jsonrpc":"2.0","method":"x"}'

    class Protocol(_compat.PyglsRawJson, LanguageServerProtocol):
        def raw_json(self, data: Any) -> str | None:
            return data.body if isinstance(data, Raw) else None

    server = LanguageServer("probe", "0", protocol_cls=Protocol)
    writer = _Writer()
    server.protocol.set_writer(writer, include_headers=True)
    assert server.protocol._include_headers is True
    _compat.pygls_send(server.protocol, Raw())
    body = Raw.body.encode()
    assert (
        writer.out.getvalue()
        == (
            f"Content-Length: {len(body)}\r\nContent-Type: application/vscode-jsonrpc; "
            "charset=utf-8\r\n\r\n"
        ).encode()
        + body
    )
    writer.out = io.BytesIO()
    server.protocol._send_data({"jsonrpc": "2.0", "method": "y"})  # pygls' own path
    header, _, sent = writer.out.getvalue().partition(b"\r\n\r\n")
    assert header.startswith(b"Content-Length: ") and json.loads(sent)["method"] == "y"


def test_pygls_2_1_1_workspace_create_text_document() -> None:
    """pygls' ``Workspace._create_text_document`` (replaced on one workspace by
    :func:`flowc._compat.pygls_document_lines`), its ``_sync_kind``, and ``TextDocument``'s
    ``lines`` as what its change of a range is applied on. Checked against pygls 2.1.1."""
    from lsprotocol import types as lsp
    from pygls.workspace import Workspace

    workspace = Workspace(None, lsp.TextDocumentSyncKind.Incremental)
    assert workspace._sync_kind == lsp.TextDocumentSyncKind.Incremental
    other = Workspace(None, lsp.TextDocumentSyncKind.Incremental)
    # lines with their ends, as pygls writes them back
    _compat.pygls_document_lines(workspace, lambda text: re.findall(r"[^\n]*\n|[^\n]+$", text))
    for ws in (workspace, other):
        ws.put_text_document(
            lsp.TextDocumentItem(
                uri="file:///a.flow", language_id="flow", version=1, text="a\x0cb\nc\n"
            )
        )
        ws.update_text_document(
            lsp.VersionedTextDocumentIdentifier(version=2, uri="file:///a.flow"),
            lsp.TextDocumentContentChangePartial(
                range=lsp.Range(lsp.Position(1, 0), lsp.Position(1, 1)), text="d"
            ),
        )
    assert workspace.get_text_document("file:///a.flow").source == "a\x0cb\nd\n"
    # pygls' own lines (str.splitlines) end one at the form feed; the other workspace keeps them
    assert other.get_text_document("file:///a.flow").source == "a\x0cd\nc\n"


def _drive(handler: Any) -> Any:
    """Run a pygls built-in handler (a generator) to its end as pygls does, calling each
    server handler it yields; what it returns."""
    try:
        step = next(handler)
        while True:
            server_handler, args, kwargs = step
            step = handler.send(server_handler(*args, **(kwargs or {})))
    except StopIteration as stop:
        return stop.value


def test_pygls_2_1_1_did_change_builtin_handler() -> None:
    """pygls' built-in ``textDocument/didChange`` handler, ``lsp_text_document__did_change``
    (replaced by :class:`flowc._compat.PyglsOpenDocumentChanges`): registered from the
    ``method_name`` its ``lsp_method`` sets; the workspace's ``text_documents`` keyed by
    the unquoted URI; and what the mixin works around: a ``KeyError`` for a document
    that is not open, a reversed range applied as it comes. Checked against pygls 2.1.1."""
    from lsprotocol import types as lsp
    from pygls.lsp.server import LanguageServer
    from pygls.protocol import LanguageServerProtocol
    from pygls.protocol.language_server import lsp_method

    def probe() -> None:
        pass

    assert lsp_method("x/y")(probe).method_name == "x/y"  # type: ignore[attr-defined]
    did_change = lsp.TEXT_DOCUMENT_DID_CHANGE
    assert LanguageServerProtocol.lsp_text_document__did_change.method_name == did_change
    mixin = _compat.PyglsOpenDocumentChanges
    assert mixin.lsp_text_document__did_change.method_name == did_change  # type: ignore[attr-defined]
    dropped: list[str] = []

    class Protocol(_compat.PyglsOpenDocumentChanges, LanguageServerProtocol):
        def unopened_change(self, uri: str) -> None:
            dropped.append(uri)

    def start(protocol_cls: type[LanguageServerProtocol]) -> tuple[Any, list[str]]:
        server = LanguageServer("probe", "0", protocol_cls=protocol_cls)
        changed: list[str] = []

        @server.feature(did_change)
        def on_change(ls: Any, params: lsp.DidChangeTextDocumentParams) -> None:
            changed.append(params.text_document.uri)

        params = lsp.InitializeParams(capabilities=lsp.ClientCapabilities())
        _drive(server.protocol.lsp_initialize(params))
        return server, changed

    def change(server: Any, uri: str, text: str, start: Any, end: Any, new: str) -> str:
        """Open ``uri`` with ``text``, change ``start`` .. ``end`` to ``new``: the text."""
        workspace = server.protocol.workspace
        workspace.put_text_document(lsp.TextDocumentItem(uri, "flow", 1, text))
        range_ = lsp.Range(lsp.Position(*start), lsp.Position(*end))
        _drive(
            server.protocol.fm.builtin_features[did_change](
                lsp.DidChangeTextDocumentParams(
                    lsp.VersionedTextDocumentIdentifier(2, uri),
                    [lsp.TextDocumentContentChangePartial(range_, new)],
                )
            )
        )
        return str(workspace.get_text_document(uri).source)

    def unopened(server: Any) -> None:
        _drive(
            server.protocol.fm.builtin_features[did_change](
                lsp.DidChangeTextDocumentParams(
                    lsp.VersionedTextDocumentIdentifier(2, "file:///c.flow"),
                    [lsp.TextDocumentContentChangeWholeDocument("x")],
                )
            )
        )

    uri = "file:///a%20b.flow"
    plain, plain_changed = start(LanguageServerProtocol)
    assert plain.protocol.fm.builtin_features[did_change].__func__ is (
        LanguageServerProtocol.lsp_text_document__did_change
    )
    # pygls' own: a reversed range writes the text between twice (on a line), or nothing
    # changes (across lines); a document not open is a KeyError
    assert change(plain, uri, "abcdef\n", (0, 4), (0, 2), "X") == "abcdXcdef\n"
    assert list(plain.protocol.workspace.text_documents) == ["file:///a b.flow"]
    assert change(plain, uri, "a\nb\nc\n", (2, 0), (0, 1), "X") == "a\nb\nc\n"
    with pytest.raises(KeyError):
        unopened(plain)
    assert plain_changed == [uri, uri]
    # the mixin's
    fixed, fixed_changed = start(Protocol)
    assert fixed.protocol.fm.builtin_features[did_change].__func__ is (
        mixin.lsp_text_document__did_change
    )
    assert change(fixed, uri, "abcdef\n", (0, 4), (0, 2), "X") == "abXef\n"
    assert change(fixed, uri, "a\nb\nc\n", (2, 0), (0, 1), "X") == "aXc\n"
    assert change(fixed, uri, "abcdef\n", (0, 2), (0, 4), "X") == "abXef\n"
    unopened(fixed)
    assert dropped == ["file:///c.flow"] and fixed_changed == [uri, uri, uri]


def test_pygls_2_1_1_position_codec_past_a_line_end() -> None:
    """pygls' ``PositionCodec.position_from_client_units`` (replaced on one codec by
    :func:`flowc._compat.pygls_clamp_positions`) and its ``client_num_units``: pygls reads
    a character past its line's end as the line's length less one, the line end counted
    (a CRLF as one character), and a character of exactly that length as after the line
    end; and it writes that character into the caller's position. Checked against pygls
    2.1.1."""
    from lsprotocol import types as lsp
    from pygls.workspace import PositionCodec

    def read(codec: Any, lines: list[str], line: int, character: int) -> tuple[Any, ...]:
        position = lsp.Position(line, character)
        at = codec.position_from_client_units(lines, position)
        return at.line, at.character, position.character

    plain, fixed = PositionCodec(), PositionCodec()
    _compat.pygls_clamp_positions(fixed)
    assert plain.client_num_units("x😀\n") == fixed.client_num_units("x😀\n") == 4
    # (lines as pygls_document_lines makes them: each with its own line end)
    cases = [
        # lines, position: pygls' position (the caller's character after), the fixed one
        (["abc\n"], (0, 99), (0, 3, 3), (0, 3, 99)),
        (["abc\n"], (0, 4), (0, 4, 4), (0, 3, 4)),  # pygls: after the line end
        (["abc"], (0, 99), (0, 2, 2), (0, 3, 99)),  # pygls: before the last character
        (["abc\r\n"], (0, 4), (0, 4, 4), (0, 3, 4)),  # pygls: between \r and \n
        (["abc\r\n"], (0, 99), (0, 3, 3), (0, 3, 99)),
        (["x😀\n", "y"], (0, 4), (0, 3, 4), (0, 2, 4)),  # (an emoji: two UTF-16 units)
        (["x😀\n", "y"], (0, 2), (0, 2, 2), (0, 2, 2)),  # (inside it: after it)
        (["abc\n", "d"], (1, 1), (1, 1, 1), (1, 1, 1)),
        (["abc\n"], (3, 0), (0, 4, 0), (0, 4, 0)),  # past the last line: the text's end
    ]
    for lines, (line, character), pygls_reads, flowc_reads in cases:
        assert read(plain, lines, line, character) == pygls_reads, (lines, line, character)
        assert read(fixed, lines, line, character) == flowc_reads, (lines, line, character)
    # the one codec is changed, not the class
    assert PositionCodec().position_from_client_units(["abc"], lsp.Position(0, 99)).character == 2


EXIT_PROBE = """
import atexit, sys
from flowc import _compat
atexit.register(lambda: print("ran"))
assert _compat.run_exit_functions() is True
print("after")
sys.stdout.flush()
"""


def test_cpython_3_11_to_3_13_atexit_run_exitfuncs() -> None:
    """``atexit._run_exitfuncs`` (:func:`flowc._compat.run_exit_functions`) runs the exit
    functions at once and empties their list: they do not run again at exit. Checked
    against CPython 3.11.7, 3.12.1, 3.13.0."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", EXIT_PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "ran\nafter\n"


def test_cpython_3_11_to_3_13_argparse_subparsers_actions() -> None:
    """argparse's ``_actions`` and ``_SubParsersAction`` (:func:`flowc._compat.argparse_subparser`).
    Checked against CPython 3.11.7, 3.12.1, 3.13.0."""
    import argparse

    parser = argparse.ArgumentParser(prog="p")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run")
    assert _compat.argparse_subparser(parser, "run") is run
    assert _compat.argparse_subparser(parser, "nope") is None
    assert _compat.argparse_subparser(parser, None) is None
    assert _compat.argparse_subparser(argparse.ArgumentParser(), "run") is None


def test_dd_0_6_0_null_node_is_value_error() -> None:
    """A CUDD operation past the manager's ``max_memory`` returns NULL, and ``dd.cudd``
    raises the ValueError :func:`flowc._compat.dd_out_of_memory` recognises. Checked
    against dd 0.6.0."""
    cudd = pytest.importorskip("dd.cudd")
    bdd = cudd.BDD(memory_estimate=2**20)
    bdd.configure(reordering=False, max_memory=2**20)
    # x_i == y_i for every i, with every x before every y: exponential in n
    n = 24
    bdd.declare(*(f"x{i}" for i in range(n)), *(f"y{i}" for i in range(n)))
    with pytest.raises((ValueError, RuntimeError)) as failed:
        u = bdd.true
        for i in range(n):
            u &= bdd.apply("<=>", bdd.var(f"x{i}"), bdd.var(f"y{i}"))
    assert _compat.dd_out_of_memory(failed.value)
    assert not _compat.dd_out_of_memory(ValueError("another problem"))


def test_networkx_3_2_to_3_6_digraph_succ() -> None:
    """``DiGraph._succ`` (:func:`flowc._compat.networkx_successors`): the successors of each
    node as a dict, in the order ``graph.succ`` gives them. Checked against networkx 3.2.1
    and 3.6.1."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(4))
    graph.add_edges_from([(0, 2), (0, 1), (2, 3), (3, 0)])
    succ = _compat.networkx_successors(graph)
    assert type(succ) is dict and all(type(succ[v]) is dict for v in graph)
    assert {v: list(succ[v]) for v in graph} == {v: list(graph.succ[v]) for v in graph}
    assert list(succ[0]) == [2, 1]


def test_networkx_3_2_to_3_6_digraph_private_dicts() -> None:
    """``DiGraph._node``, ``_succ`` and ``_pred`` filled directly
    (:func:`flowc._compat.networkx_digraph`) make the graph ``add_nodes_from`` and
    ``add_edges_from`` make: the same nodes, successors and predecessors in the same
    order, and every networkx function the analysis uses works on it. Checked against
    networkx 3.2.1 and 3.6.1."""
    import random

    import networkx as nx

    rnd = random.Random(7)
    edges = [(rnd.randrange(30), rnd.randrange(30)) for _ in range(90)]
    edges += edges[:5]  # an edge given twice is one edge
    expected = nx.DiGraph()
    expected.add_nodes_from(range(30))
    expected.add_edges_from(edges)
    got = _compat.networkx_digraph(30, edges)
    assert list(got.nodes) == list(expected.nodes)
    assert [list(got.succ[v]) for v in got] == [list(expected.succ[v]) for v in expected]
    assert [list(got.pred[v]) for v in got] == [list(expected.pred[v]) for v in expected]
    assert got.number_of_edges() == expected.number_of_edges()
    assert nx.utils.graphs_equal(got, expected)
    sccs = sorted(map(sorted, nx.strongly_connected_components(got)))
    assert sccs == sorted(map(sorted, nx.strongly_connected_components(expected)))
    assert nx.shortest_path_length(got, 0) == nx.shortest_path_length(expected, 0)
    assert list(got.reverse(copy=False).succ[3]) == list(expected.reverse(copy=False).succ[3])
    assert set(got.subgraph(range(10)).edges) == set(expected.subgraph(range(10)).edges)


def test_psycopg_3_2_to_3_3_pipeline_enqueue_sync(pg_dsn: str) -> None:
    """``Pipeline._enqueue_sync`` (:func:`flowc._compat.psycopg_queue_sync`): a Sync queued
    after each statement of a pipeline in a transaction, none waited for, and the
    statements' results all there once the pipeline ends; an error in one statement
    fails the pipeline and the transaction is rolled back (nothing of it stays).
    Checked against psycopg 3.2.1 and 3.3.9."""
    import psycopg

    assert callable(getattr(psycopg.Pipeline, "_enqueue_sync", None))  # not the fallback
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (k int PRIMARY KEY)")
        with conn.transaction(), conn.pipeline() as pipe:
            sync = _compat.psycopg_queue_sync(pipe)
            assert sync == pipe._enqueue_sync
            cursors = []
            for k in range(3):
                cursors.append(conn.execute("INSERT INTO t VALUES (%s) RETURNING k", (k,)))
                sync()
        assert [c.fetchone() for c in cursors] == [(0,), (1,), (2,)]
        with (
            pytest.raises(psycopg.errors.UniqueViolation),
            conn.transaction(),
            conn.pipeline() as pipe,
        ):
            sync = _compat.psycopg_queue_sync(pipe)
            conn.execute("INSERT INTO t VALUES (7)")
            sync()
            conn.execute("INSERT INTO t VALUES (0)")  # taken
            sync()
        assert conn.execute("SELECT k FROM t ORDER BY k").fetchall() == [(0,), (1,), (2,)]
