"""Hostile files (issue 11, point 6), each command run under resource limits.

Links that lead out of a folder, devices, FIFOs, huge files, secrets that a report would
quote, and a `max-states` of 10^20 in a repository's pyproject.toml. Before the fix `fmt
DIR` rewrote a file outside DIR through a link, `/dev/zero` ran out of memory, a FIFO
hung, every report quoted the first line of whatever it read, and the checker took the
bound as given.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.hostile.limits import Limited, run_limited

LIMITS = {"memory_mib": 384, "cpu_seconds": 30, "wall_seconds": 60.0, "output_mib": 8}
UGLY = "speaker   a\nspeaker b\nwhen from a   then b\n"  # compiles; fmt would change it
SECRET = "AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _ok(result: Limited) -> None:
    assert not result.timed_out and not result.traceback, result.stderr[-2000:]


def test_fmt_folder_skips_links_that_leave_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.flow"
    victim.write_text(UGLY)
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "own.flow").write_text(UGLY)
    (repo / "evil.flow").symlink_to(victim)
    (repo / "sub" / "evil2.flow").symlink_to("../../outside/victim.flow")
    (repo / "inside.flow").symlink_to(repo / "own.flow")  # a link within the folder is fine
    (repo / "outdir").symlink_to(outside, target_is_directory=True)  # never entered
    result = run_limited(["fmt", str(repo)], **LIMITS)
    _ok(result)
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == UGLY  # untouched
    assert (repo / "own.flow").read_text() != UGLY
    assert (
        f"{repo / 'evil.flow'}: skipped: a symbolic link to a file outside {repo}" in result.stderr
    )
    assert str(repo / "sub" / "evil2.flow") in result.stderr
    assert "outdir" not in result.stderr


def test_check_folder_never_reads_links_that_leave_it(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "flow.flow").symlink_to(secret)
    (repo / "graph.json").symlink_to(secret)
    result = run_limited(["check", str(repo)], **LIMITS)
    _ok(result)
    assert SECRET[:10] not in result.stdout + result.stderr
    assert "skipped: a symbolic link to a file outside" in result.stderr


def test_every_folder_walk_skips_links_that_leave_it(tmp_path: Path) -> None:
    """`check DIR`, `fmt DIR` and `test DIR` walk a folder the same way: a link in it to
    `/dev/zero` or to a flow elsewhere is skipped with the same note, never read, and a
    hidden folder is not entered (`test DIR` read all three: the device refused with exit
    2, the flow elsewhere tested). Under a wall-clock limit: a command that read the
    device would hang or run out of memory."""
    flow = (Path(__file__).resolve().parents[2] / "examples" / "feedback_loop.flow").read_text()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "theirs.flow").write_text(flow)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "own.flow").write_text(flow)
    (repo / "zero.flow").symlink_to("/dev/zero")
    (repo / "theirs.flow").symlink_to(outside / "theirs.flow")
    (repo / ".venv").mkdir()  # a hidden folder is not entered either
    (repo / ".venv" / "vendored.flow").write_text("this is no flow")
    notes = [
        f"{repo / link}: skipped: a symbolic link to a file outside {repo}"
        for link in ("theirs.flow", "zero.flow")
    ]
    for command in (["check"], ["fmt", "--check"], ["test"]):
        result = run_limited([*command, str(repo)], **LIMITS)
        _ok(result)
        assert result.returncode == 0, (command, result.stderr)
        assert [line for line in result.stderr.splitlines() if "skipped" in line] == notes
        others = [line for line in result.stderr.splitlines() if line not in notes]
        for name in ("theirs.flow", "zero.flow", "vendored.flow"):  # never read or named
            assert name not in result.stdout and not [x for x in others if name in x]
        assert result.peak_mib < 200


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "sarif", "github"])
@pytest.mark.parametrize("suffix", [".flow", ".json"])
def test_a_report_never_quotes_a_file_that_is_not_a_flow(
    tmp_path: Path, fmt: str, suffix: str
) -> None:
    """Named on the command line (say, a link in a pull request to a key on the runner):
    the report gives the place, never the text."""
    path = tmp_path / f"named{suffix}"
    path.write_text(f"# a comment line first\n{SECRET}\nmore\n")
    result = run_limited(["check", "--format", fmt, str(path)], **LIMITS)
    _ok(result)
    out = result.stdout + result.stderr
    assert result.returncode == 1 and "E001" in out
    assert SECRET[:10] not in out and "its text is not shown" in out
    if fmt in ("text", "concise"):  # the place is given (JSON has no comments: line 1)
        assert f"{path}:{2 if suffix == '.flow' else 1}:1" in out


def test_a_typo_later_in_a_flow_is_still_quoted(tmp_path: Path) -> None:
    path = tmp_path / "typo.flow"
    path.write_text("speaker a\nspeaker b\nwhen form a then b\n")
    result = run_limited(["check", str(path)], **LIMITS)
    _ok(result)
    assert "when form a then b" in result.stdout + result.stderr


@pytest.mark.parametrize("command", ["compile", "check", "fmt", "render", "test", "decompile"])
def test_device_is_refused_before_reading(tmp_path: Path, command: str) -> None:
    link = tmp_path / ("zero.json" if command == "decompile" else "zero.flow")
    link.symlink_to("/dev/zero")
    result = run_limited([command, str(link)], **LIMITS)
    _ok(result)
    assert result.returncode == 2
    assert f"{link}: not a regular file" in result.stderr
    assert result.peak_mib < 200


def test_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.flow"
    os.mkfifo(fifo)
    result = run_limited(["check", str(fifo)], **{**LIMITS, "wall_seconds": 30.0})
    _ok(result)
    assert result.returncode == 2 and "not a regular file" in result.stderr


def test_run_script_from_a_device_is_refused(tmp_path: Path) -> None:
    flow = Path(__file__).resolve().parents[2] / "examples" / "feedback_loop.flow"
    script = tmp_path / "s.yaml"
    script.symlink_to("/dev/zero")
    result = run_limited(
        ["run", str(flow), "--script", str(script), "--db", str(tmp_path / "r.db")], **LIMITS
    )
    _ok(result)
    assert result.returncode == 2 and "not a regular file" in result.stderr


@pytest.mark.parametrize("command", ["check", "fmt"])
def test_file_over_the_cap_is_refused_before_reading(tmp_path: Path, command: str) -> None:
    big = tmp_path / "big.flow"
    with big.open("wb") as handle:  # sparse: 17 MiB that take no disk
        handle.truncate(17 * 1024 * 1024)
    result = run_limited([command, str(big)], **LIMITS)
    _ok(result)
    assert result.returncode == 2
    assert f"{big}: the file is 17.0 MiB; flowc reads at most 16.0 MiB" in result.stderr
    assert result.peak_mib < 200


def test_stdin_over_the_cap_is_refused(tmp_path: Path) -> None:
    result = run_limited(["check", "-"], stdin=b"#" * (16 * 1024 * 1024 + 10), **LIMITS)
    _ok(result)
    assert result.returncode == 2 and "<stdin>: more than 16.0 MiB" in result.stderr


@pytest.mark.parametrize("value", ["100000000000000000000", "1000001"])
def test_pyproject_cannot_set_max_states_past_the_cap(tmp_path: Path, value: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.flowc]\nmax-states = {value}\n")
    flow = tmp_path / "f.flow"
    flow.write_text("speaker a\nspeaker b\nwhen from a then b\n")
    result = run_limited(["check", str(flow)], **LIMITS)
    _ok(result)
    assert result.returncode == 2
    assert (
        "a pyproject.toml may set at most 1,000,000 (pass --max-states for more)" in result.stderr
    )


def test_pyproject_at_the_cap_and_the_command_line_past_it_still_work(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.flowc]\nmax-states = 1000000\n")
    flow = tmp_path / "f.flow"
    flow.write_text("speaker a\nspeaker b\nwhen from a then b\n")
    result = run_limited(["check", str(flow)], **LIMITS)
    _ok(result)
    assert result.returncode == 0, result.stderr
    result = run_limited(["check", "--max-states", "5000000", str(flow)], **LIMITS)
    assert result.returncode == 0, result.stderr


def test_pyproject_that_is_a_device_is_never_read(tmp_path: Path) -> None:
    """Not a regular file, so not a pyproject.toml: passed over, as a missing one."""
    (tmp_path / "pyproject.toml").symlink_to("/dev/zero")
    flow = tmp_path / "f.flow"
    flow.write_text("speaker a\nspeaker b\nwhen from a then b\n")
    result = run_limited(["check", str(flow)], **LIMITS)
    _ok(result)
    assert result.returncode == 0 and result.peak_mib < 200
