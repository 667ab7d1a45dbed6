"""`flowc lsp` with bugs put in (run as ``python -m tests.lsp.faulty_server``): the check
of a document named ``crash.flow`` raises, and so does every hover on a name;
everything else is the real server."""

from __future__ import annotations

import sys
from typing import Any

import flowc.lsp.core as core
from flowc.cli import run
from flowc.lsp.index import Index

real_check = core.check_compiled


def check_compiled(*args: Any, **kwargs: Any) -> Any:
    if str(kwargs.get("filename", "")).endswith("crash.flow"):
        raise RuntimeError("injected fault in the check")
    return real_check(*args, **kwargs)


def hover(self: Index, *args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("injected fault in hover")


core.check_compiled = check_compiled  # type: ignore[assignment]
Index.hover = hover  # type: ignore[method-assign]
sys.argv = ["flowc", "lsp"]
run()
