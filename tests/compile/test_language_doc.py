"""``docs/language.md`` cannot drift from the compiler.

Every ```` ```flow ```` block of the reference is followed by the block that shows what
it compiles to, and this test recompiles each one:

- ```` ```flow [OPTIONS] ```` then ```` ```json ````: ``flowc compile`` with the
  options (``--graph``, ``--bind NAME=ID``) must succeed and print exactly that JSON
  (shown with one transition per line, see :func:`show`);
- ```` ```flow error ```` then ```` ```text ````: compiling must fail with exactly
  the diagnostics shown, as ``flowc compile`` prints them.

``pytest --update-golden`` rewrites the shown blocks from the compiler.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import render_text
from flowc.dsl.parser import KEYWORDS
from flowc.source import SourceFile

DOC = Path(__file__).resolve().parents[2] / "docs" / "language.md"
FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```\n", re.M | re.S)


def blocks(text: str) -> list[re.Match[str]]:
    return list(FENCE.finditer(text))


def pairs(text: str) -> list[tuple[re.Match[str], re.Match[str]]]:
    """(flow block, the block after it) for every ```flow block."""
    found = blocks(text)
    out = []
    for i, b in enumerate(found):
        if b["info"].split()[:1] == ["flow"]:
            assert i + 1 < len(found), f"flow block at offset {b.start()} has no result block"
            out.append((b, found[i + 1]))
    return out


def _one_line(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def show(data: dict[str, Any]) -> str:
    """Compact display: canonical key order, one transition per line."""

    def graph_lines(g: dict[str, Any], indent: str) -> list[str]:
        lines = []
        keys = sorted(g)
        for k in keys:
            comma = "," if k != keys[-1] else ""
            if k == "transitions" and g[k]:
                lines.append(f'{indent}"transitions": [')
                for j, t in enumerate(g[k]):
                    lines.append(f"{indent}  {_one_line(t)}{',' if j < len(g[k]) - 1 else ''}")
                lines.append(f"{indent}]{comma}")
            else:
                lines.append(f"{indent}{json.dumps(k)}: {_one_line(g[k])}{comma}")
        return lines

    if "graph" in data:
        lines = ["{", f'  "context_vars": {_one_line(data["context_vars"])},', '  "graph": {']
        lines += graph_lines(data["graph"], "    ")
        lines += ["  }", "}"]
    else:
        lines = ["{", *graph_lines(data, "  "), "}"]
    return "\n".join(lines) + "\n"


def expected_for(flow: re.Match[str], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> str:
    options = shlex.split(flow["info"])[1:]
    path = tmp_path / "doc.flow"
    path.write_text(flow["body"], encoding="utf-8")
    if options == ["error"]:
        compiled, diags = compile_source(SourceFile("doc.flow", flow["body"]))
        assert compiled is None and diags, "an `error` example must not compile"
        assert main(["compile", str(path)]) == 1
        capsys.readouterr()
        return render_text(diags, {"doc.flow": SourceFile("doc.flow", flow["body"])}, color=False)
    code = main(["compile", str(path), *options])
    out, err = capsys.readouterr()
    assert code == 0, f"doc example does not compile:\n{flow['body']}\n{err}"
    return show(json.loads(out))


def test_doc_examples_compile_to_what_the_doc_shows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, update_golden: bool
) -> None:
    text = DOC.read_text(encoding="utf-8")
    found = pairs(text)
    assert len(found) >= 20
    new_text = text
    for flow, shown in reversed(found):
        kind = "text" if shlex.split(flow["info"])[1:] == ["error"] else "json"
        assert shown["info"].strip() == kind, f"block after {flow['info']!r} must be ```{kind}"
        want = expected_for(flow, capsys, tmp_path)
        if update_golden:
            new_text = new_text[: shown.start("body")] + want + new_text[shown.end("body") :]
        else:
            assert shown["body"] == want, f"docs/language.md is stale for:\n{flow['body']}"
            if kind == "json":
                json.loads(shown["body"])  # what the page shows is valid JSON
    if update_golden and new_text != text:
        DOC.write_text(new_text, encoding="utf-8")


def test_show_is_faithful() -> None:
    data = {
        "context_vars": {"a": [1]},
        "graph": {
            "default_target": {"args": {"reason": "x"}, "name": "terminate"},
            "initial_speaker": "a",
            "max_turns": None,
            "transitions": [
                {
                    "priority": 0,
                    "then": {"args": {}, "name": "stay"},
                    "when": {"args": {}, "name": "always"},
                }
            ]
            * 2,
        },
    }
    assert json.loads(show(data)) == data
    assert json.loads(show(data["graph"])) == data["graph"]


def test_keyword_list_is_complete() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("**Keywords are reserved.**")
    block = next(b for b in blocks(text) if b.start() > start)
    assert set(block["body"].split()) == set(KEYWORDS)


def test_every_statement_and_form_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    flows = "\n".join(f["body"] for f, _ in pairs(text))
    for form in (
        "flow ",
        "speaker ",
        "speakers ",
        ": human",
        "start ",
        "initiator",
        "max_turns ",
        "context ",
        "context {",
        "when ",
        " priority ",
        "otherwise ",
        "sequence ",
        "round_robin ",
        "condition ",
        "target ",
        "scenario ",
        " -> ",
        "always",
        "from ",
        "tool ",
        "context.",
        " == ",
        " != ",
        " and ",
        " or ",
        "not ",
        "(",
        " next",
        " stay",
        " initiator",
        "terminate",
        "`",
        "#",
        "sets ",
        "clears ",
        "hands off to",
        "finishes",
        " | ",
        "list[",
        "--bind",
        "--graph",
        "property ",
        "never ",
        "always ",
        "eventually ",
        " within ",
        " at most ",
        " only after ",
        "after ",
        " before ",
        " until ",
        "previous ",
        "ends ",
        "turn >=",
    ):
        assert form in flows or form in text, form
