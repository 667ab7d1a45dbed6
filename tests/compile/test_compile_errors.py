"""Error cases: every code the compiler produces (E001-E110), and hostile inputs.

``tests/cases/errors/*.flow`` state what they must produce in header comments::

    # expect: E101 3:11 `from` names `ghost`; help: did you mean `host`?

code, line:column of the diagnostic, then text that its message must contain
(and, after ``; help:``, text its help line must contain). A case gets exactly the
diagnostics it lists, no more.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main
from flowc.commands.console import read_source
from flowc.compiler.pipeline import compile_source, load_graph_json
from flowc.diagnostics import CODES, Diagnostic, render_text
from flowc.dsl.parser import MAX_NESTING, parse_source
from flowc.source import SourceFile

CASES = Path(__file__).resolve().parents[1] / "cases" / "errors"
FLOWS = sorted(CASES.glob("*.flow"))
FLOWC = [sys.executable, "-m", "flowc"]
EXPECT = re.compile(
    r"#\s*expect:\s*(?P<code>[A-Z]\d{3})\s+(?P<line>\d+):(?P<col>\d+)\s*(?P<text>.*)"
)


def expectations(text: str) -> list[tuple[str, int, int, str, str]]:
    out = []
    for line in text.splitlines():
        m = EXPECT.match(line)
        if m:
            message, _, help_text = m["text"].partition("; help:")
            out.append(
                (m["code"], int(m["line"]), int(m["col"]), message.strip(), help_text.strip())
            )
    return out


def where(d: Diagnostic) -> tuple[str, int, int]:
    assert d.span is not None, d
    return d.code.id, d.span.line, d.span.column


@pytest.mark.parametrize("path", FLOWS, ids=[p.stem for p in FLOWS])
def test_error_case(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    expected = expectations(text)
    assert expected, f"{path.name} states no expectations"
    source = SourceFile(path.name, text)
    compiled, diags = compile_source(source)
    assert compiled is None
    got = sorted(where(d) for d in diags)
    assert got == sorted((c, line, col) for c, line, col, _, _ in expected), [
        f"{d.code.id} {d.span.line}:{d.span.column} {d.message}" for d in diags if d.span
    ]
    for code, line, col, message, help_text in expected:
        (d,) = [d for d in diags if where(d) == (code, line, col)]
        assert message in d.message
        if help_text:
            assert d.help is not None and help_text in d.help
        assert d.filename == path.name
    # every diagnostic renders with an excerpt and a caret under the right column
    rendered = render_text(diags, {path.name: source}, color=False)
    for d in diags:
        assert d.span is not None
        assert f"{path.name}:{d.span.line}:{d.span.column}" in rendered
    assert "^" in rendered


def test_every_compiler_code_has_a_case() -> None:
    covered = {c for p in FLOWS for c, *_ in expectations(p.read_text(encoding="utf-8"))}
    # E108 is JSON's; E112 only comes with `--target ag2` (tests/compile/test_bare_ag2.py);
    # E115 only with a plugin loaded (tests/runtime/test_plugins.py); E116 is `flowc check`'s
    # verdict on a property, not the compiler's (tests/check/test_properties.py)
    compiler_codes = {
        c for c in CODES if c.startswith("E") and c not in ("E108", "E112", "E115", "E116")
    }
    assert compiler_codes <= covered, compiler_codes - covered


@pytest.mark.parametrize("path", FLOWS[:3] + FLOWS[-3:], ids=lambda p: p.stem)
def test_cli_exit_code_is_1_for_errors(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "error[" in err and "-->" in err and "^" in err


def test_e001_says_found_and_expected_in_words() -> None:
    _, diags = parse_source(SourceFile("x.flow", "speakers a, b\nwhen from a then b priority\n"))
    (d,) = diags
    assert d.message == "unexpected end of file; expected a number after `priority`"
    _, diags = parse_source(SourceFile("x.flow", "speakers a, b\nwhen from a then then\n"))
    (d,) = diags
    assert d.message.startswith("unexpected keyword `then`; expected ")
    for word in ("`initiator`", "`next`", "`stay`", "`terminate`", "a name"):
        assert word in d.message


def test_e001_a_statement_unfinished_at_the_end_of_its_line_is_reported_there() -> None:
    """A rule without its target, followed by another rule: the error is at the end of
    the unfinished rule, saying what it lacks, not at the next line's `when` (which the
    parser would take as a name only in backquotes)."""
    text = "speaker user: human\nspeaker a\nwhen from a then\nwhen from user then a\n"
    _, diags = parse_source(SourceFile("x.flow", text))
    (d,) = diags
    assert where(d) == ("E001", 3, 17)
    assert d.message == "expected a target after `then`"
    assert d.notes == ("expected `initiator`, `next`, `stay`, `terminate` or a name",)
    assert d.help is not None and "backquotes" not in d.help and "line 4" in d.help
    cases = {
        "speakers a, b\nwhen\nspeaker c\n": ((2, 5), "expected a condition after `when`"),
        "speakers a, b\nwhen from a and   # more\n\nwhen from b then a\n": (
            (2, 16),
            "expected a condition after `and`",
        ),
        "speakers a, b\notherwise\nwhen from a then b\n": (
            (2, 10),
            "expected a target after `otherwise`",
        ),
        "speakers a, b\nsequence a ->\nsequence b -> a\n": ((2, 14), "expected a name after `->`"),
        "speakers a, `b c`\nwhen from `b c`\nwhen from a then b\n": (
            (2, 16),
            "expected `,`, `and`, `or` or `then` after `b c`",
        ),
        "speakers a, b\nwhen from a then b\n": None,
        # a finished statement followed by a wrong one: the error stays on the new line
        "speakers a, b\nwhen from a then b\nthen a\n": ((3, 1), "unexpected keyword `then`"),
        # inside a block, an item may end where the line does
        "speaker a {\n  tool t\n  when\n}\n": ((3, 3), "unexpected keyword `when`"),
    }
    for text, want in cases.items():
        _, diags = parse_source(SourceFile("x.flow", text))
        if want is None:
            assert diags == ()
            continue
        (d,) = diags
        assert d.span is not None
        assert ((d.span.line, d.span.column), d.message[: len(want[1])]) == want, text


# ── E108: JSON graphs, through the one cattrs converter ─────────────────────────


def _graph(**over: Any) -> dict[str, Any]:
    g: dict[str, Any] = {
        "initial_speaker": "a",
        "transitions": [
            {
                "when": {"name": "from_speaker", "args": {"agent_id": "a"}},
                "then": {"name": "agent", "args": {"agent_id": "b"}},
                "priority": 0,
            }
            for _ in range(4)
        ],
        "default_target": {"name": "terminate", "args": {"reason": "after_work"}},
        "max_turns": None,
    }
    g.update(over)
    return g


def _bad_agent_id() -> dict[str, Any]:
    g = _graph()
    g["transitions"][3]["then"]["args"]["agent_id"] = 5
    return g


def _two_problems() -> dict[str, Any]:
    g = _graph(max_turns="ten")
    g["transitions"][0]["priority"] = 1.5
    g["transitions"][1]["when"]["args"] = {"agent": "a"}
    return g


def _missing_key() -> dict[str, Any]:
    g = _graph()
    del g["transitions"][2]["when"]
    return g


def _bad_composite() -> dict[str, Any]:
    g = _graph()
    g["transitions"][0]["when"] = {"name": "all_of", "args": {"conditions": [{"name": 7}]}}
    return g


E108_CASES: list[tuple[str, Any, list[str]]] = [
    ("agent_id", _bad_agent_id(), ["transitions[3].then.args.agent_id: expected a string, got 5"]),
    (
        "several",
        _two_problems(),
        [
            'max_turns: expected an integer, got "ten"',
            "transitions[0].priority: expected an integer, got 1.5",
            "transitions[1].when.args.agent: unexpected key; expected `agent_id`",
            "transitions[1].when.args.agent_id: required key missing: expected an agent id (a string)",
        ],
    ),
    (
        "missing",
        _missing_key(),
        ["transitions[2].when: required key missing: expected a condition object (`name`, `args`)"],
    ),
    (
        "extra",
        _graph(colour="blue"),
        [
            "colour: unexpected key; expected `initial_speaker`, `transitions`, `default_target` or "
            "`max_turns`"
        ],
    ),
    ("not_a_list", _graph(transitions={}), ["transitions: expected a list, got an object"]),
    (
        "composite",
        _bad_composite(),
        [
            "transitions[0].when.args.conditions[0].name: expected a condition name (a string), got 7"
        ],
    ),
    (
        "knobs",
        {"graph": _bad_agent_id(), "context_vars": []},
        [
            "context_vars: expected an object, got a list",
            "graph.transitions[3].then.args.agent_id: expected a string, got 5",
        ],
    ),
    (
        "top_level",
        [1, 2],
        ["expected a graph object or a knobs object (`graph`, `context_vars`), got a list"],
    ),
]


@pytest.mark.parametrize(
    ("data", "messages"), [c[1:] for c in E108_CASES], ids=[c[0] for c in E108_CASES]
)
def test_e108_json_paths(data: Any, messages: list[str]) -> None:
    loaded, diags = load_graph_json(SourceFile("g.json", json.dumps(data)))
    assert loaded is None
    assert all(d.code.id == "E108" for d in diags)
    assert sorted(d.message for d in diags) == sorted(messages)
    for d in diags:
        assert d.json_path is not None
        assert d.message.startswith(d.json_path) or d.json_path == ""


def test_valid_json_graph_and_knobs_load() -> None:
    loaded, diags = load_graph_json(SourceFile("g.json", json.dumps(_graph())))
    assert diags == () and loaded is not None and not loaded.is_knobs
    loaded, diags = load_graph_json(
        SourceFile("k.json", json.dumps({"graph": _graph(), "context_vars": {"x": 1}}))
    )
    assert diags == () and loaded is not None and loaded.is_knobs
    assert loaded.context_vars == {"x": 1}


def test_invalid_json_is_e001() -> None:
    loaded, (d,) = load_graph_json(SourceFile("g.json", '{"initial_speaker": '))
    assert loaded is None and d.code.id == "E001" and d.message.startswith("invalid JSON")


# ── hostile inputs: a clean diagnostic or a correct result, never a traceback ────


def _codes(text: str) -> list[str]:
    compiled, diags = compile_source(SourceFile("h.flow", text))
    assert (compiled is None) == any(d.is_error for d in diags)
    return [d.code.id for d in diags]


def test_empty_file() -> None:
    assert _codes("") == ["E110"]


def test_whitespace_and_comments_only() -> None:
    assert _codes("\n\n   # nothing here\n\t# at all\n") == ["E110"]


def test_nul_bytes() -> None:
    compiled, diags = compile_source(SourceFile("h.flow", "speaker a\x00\nspeaker b\n"))
    (d,) = diags
    assert compiled is None and d.code.id == "E001"
    assert d.span is not None and (d.span.line, d.span.column) == (1, 10)
    assert "'\\x00'" in d.message


def test_500_nested_parentheses_compile() -> None:
    text = "speakers a, b\nwhen " + "(" * 500 + "from a" + ")" * 500 + " then b\n"
    compiled, diags = compile_source(SourceFile("h.flow", text))
    assert diags == () and compiled is not None
    assert compiled.graph_dict["transitions"][0]["when"] == {
        "name": "from_speaker",
        "args": {"agent_id": "a"},
    }


def test_500_nested_nots_are_a_clean_e001() -> None:
    text = "speakers a, b\nwhen " + "not (" * 500 + "from a" + ")" * 500 + " then b\n"
    (code,) = _codes(text)
    assert code == "E001"


def _json_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_json_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_json_depth(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize(
    "cond",
    [
        "not " * MAX_NESTING + "from a",
        "(from a and " * MAX_NESTING + "from b" + ")" * MAX_NESTING,
        "not (" + "(from a or " * (MAX_NESTING - 1) + "from b" + ")" * MAX_NESTING,
        "not " * (MAX_NESTING // 2)
        + "context.k == "
        + "[" * (MAX_NESTING // 2)
        + "]" * (MAX_NESTING // 2),
    ],
    ids=["not", "and", "or", "not+value"],
)
def test_deepest_accepted_nesting_compiles_and_one_more_is_e001(cond: str) -> None:
    text = f"speakers a, b\nwhen {cond} then b\n"
    compiled, diags = compile_source(SourceFile("h.flow", text))
    assert diags == () and compiled is not None
    assert _json_depth(compiled.graph_dict) > MAX_NESTING  # the whole depth is in the dict
    (code,) = _codes(f"speakers a, b\nwhen not ({cond}) then b\n")
    assert code == "E001"


def test_deep_json_values_are_a_clean_e001() -> None:
    deep = "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)
    for text in (
        f"speakers a, b\ncontext k = {deep}\n",
        f"speakers a, b\nwhen context.k == {deep} then b\n",
        "speakers a, b\ncontext k = " + '{"a": ' * 3000 + "1" + "}" * 3000 + "\n",
    ):
        compiled, diags = compile_source(SourceFile("h.flow", text))
        (d,) = diags
        assert compiled is None and d.code.id == "E001" and "nested more than" in d.message
    ok = "[" * MAX_NESTING + "]" * MAX_NESTING
    compiled, diags = compile_source(SourceFile("h.flow", f"speakers a, b\ncontext k = {ok}\n"))
    assert diags == () and compiled is not None and compiled.to_json()


def test_unclosed_parentheses_deep() -> None:
    (code,) = _codes("speakers a, b\nwhen " + "(" * 5000 + "from a then b\n")
    assert code == "E001"


# ── properties nest as conditions do ─────────────────────────────────────────

PROPERTY_FLOW = "speakers a, b\nwhen from a then b\nproperty p: never "


@pytest.mark.parametrize(
    "expr",
    [
        "previous " * MAX_NESTING + "from a",
        "not previous " * (MAX_NESTING // 2) + "from a",
        "(from a and " * MAX_NESTING + "from b" + ")" * MAX_NESTING,
        "previous (" + "(from a or " * (MAX_NESTING - 1) + "ends" + ")" * MAX_NESTING,
        "previous " * (MAX_NESTING // 2)
        + "context.k == "
        + "[" * (MAX_NESTING // 2)
        + "]" * (MAX_NESTING // 2),
    ],
    ids=["previous", "not+previous", "and", "or", "previous+value"],
)
def test_deepest_accepted_property_compiles_and_one_more_is_e001(expr: str) -> None:
    text = PROPERTY_FLOW.replace("when", "context k = 0\nwhen") + expr + "\n"
    compiled, diags = compile_source(SourceFile("h.flow", text))
    assert diags == () and compiled is not None and len(compiled.properties) == 1
    _, diags = compile_source(
        SourceFile("h.flow", text.replace("never ", "never previous (", 1)[:-1] + ")\n")
    )
    (d,) = diags
    assert d.code.id == "E001" and "nested more than 100 levels deep" in d.message


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("previous " * 100_000 + "from a", "property expression nested more than 100 levels deep"),
        ("not " * 100_000 + "from a", "property expression nested more than 100 levels deep"),
        ("(" * 100_000 + "from a", "unexpected end of file"),
        ("(from a and " * 20_000 + "from a", "unexpected end of file"),
        ("context.k == " + "[" * 100_000 + "]" * 100_000, "JSON value nested more than 100 levels"),
    ],
    ids=["previous", "not", "open-parentheses", "open-and", "value"],
)
def test_100k_deep_property_is_a_clean_e001(expr: str, message: str) -> None:
    """Hostile nesting in a property: one E001, never a RecursionError."""
    compiled, diags = compile_source(SourceFile("h.flow", PROPERTY_FLOW + expr + "\n"))
    (d,) = diags
    assert compiled is None and d.code.id == "E001" and message in d.message, d.message


def test_100k_grouping_parentheses_in_a_property_compile() -> None:
    """Parentheses that only group do not nest: 100,000 of them are one `from a`."""
    text = PROPERTY_FLOW + "(" * 100_000 + "from a" + ")" * 100_000 + "\n"
    compiled, diags = compile_source(SourceFile("h.flow", text))
    assert diags == () and compiled is not None
    (prop,) = compiled.properties
    assert prop.text == "property p: never from a"
    assert prop.span is not None and prop.span.end == len(text) - 1  # the last `)` included


def test_cli_100k_deep_property_under_limits(tmp_path: Path) -> None:
    from tests.hostile.limits import run_limited

    path = tmp_path / "deep.flow"
    path.write_text(PROPERTY_FLOW + "previous " * 100_000 + "from a\n")
    for command in ("check", "fmt", "compile"):
        result = run_limited(
            [command, str(path)], memory_mib=768, cpu_seconds=60, wall_seconds=120.0
        )
        assert not result.timed_out and "Traceback" not in result.stderr, result.stderr[-2000:]
        assert result.returncode == 1, (command, result.stderr[-2000:])
        assert "E001" in result.stdout + result.stderr
        assert "property expression nested more than 100 levels deep" in (
            result.stdout + result.stderr
        )


def _ten_mb_flow() -> str:
    head = "speakers a, b\nwhen from a then b\n"
    pad = "# " + "x" * 97 + "\n"  # 100 bytes a line
    return head + pad * (10 * 1024 * 1024 // len(pad)) + "otherwise terminate\n"


def test_ten_mb_file_compiles() -> None:
    text = _ten_mb_flow()
    assert len(text) > 10_000_000
    compiled, diags = compile_source(SourceFile("big.flow", text))
    assert diags == () and compiled is not None
    assert len(compiled.graph.transitions) == 1
    assert compiled.default_span is not None and compiled.default_span.line > 100_000


def test_ten_mb_line_of_garbage_is_one_e001() -> None:
    text = "speakers a, b\n" + "@" * (10 * 1024 * 1024)
    compiled, diags = compile_source(SourceFile("big.flow", text))
    (d,) = diags
    assert compiled is None and d.code.id == "E001"
    assert d.span is not None and (d.span.line, d.span.column) == (2, 1)


# ── the command line on hostile files: exit codes 0 / 1 / 2 ───────────────────


def _run(
    args: list[str], tmp_path: Path, data: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*FLOWC, *args], input=data, capture_output=True, timeout=60, cwd=tmp_path, check=False
    )


def test_cli_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.flow"
    path.write_bytes("speaker caf\xe9\nspeaker b\n".encode("latin-1"))
    proc = _run(["compile", str(path)], tmp_path)
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert (
        "E001" in err
        and 'not valid UTF-8 (byte 0xe9, in "speaker caf\\xe9")' in err
        and "1:12" in err
    )
    assert "Traceback" not in err


def test_read_source_non_utf8_points_at_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "bad.flow"
    path.write_bytes(b"speakers a, b\nwhen from a then \xff\n")
    source, (d,) = read_source(str(path))
    assert source is None and d.span is not None
    assert (d.span.line, d.span.column) == (2, 18)


def test_cli_ten_mb_file(tmp_path: Path) -> None:
    path = tmp_path / "big.flow"
    path.write_text(_ten_mb_flow(), encoding="utf-8")
    proc = _run(["compile", str(path), "--graph"], tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)["transitions"][0]["then"]["args"]["agent_id"] == "b"


def test_cli_nul_bytes_and_empty_stdin(tmp_path: Path) -> None:
    proc = _run(["compile", "-"], tmp_path, b"speakers a, b\x00\n")
    assert proc.returncode == 1 and b"E001" in proc.stderr and b"Traceback" not in proc.stderr
    proc = _run(["compile", "-"], tmp_path, b"")
    assert proc.returncode == 1 and b"E110" in proc.stderr and b"Traceback" not in proc.stderr


def test_cli_missing_file_and_bad_option(tmp_path: Path) -> None:
    proc = _run(["compile", str(tmp_path / "nope.flow")], tmp_path)
    assert proc.returncode == 2 and b"no such file" in proc.stderr
    proc = _run(["compile", str(tmp_path)], tmp_path)
    assert proc.returncode == 2 and b"is a directory" in proc.stderr
    proc = _run(["compile", "--no-such-option", "x.flow"], tmp_path)
    assert proc.returncode == 2


def test_cli_deep_nesting(tmp_path: Path) -> None:
    path = tmp_path / "deep.flow"
    path.write_text("speakers a, b\nwhen " + "(" * 500 + "always" + ")" * 500 + " then b\n")
    proc = _run(["compile", str(path)], tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()


@pytest.mark.parametrize(
    "value",
    ['"\\ud800"', '"x \\udfff y"', '{"\\ud800": 1}', '["ok", "\\udbff"]'],
)
def test_lone_surrogate_escapes_are_e001(value: str) -> None:
    compiled, diags = compile_source(SourceFile("s.flow", f"speakers a, b\ncontext k = {value}\n"))
    (d,) = diags
    assert compiled is None and d.code.id == "E001" and "surrogate" in d.message


def test_surrogate_pairs_and_other_escapes_decode() -> None:
    text = 'speakers a, b\ncontext k = "\\ud83d\\ude00 \\u00e9 \\n \\" \\/"\n'
    compiled, diags = compile_source(SourceFile("s.flow", text))
    assert diags == () and compiled is not None
    assert compiled.context_vars == {"k": '\U0001f600 é \n " /'}
    compiled.to_json().encode("utf-8")


def test_cli_lone_surrogate(tmp_path: Path) -> None:
    path = tmp_path / "s.flow"
    path.write_text('speakers a, b\ncontext k = "\\ud800"\n', encoding="utf-8")
    proc = _run(["compile", str(path)], tmp_path)
    assert proc.returncode == 1 and b"E001" in proc.stderr and b"Traceback" not in proc.stderr
