"""`--db` naming another program's SQLite database (a typo, `--db app.db`): the commands
that write refuse it as `flowc log` does (not a run database), and leave the file as it
was. They used to add flowc's tables to it and turn its journal into WAL mode, after
which `flowc log` listed it as a run database."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.hostile.limits import run_limited

FLOW = """\
speaker user: human
speaker bot
start user
max_turns 4
when from user then bot
when from bot then terminate "done"
"""


def _other_program(path: Path) -> bytes:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE places (url TEXT)")
    con.execute("CREATE INDEX places_url ON places (url)")
    con.execute("INSERT INTO places VALUES ('https://example.org')")
    con.commit()
    con.close()
    return path.read_bytes()


def test_run_refuses_another_programs_database_and_leaves_it_alone(tmp_path: Path) -> None:
    flow = tmp_path / "f.flow"
    flow.write_text(FLOW)
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"kickoff": "hi", "script": {"bot": ["ok"]}}))
    other = tmp_path / "places.sqlite"
    before = _other_program(other)
    result = run_limited(
        ["run", str(flow), "--script", str(script), "--db", str(other)], cwd=tmp_path
    )
    assert not result.timed_out and not result.traceback, result.stderr
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stderr == (
        f"flowc run: error: {other}: not a run database (it has no WAL table, and holds "
        "another program's tables or indexes: places, places_url); flowc writes runs only "
        "to a run database or a new file: give another path\n"
    )
    assert other.read_bytes() == before  # no table added, its journal mode as it was
    assert not Path(f"{other}-wal").exists()
    # and `flowc log` says the same kind of thing about it, before and after
    listed = run_limited(["log", "--db", str(other)], cwd=tmp_path)
    assert listed.returncode == 2 and "not a run database" in listed.stderr


def test_the_store_refuses_it_but_makes_a_new_or_empty_file(tmp_path: Path) -> None:
    from flowc.runtime.wal import SqliteStore, WalError

    other = tmp_path / "app.db"
    before = _other_program(other)
    with pytest.raises(WalError, match="not a run database"):
        SqliteStore(other)
    assert other.read_bytes() == before
    empty = tmp_path / "empty.db"
    empty.touch()
    for path in (empty, tmp_path / "new.db"):
        store = SqliteStore(path)
        assert store.channel_ids() == []
        store.close()
        SqliteStore(path).close()  # and it opens again, as a run database


@pytest.mark.parametrize("table", ["run", "lease"])
def test_a_database_whose_table_has_a_name_flowc_uses_is_refused_too(
    tmp_path: Path, table: str
) -> None:
    # (flowc's own files always hold its `wal` table: one without it is not flowc's)
    from flowc.runtime.wal import SqliteStore, WalError

    other = tmp_path / "app.db"
    con = sqlite3.connect(other)
    con.execute(f"CREATE TABLE {table} (x)")
    con.commit()
    con.close()
    before = other.read_bytes()
    with pytest.raises(WalError, match=f"another program's tables or indexes: {table}\\)"):
        SqliteStore(other)
    assert other.read_bytes() == before  # its journal mode as it was, too
    assert not Path(f"{other}-wal").exists()


def test_a_db_path_that_is_a_folder_is_said_so(tmp_path: Path) -> None:
    """SQLite said only `unable to open database file` for a folder given as `--db`."""
    flow = tmp_path / "f.flow"
    flow.write_text(FLOW)
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"kickoff": "hi", "script": {"bot": ["ok"]}}))
    folder = tmp_path / "runs"
    folder.mkdir()
    said = f"{folder}: is a folder, not a run database: give a file's path\n"
    for args in (["run", str(flow), "--script", str(script)], ["log"], ["replay", "last"]):
        result = run_limited([*args, "--db", str(folder)], cwd=tmp_path)
        assert not result.timed_out and not result.traceback, result.stderr
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr == f"flowc {args[0]}: error: {said}", result.stderr
    assert list(folder.iterdir()) == []
