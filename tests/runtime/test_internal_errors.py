"""A bug in flowc met while a run goes on (an exception nothing expects, outside the
agent's own call) is an internal error: `flowc run` exits 2 with one line (never 1, the
status of a run that stalled, and never a hang), and `flowc worker` reports the run as
failed, does not try it again, serves on, and exits 2 when stopped.

The agent's own failures are not internal errors: they stall the run (tests/runtime)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main
from flowc.runtime.adapters.workflow import WorkflowAdapter
from flowc.runtime.script import parse_script
from flowc.runtime.script_run import run_script, run_script_sync
from flowc.runtime.target import RunTarget
from flowc.runtime.wal import MemoryStore
from flowc.runtime.worker import Worker, submit_run
from tests.runtime.worker_harness import ROOT, events, wait_until

#: a human and a scripted agent taking turns: the human's turns go through the script
#: driver's relay, the agent's through the hub's turn tasks
LOOP = """speaker user: human
speaker bot {
  tool go hands off to user
}
when from user then bot
when from bot then user
"""
SCRIPT = {"script": {"user": ["a", "b", "c"], "bot": ["x", "y", "z"]}}
HINT = " (run it again with --traceback to see where)\n"


def _target() -> RunTarget:
    import flowc

    return RunTarget.from_compiled(flowc.compile_flow(LOOP))


def _fail_on_call(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, nth: int) -> None:
    """``owner.name`` raises RuntimeError on its ``nth`` call (and works otherwise)."""
    real = getattr(owner, name)
    calls = [0]

    def broken(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == nth:
            raise RuntimeError(f"injected fault in {name}")
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, broken)


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "loop.flow").write_text(LOOP)
    (tmp_path / "loop.json").write_text(json.dumps(SCRIPT))
    return str(tmp_path / "loop.flow"), str(tmp_path / "loop.json")


# ── flowc run ─────────────────────────────────────────────────────────────────


def test_a_fault_in_an_agents_turn_is_exit_2_not_a_stalled_run(
    inputs: tuple[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The turn task failed after the agent answered (building its round): before, the
    run was reported as stalled (exit 1)."""
    _fail_on_call(monkeypatch, WorkflowAdapter, "build_round_envelopes", 2)
    monkeypatch.delenv("FLOWC_TRACEBACK", raising=False)
    flow, script = inputs
    assert main(["run", flow, "--script", script, "--db", ":memory:"]) == 2
    out, err = capsys.readouterr()
    assert "stalled" not in out
    assert err == (
        "flowc run: internal error: RuntimeError: injected fault in "
        "build_round_envelopes; please report it with the command and the input" + HINT
    )


def test_a_fault_in_a_scripted_humans_turn_stops_the_run(
    inputs: tuple[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A turn the script driver posts for a human: before, the error went to the event
    loop's log and the run waited for ever."""
    import flowc.runtime.script_run as script_run

    _fail_on_call(monkeypatch, script_run, "post_turn", 2)
    with pytest.raises(RuntimeError, match="injected fault in post_turn"):
        run_script_sync(_target(), parse_script(SCRIPT), timeout=60)
    _fail_on_call(monkeypatch, script_run, "post_turn", 3)
    monkeypatch.delenv("FLOWC_TRACEBACK", raising=False)
    flow, script = inputs
    done: list[int] = []

    async def in_a_thread() -> None:  # a hang fails the test instead of blocking it
        done.append(
            await asyncio.wait_for(
                asyncio.to_thread(main, ["run", flow, "--script", script, "--db", ":memory:"]), 60
            )
        )

    asyncio.run(in_a_thread())
    assert done == [2]
    assert capsys.readouterr().err == (
        "flowc run: internal error: RuntimeError: injected fault in post_turn; please "
        "report it with the command and the input" + HINT
    )


def test_an_asker_that_fails_stops_the_run() -> None:
    """A human with no scripted turn left is asked; the asker raising stops the run
    (before: the run waited for ever) and run_script raises its exception."""

    async def asker(name: str, turn: Any) -> str | None:
        raise OSError("the terminal went away")

    async def go() -> None:
        script = parse_script({"kickoff": "hi", "script": {"bot": ["x"]}})
        await asyncio.wait_for(run_script(_target(), script, ask_human=asker), 60)

    with pytest.raises(OSError, match="the terminal went away"):
        asyncio.run(go())


def test_a_fault_in_the_printer_is_exit_2_not_a_run_printed_in_part(
    tmp_path: Path,
    inputs: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`flowc run`'s printer (a watcher) failing is dropped so the run goes on, and was
    lost: the output stopped mid-run and the exit status was the run's (0 here)."""
    from flowc.commands.run_output import RunPrinter

    _fail_on_call(monkeypatch, RunPrinter, "turn", 2)
    monkeypatch.delenv("FLOWC_TRACEBACK", raising=False)
    db = str(tmp_path / "runs.db")
    flow = str(ROOT / "examples" / "feedback_loop.flow")
    script = str(ROOT / "examples" / "scripts" / "feedback_loop.yaml")
    assert main(["run", flow, "--script", script, "--db", db]) == 2
    assert capsys.readouterr().err == (
        "flowc run: internal error: RuntimeError: injected fault in turn; please report it "
        "with the command and the input" + HINT
    )
    monkeypatch.undo()
    assert main(["log", "last", "--db", db]) == 0  # the run itself went on and closed
    assert '"approved"' in capsys.readouterr().out


def test_the_run_stays_open_for_resume(
    tmp_path: Path, inputs: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the run wrote before the fault is kept; `flowc resume` continues it."""
    _fail_on_call(monkeypatch, WorkflowAdapter, "build_round_envelopes", 2)
    flow, script = inputs
    db = str(tmp_path / "runs.db")
    assert main(["run", flow, "--script", script, "--db", db]) == 2
    monkeypatch.undo()
    assert main(["resume", "last", "--script", script, "--db", db]) == 1  # user has no turn left


# ── flowc worker ──────────────────────────────────────────────────────────────


def test_a_worker_fails_the_run_and_serves_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's task for one run failed: before, nobody heard of it (the task's
    exception was never retrieved) and the run stayed claimed until its lease expired."""
    import flowc.runtime.worker as worker_module

    _fail_on_call(monkeypatch, worker_module, "resume_script", 1)
    store = MemoryStore()
    seen: list[tuple[str, str, str]] = []
    errors: list[tuple[str, BaseException]] = []

    async def serve() -> tuple[list[str], Worker]:
        ids = [await submit_run(store, _target(), SCRIPT) for _ in range(2)]
        worker = Worker(
            store,
            poll_seconds=0.01,
            on_event=lambda *e: seen.append(e),
            on_error=lambda cid, err: errors.append((cid, err)),
        )
        task = asyncio.ensure_future(worker.serve())
        while worker.stats.failed + worker.stats.stalled + worker.stats.closed < 2:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # (another look for runs: the failed one is not taken)
        worker.stop()
        await task
        return ids, worker

    ids, worker = asyncio.run(asyncio.wait_for(serve(), 60))
    [(failed, detail)] = [(cid, d) for what, cid, d in seen if what == "failed"]
    assert detail == (
        "internal error: RuntimeError: injected fault in resume_script; please "
        "report it with the command and the input"
    )
    assert [(cid, str(err)) for cid, err in errors] == [(failed, "injected fault in resume_script")]
    assert (worker.stats.failed, worker.stats.internal) == (1, 1)
    assert [cid for what, cid, _ in seen if what == "stalled"] == [c for c in ids if c != failed]
    assert store.lease_of(failed) is None


def test_a_worker_tells_a_bug_during_the_run_from_a_damaged_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A KeyError (or TypeError, ValueError) that a bug in flowc raises while the run
    goes on (the hub crashes, resume_script raises it) is an internal error, not a run
    the worker takes for damaged (which it fails quietly, with exit 0)."""
    import flowc.runtime.script_run as script_run

    real = script_run.post_turn
    calls = [0]

    def broken(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 2:
            raise KeyError("injected fault in post_turn")
        return real(*args, **kwargs)

    monkeypatch.setattr(script_run, "post_turn", broken)
    worker, errors = _serve_one_run()
    assert (worker.stats.failed, worker.stats.internal) == (1, 1)
    assert [type(err) for _, err in errors] == [KeyError]


def _serve_one_run() -> tuple[Worker, list[tuple[str, BaseException]]]:
    """A worker on a fresh store with one submitted run, served until that run failed,
    stalled or closed; the worker, and the errors it reported."""
    store = MemoryStore()
    errors: list[tuple[str, BaseException]] = []

    async def serve() -> Worker:
        await submit_run(store, _target(), SCRIPT)
        worker = Worker(
            store, poll_seconds=0.01, on_error=lambda cid, err: errors.append((cid, err))
        )
        task = asyncio.ensure_future(worker.serve())
        while worker.stats.failed + worker.stats.stalled + worker.stats.closed < 1:
            await asyncio.sleep(0.01)
        worker.stop()
        await task
        return worker

    return asyncio.run(asyncio.wait_for(serve(), 60)), errors


@pytest.mark.parametrize("error", [TypeError, AttributeError, KeyError, ValueError])
def test_a_bug_while_a_worker_reads_a_run_is_an_internal_error(
    monkeypatch: pytest.MonkeyPatch, error: type[Exception]
) -> None:
    """A bug met while the worker reads a submitted run's opening (here: the script
    stored with it) is an internal error, not a run the worker takes for damaged and
    fails quietly (the worker caught KeyError, TypeError and ValueError as damage)."""
    import flowc.runtime.worker as worker_module

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise error("injected fault in run_script_of")

    monkeypatch.setattr(worker_module, "run_script_of", broken)
    worker, errors = _serve_one_run()
    assert (worker.stats.failed, worker.stats.internal) == (1, 1)
    assert [type(err) for _, err in errors] == [error]


#: imported by Python at start-up (on PYTHONPATH): the worker's first run fails
SITECUSTOMIZE = """
import flowc.runtime.worker

real = flowc.runtime.worker.resume_script
calls = []

async def resume_script(*args, **kwargs):
    calls.append(1)
    if len(calls) == 1:
        raise RuntimeError("injected fault in resume_script")
    return await real(*args, **kwargs)

flowc.runtime.worker.resume_script = resume_script
"""


@pytest.mark.parametrize("traceback", [False, True])
def test_a_worker_process_exits_2_after_an_internal_error(
    tmp_path: Path, inputs: tuple[str, str], traceback: bool
) -> None:
    flow, script = inputs
    db = str(tmp_path / "shared.db")
    assert main(["submit", flow, "--script", script, "--db", db, "--count", "2"]) == 0
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent(SITECUSTOMIZE))
    env = {k: v for k, v in os.environ.items() if k != "FLOWC_TRACEBACK"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    if traceback:
        env["FLOWC_TRACEBACK"] = "1"
    log = tmp_path / "worker.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "flowc", "worker", "--db", db],
        stdout=log.open("wb"),
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    try:
        wait_until(
            lambda: events(log, "failed") and events(log, "stalled"),
            60,
            "a failed run and a stalled one",
            [proc],
        )
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2
    [failed] = events(log, "failed")
    text = log.read_text()
    assert (
        f"failed {failed} internal error: RuntimeError: injected fault in resume_script; "
        "please report it with the command and the input\n"
    ) in text
    assert "1 failed (1 by an internal error)\n" in text
    if traceback:
        assert err.decode().startswith("Traceback (most recent call last):\n")
        assert err.decode().endswith(
            f"flowc worker: run {failed}: internal error: RuntimeError: injected fault in "
            "resume_script; please report it with the command and the input\n"
        )
    else:
        assert err.decode() == ""
