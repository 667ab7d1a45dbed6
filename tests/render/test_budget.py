"""Graphviz within bounds: names and strings past its limits are shortened in labels (the
full text in tooltips), ``dot`` runs with a time budget and is killed past it, a diagram
past the size budget is refused before ``dot`` starts, and any failure of ``dot`` is a
clean error that names the text formats, which need no layout."""

from __future__ import annotations

import os
import shutil
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import flowc
from flowc.cli import main
from flowc.compiler.render.dot import MAX_LABEL_BYTES, MAX_LABEL_TEXT, render_dot
from flowc.compiler.render.image import (
    DotFailed,
    LayoutStopped,
    LayoutTimeout,
    LayoutTooLarge,
    render_image,
    render_svg,
)
from flowc.compiler.render.options import RenderOptions
from flowc.compiler.render.rendering import Rendering
from tests.render.helpers import diagram_of

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"
#: Graphviz refuses a quoted string or an HTML label longer than this
GRAPHVIZ_LIMIT = 16384

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz `dot` is not installed (scripts/deps/graphviz.sh)"
)


def groups(svg: str) -> dict[str, ET.Element]:
    return {g.get("id") or "": g for g in ET.fromstring(svg).iter(f"{SVG}g")}


def texts(group: ET.Element) -> list[str]:
    return [t.text or "" for t in group.iter(f"{SVG}text")]


def tooltip(group: ET.Element) -> str | None:
    for a in group.iter(f"{SVG}a"):
        return a.get(f"{XLINK}title")
    return None


def fake_dot(folder: Path, body: str) -> Path:
    """A `dot` program on ``folder`` (put first on PATH): Python running ``body``."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "dot"
    program.write_text(f"#!{sys.executable}\nimport os, sys, time\n{body}\n", encoding="utf-8")
    program.chmod(0o755)
    return program


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a zombie, never waited for, does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ── long names and strings ────────────────────────────────────────────────────


@needs_dot
def test_a_20_kb_name_is_drawn_with_a_shortened_label_and_its_tooltip() -> None:
    name = "n" * 20_000
    reason = 'why "quoted" \\ é ' * 1500  # quotes, a backslash, non-ASCII: ~27,000 characters
    text = (
        f'flow long "{"a description " * 2000}"\n'
        f"speaker {name}\nspeaker b\n"
        f"when from {name} then b\n"
        f"when from b then terminate {flowc_json(reason)}\n"
    )
    _, d = diagram_of(text)
    dot = render_dot(d)
    assert max(len(line.encode()) for line in dot.splitlines()) > GRAPHVIZ_LIMIT  # the tooltips
    svg = render_svg(dot)  # the real dot draws it (it refused the names before)
    by_id = groups(svg)
    speaker = d.speaker_node(name)
    shown = texts(by_id[speaker.id])
    assert len(shown[0]) == MAX_LABEL_TEXT and "..." in shown[0]
    assert shown[0].startswith("nnn") and shown[0].endswith("nnn")
    assert tooltip(by_id[speaker.id]) == name  # the full name, where the label is cut
    ending = next(n for n in d.nodes if n.title.startswith("terminate") and "quoted" in n.title)
    label = texts(by_id[ending.id])[0]
    assert len(label) == MAX_LABEL_TEXT and label.startswith('terminate "why \\"quoted\\" \\\\ é')
    assert tooltip(by_id[ending.id]) == ending.title == f"terminate {flowc_json(reason)}"
    # the title's long description too, in the graph's tooltip
    assert tooltip(by_id["graph0"]) == "long\n" + "a description " * 2000
    # a short name keeps its label as it was, without a tooltip
    b = d.speaker_node("b")
    assert texts(by_id[b.id]) == ["b"] and tooltip(by_id[b.id]) is None
    # each edge names the long nodes by bounded names (never the 20 KB ones again)
    edges = [line for line in dot.splitlines() if " -> " in line]
    assert len(edges) == 3 and all(len(line) < 3 * MAX_LABEL_TEXT for line in edges)


def flowc_json(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)


@needs_dot
def test_a_speaker_with_thousands_of_tools_shows_what_fits_and_counts_the_rest() -> None:
    tools = "\n".join(f"  tool t{i} sets k{i} = {i}" for i in range(3000))
    text = f"speaker a {{\n{tools}\n}}\nspeaker b\nwhen from a then b\n"
    _, d = diagram_of(text)
    a = d.speaker_node("a")
    svg = render_svg(render_dot(d))
    shown = texts(groups(svg)[a.id])
    assert shown[0] == "a" and shown[1] == "tool t0: sets k0 = 0"
    assert shown[-1].startswith("... and ") and shown[-1].endswith(" more lines (see the tooltip)")
    hidden = int(shown[-1].split()[2])
    assert len(shown) - 2 + hidden == 3000  # every tool shown or counted
    assert sum(len(x.encode()) for x in shown) <= MAX_LABEL_BYTES
    assert tooltip(groups(svg)[a.id]) == "\n".join([a.title, *a.details])


def test_long_keys_stay_distinct() -> None:
    """Two speakers whose long names share their start and end get distinct DOT names."""
    first, second = "x" * 800 + "a" + "x" * 800, "x" * 800 + "b" + "x" * 800
    _, d = diagram_of(f"speakers {first}, {second}\nwhen from {first} then {second}\n")
    names = [
        line.split(" [id=")[0].strip() for line in render_dot(d).splitlines() if "[id=" in line
    ]
    nodes = [x for x in names if "->" not in x]
    assert len(nodes) == len(set(nodes)) == len(d.nodes)
    assert all(len(x) < 2 * MAX_LABEL_TEXT for x in nodes)


# ── the time budget and dot's failures ────────────────────────────────────────


def test_dot_past_its_time_is_killed_and_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "pid"
    fake_dot(
        tmp_path / "bin", f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)"
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    start = time.monotonic()
    with pytest.raises(LayoutTimeout, match=r"within 0.5 seconds, and was stopped"):
        render_image("digraph { a -> b }", "svg", timeout=0.5)
    assert time.monotonic() - start < 10
    assert not alive(int(pid_file.read_text()))  # killed, and reaped (no zombie)


def running(pid: int) -> bool:
    """Whether process ``pid`` runs: it exists and is no zombie (an orphan killed here
    waits as one for the container's first process, which may never reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal")
def test_a_flowc_killed_outright_leaves_no_dot_running(tmp_path: Path) -> None:
    """A flowc killed with SIGKILL (the out-of-memory killer, a CI timeout) cannot stop its
    `dot`: the kernel does (before, a `dot` in a long layout ran on to its end)."""
    import signal
    import subprocess

    pid_file = tmp_path / "pid"
    fake_dot(
        tmp_path / "bin", f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)"
    )
    flow = tmp_path / "a.flow"
    flow.write_text("speaker a\nspeaker b\nwhen from a then b\n", encoding="utf-8")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, "-m", "flowc", "render", str(flow), "-o", str(tmp_path / "a.svg")]
    flowc = subprocess.Popen([*command, "--layout-timeout", "300"], env=env)
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert flowc.poll() is None and time.monotonic() < deadline, "dot never started"
            time.sleep(0.05)
        dot = int(pid_file.read_text())
        assert running(dot)
        flowc.send_signal(signal.SIGKILL)
        flowc.wait()
        deadline = time.monotonic() + 10
        while running(dot):
            assert time.monotonic() < deadline, "dot runs on after its flowc was killed"
            time.sleep(0.05)
    finally:
        if flowc.poll() is None:
            flowc.kill()
            flowc.wait()
        if pid_file.exists() and pid_file.read_text() and running(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("sys.stderr.write('Error: something went wrong\\nmore\\n'); sys.exit(1)",
         "Graphviz's dot failed (exit 1): Error: something went wrong"),
        ("os.kill(os.getpid(), 9)", "Graphviz's dot was killed by signal 9: it said nothing"),
    ],
)  # fmt: skip
def test_a_failing_dot_is_a_clean_error(
    body: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_dot(tmp_path / "bin", body)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(DotFailed) as failed:
        render_image("digraph { a -> b }", "svg")
    assert str(failed.value) == message
    flow = tmp_path / "a.flow"
    flow.write_text("speaker a\nspeaker b\nwhen from a then b\n", encoding="utf-8")
    assert main(["render", str(flow), "-o", str(tmp_path / "a.svg")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"flowc render: error: -f svg: {message}; `flowc render ")
    assert "-f dot` (or `-f mermaid`) writes the graph as text" in err
    assert "Traceback" not in err and "internal error" not in err


def test_the_size_budget_refuses_before_dot_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = tmp_path / "ran"
    fake_dot(tmp_path / "bin", f"open({str(ran)!r}, 'w').close()")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    names = [f"s{i}" for i in range(30)]
    flow = tmp_path / "wide.flow"
    flow.write_text(
        "speakers " + ", ".join(names) + "\n" + "".join(f"when from {a} then {a}\n" for a in names),
        encoding="utf-8",
    )
    r = flowc.render(flow, max_layout_size=40)
    assert r.layout_size > 40
    with pytest.raises(
        LayoutTooLarge, match=r"the diagram has \d+ nodes and edges, more than the 40"
    ):
        r.svg()
    assert r._repr_svg_() is None  # Jupyter shows the Mermaid text instead
    assert "image/svg+xml" not in r._repr_mimebundle_()
    code = main(["render", str(flow), "--check", "-f", "html", "--max-layout-size", "40"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        f"flowc render: error: -f html: the diagram has {r.layout_size} nodes and edges, more "
        "than the 40 Graphviz's dot is given to lay out: raise the bound with "
        "--max-layout-size N (its layout may then take minutes: --layout-timeout SECONDS); "
        f"`flowc render {flow} -f dot` (or `-f mermaid`) writes the graph as text, which "
        "needs no layout\n"
    )
    assert not ran.exists()
    # the text formats need no layout, and no budget
    assert main(["render", str(flow), "-f", "dot", "--max-layout-size", "40"]) == 0
    assert capsys.readouterr().out.startswith("digraph")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--layout-timeout", "0"], "--layout-timeout must be a positive number of seconds"),
        (["--layout-timeout", "nan"], "--layout-timeout must be a positive number of seconds"),
        (["--max-layout-size", "0"], "--max-layout-size must be >= 1"),
    ],
)
def test_the_budget_flags_are_checked(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "a.flow"
    flow.write_text("speakers a, b\n", encoding="utf-8")
    assert main(["render", str(flow), *args]) == 2
    assert capsys.readouterr().err == f"flowc render: error: {message}\n"
    with pytest.raises(ValueError, match="layout_timeout must be positive"):
        RenderOptions(layout_timeout=0)


def test_diff_render_keeps_the_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.flow", tmp_path / "new.flow"
    old.write_text("speakers a, b\nwhen from a then b\n", encoding="utf-8")
    new.write_text("speakers a, b\nwhen from a then b\nwhen from b then a\n", encoding="utf-8")
    code = main(["diff", str(old), str(new), "--render", str(tmp_path / "d.svg"),
                 "--max-layout-size", "3"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert "flowc diff: error: --render: the diagram has " in err
    assert f"`flowc render {new} -f dot` (or `-f mermaid`)" in err
    assert not (tmp_path / "d.svg").exists()


def test_the_rendering_passes_its_time_budget_to_dot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_dot(tmp_path / "bin", "time.sleep(60)")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    _, d = diagram_of("speakers a, b\nwhen from a then b\n")
    with pytest.raises(LayoutTimeout, match=r"within 0\.3 seconds"):
        Rendering(d, RenderOptions(layout_timeout=0.3)).html()


def test_a_layout_can_be_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the language server does at shutdown: dot is killed and waited for at once."""
    import threading

    pid_file = tmp_path / "pid"
    fake_dot(
        tmp_path / "bin", f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)"
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    start = time.monotonic()
    with pytest.raises(LayoutStopped, match="Graphviz's dot was stopped before it was done"):
        render_image("digraph { a -> b }", "svg", timeout=60, stop=stop)
    assert time.monotonic() - start < 10
    assert not alive(int(pid_file.read_text()))
