"""`flowc fmt --check DIR` and `flowc test DIR` read a folder as `flowc check DIR` does.

An entry that cannot be read (a symbolic link to itself, a link to nothing, a file no one
may read: tested in a child that meets file modes, root included) is said with its path
and the reason, the other files are still formatted or
tested, and the command exits 2 at the end, as `check` does; they used to stop at the first
such entry. `flowc check` on a symbolic link to itself says "too many levels of symbolic
links", as the other commands do, not "no such file or folder".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.cli import main
from tests.hostile.limits import run_limited

FLOW = """\
flow {name} "x"

speaker a
speaker b

start a

when from a then b
when from b then terminate "done"

scenario "ends" {{
  a: "one"
  b: "two"
  expect terminate "done"
}}
"""


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "flows"
    folder.mkdir()
    (folder / "a.flow").write_text(FLOW.format(name="a"), encoding="utf-8")
    (folder / "b_loop.flow").symlink_to("b_loop.flow")
    (folder / "c_gone.flow").symlink_to("nowhere.flow")
    (folder / "d.flow").write_text(FLOW.format(name="d"), encoding="utf-8")
    return folder


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def _says_each_entry(command: str, folder: Path, err: str) -> None:
    assert f"flowc {command}: error: {folder / 'b_loop.flow'}: cannot read (" in err
    assert "symbolic links" in err.lower()
    # (a link to nothing is said as one, named or found in a folder alike)
    gone = "cannot read (a symbolic link to something that is not there)"
    assert f"flowc {command}: error: {folder / 'c_gone.flow'}: {gone}" in err


@pytest.mark.parametrize("command", ["check", "fmt", "test"])
def test_each_unreadable_entry_is_said_and_the_rest_go_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    folder = _folder(tmp_path)
    args = {"check": ["check"], "fmt": ["fmt", "--check"], "test": ["test"]}[command]
    code, out, err = _run(capsys, *args, str(folder))
    assert code == 2, (out, err)
    _says_each_entry(command, folder, err)
    if command == "fmt":
        # both readable files were read (the folder's last one too), none to reformat
        assert "2 files already formatted, 2 files could not be formatted" in err
    if command == "test":
        assert f"{folder / 'a.flow'}\n  ok    ends" in out
        assert f"{folder / 'd.flow'}\n  ok    ends" in out
        assert "2 scenarios: 2 passed, 0 failed" in out


def test_an_unreadable_file_is_said_when_the_user_cannot_read_it(tmp_path: Path) -> None:
    folder = tmp_path / "flows"
    folder.mkdir()
    locked = folder / "a.flow"
    locked.write_text(FLOW.format(name="a"), encoding="utf-8")
    (folder / "b.flow").write_text(FLOW.format(name="b"), encoding="utf-8")
    locked.chmod(0)
    try:
        for args in (["fmt", "--check"], ["test"]):
            # (in a child that meets file modes as any user does, root included: CI runs as
            # root, whom a mode of 000 does not stop)
            result = run_limited([*args, str(folder)], obey_file_modes=True)
            assert result.returncode == 2, (result.stdout, result.stderr)
            assert f"{locked}: cannot read (Permission denied)" in result.stderr
            if args[0] == "fmt":  # (the other file was read and is formatted already)
                assert "1 file already formatted, 1 file could not be formatted" in result.stderr
            else:
                assert f"{folder / 'b.flow'}\n  ok    ends" in result.stdout
    finally:
        locked.chmod(0o644)


def test_check_says_a_symbolic_link_to_itself_is_a_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    code, out, err = _run(capsys, "check", str(loop))
    assert code == 2 and out == ""
    assert err == f"flowc check: error: {loop}: cannot read (Too many levels of symbolic links)\n"
    assert "no such file" not in err
    # a path that is not there is still said so
    code, _, err = _run(capsys, "check", str(tmp_path / "nothing.flow"))
    assert code == 2
    assert err == f"flowc check: error: {tmp_path / 'nothing.flow'}: no such file or folder\n"
    (tmp_path / "gone.flow").symlink_to("nothing.flow")
    code, _, err = _run(capsys, "check", str(tmp_path / "gone.flow"))
    assert code == 2
    assert err == (
        f"flowc check: error: {tmp_path / 'gone.flow'}: "
        "cannot read (a symbolic link to something that is not there)\n"
    )


def test_the_junit_report_has_an_error_for_each_unreadable_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (CI reads the report: an entry left out of it would read as all green)
    folder = _folder(tmp_path)
    report = tmp_path / "junit.xml"
    code, _, _ = _run(capsys, "test", "--junit-xml", str(report), str(folder))
    assert code == 2
    import xml.etree.ElementTree as ET

    suites = {s.get("name"): s for s in ET.parse(report).getroot().iter("testsuite")}
    for name in ("b_loop.flow", "c_gone.flow"):
        (error,) = suites[str(folder / name)].iter("error")
        assert error.get("message", "").startswith("the file cannot be read: "), error.attrib
    assert not list(suites[str(folder / "a.flow")].iter("error"))


def test_nothing_read_prints_no_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # (a path that could not be read is the whole story, as in `check`: no "0 scenarios")
    code, out, err = _run(capsys, "test", str(tmp_path / "missing.flow"))
    assert code == 2 and out == ""
    assert f"flowc test: error: {tmp_path / 'missing.flow'}: no such file or folder" in err
