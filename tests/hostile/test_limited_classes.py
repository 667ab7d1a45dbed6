"""The two classes of issue 11 whose tests ran without resource limits, now run under them.

- Point 7 (character-level fuzzing): a batch of seeded mutants probed in a child process
  with capped memory and CPU, so a mutant that hangs or explodes ends the test with a
  clear failure instead of hanging the suite (the in-process campaign is in
  ``test_fuzz.py``).
- Point 8 (Mermaid directives): ``flowc render -f mermaid`` of names and reasons holding
  ``%%{init: ...}%%``: every ``%``, ``{``, ``}`` and ``'`` leaves as an entity code, so
  no directive reaches the reader's browser (before: the text was written as it was and
  Mermaid applied it; the real-browser check is in ``tests/render/test_browser.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.hostile.limits import run_limited

ROOT = Path(__file__).resolve().parents[2]
LIMITS = {"memory_mib": 512, "cpu_seconds": 60, "wall_seconds": 180.0, "output_mib": 8}

_CAMPAIGN = """
import sys
from tests.hostile.fuzz import campaign
problems = list(campaign(int(sys.argv[1]), int(sys.argv[2])))
for name, p in problems[:5]:
    print(f"[{p.kind}] from {name}: {p.detail}")
print(f"{len(problems)} problems")
"""


def test_fuzz_batch_under_limits() -> None:
    result = run_limited(["60", "23"], cwd=ROOT, python_code=_CAMPAIGN, **LIMITS)
    out = result.stdout + result.stderr
    assert not result.timed_out, f"timed out after {result.seconds:.0f}s"
    assert result.returncode == 0, out[-3000:]
    assert out.strip().endswith("0 problems"), out[-3000:]


def test_mermaid_directives_never_leave_as_text(tmp_path: Path) -> None:
    flow = ROOT / "tests" / "cases" / "render" / "directive.flow"
    result = run_limited(["render", "-f", "mermaid", str(flow)], cwd=tmp_path, **LIMITS)
    out = result.stdout
    assert not result.timed_out and not result.traceback, result.stderr[-3000:]
    assert result.returncode == 0, result.stderr[-3000:]
    body = out.split("---", 2)[-1]  # the title is its own quoted string
    assert "%%" not in body and "init:" in body
    labels = re.findall(r'"(.*?)"', body)
    assert labels and not [label for label in labels if re.search(r"[%{}']", label)], labels
    assert "#37;#37;#123;init: #123;" in body
    title = out.split("---", 2)[1]
    assert "%%{" not in title and "\\u0025\\u0025{init" in title
