"""Ctrl-C on `flowc view` while pages stream a run that has not closed: the streams end
by themselves and the server stops quietly (exit 0, nothing on stderr), instead of
uvicorn printing each stream, cancelled mid-answer, as an error with its traceback."""

from __future__ import annotations

import signal
import sqlite3
import threading
import urllib.request
from pathlib import Path

import pytest

from tests.stored_runs import store_run
from tests.view.conftest import ViewServer, wait_for

pytest.importorskip("uvicorn")


def test_ctrl_c_with_streams_open_on_an_unfinished_run_is_quiet(workdir: Path) -> None:
    db, cid, _ = store_run(workdir)
    con = sqlite3.connect(db)  # the run did not close: its streams never end by themselves
    con.execute("DELETE FROM wal WHERE event_type = 'ag2.channel.closed'")
    con.commit()
    con.close()
    server = ViewServer(db, cwd=workdir)
    read: list[bytes] = []

    def follow(path: str) -> None:
        url = f"{server.base}/api/run/{cid}/{path}?token={server.token}"
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                while chunk := answer.read1(1 << 16):
                    read.append(chunk)
        except OSError:
            pass

    streams = [threading.Thread(target=follow, args=(p,)) for p in ("events", "ag-ui")]
    try:
        for stream in streams:
            stream.start()
        wait_for(lambda: len(read) >= 2, what="both streams under way")
        server.proc.send_signal(signal.SIGINT)
        server.proc.wait(timeout=15)
        assert server.proc.stderr is not None
        err = server.proc.stderr.read()
    finally:
        server.stop()
        for stream in streams:
            stream.join(timeout=30)
    assert server.proc.returncode == 0
    assert err == ""
