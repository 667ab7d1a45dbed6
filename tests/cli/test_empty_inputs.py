"""An empty input set (a folder holding no file the command reads) is exit 2 with a
message naming the paths, in every command that takes folders: never a clean report of
nothing ("no findings in 0 files", exit 0)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flowc import format_source
from flowc.cli import main


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check"], "flowc check: error: no .flow files or JSON graphs in {0}: nothing to check"),
        (
            ["check", "--format", "concise"],
            "flowc check: error: no .flow files or JSON graphs in {0}: nothing to check",
        ),
        (["test"], "flowc test: error: no .flow files in {0}: no scenarios to run"),
        (["test", "--coverage"], "flowc test: error: no .flow files in {0}: no scenarios to run"),
        (["fmt"], "flowc fmt: error: no .flow files in {0}: nothing to format"),
        (["fmt", "--check"], "flowc fmt: error: no .flow files in {0}: nothing to format"),
    ],
)
def test_a_folder_without_inputs_is_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "flows"
    (empty / "sub").mkdir(parents=True)
    (empty / "notes.txt").write_text("not a flow")
    (empty / "package.json").write_text('{"name": "x"}')  # JSON, but no graph
    assert main([*args, str(empty)]) == 2
    out, err = capsys.readouterr()
    assert err == message.format(empty) + "\n"
    assert "0 files" not in out


def test_check_without_paths_in_an_empty_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == (
        "",
        "flowc check: error: no .flow files or JSON graphs in .: nothing to check\n",
    )


def test_several_empty_folders_are_named_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert main(["check", str(a), str(b)]) == 2
    assert capsys.readouterr().err == (
        f"flowc check: error: no .flow files or JSON graphs in {a}, {b}: nothing to check\n"
    )


def test_one_empty_folder_beside_a_file_is_no_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    flow = tmp_path / "ok.flow"
    flow.write_text(
        format_source(
            "speaker user: human\nspeaker bot\nstart user\nmax_turns 4\n"
            "when from user then bot\nwhen from bot then user\n"
        )
    )
    assert main(["check", str(empty), str(flow)]) == 0
    assert capsys.readouterr().out.endswith("in 1 file\n")
    assert main(["fmt", "--check", str(empty), str(flow)]) == 0


def test_scenarios_of_a_folder_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["scenarios", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []
