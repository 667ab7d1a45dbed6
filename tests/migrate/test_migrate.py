"""`flowc migrate` on the corpus: golden `.flow` outputs, expected findings and exit codes,
and the translated flows' behaviour.

A Python team with a ``NAME.dump.json`` beside it (its real ``dump_component()``) must read
as that dump and translate to the same flow.

Each ``corpus/NAME.py`` (classic AG2) or ``corpus/agentchat_NAME.json`` (AgentChat component,
written by the real package with ``tools/make_agentchat_json.py``) is migrated through the
real command line in process. ``NAME.flow`` is the golden output (when one is written) and
``NAME.expected.json`` the exit code and the findings as ``--format json`` prints them.
``pytest --update-golden`` rewrites both; review the diff like code.

The translated flows must compile, pass ``flowc check`` without errors, and their scenarios
must pass on the runtime. For exact translations, the scenarios were also run through the
real classic / AgentChat packages once (``tools/record_*.py``); the records
(``NAME.classic.json``, ``NAME.agentchat.json``) must agree with every scenario, so a change
that breaks classic fidelity fails here without the classic packages installed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import has_errors
from flowc.dsl import nodes as n
from flowc.dsl.parser import parse_source
from flowc.migrate.agentchat_py import python_component
from flowc.source import SourceFile

CORPUS = Path(__file__).resolve().parent / "corpus"
RECORDS = (".classic.json", ".agentchat.json", ".expected.json")
INPUTS = sorted(
    p for p in [*CORPUS.glob("*.py"), *CORPUS.glob("*.json")] if not p.name.endswith(RECORDS)
)
FLOWS = sorted(CORPUS.glob("*.flow"))


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def run_migrate(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *extra: str
) -> tuple[int, str, str]:
    monkeypatch.chdir(path.parent)
    code = main(["migrate", path.name, "--format", "json", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_corpus_covers_every_input_kind() -> None:
    names = {p.name for p in INPUTS}
    assert len([p for p in INPUTS if p.suffix == ".py"]) >= 10
    assert len([p for p in INPUTS if p.suffix == ".json"]) >= 4
    assert {"syntax_error.py", "no_group_chat.py", "magentic_python.py"} <= names
    # every golden belongs to an input
    stems = {p.stem for p in INPUTS}
    assert all(f.stem in stems for f in FLOWS)


@pytest.mark.parametrize("path", INPUTS, ids=_ids(INPUTS))
def test_golden(
    path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    update_golden: bool,
) -> None:
    code, out, err = run_migrate(path, capsys, monkeypatch)
    assert "Traceback" not in err
    findings = json.loads(err) if err.strip() else []
    expected_path = path.with_suffix(".expected.json")
    golden = path.with_suffix(".flow")
    got = {"exit": code, "findings": findings}
    if update_golden:
        expected_path.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        if out:
            golden.write_text(out, encoding="utf-8")
        elif golden.exists():
            golden.unlink()
    assert expected_path.exists(), (
        f"no expected findings for {path.name}: run pytest --update-golden"
    )
    assert got == json.loads(expected_path.read_text(encoding="utf-8"))
    if code == 2:
        assert out == "", "nothing is written when the input is not translated"
        assert not golden.exists()
    else:
        assert golden.exists(), f"no golden .flow for {path.name}"
        assert out == golden.read_text(encoding="utf-8")
    # exit codes follow the findings: 1 exactly when something was left out
    codes = {f["code"] for f in findings}
    if code != 2:
        assert (code == 1) == ("M001" in codes)


@pytest.mark.parametrize("path", FLOWS, ids=_ids(FLOWS))
def test_migrated_flow_compiles_and_checks_clean(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = SourceFile(str(path), path.read_text(encoding="utf-8"))
    compiled, diags = compile_source(source)
    assert compiled is not None and not has_errors(diags), diags
    assert main(["fmt", "--check", str(path)]) == 0
    code = main(["check", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    report = json.loads(out or err or "[]")
    assert code == 0, report
    assert not [d for d in report if d["severity"] == "error"]


def _scenarios(path: Path) -> list[n.Scenario]:
    flow, diags = parse_source(SourceFile(str(path), path.read_text(encoding="utf-8")))
    assert not diags
    return list(flow.of_type(n.Scenario))


WITH_SCENARIOS = [p for p in FLOWS if _scenarios(p)]


@pytest.mark.parametrize("path", WITH_SCENARIOS, ids=_ids(WITH_SCENARIOS))
def test_scenarios_pass_on_the_runtime(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["test", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "failed" not in out.replace("0 failed", "")


def test_exact_translations_have_scenarios_and_records() -> None:
    exact = [p for p in FLOWS if "speaker order read statically" in p.read_text(encoding="utf-8")]
    assert len(exact) >= 6
    for p in exact:
        assert _scenarios(p), f"{p.name}: an exact translation needs scenarios"
        records = [p.with_suffix(s) for s in (".classic.json", ".agentchat.json")]
        assert any(r.exists() for r in records), f"{p.name}: record it with tools/record_*.py"


def _speakers_and_end(sc: n.Scenario) -> tuple[list[str], str | None, str | None]:
    speakers: list[str] = []
    end: str | None = None
    nxt: str | None = None
    for item in sc.items:
        if isinstance(item, n.SayTurn | n.CallTurn):
            speakers.append(item.speaker.value)
        elif isinstance(item, n.ExpectTerminate):
            end = item.reason.value if item.reason else "after_work"
        elif isinstance(item, n.ExpectNext):
            nxt = item.speaker.value
    return speakers, end, nxt


CLASSIC = sorted(CORPUS.glob("*.classic.json"))


def _assert_record_agrees(
    record: Path, suffix: str, end_of: Callable[[dict[str, Any]], str | None]
) -> None:
    """Every scenario of the flow says what the real package did (the record)."""
    flow = CORPUS / record.name.replace(suffix, ".flow")
    data = json.loads(record.read_text(encoding="utf-8"))
    scenarios = _scenarios(flow)
    assert {sc.title.value for sc in scenarios} == set(data)
    for sc in scenarios:
        speakers, end, nxt = _speakers_and_end(sc)
        got = data[sc.title.value]
        expected = speakers + ([nxt] if nxt else [])
        assert got["speakers"][: len(expected)] == expected, sc.title.value
        if end is not None:
            assert got["speakers"] == speakers, sc.title.value
            assert end_of(got) == end, (sc.title.value, got)


@pytest.mark.parametrize("record", CLASSIC, ids=_ids(CLASSIC))
def test_scenarios_agree_with_real_classic(record: Path) -> None:
    """What autogen's GroupChat did (recorded) is what every scenario says."""
    _assert_record_agrees(record, ".classic.json", lambda got: got["end"])


_AGENTCHAT_ENDS = [
    (re.compile(r"^Maximum number of (messages|turns)"), "max_turns"),
    (re.compile(r"^Text '.*' mentioned"), "text_mention"),
    (re.compile(r"^Handoff to (\w+)"), "handoff_to_{0}"),
    (re.compile(r"^Digraph execution is complete"), "graph_complete"),
]


def _agentchat_end(stop_reason: str) -> str | None:
    for pattern, reason in _AGENTCHAT_ENDS:
        m = pattern.match(stop_reason)
        if m:
            return reason.format(*m.groups()[-1:]) if "{0}" in reason else reason
    return None


AGENTCHAT = sorted(CORPUS.glob("*.agentchat.json"))


@pytest.mark.parametrize("record", AGENTCHAT, ids=_ids(AGENTCHAT))
def test_scenarios_agree_with_real_agentchat(record: Path) -> None:
    """What AgentChat's team did (recorded) is what every scenario says."""
    _assert_record_agrees(record, ".agentchat.json", lambda got: _agentchat_end(got["stop_reason"]))


def test_output_file_and_text_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "blog.flow"
    code = main(["migrate", str(CORPUS / "transitions_chain.py"), "-o", str(out_file)])
    out, err = capsys.readouterr()
    assert code == 0 and out == ""
    assert out_file.read_text(encoding="utf-8") == (CORPUS / "transitions_chain.flow").read_text(
        encoding="utf-8"
    )
    assert "warning[M002]" in err and "transitions_chain.py:47:1" in err


DUMPED = sorted(p for p in CORPUS.glob("*.py") if p.with_suffix(".dump.json").exists())
#: what only the JSON translation says: JSON cannot show a callable edge condition
JSON_ONLY = "Python callable condition is written to JSON"


def _flow_body(text: str) -> list[str]:
    """The flow without its provenance line and its `flow NAME` line (named after the file)."""
    return [line for line in text.splitlines()[1:] if not line.startswith("flow ")]


@pytest.mark.parametrize("path", DUMPED, ids=_ids(DUMPED))
def test_python_team_reads_as_its_dump(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same AgentChat team, as Python source and as what ``dump_component()`` wrote for it
    (autogen-agentchat 0.7.5, ``tools``-free), is the same component and the same flow."""
    dump = json.loads(path.with_suffix(".dump.json").read_text(encoding="utf-8"))
    read = python_component(SourceFile(path.name, path.read_text(encoding="utf-8")))
    assert read["provider"] == dump["provider"]
    assert [(p["provider"], p["config"]["name"]) for p in read["config"]["participants"]] == [
        (p["provider"], p["config"]["name"]) for p in dump["config"]["participants"]
    ]
    assert read["config"].get("graph") == dump["config"].get("graph")
    assert read["config"].get("max_turns") == dump["config"].get("max_turns")
    code_py, out_py, err_py = run_migrate(path, capsys, monkeypatch)
    code_js, out_js, err_js = run_migrate(path.with_suffix(".dump.json"), capsys, monkeypatch)
    assert code_py == code_js == 0
    assert _flow_body(out_py) == _flow_body(out_js)
    py = [(f["code"], f["message"]) for f in json.loads(err_py or "[]")]
    js = [
        (f["code"], f["message"])
        for f in json.loads(err_js or "[]")
        if JSON_ONLY not in f["message"]
    ]
    assert py == js


def test_graphflow_python_sees_what_json_loses() -> None:
    """A keyword lambda is the keyword; `sources` is kept; the dump has neither."""
    text = (CORPUS / "agentchat_graph_groups.flow").read_text(encoding="utf-8")
    assert 'when from approver and text_contains(text = "redo") then drafter' in text
    assert 'when from approver and text_contains(text = "SHIP IT") then terminate' in text
    read = python_component(
        SourceFile("g.py", (CORPUS / "agentchat_graph_groups.py").read_text(encoding="utf-8"))
    )
    redo = read["config"]["graph"]["nodes"]["approver"]["edges"][0]
    assert redo == {
        "target": "drafter",
        "condition": "redo",
        "activation_group": "redo",
        "activation_condition": "any",
    }
    assert read["config"]["graph"]["default_start_node"] == "drafter"


GRAPH_TEAM = """
a = AssistantAgent("a", model_client=c)
b = AssistantAgent("b", model_client=c)
z = AssistantAgent("z", model_client=c)
g = DiGraphBuilder()
g.add_node(a).add_node(b).add_node(z)
g.add_edge(a, z{extra_a})
g.add_edge(b, z{extra_b})
team = GraphFlow(g.get_participants(), graph=g.build(), max_turns=6)
"""


@pytest.mark.parametrize(
    ("extra_a", "extra_b", "waits"),
    [
        ("", "", True),  # default group `z`, condition all: z waits for a and b (AgentChat's join)
        (
            ', activation_condition="any"',
            ', activation_condition="any"',
            False,
        ),  # z runs after either
        (
            ', activation_group="late"',
            ', activation_group="late"',
            True,
        ),  # one group `late`, all: a join
        (
            "",
            ', activation_group="loop"',
            False,
        ),  # two groups of one parent each: z runs after either
    ],
)
def test_graphflow_python_activation_groups(extra_a: str, extra_b: str, waits: bool) -> None:
    from flowc.migrate import migrate_source

    result = migrate_source(
        SourceFile("join.py", GRAPH_TEAM.format(extra_a=extra_a, extra_b=extra_b))
    )
    messages = [d.message for d in result.findings]
    assert any("several start nodes (a, b)" in m for m in messages)
    assert any("`z` waits for all of a, b" in m for m in messages) is waits


def test_graphflow_python_unreadable_graph_is_reported() -> None:
    from flowc.migrate import migrate_source

    src = "a = AssistantAgent('a')\nteam = GraphFlow([a], graph=make_graph())\n"
    result = migrate_source(SourceFile("g.py", src))
    assert result.text is None
    assert [d.code.id for d in result.findings] == ["M001"]
    assert "not built with a `DiGraphBuilder()`" in result.findings[0].message
    edge = (
        "a = AssistantAgent('a')\nb = AssistantAgent('b')\ng = DiGraphBuilder()\n"
        "g.add_node(a)\ng.add_edge(a, b)\nteam = GraphFlow([a, b], graph=g.build())\n"
    )
    result = migrate_source(SourceFile("g.py", edge))
    assert result.left_out
    assert any("was not added first" in d.message for d in result.findings)
