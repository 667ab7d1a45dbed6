"""`flowc test --junit-xml` names a file it could not read by its path, kept as data.

The report used to take the path back out of the problem's text (``PATH: reason``) at its
last ``": "``: a reason holding ``": "`` put part of the reason into the suite's name and
left the rest as the reason.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import flowc.inputs
from flowc.cli import main


def test_a_reason_holding_the_separator_keeps_the_path_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flow = tmp_path / "a: b.flow"
    flow.write_text("flow a\nspeaker b\nstart b\n", encoding="utf-8")
    real = flowc.inputs.read_bytes

    def refused(path: str, **kw: int) -> bytes:
        if path == str(flow):
            raise flowc.inputs.InputFileError(f"{path}: cannot read (remote: timed out)")
        return real(path, **kw)

    monkeypatch.setattr(flowc.inputs, "read_bytes", refused)
    report = tmp_path / "junit.xml"
    assert main(["test", str(flow), "--junit-xml", str(report)]) == 2
    suites = ET.parse(report).getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == [str(flow)]
    error = suites[0].find("testcase/error")
    assert error is not None
    assert error.get("message") == "the file cannot be read: cannot read (remote: timed out)"


def test_a_missing_path_holding_the_separator_is_named_whole(tmp_path: Path) -> None:
    missing = tmp_path / "x: y.flow"
    report = tmp_path / "junit.xml"
    assert main(["test", str(missing), "--junit-xml", str(report)]) == 2
    suites = ET.parse(report).getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == [str(missing)]
    error = suites[0].find("testcase/error")
    assert error is not None
    assert error.get("message") == "the file cannot be read: no such file or folder"


def test_stdin_that_cannot_be_read_is_named_as_given(tmp_path: Path) -> None:
    """`-` (stdin) past the 16 MiB a file may have: the report's suite is `-`, the name a
    stdin that was read has there too (stderr says `<stdin>`, as every command does)."""
    import subprocess
    import sys

    report = tmp_path / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "flowc", "test", "-", "--junit-xml", str(report)],
        input=b"a" * (17 << 20),
        capture_output=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert b"<stdin>: " in done.stderr
    suites = ET.parse(report).getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["-"]
