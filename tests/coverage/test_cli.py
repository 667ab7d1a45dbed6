"""`flowc test -k/-x/--junit-xml/--coverage*` and `flowc scenarios` end to end; the JUnit
and Cobertura outputs validate against the schemas CI servers read (tests/schemas)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lxml import etree

from flowc.cli import main
from tests.coverage.flows import CHOICE, REVIEW

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"

BROKEN = "speaker a\nwhen from nobody then a\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    # a reason some run ends with, but not this one ("fallback", which only the dead
    # default writes, is refused before it runs: E111)
    failing = REVIEW.replace('expect terminate "approved"', 'expect terminate "max_turns"').replace(
        '"approve at once"', '"approve & <fail>"'
    )
    (tmp_path / "review.flow").write_text(
        REVIEW + '\nscenario "drafts first" {\n  user: "x"\n  expect next reviewer\n}\n'
    )
    (tmp_path / "failing.flow").write_text(failing)
    (tmp_path / "broken.flow").write_text(BROKEN)
    return tmp_path


def junit_valid(path: Path) -> etree._ElementTree:
    schema = etree.XMLSchema(etree.parse(str(SCHEMAS / "junit-10.xsd")))
    doc = etree.parse(str(path))
    assert schema.validate(doc), schema.error_log
    return doc


def test_junit_xml_validates_and_reports_failures_and_compile_errors(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = project / "junit.xml"
    assert main(["test", str(project), "--junit-xml", str(out)]) == 1
    doc = junit_valid(out)
    root = doc.getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "1")
    [failure] = doc.findall(".//failure")
    assert '"max_turns"' in (failure.get("message") or "")
    assert doc.find(".//testcase[@name='approve & <fail>']") is not None
    [error] = doc.findall(".//error")
    # the errors themselves (code, line:col, message), not only "the file does not compile"
    broken = project / "broken.flow"
    assert error.get("message") == (
        f"the file does not compile: {broken}:1:1: E110 a flow needs at least two speakers; "
        "this one declares 1 (and 1 more error)"
    )
    assert error.text == (
        f"the file does not compile:\n{broken}:1:1: E110 a flow needs at least two speakers; "
        f"this one declares 1\n{broken}:2:11: E101 `from` names `nobody`, which is not "
        "a declared speaker\n"
    )


def test_k_selects_scenarios_and_x_stops_at_the_first_failure(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["test", str(project / "review.flow"), "-k", "drafts"]) == 0
    out = capsys.readouterr().out
    assert "ok    drafts first" in out and "approve at once" not in out
    assert "1 scenario: 1 passed, 0 failed (1 deselected by -k)" in out
    assert main(["test", str(project / "review.flow"), "-k", "not drafts", "-k", "*once"]) == 0
    assert "ok    approve at once" in capsys.readouterr().out
    # a pattern that selects nothing is a mistake, not a pass (in CI it would run nothing)
    assert main(["test", str(project / "review.flow"), "-k", "drafts first typo"]) == 2
    captured = capsys.readouterr()
    assert "0 scenarios: 0 passed, 0 failed (2 deselected by -k)" in captured.out
    assert "-k selected none of the 2 scenarios: 'drafts first typo'" in captured.err
    # over several files (one without scenarios), with -x, and with reports asked for:
    # the same, and no report is written (none would say what was meant)
    junit, cov = project / "k.xml", project / "k.json"
    (project / "plain.flow").write_text("speaker a: human\nspeaker b\nwhen from a then b\n")
    argv = [str(project / "review.flow"), str(project / "plain.flow"), "-k", "zzz", "-x"]
    assert main(["test", *argv, "--junit-xml", str(junit), "--coverage-json", str(cov)]) == 2
    assert "-k selected none of the 2 scenarios" in capsys.readouterr().err
    assert not junit.exists() and not cov.exists()
    # a file that does not compile may hold the scenarios meant: said, and exit 1 as ever
    assert (
        main(["test", str(project / "broken.flow"), str(project / "review.flow"), "-k", "zzz"]) == 1
    )
    assert "-k selected none of the 2 scenarios" in capsys.readouterr().err
    # a file without scenarios, and no -k: nothing to run is no mistake
    assert main(["test", str(project / "plain.flow")]) == 0
    # -x: failing.flow sorts before review.flow; nothing after the failure runs
    assert main(["test", str(project / "failing.flow"), str(project / "review.flow"), "-x"]) == 1
    out = capsys.readouterr().out
    assert "review.flow" not in out and "stopped at the first failure (-x)" in out


def test_coverage_table_json_cobertura_and_fail_under(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "review.flow"
    flow.write_text(REVIEW)
    js, xml = tmp_path / "cov.json", tmp_path / "cov.xml"
    assert (
        main(
            [
                "test",
                str(flow),
                "--coverage",
                "--coverage-json",
                str(js),
                "--coverage-xml",
                str(xml),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "54.5%" in out and "Missing:" in out and "W203" in out
    data = json.loads(js.read_text())
    assert (data["covered"], data["total"], data["percent"]) == (6, 11, 54.5)
    by_id = {t["id"]: t for t in data["files"][0]["targets"]}
    assert by_id["rule:4"]["coverable"] is False and by_id["rule:4"]["code"] == "W203"
    assert by_id["rule:1"]["hits"] == 1 and by_id["rule:2"]["hits"] == 0
    dtd = etree.DTD(str(SCHEMAS / "coverage-04.dtd"))
    doc = etree.parse(str(xml))
    assert dtd.validate(doc), dtd.error_log
    line11 = doc.find(".//line[@number='11']")
    assert line11 is not None and line11.get("condition-coverage") == "50% (1/2)"
    assert doc.find(".//line[@number='13']") is None  # the dead rule is not a line to cover
    assert doc.getroot().get("branches-valid") == "11"
    assert main(["test", str(flow), "--fail-under", "50"]) == 0
    assert main(["test", str(flow), "--fail-under", "60"]) == 1
    assert "under --fail-under 60%" in capsys.readouterr().out
    assert main(["test", str(flow), "--fail-under", "120"]) == 2


def test_scenarios_prints_writes_once_and_reaches_full_coverage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "choice.flow"
    flow.write_text(CHOICE)
    assert main(["scenarios", str(flow)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith('scenario "generated: ')
    assert "scenarios for 14 live targets (lower bound 4;" in captured.err
    assert main(["scenarios", str(flow), "--write"]) == 0
    written = flow.read_text()
    assert captured.out.strip() in written
    assert main(["scenarios", str(flow), "--write"]) == 0
    assert flow.read_text() == written  # already there: nothing added
    assert "added 0 scenarios" in capsys.readouterr().err
    assert main(["fmt", "--check", str(flow)]) == 0
    assert main(["test", str(flow), "--fail-under", "100"]) == 0
    assert "100.0%" in capsys.readouterr().out


def test_scenarios_refuses_what_it_cannot_generate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    custom = tmp_path / "custom.flow"
    custom.write_text(
        "speaker user: human\nspeaker bot\ncondition urgent()\nwhen urgent() then bot\n"
    )
    assert main(["scenarios", str(custom)]) == 1
    assert "`urgent` (line 4)" in capsys.readouterr().err
    graph = tmp_path / "g.json"
    graph.write_text("{}")
    assert main(["scenarios", str(graph)]) == 2
    assert main(["scenarios", str(tmp_path / "missing.flow")]) == 2
    broken = tmp_path / "broken.flow"
    broken.write_text(BROKEN)
    assert main(["scenarios", str(broken)]) == 1


def test_a_bare_step_shows_its_tool_alternative_covered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bot hands off to user` is a call of `decide`'s first alternative: the table and the
    JSON report count it covered, as `bot calls decide hands off to user` would be."""
    flow = tmp_path / "bare.flow"
    flow.write_text(
        "speaker user: human\nspeaker bot {\n"
        '  tool decide hands off to user | finishes "done"\n}\n'
        "when from user then bot\n"
        'scenario "bare" {\n  user: "hi"\n  bot hands off to user: "back"\n'
        '  user: "bye"\n  bot finishes "done"\n}\n'
    )
    js = tmp_path / "cov.json"
    assert main(["test", str(flow), "--coverage", "--coverage-json", str(js)]) == 0
    hits = {t["id"]: t["hits"] for t in json.loads(js.read_text())["files"][0]["targets"]}
    assert hits["tool:bot:decide:0"] == hits["tool:bot:decide:1"] == 1
    assert "bot calls decide" not in capsys.readouterr().out  # not listed as missing


def test_scenarios_says_why_a_long_cap_has_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "long.flow"
    flow.write_text(
        "speaker user: human\nspeaker bot\nstart user\nmax_turns 1002\n"
        "when from user then bot\nwhen from bot then user\n",
        encoding="utf-8",
    )
    assert main(["scenarios", str(flow)]) == 0
    assert (
        "1 live target not reached: max_turns 1002 (a run to it takes 1,002 turns: "
        "scenarios are written for caps up to 1,000)" in capsys.readouterr().err
    )


def test_scenarios_property_keeps_the_same_length_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--property` writes no scenario longer than the plain command does: a property
    broken only at a cap of 1,002 turns (a `tool t` on the cap's turn) is refused."""
    flow = tmp_path / "long.flow"
    flow.write_text(
        "speaker user: human\nspeaker bot {\n  tool t\n}\nstart user\nmax_turns 1002\n"
        "when from user then bot\nwhen from bot then user\n"
        "property e: after tool t, from user within 3 turns\n",
        encoding="utf-8",
    )
    assert main(["scenarios", str(flow), "--property", "e"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"{flow}: error: --property e: property e (`after tool t, from user within 3 turns`): "
        "the shortest run that breaks it takes 1,002 turns, and scenarios are written for "
        "caps up to 1,000\n"
    )
    flow.write_text(flow.read_text().replace("max_turns 1002", "max_turns 1000"))
    assert main(["scenarios", str(flow), "--property", "e"]) == 0  # up to the limit: written
    assert capsys.readouterr().out.count("expect next") == 999


@pytest.mark.parametrize("fail_under", [[], ["--fail-under", "0"]])
def test_coverage_when_no_file_compiled_is_no_percentage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fail_under: list[str]
) -> None:
    """Nothing compiled is nothing covered: no `TOTAL ... 100.0%`, and `--fail-under`
    (even 0) fails, saying why."""
    broken = tmp_path / "broken.flow"
    broken.write_text(BROKEN)
    reports = [
        "--coverage-json",
        str(tmp_path / "c.json"),
        "--coverage-xml",
        str(tmp_path / "c.xml"),
    ]
    assert main(["test", str(broken), "--coverage", *reports, *fail_under]) == 1
    out = capsys.readouterr().out
    # the reports say it as the table does: no percentage, no rate a gate would pass
    assert json.loads((tmp_path / "c.json").read_text())["percent"] is None
    xml = (tmp_path / "c.xml").read_text()
    assert '<coverage line-rate="0.0000" branch-rate="0.0000" lines-covered="0"' in xml
    assert "TOTAL" not in out and "%" not in out.replace("--fail-under 0% fails", "")
    assert "Coverage: no .flow file compiled, so nothing is covered\n" in out
    if fail_under:
        assert out.endswith(
            "coverage: no .flow file compiled, so nothing is covered: --fail-under 0% fails\n"
        )


def test_coverage_of_a_graph_alone_says_no_flow_file_compiled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A JSON graph that loads has no scenarios, so no coverage: `--fail-under` fails,
    and says that no .flow file compiled (not that the graph did not)."""
    (tmp_path / "a.flow").write_text("speaker a\nspeaker b\nwhen from a then b\n")
    graph = tmp_path / "a.json"
    assert main(["compile", str(tmp_path / "a.flow"), "-o", str(graph)]) == 0
    capsys.readouterr()
    assert main(["test", str(graph), "--coverage", "--fail-under", "10"]) == 1
    out = capsys.readouterr().out
    assert "(no scenarios: scenarios are written in .flow files)" in out
    assert out.endswith(
        "coverage: no .flow file compiled, so nothing is covered: --fail-under 10% fails\n"
    )


def test_a_file_that_compiles_with_a_scenario_no_run_can_pass_is_named_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """E111 on a scenario's ending (found by exploring the flow, as `check` does) stops the
    file, which `flowc compile` takes: it is not said not to compile."""
    flow = tmp_path / "ending.flow"
    flow.write_text(
        "speaker u: human\nspeakers a\nwhen from u then a\n"
        'when from a then terminate "done"\notherwise terminate "never"\n'
        'scenario "s" { u: "1" expect terminate "never" }\n'
    )
    assert main(["compile", str(flow), "-o", str(tmp_path / "out.json")]) == 0
    capsys.readouterr()
    out = tmp_path / "junit.xml"
    assert main(["test", str(flow), "--junit-xml", str(out)]) == 1
    text = capsys.readouterr().out
    assert "ERROR a scenario expects what no run of the flow does" in text, text
    assert "1 file with scenarios no run can pass (E111)" in text, text
    assert "not compile" not in text, text
    [error] = junit_valid(out).findall(".//error")
    assert (error.get("message") or "").startswith(
        f"a scenario expects what no run of the flow does: {flow}:6:40: E111 "
    )
