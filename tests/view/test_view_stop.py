"""Ctrl-C on `flowc view` while pages stream a run that has not closed: the streams end
by themselves and the server stops quietly (exit 0, nothing on stderr), instead of
uvicorn printing each stream, cancelled mid-answer, as an error with its traceback."""

from __future__ import annotations

import signal
import sqlite3
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.stored_runs import store_run
from tests.view.conftest import ViewServer, wait_for

pytest.importorskip("uvicorn")


@contextmanager
def serving(db: Path, workdir: Path) -> Iterator[ViewServer]:
    """`flowc view` of ``db`` in a subprocess, stopped (if it still runs) on the way out."""
    server = ViewServer(db, cwd=workdir)
    try:
        yield server
    finally:
        server.stop()


def ctrl_c(server: ViewServer) -> str:
    """Ctrl-C (SIGINT) to the server, and what it wrote on stderr before it exited."""
    server.proc.send_signal(signal.SIGINT)
    server.proc.wait(timeout=15)
    assert server.proc.stderr is not None
    return server.proc.stderr.read()


def test_ctrl_c_with_streams_open_on_an_unfinished_run_is_quiet(workdir: Path) -> None:
    db, cid, _ = store_run(workdir)
    con = sqlite3.connect(db)  # the run did not close: its streams never end by themselves
    con.execute("DELETE FROM wal WHERE event_type = 'ag2.channel.closed'")
    con.commit()
    con.close()
    read: list[bytes] = []

    def follow(server: ViewServer, path: str) -> None:
        url = f"{server.base}/api/run/{cid}/{path}?token={server.token}"
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                while chunk := answer.read1(1 << 16):
                    read.append(chunk)
        except OSError:
            pass

    streams: list[threading.Thread] = []
    try:
        with serving(db, workdir) as server:
            streams += [
                threading.Thread(target=follow, args=(server, p)) for p in ("events", "ag-ui")
            ]
            for stream in streams:
                stream.start()
            wait_for(lambda: len(read) >= 2, what="both streams under way")
            err = ctrl_c(server)
    finally:
        for stream in streams:
            stream.join(timeout=30)
    assert server.proc.returncode == 0
    assert err == ""


def test_ctrl_c_while_the_server_starts_is_quiet_too(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C once "(Ctrl-C stops the server)" is printed, before the server has started
    (here: while the browser is opened), stops it as documented: exit 0, nothing more
    said, its socket closed, the process's SIGINT handler as it was (it was 130, from
    the interrupt let through; and, a moment later, uvicorn's warnings on stderr)."""
    import os
    import socket
    import webbrowser

    import flowc.commands.view
    from flowc.cli import main

    db, _, _ = store_run(workdir)
    bound: list[socket.socket] = []
    real_socket = socket.socket

    def keep(*args: object, **kwargs: object) -> socket.socket:
        sock = real_socket(*args, **kwargs)  # type: ignore[arg-type]
        bound.append(sock)
        return sock

    def ctrl_c(url: str) -> bool:
        os.kill(os.getpid(), signal.SIGINT)
        return True

    monkeypatch.setattr(socket, "socket", keep)
    monkeypatch.setattr(flowc.commands.view, "_desktop", lambda: True)
    monkeypatch.setattr(webbrowser, "open", ctrl_c)
    before = signal.getsignal(signal.SIGINT)
    assert main(["view", "--db", str(db)]) == 0
    assert signal.getsignal(signal.SIGINT) is before
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "(Ctrl-C stops the server)" and err == ""
    assert bound and all(s.fileno() == -1 for s in bound)


@pytest.mark.parametrize("attempt", range(3))
def test_ctrl_c_at_once_after_the_ready_line_exits_0(workdir: Path, attempt: int) -> None:
    db, _, _ = store_run(workdir)
    with serving(db, workdir) as server:
        assert server.proc.stdout is not None
        assert server.proc.stdout.readline() == "(Ctrl-C stops the server)\n"
        err = ctrl_c(server)
    assert (server.proc.returncode, err) == (0, "")
