"""A human's line at the prompt that is not UTF-8 text (a Latin-1 terminal, a paste
with stray bytes, a pipe of another encoding) is refused and asked again, as any other
line the prompt refuses: it never reaches the run.

At a terminal, such a line used to stop the run (the turn failed: the run database
cannot hold the lone surrogates Python reads undecodable bytes as); from a pipe, its
bytes were silently replaced by U+FFFD and posted as a text nobody typed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flowc.commands.human_prompt import HumanPrompt, PromptError
from tests.runtime.test_human_prompt import AGENTS, FLOW

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """The sign-off flow of the prompt's tests, and its agent."""
    (tmp_path / "signoff.flow").write_text(FLOW)
    (tmp_path / "agents.py").write_text(AGENTS)
    return tmp_path


REFUSED = (
    "the line is not UTF-8 text: byte 0xff at column 4 is not part of a UTF-8 character; "
    "type it again (nothing was posted)"
)


def test_the_prompt_refuses_a_line_that_is_not_text() -> None:
    prompt = HumanPrompt("client", ("signed_off",))
    prompt.feed("/set signed_off")
    with pytest.raises(PromptError) as err:
        prompt.feed("caf\udcff au lait")  # byte 0xff, as a terminal's input() reads it
    assert str(err.value) == REFUSED
    with pytest.raises(PromptError, match=r"a lone surrogate \(U\+D800\) at column 1"):
        prompt.feed("\ud800")
    # the writes typed before it still wait for the turn's text
    assert prompt.prompt() == "client (signed_off = true)> "
    turn = prompt.feed("café")
    assert not isinstance(turn, str) and turn.say == "café"


def test_bytes_piped_in_that_are_not_utf8_are_refused_not_replaced(files: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowc",
            "run",
            str(files / "signoff.flow"),
            "--agents",
            str(files / "agents.py"),
            "--db",
            ":memory:",
            "--json",
        ],
        input=b"Write it\ncaf\xff au lait\n/set signed_off\n" + "café\n".encode(),
        capture_output=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    doc = json.loads(proc.stdout)
    texts = [t["text"] for t in doc["turns"]]
    assert texts == ["Write it", "Draft: Write it", "café"]
    assert "\ufffd" not in proc.stdout.decode()
    assert f"  {REFUSED}\n" in proc.stderr.decode()


# stdin's error handler: "surrogateescape" in the C and POSIX locales (this machine's
# C.UTF-8), "strict" in most others (en_US.UTF-8), where input() raises instead
@pytest.mark.parametrize("errors", ["surrogateescape", "strict"])
def test_a_terminal_line_that_is_not_utf8_does_not_stop_the_run(files: Path, errors: str) -> None:
    from tests.runtime.test_live_runs import Terminal

    db = files / "runs.db"
    term = Terminal(
        [
            "run",
            str(files / "signoff.flow"),
            "--agents",
            str(files / "agents.py"),
            "--db",
            str(db),
        ],
        env={"PYTHONIOENCODING": f"utf-8:{errors}"},
    )
    try:
        term.read_until("client> ")
        term.type(b"Write it\n")
        term.read_until("Draft: Write it")
        term.read_until("\nclient> ")
        term.type(b"caf\xff au lait\n")
        term.read_until("type it again")
        term.type(b"/set signed_off\n")
        term.read_until("client (signed_off = true)> ")
        term.type(b"Looks good\n")
        assert term.finish() == 0
    finally:
        term.close()
    assert REFUSED in term.seen
    assert 'closed: "signed off" after 3 turns' in term.seen


def test_a_long_line_piped_in_is_read_in_time_linear_in_its_length(files: Path) -> None:
    """A long answer (a pasted document) used to take time as the square of its length:
    each read of 64 KiB searched the whole line so far for its newline and copied it
    (32 MiB took 11 s, 4 MiB under one). Read within a CPU budget that only a linear
    reading keeps."""
    from tests.hostile.limits import run_limited

    line = b"x" * (40 * 1024 * 1024)
    result = run_limited(
        [
            "run",
            str(files / "signoff.flow"),
            "--agents",
            str(files / "agents.py"),
            "--db",
            ":memory:",
        ],
        stdin=line + b"\n/set signed_off\nok\n",
        memory_mib=2048,
        cpu_seconds=8,
        wall_seconds=60,
        output_mib=1,
    )
    assert not result.timed_out and not result.traceback, result.stderr[-2000:]
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "  1  client  xxxxxxxx" in result.stdout
