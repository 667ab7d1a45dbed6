"""The hub's re-fold of a stored run (``hydrate``, ``replay``, ``resume``, a worker):
a record that passes the stored definition of a record but that the adapter refuses (a
hand-off to a speaker who is no participant) breaks the WAL there; a bug in flowc's own
code while a record is folded is an internal error, not a broken WAL."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main
from flowc.runtime.adapters.base import ProtocolError
from flowc.runtime.adapters.workflow import WorkflowAdapter
from flowc.runtime.hub import Hub
from flowc.runtime.stores import open_store
from tests.runtime.graphs import always, cond, graph, rule
from tests.runtime.test_plugin_boundary import flowc_bug
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


def test_a_bug_in_flowc_while_a_record_is_folded_is_an_internal_error(
    stored: tuple[Path, str, list[tuple[int, Any]]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """flowc's own code raising while a stored record is re-folded (here ``on_accepted``,
    failing in a library's frame) says nothing about the stored run: no broken WAL, but
    an internal error (a plugin failing on replay: tests/runtime/test_plugin_boundary.py)."""
    db, cid, _ = stored
    monkeypatch.setattr(WorkflowAdapter, "on_accepted", flowc_bug("on_accepted", "triage"))
    with pytest.raises(json.JSONDecodeError):
        _replay(db, cid)
    assert main(["replay", cid, "--db", str(db)]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("flowc replay: internal error: JSONDecodeError: "), err
    assert "broken" not in out + err and "cannot be folded" not in out + err


def test_hydrating_every_run_goes_past_one_that_flowc_fails_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``hydrate()`` (every run of the store): a bug in flowc on one run is logged as an
    internal error, with its traceback, and the other runs come back; asked for that run
    by its id, the error propagates."""
    db = str(tmp_path / "runs.db")
    g = graph("a", rule(always(), cond("round_robin")), max_turns=5)

    async def write() -> list[str]:
        hub = await Hub.open(open_store(db))
        a, _ = hub.register_human("a"), hub.register_human("b")
        ids = []
        for text in ("one", "two"):
            ch = await a.open("workflow", target=["b"], knobs={"graph": g})
            await ch.send(text)
            ids.append(ch.channel_id)
        await hub.close()
        return ids

    bad, good = asyncio.run(write())
    fold = WorkflowAdapter.fold

    def bug(self: Any, env: Any, state: Any) -> Any:
        if env.channel_id == bad:
            raise ZeroDivisionError("a bug in flowc")
        return fold(self, env, state)

    monkeypatch.setattr(WorkflowAdapter, "fold", bug)

    async def hydrate() -> None:
        hub = await Hub.open(open_store(db))
        try:
            with caplog.at_level(logging.ERROR, logger="flowc.runtime"):
                assert await hub.hydrate(schedule=False) == [good]
            with pytest.raises(ZeroDivisionError):
                await hub.hydrate([bad], schedule=False)
        finally:
            await hub.close()

    asyncio.run(hydrate())
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.getMessage() == f"run {bad}: internal error while it was re-folded; left as it is"
    assert record.exc_info is not None and record.exc_info[0] is ZeroDivisionError


def test_a_re_fold_failing_after_the_lease_is_taken_gives_the_lease_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The second re-fold (another writer appended before the lease was taken) raising:
    the lease is released, whether the run was named (the error propagates) or not
    (logged, and the others go on); another holder can take the run at once."""
    db = str(tmp_path / "runs.db")
    g = graph("a", rule(always(), cond("round_robin")), max_turns=5)

    async def write() -> str:
        hub = await Hub.open(open_store(db))
        a, _ = hub.register_human("a"), hub.register_human("b")
        ch = await a.open("workflow", target=["b"], knobs={"graph": g})
        await ch.send("one")
        await hub.close()
        return ch.channel_id

    cid = asyncio.run(write())
    refold = Hub._refold

    for names in ([cid], None):
        calls: list[int] = []

        def second_fails(self: Hub, envs: list[Any], calls: list[int] = calls) -> Any:
            calls.append(1)
            if len(calls) == 2:
                raise ZeroDivisionError("a bug in flowc")
            return refold(self, envs)

        monkeypatch.setattr(Hub, "_refold", second_fails)

        async def hydrate(names: list[str] | None) -> None:
            store = open_store(db)
            links = store.links
            # as if another writer appended before the lease was taken: re-read, re-fold
            monkeypatch.setattr(store, "links", lambda c: [*links(c), ("later", None)])
            hub = await Hub.open(store)
            try:
                if names is None:
                    assert await hub.hydrate(schedule=False) == []
                else:
                    with pytest.raises(ZeroDivisionError):
                        await hub.hydrate(names, schedule=False)
            finally:
                await hub.close()
            other = open_store(db)
            try:
                other.release(other.acquire(cid, "another holder", 30))  # free to take
            finally:
                other.close()

        asyncio.run(hydrate(names))
        assert len(calls) == 2
