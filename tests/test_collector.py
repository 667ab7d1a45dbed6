"""The cycle collector belongs to the entry points (flowc.collector): library functions
leave it as they found it, in any thread, and only flowc.collector imports gc."""

from __future__ import annotations

import ast
import gc
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import flowc
from flowc import collector

ROOT = Path(flowc.__file__).parent
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "feedback_loop.flow"
#: parses with the descent parser, then a flow that only Lark's parser words the error of
BROKEN = "speaker a\nwhen from a then\n"


def _parse_error(_: Path) -> None:
    with pytest.raises(flowc.FlowError):
        flowc.parse(BROKEN)


def _lsp_analysis(tmp_path: Path) -> None:
    from tests.lsp.test_server_core import server_with

    server, _sink, uri = server_with(tmp_path, EXAMPLE.read_text())
    job = server._job(uri)
    assert server._run(job) is not None  # the analysis, as its thread runs it


CALLS: dict[str, Callable[[Path], object]] = {
    "parse": lambda _: flowc.parse(EXAMPLE.read_text(), str(EXAMPLE)),
    "parse an error": _parse_error,
    "compile_flow": lambda _: flowc.compile_flow(EXAMPLE.read_text()),
    "check": lambda _: flowc.check(str(EXAMPLE)),
    "format_source": lambda _: flowc.format_source(EXAMPLE.read_text()),
    "the language server's analysis": _lsp_analysis,
}


@pytest.mark.parametrize("enabled", [True, False], ids=["collector on", "collector off"])
@pytest.mark.parametrize("name", CALLS)
def test_library_functions_leave_the_collector_as_they_found_it(
    name: str, enabled: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Called from a thread of a program that has the collector on or off: no call in
    that thread switches it (even for a while), freezes or collects."""
    touched: list[str] = []
    failed: list[BaseException] = []

    def call() -> None:
        try:
            for _ in range(2):
                CALLS[name](tmp_path)
        except BaseException as err:  # reported in the test's own thread
            failed.append(err)

    worker = threading.Thread(target=call)
    for what in ("enable", "disable", "freeze", "unfreeze", "collect", "set_threshold"):
        real = getattr(gc, what)

        def spy(*args: object, _real: Callable[..., object] = real, _what: str = what) -> object:
            if threading.current_thread() is worker:
                touched.append(_what)
            return _real(*args)

        monkeypatch.setattr(gc, what, spy)

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        worker.start()
        worker.join()
        assert not failed, failed
        assert touched == []
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_only_the_collector_module_imports_gc() -> None:
    importers = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if "gc" in names:
                importers.append(path.relative_to(ROOT).as_posix())
    assert importers == ["collector.py"]


def test_hold_and_release_put_the_collector_back() -> None:
    was = gc.isenabled()
    try:
        gc.enable()
        held = collector.hold()
        assert held and not gc.isenabled()
        collector.release(held)
        assert gc.isenabled()
        gc.disable()
        held = collector.hold()  # off already: kept off
        assert not held and not gc.isenabled()
        collector.release(held)
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_it_works_without_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    """An interpreter without gc.freeze (e.g. another implementation) still runs."""
    monkeypatch.delattr(gc, "freeze")
    monkeypatch.delattr(gc, "unfreeze")
    collector.freeze()
    collector.collect_all()
    collector.release(collector.hold())
