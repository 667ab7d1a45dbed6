"""Every output format quotes what it takes from a flow: names, tool names, context keys
and values, reasons, titles and file names that hold HTML, Markdown links, autolinks,
``@mentions``, backquotes, pipes, line breaks, control characters and workflow-command
text bring no element, link, autolink, mention or command into what reads them.

Each output is read as its reader reads it: Markdown (``flowc diff --format markdown``,
posted as a pull-request comment) by a real CommonMark/GFM renderer (markdown-it-py's
``gfm-like`` preset: tables, strikethrough, raw HTML and autolinks of bare URLs on); SVG,
JUnit and Cobertura by an XML parser, the HTML page by an HTML parser; SARIF as its
viewers read embedded links; GitHub annotations as the runner reads workflow commands.
Each hostile flow has a twin whose names are plain words: whatever the renderer makes
of the twin (its lists, tables, elements), it makes of the hostile flow too, and no more.
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lxml import etree
from lxml import html as lxml_html
from markdown_it import MarkdownIt
from markdown_it.token import Token

from flowc.cli import main
from flowc.escaping import visible

#: what the names bring: an element, a comment, links, autolinks of bare URLs and an
#: e-mail address, a mention, emphasis, strikethrough, an entity, a table cell's end, a
#: workflow command's escapes, and a terminal's escape sequence
HOSTILE = (
    "<img src=x onerror=alert(1)> <!-- c --> @someone [x](https://e.com/l) https://e.com/u "
    "www.e.com a@e.com *b* _i_ ~~s~~ &amp; | %0A::error::x, a:b \x1b[31m"
)

#: the placeholders of the flows, and what fills them: hostile, or a plain word
NAMES = {
    "FLOW": "flow " + HOSTILE,
    "SPEAKER": "speaker " + HOSTILE,
    "DEAD": "dead " + HOSTILE,
    "TOOL": "tool " + HOSTILE,
    "KEY": "key " + HOSTILE,
}
#: strings: JSON, so they may hold backquotes, line breaks and any control character
STRINGS = {
    "DESC": "description " + HOSTILE,
    "VALUE": "value `<b>x</b>` ``<img src=q>`` " + HOSTILE + "\n# heading\n<div>block</div>",
    "REASON": "reason `</td></tr></table><script>alert(1)</script>` " + HOSTILE,
    "REASON2": "reason2 <iframe src=//e.com></iframe>\n- item " + HOSTILE,
    "TITLE": "title \x01 ]]> </testcase> " + HOSTILE,
}

OLD = """flow `FLOW` DESC
speaker user: human
speaker `SPEAKER` {
  tool `TOOL` sets `KEY` = VALUE
}
speaker b
speaker `DEAD`
start user
max_turns 10
when from user then `SPEAKER`
when context.`KEY` == VALUE then terminate REASON
when from `SPEAKER` then b
when from b then terminate REASON

scenario TITLE {
  user: "hi"
  `SPEAKER` calls `TOOL`: "x"
  expect terminate REASON
}

scenario TITLE_FAILS {
  user: "hi"
  expect next b
}
"""

NEW = (
    OLD.replace("when from b then terminate REASON", "when from b then terminate REASON2")
    .replace("then b\n", "then b priority 2\n")
    .split("\nscenario", 1)[0]
)

#: a JSON graph's agent ids may hold anything: backquotes, line breaks, pipes
GRAPH_NAMES = {
    "A": "a`<img src=1>` @u | x\n<div>",
    "B": "b``` @v <img src=2> https://e.com/b",
    "KEY": "k`<img src=q>`\n# head",
}


def fill(template: str, hostile: bool) -> str:
    """The flow with each placeholder filled: hostile, or a plain word of the same kind."""
    strings = {**STRINGS, "TITLE_FAILS": STRINGS["TITLE"] + " fails"}
    text = template
    for key in sorted(strings, key=len, reverse=True):  # REASON2 before REASON
        text = text.replace(key, json.dumps(strings[key] if hostile else f"s_{key.lower()}"))
    for key, value in NAMES.items():
        text = text.replace(f"`{key}`", f"`{value}`" if hostile else f"n_{key.lower()}")
    return text


def graph(hostile: bool, priority: int) -> str:
    a, b, key = (GRAPH_NAMES[k] if hostile else f"g_{k.lower()}" for k in ("A", "B", "KEY"))
    return json.dumps(
        {
            "context_vars": {key: "x`<b>v</b>`|"},
            "graph": {
                "default_target": {"args": {"reason": "after"}, "name": "terminate"},
                "initial_speaker": a,
                "max_turns": None,
                "transitions": [
                    {
                        "priority": 0,
                        "then": {"args": {"agent_id": b}, "name": "agent"},
                        "when": {"args": {"agent_id": a}, "name": "from_speaker"},
                    },
                    {
                        "priority": priority,
                        "then": {"args": {"reason": "r`x`|<img src=3>"}, "name": "terminate"},
                        "when": {
                            "args": {"key": key, "value": "z`|`"},
                            "name": "context_equals",
                        },
                    },
                    {
                        "priority": 0,
                        "then": {"args": {"agent_id": a}, "name": "agent"},
                        "when": {"args": {"agent_id": b}, "name": "from_speaker"},
                    },
                ],
            },
        }
    )


def folder(tmp_path: Path, hostile: bool) -> Path:
    """Where the inputs go: a folder whose name is hostile too (it is in every report)."""
    path = tmp_path / ("in, [x](mailto:a@e.com) <b> @dir %0A::warning::y" if hostile else "in")
    path.mkdir()
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    main(list(argv))
    return capsys.readouterr().out


def outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str], hostile: bool) -> dict[str, Any]:
    """Every format of `flowc diff`, `flowc check` and `flowc test` (and the drawings) of
    the flows, hostile or plain."""
    here = folder(tmp_path, hostile)
    old, new = here / "old.flow", here / "new.flow"
    old.write_text(fill(OLD, hostile), encoding="utf-8")
    new.write_text(fill(NEW, hostile), encoding="utf-8")
    g_old, g_new = here / "old.json", here / "new.json"
    g_old.write_text(graph(hostile, 0), encoding="utf-8")
    g_new.write_text(graph(hostile, 2), encoding="utf-8")
    out: dict[str, Any] = {"paths": (str(old), str(new))}
    out["diff markdown"] = run(capsys, "diff", str(old), str(new), "--format", "markdown")
    out["diff markdown graphs"] = run(
        capsys, "diff", str(g_old), str(g_new), "--format", "markdown"
    )
    out["diff markdown graph and flow"] = run(
        capsys, "diff", str(g_old), str(old), "--format", "markdown"
    )
    out["diff json"] = run(capsys, "diff", str(old), str(new), "--format", "json")
    for suffix in ("svg", "html"):
        drawn = here / f"diff.{suffix}"
        run(capsys, "diff", str(old), str(new), "--render", str(drawn))
        out[f"diff --render {suffix}"] = drawn.read_text(encoding="utf-8")
    for fmt in ("sarif", "github", "json"):
        out[f"check {fmt}"] = run(capsys, "check", "--format", fmt, str(old), str(g_old))
    junit, cobertura = here / "junit.xml", here / "coverage.xml"
    run(
        capsys,
        "test",
        str(old),
        "--junit-xml",
        str(junit),
        "--coverage-xml",
        str(cobertura),
        "--coverage-json",
        str(here / "coverage.json"),
    )
    out["test junit"] = junit.read_text(encoding="utf-8")
    out["test cobertura"] = cobertura.read_text(encoding="utf-8")
    out["test coverage json"] = (here / "coverage.json").read_text(encoding="utf-8")
    for fmt in ("svg", "html"):
        drawn = here / f"render.{fmt}"
        run(capsys, "render", str(old), "--check", "-o", str(drawn))
        out[f"render {fmt}"] = drawn.read_text(encoding="utf-8")
    out["render mermaid"] = run(capsys, "render", str(old), "--check", "-f", "mermaid")
    return out


@pytest.fixture
def both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every output of the hostile flows, and of their twins."""
    (tmp_path / "hostile").mkdir()
    (tmp_path / "plain").mkdir()
    return (
        outputs(tmp_path / "hostile", capsys, True),
        outputs(tmp_path / "plain", capsys, False),
    )


# ── Markdown ──────────────────────────────────────────────────────────────────

GFM = MarkdownIt("gfm-like")  # tables, strikethrough, raw HTML, linkify


def tokens(text: str) -> Iterator[Token]:
    for token in GFM.parse(text):
        yield token
        yield from token.children or ()


#: what a name may never become in Markdown
FORBIDDEN = {"html_inline", "html_block", "link_open", "image"}
#: inline tokens that hold text: a name is code where the twin's plain word is text
TEXT = {"text", "code_inline", "text_special", "softbreak"}


def test_markdown_brings_no_element_link_or_mention(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    hostile, plain = both
    for name in ("diff markdown", "diff markdown graphs", "diff markdown graph and flow"):
        text = hostile[name]
        found = list(tokens(text))
        assert not [t for t in found if t.type in FORBIDDEN], (name, text)
        # no mention, autolink text or element outside code: the words flowc writes are
        # plain, what the flows bring is in code spans
        for t in found:
            if t.type == "text":
                assert not re.search(r"@\w|https?:|www\.|<\w|&amp;", t.content), (name, t.content)
        # the same blocks as the twin with plain names: no line, list item, table row or
        # cell more or less
        blocks = [t.type for t in GFM.parse(text) if t.type != "inline"]
        assert blocks == [t.type for t in GFM.parse(plain[name]) if t.type != "inline"], name
        # nor emphasis, strikethrough or anything else inline
        marks = collections.Counter(t.type for t in found if t.type not in TEXT)
        assert marks == collections.Counter(
            t.type for t in tokens(plain[name]) if t.type not in TEXT
        ), name
        # and the page it makes holds no element the twin's does not
        page = lxml_html.fragment_fromstring(GFM.render(text), create_parent="div")
        twin = lxml_html.fragment_fromstring(GFM.render(plain[name]), create_parent="div")
        tags = {e.tag for e in page.iter() if isinstance(e.tag, str)}
        assert tags <= {e.tag for e in twin.iter() if isinstance(e.tag, str)} | {"code"}, name
        assert page.findall(".//a") == [] and page.findall(".//img") == []
    # the names are all there, as code (the words of a hostile name, on one line)
    codes = " ".join(t.content for t in tokens(hostile["diff markdown"]) if t.type == "code_inline")
    assert "<img src=x onerror=alert(1)> <!-- c --> @someone [x](https://e.com/l)" in codes
    assert "\\x1b[31m" in codes and "\x1b" not in hostile["diff markdown"]


# ── XML and HTML ──────────────────────────────────────────────────────────────


def _tags(root: Any) -> collections.Counter[str]:
    return collections.Counter(e.tag for e in root.iter() if isinstance(e.tag, str))


def test_xml_outputs_are_xml_with_the_twins_elements(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    hostile, plain = both
    for name in ("render svg", "diff --render svg", "test junit", "test cobertura"):
        parser = etree.XMLParser(resolve_entities=False, no_network=True)
        root = etree.fromstring(hostile[name].encode(), parser)  # well-formed, or it raises
        twin = etree.fromstring(plain[name].encode(), parser)
        assert _tags(root) == _tags(twin), name
    junit = etree.fromstring(hostile["test junit"].encode())
    titles = [case.get("name") for case in junit.iter("testcase")]
    assert STRINGS["TITLE"].replace("\x01", "\\x01").replace("\x1b", "\\x1b") in titles
    failures = [f.get("message") for f in junit.iter("failure")]
    assert len(failures) == 1 and "\x1b" not in failures[0] and "\\x1b[31m" in failures[0]


def test_html_pages_hold_the_twins_elements(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    hostile, plain = both
    for name in ("render html", "diff --render html"):
        page = lxml_html.document_fromstring(hostile[name])
        twin = lxml_html.document_fromstring(plain[name])
        assert _tags(page) == _tags(twin), name
        assert "onerror" not in {a for e in page.iter() if isinstance(e.tag, str) for a in e.attrib}


# ── Mermaid ───────────────────────────────────────────────────────────────────


def test_mermaid_labels_hold_no_markup(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    hostile, plain = both
    _, front, body = hostile["render mermaid"].split("---\n", 2)
    # the title: a YAML string on one line, with no `%%` that could open a directive
    assert front.startswith("title: ") and front.count("\n") == 1 and "%" not in front
    lines = body.splitlines()
    assert len(lines) == len(plain["render mermaid"].split("---\n", 2)[2].splitlines())
    for line in lines:
        for label in re.findall(r'"(.*?)"', line):
            # Mermaid's own tags only; everything else is an entity code
            text = re.sub(r"</?(b|small|s|br/)>", "", label)
            assert not re.search(r"[<>`%{}'\x00-\x1f]|style|classDef", text), line


# ── SARIF and GitHub annotations ──────────────────────────────────────────────

#: an embedded link of a SARIF plain-text message, as viewers find it (a `[` not escaped)
SARIF_LINK = re.compile(r"(?<!\\)(?:\\\\)*\[[^\]]*(?<!\\)\]\(")


def _sarif_unescaped(text: str) -> str:
    return re.sub(r"\\([\\\[\]])", r"\1", text)


def test_sarif_messages_hold_no_embedded_link(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    hostile, _ = both
    log = json.loads(hostile["check sarif"])
    findings = json.loads(hostile["check json"])
    messages = [r["message"]["text"] for run in log["runs"] for r in run["results"]]
    assert len(messages) == len(findings) and messages
    for text in messages:
        assert not SARIF_LINK.search(text), text
    # read back as a viewer reads it, each message is the finding's, as written
    assert any("[x](https://e.com/l)" in _sarif_unescaped(m) for m in messages)
    for finding in findings:
        assert any(_sarif_unescaped(m).startswith(finding["message"]) for m in messages)


WORKFLOW_COMMAND = re.compile(r"::(error|warning|notice) ([^:]*)::(.*)")


def _workflow_unescaped(text: str) -> str:
    for escape, ch in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escape, ch)
    return text


def test_github_annotations_are_one_command_each_with_their_own_properties(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    hostile, _ = both
    findings = json.loads(hostile["check json"])
    lines = hostile["check github"].splitlines()
    assert len(lines) == len(findings)
    files = set(hostile["paths"]) | {str(Path(hostile["paths"][0]).with_name("old.json"))}
    for line in lines:
        match = WORKFLOW_COMMAND.fullmatch(line)
        assert match is not None, line
        props = dict(p.split("=", 1) for p in match[2].split(","))
        assert set(props) <= {"file", "line", "col", "endLine", "endColumn", "title"}, line
        assert _workflow_unescaped(props["file"]) in files
        message = _workflow_unescaped(match[3])
        assert any(message.startswith(visible(f["message"])) for f in findings), message
        # a log viewer acts on control characters (the hostile names hold `\x1b[31m`)
        assert "\x1b" not in line and "\x01" not in line, line
    assert any("\\x1b[31m" in line for line in lines), lines


def test_github_annotations_write_control_and_bidi_characters_as_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name that clears the screen and reverses the text, in a file whose name holds an
    escape too: a CI log viewer acts on such characters, so each is written as an escape
    in the message, the help and the `file=` property, as the text output writes it."""
    flow = tmp_path / "a\x1bb.flow"
    flow.write_text("speaker u: human\nspeaker b\nspeaker `c\x1b[2J\u202e`\nwhen from u then b\n")
    out = run(capsys, "check", "--format", "github", str(flow))
    assert out.startswith("::warning file="), out
    assert not {"\x1b", "\u202e"} & set(out), repr(out)
    assert "c\\x1b[2J\\u202e" in out and "a\\x1bb.flow" in out, out
