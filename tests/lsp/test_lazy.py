"""pygls is the `flowc lsp` command's own cost: no other command imports it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FLOW = "speaker user: human\nspeaker bot\nwhen from user then bot\n"


def test_other_commands_do_not_import_pygls(tmp_path: Path) -> None:
    """Only `flowc lsp` pays for pygls; `--help` lists `lsp` without importing it."""
    flow = tmp_path / "a.flow"
    flow.write_text(FLOW, encoding="utf-8")
    probe = (
        "import sys, contextlib, io\n"
        "from flowc.cli import main\n"
        "for argv in (['check', sys.argv[1]], ['fmt', '--check', sys.argv[1]], ['--help']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
        "        main(argv)\n"
        "    if argv == ['--help']:\n"
        "        assert ' lsp ' in out.getvalue(), out.getvalue()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(flow)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
