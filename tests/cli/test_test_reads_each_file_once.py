"""`flowc test` reads each file once: what it compiles and what it runs is one text.

It used to read a `.flow` file three times (to see that it can be read, to compile it,
and for the run target's rule texts) and a JSON graph twice: a file changed between the
reads gave a result that mixed two texts (the scenarios of one, the rules of another).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import flowc.inputs
from flowc.cli import main

FLOW = """flow a
speaker user: human
speaker b
start user
max_turns 3
when from user then b

scenario "{title}" {{
  user: "hi"
  expect next b
}}
"""


def _counting(monkeypatch: pytest.MonkeyPatch, path: Path, then: str | None) -> list[int]:
    """Count the opens of ``path``; before each after the first, write ``then`` over it
    (when given): the file changes between two reads."""
    opens: list[int] = []
    real = os.open

    def counted(file: str | os.PathLike[str], flags: int, *a: int, **k: int) -> int:
        if os.fspath(file) == str(path):
            if opens and then is not None:
                path.write_text(then, encoding="utf-8")
            opens.append(flags)
        return real(file, flags, *a, **k)

    monkeypatch.setattr(flowc.inputs.os, "open", counted)
    return opens


def test_a_flow_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flow = tmp_path / "a.flow"
    flow.write_text(FLOW.format(title="b answers"), encoding="utf-8")
    opens = _counting(monkeypatch, flow, None)
    assert main(["test", str(flow)]) == 0
    assert len(opens) == 1


def test_a_json_graph_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flow = tmp_path / "a.flow"
    flow.write_text(FLOW.format(title="b answers"), encoding="utf-8")
    graph = tmp_path / "a.json"
    assert main(["compile", str(flow), "-o", str(graph)]) == 0
    opens = _counting(monkeypatch, graph, None)
    assert main(["test", str(graph)]) == 0
    assert len(opens) == 1


def test_a_file_changed_after_it_was_read_is_run_as_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "a.flow"
    flow.write_text(FLOW.format(title="as first read"), encoding="utf-8")
    _counting(monkeypatch, flow, FLOW.format(title="written later"))
    assert main(["test", str(flow)]) == 0
    out = capsys.readouterr().out
    assert "ok    as first read" in out and "written later" not in out
