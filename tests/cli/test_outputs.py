"""Every option that names an output file (``-o``, ``--render``, ``--junit-xml``,
``--coverage-json``, ``--coverage-xml``) writes into a folder that exists: a missing one
is refused with exit 2 before the command does its work, and nothing is created."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main

ROOT = Path(__file__).resolve().parents[2]
FLOW = ROOT / "examples" / "feedback_loop.flow"
PYTHON = ROOT / "tests" / "migrate" / "corpus" / "transitions_chain.py"


def _commands(tmp_path: Path, out: Path) -> dict[str, tuple[list[str], str]]:
    """Each command with an output option aimed at ``out``: its arguments and the option."""
    knobs = tmp_path / "knobs.json"
    assert main(["compile", str(FLOW), "-o", str(knobs)]) == 0
    return {
        "compile": (["compile", str(FLOW), "-o", str(out)], "-o"),
        "decompile": (["decompile", str(knobs), "-o", str(out)], "-o"),
        "migrate": (["migrate", str(PYTHON), "-o", str(out)], "-o"),
        "render": (["render", str(FLOW), "-f", "dot", "-o", str(out)], "-o"),
        "diff -o": (["diff", str(FLOW), str(FLOW), "-o", str(out)], "-o"),
        "diff --render": (
            ["diff", str(FLOW), str(FLOW), "--render", str(out) + ".svg"],
            "--render",
        ),
        "test --junit-xml": (["test", str(FLOW), "--junit-xml", str(out)], "--junit-xml"),
        "test --coverage-json": (
            ["test", str(FLOW), "--coverage-json", str(out)],
            "--coverage-json",
        ),
        "test --coverage-xml": (["test", str(FLOW), "--coverage-xml", str(out)], "--coverage-xml"),
    }


NAMES = [
    "compile",
    "decompile",
    "migrate",
    "render",
    "diff -o",
    "diff --render",
    "test --junit-xml",
    "test --coverage-json",
    "test --coverage-xml",
]


@pytest.mark.parametrize("name", NAMES)
def test_a_missing_folder_is_refused_and_not_created(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing" / "deeper"
    args, option = _commands(tmp_path, missing / "out.txt")[name]
    capsys.readouterr()
    assert main(args) == 2
    out, err = capsys.readouterr()
    target = args[args.index(option) + 1]
    assert err == (
        f"flowc {args[0]}: error: {option} {target}: no such folder: {missing} (create it first)\n"
    )
    assert out == ""  # refused before the command did its work (nothing ran, nothing printed)
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("name", NAMES)
def test_an_existing_folder_is_written_into(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    args, option = _commands(tmp_path, folder / "out.txt")[name]
    assert main(args) in (0, 1)  # migrate's example leaves a construct out: exit 1
    target = Path(args[args.index(option) + 1])
    assert target.stat().st_size > 0


def test_a_file_in_the_way_is_not_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("x")
    out = tmp_path / "notes.txt" / "k.json"
    assert main(["compile", str(FLOW), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"flowc compile: error: -o {out}: {tmp_path / 'notes.txt'} is not a folder\n"
    )


def test_stdout_needs_no_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(FLOW), "-o", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["graph"]
