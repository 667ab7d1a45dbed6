"""A bug in flowc inside the language server never stops it: a request it breaks is
answered with the internal error's line (an LSP error), a notification or a document's
check it breaks is shown to the user once, and each is logged (stderr, the editor's log
of the server) with that line and its traceback, once. The server then answers the next
request as usual.

The server is ``tests.lsp.faulty_server`` (the real one, with faults put in), spoken to
over stdio as an editor does."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from tests.lsp.client import TRAP

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60  # seconds before a message that never comes fails the test


class Stdio:
    """A minimal LSP client over a server process's stdin and stdout."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.next_id = 0
        assert proc.stdout is not None
        threading.Thread(target=self._read, args=(proc.stdout,), daemon=True).start()

    def _read(self, out: IO[bytes]) -> None:
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = out.read(1)
                if not byte:
                    return
                header += byte
            size = int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            self.inbox.put(json.loads(out.read(size)))

    def send(self, method: str, params: Any, *, request: bool = False) -> int | None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        msg_id = None
        if request:
            self.next_id += 1
            msg_id = message["id"] = self.next_id
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return msg_id

    def until(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        for message in self.seen:
            if wanted(message):
                self.seen.remove(message)
                return message
        while True:
            message = self.inbox.get(timeout=WAIT)
            if wanted(message):
                return message
            self.seen.append(message)

    def request(self, method: str, params: Any) -> dict[str, Any]:
        msg_id = self.send(method, params, request=True)
        return self.until(lambda m: m.get("id") == msg_id and "method" not in m)


def _shown(client: Stdio, text: str) -> dict[str, Any]:
    return client.until(
        lambda m: m.get("method") == "window/showMessage" and m["params"]["message"] == text
    )


def test_the_server_reports_its_internal_errors_and_goes_on(tmp_path: Path) -> None:
    ok, crash = tmp_path / "ok.flow", tmp_path / "crash.flow"
    ok.write_text(TRAP)
    crash.write_text(TRAP)
    stderr = (tmp_path / "server.log").open("wb")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("FLOWC_TRACEBACK", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.lsp.faulty_server"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
    )
    try:
        client = Stdio(proc)
        client.request(
            "initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}
        )
        client.send("initialized", {})

        def open_doc(path: Path) -> None:
            client.send(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": path.as_uri(),
                        "languageId": "flow",
                        "version": 1,
                        "text": TRAP,
                    }
                },
            )

        open_doc(ok)
        client.until(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == ok.as_uri()
            )
        )
        # a notification: its check (at once, in the handler) fails
        open_doc(crash)
        opened = (
            "flowc lsp: textDocument/didOpen: internal error: RuntimeError: injected "
            "fault in the check; please report it with the command and the input"
        )
        _shown(client, opened)
        # an edit: its check (later, in the analysis thread) fails
        client.send(
            "textDocument/didChange",
            {
                "textDocument": {"uri": crash.as_uri(), "version": 2},
                "contentChanges": [{"text": TRAP + "\n"}],
            },
        )
        checked = (
            f"flowc lsp: checking {crash}: internal error: RuntimeError: injected fault "
            "in the check; please report it with the command and the input"
        )
        _shown(client, checked)
        # a request: answered with the internal error
        line = next(i for i, x in enumerate(TRAP.splitlines()) if x == "speaker drafter")
        hover = {"textDocument": {"uri": ok.as_uri()}, "position": {"line": line, "character": 9}}
        answer = client.request("textDocument/hover", hover)
        hovered = (
            "flowc lsp: textDocument/hover: internal error: RuntimeError: injected fault "
            "in hover; please report it with the command and the input"
        )
        assert answer["error"]["code"] == -32603 and answer["error"]["message"] == hovered
        # the same failure again: answered, logged, not shown twice
        assert client.request("textDocument/hover", hover)["error"]["message"] == hovered
        # and the server goes on
        symbols = client.request(
            "textDocument/documentSymbol", {"textDocument": {"uri": ok.as_uri()}}
        )
        assert "drafter" in [s["name"] for s in symbols["result"]]
        client.request("shutdown", None)
        client.send("exit", None)
        assert proc.wait(timeout=WAIT) == 0
        shown = [
            m["params"]["message"] for m in client.seen if m.get("method") == "window/showMessage"
        ]
        assert shown == [hovered]  # once (the other two were taken above)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr.close()
    log = (tmp_path / "server.log").read_text()
    for reported, times in ((opened, 1), (checked, 1), (hovered, 2)):
        assert log.count(reported + "\nTraceback (most recent call last):\n") == times, log
    assert log.count("Traceback (most recent call last):") == 4, log  # pygls adds none
