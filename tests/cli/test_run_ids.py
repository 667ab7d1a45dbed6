"""``last`` names a database's newest run wherever a run is named (``flowc log last``,
``replay``, ``resume``, ``fork``, ``view``): it is never a run's own id. ``flowc fork
--run-id last`` is refused before anything is written, and in a database that holds a
run with that id (written by an earlier flowc, or from Python) ``last`` still means the
newest run. Real ``flowc`` processes on a SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.runtime.fork import ForkError, fork_run
from flowc.runtime.script import parse_script
from flowc.runtime.script_run import run_script_sync
from flowc.runtime.target import RunTarget
from flowc.runtime.wal import SqliteStore
from tests.cli.cli_runs import flowc

FLOW = """speaker user: human
speaker bot
start user
max_turns 4
when from user then bot
when from bot then terminate "done"
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "a.flow").write_text(FLOW)
    (tmp_path / "s.yaml").write_text("{kickoff: hi, script: {bot: [b1]}}\n")
    (tmp_path / "n.yaml").write_text("{script: {bot: [b2]}}\n")
    done = flowc(tmp_path, "run", "a.flow", "--script", "s.yaml", "--db", "rr.db")
    assert done.returncode == 0, done.stderr
    return tmp_path


def run_ids(folder: Path) -> list[str]:
    store = SqliteStore(str(folder / "rr.db"), readonly=True)
    try:
        return store.channel_ids()
    finally:
        store.close()


def test_fork_refuses_last_as_the_new_runs_id(folder: Path) -> None:
    [rid] = run_ids(folder)
    forked = flowc(
        folder, "fork", rid, "1", "--db", "rr.db", "--run-id", "last", "--script", "n.yaml"
    )
    assert forked.returncode == 2, forked.stdout
    assert forked.stderr == (
        "flowc fork: error: --run-id: 'last' names the newest run wherever a run is named "
        "(`flowc log last`), so it is no run's id: give the new run another\n"
    )
    assert run_ids(folder) == [rid]  # nothing written
    with pytest.raises(ForkError, match="'last' names a database's newest run"):
        fork_run(SqliteStore(str(folder / "rr.db")), rid, 1, run_id="last")
    assert run_ids(folder) == [rid]


def test_last_is_the_newest_run_even_beside_a_run_called_last(folder: Path) -> None:
    # a run whose id is "last" (from Python), then a newer one
    target = RunTarget.from_compiled(__import__("flowc").compile_flow(FLOW))
    store = SqliteStore(str(folder / "rr.db"))
    try:
        run_script_sync(
            target,
            parse_script({"kickoff": "old", "script": {"bot": ["b"]}}),
            store=store,
            channel_id="last",
        )
    finally:
        store.close()
    done = flowc(folder, "run", "a.flow", "--script", "s.yaml", "--db", "rr.db")
    assert done.returncode == 0, done.stderr
    newest = run_ids(folder)[-1]
    assert newest != "last"
    log = flowc(folder, "log", "last", "--db", "rr.db", "--json")
    assert json.loads(log.stdout)["run_id"] == newest, log.stderr
    replay = flowc(folder, "replay", "last", "--db", "rr.db")
    assert newest in replay.stdout + replay.stderr


@pytest.mark.parametrize("bad", ["evil/why/1", "..", ".", "a\x01b", "a\x7fb"])
def test_fork_refuses_an_id_the_view_cannot_name(folder: Path, bad: str) -> None:
    """A run id with a ``/`` (``/run/evil/why/1`` is another page of the view), ``.`` or
    ``..`` (a browser folds them out of a path), or a control character: a usage error
    naming the rule, nothing written; `fork_run` from Python refuses it too."""
    [rid] = run_ids(folder)
    forked = flowc(folder, "fork", rid, "1", "--db", "rr.db", "--run-id", bad, "--script", "n.yaml")
    assert forked.returncode == 2, forked.stdout
    assert forked.stdout == ""
    [line] = forked.stderr.splitlines()
    assert line.startswith("flowc fork: error: --run-id "), line
    rule = "printable characters" if not bad.isprintable() else "holds no '/'"
    assert rule in line and repr(bad) in line, line
    assert run_ids(folder) == [rid]  # nothing written
    with pytest.raises(ForkError, match="holds no '/' nor control character"):
        fork_run(SqliteStore(str(folder / "rr.db")), rid, 1, run_id=bad)
    assert run_ids(folder) == [rid]
