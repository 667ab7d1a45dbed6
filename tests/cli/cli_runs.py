"""What the command-line tests of runs share: ``flowc`` run as a user runs it (a fresh
process, in a folder of the test's), and a review loop whose property a run breaks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: a drafter and a reviewer; a run that drafts twice breaks ``one_draft``
REVIEW_FLOW = """speaker user: human
speaker drafter
speaker reviewer {
  tool approve sets done = true
}
start user
max_turns 8
context done = false
when context.done == true then terminate "approved"
when from user then drafter
when from drafter then reviewer
when from reviewer then drafter
property one_draft: from drafter at most 1 time
"""


def flowc(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``flowc ARGS`` in ``cwd``, with no terminal on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "flowc", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
