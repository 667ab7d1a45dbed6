"""The TextMate grammar (``source.flow``, ``editors/vscode/syntaxes/flow.tmLanguage.json``)
through the engine VS Code itself uses (vscode-textmate with Oniguruma, from npm):

- the unit files ``tests/editors/textmate/*.test.flow`` state, under each line, the scope of
  its tokens (``vscode-tmgrammar-test``), and the snapshot files ``textmate/snap/*.flow`` pin
  every token's scopes (``vscode-tmgrammar-snap``; after an intended change, refresh them with
  ``node_modules/.bin/vscode-tmgrammar-snap -u`` in ``editors/vscode`` and review the diff);
- both sets of files use every construct of the language: each rule of the Lark grammar
  appears in the parse tree of the unit files and of the snapshot files;
- the keywords of the Lark grammar are exactly the words the TextMate grammar highlights as
  keywords, and on every flow of the repository (examples, the language reference, test cases)
  each token Lark reads as a keyword is highlighted as one, and each name as a name, never as
  a keyword;
- on those flows, every name that Lark's parse tree says is a speaker, a tool or a context key
  is coloured as one, wherever the line breaks fall.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import lark
import pytest

from tests.editors.conftest import ROOT, VSCODE, run_node_tool

GRAMMAR = VSCODE / "syntaxes" / "flow.tmLanguage.json"
LARK = ROOT / "flowc" / "grammar" / "flow.lark"
CASES = Path(__file__).resolve().parent / "textmate"
UNIT_FILES = sorted(CASES.glob("*.test.flow"))
SNAP_FILES = sorted((CASES / "snap").glob("*.flow"))
#: the unit file of text that does not parse (a bad escape, an unterminated string)
BROKEN = CASES / "broken.test.flow"

#: scopes a keyword may get (a declaration keyword is a storage type, as in most grammars)
KEYWORD_SCOPE = re.compile(
    r"^(keyword|storage\.type|storage\.modifier|constant\.language)\.[\w.-]*\.flow$"
)
#: scopes a name may get: a speaker, tool, key, parameter, custom condition or target, a type
NAME_SCOPE = re.compile(r"^(entity\.name|variable|support\.type)\.[\w.-]*flow$")


@cache
def lark_parser() -> lark.Lark:
    """The language's own grammar file, with Lark's standard lexer (not flowc's fast one)."""
    return lark.Lark(
        LARK.read_text(encoding="utf-8"), parser="lalr", lexer="basic", propagate_positions=True
    )


@cache
def lark_keywords() -> frozenset[str]:
    """Every word-like string literal of the grammar: the reserved words."""
    return frozenset(
        t.pattern.value
        for t in lark_parser().terminals
        if isinstance(t.pattern, lark.lexer.PatternStr)
        and re.fullmatch(r"[a-z_]+", t.pattern.value)
    )


def tokenize(texts: list[str]) -> list[list[dict[str, Any]]]:
    """Each text's tokens with their scopes, from ``editors/vscode/test/tokenize.js``."""
    proc = run_node_tool(["node", "test/tokenize.js"], stdin=json.dumps({"texts": texts}))
    assert proc.returncode == 0, proc.stderr
    result: list[list[dict[str, Any]]] = json.loads(proc.stdout)
    return result


def scope_at(tokens: list[dict[str, Any]], line: int, column: int) -> dict[str, Any]:
    for tok in tokens:
        if tok["line"] == line and tok["start"] <= column < tok["end"]:
            return tok
    raise AssertionError(f"no token at {line + 1}:{column + 1}")


def rules_used(text: str) -> set[str]:
    """The rules in the text's parse tree and the types of its tokens."""
    tree = lark_parser().parse(text)
    return {str(sub.data) for sub in tree.iter_subtrees()} | {
        tok.type for tok in lark_parser().lex(text)
    }


def grammar_rules() -> set[str]:
    """The rule names (and aliases) a parse tree can show: a ``?rule`` is inlined, and seen
    through the rules it stands for."""
    names = set()
    for rule in lark_parser().rules:
        if rule.alias:
            names.add(rule.alias)
        elif not rule.options.expand1 and not rule.origin.name.startswith("_"):
            names.add(str(rule.origin.name))
    return names


def test_the_unit_files_pass(npm_tools: Path) -> None:
    assert UNIT_FILES
    proc = run_node_tool(
        [str(npm_tools / "vscode-tmgrammar-test"), "--compact", *[str(p) for p in UNIT_FILES]]
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for path in UNIT_FILES:
        assert f"{path} run successfuly" in proc.stdout, proc.stdout


def test_a_wrong_assertion_fails(npm_tools: Path, tmp_path: Path) -> None:
    """The runner is not a no-op: a keyword asserted to be a speaker name fails."""
    case = tmp_path / "wrong.test.flow"
    case.write_text(
        '# SYNTAX TEST "source.flow" "wrong"\nspeaker a\n# <------- entity.name.type.speaker.flow\n'
    )
    proc = run_node_tool([str(npm_tools / "vscode-tmgrammar-test"), "--compact", str(case)])
    assert proc.returncode != 0 and "entity.name.type.speaker.flow" in proc.stdout, proc.stdout


def test_the_snapshots_hold(npm_tools: Path) -> None:
    assert SNAP_FILES
    for path in SNAP_FILES:
        assert path.with_name(path.name + ".snap").exists(), f"{path.name}: no snapshot"
    proc = run_node_tool([str(npm_tools / "vscode-tmgrammar-snap"), *[str(p) for p in SNAP_FILES]])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("files", [UNIT_FILES, SNAP_FILES], ids=["unit", "snapshot"])
def test_the_test_files_use_every_construct(files: list[Path]) -> None:
    """Each rule of the grammar is in a parse tree, and each keyword among the tokens."""
    used: set[str] = set()
    for path in files:
        if path != BROKEN:
            used |= rules_used(path.read_text(encoding="utf-8"))
    assert len(grammar_rules()) > 60
    assert grammar_rules() - used == set()
    token_types = {
        t.name
        for t in lark_parser().terminals
        if isinstance(t.pattern, lark.lexer.PatternStr) and t.pattern.value in lark_keywords()
    }
    assert token_types - used == set()


@pytest.mark.parametrize(
    "path", [p for p in [*UNIT_FILES, *SNAP_FILES] if p != BROKEN], ids=lambda p: p.name
)
def test_the_test_files_are_flows_that_compile(path: Path) -> None:
    """What the grammar is tested on is the language, not something like it."""
    import flowc

    flowc.compile_flow(path.read_text(encoding="utf-8"), filename=str(path))


def test_the_broken_file_does_not_parse() -> None:
    with pytest.raises(lark.exceptions.LarkError):
        lark_parser().parse(BROKEN.read_text(encoding="utf-8"))


def test_the_keywords_are_the_lark_grammars() -> None:
    """The words in the TextMate grammar's keyword and constant rules are the reserved words."""
    raw = json.loads(GRAMMAR.read_text(encoding="utf-8"))["repository"]
    highlighted: set[str] = set()
    for rule in [*raw["keywords"]["patterns"], *raw["values"]["patterns"]]:
        for alternation in re.findall(r"\(\?:([a-z_|]+)\)", rule.get("match", "")):
            highlighted |= set(alternation.split("|"))
    assert highlighted == lark_keywords()


def test_every_keyword_alone_is_a_keyword_and_in_backquotes_a_name(npm_tools: Path) -> None:
    words = sorted(lark_keywords())
    texts = [*words, *[f"speaker `{w}`" for w in words], *[f"speaker {w}_x" for w in words]]
    results = tokenize(texts)
    for word, alone, quoted, longer in zip(
        words, results, results[len(words) :], results[2 * len(words) :], strict=False
    ):
        scope = alone[0]["scopes"][-1]
        assert alone[0]["text"] == word and KEYWORD_SCOPE.match(scope), (word, alone)
        name = scope_at(quoted, 0, len("speaker `"))["scopes"][-1]
        assert name == "entity.name.type.speaker.flow", (word, quoted)
        name = scope_at(longer, 0, len("speaker "))
        assert name["text"] == f"{word}_x" and NAME_SCOPE.match(name["scopes"][-1]), (word, longer)


def corpus() -> list[tuple[str, str]]:
    """Every flow the repository holds that Lark can lex: examples, test cases, and the code
    blocks of the language reference."""
    out = []
    files = [*sorted((ROOT / "examples").glob("*.flow")), *sorted((ROOT / "tests").rglob("*.flow"))]
    for path in files:
        out.append(
            (str(path.relative_to(ROOT)), path.read_text(encoding="utf-8", errors="replace"))
        )
    for doc in sorted((ROOT / "docs").rglob("*.md")):
        blocks = re.findall(
            r"^```flow[^\n]*\n(.*?)^```", doc.read_text(encoding="utf-8"), re.M | re.S
        )
        out += [(f"{doc.relative_to(ROOT)} block {i + 1}", b) for i, b in enumerate(blocks)]
    return out


def _object_left_open_at(text: str) -> tuple[int, int] | None:
    """Where ``text`` opens an object it never closes, as flowc's parser reports it (E001
    at the `{`), if it does."""
    from flowc.dsl.parser import parse_source
    from flowc.source import SourceFile

    _, diags = parse_source(SourceFile("f.flow", text))
    spans = [
        d.span
        for d in diags
        if d.code.id == "E001" and d.span is not None and d.message.startswith("the object opened")
    ]
    return (spans[0].line, spans[0].column) if spans else None


def test_lark_and_the_textmate_grammar_agree_on_every_flow(npm_tools: Path) -> None:
    """Lark's lexer decides what each token is; the TextMate grammar must say the same: a
    keyword is highlighted as a keyword, a name as a name, a string as a string, a number as a
    number. (A flow Lark cannot lex, an error case, is left out; so are the tokens of an
    error case from an object it leaves open on: a value may span lines, so the highlighter
    rightly reads the lines after it as the value's, where Lark's lexer sees keywords.)"""
    lexed: list[tuple[str, str, list[lark.Token]]] = []
    for label, text in corpus():
        try:
            lexed.append((label, text, list(lark_parser().lex(text))))
        except lark.exceptions.LarkError:
            continue
    assert len(lexed) > 100
    keywords = lark_keywords()
    wrong: list[str] = []
    checked = 0
    for (label, _text, tokens), tm_tokens in zip(
        lexed, tokenize([t for _, t, _ in lexed]), strict=True
    ):
        stop = _object_left_open_at(_text)
        for tok in tokens:
            if stop is not None and ((tok.line or 1), (tok.column or 1)) >= stop:
                break
            line, column = (tok.line or 1) - 1, (tok.column or 1) - 1
            if tok.type == "NAME" or tok.type == "QUOTED_NAME":
                want = NAME_SCOPE
            elif str(tok) in keywords:
                want = KEYWORD_SCOPE
            elif tok.type == "STRING":
                want = re.compile(r"^string\.quoted\.double\.flow$")
            elif tok.type == "NUMBER":
                want = re.compile(r"^constant\.numeric\.flow$")
            else:
                continue
            tm = scope_at(tm_tokens, line, column)
            scopes = tm["scopes"]
            ok = any(want.match(s) for s in scopes)
            if (
                tok.type != "STRING"
                and tm["end"] - tm["start"] != len(tok)
                and tok.type != "QUOTED_NAME"
            ):
                ok = False  # the TextMate token must be the whole Lark token
            checked += 1
            if not ok:
                wrong.append(
                    f"{label}:{line + 1}:{column + 1}: {tok.type} {str(tok)!r} is {scopes[1:]}"
                )
    assert checked > 5000
    assert wrong == []


SPEAKER = "entity.name.type.speaker.flow"
TOOL = "entity.name.function.tool.flow"
KEY = "variable.other.key.flow"
#: for each rule of the Lark grammar, the role of its `name` children in order; the last role
#: repeats for the rest (a list of speakers, of keys)
ROLES: dict[str, list[str]] = {
    "speaker_decl": [SPEAKER],
    "speaker_item": [SPEAKER],
    "start_decl": [SPEAKER],
    "initiator_decl": [SPEAKER],
    "from_cond": [SPEAKER],
    "from_names": [SPEAKER],
    "speaker_target": [SPEAKER],
    "sequence_decl": [SPEAKER],
    "round_robin_decl": [SPEAKER],
    "handoff_effect": [SPEAKER],
    "bare_handoff": [SPEAKER],
    "result_speaker": [SPEAKER],
    "expect_next": [SPEAKER],
    "say_turn": [SPEAKER],
    "call_turn": [SPEAKER, TOOL],
    "set_turn": [SPEAKER],
    "clear_turn": [SPEAKER, KEY],
    "handoff_turn": [SPEAKER, SPEAKER],
    "finish_turn": [SPEAKER],
    "tool_decl": [TOOL],
    "tool_cond": [TOOL],
    "writes_decl": [KEY],
    "set_effect": [KEY],
    "clear_effect": [KEY],
    "context_entry": [KEY],
    "context_cond": [KEY],
    "assign": [KEY],
    "expect_context": [KEY],
}


def roles_in(tree: lark.Tree[Any]) -> list[tuple[lark.Token, str]]:
    out = []
    for sub in tree.iter_subtrees():
        roles = ROLES.get(str(sub.data))
        if roles is None:
            continue
        names = [c for c in sub.children if isinstance(c, lark.Tree) and c.data == "name"]
        for i, name in enumerate(names):
            out.append((name.children[0], roles[min(i, len(roles) - 1)]))
    return out


def test_every_name_is_coloured_as_what_it_names(npm_tools: Path) -> None:
    assert set(ROLES) <= grammar_rules()
    parsed = []
    for label, text in corpus():
        try:
            parsed.append((label, text, roles_in(lark_parser().parse(text))))
        except lark.exceptions.LarkError:
            continue
    wrong = []
    checked = 0
    for (label, _text, roles), tm_tokens in zip(
        parsed, tokenize([t for _, t, _ in parsed]), strict=True
    ):
        for tok, role in roles:
            tm = scope_at(tm_tokens, (tok.line or 1) - 1, (tok.column or 1) - 1)
            checked += 1
            if role not in tm["scopes"]:
                wrong.append(
                    f"{label}:{tok.line}:{tok.column}: {str(tok)!r} should be {role}, is {tm['scopes'][1:]}"
                )
    assert checked > 2000
    assert wrong == []
