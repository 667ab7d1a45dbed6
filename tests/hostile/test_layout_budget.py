"""Graphviz has a budget: under resource limits, a flow whose layout runs past the time
budget ends with a clean error within it (``dot`` killed, none left running), one past the
size budget is refused before ``dot`` starts, and names past Graphviz's 16 KiB limit draw.
Each error names the budget's flag and the text formats, which need no layout."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from flowc.compiler.render.image import MAX_LAYOUT_SIZE
from tests.hostile.limits import run_limited

pytestmark = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz `dot` is not installed (scripts/deps/graphviz.sh)"
)


def pipeline(count: int) -> str:
    """``count`` speakers in a row, each hands to the next, and a rule any of them may end
    the run by: thousands of edges into one ending (sfdp's layout, seconds to minutes)."""
    names = [f"s{i}" for i in range(count)]
    lines = ["speaker user: human", *(f"speaker {n}" for n in names), "start user"]
    lines += [
        'when context.done == true then terminate "done" priority -1',
        f"when from user then {names[0]}",
    ]
    lines += [f"when from {a} then {b}" for a, b in itertools.pairwise(names)]
    lines.append("speaker closer { tool finish sets done = true }")
    return "\n".join(lines) + "\n"


def running_with(mark: str) -> list[int]:
    """The processes whose environment holds ``mark`` (the children a command left)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if mark.encode() in (proc / "environ").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_a_layout_past_its_time_is_stopped_with_a_clean_error(tmp_path: Path) -> None:
    flow = tmp_path / "pipeline.flow"
    flow.write_text(pipeline(3000), encoding="utf-8")  # ~9,000 nodes and edges: 5 s and more
    mark = f"flowc-layout-{uuid.uuid4()}"
    r = run_limited(
        ["render", str(flow), "-f", "svg", "-o", str(tmp_path / "out.svg"),
         "--layout-timeout", "0.5"],
        memory_mib=1024, cpu_seconds=30, wall_seconds=60, env={"FLOWC_TEST_MARK": mark},
    )  # fmt: skip
    assert not r.timed_out and not r.traceback, r.stderr
    assert r.returncode == 2
    assert r.stderr == (
        "flowc render: error: -f svg: Graphviz's dot did not lay out the diagram within 0.5 "
        "seconds, and was stopped: give it more time with --layout-timeout SECONDS; "
        f"`flowc render {flow} -f dot` (or `-f mermaid`) writes the graph as text, which "
        "needs no layout\n"
    )
    assert r.seconds < 15  # the budget, the start and the compile: not dot's minutes
    assert running_with(mark) == []  # dot was killed and waited for
    assert not (tmp_path / "out.svg").exists()
    # the fallback it names works, under the same limits
    text = run_limited(["render", str(flow), "-f", "dot"], memory_mib=1024, wall_seconds=60)
    assert text.returncode == 0 and text.stdout.startswith('digraph "flow"'), text.stderr


def test_a_diagram_past_the_size_budget_is_refused_at_once(tmp_path: Path) -> None:
    flow = tmp_path / "wide.flow"
    flow.write_text(pipeline(MAX_LAYOUT_SIZE // 2), encoding="utf-8")
    r = run_limited(
        ["render", str(flow), "--check", "-f", "html", "-o", str(tmp_path / "out.html")],
        memory_mib=1024, cpu_seconds=30, wall_seconds=60,
    )  # fmt: skip
    assert not r.timed_out and not r.traceback, r.stderr
    assert r.returncode == 2
    assert "nodes and edges, more than the 10,000 Graphviz's dot is given to lay out: raise " in (
        r.stderr
    )
    assert "--max-layout-size N" in r.stderr and "-f dot` (or `-f mermaid`)" in r.stderr
    assert r.seconds < 15  # before the checker and before dot


@pytest.mark.parametrize(
    "text",
    [
        f"speaker {'n' * 20_000}\nspeaker b\nwhen from {'n' * 20_000} then b\n",
        f'speaker a\nspeaker b\nwhen from a then terminate "{"r" * 20_000}"\n',
        f'flow f "{"d" * 20_000}"\nspeaker a\nspeaker b\nwhen from a then b\n',
        "speaker a {\n" + "".join(f"  tool t{i} sets k{i} = {i}\n" for i in range(2000)) + "}\n"
        "speaker b\nwhen from a then b\n",
    ],
    ids=["name", "reason", "description", "tools"],
)
def test_strings_past_graphvizs_limit_draw(text: str, tmp_path: Path) -> None:
    flow = tmp_path / "long.flow"
    flow.write_text(text, encoding="utf-8")
    for fmt in ("svg", "html"):
        out = tmp_path / f"long.{fmt}"
        r = run_limited(
            ["render", str(flow), "--check", "-f", fmt, "-o", str(out)],
            memory_mib=1024, cpu_seconds=30, wall_seconds=60,
        )  # fmt: skip
        assert (r.returncode, r.traceback) == (0, False), r.stderr
        assert "error" not in r.stderr  # the checker's findings only (--check)
        assert "xlink:title=" in out.read_text(encoding="utf-8")  # the full text, as a tooltip


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def answers(stdout: str) -> dict[Any, Any]:
    """The server's answers to requests, by id."""
    out = {}
    for match in re.finditer(r"Content-Length: (\d+)\r\n(?:[^\r\n]+\r\n)*\r\n", stdout):
        message = json.loads(stdout[match.end() : match.end() + int(match.group(1))])
        if "id" in message and "method" not in message:
            out[message["id"]] = message
    return out


def test_the_language_server_stops_a_layout_at_shutdown(tmp_path: Path) -> None:
    """An editor that shuts the server down while a diagram is laid out: the diagram is
    answered (an error, after a grace), then the shutdown; dot is killed, and the server
    exits at once, whatever the budget."""
    pid = tmp_path / "pid"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dot").write_text(
        f"#!{sys.executable}\nimport os, time\n"
        f"open({str(pid)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n",
        encoding="utf-8",
    )
    (bin_dir / "dot").chmod(0o755)
    flow = tmp_path / "a.flow"
    flow.write_text("speakers a, b\nwhen from a then b\n", encoding="utf-8")
    uri = flow.as_uri()
    messages = [
        {"id": 0, "method": "initialize",
         "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}},
        {"method": "initialized", "params": {}},
        {"method": "textDocument/didOpen",
         "params": {"textDocument": {"uri": uri, "languageId": "flow", "version": 1,
                                     "text": flow.read_text()}}},
        {"id": 1, "method": "workspace/executeCommand",
         "params": {"command": "flowc.diagram", "arguments": [uri]}},
        {"id": 2, "method": "shutdown", "params": None},
        {"method": "exit", "params": None},
    ]  # fmt: skip
    r = run_limited(
        ["lsp", "--layout-timeout", "300"],
        stdin=b"".join(frame({"jsonrpc": "2.0", **m}) for m in messages),
        env={"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"},
        memory_mib=1024, cpu_seconds=30, wall_seconds=60,
    )  # fmt: skip
    assert not r.timed_out and not r.traceback, r.stderr
    assert r.returncode == 0, r.stderr
    got = answers(r.stdout)
    assert got[1]["error"]["code"] == -32803
    assert got[1]["error"]["message"] == ("the diagram was not drawn: the server is shutting down")
    assert got[2]["result"] is None and "error" not in got[2]
    assert r.stdout.index('"id": 1') < r.stdout.index('"id": 2')  # the diagram first
    assert r.seconds < 20  # the grace, not the budget
    pid_of_dot = int(pid.read_text())
    assert not Path(f"/proc/{pid_of_dot}").exists()  # killed and waited for
