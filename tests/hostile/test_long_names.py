"""Hostile names: a report stays proportional to its input however long the names are.

Every name a finding quotes (a speaker, a tool, a context key, a custom condition or
target, a reason) and every statement it quotes is cut short around a ``...`` as the rest
of flowc cuts a quoted rule (:func:`flowc.diagnostics.elide`, :data:`MAX_QUOTED`
characters), in the message, the notes and the help, in the text and the JSON report.

The flows are each check page's Example (``docs/checks/CODE.md``, the flow that fires
CODE) with every name made 20,000 characters long, and three flows that quoted a long name
whole (W207, W209, W216). Each
runs as ``flowc check`` (text and ``--format json``) under resource limits: the report
stays within a fixed multiple of the input, no line of it is longer than
:data:`MAX_LINE`, and it still reports the code the page is about. Short names come out
exactly as written, also where a value holds a backquote or a quote.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from flowc.compiler.analysis import CheckOptions, check_source
from flowc.diagnostics import MAX_QUOTED, diagnostic_to_json, elide
from flowc.dsl.keywords import KEYWORDS
from flowc.source import SourceFile
from tests.hostile.limits import run_limited

ROOT = Path(__file__).parent.parent.parent
DOCS = ROOT / "docs" / "checks"
#: how long each name of a hostile flow is
SIZE = 20_000
#: a report may be this many times larger than its input
MAX_RATIO = 8
#: the longest line a report may print (the excerpt of a long source line is cut to 100)
MAX_LINE = 2_000
#: words a flow writes that are not names: the keywords, and the types and parameters of
#: the built-in conditions
NOT_NAMES = KEYWORDS | {"string", "int", "float", "bool", "text_contains", "text_matches"}
NOT_NAMES |= {"pattern", "tool_called", "any"}
_WORD = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|\b[A-Za-z_][A-Za-z0-9_]*\b')
_BLOCK = re.compile(r"```(?P<info>[^\n]*)\n(?P<body>.*?)\n```", re.S)
_EXCERPT = re.compile(r" *\d+ \| ")


def long_name(word: str, size: int = SIZE) -> str:
    """``word`` made ``size`` characters long (distinct words stay distinct)."""
    return (word + "_" + "x" * size)[: max(size, len(word))]


def longer_flow(text: str, size: int = SIZE) -> str:
    """A `.flow` with every name made ``size`` characters long (strings, comments and
    keywords as they were)."""

    def sub(match: re.Match[str]) -> str:
        word = match.group()
        return word if word[0] in '"#' or word in NOT_NAMES else long_name(word, size)

    return _WORD.sub(sub, text)


def longer_graph(text: str, size: int = SIZE) -> str:
    """A JSON graph with every name (a string that is not a condition's or target's
    ``name``) made ``size`` characters long."""

    def walk(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if isinstance(value, str) and key != "name":
            return long_name(value, size)
        return value

    return json.dumps(walk(json.loads(text)), indent=1)


@attrs.frozen
class Case:
    id: str
    code: str
    ext: str
    text: str
    options: tuple[str, ...] = ()

    def check_options(self) -> CheckOptions:
        if not self.options:
            return CheckOptions()
        flag, value = self.options
        if flag == "--max-states":
            return CheckOptions(max_states=int(value))
        if flag == "--select":
            return CheckOptions(select=tuple(value.split(",")))
        return CheckOptions(target=value)


def _examples() -> list[Case]:
    """Each check page's Example, as written (short names)."""
    cases = []
    for page in sorted(DOCS.glob("*.md")):
        code = page.stem
        if code.startswith("M"):  # `flowc migrate`'s codes: Python inputs
            continue
        text = page.read_text(encoding="utf-8")
        at = text.index("## Example")
        match = _BLOCK.search(text, at)
        while match is not None and match.group("info").startswith("python"):
            match = _BLOCK.search(text, match.end())
        assert match is not None, page
        lang, *options = match.group("info").split()
        if options and options[0] == "--plugin":  # E115 needs its Python class
            continue
        ext = "json" if lang == "json" else "flow"
        cases.append(Case(code, code, ext, match.group("body") + "\n", tuple(options)))
    return cases


EXAMPLES = _examples()


def _hostile(case: Case) -> Case:
    make = longer_graph if case.ext == "json" else longer_flow
    return attrs.evolve(case, text=make(case.text))


#: flows that quoted a long name whole (W207, W209, W216), and names only backquotes can
#: write (spaces in them)
NAME = "a" * SIZE
SPACED = " ".join(["word"] * (SIZE // 5))
REPRODUCTIONS = [
    Case("W207-start", "W207", "flow", f"speaker {NAME}\nspeaker b\nwhen from {NAME} then b\n"),
    Case(
        "W209-unset-key",
        "W209",
        "flow",
        f"speaker user: human\nspeaker b\nstart user\nwhen context.{NAME} == 1 then b\n"
        "when from user then b\n",
    ),
    Case(
        "W216-round-robin",
        "W216",
        "flow",
        f"speaker user: human\nspeaker b\nspeaker {NAME}\nround_robin user, {NAME}, b\n"
        "max_turns 8\n",
    ),
    Case(
        "W207-spaced-name",
        "W207",
        "flow",
        f"speaker `{SPACED}`\nspeaker b\nwhen from `{SPACED}` then b\n"
        f'when from b then terminate "{SPACED}"\n',
    ),
]

HOSTILE = [*(_hostile(c) for c in EXAMPLES), *REPRODUCTIONS]


def _run(tmp_path: Path, case: Case, *fmt: str) -> tuple[str, str]:
    path = tmp_path / f"{case.id}.{case.ext}"
    path.write_text(case.text, encoding="utf-8")
    result = run_limited(
        ["check", *case.options, *fmt, str(path)],
        memory_mib=1024,
        cpu_seconds=60,
        wall_seconds=120,
    )
    assert not result.timed_out and not result.traceback, result.stderr[-2000:]
    assert result.returncode in (0, 1), result.stderr[-2000:]
    size = len(result.stdout.encode()) + len(result.stderr.encode())
    assert size <= MAX_RATIO * len(case.text.encode()), (size, len(case.text))
    return result.stdout, result.stderr


def _longest(lines: list[str]) -> tuple[int, str]:
    return max(((len(ln), ln[:200]) for ln in lines), default=(0, ""))


@pytest.mark.parametrize("case", HOSTILE, ids=[c.id for c in HOSTILE])
def test_text_report_cuts_long_names(tmp_path: Path, case: Case) -> None:
    out, err = _run(tmp_path, case)
    assert f"[{case.code}]" in out, out[-3000:]
    lines = [ln for ln in (out + err).splitlines() if not _EXCERPT.match(ln)]
    assert _longest(lines)[0] <= MAX_LINE, _longest(lines)
    # the excerpt is cut too (to a window of the line): no line of the report is long
    assert _longest((out + err).splitlines())[0] <= MAX_LINE


@pytest.mark.parametrize("case", HOSTILE, ids=[c.id for c in HOSTILE])
def test_json_report_cuts_long_names(tmp_path: Path, case: Case) -> None:
    out, _ = _run(tmp_path, case, "--format", "json")
    findings = json.loads(out)
    assert case.code in {f["code"] for f in findings}
    for f in findings:
        for text in (f["message"], *f["notes"], f["fix"] or ""):
            assert len(text) <= MAX_LINE, (f["code"], text[:200])
    assert _longest(out.splitlines())[0] <= MAX_LINE


def test_reproductions_quote_names_cut() -> None:
    """The name is quoted as :func:`elide` cuts it: its start and end around ``...``, in
    the message, the note and the help alike (W207's five copies)."""
    (w207,) = [
        d for d in check_source(SourceFile("x.flow", REPRODUCTIONS[0].text)) if d.code.id == "W207"
    ]
    report = diagnostic_to_json(w207)
    cut = f"`{elide(NAME)}`"
    assert cut in report["message"] and NAME not in report["message"]
    assert cut in report["notes"][0] and NAME not in report["notes"][0]
    assert cut[1:] in report["fix"] and NAME not in report["fix"]
    assert len(report["message"]) == len(w207.message) - len(NAME) + MAX_QUOTED


@pytest.mark.parametrize("case", EXAMPLES, ids=[c.id for c in EXAMPLES])
def test_short_names_come_out_as_written(case: Case) -> None:
    """A finding that quotes nothing longer than :data:`MAX_QUOTED` prints unchanged."""
    from flowc.diagnostics import elide_quoted

    found = check_source(SourceFile(f"{case.id}.{case.ext}", case.text), case.check_options())
    assert case.code in {d.code.id for d in found}
    for d in found:
        for text in (d.message, *d.notes, d.help or ""):
            assert elide_quoted(text) == text


def test_the_editor_shows_names_cut_as_the_reports_do() -> None:
    """The language server's diagnostic (message and help) and its hover (message, notes,
    help) quote the long name cut as :func:`elide` cuts it, as the reports do."""
    from flowc.lsp.core import _shown_message
    from flowc.lsp.server import finding_markdown

    (w207,) = [
        d for d in check_source(SourceFile("x.flow", REPRODUCTIONS[0].text)) if d.code.id == "W207"
    ]
    cut = elide(NAME)
    for shown in (_shown_message(w207), finding_markdown(w207)):
        assert cut in shown and NAME not in shown
        assert len(shown) < 2_000


#: texts whose quotes a value's backquote or quote could put out of step: short statements
#: (each under MAX_QUOTED) around a value holding a backquote, a value holding an escaped
#: quote, a stray backquote in a reason before a long quoted statement
TRICKY = [
    "these conditions hold on no turn of any run: rule 3, line 7 (`when context.k == "
    '"p` q" then terminate "x"`), rule 4, line 8 (`when context.j == "r` s" and '
    'context.alpha == 1 and context.beta == 2 and context.g == 3 then terminate "z"`)',
    'e.g. `tool NAME sets k = "a \\"b` c"`, or the human that writes it (`speaker NAME: '
    "human { sets k }`), or give it an initial value: `context k = ...` and more words here",
    'the reason "it`s" is written by `' + "word " * 99 + "word`",
]


def test_a_backquote_or_quote_in_a_value_keeps_the_quotes_in_step() -> None:
    """A backquote inside a quoted value opens or closes nothing: a text whose pieces are
    all short comes back as it is, and a long piece after such a value is still cut."""
    from flowc.diagnostics import elide_quoted

    assert elide_quoted(TRICKY[0]) == TRICKY[0]
    assert elide_quoted(TRICKY[1]) == TRICKY[1]
    cut = elide_quoted(TRICKY[2])
    assert cut == 'the reason "it`s" is written by `' + elide("word " * 99 + "word") + "`"


def test_a_flow_whose_values_hold_backquotes_prints_as_before(tmp_path: Path) -> None:
    text = (
        "speaker user: human\nspeaker a\nstart user\nmax_turns 6\n"
        "when from user then a\nwhen from a then user\n"
        'when context.k == "p` q" then terminate "x"\n'
        'when context.j == "r` s" and context.alpha == 1 and context.beta == 2 and '
        'context.g == 3 then terminate "z"\n'
    )
    from flowc.diagnostics import elide_quoted

    found = check_source(SourceFile("t.flow", text))
    assert {"W210", "W209"} <= {d.code.id for d in found}
    for d in found:
        for shown in (d.message, *d.notes, d.help or ""):
            assert elide_quoted(shown) == shown
