"""The hub's re-fold of a stored run (``hydrate``, ``replay``, ``resume``, a worker):
a record that passes the stored definition of a record but that the adapter refuses (a
hand-off to a speaker who is no participant) breaks the WAL there, as does a plugin's
code failing on it; a bug in flowc met while folding is an internal error (exit 2, a
worker counts it internal), never "envelope N cannot be folded" (a broken WAL: the
user's data blamed for flowc's bug)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import flowc.runtime.adapters.workflow as workflow
from flowc.cli import main
from flowc.runtime.adapters.base import ProtocolError
from flowc.runtime.adapters.workflow import WorkflowAdapter
from flowc.runtime.hub import Hub
from flowc.runtime.stores import open_store
from tests.stored_runs import copy_with, store_run


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[tuple[int, Any]]]:
    """A closed run of examples/context_routing.flow written by the real `flowc run`:
    the database, the run id and its rows ``(seq, envelope)``."""
    return store_run(tmp_path_factory.mktemp("refold"))


def _replay(db: Path, cid: str) -> Any:
    async def replay() -> Any:
        hub = await Hub.open(open_store(str(db)))
        try:
            return hub.replay(cid)
        finally:
            await hub.close()

    return asyncio.run(replay())


def _bug_in_flowc(error: type[Exception]) -> Callable[..., Any]:
    """A ``fold`` that raises ``error`` from a frame of flowc's own workflow adapter (a
    bug in flowc: not a plugin's code, which is outside flowc)."""
    space: dict[str, Any] = {"error": error}
    source = "def fold(self, envelope, state):\n    raise error('injected fault in fold')\n"
    exec(compile(source, workflow.__file__, "exec"), space)
    fold: Callable[..., Any] = space["fold"]
    return fold


def test_a_well_typed_record_the_adapter_refuses_breaks_the_wal(
    stored: tuple[Path, str, list[tuple[int, Any]]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    db, cid, rows = stored
    seq, env = rows[2][0], copy.deepcopy(rows[2][1])  # triage's packet, the third record
    env["event_data"]["routing"] = {"kind": "handoff", "target": "nobody", "reason": ""}
    damaged = copy_with(db, tmp_path, seq, env)
    broken = (
        f"envelope 3 ({env['envelope_id']}) cannot be folded (ProtocolError: handoff to "
        "'nobody', which is not a participant of this channel)"
    )
    assert _replay(damaged, cid).broken == broken

    async def hydrate() -> None:
        hub = await Hub.open(open_store(str(damaged)))
        try:
            with pytest.raises(ProtocolError) as caught:
                await hub.hydrate([cid], schedule=False)
            assert str(caught.value) == f"run {cid}: the WAL is broken at {broken}"
        finally:
            await hub.close()

    asyncio.run(hydrate())
    assert main(["replay", cid, "--db", str(damaged)]) == 1
    out, err = capsys.readouterr()
    assert broken in out + err and "internal error" not in err, (out, err)


def test_a_plugins_code_failing_on_a_stored_record_breaks_the_wal(
    stored: tuple[Path, str, list[tuple[int, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code outside flowc (here: this file's, as a plugin's condition is) that raises
    while a record is folded: the run cannot be rebuilt past it, said as such."""
    db, cid, rows = stored

    def plugin(self: Any, envelope: Any, state: Any) -> Any:
        raise ZeroDivisionError("a plugin's bug")

    monkeypatch.setattr(WorkflowAdapter, "fold", plugin)
    envelope_id = rows[1][1]["envelope_id"]
    assert _replay(db, cid).broken == (
        f"envelope 2 ({envelope_id}) cannot be folded (ZeroDivisionError: a plugin's bug)"
    )


@pytest.mark.parametrize("error", [AttributeError, KeyError, TypeError])
def test_a_bug_in_flowc_while_refolding_is_an_internal_error(
    error: type[Exception],
    stored: tuple[Path, str, list[tuple[int, Any]]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A bug in flowc's fold was caught as "a damaged envelope": `flowc replay` and
    `flowc resume` said the WAL was broken (exit 1), the user's data blamed."""
    db, cid, _ = stored
    monkeypatch.setattr(WorkflowAdapter, "fold", _bug_in_flowc(error))
    with pytest.raises(error, match="injected fault in fold"):
        _replay(db, cid)
    for command in ("replay", "resume"):
        assert main([command, cid, "--db", str(db)]) == 2
        out, err = capsys.readouterr()
        assert f"flowc {command}: internal error: " in err and "injected fault" in err, err
        assert "cannot be folded" not in out + err and "broken" not in out + err, (out, err)


def test_a_worker_counts_a_bug_in_flowc_while_refolding_as_internal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker takes up a stalled run whose log grew by re-folding its WAL: a bug in
    flowc's fold there is an internal error, not a run it fails as broken."""
    from flowc.runtime.wal import MemoryStore
    from flowc.runtime.worker import Worker, submit_run
    from tests.runtime.test_internal_errors import SCRIPT as LOOP_SCRIPT
    from tests.runtime.test_internal_errors import _target

    store = MemoryStore()
    errors: list[tuple[str, BaseException]] = []

    async def until(worker: Worker, done: Callable[[], bool]) -> None:
        task = asyncio.ensure_future(worker.serve())
        while not done():
            await asyncio.sleep(0.01)
        worker.stop()
        await task

    async def serve() -> Worker:
        await submit_run(store, _target(), LOOP_SCRIPT)
        first = Worker(store, poll_seconds=0.01)
        await until(first, lambda: first.stats.stalled == 1)
        # a person answers the turn it stalled on: its log grows, a worker takes it again
        (cid,) = store.channel_ids()
        hub = await Hub.open(store)
        await hub.hydrate([cid], schedule=False)
        await hub.register_human("user").send(cid, "d")
        await hub.close(close_store=False)
        monkeypatch.setattr(WorkflowAdapter, "fold", _bug_in_flowc(AttributeError))
        second = Worker(store, poll_seconds=0.01, on_error=lambda c, e: errors.append((c, e)))
        await until(second, lambda: second.stats.failed + second.stats.stalled >= 1)
        return second

    worker = asyncio.run(asyncio.wait_for(serve(), 60))
    assert (worker.stats.failed, worker.stats.internal) == (1, 1)
    assert [(type(err), str(err)) for _, err in errors] == [
        (AttributeError, "injected fault in fold")
    ]
