"""Terminal manners: colour only on a terminal (``NO_COLOR``, ``FORCE_COLOR``, ``TERM=dumb``),
and ``fmt`` saying what it checked, as ruff and black do."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from flowc.cli import main

REPO = Path(__file__).parents[2]
ESC = "\x1b["
BUGGY = REPO / "demo" / "review.flow"  # warnings W207, W204, W202


def _env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    env["TERM"] = "xterm-256color"
    env.update(overrides)
    return env


def run_on_terminal(args: list[str], **env: str) -> str:
    """``flowc ARGS`` with stdout on a real pseudo-terminal; what it printed there."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "flowc", *args],
            stdout=follower,
            stderr=subprocess.DEVNULL,
            env=_env(**env),
            cwd=REPO,
            timeout=60,
            check=False,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(leader)
    assert proc.returncode == 0
    return b"".join(chunks).decode()


def run_piped(args: list[str], **env: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "flowc", *args],
        capture_output=True,
        text=True,
        env=_env(**env),
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_colour_on_a_terminal() -> None:
    out = run_on_terminal(["check", str(BUGGY)])
    assert "warning[W204]" in out and ESC in out


def test_no_colour_into_a_pipe() -> None:
    out = run_piped(["check", str(BUGGY)])
    assert "warning[W204]" in out and ESC not in out


@pytest.mark.parametrize("value", ["1", "true", "0"])  # any non-empty value, as no-color.org says
def test_no_color_turns_colour_off_on_a_terminal(value: str) -> None:
    out = run_on_terminal(["check", str(BUGGY)], NO_COLOR=value)
    assert "warning[W204]" in out and ESC not in out


def test_an_empty_no_color_is_not_set() -> None:
    assert ESC in run_on_terminal(["check", str(BUGGY)], NO_COLOR="")


def test_force_color_colours_a_pipe() -> None:
    out = run_piped(["check", str(BUGGY)], FORCE_COLOR="1")
    assert "W204" in out and ESC in out


def test_no_color_wins_over_force_color() -> None:
    out = run_piped(["check", str(BUGGY)], FORCE_COLOR="1", NO_COLOR="1")
    assert ESC not in out


def test_a_dumb_terminal_gets_no_colour() -> None:
    assert ESC not in run_on_terminal(["check", str(BUGGY)], TERM="dumb")


# ── fmt's summary ─────────────────────────────────────────────────────────────

FORMATTED = "speaker user: human\nspeaker bot\nwhen from user then bot\n"
MESSY = "speaker user:human\nspeaker   bot\nwhen from user then bot\n"


def _tree(tmp_path: Path, messy: int, tidy: int) -> Path:
    for i in range(messy):
        (tmp_path / f"messy{i}.flow").write_text(MESSY, encoding="utf-8")
    for i in range(tidy):
        (tmp_path / f"tidy{i}.flow").write_text(FORMATTED, encoding="utf-8")
    return tmp_path


def test_fmt_check_says_what_it_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fmt", "--check", str(_tree(tmp_path, 0, 3))]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == "3 files already formatted"


def test_fmt_check_counts_what_would_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fmt", "--check", str(_tree(tmp_path, 1, 2))]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == "1 file would be reformatted, 2 files already formatted"
    assert err[0] == f"would reformat {tmp_path / 'messy0.flow'}"


def test_fmt_says_what_it_rewrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "broken.flow").write_text("speaker\n", encoding="utf-8")
    assert main(["fmt", str(_tree(tmp_path, 2, 1))]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == "2 files reformatted, 1 file left unchanged, 1 file could not be formatted"
    assert (
        main(["fmt", "--check", str(tmp_path / "messy0.flow"), str(tmp_path / "tidy0.flow")]) == 0
    )
    assert capsys.readouterr().err.splitlines()[-1] == "2 files already formatted"


def test_fmt_of_stdin_prints_only_the_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(MESSY.encode())))
    assert main(["fmt", "-"]) == 0
    out, err = capsys.readouterr()
    assert out == FORMATTED and err == ""
