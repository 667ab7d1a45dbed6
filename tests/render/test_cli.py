"""``flowc render`` on the command line: formats, output files, errors, exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import flowc.compiler.render.rendering as rendering
from flowc.cli import main

CASES = Path(__file__).resolve().parents[1] / "cases" / "render"
FLOW = CASES / "targets.flow"

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz `dot` is not installed (scripts/deps/graphviz.sh)"
)


def run(args: list[str], capsysbinary: pytest.CaptureFixture[bytes]) -> tuple[int, bytes, str]:
    code = main(["render", *args])
    out, err = capsysbinary.readouterr()
    return code, out, err.decode()


@needs_dot
@pytest.mark.parametrize(
    ("fmt", "magic"),
    [("svg", b"<?xml"), ("png", b"\x89PNG"), ("pdf", b"%PDF"), ("html", b"<!DOCTYPE html>")],
)
def test_image_formats_to_a_file(
    fmt: str, magic: bytes, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    out = tmp_path / f"flow.{fmt}"
    code, stdout, err = run([str(FLOW), "-f", fmt, "-o", str(out)], capsysbinary)
    assert (code, stdout, err) == (0, b"", "")
    assert out.read_bytes().startswith(magic)


@needs_dot
def test_svg_is_the_default_on_stdout(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, _ = run([str(FLOW)], capsysbinary)
    assert code == 0
    assert out.startswith(b"<?xml") and b"<svg" in out and b'id="e1"' in out


@needs_dot
@pytest.mark.parametrize(
    ("suffix", "magic"),
    [(".png", b"\x89PNG"), (".mmd", b"flowchart"), (".dot", b"digraph"), (".html", b"<!DOCTYPE")],
)
def test_format_from_the_output_suffix(
    suffix: str, magic: bytes, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    out = tmp_path / f"flow{suffix}"
    code, _, _ = run([str(FLOW), "-o", str(out)], capsysbinary)
    assert code == 0
    assert magic in out.read_bytes()[:200]


def test_direction(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, _ = run([str(FLOW), "-f", "dot", "--direction", "TB"], capsysbinary)
    assert code == 0 and b"rankdir=TB" in out
    code, out, _ = run([str(FLOW), "-f", "mermaid", "--direction", "TB"], capsysbinary)
    assert code == 0 and b"\nflowchart TB\n" in out


def test_json_graph_input(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["compile", str(FLOW.with_name("tools.flow")), "-o", str(tmp_path / "k.json")]) == 0
    capsysbinary.readouterr()
    code, out, err = run([str(tmp_path / "k.json"), "-f", "dot"], capsysbinary)
    assert code == 0, err
    text = out.decode()
    assert '"triage" -> "user"' in text  # a tool rule, from every participant in a JSON graph
    assert '"tech" -> "user"' in text


def test_input_errors_exit_1(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    bad = tmp_path / "bad.flow"
    bad.write_text("speaker a\nspeaker b\nwhen from c then b\n")
    code, out, err = run([str(bad), "-f", "dot"], capsysbinary)
    assert code == 1 and out == b""
    assert "E101" in err
    broken = tmp_path / "bad.json"
    broken.write_text(json.dumps({"initial_speaker": 3}))
    code, _, err = run([str(broken), "-f", "dot"], capsysbinary)
    assert code == 1 and "E108" in err


def test_missing_file_exits_2(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, _, err = run(["nope.flow", "-f", "dot"], capsysbinary)
    assert code == 2 and "no such file" in err


@pytest.mark.parametrize("fmt", ["svg", "png", "pdf", "html"])
def test_without_dot_a_one_line_error_exit_2(
    fmt: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere
    code, out, err = run([str(FLOW), "-f", fmt], capsysbinary)
    assert code == 2 and out == b""
    assert err.count("\n") == 1
    assert "apt-get install graphviz" in err and "-f mermaid" in err


@pytest.mark.parametrize("fmt", ["dot", "mermaid"])
def test_text_formats_need_no_dot(
    fmt: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, _ = run([str(FLOW), "-f", fmt], capsysbinary)
    assert code == 0 and out


def test_check_without_the_checker_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    def unavailable(*_: object) -> tuple[()]:
        raise rendering.CheckerUnavailableError("the checker is not available in this build")

    monkeypatch.setattr(rendering, "run_checker", unavailable)
    code, out, err = run([str(FLOW), "-f", "dot", "--check"], capsysbinary)
    assert code == 2 and out == b""
    assert "checker is not available" in err and err.count("\n") == 1


def test_check_marks_what_the_checker_finds(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    from flowc.diagnostics import W203, Diagnostic

    def fake(
        flow: rendering.CompiledFlow, source: object, options: object = None
    ) -> tuple[Diagnostic, ...]:
        return (Diagnostic(W203, "rule 2 is dead", str(FLOW), flow.rules[1].span),)

    monkeypatch.setattr(rendering, "run_checker", fake)
    code, out, err = run([str(FLOW), "-f", "dot", "--check"], capsysbinary)
    assert code == 0
    assert "W203 rule 2 is dead" in err  # the findings are printed, concise
    text = out.decode()
    assert "cluster_legend" in text
    assert "<S>rule 2, line 11: from planner</S>" in text


@needs_dot
def test_check_with_the_real_checker_to_html(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    flow = tmp_path / "review.flow"
    flow.write_text(
        "speaker drafter\nspeaker reviewer { tool approve sets done = true }\nmax_turns 12\n"
        'when context.done == true then terminate "approved" priority 100\n'
        "when from drafter then reviewer\nwhen from reviewer then drafter\n"
    )
    out = tmp_path / "review.html"
    code, _, err = run([str(flow), "--check", "-o", str(out)], capsysbinary)
    assert code == 0
    assert "W204" in err
    page = out.read_text()
    assert 'data-code="W204"' in page and "<svg" in page and 'id="L4"' in page


def test_reads_stdin(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    import io
    import sys

    stdin = io.TextIOWrapper(io.BytesIO(FLOW.read_bytes()))
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = run(["-", "-f", "mermaid"], capsysbinary)
    assert code == 0
    assert out.decode() == (CASES / "targets.mmd").read_text()


def _render_to_a_terminal(args: list[str]) -> tuple[int, bytes, str]:
    """``flowc render ARGS`` in a process whose stdout is a terminal (a pty): its exit
    code, what reached the terminal and its stderr."""
    import os
    import subprocess
    import sys
    import tempfile

    master, slave = os.openpty()
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "flowc", "render", *args],
                stdout=slave,
                stderr=err,
                stdin=subprocess.DEVNULL,
            )
            os.close(slave)
            shown = b""
            while True:  # read as it comes, so a writer is never blocked on a full terminal
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the terminal's other side is closed
                    break
                if not chunk:
                    break
                shown += chunk
            code = proc.wait(timeout=120)
        finally:
            os.close(master)
        err.seek(0)
        return code, shown, err.read().decode()


@pytest.mark.parametrize("args", [["-f", "png"], ["-f", "pdf"], ["-f", "png", "-o", "-"]])
def test_binary_formats_are_refused_on_a_terminal(args: list[str]) -> None:
    code, shown, err = _render_to_a_terminal([str(FLOW), *args])
    fmt = args[1]
    assert (code, shown) == (2, b"")
    assert err == (
        f"flowc render: error: -f {fmt} is binary data, which a terminal cannot "
        f"show: give -o FILE, or redirect the output (flowc render ... -f {fmt} > "
        f"flow.{fmt})\n"
    )


def test_text_formats_still_go_to_a_terminal() -> None:
    code, shown, err = _render_to_a_terminal([str(FLOW), "-f", "mermaid"])
    assert (code, err) == (0, "")
    assert shown.replace(b"\r\n", b"\n") == (CASES / "targets.mmd").read_bytes()


@needs_dot
def test_binary_formats_go_to_a_pipe() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "flowc", "render", str(FLOW), "-f", "png"],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout.startswith(b"\x89PNG"), proc.stderr
