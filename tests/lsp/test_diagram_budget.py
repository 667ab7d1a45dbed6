"""`flowc lsp`'s diagram is drawn off the thread that answers requests, within the layout's
budget (`flowc lsp --layout-timeout`): the server answers a hover while Graphviz works, a
layout past the budget is an error answer that says so (its `dot` killed and waited for),
and a name past Graphviz's 16 KiB limit draws.

The server's `dot` is a stand-in that waits as long as the test says, then runs the real
`dot` (so the slow layout is the same every time, and costs no CPU)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.client import TRAP, open_doc
from tests.lsp.conftest import start

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed"),
]

#: the stand-in's folder: `dot`, the seconds it waits (`wait`) and its process id (`pid`)
FAKE = Path(tempfile.mkdtemp(prefix="flowc-lsp-dot-"))
WAIT, PID = FAKE / "wait", FAKE / "pid"
BUDGET = 4
REAL_DOT = shutil.which("dot") or "dot"
(FAKE / "dot").write_text(
    f"#!{sys.executable}\n"
    "import os, sys, time\n"
    f"open({str(PID)!r}, 'w').write(str(os.getpid()))\n"
    f"time.sleep(float(open({str(WAIT)!r}).read()))\n"
    f"os.execv({REAL_DOT!r}, [{REAL_DOT!r}, *sys.argv[1:]])\n",
    encoding="utf-8",
)
(FAKE / "dot").chmod(0o755)
ENV = {**os.environ, "PATH": f"{FAKE}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[
            sys.executable, "-m", "flowc", "lsp", "--layout-timeout", str(BUDGET)
        ],
        server_env=ENV,
    ),
    scope="module",
)  # fmt: skip
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    await start(lsp_client, request)
    yield
    await lsp_client.shutdown_session()


def diagram(client: LanguageClient, uri: str) -> asyncio.Future[object]:
    return asyncio.ensure_future(
        client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="flowc.diagram", arguments=[uri])
        )
    )


async def hover_time(client: LanguageClient, uri: str) -> float:
    """The seconds a hover on `drafter` (line 2) takes to be answered."""
    start = time.monotonic()
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(1, 10))
    )
    assert hover is not None and "drafter" in hover.contents.value  # type: ignore[union-attr]
    return time.monotonic() - start


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a zombie, never waited for, does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_hover_is_answered_while_a_diagram_is_laid_out(client: LanguageClient) -> None:
    WAIT.write_text("2.5")
    PID.unlink(missing_ok=True)
    uri = await open_doc(client, TRAP, "slow.flow")
    drawing = diagram(client, uri)
    while not PID.exists():  # Graphviz has started
        await asyncio.sleep(0.02)
    for _ in range(3):
        assert await hover_time(client, uri) < 1.0
        assert not drawing.done()
    svg = await asyncio.wait_for(drawing, 60)
    assert isinstance(svg, dict) and svg["findings"] == 1 and "<svg" in svg["svg"]


async def test_a_layout_past_the_budget_is_an_error_answer(client: LanguageClient) -> None:
    WAIT.write_text("600")
    PID.unlink(missing_ok=True)
    uri = await open_doc(client, TRAP, "stuck.flow")
    start = time.monotonic()
    drawing = diagram(client, uri)
    while not PID.exists():
        await asyncio.sleep(0.02)
    assert await hover_time(client, uri) < 1.0
    with pytest.raises(Exception) as refused:
        await asyncio.wait_for(drawing, 60)
    assert BUDGET <= time.monotonic() - start < BUDGET + 20
    assert getattr(refused.value, "code", None) == -32803  # RequestFailed, not -32603
    message = str(refused.value)
    assert (
        f"the diagram was not drawn: Graphviz's dot did not lay out the diagram within {BUDGET} "
        "seconds, and was stopped: give it more time with flowc lsp --layout-timeout SECONDS; "
        f"`flowc render {client.root / 'stuck.flow'} -f dot` (or `-f mermaid`) writes the "  # type: ignore[attr-defined]
        "graph as text, which needs no layout"
    ) in message
    assert "Traceback" not in message
    assert not alive(int(PID.read_text()))  # killed and waited for


async def test_a_20_kb_name_is_drawn(client: LanguageClient) -> None:
    WAIT.write_text("0")
    name = "n" * 20_000
    uri = await open_doc(client, f"speaker {name}\nspeaker b\nwhen from {name} then b\n")
    svg = await asyncio.wait_for(diagram(client, uri), 60)
    assert isinstance(svg, dict)
    assert f'xlink:title="{name}"' in svg["svg"]  # the full name as the tooltip
