"""One page per code: ``docs/checks/CODE.md`` (shipped as ``flowc/docs/CODE.md``).

Each page has "What it does", "Why is this bad", "Example" and "Use instead"; the
Example fires exactly its code and "Use instead" fires nothing (for the M00x codes of
``flowc migrate`` the blocks are Python inputs of ``flowc migrate``). A code block's info
string may carry options after the language: ```` ```flow --max-states 10 ````.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.compiler.analysis import CheckOptions, check_source
from flowc.diagnostics import CODES
from flowc.migrate import migrate_source
from flowc.source import SourceFile

ROOT = Path(__file__).parent.parent.parent
DOCS = ROOT / "docs" / "checks"
SHIPPED = ROOT / "flowc" / "docs"
#: the codes of ``flowc check`` (the M00x codes belong to ``flowc migrate``)
CHECK_CODES = sorted(code for code in CODES if not code.startswith("M"))
MIGRATE_CODES = sorted(code for code in CODES if code.startswith("M"))
SECTIONS = ("## What it does", "## Why is this bad", "## Example", "## Use instead")
#: what an Example may fire beside its code: W218's needs a composite (`and`), which a
#: bare AG2 also cannot load (E112); W205's and W206's loops also run differently on AG2
#: (I304: a turn back to its own speaker, a run past AG2's inbox limit); I305's partial
#: analysis is an I301 too
ALSO = {"W218": ["E112"], "W205": ["I304"], "W206": ["I304"], "I305": ["I301"]}
BLOCK = re.compile(r"```(?P<info>[^\n]*)\n(?P<body>.*?)\n```", re.S)


def block_after(text: str, heading: str, skip: str = "") -> tuple[str, str]:
    """The first code block after ``heading`` (with ``skip``, the first that is not a
    ```python block: E115's Example shows its plugin first)."""
    at = text.index(heading)
    while True:
        match = BLOCK.search(text, at)
        assert match is not None, f"no code block after {heading}"
        if not skip or not match.group("info").startswith("python"):
            return match.group("info").strip(), match.group("body") + "\n"
        at = match.end()


def findings(info: str, body: str, code: str, page: str = "") -> list[str]:
    lang, *opts = info.split()
    options = CheckOptions()
    if opts and opts[0] == "--plugin":
        return with_plugin(body, code, page)
    if opts:
        assert opts[0] in ("--max-states", "--target", "--select"), opts
        if opts[0] == "--max-states":
            options = CheckOptions(max_states=int(opts[1]))
        elif opts[0] == "--select":  # a code reported only when selected (I307)
            options = CheckOptions(select=tuple(opts[1].split(",")))
        else:
            options = CheckOptions(target=opts[1])
    name = f"{code}.{'json' if lang == 'json' else 'flow'}"
    return sorted({d.code.id for d in check_source(SourceFile(name, body), options)})


def with_plugin(body: str, code: str, page: str) -> list[str]:
    """`flowc check --plugin` of a block, the plugin being the page's ```python block;
    the classes it registers are gone afterwards."""
    import tempfile

    from tests.plugin_registry import remember_plugins

    plugin = BLOCK.search(page[page.index("```python") :])
    assert plugin is not None
    restore = remember_plugins()
    try:
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "routing.py").write_text(plugin.group("body") + "\n")
            (Path(folder) / f"{code}.flow").write_text(body)
            with contextlib.redirect_stdout(io.StringIO()) as out:
                main(
                    [
                        "check",
                        str(Path(folder) / f"{code}.flow"),
                        "--format",
                        "json",
                        "--plugin",
                        str(Path(folder) / "routing.py"),
                    ]
                )
    finally:
        restore()
    return sorted({d["code"] for d in json.loads(out.getvalue())})


def test_every_code_has_a_page() -> None:
    assert sorted(p.stem for p in DOCS.glob("*.md")) == sorted(CODES)


@pytest.mark.parametrize("code", sorted(CODES))
def test_flowc_explain_prints_every_page(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", code.lower()]) == 0
    assert capsys.readouterr().out == (DOCS / f"{code}.md").read_text()
    assert main(["explain"]) == 0
    assert any(
        line.startswith(f"{code}  {CODES[code].name} ")
        for line in capsys.readouterr().out.splitlines()
    )


def test_shipped_pages_are_the_docs_pages(update_golden: bool) -> None:
    """``docs/checks/`` is the source; ``pytest --update-golden`` copies it to ``flowc/docs/``."""
    if update_golden:
        for page in DOCS.glob("*.md"):
            (SHIPPED / page.name).write_text(page.read_text())
    assert sorted(p.name for p in SHIPPED.glob("*.md")) == sorted(p.name for p in DOCS.glob("*.md"))
    for page in DOCS.glob("*.md"):
        assert (SHIPPED / page.name).read_text() == page.read_text(), f"copy {page} to flowc/docs/"


@pytest.mark.parametrize("code", CHECK_CODES)
def test_page(code: str) -> None:
    text = (DOCS / f"{code}.md").read_text()
    assert text.startswith(f"# {code} `{CODES[code].name}`\n")
    positions = [text.index(s) for s in SECTIONS]
    assert positions == sorted(positions)
    info, body = block_after(text, "## Example", "flow")
    assert findings(info, body, code, text) == sorted([code, *ALSO.get(code, [])])
    info, body = block_after(text, "## Use instead")
    allowed = ["I303"] if info.startswith("json") else []
    # a property, which must hold there, says so (an info), unless a comment silences it
    props = [line for line in body.splitlines() if line.startswith("property ")]
    if any("ignore[I306]" not in line for line in props):
        allowed = sorted([*allowed, "I306"])
    assert findings(info, body, code, text) == allowed


@pytest.mark.parametrize("code", MIGRATE_CODES)
def test_migrate_page(code: str) -> None:
    text = (DOCS / f"{code}.md").read_text()
    assert text.startswith(f"# {code} `{CODES[code].name}`\n")
    positions = [text.index(s) for s in SECTIONS]
    assert positions == sorted(positions)
    info, body = block_after(text, "## Example")
    assert info == "python"
    result = migrate_source(SourceFile(f"{code}.py", body))
    assert sorted({d.code.id for d in result.findings}) == [code]
    assert result.text is not None  # the rest was translated
    info, body = block_after(text, "## Use instead")
    assert info == "python"
    result = migrate_source(SourceFile(f"{code}.py", body))
    assert not result.findings, [d.message for d in result.findings]
