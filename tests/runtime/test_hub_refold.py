"""The hub's re-fold of a stored run (``hydrate``, ``replay``, ``resume``, a worker):
a record that passes the stored definition of a record but that the adapter refuses (a
hand-off to a speaker who is no participant) breaks the WAL there; a bug in flowc's own
code while a record is folded is an internal error, not a broken WAL."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main
from flowc.runtime.adapters.base import ProtocolError
from flowc.runtime.adapters.workflow import WorkflowAdapter
from flowc.runtime.hub import Hub
from flowc.runtime.stores import open_store
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
