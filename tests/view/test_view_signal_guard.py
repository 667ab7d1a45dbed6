"""``flowc view`` through the Python API (``flowc.cli.main``) on a thread other than the
main one: only the main thread may set a signal handler, so the command leaves SIGINT
alone there, serves and returns as on the main thread."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

from tests.stored_runs import store_run

pytest.importorskip("uvicorn")


def test_view_off_the_main_thread_leaves_sigint_alone(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    import flowc.commands.view
    from flowc.cli import main

    db, _, _ = store_run(workdir)
    served: list[str] = []
    # the server stops at once: what is tested is what comes around it
    monkeypatch.setattr(
        uvicorn.Server,
        "run",
        lambda self, sockets=None: served.append(threading.current_thread().name),
    )
    monkeypatch.setattr(flowc.commands.view, "_desktop", lambda: False)
    before = signal.getsignal(signal.SIGINT)
    codes: list[int] = []
    errors: list[BaseException] = []

    def view() -> None:
        try:
            codes.append(main(["view", "--db", str(db)]))
        except BaseException as err:  # what the thread would otherwise only print
            errors.append(err)

    thread = threading.Thread(target=view, name="api-caller")
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert errors == [] and codes == [0]
    assert served == ["api-caller"]
    assert signal.getsignal(signal.SIGINT) is before
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "(Ctrl-C stops the server)" and err == ""
