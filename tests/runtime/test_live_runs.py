"""`flowc run` as a person sees it, on a real pseudo-terminal: turns stream as they are
accepted, Ctrl-C at a `user>` prompt stops the run at once and leaves it resumable, a
long run shows its progress, and piped output carries none of the terminal's extras.

Each test starts ``python -m flowc`` in a fresh session whose controlling terminal is
the pty's slave side (so the line discipline turns a typed ``^C`` into SIGINT for it,
exactly as a shell's terminal does) and reads the master side as the person would.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main

ROOT = Path(__file__).resolve().parents[2]

FLOW = """speaker user: human
speaker drafter
speaker reviewer { tool approve sets done = true }
start user
max_turns 12
context done = false
when context.done == true then terminate "approved"
when from user then drafter
when from drafter then reviewer
when from reviewer then user
"""

#: the reviewer waits for a file to appear: the test decides when the run may go on
AGENTS = """
import asyncio, os
from flowc.runtime import Reply, ToolCall

RELEASE = os.environ["RELEASE_FILE"]

async def drafter(turn):
    return "Draft: " + turn.text

async def reviewer(turn):
    if os.environ.get("WAITING_FILE"):  # tells the test the reviewer has begun
        open(os.environ["WAITING_FILE"], "w").close()
    while not os.path.exists(RELEASE):
        await asyncio.sleep(0.02)
    if len(turn.history) >= 4:  # the second round
        return Reply("Approved", (ToolCall("approve", {"note": "ok"}, set={"done": True}),))
    return "Needs work"

AGENTS = {"drafter": drafter, "reviewer": reviewer}
"""

KICKOFF = {"kickoff": "Write on HTTPS"}


class Terminal:
    """A child process on a pty; ``read_until`` collects what the person would see."""

    def __init__(
        self, args: list[str], *, env: dict[str, str] | None = None, cwd: Path = ROOT
    ) -> None:
        master, slave = os.openpty()
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.ONLCR  # keep "\n" as written (no "\r\n" translation)
        termios.tcsetattr(slave, termios.TCSANOW, attrs)

        def own_terminal() -> None:  # a new session whose controlling terminal is the pty
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "flowc", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            preexec_fn=own_terminal,
            cwd=cwd,
            env={**os.environ, **(env or {})},
        )
        os.close(slave)
        self.master = master
        self.seen = ""

    def read_until(self, text: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} did not appear; the terminal shows:\n{self.seen}")
            ready, _, _ = select.select([self.master], [], [], min(left, 0.2))
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the child closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(
                        f"{text!r} never appeared; the terminal shows:\n{self.seen}"
                    )
                self.seen += chunk.decode("utf-8", errors="replace")
        return self.seen

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def finish(self, timeout: float = 60.0) -> int:
        """Wait for the exit, keeping what is still printed; returns the exit status."""
        deadline = time.monotonic() + timeout
        while True:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    chunk = b""
                self.seen += chunk.decode("utf-8", errors="replace")
                if chunk:
                    continue
            code = self.proc.poll()
            if code is not None:
                return code
            if time.monotonic() > deadline:
                self.proc.kill()
                raise AssertionError(f"still running after {timeout}s:\n{self.seen}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "review.flow").write_text(FLOW)
    (tmp_path / "agents.py").write_text(AGENTS)
    (tmp_path / "kick.json").write_text(json.dumps(KICKOFF))
    return tmp_path


def review(files: Path, *more: str, script: str = "kick.json", db: str = "runs.db") -> list[str]:
    """``flowc run`` of the review flow with the agents above; ``db`` is a file in
    ``files`` (or ``:memory:``); ``more``: output options."""
    return [
        "run",
        str(files / "review.flow"),
        "--agents",
        str(files / "agents.py"),
        "--script",
        str(files / script),
        "--db",
        db if db == ":memory:" else str(files / db),
        *more,
    ]


def released_by(release: Path, **more: Path) -> dict[str, str]:
    """The environment of a run whose reviewer answers once ``release`` exists (and tells,
    with ``WAITING_FILE=``, when it has begun to wait)."""
    return {"RELEASE_FILE": str(release), **{k: str(v) for k, v in more.items()}}


def piped(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """``python -m flowc ARGS`` away from a terminal: stdout and stderr are pipes."""
    return subprocess.Popen(
        [sys.executable, "-m", "flowc", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env},
    )


def interrupt(proc: subprocess.Popen[str], when: Callable[[], None]) -> tuple[str, str]:
    """SIGINT ``proc`` once ``when()`` returns (it waits for the moment); its stdout and
    stderr. The process is killed if anything fails on the way."""
    try:
        when()
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_turns_appear_on_the_terminal_as_they_are_accepted(files: Path) -> None:
    release = files / "release"
    term = Terminal(review(files), env=released_by(release))
    try:
        # the reviewer is still thinking: the first two turns are already on the screen
        shown = term.read_until("→ reviewer  (rule 3, line 9: when from drafter then reviewer)")
        assert "  1  user      Write on HTTPS" in shown
        assert "  2  drafter   Draft: Write on HTTPS" in shown
        time.sleep(0.3)
        assert term.proc.poll() is None and "closed:" not in term.seen
        release.touch()
        # the user has no scripted turn left and stdin is a terminal: they are asked
        term.read_until("user> ")
        term.type(b"Shorter, please\n")
        assert term.finish() == 0
    finally:
        term.close()
    out = term.seen
    # the rest arrived after, in order, with the tool call of the last turn
    order = [
        "  2  drafter",
        "  3  reviewer  Needs work",
        "user> ",
        "  4  user      Shorter",
        "  6  reviewer  Approved",
        'calls: approve(note="ok")',
        "closed:",
    ]
    places = [out.index(x) for x in order]
    assert places == sorted(places), out
    assert 'closed: "approved" after 6 turns' in out


def test_ctrl_c_at_a_human_prompt_stops_at_once_and_the_run_can_be_resumed(files: Path) -> None:
    (files / "release").touch()
    db = files / "runs.db"
    term = Terminal(review(files), env=released_by(files / "release"))
    try:
        # no scripted turn left for the user and stdin is a terminal: the user is asked
        term.read_until("user> ")
        term.type(b"more detail, ple")  # half a line typed, then Ctrl-C
        time.sleep(0.2)
        started = time.monotonic()
        term.type(b"\x03")
        code = term.finish(timeout=30)
        stopped_in = time.monotonic() - started
    finally:
        term.close()
    assert code == 130, term.seen
    assert stopped_in < 5, f"Ctrl-C took {stopped_in:.1f}s to stop the run"
    out = term.seen
    # the turns so far, where the run stands, and its id with the way to continue it
    assert "  3  reviewer  Needs work" in out
    assert "interrupted: after 3 turns, user to speak next" in out
    assert "more detail" not in out.split("user> ", 1)[1].split("\n", 1)[1]
    run_id = out.split("run ", 1)[1].split(" is open", 1)[0]
    assert run_id.startswith("wf-")
    assert f"continue it with `flowc resume {run_id} --db {db}" in out
    # nothing half-typed reached the WAL, and the run is open, not closed
    log = subprocess.run(
        [sys.executable, "-m", "flowc", "log", run_id, "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    stored = json.loads(log.stdout)
    assert stored["close_reason"] is None and stored["next_speaker"] == "user"
    assert [t["text"] for t in stored["turns"]] == [
        "Write on HTTPS",
        "Draft: Write on HTTPS",
        "Needs work",
    ]
    # `flowc resume` continues it: the user's answer from a script, then the run goes on
    (files / "more.json").write_text(
        json.dumps({"kickoff": "Write on HTTPS", "script": {"user": ["Shorter, please"]}})
    )
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowc",
            "resume",
            run_id,
            "--db",
            str(db),
            "--agents",
            str(files / "agents.py"),
            "--script",
            str(files / "more.json"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **released_by(files / "release")},
    )
    assert resumed.returncode == 0, resumed.stderr
    doc = json.loads(resumed.stdout)
    assert [t["speaker"] for t in doc["turns"]] == [
        "user",
        "drafter",
        "reviewer",
        "user",
        "drafter",
        "reviewer",
    ]
    assert doc["turns"][3]["text"] == "Shorter, please"
    assert doc["close_reason"] == "approved"


def test_ctrl_c_with_json_prints_the_turns_so_far_as_one_document(files: Path) -> None:
    (files / "release").touch()
    term = Terminal(review(files, "--json"), env=released_by(files / "release"))
    try:
        term.read_until("user> ")
        term.type(b"\x03")
        code = term.finish(timeout=30)
    finally:
        term.close()
    assert code == 130
    body = term.seen[term.seen.index("{") : term.seen.rindex("}") + 1]
    doc = json.loads(body)
    assert doc["interrupted"] is True and doc["close_reason"] is None
    assert doc["run_id"].startswith("wf-") and doc["next_speaker"] == "user"
    assert [t["text"] for t in doc["turns"]] == [
        "Write on HTTPS",
        "Draft: Write on HTTPS",
        "Needs work",
    ]
    assert doc["turns"][2]["rule"] == 4 and doc["turns"][2]["tool_calls"] == []


#: b's last turn waits for RELEASE_FILE: the run cannot end before the test lets it
SLOW = """
import asyncio, os

said = 0

async def b(turn):
    global said
    said += 1
    await asyncio.sleep(0.04)
    while said == 20 and not os.path.exists(os.environ["RELEASE_FILE"]):
        await asyncio.sleep(0.02)
    return "b says " + turn.text

AGENTS = {"b": b}
"""


@pytest.fixture
def slow_run(tmp_path: Path) -> list[str]:
    (tmp_path / "rr.flow").write_text(
        "speaker a: human\nspeaker b\nspeaker c\nround_robin a, b, c\nmax_turns 60\n"
    )
    (tmp_path / "slow.py").write_text(SLOW)
    (tmp_path / "s.json").write_text(
        json.dumps({"kickoff": "go", "script": {"a": ["x"] * 20, "c": ["z"] * 20}})
    )
    return [
        "run",
        str(tmp_path / "rr.flow"),
        "--script",
        str(tmp_path / "s.json"),
        "--agents",
        str(tmp_path / "slow.py"),
        "--db",
        ":memory:",
        "--json",
    ]


def test_a_long_run_shows_its_progress_on_a_terminal(slow_run: list[str], tmp_path: Path) -> None:
    release = tmp_path / "release"
    term = Terminal(slow_run, env=released_by(release))
    try:
        # the status line, while the run goes on: it cannot end before the release,
        # however late this test reads the terminal
        term.read_until("turns/s")
        assert term.proc.poll() is None
        release.touch()
        assert term.finish() == 0
    finally:
        term.close()
    # then a closing line on stderr; the JSON document is intact
    assert "60 turns in " in term.seen
    doc = json.loads(term.seen[term.seen.index("{") : term.seen.rindex("}") + 1])
    assert doc["turn_count"] == 60


def test_no_progress_and_no_prompt_when_piped(slow_run: list[str], tmp_path: Path) -> None:
    (tmp_path / "release").touch()
    proc = subprocess.run(
        [sys.executable, "-m", "flowc", *slow_run],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **released_by(tmp_path / "release")},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert json.loads(proc.stdout)["turn_count"] == 60


def test_jsonl_writes_each_turn_as_it_happens(files: Path) -> None:
    release = files / "release"
    (files / "s.json").write_text(
        json.dumps({"kickoff": "Write on HTTPS", "script": {"user": ["Shorter, please"]}})
    )
    proc = piped(review(files, "--jsonl", script="s.json", db=":memory:"), released_by(release))
    try:
        assert proc.stdout is not None
        start = json.loads(proc.stdout.readline())
        first = json.loads(proc.stdout.readline())
        second = json.loads(proc.stdout.readline())
        # two turns are out while the reviewer still waits: a pipe sees them now
        assert proc.poll() is None
        release.touch()
        rest = [json.loads(line) for line in proc.stdout]
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert start["event"] == "start" and start["run_id"].startswith("wf-")
    assert (first["event"], first["number"], first["speaker"], first["text"]) == (
        "turn",
        1,
        "user",
        "Write on HTTPS",
    )
    assert second["decided_by"] == "rule 3, line 9: when from drafter then reviewer"
    assert second["rule"] == 3 and second["next_speaker"] == "reviewer"
    *turns, end = rest
    assert [t["number"] for t in turns] == [3, 4, 5, 6]
    assert turns[-1]["tool_calls"] == [{"name": "approve", "args": {"note": "ok"}}]
    assert turns[-1]["context"] == {"set": {"done": True}, "delete": []}
    assert turns[-1]["closes"] == "approved" and turns[-1]["next_speaker"] is None
    assert end == {
        "event": "end",
        "run_id": start["run_id"],
        "close_reason": "approved",
        "context_vars": {"done": True},
        "turn_count": 6,
    }


def test_run_json_log_json_and_log_jsonl_agree(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (files / "s.json").write_text(
        json.dumps(
            {
                "kickoff": "Write on HTTPS",
                "script": {
                    "drafter": ["Draft 1"],
                    "reviewer": [{"tool": "approve", "args": {"note": "ok"}, "say": "Approved"}],
                },
            }
        )
    )
    db = str(files / "runs.db")
    assert (
        main(
            [
                "run",
                str(files / "review.flow"),
                "--script",
                str(files / "s.json"),
                "--db",
                db,
                "--json",
            ]
        )
        == 0
    )
    ran = json.loads(capsys.readouterr().out)
    assert [t["text"] for t in ran["turns"]] == ["Write on HTTPS", "Draft 1", "Approved"]
    assert ran["turns"][2]["tool_calls"] == [{"name": "approve", "args": {"note": "ok"}}]
    assert main(["log", ran["run_id"], "--db", db, "--json"]) == 0
    logged = json.loads(capsys.readouterr().out)
    assert logged["turns"] == ran["turns"]
    assert (logged["close_reason"], logged["turn_count"]) == ("approved", 3)
    assert main(["log", "last", "--db", db, "--jsonl"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["event"] for x in lines] == ["start", "turn", "turn", "turn", "end"]
    assert [{k: v for k, v in x.items() if k != "event"} for x in lines[1:4]] == ran["turns"]
    assert main(["log", "--db", db, "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["run_id"], listed["turns"], listed["status"], listed["close_reason"]) == (
        ran["run_id"],
        3,
        "closed",
        "approved",
    )
    assert main(["log", "--db", db, "--jsonl"]) == 0
    assert json.loads(capsys.readouterr().out) == listed


def test_a_mistake_in_log_options_prints_logs_own_usage(files: Path) -> None:
    for bad in (["--json", "--jsonl"], ["--json", "--bogus"]):
        proc = subprocess.run(
            [sys.executable, "-m", "flowc", "log", *bad, "--db", str(files / "runs.db")],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
        assert proc.returncode == 2
        assert proc.stderr.startswith("usage: flowc log "), proc.stderr
        assert "flowc log: error:" in proc.stderr


def test_sigint_outside_a_terminal_also_leaves_the_run_open(files: Path) -> None:
    # an interrupt from elsewhere (kill -INT) while an agent thinks: same as Ctrl-C
    proc = piped(review(files), released_by(files / "never"))

    def reviewer_asked() -> None:
        assert proc.stdout is not None
        while "→ reviewer" not in (line := proc.stdout.readline()):
            assert line, "the run ended before the reviewer was asked"

    out, err = interrupt(proc, reviewer_asked)
    assert proc.returncode == 130, err
    assert "interrupted: after 2 turns, reviewer to speak next" in out
    assert " is open; continue it with `flowc resume wf-" in err


def test_an_interrupted_jsonl_run_ends_with_an_interrupted_end_line(files: Path) -> None:
    proc = piped(review(files, "--jsonl"), released_by(files / "never"))
    lines: list[Any] = []

    def two_turns() -> None:
        assert proc.stdout is not None
        lines.extend(json.loads(proc.stdout.readline()) for _ in range(3))  # start, 1, 2

    out, err = interrupt(proc, two_turns)
    assert proc.returncode == 130, err
    [end] = [json.loads(x) for x in out.splitlines()]
    assert [x["event"] for x in lines] == ["start", "turn", "turn"]
    assert end == {
        "event": "end",
        "run_id": lines[0]["run_id"],
        "interrupted": True,
        "close_reason": None,
        "context_vars": {"done": False},
        "turn_count": 2,
        "next_speaker": "reviewer",
    }
    assert f"run {lines[0]['run_id']} is open" in err


@pytest.mark.parametrize("db", ["runs.db", ":memory:"])
def test_an_interrupted_json_run_away_from_a_terminal_prints_its_turns(
    files: Path, db: str
) -> None:
    # `--json` with no terminal folds nothing while the run goes: the turns come from the WAL
    waiting = files / "waiting"
    proc = piped(review(files, "--json", db=db), released_by(files / "never", WAITING_FILE=waiting))

    def reviewer_waits() -> None:
        deadline = time.monotonic() + 60
        while not waiting.exists():  # the reviewer waits for a file never made
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)

    out, err = interrupt(proc, reviewer_waits)
    assert proc.returncode == 130, err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["next_speaker"] == "reviewer"
    assert [t["text"] for t in doc["turns"]] == ["Write on HTTPS", "Draft: Write on HTTPS"]
    if db == ":memory:":
        assert "kept in memory only" in err
    else:
        assert "is open; continue it with `flowc resume" in err
