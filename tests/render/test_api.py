"""``flowc.render(...)``: inputs, findings, and Jupyter display."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import flowc
from flowc.compiler import model as m
from flowc.compiler.render.image import DotNotFoundError
from flowc.compiler.render.rendering import Rendering
from flowc.diagnostics import W201, Diagnostic

CASES = Path(__file__).resolve().parents[1] / "cases" / "render"
TEXT = "speaker user: human\nspeaker bot\nspeaker idle\nwhen from user then bot\n"

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz `dot` is not installed (scripts/deps/graphviz.sh)"
)


def test_render_is_public() -> None:
    assert "render" in flowc.__all__
    assert isinstance(flowc.render(TEXT), Rendering)


def test_inputs_agree() -> None:
    path = CASES / "tools.flow"
    by_path = flowc.render(path)
    by_text = flowc.render(path.read_text(), filename=str(path))
    compiled = flowc.compile_flow(path.read_text(), filename=str(path))
    by_compiled = flowc.render(compiled)
    assert by_path.dot == by_text.dot == by_compiled.dot
    assert by_path.dot == (CASES / "tools.dot").read_text()
    assert by_path.mermaid == (CASES / "tools.mmd").read_text()
    # graph dicts, knobs dicts and model graphs draw the same JSON diagram
    from_dict = flowc.render(compiled.graph_dict)
    from_knobs = flowc.render(compiled.knobs)
    from_model = flowc.render(compiled.graph)
    from_json_text = flowc.render(json.dumps(compiled.knobs))
    assert from_dict.dot == from_knobs.dot == from_model.dot == from_json_text.dot
    assert isinstance(compiled.graph, m.TransitionGraph)


def test_errors_raise_flow_error() -> None:
    with pytest.raises(flowc.FlowError) as info:
        flowc.render("speaker a\nwhen from a then zed\n")
    assert {d.code.id for d in info.value.diagnostics} >= {"E101"}
    with pytest.raises(flowc.FlowError):
        flowc.render({"initial_speaker": 1})


def test_findings_from_python() -> None:
    compiled = flowc.compile_flow(TEXT)
    idle = compiled.flow.speakers()[2]
    r = flowc.render(compiled, findings=[Diagnostic(W201, "idle never speaks", span=idle.span)])
    assert r.diagram.checked
    assert r.diagram.speaker_node("idle").mark == "dead"
    assert [d.message for d in r.findings] == ["idle never speaks"]
    assert "<S><B>idle</B></S>" in r.dot


def test_direction_option() -> None:
    assert "rankdir=TB" in flowc.render(TEXT, direction="TB").dot
    with pytest.raises(ValueError, match="direction"):
        flowc.render(TEXT, direction="RL")


@needs_dot
def test_jupyter_display(tmp_path: Path) -> None:
    r = flowc.render(TEXT)
    svg = r._repr_svg_()
    assert svg is not None and "<svg" in svg
    bundle = r._repr_mimebundle_()
    assert bundle["image/svg+xml"] == svg
    assert bundle["text/markdown"].startswith("```mermaid\nflowchart LR\n")
    assert "3 speakers" not in bundle["text/plain"] and "nodes" in bundle["text/plain"]
    assert set(r._repr_mimebundle_(include=["text/plain"])) == {"text/plain"}
    assert "image/svg+xml" not in r._repr_mimebundle_(exclude=["image/svg+xml"])
    saved = r.save(tmp_path / "x.png")
    assert saved.read_bytes().startswith(b"\x89PNG")
    assert r.save(tmp_path / "x.mmd").read_text() == r.mermaid
    with pytest.raises(ValueError, match="format"):
        r.save(tmp_path / "x.txt")


def test_jupyter_display_without_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    r = flowc.render(TEXT)
    assert r._repr_svg_() is None
    bundle = r._repr_mimebundle_()
    assert "image/svg+xml" not in bundle and "text/markdown" in bundle
    with pytest.raises(DotNotFoundError, match="apt-get install graphviz"):
        r.svg()
