"""In a real headless Chromium (Debian's ``chromium``, driven by Playwright without
any browser download):

- the HTML page: click a finding, its edges in the diagram and its rule in the source
  get highlighted; screenshots go to ``tests/artifacts/``;
- the Mermaid text of every golden renders with the real npm ``mermaid`` package to an
  SVG with the expected nodes and no error.

Skips with the reason when Chromium, Playwright, Graphviz or the npm package is missing
(``scripts/deps/browser.sh`` installs them).
"""

from __future__ import annotations

import itertools
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import flowc
from flowc.compiler.render.diagram import DEAD, RULE
from flowc.diagnostics import W201, W203, W205, Diagnostic

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts" / "render"
MERMAID_JS = ROOT / ".cache" / "mermaid" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
GOLDENS = sorted((ROOT / "tests" / "cases" / "render").rglob("*.mmd"))
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_playwright = None  # type: ignore[assignment]

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium is not installed (scripts/deps/browser.sh)"
    ),
    pytest.mark.skipif(
        sync_playwright is None, reason="playwright is not installed (pip install -e '.[dev]')"
    ),
]


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    assert sync_playwright is not None and CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="flowc-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            yield context.new_page()
        finally:
            context.close()


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
def test_html_page_click_a_finding_highlights_its_edges_and_rule(page: Any, tmp_path: Path) -> None:
    path = ROOT / "tests" / "cases" / "render" / "targets.flow"
    compiled = flowc.compile_flow(path.read_text(), filename=path.name)
    dead_rule = compiled.rules[2]  # when from coder then stay priority 5
    findings = [
        Diagnostic(W203, "rule can never fire", path.name, dead_rule.span),
        Diagnostic(W201, "tester can never speak", path.name, compiled.flow.speakers()[3].span),
        Diagnostic(W205, "loop", path.name, compiled.rules[0].span),
    ]
    rendering = flowc.render(path, findings=findings)
    # the page the browser loads is this test's own (another test job may be writing the
    # artifacts folder's copy); the copy stays for a person to open
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    html_path = tmp_path / "targets.html"
    html_path.write_text(rendering.html(), encoding="utf-8")
    (ARTIFACTS / "targets.html").write_text(rendering.html(), encoding="utf-8")
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(html_path.as_uri())

    items = page.locator("li.finding")
    assert items.count() == 3
    edges = [e.id for e in rendering.diagram.edges_of_rule(2)]
    assert edges and all(e.mark == DEAD for e in rendering.diagram.edges_of_rule(2))
    other = next(e.id for e in rendering.diagram.edges if e.kind == RULE and e.rule != 2)

    def highlighted(element_id: str) -> bool:
        return bool(
            page.evaluate("id => document.getElementById(id).classList.contains('hl')", element_id)
        )

    def stroke(element_id: str) -> str:
        return str(
            page.evaluate(
                "id => getComputedStyle(document.querySelector('#' + id + ' path')).stroke",
                element_id,
            )
        )

    assert not highlighted(edges[0])
    before = stroke(edges[0])
    page.locator("li.finding[data-code=W203]").click()
    for edge_id in edges:
        assert highlighted(edge_id)
        assert stroke(edge_id) == "rgb(224, 49, 49)" != before
    assert not highlighted(other)
    line = dead_rule.span.line
    assert page.evaluate(f"document.getElementById('L{line}').classList.contains('hl')")
    assert page.evaluate("document.querySelectorAll('.line.hl').length") == 1
    assert "from coder then stay" in page.inner_text(f"#L{line}")
    page.screenshot(path=str(ARTIFACTS / "html_finding_clicked.png"), full_page=True)

    # another finding moves the highlight: the speaker node this time
    page.locator("li.finding[data-code=W201]").click()
    tester = rendering.diagram.speaker_node("tester").id
    assert highlighted(tester) and not highlighted(edges[0])

    # clicking an edge highlights its rule in the source
    # click on the drawn path itself (the middle of a curved edge's box can be background)
    x, y = page.evaluate(
        """id => {
            const path = document.querySelector(`#${id} path`);
            const p = path.getPointAtLength(path.getTotalLength() / 2);
            const q = p.matrixTransform(path.getScreenCTM());
            return [q.x, q.y];
        }""",
        other,
    )
    page.mouse.click(x, y)
    other_edge = next(e for e in rendering.diagram.edges if e.id == other)
    assert page.evaluate(
        f"document.getElementById('L{other_edge.spans[0].line}').classList.contains('hl')"
    )
    assert errors == []


@pytest.mark.skipif(not MERMAID_JS.exists(), reason=f"npm mermaid is not installed at {MERMAID_JS}")
def test_mermaid_goldens_render_with_the_real_mermaid(page: Any) -> None:
    assert GOLDENS
    texts = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in GOLDENS}
    compiled = flowc.compile_flow((ROOT / "tests/cases/render/quoting.flow").read_text())
    marked = flowc.render(
        compiled,
        findings=[
            Diagnostic(W201, "x", span=compiled.flow.speakers()[1].span),
            Diagnostic(W203, "x", span=compiled.rules[0].span),
        ],
    )
    texts["marked quoting (legend)"] = marked.mermaid
    styled = flowc.render(
        flowc.compile_flow((ROOT / "tests/cases/render/style.flow").read_text(encoding="utf-8"))
    )
    texts["style (as rendered now)"] = styled.mermaid
    page.set_content('<!DOCTYPE html><html><body><div id="out"></div></body></html>')
    page.add_script_tag(path=str(MERMAID_JS))
    page.evaluate("mermaid.initialize({startOnLoad: false, securityLevel: 'strict'})")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for index, (name, text) in enumerate(sorted(texts.items())):
        result = page.evaluate(
            """async ([id, text]) => {
                 try {
                   const {svg} = await mermaid.render(id, text);
                   const out = document.getElementById('out');
                   out.innerHTML = svg;
                   return {svg, nodes: out.querySelectorAll('g.node').length,
                           edges: out.querySelectorAll('.edgePaths path, path.flowchart-link').length,
                           text: out.textContent};
                 } catch (err) { return {error: String(err && err.message || err)}; }
               }""",
            [f"m{index}", text],
        )
        assert "error" not in result, f"{name}: {result.get('error')}"
        assert result["svg"].startswith("<svg") and "Syntax error" not in result["svg"], name
        declared_nodes = sum(
            1
            for line in text.splitlines()
            if line.startswith(("  n", "    legend_")) and "-->" not in line and "-.->" not in line
        )
        declared_edges = sum(1 for line in text.splitlines() if "-->" in line or "-.->" in line)
        assert result["nodes"] == declared_nodes, name
        assert result["edges"] == declared_edges, name
        if "quoting" in name:
            # the quoting survived: the text shows the names and reasons as written
            for node in marked.diagram.nodes:
                assert node.title in result["text"], node.title
            for edge in marked.diagram.edges:
                assert all(line in result["text"] for line in edge.label), edge.label
            assert (
                '\\"really long\\"' in result["text"]
                and "rule 1, line 10: from user-1" in result["text"]
            )
        if "style" in name:
            # `</style>`, `style: #1;` and `classDef` in names and values print as written:
            # Mermaid cut the last `;` off such a line, showing `#gt`, `#96` or `#quot`
            for node in styled.diagram.nodes:
                assert node.title in result["text"], node.title
            for edge in styled.diagram.edges:
                assert all(line in result["text"] for line in edge.label), edge.label
            assert not re.search(r"#(gt|lt|quot|96|35)\b", result["text"]), result["text"]
            # no `</style>` of theirs ends Mermaid's style sheet or opens an element
            assert result["svg"].count("</style>") == result["svg"].count("<style")
        if "directive" in name:
            # `%%{init: ...}%%` in a name or reason prints as written and configures nothing:
            # no injected CSS, no dark theme, the page's strict security level kept
            directive = flowc.render(
                flowc.compile_flow(
                    (ROOT / "tests/cases/render/directive.flow").read_text(encoding="utf-8")
                )
            )
            for node in directive.diagram.nodes:
                assert node.title in result["text"], node.title
            style = "".join(re.findall(r"<style[^>]*>(.*?)</style>", result["svg"], re.S))
            assert style and "INJECTED" not in style and "#ff0000" not in style
            assert "#ECECFF" in style and "#1f2020" not in style  # the default theme's colours
            assert page.evaluate("mermaid.mermaidAPI.getConfig().securityLevel") == "strict"
            assert page.evaluate("mermaid.mermaidAPI.getConfig().theme") == "default"
    page.screenshot(path=str(ARTIFACTS / "mermaid_last.png"), full_page=True)


def _chain(edges: int, name_length: int) -> str:
    """A flow whose diagram has ``edges`` rule edges, its names ``name_length`` long."""
    names = [f"s{i}".ljust(name_length, "x") for i in range(edges + 1)]
    lines = [f"speaker {n}" for n in names]
    lines += [f"when from {a} then {b}" for a, b in itertools.pairwise(names)]
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(not MERMAID_JS.exists(), reason=f"npm mermaid is not installed at {MERMAID_JS}")
def test_render_warns_exactly_where_the_real_mermaid_stops_drawing(page: Any) -> None:
    """Past Mermaid's default `maxTextSize` or `maxEdges` it draws an error instead of the
    flow: `mermaid_limits` (what `flowc render -f mermaid` warns with) says so on exactly
    the texts the real Mermaid does not draw."""
    from flowc.compiler.render.mermaid import MERMAID_MAX_TEXT, mermaid_limits

    page.set_content('<!DOCTYPE html><html><body><div id="out"></div></body></html>')
    page.add_script_tag(path=str(MERMAID_JS))
    page.evaluate("mermaid.initialize({startOnLoad: false, securityLevel: 'strict'})")
    cases = [(10, 8), (480, 8), (498, 8), (499, 8), (500, 8), (520, 8)]
    # texts around the size limit, with few edges: the names' length moves the size
    base = len(flowc.render(flowc.compile_flow(_chain(60, 8))).mermaid)
    per_char = len(flowc.render(flowc.compile_flow(_chain(60, 9))).mermaid) - base
    near = 8 + (MERMAID_MAX_TEXT - base) // per_char
    cases += [(60, near - 1), (60, near), (60, near + 1), (60, near + 40)]
    drawn_and_warned = set()
    for index, (edges, length) in enumerate(cases):
        rendered = flowc.render(flowc.compile_flow(_chain(edges, length)))
        text = rendered.mermaid
        warning = mermaid_limits(rendered.diagram, text)
        result = page.evaluate(
            """async ([id, text]) => {
                 try {
                   const {svg} = await mermaid.render(id, text);
                   const out = document.getElementById('out');
                   out.innerHTML = svg;
                   return {nodes: out.querySelectorAll('g.node').length,
                           text: out.textContent};
                 } catch (err) { return {error: String(err && err.message || err)}; }
               }""",
            [f"lim{index}", text],
        )
        drawn = "error" not in result and result["nodes"] == len(rendered.diagram.nodes)
        assert drawn == (warning is None), (edges, length, len(text), warning, result)
        drawn_and_warned.add(drawn)
    assert drawn_and_warned == {True, False}  # both sides of the limits were tried
