"""The server's analysis loop in process: when an edit is analysed (at once after a quiet
spell, else debounced), a stale analysis dropped, and the diagnostics' JSON, written by
flowc itself and kept between versions, equal to what pygls would write."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import weakref
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.workspace import Workspace

from flowc.compiler.analysis import check_source
from flowc.diagnostics import Diagnostic
from flowc.lsp import core
from flowc.lsp.core import DEBOUNCE_SECONDS, FlowcServer
from flowc.lsp.server import make_server
from flowc.source import SourceFile
from tests.check.test_proofs import DEAD
from tests.lsp.client import TRAP

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_compile import generate  # noqa: E402


class Sink:
    """The server's output: the messages it wrote, decoded."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        pass

    def messages(self) -> list[dict[str, Any]]:
        out, rest = [], self.data
        while rest:
            header, _, rest = rest.partition(b"\r\n\r\n")
            size = int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            out.append(json.loads(rest[:size]))
            rest = rest[size:]
        return out


def server_with(
    tmp_path: Path, text: str, encoding: lsp.PositionEncodingKind = lsp.PositionEncodingKind.Utf16
) -> tuple[FlowcServer, Sink, str]:
    server = make_server()
    sink = Sink()
    server.protocol.set_writer(sink)
    server.protocol._workspace = Workspace(
        tmp_path.as_uri(), lsp.TextDocumentSyncKind.Incremental, [], encoding
    )
    uri = (tmp_path / "f.flow").as_uri()
    server.workspace.put_text_document(lsp.TextDocumentItem(uri, "flow", 1, text))
    return server, sink, uri


def edit(server: FlowcServer, uri: str, version: int, text: str) -> None:
    server.workspace.update_text_document(
        lsp.VersionedTextDocumentIdentifier(version, uri),
        lsp.TextDocumentContentChangeWholeDocument(text),
    )


def pygls_json(
    server: FlowcServer,
    uri: str,
    version: int,
    text: str,
    found: tuple[Diagnostic, ...] | None = None,
) -> dict[str, Any]:
    """The notification as pygls writes it (lsprotocol's objects, cattrs, json.dumps) for
    ``found``, by default ``check_source``'s findings."""
    lines = text.splitlines(keepends=True)
    if found is None:
        found = check_source(SourceFile(str(Path(uri.removeprefix("file://"))), text))
    params = lsp.PublishDiagnosticsParams(
        uri, [server.lsp_diagnostic(d, lines) for d in found], version
    )
    message = lsp.PublishDiagnosticsNotification(params=params)
    result: dict[str, Any] = json.loads(
        json.dumps(message, default=server.protocol._serialize_message)
    )
    return result


@pytest.mark.parametrize(
    "encoding", [lsp.PositionEncodingKind.Utf16, lsp.PositionEncodingKind.Utf8]
)
def test_diagnostics_json_is_pyglss_and_survives_edits(
    tmp_path: Path, encoding: lsp.PositionEncodingKind
) -> None:
    big = generate(300)
    texts = [
        TRAP + 'when context.approved == "ab" then ghost\n',
        # not ASCII, the finding at the same characters: its columns in UTF-16 or UTF-8 are
        # not, so its JSON is not taken from the version before
        TRAP + 'when context.approved == "é🙂" then ghost\n',
        TRAP,
        "# the writer\n" + TRAP.replace("max_turns 12", "max_turns 120"),  # lines, columns move
        TRAP.replace("speaker drafter\n", 'speaker drafter  # "é"\n'),
        big,
        big.replace("then agent_4", "then agent_5", 3),  # findings change, most stay
        big + "when from agent_1 then agent_2\n",
        "# again\n" + TRAP,
        TRAP + "when from",  # a syntax error at the end: past the last line's end
        TRAP.replace("speaker drafter\n", "speaker drafter  # é\n") + "when from",
        TRAP,
    ]
    server, sink, uri = server_with(tmp_path, texts[0], encoding)
    codes: list[str] = []
    for version, text in enumerate(texts, start=1):
        if version > 1:
            edit(server, uri, version, text)
        server.analyse(uri)
        written = sink.messages()[-1]
        found = server.analyses[uri].diagnostics
        assert written == pygls_json(server, uri, version, text, found)
        if text.endswith("from"):  # the syntax error and the last analysis that parsed
            # (every one of its findings: the edits since, a line removed above them and
            # text added at the end or after a line's code, replaced none of their text)
            assert [d.code.id for d in found] == ["E001", *codes]
            assert server._converted[uri]  # the JSON kept for the next version that parses
        else:
            assert written == pygls_json(server, uri, version, text)
            codes = [d.code.id for d in found]
    assert len(sink.messages()) == len(texts)


def test_an_edit_after_a_quiet_spell_is_analysed_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _, uri = server_with(tmp_path, TRAP)
    clock = [100.0]
    monkeypatch.setattr(core, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    delays: list[float] = []
    monkeypatch.setattr(server, "schedule", lambda _uri, delay: delays.append(delay))
    server.changed(uri)  # the first edit
    clock[0] += DEBOUNCE_SECONDS / 5
    server.changed(uri)  # typing on: debounced
    clock[0] += DEBOUNCE_SECONDS / 5
    server.changed(uri)
    clock[0] += DEBOUNCE_SECONDS * 2
    server.changed(uri)  # quiet again
    with server._running:  # an analysis is running: wait for the burst's end
        clock[0] += DEBOUNCE_SECONDS * 2
        server.changed(uri)
    assert delays == [0, DEBOUNCE_SECONDS, DEBOUNCE_SECONDS, 0, DEBOUNCE_SECONDS]


@pytest.mark.asyncio
async def test_a_stale_analysis_is_dropped(tmp_path: Path) -> None:
    server, sink, uri = server_with(tmp_path, TRAP)
    server.schedule(uri, 0)
    while uri not in server.analyses:
        await asyncio.sleep(0.01)
    job = server._job(uri)  # an analysis of version 1 (the text has not changed)...
    fixed = TRAP.replace("priority 100", "priority -1")
    edit(server, uri, 2, fixed)
    server.changed(uri)  # ...made stale by an edit
    assert server._run(job) is None
    while server.analyses[uri].version != 2:
        await asyncio.sleep(0.01)
    assert [m["params"]["version"] for m in sink.messages()] == [1, 2]
    assert sink.messages()[-1] == pygls_json(server, uri, 2, fixed)
    # closed: an analysis still running is dropped too
    job = server._job(uri)
    server.closed(uri)
    assert server._run(job) is None


@pytest.fixture(autouse=True)
def _unfrozen() -> Any:
    """The server freezes what its analyses made (see below): not the test session's."""
    yield
    gc.unfreeze()


def test_an_analysis_is_frozen_and_collected_when_idle(tmp_path: Path) -> None:
    """What an analysis made is moved out of the collector's generations (no pass of the
    collector walks a large file's trees after each edit), and cyclic garbage is
    collected when the server is idle."""
    server, _, uri = server_with(tmp_path, generate(50))
    gc.unfreeze()
    gc.collect()
    server.analyse(uri)
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    assert frozen > 1000
    assert len(gc.get_objects(generation=2)) < frozen

    class Cycle:
        pass

    garbage = Cycle()
    garbage.me = garbage  # type: ignore[attr-defined]
    gone = weakref.ref(garbage)
    del garbage
    gc.freeze()  # as if an analysis had frozen it
    gc.collect()
    assert gone() is not None  # a frozen cycle is not collected...
    server.collect()
    assert gone() is None  # ...until the server is idle
    assert gc.get_freeze_count() > 0


def test_the_editors_check_leaves_out_the_proofs_only_the_diagram_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server checks without working out which finding proves each dead rule (a
    few tens of ms an edit at 10,000 rules): only `render --check` draws them; the
    findings it publishes are `flowc check`'s all the same."""
    from flowc.compiler.analysis import proven

    def refused(*args: Any) -> Any:
        raise AssertionError("the editor's check worked out the proofs")

    text = DEAD  # a W203 that proves two rules dead, a W201 one
    server, _, uri = server_with(tmp_path, text)
    monkeypatch.setattr(proven, "with_proofs", refused)
    server.analyse(uri)
    found = server.analyses[uri].diagnostics
    monkeypatch.undo()
    checked = check_source(SourceFile(str(tmp_path / "f.flow"), text))
    assert found == checked and any(d.dead_rules for d in checked)
    assert not any(d.dead_rules for d in found)
