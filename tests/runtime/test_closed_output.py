"""`flowc run ... | head -1`: when the reader of stdout goes away, the run stops between
two turns (as on Ctrl-C), stays open and resumable, and the command ends as other
command-line tools do on a broken pipe (status 141, what a shell reports for SIGPIPE),
with no traceback and no "Exception ignored" at exit.

Each test runs ``python -m flowc`` as a real process writing into a real pipe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_TURNS = 6000

FLOW = f"""speaker a: human
speaker b: human
speaker c: human
start a
max_turns {MAX_TURNS}
when from a then b
when from b then c
when from c then a
"""


@pytest.fixture
def flow(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "rr.flow"
    path.write_text(FLOW, encoding="utf-8")
    script = tmp_path / "s.json"
    per = MAX_TURNS // 3 + 1
    script.write_text(json.dumps({"script": {s: ["turn"] * per for s in "abc"}}), encoding="utf-8")
    return path, script


def flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "flowc", *args]


def into_closed_pipe(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """Run ``args`` with stdout a pipe whose reading end is already closed."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(args, stdout=write, stderr=subprocess.PIPE, cwd=cwd, timeout=120)
    finally:
        os.close(write)


def stored_runs(db: Path, cwd: Path) -> list[dict[str, object]]:
    done = subprocess.run(
        flowc("log", "--db", str(db), "--json"),
        capture_output=True,
        cwd=cwd,
        timeout=120,
        check=True,
    )
    runs: list[dict[str, object]] = json.loads(done.stdout)
    return runs


def clean(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text and "Exception ignored" not in text, text
    return text


def test_a_run_stops_when_its_output_is_closed_and_stays_resumable(
    flow: tuple[Path, Path], tmp_path: Path
) -> None:
    path, script = flow
    db = tmp_path / "runs.db"
    done = into_closed_pipe(
        flowc("run", str(path), "--script", str(script), "--db", str(db)), tmp_path
    )
    assert done.returncode == 141
    err = clean(done.stderr)
    [run] = stored_runs(db, tmp_path)
    # stopped a few turns after the first it could not print, not after all 6,000
    assert run["status"] == "open"
    assert isinstance(run["turns"], int) and 1 <= run["turns"] < 100, run
    assert (
        f"run {run['run_id']} stopped: its output was closed; continue it with "
        f"`flowc resume {run['run_id']} --db {db} --script {script}`" in err
    )
    # resumable: the same command continues it to the end
    resumed = subprocess.run(
        flowc("resume", str(run["run_id"]), "--db", str(db), "--script", str(script)),
        capture_output=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert f'closed: "max_turns" after {MAX_TURNS} turns' in resumed.stdout.decode()
    [run] = stored_runs(db, tmp_path)
    assert run["status"] == "closed" and run["turns"] == MAX_TURNS


@pytest.mark.parametrize("mode", [[], ["--jsonl"]])
def test_head_1_ends_a_run_in_memory_quietly(
    flow: tuple[Path, Path], tmp_path: Path, mode: list[str]
) -> None:
    path, script = flow
    command = " ".join(
        [*flowc("run", str(path), "--script", str(script), "--db", ":memory:"), *mode]
    )
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command} | head -1"],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 141
    assert clean(done.stderr) == ""
    assert len(done.stdout.decode().splitlines()) == 1


def test_a_finished_run_whose_json_cannot_be_written(
    flow: tuple[Path, Path], tmp_path: Path
) -> None:
    path, script = flow
    done = into_closed_pipe(
        flowc("run", str(path), "--script", str(script), "--db", ":memory:", "--json"), tmp_path
    )
    assert done.returncode == 141
    assert clean(done.stderr) == ""


def test_resume_stops_too(flow: tuple[Path, Path], tmp_path: Path) -> None:
    path, script = flow
    db = tmp_path / "runs.db"
    into_closed_pipe(flowc("run", str(path), "--script", str(script), "--db", str(db)), tmp_path)
    [run] = stored_runs(db, tmp_path)
    done = into_closed_pipe(
        flowc("resume", str(run["run_id"]), "--db", str(db), "--script", str(script)), tmp_path
    )
    assert done.returncode == 141
    assert "stopped: its output was closed" in clean(done.stderr)
    [after] = stored_runs(db, tmp_path)
    assert after["status"] == "open"
    assert isinstance(after["turns"], int) and after["turns"] < 100


def test_other_commands_end_the_same_way(flow: tuple[Path, Path], tmp_path: Path) -> None:
    path, script = flow
    db = tmp_path / "runs.db"
    for _ in range(3):
        into_closed_pipe(
            flowc("run", str(path), "--script", str(script), "--db", str(db)), tmp_path
        )
    done = into_closed_pipe(flowc("log", "--db", str(db)), tmp_path)
    assert done.returncode == 141
    assert clean(done.stderr) == ""


@pytest.mark.parametrize(
    "args",
    [
        ["compile", "FLOW"],
        ["render", "-f", "dot", "FLOW"],
        ["render", "-f", "mermaid", "FLOW"],
        ["fmt", "-"],
        ["decompile", "GRAPH"],
        ["scenarios", "FLOW"],
        ["diff", "FLOW", "OTHER"],
        ["check", "FLOW"],
    ],
    ids=lambda args: " ".join(args[:3]),
)
def test_every_command_ends_with_141_when_its_output_is_closed(
    args: list[str], tmp_path: Path
) -> None:
    """A command whose whole output fits in stdout's buffer meets the broken pipe only
    when the buffer is flushed: that ends it with 141 too, quietly (it used to end at
    exit with Python's "Exception ignored" and status 120). The environment leaves stdout
    buffered, as it is in a shell (without PYTHONUNBUFFERED, which writes at once)."""
    flow = ROOT / "examples" / "feedback_loop.flow"
    graph = tmp_path / "graph.json"
    compiled = subprocess.run(
        flowc("compile", str(flow)), capture_output=True, cwd=tmp_path, timeout=120, check=True
    )
    graph.write_bytes(compiled.stdout)
    names = {"FLOW": str(flow), "GRAPH": str(graph), "OTHER": str(ROOT / "examples" / "star.flow")}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's flowc, wherever the process starts
    read, write = os.pipe()
    os.close(read)
    try:
        with flow.open("rb") as stdin:
            done = subprocess.run(
                flowc(*(names.get(a, a) for a in args)),
                stdin=stdin,
                stdout=write,
                stderr=subprocess.PIPE,
                cwd=tmp_path,
                env=env,
                timeout=120,
            )
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr.decode()
    clean(done.stderr)
