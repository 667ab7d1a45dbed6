"""Names that need quoting (hyphens, backquoted keywords, long reasons with quotes)
survive DOT (checked through the real ``dot``) and Mermaid (escaped; the browser test
renders the same text with the real Mermaid library)."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from flowc.compiler.render.dot import dot_id, html_escape, render_dot
from flowc.compiler.render.image import render_svg
from flowc.compiler.render.mermaid import mermaid_text, render_mermaid
from tests.render.helpers import diagram_of

CASE = Path(__file__).resolve().parents[1] / "cases" / "render" / "quoting.flow"
SVG = "{http://www.w3.org/2000/svg}"
REASON = 'the customer\'s "really long" reason, with quotes, a backslash \\ and a pipe |'

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz `dot` is not installed (scripts/deps/graphviz.sh)"
)


def test_dot_id_and_html_escape() -> None:
    assert dot_id("user-1") == '"user-1"'
    assert dot_id('a "b" \\ c') == '"a \\"b\\" \\\\ c"'
    assert html_escape('<b> & "q"') == "&lt;b&gt; &amp; &quot;q&quot;"
    assert html_escape("a\nb") == "a&#10;b"
    assert html_escape("a\\b") == "a\\\\b"


def test_mermaid_text_escapes_everything_mermaid_reads() -> None:
    assert mermaid_text('"#<>&`|') == "#quot;#35;#lt;#gt;#amp;#96;#124;"
    assert mermaid_text("user-1 ok") == "user-1 ok"
    # a directive's characters never reach the text as themselves
    assert mermaid_text("%%{init: {'theme': 'dark'}}%%") == (
        "#37;#37;#123;init: #123;#39;theme#39;: #39;dark#39;#125;#125;#37;#37;"
    )


def test_no_name_or_reason_can_become_a_mermaid_directive() -> None:
    _, d = diagram_of((CASE.parent / "directive.flow").read_text(encoding="utf-8"))
    text = render_mermaid(d)
    body = text.split("---\n")[-1]
    assert "%%" not in text and "{init" not in body and "'" not in body
    assert text.startswith('---\ntitle: "\\u0025\\u0025{init: ')  # YAML reads it back as `%%{init`


#: what Mermaid (11.x, ``encodeEntities``) takes for a style statement before it parses a
#: diagram, and cuts the last ``;`` of: the entity that ``;`` ended then shows as written
MERMAID_STYLE_LINE = (re.compile(r"style.*:\S*#.*;"), re.compile(r"classDef.*:\S*#.*;"))
MERMAID_ENTITY = re.compile(r"#(\w+);")


def _entities_decoded(label: str) -> str:
    named = {"quot": '"', "amp": "&", "lt": "<", "gt": ">"}
    return MERMAID_ENTITY.sub(lambda m: chr(int(m[1])) if m[1].isdigit() else named[m[1]], label)


def test_a_label_holding_style_keeps_its_entities() -> None:
    """`</style>` (or `style ...: #...;`, `classDef`) in a name or value: no label line is
    one Mermaid cuts a `;` off, and each label reads back as written."""
    _, d = diagram_of((CASE.parent / "style.flow").read_text(encoding="utf-8"))
    text = render_mermaid(d)
    labels = [line for line in text.splitlines() if line.startswith("  n")]
    assert any("</style>" in n.title for n in d.nodes)
    for line in labels:
        assert not any(p.search(line) for p in MERMAID_STYLE_LINE), line
    for node in d.nodes:
        assert _entities_decoded(mermaid_text(node.title)) == node.title
    for edge in d.edges:
        assert all(_entities_decoded(mermaid_text(x)) == x for x in edge.label)


def test_mermaid_ids_are_generated_so_keywords_cannot_clash() -> None:
    _, d = diagram_of(CASE.read_text())
    text = render_mermaid(d)
    # `end` is a Mermaid keyword and `next` a .flow one: both are labels, never ids
    assert '  n3["<b>end</b>' in text
    assert '  n2["<b>next</b>"]' in text
    assert "#96;next#96;" in text  # the backquoted name in a condition
    reason = next(n.title for n in d.nodes if "really long" in n.title)
    assert reason == "terminate " + json.dumps(REASON)
    assert f'(["{mermaid_text(reason)}"])' in text


@needs_dot
def test_dot_quoting_survives_the_real_dot() -> None:
    compiled, d = diagram_of(CASE.read_text())
    svg = render_svg(render_dot(d))
    root = ET.fromstring(svg)
    groups = {g.get("id"): g for g in root.iter(f"{SVG}g")}
    for node in d.nodes:
        group = groups[node.id]
        # DOT keeps `\\` as two characters in ids (only `\"` is an escape), so the
        # escaping stays one-to-one and ids stay distinct
        assert group.findtext(f"{SVG}title") == node.key.replace("\\", "\\\\")
        texts = [t.text or "" for t in group.iter(f"{SVG}text")]
        if node.title != "start":
            assert texts[0] == node.title
            assert texts[1:] == list(node.details)
    reason_node = next(n for n in d.nodes if "really long" in n.title)
    assert (
        reason_node.title
        == 'terminate "the customer\'s \\"really long\\" reason, with quotes, a backslash \\\\ and a pipe |"'
    )
    for edge in d.edges:
        texts = [t.text or "" for t in groups[edge.id].iter(f"{SVG}text")]
        assert texts == list(edge.label)
    # every edge went between the nodes the diagram says
    titles = {e.id: groups[e.id].findtext(f"{SVG}title") for e in d.edges}
    keys = {n.id: n.key.replace("\\", "\\\\") for n in d.nodes}
    for edge in d.edges:
        assert titles[edge.id] == f"{keys[edge.source]}->{keys[edge.target]}"
    assert "user-1" in {n.title for n in d.nodes}
    assert compiled.speakers == ("user-1", "next", "end")
