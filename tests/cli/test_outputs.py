"""Every option that names an output file (``-o``, ``--render``, ``--junit-xml``,
``--coverage-json``, ``--coverage-xml``) writes into a folder that exists (a missing one
is refused with exit 2 before the command does its work, and nothing is created), never
onto one of the command's inputs or another output of it, and writes the file whole."""

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


# ── an output that is an input ───────────────────────────────────────────────


def _inputs(tmp_path: Path) -> dict[str, Path]:
    """Copies of the inputs in ``tmp_path``: the commands below may write over them."""
    flow = tmp_path / "flow.flow"
    flow.write_bytes(FLOW.read_bytes())
    python = tmp_path / "team.py"
    python.write_bytes(PYTHON.read_bytes())
    knobs = tmp_path / "knobs.json"
    assert main(["compile", str(FLOW), "-o", str(knobs)]) == 0
    drawn = tmp_path / "drawn.svg"  # diff reads a .flow whatever its name
    drawn.write_bytes(FLOW.read_bytes())
    return {"flow": flow, "python": python, "knobs": knobs, "drawn": drawn}


def _onto_input(tmp_path: Path, name: str) -> tuple[list[str], str, Path]:
    """Each command with an output option aimed at its own input: the arguments, the
    option and the input."""
    i = _inputs(tmp_path)
    flow = str(i["flow"])
    return {
        "compile": (["compile", flow, "-o", flow], "-o", i["flow"]),
        "decompile": (["decompile", str(i["knobs"]), "-o", str(i["knobs"])], "-o", i["knobs"]),
        "migrate": (["migrate", str(i["python"]), "-o", str(i["python"])], "-o", i["python"]),
        "render": (["render", flow, "-f", "svg", "-o", flow], "-o", i["flow"]),
        "diff -o": (["diff", str(FLOW), flow, "-o", flow], "-o", i["flow"]),
        "diff --render": (
            ["diff", str(FLOW), str(i["drawn"]), "--render", str(i["drawn"])],
            "--render",
            i["drawn"],
        ),
        "test --junit-xml": (["test", flow, "--junit-xml", flow], "--junit-xml", i["flow"]),
        "test --coverage-json": (
            ["test", flow, "--coverage-json", flow],
            "--coverage-json",
            i["flow"],
        ),
        "test --coverage-xml": (
            ["test", flow, "--coverage-xml", flow],
            "--coverage-xml",
            i["flow"],
        ),
    }[name]


@pytest.mark.parametrize("name", NAMES)
def test_an_output_that_is_the_input_is_refused_before_anything_is_written(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args, option, given = _onto_input(tmp_path, name)
    before = given.read_bytes()
    capsys.readouterr()
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert err == (
        f"flowc {args[0]}: error: {option} {given}: the same file as the input {given}: "
        "writing it would destroy the input (name another file)\n"
    )
    assert out == ""
    assert given.read_bytes() == before


@pytest.mark.parametrize("spelling", ["relative", "link", "hard link"])
def test_the_same_file_is_found_however_it_is_spelled(
    spelling: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    flow = _inputs(tmp_path)["flow"]
    before = flow.read_bytes()
    monkeypatch.chdir(tmp_path)
    if spelling == "relative":
        (tmp_path / "sub").mkdir()
        out = "sub/../flow.flow"
    elif spelling == "link":
        (tmp_path / "link.flow").symlink_to("flow.flow")
        out = "link.flow"
    else:
        (tmp_path / "other.flow").hardlink_to(flow)
        out = "other.flow"
    capsys.readouterr()
    assert main(["compile", str(flow), "-o", out]) == 2
    assert "the same file as the input" in capsys.readouterr().err
    assert flow.read_bytes() == before


def test_a_plugin_file_is_an_input_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plugin = tmp_path / "plugin.py"
    plugin.write_text("X = 1\n")
    assert main(["compile", str(FLOW), "--plugin", str(plugin), "-o", str(plugin)]) == 2
    assert "the same file as the input" in capsys.readouterr().err
    assert plugin.read_text() == "X = 1\n"


def test_two_outputs_on_one_file_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.xml"
    args = ["test", str(FLOW), "--junit-xml", str(report), "--coverage-xml", str(report)]
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert err == (
        f"flowc test: error: --coverage-xml {report}: the same file as --junit-xml {report}: "
        "give each output its own file\n"
    )
    assert out == "" and not report.exists()


# ── the write itself ─────────────────────────────────────────────────────────


def test_an_output_is_replaced_whole_or_left_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flowc.commands import console

    out = tmp_path / "knobs.json"
    out.write_text("old")
    out.chmod(0o640)

    def fail(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(console.os, "replace", fail)
    with pytest.raises(console.UsageError, match="cannot write"):
        console.write_output("new", str(out))
    assert out.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["knobs.json"]  # no temporary left
    monkeypatch.undo()
    console.write_output("new", str(out))
    assert out.read_text() == "new"
    assert out.stat().st_mode & 0o777 == 0o640  # the file keeps its permissions
    assert sorted(p.name for p in tmp_path.iterdir()) == ["knobs.json"]


def test_a_linked_output_is_written_where_it_points(tmp_path: Path) -> None:
    from flowc.commands import console

    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    console.write_output("new", str(tmp_path / "link.json"))
    assert (tmp_path / "link.json").is_symlink()
    assert (tmp_path / "real.json").read_text() == "new"


def test_a_device_is_written_to_directly(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(FLOW), "-o", "/dev/null"]) == 0
    assert Path("/dev/null").exists() and not Path("/dev/null").is_file()
