"""The diagram as Graphviz DOT text (deterministic, byte for byte).

Every label is an HTML-like label, so names and reasons with quotes, backslashes or
angle brackets need only XML escaping; node names are quoted DOT ids. Each node and
edge carries an ``id`` (``n3``, ``e7``) that survives into the SVG, which the HTML page
uses to highlight findings.

Graphviz refuses a quoted string or a label longer than 16 KiB (``dot`` fails on the whole
file), so the text is kept within it: a name, reason or line longer than
:data:`MAX_LABEL_TEXT` characters is cut in its label (``...`` marks what is left out),
a label holds :data:`MAX_LABEL_BYTES` of DOT text at most (the lines past it are counted,
not shown), and such an element carries its full text as its tooltip
(:func:`~flowc.escaping.dot_tooltip`: DOT strings joined with ``+``, each short enough). A node named by a longer name is
named in the DOT text by its start and end (and its ``id``), so that edges do not repeat the
name in full.
"""

from __future__ import annotations

from flowc.compiler.render.compare import ADDED, CHANGE_LEGEND, REMOVED
from flowc.compiler.render.diagram import (
    CAP,
    DEAD,
    DEFAULT,
    HUMAN,
    LOOP,
    MARK_LEGEND,
    OTHERWISE,
    PARTIAL_LEGEND,
    SHADOWED,
    START,
    TERMINAL,
    TOOL,
    TRAP,
    UNKNOWN,
    VIOLATION,
    Diagram,
    Edge,
    Node,
    violation_legend,
)
from flowc.compiler.render.options import COLORS, RenderOptions
from flowc.diagnostics import counted, elide
from flowc.escaping import dot_html as html_escape
from flowc.escaping import dot_id, dot_tooltip

__all__ = ["dot_id", "html_escape", "layout_cost", "render_dot"]

FONT = "Helvetica"


def _attrs(items: list[tuple[str, str]]) -> str:
    return "[" + ", ".join(f"{k}={v}" for k, v in items) + "]"


def _q(value: str) -> str:
    return dot_id(value)


#: a name, reason or line longer than this many characters is cut in a label
MAX_LABEL_TEXT = 1000
#: a label's DOT text holds at most this many bytes of text (Graphviz refuses 16 KiB);
#: the lines past it are counted in a last line, and shown in the tooltip
MAX_LABEL_BYTES = 12_000
#: what a label line's markup may add to its text (``<FONT ...><I>...</I></FONT><BR/>``)
_LINE_MARKUP = 64


def fit_label(texts: tuple[str, ...] | list[str]) -> tuple[list[str], bool]:
    """The lines of a label within Graphviz's limits, and whether any was shortened: each
    line cut to :data:`MAX_LABEL_TEXT` characters, and the lines that fit in
    :data:`MAX_LABEL_BYTES` of DOT text, then one that counts the others.

    >>> fit_label(["a", "b"])
    (['a', 'b'], False)
    >>> shown, cut = fit_label(["x" * 5000] * 20)
    >>> cut, len(shown[0]), shown[-1]
    (True, 1000, '... and 9 more lines (see the tooltip)')
    >>> fit_label(["x" * 5000] * 12)[0][-1]
    '... and 1 more line (see the tooltip)'
    """
    shown: list[str] = []
    used = 0
    cut = False
    for i, text in enumerate(texts):
        line = elide(text, MAX_LABEL_TEXT)
        size = len(html_escape(line).encode("utf-8")) + _LINE_MARKUP
        if shown and used + size > MAX_LABEL_BYTES:
            shown.append(f"... and {counted(len(texts) - i, 'more line')} (see the tooltip)")
            return shown, True
        shown.append(line)
        used += size
        cut = cut or line != text
    return shown, cut


def _node_label(node: Node) -> tuple[str, bool]:
    """The node's label, and whether it was shortened (see :func:`fit_label`)."""
    if node.kind == START:
        return '""', False
    texts, cut = fit_label([node.title, *node.details])
    title = html_escape(texts[0])
    if node.kind in (HUMAN, "speaker"):
        title = f"<B>{title}</B>"
    if node.mark == DEAD:
        title = f"<S>{title}</S>"
    lines = [title]
    for detail in texts[1:]:
        text = html_escape(detail)
        lines.append(
            f'<FONT POINT-SIZE="9"><I>{text}</I></FONT>'
            if detail in ("human", "initiator")
            else f'<FONT POINT-SIZE="9">{text}</FONT>'
        )
    return "<" + "<BR/>".join(lines) + ">", cut


def _node_attrs(node: Node) -> list[tuple[str, str]]:
    kind = node.kind
    items: list[tuple[str, str]] = [("id", _q(node.id))]
    if kind == START:
        items += [
            ("shape", "circle"),
            ("style", "filled"),
            ("fillcolor", '"#222222"'),
            ("width", "0.18"),
            ("fixedsize", "true"),
            ("tooltip", '"start"'),
        ]
    elif kind == HUMAN:
        items += [
            ("shape", "box"),
            ("style", '"filled"'),
            ("peripheries", "2"),
            ("fillcolor", _q(COLORS["human_fill"])),
            ("color", _q(COLORS["human_line"])),
        ]
    elif kind == "speaker":
        items += [
            ("shape", "box"),
            ("style", '"rounded,filled"'),
            ("fillcolor", _q(COLORS["speaker_fill"])),
            ("color", _q(COLORS["speaker_line"])),
        ]
    elif kind == TERMINAL:
        items += [
            ("shape", "box"),
            ("style", '"rounded,filled,bold"'),
            ("fillcolor", _q(COLORS["terminal_fill"])),
        ]
    elif kind == CAP:
        items += [
            ("shape", "octagon"),
            ("style", '"filled"'),
            ("fillcolor", _q(COLORS["terminal_fill"])),
        ]
    elif kind == UNKNOWN:
        items += [("shape", "diamond"), ("style", '"dashed"')]
    elif kind in (OTHERWISE, SHADOWED):
        items += [("shape", "note"), ("style", '"dashed"')]
    if node.mark == DEAD:
        items += [
            ("color", _q(COLORS["dead"])),
            ("fontcolor", _q(COLORS["dead"])),
            ("fillcolor", _q(COLORS["dead_fill"])),
            ("style", '"filled,dashed"'),
        ]
    elif node.mark in (TRAP, LOOP):
        items += [
            ("color", _q(COLORS[node.mark])),
            ("penwidth", "2"),
            ("fillcolor", _q(COLORS["warning_fill"])),
        ]
    elif node.mark == VIOLATION:
        items += [("color", _q(COLORS[VIOLATION])), ("penwidth", "3")]
    elif node.mark in (ADDED, REMOVED):
        items += [
            ("color", _q(COLORS[node.mark])),
            ("fontcolor", _q(COLORS[node.mark])),
            ("penwidth", "2"),
        ]
        if node.mark == REMOVED:
            items.append(("style", '"dashed"'))
    # a later key wins in Graphviz, but keep each key once for readability
    merged: dict[str, str] = {}
    for k, v in items:
        merged[k] = v
    merged["label"], cut = _node_label(node)
    if cut:
        merged["tooltip"] = dot_tooltip("\n".join([node.title, *node.details]))
    return list(merged.items())


def _edge_attrs(edge: Edge) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = [("id", _q(edge.id))]
    if edge.label:
        texts, cut = fit_label(edge.label)
        lines = [html_escape(x) for x in texts]
        if edge.mark in (DEAD, TRAP):
            lines = [f"<S>{x}</S>" for x in lines]
        items.append(("label", "<" + "<BR/>".join(lines) + ">"))
        if cut:
            items.append(("tooltip", dot_tooltip("\n".join(edge.label))))
    if edge.kind == DEFAULT:
        items.append(("style", "dashed"))
    elif edge.kind == TOOL:
        items += [("color", _q(COLORS["tool"])), ("fontcolor", _q(COLORS["tool"]))]
    if edge.mark == DEAD:
        items += [("color", _q(COLORS["dead"])), ("fontcolor", _q(COLORS["dead"]))]
        items.append(("style", '"dashed"' if edge.kind == DEFAULT else '"dotted"'))
    elif edge.mark in (TRAP, LOOP, ADDED, REMOVED):
        items += [
            ("color", _q(COLORS[edge.mark])),
            ("fontcolor", _q(COLORS[edge.mark])),
            ("penwidth", "2"),
        ]
        if edge.mark == REMOVED:
            items.append(("style", '"dashed"'))
    elif edge.mark == VIOLATION:
        # thick and red, over the kind's own style (a default stays dashed)
        items += [
            ("color", _q(COLORS[VIOLATION])),
            ("fontcolor", _q(COLORS[VIOLATION])),
            ("penwidth", "3"),
        ]
    merged: dict[str, str] = {}
    for k, v in items:
        merged[k] = v
    return list(merged.items())


def _change_legend() -> list[str]:
    rows = "".join(
        f'<TR><TD><FONT COLOR="{COLORS[mark]}"><B>{"——" if mark == ADDED else "- - -"}</B></FONT></TD>'
        f'<TD ALIGN="LEFT">{html_escape(CHANGE_LEGEND[mark])}</TD></TR>'
        for mark in (ADDED, REMOVED)
    )
    table = (
        '<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">'
        '<TR><TD COLSPAN="2"><B>flowc diff</B></TD></TR>' + rows + "</TABLE>>"
    )
    return [
        "  subgraph cluster_changes {",
        '    id="changes-legend"; label=""; style=invis;',
        f'    "[changes]" [id="changes-table", shape=plaintext, fontsize=9, label={table}];',
        "  }",
    ]


def _legend(partial: bool = False, violated: tuple[str, ...] = ()) -> list[str]:
    rows = [
        f'<TR><TD BGCOLOR="{COLORS["dead_fill"]}"><FONT COLOR="{COLORS["dead"]}"><S>grey, struck</S>'
        f'</FONT></TD><TD ALIGN="LEFT">{html_escape(MARK_LEGEND[DEAD])}</TD></TR>',
        f'<TR><TD BGCOLOR="{COLORS["warning_fill"]}"><FONT COLOR="{COLORS[TRAP]}"><S>orange, struck</S>'
        f'</FONT></TD><TD ALIGN="LEFT">{html_escape(MARK_LEGEND[TRAP])}</TD></TR>',
        f'<TR><TD BGCOLOR="{COLORS["warning_fill"]}"><FONT COLOR="{COLORS[LOOP]}">orange</FONT></TD>'
        f'<TD ALIGN="LEFT">{html_escape(MARK_LEGEND[LOOP])}</TD></TR>',
    ]
    if violated:
        rows.append(
            f'<TR><TD><FONT COLOR="{COLORS[VIOLATION]}"><B>red, thick</B></FONT></TD>'
            f'<TD ALIGN="LEFT">{html_escape(violation_legend(violated))}</TD></TR>'
        )
    if partial:
        rows.append(
            f'<TR><TD COLSPAN="2" ALIGN="LEFT"><I>{html_escape(PARTIAL_LEGEND)}</I></TD></TR>'
        )
    table = (
        '<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">'
        '<TR><TD COLSPAN="2"><B>flowc check</B></TD></TR>' + "".join(rows) + "</TABLE>>"
    )
    return [
        "  subgraph cluster_legend {",
        '    id="legend"; label=""; style=invis;',
        f'    "[legend]" [id="legend-table", shape=plaintext, fontsize=9, label={table}];',
        "  }",
    ]


#: above this :func:`layout_cost` the hierarchical ``dot`` layout takes too long (minutes
#: for a few hundred speakers whose rules all reach one terminal); such diagrams ask
#: for Graphviz's ``sfdp`` engine (force-directed, straight edges) in the DOT text itself
MAX_DOT_COST = 3500


def layout_cost(diagram: Diagram) -> int:
    """An estimate of the work of Graphviz's ``dot`` layout: the number of rank steps
    the edges span (long edges become chains of virtual nodes; labelled ones twice).

    Ranks are longest paths from the start once the back edges of a depth-first
    search are set aside, as ``dot`` ranks them.

    >>> from flowc import compile_flow
    >>> from flowc.compiler.render.diagram import build_diagram
    >>> layout_cost(build_diagram(compile_flow("speaker a\\nspeaker b\\nwhen from a then b")))
    9
    """
    out: dict[str, list[str]] = {node.id: [] for node in diagram.nodes}
    for edge in diagram.edges:
        out[edge.source].append(edge.target)
    # iterative DFS in node order: edges to a node on the stack are back edges
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    order: list[str] = []
    back: set[tuple[str, str]] = set()
    for root in out:
        if root in state:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            node, i = stack[-1]
            if i < len(out[node]):
                stack[-1] = (node, i + 1)
                nxt = out[node][i]
                if state.get(nxt) == 1:
                    back.add((node, nxt))
                elif nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, 0))
            else:
                state[node] = 2
                order.append(node)
                stack.pop()
    rank = dict.fromkeys(out, 0)
    for node in reversed(order):  # a topological order of the forward edges
        for nxt in out[node]:
            if (node, nxt) not in back:
                rank[nxt] = max(rank[nxt], rank[node] + 1)
    return sum(
        max(1, abs(rank[e.target] - rank[e.source])) * (2 if e.label else 1) for e in diagram.edges
    ) + len(diagram.nodes)


def _dot_names(diagram: Diagram) -> dict[str, str]:
    """Node id -> the node's name in the DOT text, quoted: its key, or for a key longer
    than :data:`MAX_LABEL_TEXT` its start and end and its id (then primes until no other
    key is the same), so that each edge names it in a bounded number of characters."""
    used = {node.key for node in diagram.nodes}
    out: dict[str, str] = {}
    for node in diagram.nodes:
        key = node.key
        if len(key) > MAX_LABEL_TEXT:
            key = f"{elide(key, MAX_LABEL_TEXT)} [{node.id}]"
            while key in used:
                key += "'"
            used.add(key)
        out[node.id] = dot_id(key)
    return out


def render_dot(diagram: Diagram, options: RenderOptions | None = None) -> str:
    """The diagram as DOT text, ending with a newline.

    >>> from flowc import compile_flow
    >>> from flowc.compiler.render.diagram import build_diagram
    >>> text = render_dot(build_diagram(compile_flow("speaker a\\nspeaker b\\nwhen from a then b")))
    >>> print(text.splitlines()[0])
    digraph "flow" {
    >>> '"a" -> "b" [id="e1", label=<rule 1, line 3: from a>];' in text
    True
    """
    options = options or RenderOptions()
    lines = [f"digraph {dot_id(elide(diagram.title or 'flow', MAX_LABEL_TEXT))} {{"]
    graph_attrs: list[tuple[str, str]] = [
        ("rankdir", options.direction),
        ("fontname", _q(FONT)),
        ("nodesep", "0.4"),
        ("ranksep", "0.5"),
    ]
    if diagram.title:
        full = [diagram.title, *([diagram.description] if diagram.description else [])]
        texts, cut = fit_label(full)
        head = f"<B>{html_escape(texts[0])}</B>"
        if len(texts) > 1:
            head += f'<BR/><FONT POINT-SIZE="10">{html_escape(texts[1])}</FONT>'
        graph_attrs += [("label", f"<{head}>"), ("labelloc", "t")]
        if cut:
            graph_attrs.append(("tooltip", dot_tooltip("\n".join(full))))
    if layout_cost(diagram) > MAX_DOT_COST:
        graph_attrs += [("layout", "sfdp"), ("overlap", "prism"), ("splines", "false")]
    lines.append(f"  graph {_attrs(graph_attrs)};")
    lines.append(f"  node [fontname={_q(FONT)}, fontsize=11];")
    lines.append(f"  edge [fontname={_q(FONT)}, fontsize=9];")
    keys = _dot_names(diagram)
    for node in diagram.nodes:
        lines.append(f"  {keys[node.id]} {_attrs(_node_attrs(node))};")
    for edge in diagram.edges:
        lines.append(f"  {keys[edge.source]} -> {keys[edge.target]} {_attrs(_edge_attrs(edge))};")
    if diagram.checked:
        lines += _legend(diagram.partial, diagram.violated)
    if any(x.mark in (ADDED, REMOVED) for x in diagram.nodes) or any(
        x.mark in (ADDED, REMOVED) for x in diagram.edges
    ):
        lines += _change_legend()
    lines.append("}")
    return "\n".join(lines) + "\n"
