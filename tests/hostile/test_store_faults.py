"""Store faults (a damaged row, damaged pages, a full disk, a read-only database, a
`--db` path under a regular file): each is a clean error naming the database and the
run, the other runs stay listed, and nothing hangs. Every command runs under limits."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowc.cli import main
from tests.hostile.limits import Limited, run_limited

HERE = Path(__file__).resolve().parent

FLOW = """flow rr "three in turn"
speaker a
speaker b
speaker c
start a
max_turns {max_turns}
when from a then b
when from b then c
when from c then a
"""


def _script(tag: str, per_speaker: int, size: int = 0) -> str:
    return json.dumps(
        {"script": {s: [f"{tag}-{s}{i}-" + "x" * size for i in range(per_speaker)] for s in "abc"}}
    )


def _flowc(*args: str, **limits: object) -> Limited:
    result = run_limited(list(args), memory_mib=1024, cpu_seconds=60, wall_seconds=60, **limits)  # type: ignore[arg-type]
    assert not result.timed_out, f"flowc {' '.join(args)} hung"
    assert not result.traceback, result.stderr
    return result


@pytest.fixture
def runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, list[str]]:
    """A database holding three closed runs of 30 turns (3 KB each), their ids in order."""
    flow = tmp_path / "rr.flow"
    flow.write_text(FLOW.format(max_turns=30))
    db = tmp_path / "runs.db"
    for tag in ("ONE", "TWO", "THREE"):
        script = tmp_path / f"{tag}.json"
        script.write_text(_script(tag, 10, 3000))
        assert main(["run", str(flow), "--script", str(script), "--db", str(db)]) == 0
    capsys.readouterr()
    con = sqlite3.connect(db)
    ids = [
        r[0]
        for r in con.execute("SELECT channel_id FROM wal GROUP BY channel_id ORDER BY MIN(seq)")
    ]
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return db, ids


def _listed(out: str) -> list[str]:
    return [line.split()[0] for line in out.splitlines() if line.startswith("wf-")]


def test_a_damaged_row(runs: tuple[Path, list[str]]) -> None:
    db, ids = runs
    con = sqlite3.connect(db)
    [(seq,)] = con.execute(
        "SELECT seq FROM wal WHERE channel_id = ? AND event_type = ? ORDER BY seq LIMIT 1 OFFSET 3",
        (ids[1], "ag2.packet"),
    )
    [(pos,)] = con.execute(
        "SELECT COUNT(*) FROM wal WHERE channel_id = ? AND seq <= ?", (ids[1], seq)
    )
    con.execute("UPDATE wal SET envelope = '{not json' WHERE seq = ?", (seq,))
    con.commit()
    con.close()
    log = _flowc("log", "--db", str(db))
    assert log.returncode == 1
    assert _listed(log.stdout) == ids  # one bad row hides no other run
    assert f"{ids[1]}  damaged" in log.stdout
    assert f"{db}: run {ids[1]} is damaged: record {pos} (row {seq}) is no envelope" in log.stderr
    assert "30 turns" in log.stdout.splitlines()[0]
    for args in (["log", ids[1]], ["replay", ids[1]], ["resume", ids[1]]):
        result = _flowc(*args, "--db", str(db))
        assert result.returncode == 1, result.stderr
        assert (
            f"{db}: run {ids[1]} is damaged: record {pos} (row {seq}) is no envelope"
            in result.stderr
        )
    assert _flowc("replay", ids[2], "--db", str(db)).returncode == 0
    # a row that is JSON but not an envelope
    con = sqlite3.connect(db)
    con.execute("UPDATE wal SET envelope = '[1, 2]' WHERE seq = ?", (seq,))
    con.commit()
    con.close()
    result = _flowc("replay", ids[1], "--db", str(db))
    assert result.returncode == 1 and "is damaged" in result.stderr


def test_damaged_pages(runs: tuple[Path, list[str]]) -> None:
    db, ids = runs
    data = bytearray(db.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    page = data.find(b"TWO-b5-") // page_size
    assert page > 1
    data[page * page_size : (page + 1) * page_size] = os.urandom(page_size)
    bad = db.with_name("pages.db")
    bad.write_bytes(data)
    log = _flowc("log", "--db", str(bad))
    assert log.returncode == 1
    assert _listed(log.stdout) == ids
    assert f"{ids[1]}  damaged" in log.stdout
    assert (
        f"{bad}: run {ids[1]}: cannot read the WAL (database disk image is malformed)" in log.stderr
    )
    for args in (["log", ids[1]], ["replay", ids[1]]):
        result = _flowc(*args, "--db", str(bad))
        assert result.returncode == 1 and f"{bad}: run {ids[1]}" in result.stderr
    assert _flowc("replay", ids[0], "--db", str(bad)).returncode == 0
    # everything past the header is garbage: no run can be read
    data[100:] = os.urandom(len(data) - 100)
    bad.write_bytes(data)
    for args in (
        ["log"],
        ["replay", "last"],
        ["resume", "last"],
        ["run", str(db.with_name("rr.flow")), "--script", str(db.with_name("ONE.json"))],
    ):
        result = _flowc(*args, "--db", str(bad))
        assert result.returncode == 2, result.stderr
        assert (
            f"{bad}: cannot open the run database (database disk image is malformed)"
            in result.stderr
        )


@pytest.mark.parametrize("drive", ["script", "agents"])
def test_a_full_disk(runs: tuple[Path, list[str]], drive: str) -> None:
    """The file-size limit makes every write past 1 MiB fail (EFBIG), as a full disk does."""
    db, ids = runs
    flow = db.with_name("long.flow")
    flow.write_text(FLOW.format(max_turns=600))
    if drive == "script":
        script = db.with_name("long.json")
        script.write_text(_script("LONG", 200, 4096))
        args = ["--script", str(script)]
    else:
        args = ["--agents", str(HERE / "store_agents.py")]
    size = db.stat().st_size
    assert size < 1024 * 1024 - 200_000
    result = _flowc("run", str(flow), *args, "--db", str(db), output_mib=1)
    assert result.returncode in (1, 2), result.stdout[-2000:] + result.stderr
    assert "Task exception was never retrieved" not in result.stderr
    [new] = [line for line in result.stderr.splitlines() if "cannot write the WAL" in line]
    assert f"{db}: run wf-" in new
    assert "(disk I/O error)" in new or "(database or disk is full)" in new, new
    log = _flowc("log", "--db", str(db))
    assert log.returncode == 0, log.stderr
    listed = _listed(log.stdout)
    assert listed[:3] == ids and len(listed) == 4
    assert log.stdout.splitlines()[3].endswith("open")


def _writable_by_nobody_only_to_read(folder: Path) -> None:
    for path in folder.iterdir():
        path.chmod(0o444)
    folder.chmod(0o555)


@pytest.fixture
def readonly_folder(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "ro"
    folder.mkdir()
    try:
        yield folder
    finally:
        folder.chmod(stat.S_IRWXU)
        for path in folder.iterdir():
            path.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_a_read_only_database(readonly_folder: Path) -> None:
    flow = readonly_folder / "rr.flow"
    flow.write_text(FLOW.format(max_turns=6))
    script = readonly_folder / "s.json"
    script.write_text(_script("RO", 2))
    db = readonly_folder / "runs.db"
    assert main(["run", str(flow), "--script", str(script), "--db", str(db)]) == 0
    _writable_by_nobody_only_to_read(readonly_folder)
    log = _flowc("log", "--db", str(db), obey_file_modes=True)
    assert log.returncode == 0 and len(_listed(log.stdout)) == 1, log.stderr
    assert _flowc("replay", "last", "--db", str(db), obey_file_modes=True).returncode == 0
    for args in (["run", str(flow), "--script", str(script)], ["resume", "last"]):
        result = _flowc(*args, "--db", str(db), obey_file_modes=True)
        assert result.returncode == 2
        assert (
            f"{db}: cannot open the run database (attempt to write a readonly database)"
            in result.stderr
        ), result.stderr


def test_a_db_path_under_a_regular_file(tmp_path: Path) -> None:
    flow = tmp_path / "rr.flow"
    flow.write_text(FLOW.format(max_turns=6))
    script = tmp_path / "s.json"
    script.write_text(_script("F", 2))
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file")
    db = blocker / "runs.db"
    result = _flowc("run", str(flow), "--script", str(script), "--db", str(db))
    assert result.returncode == 2
    assert f"{db}: cannot create its folder ({blocker} is a file, not a folder)" in result.stderr
    for args in (["log"], ["replay", "last"], ["resume", "last"]):
        result = _flowc(*args, "--db", str(db))
        assert result.returncode == 2 and f"{db}: no run database" in result.stderr


def test_a_run_database_through_a_symbolic_link(tmp_path: Path) -> None:
    """A link where the run database goes (a repository's `.flowc/runs.db`, or one of the
    files SQLite keeps beside it) is refused by every command, naming it: SQLite made the
    file it points to into a database (an empty one), added flowc's tables to another
    program's database, or created a file where a dangling link pointed."""
    flow = tmp_path / "rr.flow"
    flow.write_text(FLOW.format(max_turns=6))
    script = tmp_path / "s.json"
    script.write_text(_script("L", 2))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    empty = elsewhere / "notes.txt"
    empty.touch()
    other = elsewhere / "places.sqlite"  # another program's database
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE places (url TEXT)")
    con.commit()
    con.close()
    before = other.read_bytes()
    missing = elsewhere / "missing.db"
    repo = tmp_path / "repo" / ".flowc"
    repo.mkdir(parents=True)
    commands = [
        ["run", str(flow), "--script", str(script)],
        ["resume", "last"],
        ["log"],
        ["replay", "last"],
        ["submit", str(flow), "--script", str(script)],
    ]
    for name, target in (("empty.db", empty), ("other.db", other), ("dangling.db", missing)):
        db = repo / name
        db.symlink_to(target)
        for args in commands:
            result = _flowc(*args, "--db", str(db))
            assert result.returncode == 2, (args, result.stderr)
            assert f"error: {db}: is a symbolic link (to {target})" in result.stderr, result.stderr
    assert empty.read_bytes() == b""
    assert other.read_bytes() == before
    assert not missing.exists()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["notes.txt", "places.sqlite"]
    # a file SQLite keeps beside the database: its write-ahead log
    db = repo / "runs.db"
    assert main(["run", str(flow), "--script", str(script), "--db", str(db)]) == 0
    db.with_name("runs.db-wal").unlink(missing_ok=True)
    db.with_name("runs.db-wal").symlink_to(empty)
    result = _flowc("run", str(flow), "--script", str(script), "--db", str(db))
    assert result.returncode == 2
    assert f"error: {db}-wal: is a symbolic link (to {empty})" in result.stderr
    assert empty.read_bytes() == b""


VANISHING_FLOW = """flow ask "a client and a bot"
speaker client: human
speaker bot
start client
max_turns 12
when from client then bot
when from bot then client
"""

# the bot's second call takes the run database away (deletes it, or moves another
# database over its path) before the turn it answers is written
VANISHING_AGENTS = """import os
import sqlite3
calls = []
async def bot(turn):
    calls.append(1)
    if len(calls) == 2:
        db = os.environ["FLOWC_TEST_DB"]
        if os.environ["FLOWC_TEST_HOW"] == "delete":
            os.remove(db)
        else:
            os.replace(db + ".other", db)
    return "reply"
AGENTS = {"bot": bot}
"""


@pytest.mark.parametrize("how", ["delete", "replace"])
def test_a_run_database_deleted_or_replaced_during_the_run(tmp_path: Path, how: str) -> None:
    """The writer compares the file it writes with the one its path names after every
    commit: a run whose database is deleted or replaced stops with an error naming the
    database and the run, and never reports success for turns that are not in the file
    at its path (SQLite alone keeps writing the deleted file, or the replaced one's
    inode, and the run used to close with exit 0)."""
    flow = tmp_path / "ask.flow"
    flow.write_text(VANISHING_FLOW)
    (tmp_path / "agents.py").write_text(VANISHING_AGENTS)
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"script": {"client": ["one", "two", "three", "four"]}}))
    db = tmp_path / "runs.db"
    other = tmp_path / "runs.db.other"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE notes (text TEXT)")
    con.commit()
    con.close()
    before = other.read_bytes()
    env_code = (
        f"import os, sys; os.environ['FLOWC_TEST_DB'] = {str(db)!r}; "
        f"os.environ['FLOWC_TEST_HOW'] = {how!r}; "
        "from flowc.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    result = run_limited(
        [
            "run",
            str(flow),
            "--agents",
            str(tmp_path / "agents.py"),
            "--script",
            str(script),
            "--db",
            str(db),
        ],
        python_code=env_code,
        cwd=tmp_path,
    )
    assert not result.timed_out and not result.traceback, result.stderr
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    what = "was deleted or moved away" if how == "delete" else "was replaced by another file"
    assert f"error: {db}: run wf-" in result.stderr, result.stderr
    assert f"the run database {what} during the run" in result.stderr, result.stderr
    assert "stalled" in result.stdout and "closed" not in result.stdout, result.stdout
    if how == "replace":  # the file now at the path was not written
        assert db.read_bytes() == before
    else:
        assert not db.exists()


def test_the_store_notices_its_file_gone(tmp_path: Path) -> None:
    """The same at the store's level: the append after the file is gone raises."""
    from flowc.runtime.envelope import Envelope
    from flowc.runtime.wal import SqliteStore, WalError

    db = tmp_path / "w.db"
    store = SqliteStore(db)
    try:

        def env(i: int) -> Envelope:
            return Envelope("run-1", "a", None, "text", {"text": str(i)}, envelope_id=f"e{i}")

        store.append(env(1))
        store.append(env(2))
        db.unlink()
        with pytest.raises(WalError, match="run run-1: the run database was deleted"):
            store.append(env(3))
    finally:
        store.close()
