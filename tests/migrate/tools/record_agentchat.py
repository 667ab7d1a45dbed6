"""Record what the real autogen-agentchat does for each AgentChat corpus file's scenarios.

Run by hand when an AgentChat corpus file or its golden ``.flow`` changes::

    .venv/bin/python tests/migrate/tools/record_agentchat.py [/tmp/agentchat/bin/python [NAME ...]]

Writes ``NAME.agentchat.json`` next to each ``tests/migrate/corpus/agentchat_*.json`` and
``agentchat_*.py`` (a Python team is built by running the file with ``asyncio.run`` stubbed
out, then dumped with ``dump_component()``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from flowc.dsl import nodes as n
from flowc.dsl.parser import parse_source
from flowc.source import SourceFile

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "corpus"


def scenario_turns(flow_path: Path) -> list[dict[str, object]]:
    flow, diags = parse_source(SourceFile(str(flow_path), flow_path.read_text(encoding="utf-8")))
    assert not diags, diags
    out = []
    for sc in flow.of_type(n.Scenario):
        turns: list[dict[str, object]] = []
        for t in sc.items:
            if isinstance(t, n.SayTurn):
                turns.append({"speaker": t.speaker.value, "text": t.text.value})
            elif isinstance(t, n.CallTurn):
                turns.append(
                    {
                        "speaker": t.speaker.value,
                        "tool": t.tool.value,
                        "text": t.text.value if t.text else "",
                    }
                )
        ends = any(isinstance(t, n.ExpectTerminate) for t in sc.items)
        out.append({"title": sc.title.value, "turns": turns, "ends": ends})
    return out


def main() -> None:
    python = sys.argv[1] if len(sys.argv) > 1 else "/tmp/agentchat/bin/python"
    only = set(sys.argv[2:])  # with names, only those corpus inputs are recorded
    for js in sorted([*CORPUS.glob("agentchat_*.json"), *CORPUS.glob("agentchat_*.py")]):
        if only and js.name not in only:
            continue
        if js.name.endswith(".agentchat.json") or js.name.endswith(".expected.json"):
            continue
        golden = js.with_suffix(".flow")
        if not golden.exists():
            continue
        scenarios = scenario_turns(golden)
        if not scenarios:
            continue
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"file": str(js), "scenarios": scenarios}, f)
        done = subprocess.run(
            [python, str(HERE / "agentchat_runner.py"), f.name],
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
        js.with_suffix(".agentchat.json").write_text(
            json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
        print(f"recorded {js.name}: {len(result)} scenario(s)")


if __name__ == "__main__":
    main()
