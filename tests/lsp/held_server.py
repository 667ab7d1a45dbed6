"""`flowc lsp` whose checks wait while a file exists, for tests that must act while a
check is known to be running (run as ``python -m tests.lsp.held_server``).

The file is named by ``FLOWC_TEST_HOLD``. A check that finds it there first creates
``<hold>.entered``, then waits until the file is removed; everything else is the real
server."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import flowc.lsp.core as core
from flowc.cli import run

hold = Path(os.environ["FLOWC_TEST_HOLD"])
real_check = core.check_compiled


def held_check(*args: Any, **kwargs: Any) -> Any:
    if hold.exists():
        hold.with_name(hold.name + ".entered").touch()
        while hold.exists():
            time.sleep(0.01)
    return real_check(*args, **kwargs)


core.check_compiled = held_check  # type: ignore[assignment]
sys.argv = ["flowc", "lsp"]
run()
