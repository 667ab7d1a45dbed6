"""Every file flowc reads goes through flowc.inputs (issue 11, points 3 and 6): the Python
API and `migrate`'s readers too, each case under resource limits.

- A file that is not UTF-8 is reported at the bad byte (file, line, column) with a short,
  escaped excerpt of its line: never the text before it, whatever its size, and never a
  raw escape sequence a terminal would act on.
- ``flowc.check(PATH)`` / ``flowc.render(Path)`` refuse ``/dev/zero``, a FIFO and a file
  over 16 MiB before reading (before: memory exhausted, a hang, the whole file read).
- ``flowc migrate`` reads JSON with the bounded reader (before: a 5,000-digit integer was
  "a bug in flowc", exit 2) and a module beside the input as every input is read.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.hostile.limits import Limited, run_limited

LIMITS = {"memory_mib": 384, "cpu_seconds": 30, "wall_seconds": 60.0, "output_mib": 8}

FLOW = "speaker user: human\nspeaker bot\nwhen from user then bot\n"


def _clean(result: Limited, code: int) -> str:
    out = result.stdout + result.stderr
    assert not result.timed_out, f"timed out after {result.seconds:.0f}s"
    assert not result.traceback, out[-3000:]
    assert result.returncode == code, out[-3000:]
    return out


# ── not UTF-8 ──────────────────────────────────────────────────────────────────────


def _hostile_bytes(tmp_path: Path) -> Path:
    """4 MB on one line, an escape sequence that clears the screen, then a bad byte."""
    path = tmp_path / "binary.flow"
    path.write_bytes(
        b"speaker a\nspeaker b  # " + b"x" * 4_000_000 + b"\x1b[2J\x07\xff\xfe tail\nmore\n"
    )
    return path


@pytest.mark.parametrize(
    "command", [["check"], ["compile"], ["fmt", "--check"], ["render"], ["test"]]
)
def test_not_utf8_names_the_byte_with_a_short_escaped_excerpt(
    tmp_path: Path, command: list[str]
) -> None:
    path = _hostile_bytes(tmp_path)
    result = run_limited([*command, str(path)], cwd=tmp_path, **LIMITS)
    out = _clean(result, 1)
    column = len("speaker b  # ") + 4_000_000 + len("\x1b[2J\x07") + 1
    assert f"binary.flow:2:{column}" in out
    assert 'the file is not valid UTF-8 (byte 0xff, in "...' in out
    assert 'xxxx\\x1b[2J\\x07\\xff\\xfe tail")' in out
    assert "\x1b" not in out and "\x07" not in out  # escaped, never sent to the terminal
    assert len(out) < 2000, len(out)


def test_not_utf8_json_report_is_bounded_too(tmp_path: Path) -> None:
    path = _hostile_bytes(tmp_path)
    result = run_limited(["check", "--format", "json", str(path)], cwd=tmp_path, **LIMITS)
    out = _clean(result, 1)
    assert '"row": 2' in out and "\\\\x1b[2J" in out and len(out) < 2000


# ── the Python API ─────────────────────────────────────────────────────────────────

_API = """
import sys
from pathlib import Path
import flowc
call, path = sys.argv[1], sys.argv[2]
try:
    if call == "check":
        print([(d.code.id, d.span.line, d.span.column, d.message) for d in flowc.check(path)])
    else:
        flowc.render(Path(path))
        print("rendered")
except OSError as err:
    print(type(err).__name__, "|", err)
except flowc.FlowError as err:
    print("FlowError |", err)
"""


def _api(tmp_path: Path, call: str, path: Path) -> str:
    result = run_limited([call, str(path)], cwd=tmp_path, python_code=_API, **LIMITS)
    return _clean(result, 0)


@pytest.mark.parametrize("call", ["check", "render"])
def test_api_refuses_dev_zero_before_reading(tmp_path: Path, call: str) -> None:
    link = tmp_path / "zero.flow"
    link.symlink_to("/dev/zero")
    out = _api(tmp_path, call, link)
    assert "InputFileError | " in out and "not a regular file" in out


@pytest.mark.parametrize("call", ["check", "render"])
def test_api_refuses_a_fifo_without_waiting_for_a_writer(tmp_path: Path, call: str) -> None:
    fifo = tmp_path / "pipe.flow"
    os.mkfifo(fifo)
    out = _api(tmp_path, call, fifo)
    assert "InputFileError | " in out and "not a regular file" in out


@pytest.mark.parametrize("call", ["check", "render"])
def test_api_refuses_a_file_over_the_size_cap(tmp_path: Path, call: str) -> None:
    big = tmp_path / "big.flow"
    with big.open("wb") as handle:  # sparse: 17 MiB on paper, nothing on disk
        handle.truncate(17 * 1024 * 1024)
    out = _api(tmp_path, call, big)
    assert "InputFileError | " in out and "flowc reads at most 16.0 MiB" in out


@pytest.mark.parametrize("what", ["/dev/zero", "a folder"])
def test_api_refuses_a_path_string_that_names_no_regular_file(tmp_path: Path, what: str) -> None:
    # (a string without a `.flow` or `.json` ending that names something on disk is a path
    # too: it was read as flow text, "/dev/zero" an E001 at its first character)
    out = _api(tmp_path, "check", Path(what) if what.startswith("/") else tmp_path)
    said = "not a regular file" if what.startswith("/") else "is a directory"
    assert "InputFileError | " in out and said in out, out


def test_api_text_that_names_a_folder_here_is_still_text(tmp_path: Path) -> None:
    # (one line of flow text is not a path because a folder of that name is in the
    # current folder: only a string holding a `/` may name one)
    (tmp_path / "speaker a").mkdir()
    out = _api(tmp_path, "check", Path("speaker a"))
    assert out.startswith("[('E110', "), out


def test_api_missing_file_is_still_file_not_found(tmp_path: Path) -> None:
    out = _api(tmp_path, "check", tmp_path / "missing.flow")
    assert "MissingInputError | " in out and "no such file" in out


def test_api_not_utf8_is_an_e001_as_on_the_command_line(tmp_path: Path) -> None:
    path = _hostile_bytes(tmp_path)
    out = _api(tmp_path, "check", path)
    assert "('E001', 2, " in out and "\\\\x1b[2J\\\\x07\\\\xff" in out and len(out) < 2000
    out = _api(tmp_path, "render", path)
    assert "FlowError | error[E001]: the file is not valid UTF-8 (byte 0xff" in out
    assert "\x1b" not in out and len(out) < 2000


def test_api_reads_a_good_file(tmp_path: Path) -> None:
    path = tmp_path / "ok.flow"
    path.write_bytes(b"\xef\xbb\xbf" + FLOW.encode())  # a BOM is dropped, as before
    assert _api(tmp_path, "check", path).strip() == "[]"
    assert _api(tmp_path, "render", path).strip() == "rendered"


# ── migrate ────────────────────────────────────────────────────────────────────────


def test_migrate_json_goes_through_the_bounded_reader(tmp_path: Path) -> None:
    path = tmp_path / "team.json"
    path.write_text(
        '{"provider": "autogen_agentchat.teams.RoundRobinGroupChat", '
        '"config": {"max_turns": ' + "9" * 5000 + "}}"
    )
    result = run_limited(["migrate", str(path)], cwd=tmp_path, **LIMITS)
    out = _clean(result, 2)
    assert (
        "team.json:1:85" in out and "at most 4,300 digits" in out and "(at config.max_turns)" in out
    )
    assert "bug in flowc" not in out


def test_migrate_json_nested_deep_names_the_place(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"provider": "x", "config": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = run_limited(["migrate", str(path)], cwd=tmp_path, **LIMITS)
    out = _clean(result, 2)
    assert "nested more than 500 levels deep (at config[0]" in out and "deep.json:1:" in out


MIGRATE_INPUT = """
from autogen import ConversableAgent, GroupChat, GroupChatManager
from tools import lookup

user = ConversableAgent("user", human_input_mode="ALWAYS")
bot = ConversableAgent("bot", functions=[lookup])
chat = GroupChat(agents=[user, bot], messages=[], max_round=4)
manager = GroupChatManager(groupchat=chat)
user.initiate_chat(manager, message="hi")
"""


@pytest.mark.parametrize("kind", ["zero", "fifo"])
def test_migrate_module_beside_the_input_is_read_within_limits(tmp_path: Path, kind: str) -> None:
    (tmp_path / "chat.py").write_text(MIGRATE_INPUT)
    tools = tmp_path / "tools.py"
    if kind == "zero":
        tools.symlink_to("/dev/zero")
    else:
        os.mkfifo(tools)
    result = run_limited(["migrate", str(tmp_path / "chat.py")], cwd=tmp_path, **LIMITS)
    assert not result.timed_out and not result.traceback, result.stderr[-3000:]
    assert result.returncode in (0, 1), result.stderr[-3000:]
    assert "speaker bot" in result.stdout
