"""The hand-written parser (flowc.dsl.descent) against Lark's LALR parser (flowc.dsl.lalr).

The fast parser must build the very tree the LALR parser builds, spans, quoting and
comments included, on every file the LALR parser accepts, and must never accept a file
the LALR parser refuses (it hands those over, so that Lark words the error). Checked on
every flow of the repository, on files derived from the grammar's own rules and on those
with a token dropped, doubled, replaced or moved (``grammar_gen``), on generated large
flows, and on seeded character-level mutations of the examples (most of which do not
parse). The tokens the language server reads (its scanner's) are Lark's lexer's too.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from lark.exceptions import UnexpectedCharacters

from flowc.dsl import descent
from flowc.dsl.lalr import _parser, parse_lalr
from flowc.dsl.parser import KEYWORDS, MAX_NESTING, parse_source, scan, tokens
from flowc.source import SourceFile
from tests.dsl import grammar_gen
from tests.hostile.fuzz import mutate

ROOT = Path(__file__).resolve().parents[2]
FLOWS = sorted(
    p for folder in ("examples", "tests", "docs", "demo") for p in (ROOT / folder).rglob("*.flow")
)


def tree(node: Any) -> Any:
    """Everything in a parsed flow, node classes and spans included (== leaves spans out)."""
    if attrs.has(type(node)):
        return (
            type(node).__name__,
            {f.name: tree(getattr(node, f.name)) for f in attrs.fields(type(node))},
        )
    if isinstance(node, tuple | list):
        return (type(node).__name__, [tree(x) for x in node])
    if isinstance(node, dict):
        return {k: tree(v) for k, v in node.items()}
    return (type(node).__name__, node)


def agree(text: str, *, may_hand_over: bool = False) -> bool:
    """Both parsers agree on ``text``; True when it parses. The fast parser hands over
    only what LALR refuses (or, ``may_hand_over``, parentheses nested past its depth).
    Both read the text as flowc does (a lone ``\\r`` a newline: :class:`SourceFile`)."""
    source = SourceFile("f.flow", text)
    reference, diags = parse_lalr(source)
    fast = descent.parse_valid(source.text)
    if diags:
        assert fast is None, (
            f"the fast parser accepts what LALR refuses: {diags[0].message}\n{text}"
        )
        return False
    assert fast is not None or may_hand_over, f"the fast parser hands over a valid file:\n{text}"
    flow, none = parse_source(source)
    assert none == ()
    assert tree(flow) == tree(reference)
    return True


def test_the_grammars_words() -> None:
    lark_literals = {t.pattern.value for t in _parser().terminals if t.pattern.type == "str"}
    assert descent._KEYWORDS == KEYWORDS == {w for w in lark_literals if w[0].isalpha()}
    assert descent.MAX_NESTING == MAX_NESTING


@pytest.mark.parametrize("path", FLOWS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_flow_of_the_repository(path: Path) -> None:
    agree(path.read_text(encoding="utf-8"))


def test_generated_flows() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_compile import generate

    assert agree(generate(300))


EDGE_CASES = [
    "",
    "# only a comment",
    "flow f\n",
    'flow `a b` "desc"  # c\n',
    "speaker a: human { sets x, y }\nspeaker b { tool t sets k = 1, clears j | hands off to a | a | `b` }",
    'speaker a { tool t finishes | finishes "r" }',
    "speaker a {\n}\nspeakers b: human, c, `d`",
    'context { }\ncontext { a = 1, }\ncontext { a = [1, {"b": null}], c = -1.5e3 }\ncontext x = true',
    'when not not (from a, b or tool t) and context.k != "v" then terminate "r" priority -3',
    "when ((always)) then next\nwhen (from a) or (tool x and (not from b)) then stay\nwhen c(x = 1, y = [2]) then t(z = {})",
    "otherwise initiator\notherwise terminate\nsequence a -> b -> c\nround_robin a, b",
    'condition c()\ncondition c(a: list[list[speaker]] = [], b: any)\ntarget t(x: speaker) -> a | terminate | terminate "r"',
    'scenario "s" {\n a: "hi"\n a calls t with {"x": 1} sets k = 1, hands off to b: "t"\n a calls t finishes\n'
    ' a sets k = 1, j = "x": "t"\n a clears k, j\n a hands off to b\n a finishes "done"\n b finishes\n'
    ' expect next b\n expect terminate\n expect terminate "r"\n expect context.k == 1\n expect turns 3\n}',
    "when from a then b priority 1.5",
    'when context.k == "\\ud800" then b',
    "max_turns 1e400",
    "max_turns " + "9" * 5000,
    'scenario "s" { a calls t with [1] }',
    "context k = " + "[" * MAX_NESTING + "]" * MAX_NESTING,
    "context k = " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1),
    "when " + "not " * MAX_NESTING + "always then a",
    "when " + "not " * (MAX_NESTING + 1) + "always then a",
    "when from a then b\r\n# c\r\nwhen from\tb then\fa",
    "speaker a { tool t\n sets x }",
    "when from a then b (",
    "sequence a",
    "context { , }",
    "speaker a: robot",
    'when from a then b  # unterminated "',
    "when from a then `b\nc`",
    'flow "x',
    "flow f\n\u00e9",
]


@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases(text: str) -> None:
    agree(text)


def test_deep_parentheses_are_handed_over_and_parsed() -> None:
    text = "when " + "(" * 400 + "always" + ")" * 400 + " then a"
    assert descent.parse_valid(text) is None
    agree(text, may_hand_over=True)


def test_mutated_examples() -> None:
    rng = random.Random(20261201)
    sources = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").glob("*.flow"))]
    parsed = 0
    for _ in range(600):
        text = rng.choice(sources)
        for _ in range(rng.randint(1, 3)):
            text = mutate(text, rng)
        parsed += agree(text)
    assert parsed > 50  # both kinds were tried


def test_files_derived_from_the_grammar() -> None:
    """Random derivations of every statement rule of ``flow.lark`` (each of its
    expansions used in a file that parses, at least once), and the same with one token dropped, doubled,
    replaced or moved: both parsers agree on each."""
    rng = random.Random(20261204)
    used: set[Any] = set()
    wanted = {
        (name, e)
        for name, e in grammar_gen.expansions()
        if "start" not in name and not grammar_gen.never_valid(name, e)
    }
    tried = valid = 0
    while tried < 1000 or (wanted - used and tried < 5000):  # until each is in a valid file
        here: set[Any] = set()
        if agree(grammar_gen.generate(rng, here)):
            valid += 1
            used |= here
        tried += 1
    never = wanted - used
    assert not never, f"the generator never derived: {sorted(map(str, never))}"
    near = sum(agree(grammar_gen.near(rng)) for _ in range(1000))
    refused = 0
    for _ in range(300):  # what the builder refuses with a reason is refused by both
        here = set()
        text = grammar_gen.generate(rng, here, refused=True)
        parsed = agree(text)
        if any(grammar_gen.never_valid(*e) for e in here):
            refused += 1
            assert not parsed, text
    assert refused > 0  # such files were made
    # both kinds were tried: most derivations parse (the builder refuses some numbers
    # and counts), most near-valid files do not
    assert valid > 0.6 * tried and 0 < near < 400, (valid, tried, near)


def position(tok: Any) -> tuple[Any, ...]:
    """A token's type, text and every position Lark gives it."""
    return tuple(
        getattr(tok, a)
        for a in (
            "type",
            "value",
            "start_pos",
            "line",
            "column",
            "end_line",
            "end_column",
            "end_pos",
        )
    )


def lark_lexed(text: str, comments: bool) -> list[tuple[Any, ...]]:
    """Lark's own lexer's tokens of ``text`` (the grammar's), up to the first character it
    cannot read."""
    out = []
    try:
        for tok in _parser().lex(text, dont_ignore=True):
            if tok.type == "WS" or (tok.type == "COMMENT" and not comments):
                continue
            out.append(position(tok))
    except UnexpectedCharacters:
        pass
    return out


def test_the_scanners_tokens_are_lark_lexers() -> None:
    """:func:`tokens` (for completion) and :func:`scan` (for highlighting) come from the
    fast parser's scanner; Lark's lexer reads the same tokens, positions included, on
    every flow of the repository, the edge cases and mutated examples (Lark given the text
    as flowc reads it: a lone ``\\r`` a newline, :class:`SourceFile`)."""
    rng = random.Random(20261205)
    sources = [p.read_text(encoding="utf-8") for p in FLOWS]
    texts = [*sources, *EDGE_CASES, "a \v b", "a\n\u2028b", "x # c \t\r\nwhen", "# c\rwhen\r\r"]
    texts += [mutate(rng.choice(sources), rng) for _ in range(300)]
    for text in texts:
        for comments in (False, True):
            mine = [position(t) for t in tokens(text, comments=comments)]
            assert mine == lark_lexed(SourceFile("f.flow", text).text, comments), text
            assert [s[1:] for s in scan(text, comments=comments)] == [m[1:5] for m in mine]


def test_valid_files_never_load_lark() -> None:
    """Nor importlib.resources (the grammar is read through the package's loader): it
    would load tempfile, shutil, random, bz2 and lzma into every command that parses."""
    code = (
        "import sys; from flowc.dsl.parser import parse; parse('speaker a\\nwhen from a then a');"
        "assert 'lark' not in sys.modules and 'importlib.resources' not in sys.modules;"
        "parse('when'); assert False"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert "FlowError" in done.stderr and "AssertionError" not in done.stderr, done.stderr


@pytest.mark.parametrize("chunk", [1, 3])
def test_lines_scanned_a_few_at_a_time(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large file is scanned a chunk of lines at a time; statements that run past a
    chunk (blocks, scenarios, rules split over lines) parse the same."""
    monkeypatch.setattr(descent, "_CHUNK", chunk)
    texts = [p.read_text(encoding="utf-8") for p in FLOWS]
    for text in [*texts, *EDGE_CASES]:
        agree(text)


@pytest.mark.parametrize("blank", [" ", "\t", "\f", "\r", " \t"])
def test_blanks_at_the_end_of_lines(blank: str) -> None:
    for text in [
        f"speaker a{blank * 50}\nspeaker b{blank * 3}# c{blank * 9}\n",
        f"{blank * 40}\nwhen from a then b{blank * 7}\n{blank}",
        f"when{blank * 9}\n",
    ]:
        agree(text)


def test_a_long_run_of_blanks_is_scanned_in_linear_time() -> None:
    """The scanner skips blanks before a token; blanks that no token follows were tried
    again from each of them (a line of 40,000 took two minutes). Under a CPU limit."""
    from tests.hostile.limits import run_limited

    code = (
        "import sys; from flowc.dsl.parser import parse; "
        "flow = parse('speaker a' + ' ' * 2_000_000 + '\\nspeaker b' + '\\t' * 2_000_000); "
        "print(len(flow.statements))"
    )
    result = run_limited([], python_code=code, cpu_seconds=20, wall_seconds=60)
    assert not result.timed_out and result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2"


def test_a_part_of_a_file_has_the_files_spans() -> None:
    """``parse_valid`` of the text from a statement that starts a line on, told where
    it starts, gives the statements and comments of a whole parse from there on."""
    tried = 0
    for path in FLOWS:
        text = path.read_text(encoding="utf-8")
        whole = descent.parse_valid(text)
        if whole is None:
            continue
        statements, comments = whole
        starts = [i for i, st in enumerate(statements) if st.span.column == 1]
        for i in starts[len(starts) // 2 : len(starts) // 2 + 1] + starts[-1:]:
            span = statements[i].span
            part = descent.parse_valid(text[span.start :], span.line, span.start)
            assert part is not None, path
            assert tree(part[0]) == tree(statements[i:]), path
            # comments are the offsets of their `#` in the file
            assert list(part[1]) == [c for c in comments if c >= span.start], path
            tried += 1
    assert tried > 100
