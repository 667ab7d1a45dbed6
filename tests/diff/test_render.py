"""`flowc diff --render`: NEW drawn with added edges green and removed ones red (SVG and the page)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lxml import etree

from flowc import compile_flow
from flowc.cli import main
from flowc.compiler.render.compare import ADDED, REMOVED, mark_changes
from flowc.compiler.render.diagram import build_diagram
from tests.diff.test_known_edits import BASE

NO_REVIEWER = BASE.replace("when from drafter then reviewer\n", "")
SVG = "{http://www.w3.org/2000/svg}"


def marked(old: str, new: str) -> list[tuple[str, str, str | None]]:
    d = mark_changes(build_diagram(compile_flow(old)), build_diagram(compile_flow(new)))
    return sorted((d.node(e.source).key, d.node(e.target).key, e.mark) for e in d.edges if e.mark)


def test_removed_and_added_edges() -> None:
    assert marked(BASE, NO_REVIEWER) == [
        ("drafter", '[terminate "after_work"]', ADDED),
        ("drafter", "reviewer", REMOVED),
    ]


def test_a_moved_rule_is_no_changed_edge() -> None:
    lines = BASE.splitlines()
    i, j = (
        lines.index("when from drafter then reviewer"),
        lines.index("when from reviewer then drafter"),
    )
    lines[i], lines[j] = lines[j], lines[i]
    assert marked(BASE, "\n".join(lines) + "\n") == []
    assert marked(BASE, BASE) == []


def test_a_removed_speaker_is_drawn_back_in() -> None:
    old = BASE.replace("speaker drafter\n", "speaker drafter\nspeaker editor\n").replace(
        "when from reviewer then drafter",
        "when from reviewer then editor\nwhen from editor then drafter",
    )
    d = mark_changes(build_diagram(compile_flow(old)), build_diagram(compile_flow(BASE)))
    editor = [n for n in d.nodes if n.key == "editor"]
    assert len(editor) == 1 and editor[0].mark == REMOVED


needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's dot is not installed"
)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    old, new = tmp_path / "old.flow", tmp_path / "new.flow"
    old.write_text(BASE, encoding="utf-8")
    new.write_text(NO_REVIEWER, encoding="utf-8")
    return old, new


def _stroke(svg: etree._Element, edge_id: str) -> str:
    (group,) = [g for g in svg.iter(f"{SVG}g") if g.get("id") == edge_id]
    (path,) = group.iter(f"{SVG}path")
    return str(path.get("stroke"))


@needs_dot
def test_render_svg(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = files
    out = tmp_path / "diff.svg"
    assert main(["diff", str(old), str(new), "--render", str(out)]) == 1
    svg = etree.fromstring(out.read_bytes())
    d = mark_changes(build_diagram(compile_flow(BASE)), build_diagram(compile_flow(NO_REVIEWER)))
    added = [e.id for e in d.edges if e.mark == ADDED]
    removed = [e.id for e in d.edges if e.mark == REMOVED]
    assert [_stroke(svg, i) for i in added] == ["#2b8a3e"]
    assert [_stroke(svg, i) for i in removed] == ["#c92a2a"]
    assert {_stroke(svg, e.id) for e in d.edges if e.mark is None and e.kind == "rule"} == {"black"}
    assert "in OLD only (removed)" in out.read_text(encoding="utf-8")


@needs_dot
def test_render_html(files: tuple[Path, Path], tmp_path: Path) -> None:
    old, new = files
    out = tmp_path / "diff.html"
    assert main(["diff", str(old), str(new), "--render", str(out)]) == 1
    page = out.read_text(encoding="utf-8")
    assert (
        '<li class="added">added: drafter → terminate &quot;after_work&quot;: otherwise</li>'
        in page
    )
    assert (
        '<li class="removed">removed: drafter → reviewer: OLD rule 3, line 12: from drafter</li>'
        in page
    )
    assert "<svg" in page and 'id="L12"' in page  # NEW's source is on the page


def test_render_refuses_other_formats(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = files
    assert main(["diff", str(old), str(new), "--render", str(tmp_path / "x.png")]) == 2
    assert "--render writes an .svg or .html file" in capsys.readouterr().err
