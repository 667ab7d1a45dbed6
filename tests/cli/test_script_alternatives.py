"""A tool alternative that sets a key twice (`sets k = 1, sets k = 2`: it leaves k = 2)
is taken by a run script's call that writes k = 2, as a scenario and a real agent take
it. Before, the script was refused ("does one of several things; say which") while
`flowc scenarios` wrote, and `flowc test` passed, a scenario ending "two", and an agent
making that call ended "two" too: no script could reach it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.cli_runs import flowc

FLOW = """speaker u: human
speaker c {
  tool t sets k = 1 | sets k = 1, sets k = 2
}
when from u then c
when context.k == 2 then terminate "two"
when context.k == 1 then terminate "one"
"""


@pytest.mark.parametrize("value", [1, 2])
def test_script_scenario_and_agent_take_the_same_alternative(tmp_path: Path, value: int) -> None:
    (tmp_path / "f.flow").write_text(FLOW)
    call = {"say": "x", "tool": "t", "set": {"k": value}}
    (tmp_path / "s.json").write_text(json.dumps({"kickoff": "hi", "script": {"c": [call]}}))
    (tmp_path / "ag.py").write_text(
        "from flowc.runtime import Reply, ToolCall\n"
        f"def c(turn): return Reply('x', (ToolCall('t', {{}}, set={{'k': {value}}}),))\n"
        "AGENTS = {'c': c}\n"
    )
    (tmp_path / "k.json").write_text('{"kickoff": "hi"}')
    want = {1: "one", 2: "two"}[value]
    for args in (("--script", "s.json"), ("--script", "k.json", "--agents", "ag.py")):
        run = flowc(tmp_path, "run", "f.flow", *args, "--db", "r.db")
        assert run.returncode == 0, run.stdout + run.stderr
        assert f'closed: "{want}" after 2 turns' in run.stdout, run.stdout
        # the stored run, written as a scenario, passes `flowc test`
        sc = flowc(tmp_path, "log", "last", "--db", "r.db", "--scenario-upto", "2", "--name", "s")
        assert sc.returncode == 0, sc.stderr
        (tmp_path / "t.flow").write_text(FLOW + sc.stdout)
        tested = flowc(tmp_path, "test", "t.flow")
        assert tested.returncode == 0, tested.stdout + tested.stderr
