"""The diagram as Mermaid ``flowchart`` text (deterministic, byte for byte).

Node ids are ``n0``, ``n1``, ... (so no name can clash with Mermaid's keywords such as
``end``); every label is a quoted string whose special characters are Mermaid entity
codes (``#quot;``, ``#35;``, ``#96;``, ``#37;``, ``#123;``, ...), so quotes, backquoted
names, ``#``, ``</style>`` and ``%%{init: ...}%%`` print as written and never become a
Mermaid directive or HTML.
"""

from __future__ import annotations

import json

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
    Node,
    violation_legend,
)
from flowc.compiler.render.options import COLORS, RenderOptions
from flowc.escaping import mermaid_text

__all__ = ["mermaid_text", "render_mermaid"]


def _label(lines: list[str]) -> str:
    return '"' + "<br/>".join(lines) + '"'


def _node_shape(node: Node) -> str:
    lines = [mermaid_text(node.title)]
    if node.kind in ("speaker", HUMAN):
        lines[0] = f"<b>{lines[0]}</b>"
    if node.mark == DEAD:
        lines[0] = f"<s>{lines[0]}</s>"
    lines += [f"<small>{mermaid_text(d)}</small>" for d in node.details]
    text = _label(lines)
    kind = node.kind
    if kind == START:
        return f'(("{mermaid_text("start")}"))'
    if kind == HUMAN:
        return f"[/{text}\\]"
    if kind == TERMINAL:
        return f"([{text}])"
    if kind == CAP:
        return f"{{{{{text}}}}}"
    if kind == UNKNOWN:
        return f"{{{text}}}"
    if kind in (OTHERWISE, SHADOWED):
        return f">{text}]"
    return f"[{text}]"


_CLASSES = {
    "speaker": f"fill:{COLORS['speaker_fill']},stroke:{COLORS['speaker_line']}",
    HUMAN: f"fill:{COLORS['human_fill']},stroke:{COLORS['human_line']},stroke-width:2px",
    START: "fill:#222222,stroke:#222222,color:#ffffff",
    TERMINAL: f"fill:{COLORS['terminal_fill']},stroke:#333333,stroke-width:2px",
    CAP: f"fill:{COLORS['terminal_fill']},stroke:#333333",
    UNKNOWN: "fill:#ffffff,stroke:#333333,stroke-dasharray:4 3",
    OTHERWISE: "fill:#ffffff,stroke:#333333,stroke-dasharray:4 3",
    SHADOWED: "fill:#ffffff,stroke:#333333,stroke-dasharray:4 3",
    DEAD: f"fill:{COLORS['dead_fill']},stroke:{COLORS['dead']},color:{COLORS['dead']},"
    "stroke-dasharray:4 3",
    TRAP: f"fill:{COLORS['warning_fill']},stroke:{COLORS[TRAP]},stroke-width:3px",
    LOOP: f"fill:{COLORS['warning_fill']},stroke:{COLORS[LOOP]},stroke-width:3px",
}


#: a node on a property's violating run (the ``max_turns`` node a capped run ends at)
_VIOLATION_CLASS = f"fill:{COLORS['terminal_fill']},stroke:{COLORS[VIOLATION]},stroke-width:3px"
#: an edge on a property's violating run
_VIOLATION_LINK = f"stroke:{COLORS[VIOLATION]},color:{COLORS[VIOLATION]},stroke-width:4px"


def render_mermaid(diagram: Diagram, options: RenderOptions | None = None) -> str:
    """The diagram as a Mermaid flowchart, ending with a newline.

    >>> from flowc import compile_flow
    >>> from flowc.compiler.render.diagram import build_diagram
    >>> text = render_mermaid(build_diagram(compile_flow("speaker a\\nspeaker b\\nwhen from a then b")))
    >>> print(text.splitlines()[0])
    flowchart LR
    >>> '  n1 -->|"rule 1, line 3: from a"| n2' in text
    True
    """
    options = options or RenderOptions()
    out: list[str] = []
    if diagram.title:
        # a YAML double-quoted string; `%` as its \u escape, so no `%%{` directive can form
        title = json.dumps(diagram.title, ensure_ascii=False).replace("%", "\\u0025")
        out += ["---", f"title: {title}", "---"]
    out.append(f"flowchart {options.direction}")
    for node in diagram.nodes:
        out.append(f"  {node.id}{_node_shape(node)}")
    link_styles: list[tuple[int, str]] = []
    for index, edge in enumerate(diagram.edges):
        arrow = "-.->" if edge.kind == DEFAULT else "-->"
        if edge.label:
            lines = [mermaid_text(x) for x in edge.label]
            if edge.mark in (DEAD, TRAP):
                lines = [f"<s>{x}</s>" for x in lines]
            out.append(f"  {edge.source} {arrow}|{_label(lines)}| {edge.target}")
        else:
            out.append(f"  {edge.source} {arrow} {edge.target}")
        if edge.mark == DEAD:
            link_styles.append(
                (index, f"stroke:{COLORS['dead']},color:{COLORS['dead']},stroke-dasharray:2 3")
            )
        elif edge.mark in (TRAP, LOOP):
            link_styles.append(
                (index, f"stroke:{COLORS[edge.mark]},color:{COLORS[edge.mark]},stroke-width:3px")
            )
        elif edge.mark == VIOLATION:
            link_styles.append((index, _VIOLATION_LINK))
        elif edge.kind == TOOL:
            link_styles.append((index, f"stroke:{COLORS['tool']},color:{COLORS['tool']}"))
    if diagram.checked:
        out.append(f'  subgraph legend["{mermaid_text("flowc check")}"]')
        out.append("    direction TB")
        for mark in (DEAD, TRAP, LOOP):
            out.append(f'    legend_{mark}["{mermaid_text(MARK_LEGEND[mark])}"]')
        if diagram.violated:
            out.append(
                f'    legend_{VIOLATION}["{mermaid_text(violation_legend(diagram.violated))}"]'
            )
        if diagram.partial:
            out.append(f'    legend_partial["{mermaid_text(PARTIAL_LEGEND)}"]')
        out.append("  end")
    groups: dict[str, list[str]] = {}
    for node in diagram.nodes:
        groups.setdefault(node.mark or node.kind, []).append(node.id)
    if diagram.checked:
        for mark in (DEAD, TRAP, LOOP):
            groups.setdefault(mark, []).append(f"legend_{mark}")
        if diagram.violated:
            groups.setdefault(VIOLATION, []).append(f"legend_{VIOLATION}")
    # the violation's class only where a run is marked: other drawings stay as they were
    classes = {**_CLASSES, VIOLATION: _VIOLATION_CLASS} if VIOLATION in groups else _CLASSES
    for name, style in classes.items():
        out.append(f"  classDef {name} {style}")
    for name in classes:
        if name in groups:
            out.append(f"  class {','.join(groups[name])} {name}")
    for index, style in link_styles:
        out.append(f"  linkStyle {index} {style}")
    return "\n".join(out) + "\n"


#: what Mermaid draws at most by default (its ``maxTextSize`` and ``maxEdges``): past
#: either it shows an error diagram instead of the flow
MERMAID_MAX_TEXT = 50_000
MERMAID_MAX_EDGES = 500


def mermaid_limits(diagram: Diagram, text: str) -> str | None:
    """What in ``text`` (``diagram`` drawn as Mermaid) is past Mermaid's default limits,
    and how to draw it all the same; None when nothing is.

    >>> from flowc import compile_flow
    >>> from flowc.compiler.render.diagram import build_diagram
    >>> d = build_diagram(compile_flow("speaker a\\nspeaker b\\nwhen from a then b"))
    >>> mermaid_limits(d, render_mermaid(d)) is None
    True
    >>> print(mermaid_limits(d, "x" * 50_001))
    the Mermaid text is 50,001 characters, and Mermaid draws at most 50,000 (its `maxTextSize`): raise it in the viewer's Mermaid configuration, or draw the flow with -f svg
    """
    past = []
    if len(text) > MERMAID_MAX_TEXT:
        past.append(
            f"the Mermaid text is {len(text):,} characters, and Mermaid draws at most "
            f"{MERMAID_MAX_TEXT:,} (its `maxTextSize`)"
        )
    if len(diagram.edges) > MERMAID_MAX_EDGES:
        past.append(
            f"the diagram has {len(diagram.edges):,} edges, and Mermaid draws at most "
            f"{MERMAID_MAX_EDGES} (its `maxEdges`)"
        )
    if not past:
        return None
    raise_it = "raise them" if len(past) == 2 else "raise it"
    return (
        "; ".join(past) + f": {raise_it} in the viewer's Mermaid configuration, "
        "or draw the flow with -f svg"
    )
