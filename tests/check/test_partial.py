"""Partial means partial, everywhere (issue 25): when the state-space analysis stops
at its bound (I301), every verdict built on it says so: `check` (I301 with a place, in
every output format), `scenarios`, `test --coverage` (and `--fail-under`), `render
--check`. The language server's side is in tests/lsp/test_lsp.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main

ROOT = Path(__file__).resolve().parents[2]


def big_flow(speakers: int = 200, keys: int = 10) -> str:
    """The issue's 200-speaker flow: a human starts it, and each of ``speakers`` model
    speakers has a tool writing one of ``keys`` keys, a `context ... and from` rule
    (taken when the next key is set) and a `from` rule. With 10 keys it has 163,841
    abstract states, within the default bound; with 12, more than the default bound."""
    lines = ["flow big", "speaker user: human"]
    lines += [f"speaker s{i} {{\n  tool w{i} sets k{i % keys} = true\n}}" for i in range(speakers)]
    lines += ["start user", "max_turns 50", "when from user then s0"]
    for i in range(speakers):
        lines.append(
            f"when context.k{(i + 1) % keys} == true and from s{i} then s{(i * 7 + 3) % speakers}"
        )
        lines.append(f"when from s{i} then s{(i + 1) % speakers}")
    lines.append('scenario "one" {\n  user: "hi"\n  s0: "x"\n  s1: "y"\n}')
    return "\n".join(lines) + "\n"


#: the I301 page's example: 10 states are too few for it, 1,000 are enough
SMALL = (
    (ROOT / "docs" / "checks" / "I301.md")
    .read_text()
    .split("```flow --max-states 10\n", 1)[1]
    .split("```", 1)[0]
)
SMALL_SCENARIO = SMALL + 'scenario "starts" {\n  user: "hi"\n  expect next worker\n}\n'


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small.flow").write_text(SMALL_SCENARIO, encoding="utf-8")
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ── check: I301 has a place in every format ──────────────────────────────────


def test_the_generated_flow_stops_at_the_default_bound_and_i301_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "big.flow").write_text(big_flow(keys=12), encoding="utf-8")
    code, out, _ = run(capsys, "check", "big.flow", "--format", "concise")
    assert code == 0
    # on the `flow big` line, as every other finding has a line and column
    assert out.splitlines()[0].startswith(
        "big.flow:1:1: I301 the state space is larger than the bound"
    )


def test_i301_is_placed_in_every_format(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # no `flow` declaration: the first speaker's name (line 1, `user`)
    bound = ("--max-states", "10")
    _, out, _ = run(capsys, "check", "small.flow", *bound, "--format", "concise")
    assert out.startswith("small.flow:1:9: I301 ")
    _, out, _ = run(capsys, "check", "small.flow", *bound)
    assert " --> small.flow:1:9\n" in out and "1 | speaker user: human\n" in out
    _, out, _ = run(capsys, "check", "small.flow", *bound, "--format", "json")
    (i301,) = [d for d in json.loads(out) if d["code"] == "I301"]
    assert i301["location"] == {"row": 1, "column": 9}
    assert i301["end_location"] == {"row": 1, "column": 13}
    _, out, _ = run(capsys, "check", "small.flow", *bound, "--format", "sarif")
    (result,) = json.loads(out)["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 1
    _, out, _ = run(capsys, "check", "small.flow", *bound, "--format", "github")
    assert out.startswith("::notice file=small.flow,line=1,col=9,endLine=1,endColumn=13,title=I301")


def test_i301_is_placed_on_the_flow_declaration(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "named.flow").write_text("# a worker\n\nflow named\n" + SMALL, encoding="utf-8")
    _, out, _ = run(capsys, "check", "named.flow", "--max-states", "10", "--format", "concise")
    assert out.startswith("named.flow:3:1: I301 ")


# ── scenarios ───────────────────────────────────────────────────────────────


def test_scenarios_say_they_come_from_a_partial_exploration(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "scenarios", "small.flow", "--max-states", "10")
    assert code == 0 and out.startswith("scenario ")  # what it found still passes
    assert "partial: generated from a partial exploration (I301" in err
    assert "raise --max-states" in err
    code, _, err = run(capsys, "scenarios", "small.flow", "--max-states", "1000")
    assert code == 0 and "partial" not in err
    assert main(["scenarios", "small.flow", "--max-states", "0"]) == 2


# ── test --coverage, --fail-under, --allow-partial ───────────────────────────


def test_coverage_of_a_partial_analysis_is_marked_and_fails_fail_under(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bound = ("--max-states", "10")
    code, out, _ = run(capsys, "test", "small.flow", "--coverage", *bound)
    assert code == 0
    rows = {
        line.split()[0]: line for line in out.splitlines() if line.startswith(("small", "TOTAL"))
    }
    assert rows["small.flow"].endswith("(partial)") and rows["TOTAL"].endswith("(partial)")
    assert "Partial: the analysis of small.flow stopped at its state bound (I301)" in out
    # any bar fails on a partial file, even 0 %...
    code, out, _ = run(capsys, "test", "small.flow", "--fail-under", "0", *bound)
    assert code == 1
    assert "is partial: the analysis of small.flow stopped at its state bound (I301)" in out
    assert "--allow-partial" in out
    # ...unless the partial percentage is accepted
    code, out, _ = run(capsys, "test", "small.flow", "--fail-under", "0", "--allow-partial", *bound)
    assert code == 0 and "is partial" not in out
    # JSON: partial at the top as in each file
    js = folder / "cov.json"
    assert main(["test", "small.flow", "--coverage-json", str(js), *bound]) == 0
    data = json.loads(js.read_text())
    assert data["partial"] is True and data["files"][0]["partial"] is True
    # the whole space: nothing partial
    code, out, _ = run(
        capsys, "test", "small.flow", "--coverage", "--fail-under", "0", "--coverage-json", str(js)
    )
    assert code == 0 and "partial" not in out.lower()
    assert json.loads(js.read_text())["partial"] is False
    assert main(["test", "small.flow", "--max-states", "0"]) == 2


def test_fail_under_fails_on_the_generated_flow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 200-speaker flow whose analysis stops at the default bound."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "big.flow").write_text(big_flow(keys=12), encoding="utf-8")
    code, out, _ = run(capsys, "test", "big.flow", "--coverage", "--fail-under", "0")
    assert code == 1
    total = next(line for line in out.splitlines() if line.startswith("TOTAL"))
    assert total.endswith("(partial)")


def test_the_issues_200_speaker_flow_is_complete_at_the_default_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 26's flow (1,000 lines, 200 speakers, 10 keys): explored one state at a time
    within the default bound, so check reports its loops and coverage is not partial."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "big.flow").write_text(big_flow(), encoding="utf-8")
    code, out, _ = run(capsys, "check", "big.flow", "--format", "concise")
    assert code == 0 and " I301 " not in out and " W205 " in out
    code, out, _ = run(capsys, "test", "big.flow", "--coverage", "--fail-under", "0")
    assert code == 0
    total = next(line for line in out.splitlines() if line.startswith("TOTAL"))
    assert not total.endswith("(partial)")


# ── render --check ───────────────────────────────────────────────────────────


@pytest.mark.parametrize("fmt", ["dot", "mermaid"])
def test_render_check_notes_a_partial_analysis(
    folder: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    code, out, err = run(capsys, "render", "small.flow", "--check", "--max-states", "10", "-f", fmt)
    assert code == 0
    assert "partial: the analysis stopped at its state bound (I301)" in out
    assert err.startswith("small.flow:1:9: I301 ")
    code, out, err = run(capsys, "render", "small.flow", "--check", "-f", fmt)
    assert code == 0 and "partial" not in out and "I301" not in err
    assert main(["render", "small.flow", "--check", "--max-states", "0", "-f", fmt]) == 2
