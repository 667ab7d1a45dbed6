"""``flowc test`` reads a JSON graph as ``flowc check`` reads it: a file that is no graph
(broken JSON, a JSON value that is no graph or knobs dict, a custom condition no plugin
registers) does not load, and is a
failed file (exit 1, a JUnit error), never "no scenarios" and a pass; a graph that
loads has no scenarios (they are written in .flow files) and passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.cli import main

FLOW = """speaker a
speaker b
start a
when from a then b
when from b then terminate "done"
"""


@pytest.mark.parametrize(
    ("text", "error", "where"),
    [
        ('{"bogus": 1', "E001", "broken.json:1:12"),
        ("[1, 2]", "E108", "broken.json\n"),
        ('{"transitions": 7}', "E108", "broken.json:transitions"),
        (  # a custom condition no plugin registers: `check` and `run` refuse it too
            '{"initial_speaker": "a", "transitions": [{"when": {"name": "nope_cond", '
            '"args": {}}, "then": {"name": "terminate", "args": {}}}]}',
            "E103",
            "broken.json:transitions[0].when.name",
        ),
    ],
)
def test_a_json_file_that_does_not_load_fails(
    text: str, error: str, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(text)
    junit = tmp_path / "junit.xml"
    assert main(["test", str(broken), "--junit-xml", str(junit)]) == 1
    out, err = capsys.readouterr()
    assert "ERROR the file does not load" in out and "no scenarios" not in out
    assert "0 scenarios: 0 passed, 0 failed; 1 file did not load" in out, out
    assert f"error[{error}]" in err and where in err
    assert 'errors="1"' in junit.read_text()
    assert 'message="the file does not load: ' in junit.read_text()
    # the same verdict as `check`
    assert main(["check", str(broken)]) == 1


def test_a_graph_that_loads_has_no_scenarios_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.flow").write_text(FLOW)
    graph = tmp_path / "a.json"
    assert main(["compile", str(tmp_path / "a.flow"), "-o", str(graph)]) == 0
    capsys.readouterr()
    assert main(["test", str(graph)]) == 0
    out, _ = capsys.readouterr()
    assert "(no scenarios: scenarios are written in .flow files)" in out
