"""The language server's state: per document, its last analysis (findings and the
index of the last version that parsed), and the ``[tool.flowc]`` settings it is
checked with. The requests are answered in :mod:`flowc.lsp.server` and
:mod:`flowc.lsp.features`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import inspect
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import attrs
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from flowc import collector
from flowc._compat import PyglsOpenDocumentChanges, PyglsRawJson, pygls_send
from flowc.compiler.analysis import CheckOptions, SpaceCache, check_compiled, check_source
from flowc.compiler.lower import RuleCache, lower
from flowc.compiler.pipeline import compile_source
from flowc.compiler.render.options import RenderOptions
from flowc.diagnostics import (
    Diagnostic,
    Severity,
    elide_quoted,
    has_errors,
    internal_error_text,
)
from flowc.lsp.incremental import Reparser
from flowc.lsp.index import Index, run_endings
from flowc.lsp.moves import Edit, Since, add, edit_between, edits_between, since
from flowc.project.config import Config, find_pyproject, load_config, options_from
from flowc.project.errors import UsageError
from flowc.project.plugins import config_trusted, load_plugins_for
from flowc.project.trust import TrustError, trust_list_stamp
from flowc.source import SourceFile, Span, lone_returns_as_newlines

#: how long after the last keystroke a changed document is analysed again (when the
#: keystroke came soon after another one: see :meth:`FlowcServer.changed`)
DEBOUNCE_SECONDS = 0.05
#: how long the server waits, idle, before it collects cyclic garbage
IDLE_COLLECT_SECONDS = 2.0
#: how long a shutdown waits for the diagrams being drawn before it stops their layouts
SHUTDOWN_GRACE_SECONDS = 2.0

_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}
#: findings about code that never runs: editors grey it out
_UNNECESSARY = frozenset({"W202", "W203", "W204"})

log = logging.getLogger("flowc.lsp")
F = TypeVar("F", bound=Callable[..., Any])


@attrs.define
class Analysis:
    """The last analysis of a document: its findings and, from the last version that
    parsed, the index that hover, definition and symbols use.

    While the document does not parse, ``diagnostics`` are its syntax errors
    (``errors``) and the findings of the last version that parsed (``findings``, in that
    version's places) moved to where the edits since put their text
    (:mod:`flowc.lsp.moves`)."""

    version: int | None
    diagnostics: tuple[Diagnostic, ...]
    index: Index | None
    #: the findings of the version ``index`` was built from, in its places
    findings: tuple[Diagnostic, ...] = ()
    #: the syntax errors of the text analysed (none when it parsed)
    errors: tuple[Diagnostic, ...] = ()
    #: the number of the text analysed and of the one ``index`` was built from (see
    #: :class:`_Log`)
    seq: int = 0
    base_seq: int = 0
    #: the re-parser's count of moved trees when ``index`` was built: once it changed,
    #: the index's tree is no longer in its text's places (:attr:`Reparser.moved`)
    moved: int = 0


def text_lines(text: str) -> list[str]:
    """``text``'s lines as flowc numbers them, each with its line end: the lines the
    server converts positions on, and on which pygls applies an editor's changes. A line
    ends at a newline or at a lone carriage return (an old Mac line end), as for the
    protocol and for flowc (:func:`flowc.source.lone_returns_as_newlines`). Not
    ``str.splitlines``, which also ends a line at a form feed, U+2028 and other
    characters that end none for flowc (nor for an editor): after one of those, every
    position was put on the wrong line.

    >>> text_lines("a\\fb\\nc"), text_lines("a\\rb\\r\\nc\\r")
    (['a\\x0cb\\n', 'c'], ['a\\r', 'b\\r\\n', 'c\\r'])
    """
    ends = lone_returns_as_newlines(text)
    lines = ends.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    if ends is not text:  # each line with the text's own line end
        at = 0
        for i, line in enumerate(out):
            out[i] = text[at : at + len(line)]
            at += len(line)
    return out


def document_text(doc: Any) -> str:
    r"""The text of a pygls document as flowc reads it: its lone carriage returns made
    newlines, and a byte order mark that starts it (an editor may keep one in its text)
    read as a space, as `flowc check` reads a file with one, its columns after it. One
    character for one: every position stays where the editor has it.

    >>> class Doc:
    ...     source = "\ufeffspeaker a\r"
    >>> document_text(Doc())
    ' speaker a\n'
    """
    return flow_text(doc.source)


def flow_text(text: str) -> str:
    """An editor's ``text`` as flowc reads it (see :func:`document_text`)."""
    if text.startswith(BOM):
        text = " " + text[1:]
    return lone_returns_as_newlines(text)


#: a byte order mark, as an editor's text may start with one
BOM = "\ufeff"


def _ascii_position(lines: Sequence[str], line: int, character: int) -> tuple[int, int]:
    """A position in an ASCII text as pygls' position codec gives it: the character
    clamped to its line (newline included), a line past the end as the end."""
    if line >= len(lines):
        return len(lines), 0
    return line, min(character, len(lines[line]))


@attrs.frozen
class _Job:
    """One analysis: the document as it was when it was asked for."""

    uri: str
    version: int | None
    source: SourceFile
    options: CheckOptions
    generation: int
    #: the number of the text (:class:`_Log`)
    seq: int = 0


#: an edit of a document: the numbers of the first and the last change it stands for
#: (several changes that touch are one edit), and the edit
_Entry = tuple[int, int, Edit]
#: past this many edits kept, they are made one (the region the texts differ in)
_MOST_EDITS = 64


@attrs.frozen
class _Log:
    """A document's edits since the last version that parsed: ``text`` is the text the
    editor has now, the ``seq``-th (each change counts one), and ``entries`` lead from
    ``base`` (a text analysed) to it. Replaced, never changed: the analyses' thread reads
    it too."""

    seq: int
    text: SourceFile
    base: SourceFile
    entries: tuple[_Entry, ...] = ()

    def changed(self, text: SourceFile) -> _Log:
        """The log after a change that made the document ``text``."""
        seq = self.seq + 1
        entries = self.entries
        for edit in edits_between(self.text.text, text.text):
            merged = add((entries[-1][2],), edit) if entries else ()
            if len(merged) == 1:
                entries = (*entries[:-1], (entries[-1][0], seq, merged[0]))
            else:
                entries = (*entries, (seq, seq, edit))
        if len(entries) > _MOST_EDITS:
            whole = edit_between(self.base.text, text.text)
            entries = ((entries[0][0], seq, whole),) if whole is not None else ()
        return _Log(seq, text, self.base, entries)

    def parsed(self, seq: int, source: SourceFile) -> _Log:
        """The log once the ``seq``-th text, ``source``, parsed: only the edits after it."""
        entries: tuple[_Entry, ...]
        if any(first <= seq < last for first, last, _ in self.entries):
            whole = edit_between(source.text, self.text.text)
            entries = ((seq + 1, self.seq, whole),) if whole is not None else ()
        else:
            entries = tuple(e for e in self.entries if e[0] > seq)
        return _Log(self.seq, self.text, source, entries)

    def since(self, analysis: Analysis, old: SourceFile, new: SourceFile, seq: int) -> Since:
        """From ``old``, the text of ``analysis``'s index, to ``new``, the ``seq``-th."""
        base = analysis.base_seq
        edits: list[Edit] = []
        for first, last, edit in self.entries:
            if first <= base < last or first <= seq < last:
                edits = []  # an edit that is only partly between them: see `since`
                break
            if base < first and last <= seq:
                edits.append(edit)
        return since(old, new, edits)


@attrs.frozen
class _Serialised:
    """A message already in JSON (ASCII), written as it is."""

    body: str


class _Protocol(PyglsOpenDocumentChanges, PyglsRawJson, LanguageServerProtocol):
    """pygls' protocol, which also writes messages already in JSON: the diagnostics of a
    large file are mostly the same from one version to the next, and their JSON is kept
    (pygls would convert and encode every one of them again). A change of a document the
    editor did not open (it closed it, or the server skipped its ``didOpen`` as
    unreadable) is dropped with a line in the log, as a broken notification is: there is
    no text to apply it to; a change range whose end comes first is read from end to
    start (:class:`~flowc._compat.PyglsOpenDocumentChanges`)."""

    def raw_json(self, data: Any) -> str | None:
        return data.body if isinstance(data, _Serialised) else None

    def unopened_change(self, uri: str) -> None:
        log.warning("flowc lsp: textDocument/didChange of %s, which is not open: dropped", uri)


@attrs.define
class _Config:
    path: Path | None
    #: the pyproject.toml's modification time and size, and the trust list's (None: none)
    stamp: tuple[int, int, tuple[int, int] | None]
    options: CheckOptions
    problem: str | None
    #: why the plugins it lists were not imported (its folder is not trusted), or None
    untrusted: str | None = None


def _no_cli_options() -> argparse.Namespace:
    return argparse.Namespace(
        select=None, ignore=None, strict=False, max_states=None, target="flowc"
    )


def _shown_message(d: Diagnostic) -> str:
    """A finding's message and help as the editor shows them: each long name or statement
    they quote cut short, as every report cuts it (:func:`~flowc.diagnostics.elide_quoted`)."""
    message = elide_quoted(d.message)
    return f"{message}\nhelp: {elide_quoted(d.help)}" if d.help else message


class FlowcServer(LanguageServer):
    """The language server and the state it keeps per document."""

    def __init__(self, *, trust: bool = False, layout: RenderOptions | None = None) -> None:
        super().__init__("flowc", "0.1.0", protocol_cls=_Protocol)
        #: ``flowc lsp --trust``: every folder's configured plugins are imported
        self.trust = trust
        #: the diagrams' layout budget (``flowc lsp --layout-timeout``, ``--max-layout-size``)
        self.layout = layout or RenderOptions()
        self.analyses: dict[str, Analysis] = {}
        #: per document, its last state space: explored again only when an edit changes
        #: the flow's shape (the analyses' thread alone uses them)
        self.spaces: dict[str, SpaceCache] = {}
        self._pending: dict[str, asyncio.Task[None]] = {}
        #: per document, the last tree that parsed: an edit parses only what it touched
        self.reparsers: dict[str, Reparser] = {}
        #: per document: the rules lowered for its last version (what an edit kept is not
        #: lowered again)
        self.rule_caches: dict[str, RuleCache] = {}
        #: per document, the last findings' JSON (see :meth:`_serialise`)
        self._converted: dict[str, dict[tuple[object, ...], str]] = {}
        #: per document, how many analyses were asked for: an analysis is stale when its
        #: number is no longer the last one (it is stopped between its steps)
        self._generation: dict[str, int] = {}
        self._last_change: dict[str, float] = {}
        self._open: set[str] = set()
        #: analyses run one at a time, in a thread of their own: the server answers
        #: requests and reads edits while a large file is checked
        self._analyser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flowc-check")
        self._running = threading.Lock()
        #: diagrams are drawn in a thread of their own too, one at a time (Graphviz may
        #: take its whole budget): neither requests nor checks wait for them
        self._drawer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flowc-diagram")
        #: the diagrams asked for and not yet answered, and the event that stops their
        #: layouts (the server is shutting down: see :meth:`finish_diagrams`)
        self._drawing: set[asyncio.Future[dict[str, Any]]] = set()
        self._closing = threading.Event()
        self._collecting: asyncio.TimerHandle | None = None
        self._configs: dict[Path, _Config] = {}
        self._reported: set[str] = set()
        #: per open document, its edits since the last version that parsed
        self._logs: dict[str, _Log] = {}
        #: per document, the index whose names were listed while its tree was in its
        #: text's places (:meth:`_list_names`)
        self._named: dict[str, Index] = {}

    # ── handlers and their internal errors ───────────────────────────────────

    def feature(self, feature_name: str, options: Any | None = None) -> Callable[[F], F]:
        """pygls' ``feature`` decorator; the handler reports its internal errors
        (:meth:`internal_error`)."""
        types = lsp.METHOD_TO_TYPES.get(feature_name)
        return self._reporting(
            feature_name,
            super().feature(feature_name, options),
            request=types is None or types[1] is not None,
        )

    def command(self, command_name: str) -> Callable[[F], F]:
        """pygls' ``command`` decorator; the handler reports its internal errors."""
        return self._reporting(
            f"{lsp.WORKSPACE_EXECUTE_COMMAND} {command_name}",
            super().command(command_name),
            request=True,
        )

    def _reporting(
        self, what: str, register: Callable[[F], F], *, request: bool
    ) -> Callable[[F], F]:
        """A decorator that registers a handler (with ``register``) that reports what it
        raises beyond the errors it answers with (:class:`~pygls.exceptions.JsonRpcException`:
        a refused rename): an internal error, a request's error answer or a message to
        the editor after a notification. The server goes on either way."""

        def failed(err: Exception) -> None:
            line = self.internal_error(what, err)
            if request:
                raise InternalError(line) from err

        def decorator(f: F) -> F:
            if inspect.iscoroutinefunction(f):

                @functools.wraps(f)
                async def handler_async(*args: Any, **kwargs: Any) -> Any:
                    try:
                        return await f(*args, **kwargs)
                    except JsonRpcException:
                        raise
                    except Exception as err:
                        failed(err)
                        return None

                register(handler_async)  # type: ignore[arg-type]
            else:

                @functools.wraps(f)
                def handler(*args: Any, **kwargs: Any) -> Any:
                    try:
                        return f(*args, **kwargs)
                    except JsonRpcException:
                        raise
                    except Exception as err:
                        failed(err)
                        return None

                register(handler)  # type: ignore[arg-type]
            return f

        return decorator

    def send_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        """Answer request ``msg_id`` (None: a message whose id is unknown) with a JSON-RPC
        error: pygls' error messages leave out an id of None, which JSON-RPC requires."""
        body = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
        pygls_send(self.protocol, _Serialised(json.dumps(body)))

    def internal_error(self, what: str, err: BaseException) -> str:
        """A bug in flowc met in ``what`` (a request, a notification, a document's
        check): logged (the server's log is the editor's: the line, then the
        traceback), shown to the user once per distinct line; the line."""
        line = f"flowc lsp: {what}: {internal_error_text(err)}"
        log.error("%s", line, exc_info=err)
        if line not in self._reported:
            self._reported.add(line)
            self.window_show_message(
                lsp.ShowMessageParams(type=lsp.MessageType.Error, message=line)
            )
        return line

    # ── configuration ────────────────────────────────────────────────────────

    def options_for(self, path: str) -> CheckOptions:
        """The check options of ``[tool.flowc]`` in the pyproject.toml nearest ``path``;
        re-read whenever that file's modification time changes, or the list of trusted
        folders does. A broken table is reported once (a message) and the defaults are
        used. The plugins it lists are imported only when its folder is trusted
        (:mod:`flowc.project.trust`); when it is not, an information message says so,
        once, and how to trust it."""
        folder = Path(path).parent if path else Path.cwd()
        pyproject = find_pyproject(folder if folder.is_dir() else Path.cwd())
        if pyproject is None:
            return CheckOptions()
        try:
            stat = pyproject.stat()
        except OSError:
            return CheckOptions()
        stamp = (stat.st_mtime_ns, stat.st_size, trust_list_stamp())
        cached = self._configs.get(pyproject)
        if cached is None or cached.stamp != stamp:
            cached = self._read_config(pyproject, stamp)
            self._configs[pyproject] = cached
        for problem, kind, message in (
            (
                cached.problem,
                lsp.MessageType.Error,
                f"flowc: {cached.problem}; checking with the default settings",
            ),
            (cached.untrusted, lsp.MessageType.Info, f"flowc: {cached.untrusted}"),
        ):
            if problem and problem not in self._reported:
                self._reported.add(problem)
                self.window_show_message(lsp.ShowMessageParams(type=kind, message=message))
        return cached.options

    def _read_config(
        self, pyproject: Path, stamp: tuple[int, int, tuple[int, int] | None]
    ) -> _Config:
        """Read ``pyproject``'s table, and import the plugins it lists if its folder is
        trusted (Python imports a module once: an edited plugin takes effect when the
        server restarts)."""
        try:
            table = load_config(pyproject)
            options = options_from(_no_cli_options(), table, str(pyproject))
            config = Config(pyproject, table)
            untrusted: str | None = None
            try:
                decision = config_trusted(config, self.trust)
            except TrustError as err:  # FLOWC_TRUST or the list is unusable: nothing trusted
                untrusted = f"{pyproject}: its plugins were not imported: {err}"
            else:
                if decision is not None and not decision.trusted:
                    untrusted = decision.notice(pyproject, server=True)
            trusted = untrusted is None
            load_plugins_for(None, config, trusted=trusted)
            return _Config(pyproject, stamp, options, None, untrusted)
        except UsageError as err:
            return _Config(pyproject, stamp, CheckOptions(), str(err))

    # ── analysis ─────────────────────────────────────────────────────────────

    def analyse(self, uri: str) -> None:
        """Check the document now, in this thread, and publish its diagnostics."""
        job = self._job(uri)
        done = self._run(job)
        if done is not None:
            self._finish(job, *done)

    def _job(self, uri: str) -> _Job:
        """What one analysis reads, taken in the server's thread: the document's text
        and version as they are now, and its settings."""
        doc = self.workspace.get_text_document(uri)
        path = to_fs_path(uri) or uri
        text = flow_text(doc.source)
        log = self._logs.get(uri)
        # the log's text when it is this one (its lines are counted once)
        source = log.text if log is not None and log.text.text == text else SourceFile(path, text)
        return _Job(
            uri,
            doc.version,
            source,
            self.options_for(path),
            self._generation.get(uri, 0),
            log.seq if log is not None else 0,
        )

    def _stale(self, job: _Job) -> bool:
        """A newer analysis of the document has been asked for (an edit, a save, new
        settings) or it was closed: this one's result would be thrown away."""
        return self._generation.get(job.uri, 0) != job.generation

    def _run(
        self, job: _Job
    ) -> tuple[Analysis, _Serialised, dict[tuple[object, ...], str] | None] | None:
        """Parse, check and serialise ``job`` (in any thread: one at a time); None when it
        became stale on the way (checked between the steps)."""
        with self._running:
            if self._stale(job):
                return None
            source = job.source
            log = self._logs.get(job.uri)  # (before the analysis its edits follow)
            previous = self.analyses.get(job.uri)
            reparser = self.reparsers.setdefault(job.uri, Reparser())
            flow, syntax = reparser.parse(source)
            if syntax:
                analysis = self._broken(job, syntax, previous, log)
            else:
                if self._stale(job):
                    return None
                # parsed and lowered once: the findings (as `flowc check`) and the index
                rules = self.rule_caches.setdefault(job.uri, RuleCache())
                compiled, compile_diags = lower(flow, source.name, cache=rules)
                if self._stale(job):
                    return None
                spaces = self.spaces.setdefault(job.uri, SpaceCache())
                # (without the rules each finding proves dead: only the diagram draws them;
                # the reasons runs end with, read from the same facts, for completion)
                endings: list[frozenset[str] | None] = [None]
                diags = check_compiled(
                    compiled,
                    compile_diags,
                    job.options,
                    filename=source.name,
                    spaces=spaces,
                    proofs=False,
                    on_facts=lambda facts: endings.__setitem__(0, run_endings(facts)),
                )
                index = Index.build(source, flow, compiled, endings[0])
                analysis = Analysis(
                    job.version, diags, index, diags, (), job.seq, job.seq, reparser.moved
                )
            if self._stale(job):
                return None
            message, converted = self._serialise(job, analysis, reuse=not syntax)
            return analysis, message, converted

    def _broken(
        self,
        job: _Job,
        syntax: tuple[Diagnostic, ...],
        previous: Analysis | None,
        log: _Log | None,
    ) -> Analysis:
        """The analysis of a text that does not parse: its syntax errors, and the last
        good analysis for everything else, its findings moved to where the edits since
        put their text (one an edit replaced part of is left out)."""
        if previous is None or previous.index is None:
            return Analysis(job.version, syntax, None, seq=job.seq)
        # (with no edits known, the two texts compared: coarser, never misplaced)
        moves = (
            log.since(previous, previous.index.source, job.source, job.seq)
            if log is not None and previous.base_seq <= job.seq
            else since(previous.index.source, job.source, None)
        )
        shown = []
        for d in previous.findings:
            if d.span is None:
                shown.append(d)
                continue
            span = moves.span(d.span)
            if span is not None:
                shown.append(attrs.evolve(d, span=span))
        return attrs.evolve(
            previous, version=job.version, diagnostics=(*syntax, *shown), errors=syntax, seq=job.seq
        )

    def _finish(
        self,
        job: _Job,
        analysis: Analysis,
        message: _Serialised,
        converted: dict[tuple[object, ...], str] | None,
    ) -> None:
        """Keep a finished analysis and publish it (in the server's thread)."""
        if self._stale(job):
            return
        pygls_send(self.protocol, message)
        # the analysis replaced is freed after the message is on its way
        self.analyses[job.uri] = analysis
        # what the analysis made lives on (trees, findings, their JSON): moved out of
        # the collector's generations, no later pass walks it (on a 10,000-rule file
        # that was ~0.2 s an edit); cycles among what is thrown away wait for the
        # collection when the server is idle (serve() runs without automatic passes)
        collector.freeze()
        if converted:
            self._converted[job.uri] = converted
        elif converted is not None:
            self._converted.pop(job.uri, None)
        log = self._logs.get(job.uri)
        if log is not None and not analysis.errors and analysis.index is not None:
            self._logs[job.uri] = log.parsed(job.seq, analysis.index.source)
            # its names, listed in the analyses' thread before the next edit's parse
            # moves its tree (an analysis is not kept waiting for them)
            with contextlib.suppress(RuntimeError):  # (the server is shutting down)
                self._analyser.submit(self._list_names, job.uri, analysis.index, analysis.moved)
        self._collect_later()

    def _list_names(self, uri: str, index: Index, moved: int) -> None:
        """List ``index``'s names (:attr:`Index.occurrences`, kept) while its tree is
        still in its text's places (``moved``: the re-parser's count then): a request
        can then look names up in it after an edit that parsed moved its tree (see
        :meth:`since`)."""
        with self._running:
            reparser = self.reparsers.get(uri)
            if reparser is None or reparser.moved != moved:
                return
            try:
                index.occurrences  # noqa: B018 (listed and kept)
            except Exception as err:  # a request lists them again, and says so
                log.debug("listing the names of %s: %s", uri, err)
                return
            self._named[uri] = index

    def _collect_later(self) -> None:
        """Collect cyclic garbage once the server has been idle for a while."""
        if self._collecting is not None:
            self._collecting.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._collecting = None  # not serving (called directly)
            return
        self._collecting = loop.call_later(IDLE_COLLECT_SECONDS, self.collect)

    def collect(self) -> None:
        """A full pass of the cycle collector over everything, the analyses kept frozen
        (see :meth:`_run`) included, unless an analysis is running or waiting."""
        self._collecting = None
        if self._pending or not self._running.acquire(blocking=False):
            return
        try:
            collector.collect_all()
        finally:
            self._running.release()

    def _serialise(
        self, job: _Job, analysis: Analysis, *, reuse: bool = True
    ) -> tuple[_Serialised, dict[tuple[object, ...], str] | None]:
        """The publishDiagnostics notification of ``analysis``, in JSON, and the JSON of
        each diagnostic by code, message and place (kept for the next version).

        Most findings survive an edit unchanged: in an ASCII text (where a column is the
        same in every position encoding) each diagnostic's JSON is kept per document and
        reused, so an edit serialises only the findings it changed. Not while the text
        does not parse (``reuse`` false): the findings kept from the last version that
        parsed may point past the ends of its lines: they are placed afresh, and the JSON
        kept stays that of the last version that parsed (None)."""
        text = job.source.text
        lines = text_lines(text)
        ascii_text = text.isascii()
        cache = self._converted.get(job.uri, {}) if ascii_text and reuse else {}
        kept: dict[tuple[object, ...], str] = {}
        out = []
        for d in analysis.diagnostics:
            s = d.span
            key = (
                (d.code.id, d.message, d.help, s.line, s.column, s.end_line, s.end_column)
                if s is not None
                else (d.code.id, d.message, d.help)
            )
            converted = cache.get(key)
            if converted is None:
                converted = self._diagnostic_json(d, lines, ascii_text)
            kept[key] = converted
            out.append(converted)
        version = "" if analysis.version is None else f', "version": {analysis.version}'
        body = (
            f'{{"jsonrpc": "2.0", "method": "{lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS}", '
            f'"params": {{"uri": {json.dumps(job.uri)}, "diagnostics": [{", ".join(out)}]'
            f"{version}}}}}"
        )
        if not reuse:
            return _Serialised(body), None  # the last version's JSON stays for the next one
        return _Serialised(body), kept if ascii_text else {}

    def _diagnostic_json(self, d: Diagnostic, lines: Sequence[str], ascii_text: bool) -> str:
        """:meth:`lsp_diagnostic` in JSON, as pygls would write it, without building
        lsprotocol's objects (a large file's first check has thousands of findings)."""
        s = d.span
        if s is not None and ascii_text:
            # in ASCII a column is the same in every encoding: the codec's clamping only
            start = _ascii_position(lines, s.line - 1, s.column - 1)
            end = _ascii_position(lines, s.end_line - 1, s.end_column - 1)
        else:
            r = self.to_range(s, lines)
            start, end = (r.start.line, r.start.character), (r.end.line, r.end.character)
        out: dict[str, Any] = {
            "range": {
                "start": {"line": start[0], "character": start[1]},
                "end": {"line": end[0], "character": end[1]},
            },
            "message": _shown_message(d),
            "severity": _SEVERITY[d.severity].value,
            "code": d.code.id,
            "source": "flowc",
        }
        if d.code.id in _UNNECESSARY:
            out["tags"] = [lsp.DiagnosticTag.Unnecessary.value]
        return json.dumps(out)

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
        message = _shown_message(d)
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
        """Analyse ``uri`` after ``delay`` seconds, in the analysis thread; an analysis
        of it already waiting is replaced, one already running is stopped (it is stale)."""
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        if self._collecting is not None:
            self._collecting.cancel()
            self._collecting = None
        generation = self._generation[uri] = self._generation.get(uri, 0) + 1

        async def later() -> None:
            if delay:
                await asyncio.sleep(delay)
            if self._pending.get(uri) is task:
                del self._pending[uri]
            if self._generation.get(uri) != generation:
                return
            try:
                job = self._job(uri)
                done = await asyncio.get_running_loop().run_in_executor(
                    self._analyser, self._run, job
                )
                if done is not None:
                    self._finish(job, *done)
            except Exception as err:  # the server goes on; the next edit is checked again
                self.internal_error(f"checking {to_fs_path(uri) or uri}", err)

        task = self._pending[uri] = asyncio.ensure_future(later())

    def changed(self, uri: str) -> None:
        """The document was edited: analyse it at once when it had been quiet (no edit
        for :data:`DEBOUNCE_SECONDS` and no analysis running), else after the debounce,
        so that a burst of keystrokes is analysed once, at its end."""
        now = time.monotonic()
        last = self._last_change.get(uri)
        self._last_change[uri] = now
        busy = self._running.locked() or uri in self._pending
        quiet = not busy and (last is None or now - last >= DEBOUNCE_SECONDS)
        log = self._logs.get(uri)
        if log is not None:  # the edit, kept until a version after it parses
            text = flow_text(self.workspace.get_text_document(uri).source)
            self._logs[uri] = log.changed(SourceFile(log.text.name, text))
        self.schedule(uri, 0 if quiet else DEBOUNCE_SECONDS)

    def opened(self, uri: str) -> None:
        """A document was opened: its first analysis, at once, in this thread."""
        self._open.add(uri)
        text = flow_text(self.workspace.get_text_document(uri).source)
        source = SourceFile(to_fs_path(uri) or uri, text)
        old = self._logs.get(uri)
        self._logs[uri] = _Log(old.seq + 1 if old is not None else 0, source, source)
        self.analyse(uri)

    def is_open(self, uri: str) -> bool:
        """Whether the editor opened ``uri`` (and has not closed it): the server answers
        only about the documents it has the text of."""
        return uri in self._open

    def closed(self, uri: str) -> None:
        """Forget a closed document (an analysis of it still running is dropped)."""
        self._open.discard(uri)
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        self._generation.pop(uri, None)
        self._last_change.pop(uri, None)
        self.analyses.pop(uri, None)
        self.reparsers.pop(uri, None)
        self.spaces.pop(uri, None)
        self.rule_caches.pop(uri, None)
        self._converted.pop(uri, None)
        self._logs.pop(uri, None)
        self._named.pop(uri, None)

    def config_changed(self) -> None:
        """A pyproject.toml changed (the editor's file watch): check every open
        document again with the settings read afresh."""
        self._configs.clear()
        self._reported.clear()
        for uri in list(self.analyses):
            self.schedule(uri, 0)

    async def diagram(self, uri: str) -> dict[str, Any]:
        """The flow drawn as ``flowc render --check`` draws it: SVG, with the findings
        the editor shows marked on it. Drawn in a thread of its own, within the layout's
        budget (:attr:`layout`): the server answers other requests meanwhile, and a
        diagram that cannot be drawn is a :class:`RequestFailed` that says why."""
        if uri not in self._open:
            raise RequestFailed(f"{uri} is not open")
        doc = self.workspace.get_text_document(uri)
        source = SourceFile(to_fs_path(uri) or uri, flow_text(doc.source))
        options = self.options_for(source.name)  # here: it may show a message
        drawing = asyncio.get_running_loop().run_in_executor(
            self._drawer, self._draw, source, options
        )
        self._drawing.add(drawing)
        try:
            return await drawing
        finally:
            self._drawing.discard(drawing)

    @property
    def drawing(self) -> bool:
        """Whether a diagram asked for is not answered yet."""
        return bool(self._drawing)

    async def finish_diagrams(self, grace: float = SHUTDOWN_GRACE_SECONDS) -> None:
        """Before a shutdown or an exit (or when the input ends): let the diagrams being
        drawn finish for ``grace`` seconds, then stop their layouts (they are answered with
        an error), so that every request is answered first. (pygls cancels the requests
        still running at a shutdown, and fails on an ``executeCommand``'s: the reader of
        the input holds the shutdown back until they are done, :mod:`flowc.lsp.stdio`.)"""
        if self._drawing:
            _, late = await asyncio.wait(set(self._drawing), timeout=grace)
            if late:
                self._closing.set()
                await asyncio.wait(late)
        await asyncio.sleep(0)  # their answers go out first

    def shutdown(self) -> None:
        """Stop any layout still running (the editor said exit without a shutdown), then
        pygls' own shutdown."""
        self._closing.set()
        self._drawer.shutdown(wait=False, cancel_futures=True)
        super().shutdown()  # type: ignore[no-untyped-call]

    def _draw(self, source: SourceFile, options: CheckOptions) -> dict[str, Any]:
        """:meth:`diagram`'s work, in the drawing thread."""
        from flowc.compiler.render.diagram import build_diagram, mark_findings
        from flowc.compiler.render.image import (
            DotNotFoundError,
            LayoutError,
            LayoutStopped,
            render_image,
        )
        from flowc.compiler.render.rendering import Rendering
        from flowc.project.layout import layout_failure, text_fallback

        compiled, diags = compile_source(source)
        if compiled is None or has_errors(diags):
            errors = "; ".join(
                f"{d.code.id} line {d.span.line if d.span else '?'}: {elide_quoted(d.message)}"
                for d in diags
                if d.is_error
            )
            raise RequestFailed(f"the flow has errors, so it cannot be drawn: {errors}")
        rendering = Rendering(build_diagram(compiled), self.layout, source)
        try:
            rendering.check_layout_size()  # before the check: refused at once
            findings = check_source(source, options, as_json=False)
            rendering = attrs.evolve(rendering, diagram=mark_findings(rendering.diagram, findings))
            timeout = self.layout.layout_timeout
            svg = render_image(rendering.dot, "svg", timeout=timeout, stop=self._closing)
        except DotNotFoundError as err:
            raise RequestFailed(f"drawing needs Graphviz: {err}") from None
        except LayoutStopped:
            raise RequestFailed("the diagram was not drawn: the server is shutting down") from None
        except LayoutError as err:
            fallback = text_fallback(source.name)
            raise RequestFailed(
                f"the diagram was not drawn: {layout_failure(err, fallback, 'flowc lsp ')}"
            ) from None
        return {"svg": svg.decode("utf-8"), "findings": len(findings)}

    def document_end(self, lines: Sequence[str]) -> lsp.Position:
        """The position after the last character of a document's ``lines``."""
        if not lines:
            return lsp.Position(0, 0)
        if lines[-1].endswith(("\n", "\r")):  # (a line end of :func:`text_lines`)
            return lsp.Position(len(lines), 0)
        return lsp.Position(
            len(lines) - 1, self.workspace.position_codec.client_num_units(lines[-1])
        )

    # ── helpers for the requests ─────────────────────────────────────────────

    def since(self, uri: str) -> tuple[Analysis, Index, Since, bool] | None:
        """The document's analysis, its index (of the last version that parsed), how
        that version's places lead to the text the editor has now (:mod:`flowc.lsp.moves`),
        and whether the index's tree is still in its text's places: not once an edit that
        parsed moved it (its analysis dropped for a newer one, or not finished yet), and
        then only its findings are answered from. None when there is no index."""
        analysis = self.analyses.get(uri)
        log = self._logs.get(uri)
        if analysis is None or analysis.index is None or log is None:
            return None
        reparser = self.reparsers.get(uri)
        tree_kept = reparser is None or reparser.moved == analysis.moved
        index = analysis.index
        text = flow_text(self.workspace.get_text_document(uri).source)
        if log.text.text != text:  # (the log missed a change: the texts alone)
            now = SourceFile(log.text.name, text)
            return analysis, index, since(index.source, now, None), tree_kept
        return analysis, index, log.since(analysis, index.source, log.text, log.seq), tree_kept

    def outline(self, uri: str) -> tuple[Index, Since] | None:
        """The tree the outline and the folds are read from, and how its places lead to
        the text now: the last analysis' (:meth:`since`); while an edit that parsed is
        being analysed (it moved that analysis' tree), the re-parser's tree of that very
        text, in its own places. None when there is neither."""
        found = self.since(uri)
        if found is None:
            return None
        _, index, moves, tree_kept = found
        if tree_kept:
            return index, moves
        reparser = self.reparsers.get(uri)
        text = flow_text(self.workspace.get_text_document(uri).source)
        if reparser is None or reparser.text != text:
            return None
        flow = reparser.flow  # (after `text`: see Reparser.parse)
        if flow is None:
            return None
        now = Index(SourceFile(index.source.name, text), flow, None)
        return now, since(now.source, now.source, ())

    def lookup(self, uri: str, position: lsp.Position) -> Cursor | None:
        """The cursor in the version the document's index was built from (see
        :class:`Cursor`); None when there is no index or the cursor is in what an edit
        wrote since."""
        found = self.since(uri)
        if found is None:
            return None
        analysis, index, moves, tree_kept = found
        lines = text_lines(moves.new.text)
        at = self.workspace.position_codec.position_from_client_units(lines, position)
        old = moves.cursor(at.line + 1, at.character)
        if old is None:
            return None
        now = (at.line + 1, at.character)
        fresh = analysis.seq == self._logs[uri].seq and analysis.errors != ()
        names_kept = tree_kept or self._named.get(uri) is index
        return Cursor(analysis, index, old[0], old[1], moves, now, fresh, tree_kept, names_kept)

    def place(self, moves: Since, span: Span, lines: Sequence[str]) -> lsp.Range | None:
        """A span of the last version that parsed as a range of the text the editor has
        now (``lines``: its lines); None when an edit since replaced part of it."""
        moved = moves.span(span)
        return None if moved is None else self.to_range(moved, lines)


@attrs.frozen
class Cursor:
    """A request's cursor: in the version of the document ``index`` was built from
    (``line``, 1-based, and ``column``, 0-based, as flowc counts them), and in the text
    the editor has now (``now``), which the edits since the index (``moves``) lead to.
    ``fresh``: the analysis is of the text the editor has now (its syntax errors are
    in its places). ``tree_kept``: the index's tree is still in its text's places (see
    :meth:`FlowcServer.since`); ``names_kept``: its names are in their places (its
    tree is, or they were listed before it moved), so they are looked up; else only
    findings are."""

    analysis: Analysis
    index: Index
    line: int
    column: int
    moves: Since
    now: tuple[int, int]
    fresh: bool
    tree_kept: bool
    names_kept: bool

    def under(self, span: Span) -> Span | None:
        """``span``, of the index's version, in the text now when the cursor is in it
        there (end included, as for a name); else None (an edit since changed it, or the
        cursor is not in it)."""
        moved = self.moves.span(span)
        if moved is None:
            return None
        inside = (
            (moved.line, moved.column - 1) <= self.now <= (moved.end_line, moved.end_column - 1)
        )
        return moved if inside else None

    def line_kept(self) -> bool:
        """Whether the cursor's line reads the same now as in the index's version."""
        return self.moves.new.line_text(self.now[0]) == self.index.source.line_text(self.line)


class RequestFailed(JsonRpcException):
    """A request the server understood but cannot answer (a refused rename, a diagram of
    a flow with errors): the response's error, whose message the editor shows."""

    CODE = -32803  # RequestFailed


class InternalError(JsonRpcInternalError):
    """The answer to a request a bug in flowc stopped (already logged, see
    :meth:`FlowcServer.internal_error`): its message is the internal error's line."""
