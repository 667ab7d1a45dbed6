"""Counts are printed with their noun in the singular for one ("1 turn", "1 file"),
through one helper (:func:`flowc.diagnostics.counted`): a run of one turn, a report of
one file, a worker that closed one run."""

from __future__ import annotations

import ast
import itertools
import json
import re
from pathlib import Path

import pytest

import flowc
from flowc.cli import main
from flowc.compiler.analysis.runs import Run, Turn
from flowc.diagnostics import counted

ROOT = Path(flowc.__file__).parent

ONE_TURN = """speaker user: human
speaker bot
start user
when from user then terminate "x"
when from bot then user
"""


def test_counted() -> None:
    assert [counted(n, "turn") for n in (0, 1, 2)] == ["0 turns", "1 turn", "2 turns"]
    assert counted(1, "info", "info") == "1 info" and counted(3, "info", "info") == "3 info"
    assert counted(1_234, "turn", grouped=True) == "1,234 turns"


def test_a_run_of_one_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flow, script, db = tmp_path / "one.flow", tmp_path / "one.yaml", tmp_path / "runs.db"
    flow.write_text(ONE_TURN)
    script.write_text("kickoff: hi\n")
    assert main(["run", str(flow), "--script", str(script), "--db", str(db)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == 'closed: "x" after 1 turn'
    assert main(["log", "--db", str(db)]) == 0
    assert capsys.readouterr().out.rstrip().endswith('one.flow  1 turn  "x"')
    assert main(["log", "--db", str(db), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert main(["log", "--db", str(db), run["run_id"]]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == 'closed: "x" after 1 turn'
    assert main(["replay", "--db", str(db), run["run_id"]]) == 0
    assert capsys.readouterr().out == (
        f"{run['run_id']}: re-folded 3 envelopes: same close "
        'reason "x", same state (1 turn, context {})\n'
    )


def test_reports_of_one_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flow = tmp_path / "bad.flow"
    flow.write_text("speaker a\nspeaker b\nwhen from a then c\n")
    assert main(["check", "--format", "concise", str(flow)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "1 error in 1 file"
    good = tmp_path / "good.flow"
    good.write_text(ONE_TURN + 'scenario "one" {\n  user: "hi"\n  expect turns 2\n}\n')
    assert main(["test", str(good)]) == 1
    out = capsys.readouterr().out
    assert "expected 2 turns, the run has 1" in out
    assert out.splitlines()[-1] == "1 scenario: 0 passed, 1 failed"
    good.write_text(ONE_TURN + 'scenario "one" {\n  user: "hi"\n  expect turns 1\n}\n')
    assert main(["test", str(good), str(flow)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "1 scenario: 1 passed, 0 failed; 1 file did not compile"
    )


def test_a_long_run_leaves_out_one_turn() -> None:
    run = Run(tuple(Turn(f"s{i}") for i in range(31)), "s31")
    assert "(1 more turn)" in run.render()


#: a count written straight before one of these nouns in an f-string ("{n} turns"): it
#: says "1 turns" for one; counted() says "1 turn"
_COUNTED_NOUN = re.compile(
    r"^ (turn|run|file|finding|scenario|state|envelope|error|warning|target|loop|speaker|"
    r"rule|worker|step)s\b(?!/)"
)  # (a rate, "turns/s", is no count)


def test_no_count_is_glued_to_a_plural_noun() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.JoinedStr):
                continue
            for before, after in itertools.pairwise(node.values):
                if (
                    isinstance(before, ast.FormattedValue)
                    and isinstance(after, ast.Constant)
                    and isinstance(after.value, str)
                    and _COUNTED_NOUN.match(after.value)
                ):
                    found.append(
                        f"{path.relative_to(ROOT)}:{node.lineno}: "
                        f"{{{ast.unparse(before.value)}}}{after.value[:12]}"
                    )
    assert found == []
