"""The hub's re-fold of a stored run (``hydrate``, ``replay``, ``resume``, a worker):
a record that passes the stored definition of a record but that the adapter refuses (a
hand-off to a speaker who is no participant) breaks the WAL there, as does a plugin's
code failing on it."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

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
