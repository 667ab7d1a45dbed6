"""Record what the real classic package does for each classic corpus file's scenarios.

Run by hand when a classic corpus file or its golden ``.flow`` changes::

    python3 -m venv /tmp/classic && /tmp/classic/bin/pip install 'ag2[openai]==0.9.10'
    .venv/bin/python tests/migrate/tools/record_classic.py [/tmp/classic/bin/python [NAME.py ...]]

With names, only those corpus inputs are recorded.

For every ``tests/migrate/corpus/*.py`` (and ``studio_*.json``, run as the classic code
AutoGen Studio 0.1 builds from it) whose golden ``.flow`` has scenarios, it runs the
scenario's texts through classic (``classic_runner.py``) and writes ``NAME.classic.json``.
``tests/migrate/test_migrate.py`` then checks each scenario against that record, so the
suite itself never needs the classic package.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from flowc.diagnostics import Diagnostic
from flowc.dsl import nodes as n
from flowc.dsl.parser import parse_source
from flowc.migrate.studio import lower_studio
from flowc.source import SourceFile

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "corpus"
RECORDS = (".classic.json", ".agentchat.json", ".expected.json")


def scenario_turns(flow_path: Path) -> list[dict[str, object]]:
    flow, diags = parse_source(SourceFile(str(flow_path), flow_path.read_text(encoding="utf-8")))
    assert not diags, diags
    out = []
    for sc in flow.of_type(n.Scenario):
        turns = [[t.speaker.value, t.text.value] for t in sc.items if isinstance(t, n.SayTurn)]
        out.append({"title": sc.title.value, "turns": turns})
    return out


def main() -> None:
    python = sys.argv[1] if len(sys.argv) > 1 else "/tmp/classic/bin/python"
    only = set(sys.argv[2:])
    inputs = [
        p
        for p in [*CORPUS.glob("*.py"), *CORPUS.glob("studio_*.json")]
        if not only or p.name in only
    ]
    for py in sorted(p for p in inputs if not p.name.endswith(RECORDS)):
        if py.name.startswith("agentchat_"):
            continue  # Microsoft AgentChat: record_agentchat.py
        golden = py.with_suffix(".flow")
        if not golden.exists():
            continue
        scenarios = scenario_turns(golden)
        if not scenarios:
            continue
        script = py.resolve()
        if py.suffix == ".json":
            # AutoGen Studio 0.1: run the classic construction its WorkflowManager builds
            # (a name past the bound is renamed in that Python: it would not be the workflow)
            refused: list[Diagnostic] = []
            text, _ = lower_studio(json.loads(py.read_text(encoding="utf-8")), py.name, refused)
            if refused:
                sys.exit(f"{py.name}: {refused[0].json_path}: {refused[0].message}")
            script = Path(tempfile.mkdtemp()) / f"{py.stem}.py"
            script.write_text(text, encoding="utf-8")
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"file": str(script), "scenarios": scenarios}, f)
        done = subprocess.run(
            [python, str(HERE / "classic_runner.py"), f.name],
            capture_output=True,
            text=True,
            check=True,
            cwd=str(CORPUS),
        )
        line = next(x for x in done.stdout.splitlines() if x.startswith("@@RESULT@@"))
        result = json.loads(line[len("@@RESULT@@") :])
        py.with_suffix(".classic.json").write_text(
            json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
        print(f"recorded {py.name}: {len(result)} scenario(s)")


if __name__ == "__main__":
    main()
