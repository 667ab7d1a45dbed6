"""`--db postgresql://...` for run, resume, log and replay; clean errors when the server is
unreachable, the URL is bad or the server stops mid-run (the run stays resumable)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.runtime.envelope import EV_PACKET, EV_TEXT
from flowc.runtime.pgstore import PgStore
from tests.pgcluster import PgCluster
from tests.runtime.test_resume import FLOW, LONG, SHORT

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "tests" / "runtime" / "resume_agents.py"
RR_FLOW = """flow rr "three agents in turn"
speaker a
speaker b
speaker c
start a
max_turns {max_turns}
when from a then b
when from b then c
when from c then a
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "review.flow").write_text(FLOW)
    (tmp_path / "short.json").write_text(json.dumps(SHORT))
    (tmp_path / "long.json").write_text(json.dumps(LONG))
    return tmp_path


def _texts(dsn: str) -> list[str]:
    store = PgStore(dsn, readonly=True)
    try:
        out = []
        for cid in store.channel_ids():
            for env in store.read(cid):
                data = env.event_data
                if "body" in data or "text" in data:
                    out.append(data.get("body", data.get("text")))
        return out
    finally:
        store.close()


def test_run_log_resume_replay_on_postgresql(
    files: Path, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    flow, short, long = (str(files / n) for n in ("review.flow", "short.json", "long.json"))
    assert main(["run", flow, "--script", short, "--db", pg_dsn]) == 1
    assert "stalled: drafter has no turn to take after 3 turns" in capsys.readouterr().out
    assert _texts(pg_dsn) == ["Write on HTTPS", "Draft 1", "Tighten it"]
    assert main(["log", "--json", "--db", pg_dsn]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["status"], listed["turns"], listed["flow"]) == ("open", 3, flow)
    run_id = listed["run_id"]
    # postgres:// is the same database
    alias = "postgres://" + pg_dsn.removeprefix("postgresql://")
    assert main(["resume", run_id[:8], "--script", long, "--db", alias]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith('closed: "approved" after 5 turns\ncontext: {"done": true}')
    assert _texts(pg_dsn) == ["Write on HTTPS", "Draft 1", "Tighten it", "Draft 2", "Approved"]
    assert main(["replay", "last", "--db", pg_dsn]) == 0
    assert capsys.readouterr().out.startswith(
        f'{run_id}: re-folded 7 envelopes: same close reason "approved"'
    )
    assert main(["log", run_id, "--db", pg_dsn]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"run {run_id}  {flow}") and "Draft 2" in text
    # (ended as `run` printed it: how it closed, then the context)
    assert text.rstrip().endswith('closed: "approved" after 5 turns\ncontext: {"done": true}')
    assert main(["log", "--db", pg_dsn]) == 0
    assert f"{run_id}" in capsys.readouterr().out and "5 turns" in text


def test_log_of_an_empty_database_lists_nothing_and_creates_nothing(
    pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["log", "--json", "--db", pg_dsn]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["replay", "last", "--db", pg_dsn]) == 2
    assert "no run 'last'" in capsys.readouterr().err
    import psycopg

    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT to_regclass('flowc_wal')").fetchone() == (None,)


@pytest.mark.parametrize("command", ["run", "resume", "log", "replay"])
def test_an_unreachable_server_is_a_clean_error_naming_the_url_without_its_password(
    files: Path, command: str
) -> None:
    url = "postgresql://alice:hunter2@127.0.0.1:1/runs?sslmode=disable&password=hunter2"
    args = {
        "run": ["run", str(files / "review.flow"), "--script", str(files / "short.json")],
        "resume": ["resume", "last"],
        "log": ["log"],
        "replay": ["replay", "last"],
    }[command]
    done = subprocess.run(
        [sys.executable, "-m", "flowc", *args, "--db", url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=files,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        f"flowc {command}: error: postgresql://alice@127.0.0.1:1/runs?sslmode=disable: "
        'cannot connect to the database (connection to server at "127.0.0.1", port 1 '
        "failed: Connection refused)"
    )
    assert "hunter2" not in done.stderr + done.stdout and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://bob:s3cret@[::1/runs",
        "postgresql://bob:s3cret@localhost/runs?no_such_option=1",
    ],
)
def test_a_bad_url_is_a_clean_error(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["log", "--db", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"flowc log: error: {url.replace(':s3cret', '')}: not a valid database URL ("
    )
    assert "s3cret" not in err


def test_without_psycopg_a_postgresql_url_says_what_to_install(tmp_path: Path) -> None:
    code = "import sys; sys.modules['psycopg'] = None\nfrom flowc.cli import run; run()"
    done = subprocess.run(
        [sys.executable, "-c", code, "log", "--db", "postgresql:///x"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "flowc log: error: a postgresql:// database needs the psycopg "
        "package: pip install 'psycopg[binary]' (flowc's postgres extra)\n"
    )


def _turns(dsn: str) -> list[tuple[str, str]]:
    try:
        store = PgStore(dsn, readonly=True, connect_timeout=5)
    except Exception:  # the server is stopped
        return []
    try:
        return [
            (e.sender_id, e.event_data.get("body", e.event_data.get("text", "")))
            for cid in store.channel_ids()
            for e in store.read(cid)
            if e.event_type in (EV_TEXT, EV_PACKET)
        ]
    finally:
        store.close()


def _count(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        try:
            row = conn.execute(
                "SELECT count(*) FROM flowc_wal WHERE event_type IN (%s, %s)", (EV_TEXT, EV_PACKET)
            ).fetchone()
        except psycopg.errors.UndefinedTable:  # not made yet
            return 0
    return int(row[0]) if row else 0


def test_a_server_stopped_mid_run_is_a_clean_error_and_the_run_resumes(tmp_path: Path) -> None:
    turns = 1500
    flow = tmp_path / "rr.flow"
    flow.write_text(RR_FLOW.format(max_turns=turns))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with PgCluster() as cluster:
        dsn = cluster.create_database()
        first = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flowc",
                "run",
                str(flow),
                "--agents",
                str(AGENTS),
                "--jsonl",
                "--db",
                dsn,
            ],
            stdout=(tmp_path / "out.jsonl").open("w"),
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        deadline = time.monotonic() + 60
        while _count(dsn) < 20:
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)
        cluster.stop("immediate")  # as a crash of the server would
        _, err = first.communicate(timeout=60)
        out = (tmp_path / "out.jsonl").read_text()
        assert first.returncode == 1, out[-2000:] + err
        assert "Traceback" not in err
        end = json.loads(out.splitlines()[-1])
        assert end["event"] == "end" and end["close_reason"] is None
        assert end["error"].startswith(f"{dsn}: run {end['run_id']}: cannot write the WAL ("), end
        cluster.start()
        kept = _turns(dsn)
        assert 20 <= len(kept) < turns
        resumed = subprocess.run(
            [sys.executable, "-m", "flowc", "resume", "last", "--agents", str(AGENTS), "--db", dsn],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
            check=False,
        )
        assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
        assert _turns(dsn) == [("abc"[i % 3], f"t{i}") for i in range(turns)]
        assert main(["replay", "last", "--db", dsn]) == 0


def test_a_run_paused_past_its_lease_is_fenced_off_by_the_database(
    tmp_path: Path, pg_dsn: str
) -> None:
    """`flowc run` SIGSTOPped at any moment (PostgreSQL holds no lock for a paused
    client between statements), `flowc resume` from another process takes the run over
    after the lease expires; the first, continued, is refused (its lease's renewal, which
    a hub makes before appending once a third of the lease is spent; the fenced append
    itself is tested in test_store.py) and stops; the WAL is one writer's at a time."""
    import signal

    turns = 2000
    flow = tmp_path / "rr.flow"
    flow.write_text(RR_FLOW.format(max_turns=turns))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLOWC_LEASE_SECONDS": "1"}
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flowc",
            "run",
            str(flow),
            "--agents",
            str(AGENTS),
            "--jsonl",
            "--db",
            pg_dsn,
        ],
        stdout=(tmp_path / "first.jsonl").open("w"),
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    second = None
    try:
        deadline = time.monotonic() + 60
        while _count(pg_dsn) < 20:
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        first.send_signal(signal.SIGSTOP)
        paused_at = _count(pg_dsn)
        time.sleep(1.5)  # past its lease
        second = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flowc",
                "resume",
                "last",
                "--agents",
                str(AGENTS),
                "--jsonl",
                "--db",
                pg_dsn,
            ],
            stdout=(tmp_path / "second.jsonl").open("w"),
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        while _count(pg_dsn) < paused_at + 50:
            assert second.poll() is None and time.monotonic() < deadline + 60
            time.sleep(0.02)
        # `flowc log` names the run's holder now
        log = subprocess.run(
            [sys.executable, "-m", "flowc", "log", "--json", "--db", pg_dsn],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=True,
        )
        [listed] = json.loads(log.stdout)
        assert listed["status"] == "running" and f"pid {second.pid} on " in listed["holder"]
    finally:
        first.send_signal(signal.SIGCONT)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 1, err
    end = json.loads((tmp_path / "first.jsonl").read_text().splitlines()[-1])
    assert "was taken over by another hub" in end["error"], end
    assert f"pid {second.pid}" in end["error"]
    _, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    assert _turns(pg_dsn) == [("abc"[i % 3], f"t{i}") for i in range(turns)]
    assert main(["replay", "last", "--db", pg_dsn]) == 0


def test_kill_and_resume_cycles_lose_and_duplicate_nothing(tmp_path: Path, pg_dsn: str) -> None:
    """`flowc run` SIGKILLed at random points and resumed each time (the lease of a dead
    process on this host is free at once): the WAL ends equal to an uninterrupted run."""
    import random
    import signal

    turns = 900
    flow = tmp_path / "rr.flow"
    flow.write_text(RR_FLOW.format(max_turns=turns))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def flowc(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "flowc", *args, "--agents", str(AGENTS), "--db", pg_dsn],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp_path,
        )

    rng = random.Random()
    proc = flowc("run", str(flow))
    seen = 0
    for cycle in range(6):
        target = seen + rng.randint(1, 40)
        deadline = time.monotonic() + 60
        while _count(pg_dsn) < target:
            assert proc.poll() is None, f"cycle {cycle}: {proc.communicate()[1]}"
            assert time.monotonic() < deadline, f"cycle {cycle}: no progress"
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        now = _count(pg_dsn)
        assert now > seen, f"cycle {cycle}: the resumed run made no progress"
        seen = now
        proc = flowc("resume", "last")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert _turns(pg_dsn) == [("abc"[i % 3], f"t{i}") for i in range(turns)]
    assert main(["replay", "last", "--db", pg_dsn]) == 0


def test_fork_on_postgresql(files: Path, pg_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`flowc fork` on a PostgreSQL database: the new run keeps the parent's first turns
    and goes on with its script; the parent's records are unchanged."""
    flow, short = (str(files / n) for n in ("review.flow", "short.json"))
    assert main(["run", flow, "--script", short, "--db", pg_dsn]) == 1
    store = PgStore(pg_dsn, readonly=True)
    try:
        [parent] = store.channel_ids()
        before = [e.to_json() for e in store.read(parent)]
    finally:
        store.close()
    after = files / "after.json"
    after.write_text(json.dumps({"script": {"reviewer": [{"tool": "approve", "say": "Fine"}]}}))
    capsys.readouterr()
    assert main(["fork", parent, "2", "--script", str(after), "--db", pg_dsn]) == 0
    out, err = capsys.readouterr()
    assert out.rstrip().endswith('closed: "approved" after 3 turns\ncontext: {"done": true}')
    store = PgStore(pg_dsn, readonly=True)
    try:
        ids = store.channel_ids()
        assert ids[0] == parent and len(ids) == 2
        assert [e.to_json() for e in store.read(parent)] == before
        new = ids[1]
    finally:
        store.close()
    assert f"flowc fork: run {new}: forked from {parent} at turn 2" in err
    assert main(["log", new, "--json", "--db", pg_dsn]) == 0
    log = json.loads(capsys.readouterr().out)
    assert log["forked_from"] == {"run_id": parent, "turn": 2}
    assert [t["text"] for t in log["turns"]] == ["Write on HTTPS", "Draft 1", "Fine"]
    assert main(["replay", new, "--db", pg_dsn]) == 0
