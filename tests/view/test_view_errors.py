"""What `flowc view` answers when a run cannot be read, by one rule: a damaged run is a
``422`` naming the run, its record and the JSON path; the store failing is a ``503``;
a bug in flowc (or its checker) is the server's plain ``500``, dressed up as nothing
else. The runs list and the stored graph's findings."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from flowc.runtime.adapters.base import DamagedRecord
from flowc.runtime.stores import open_store
from flowc.runtime.wal import WalError
from flowc.view.server import ViewSettings, make_app
from tests.stored_runs import TOKEN, rewrite_row
from tests.view.test_view_findings import PROPERTY_FLOW, PROPERTY_SCRIPT, stored_run


def _client(db: Path | str) -> TestClient:
    app = make_app(ViewSettings(str(db), TOKEN))
    return TestClient(app, base_url="http://127.0.0.1:8123", raise_server_exceptions=False)  # type: ignore[arg-type]


def test_the_store_failing_under_the_runs_list_is_a_503(
    run: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runs list answered 500 (a bug in flowc) when the store failed (a locked or
    unreachable database); the run page answers 503 for that, and so does the list."""
    db, _ = run
    store = open_store(str(db), readonly=True)
    kind = type(store)
    store.close()

    def locked(self: Any) -> list[str]:
        raise WalError(f"{db}: cannot read the WAL (database is locked)")

    monkeypatch.setattr(kind, "channel_ids", locked)
    listed = _client(db).get(f"/api/runs?token={TOKEN}")
    assert (listed.status_code, listed.json()) == (
        503,
        {"error": f"{db}: cannot read the WAL (database is locked)"},
    )


def _findings(db: Path, run_id: str) -> Any:
    return _client(db).get(f"/api/run/{run_id}/findings?token={TOKEN}")


def test_a_stored_property_flowc_never_writes_is_a_damaged_run(tmp_path: Path) -> None:
    """A stored property whose ``all`` holds one condition (a `.flow` file's `and` joins
    two or more): the checker failed on it (a 500, "the checker failed on this run:
    AttributeError: 'TurnIs' object has no attribute 'name'"); the run is damaged, said
    by its page and its findings in the one wording."""
    db, run_id = stored_run(tmp_path, PROPERTY_FLOW, PROPERTY_SCRIPT)
    con = sqlite3.connect(db)
    seq, raw = con.execute("SELECT seq, envelope FROM wal ORDER BY seq LIMIT 1").fetchone()
    con.close()
    opening = json.loads(raw)
    a_first = opening["event_data"]["metadata"]["labels"]["properties"][1]
    assert a_first["name"] == "a_first"
    del a_first["pattern"]["p"]["all"][1]  # `turn == 1 and from b`: `turn == 1` left
    rewrite_row(db, seq, opening)
    said = (
        f"run {run_id} is damaged: record 1 (ag2.channel.opened), "
        "event_data.metadata.labels.properties: expected properties flowc wrote "
        "(`all` of fewer than two conditions: {'all': [{'number': 1, 'turn': '=='}]})"
    )
    for answer in (_client(db).get(f"/api/run/{run_id}?token={TOKEN}"), _findings(db, run_id)):
        assert (answer.status_code, answer.json()) == (422, {"error": said})


@pytest.fixture
def checked(tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / "checked"
    folder.mkdir()
    return stored_run(folder, PROPERTY_FLOW, PROPERTY_SCRIPT)


def test_damage_the_checker_meets_is_a_422(
    checked: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stored value the checker finds damaged (its reader raising DamagedRecord) is
    said as every damaged run is, not "the checker failed" with a 500."""
    db, run_id = checked

    def damaged(view: Any, max_states: int | None = None) -> Any:
        raise DamagedRecord("event_data.metadata.labels.properties", "a list", 5)

    monkeypatch.setattr("flowc.view.findings.run_findings", damaged)
    answer = _findings(db, run_id)
    assert (answer.status_code, answer.json()) == (
        422,
        {
            "error": f"run {run_id} is damaged: record 1 (ag2.channel.opened), "
            "event_data.metadata.labels.properties: expected a list, got 5"
        },
    )


@pytest.mark.parametrize("error", [TypeError, AttributeError, KeyError, ValueError])
def test_a_bug_in_the_checker_is_a_plain_500(
    checked: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, error: type[Exception]
) -> None:
    """A bug met while the checker runs was dressed up as "the checker failed on this run:
    TypeError: ..." (as if the run were at fault); it is the server's error, as any bug."""
    db, run_id = checked

    def broken(view: Any, max_states: int | None = None) -> Any:
        raise error("injected fault in run_findings")

    monkeypatch.setattr("flowc.view.findings.run_findings", broken)
    answer = _findings(db, run_id)
    assert (answer.status_code, answer.text) == (500, "Internal Server Error")


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        ("unavailable", "the checker is not here"),
        ("memory", "the checker ran out of memory on this graph"),
    ],
)
def test_the_checker_out_of_reach_or_memory_is_a_503(
    checked: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, raised: str, said: str
) -> None:
    from flowc.compiler.render.rendering import CheckerUnavailableError

    db, run_id = checked

    def failing(view: Any, max_states: int | None = None) -> Any:
        if raised == "memory":
            raise MemoryError
        raise CheckerUnavailableError("the checker is not here")

    monkeypatch.setattr("flowc.view.findings.run_findings", failing)
    answer = _findings(db, run_id)
    assert (answer.status_code, answer.json()) == (503, {"error": said})
