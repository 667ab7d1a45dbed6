"""One self-contained HTML page: the diagram (inline SVG), the source with line
numbers, and the findings; clicking a finding highlights its rule in the source and
its edges (or speaker) in the diagram, and clicking an edge highlights its rule.

The page loads nothing from the network: its style and script are inline.
"""

from __future__ import annotations

import json
import re
from html import escape

from flowc.compiler.render.compare import ADDED, changed_edges
from flowc.compiler.render.diagram import Diagram
from flowc.diagnostics import elide_quoted
from flowc.source import SourceFile

_STYLE = """
body { font-family: Helvetica, Arial, sans-serif; margin: 0; color: #222; }
header { padding: 10px 16px; border-bottom: 1px solid #ddd; }
header h1 { font-size: 18px; margin: 0; }
header p { margin: 4px 0 0; color: #555; font-size: 13px; }
main { display: flex; gap: 12px; padding: 12px; align-items: flex-start; }
#diagram { flex: 3 1 0; overflow: auto; border: 1px solid #ddd; min-width: 0; }
#diagram svg { max-width: 100%; height: auto; }
aside { flex: 2 1 0; min-width: 0; }
h2 { font-size: 14px; margin: 0 0 6px; }
#findings ol { list-style: none; padding: 0; margin: 0 0 12px; }
.finding { border: 1px solid #ddd; border-radius: 4px; padding: 6px 8px; margin-bottom: 4px;
  cursor: pointer; font-size: 13px; }
.finding:hover, .finding:focus { background: #f5f8ff; outline: none; }
.finding.active { border-color: #e03131; background: #fff5f5; }
.finding .code { font-weight: bold; margin-right: 6px; }
.finding.warning .code { color: #d9480f; }
#changes li.added { color: #2b8a3e; }
#changes li.removed { color: #c92a2a; }
.finding.error .code { color: #c92a2a; }
.finding.info .code { color: #1c6fd1; }
.finding .where { color: #777; margin-right: 6px; }
.empty { color: #777; font-size: 13px; }
pre.source { font-size: 12px; line-height: 1.45; border: 1px solid #ddd; margin: 0;
  overflow: auto; max-height: 70vh; }
.line { display: block; padding-right: 8px; white-space: pre; }
.line .ln { display: inline-block; width: 3.5em; padding-right: 8px; text-align: right;
  color: #999; user-select: none; }
.line.hl { background: #ffe066; }
#diagram g.hl path, #diagram g.hl polygon, #diagram g.hl ellipse {
  stroke: #e03131 !important; stroke-width: 3px; }
#diagram g.hl text { fill: #e03131 !important; }
#diagram g.edge { cursor: pointer; }
"""

_SCRIPT = """
(function () {
  var edgeLines = JSON.parse(document.getElementById('edge-lines').textContent);
  function clear() {
    document.querySelectorAll('.hl').forEach(function (el) { el.classList.remove('hl'); });
    document.querySelectorAll('.finding.active').forEach(function (el) {
      el.classList.remove('active'); });
  }
  function lines(from, to) {
    var first = null;
    for (var i = from; i <= to; i++) {
      var line = document.getElementById('L' + i);
      if (line) { line.classList.add('hl'); first = first || line; }
    }
    if (first) { first.scrollIntoView({block: 'nearest'}); }
  }
  function elements(ids) {
    ids.split(' ').filter(Boolean).forEach(function (id) {
      var el = document.getElementById(id);
      if (el) { el.classList.add('hl'); }
    });
  }
  function pick(item) {
    clear();
    item.classList.add('active');
    elements(item.dataset.nodes + ' ' + item.dataset.edges);
    if (item.dataset.lines) {
      var span = item.dataset.lines.split('-');
      lines(parseInt(span[0], 10), parseInt(span[1], 10));
    }
  }
  document.querySelectorAll('.finding').forEach(function (item) {
    item.addEventListener('click', function () { pick(item); });
    item.addEventListener('keydown', function (ev) {
      if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); pick(item); }
    });
  });
  document.querySelectorAll('#diagram g.edge').forEach(function (edge) {
    edge.addEventListener('click', function () {
      clear();
      edge.classList.add('hl');
      (edgeLines[edge.id] || []).forEach(function (span) { lines(span[0], span[1]); });
    });
  });
})();
"""

_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)


def _inline_svg(svg: str) -> str:
    """The ``<svg>`` element alone (no XML prolog or doctype)."""
    return _PROLOG.sub("", svg, count=1).strip()


def render_html(diagram: Diagram, svg: str, source: SourceFile | None = None) -> str:
    """The page for ``diagram`` drawn as ``svg`` (from :func:`render_image`), with the
    flow's ``source`` and the diagram's findings.

    >>> from flowc import compile_flow
    >>> from flowc.compiler.render.diagram import build_diagram
    >>> page = render_html(build_diagram(compile_flow("speaker a\\nspeaker b")), "<svg></svg>")
    >>> page.startswith("<!DOCTYPE html>") and "<svg></svg>" in page
    True
    """
    title = diagram.title or (source.name if source else "flow")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>flowc: {escape(title)}</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        "<header>",
        f"<h1>{escape(title)}</h1>",
    ]
    if diagram.description:
        out.append(f"<p>{escape(diagram.description)}</p>")
    out += ["</header>", "<main>", f'<section id="diagram">{_inline_svg(svg)}</section>', "<aside>"]

    changes = changed_edges(diagram)
    if changes:
        out.append('<section id="changes">')
        out.append(f"<h2>Changed edges ({len(changes)})</h2>")
        out.append("<ul>")
        for mark, text in changes:
            out.append(
                f'<li class="{mark}">{"added" if mark == ADDED else "removed"}: {escape(text)}</li>'
            )
        out.append("</ul>")
        out.append("</section>")
    out.append('<section id="findings">')
    out.append(f"<h2>Findings ({len(diagram.findings)})</h2>")
    if changes and not diagram.checked:
        out.append('<p class="empty">The edges NEW adds are green, the ones it removes red.</p>')
    elif not diagram.checked:
        out.append(
            '<p class="empty">Not checked: render with <code>--check</code> to list '
            "and mark the checker's findings.</p>"
        )
    elif not diagram.findings:
        out.append('<p class="empty">No findings.</p>')
    else:
        out.append("<ol>")
        for f in diagram.findings:
            d = f.diagnostic
            span = d.span
            where = f"{span.line}:{span.column}" if span else (d.json_path or "")
            lines = f"{span.line}-{span.end_line}" if span else ""
            out.append(
                f'<li class="finding {d.severity.value}" tabindex="0" data-code="{d.code.id}" '
                f'data-nodes="{" ".join(f.nodes)}" data-edges="{" ".join(f.edges)}" '
                f'data-lines="{lines}">'
                f'<span class="code">{d.code.id}</span><span class="where">{escape(where)}</span>'
                f"{escape(elide_quoted(d.message))}</li>"
            )
        out.append("</ol>")
    out.append("</section>")

    if source is not None:
        out.append('<section id="source">')
        out.append(f"<h2>{escape(source.name)}</h2>")
        rows = []
        for number in range(1, len(source.line_starts) + 1):
            text = escape(source.line_text(number))
            rows.append(
                f'<span class="line" id="L{number}"><span class="ln">{number}</span>{text}</span>'
            )
        out.append('<pre class="source"><code>' + "".join(rows) + "</code></pre>")
        out.append("</section>")
    out.append("</aside>")
    out.append("</main>")

    edge_lines = {e.id: [[e.spans[0].line, e.spans[0].end_line]] for e in diagram.edges if e.spans}
    payload = json.dumps(edge_lines, sort_keys=True).replace("</", "<\\/")
    out.append(f'<script type="application/json" id="edge-lines">{payload}</script>')
    out.append(f"<script>{_SCRIPT}</script>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"
