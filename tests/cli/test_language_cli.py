"""The language commands end to end: compile, fmt, decompile (exit codes and output)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import flowc
from flowc.cli import main

FLOW = """\
flow review
speaker user: human
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
"""


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def flow_file(tmp_path: Path) -> Path:
    path = tmp_path / "review.flow"
    path.write_text(FLOW, encoding="utf-8")
    return path


def test_compile_prints_canonical_knobs(
    flow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["compile", str(flow_file)], capsys)
    assert code == 0
    data = json.loads(out)
    assert out == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert data["context_vars"] == {"done": False}
    assert data["graph"]["initial_speaker"] == "user"
    assert data["graph"]["max_turns"] == 8
    assert data["graph"]["transitions"][0] == {
        "when": {"name": "context_equals", "args": {"key": "done", "value": True}},
        "then": {"name": "terminate", "args": {"reason": "approved"}},
        "priority": 0,
    }


def test_compile_graph_bind_and_output(
    flow_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_path = tmp_path / "g.json"
    code, out, _ = run(
        ["compile", str(flow_file), "--graph", "--bind", "drafter=agent-7f3a", "-o", str(out_path)],
        capsys,
    )
    assert code == 0 and out == ""
    graph = json.loads(out_path.read_text())
    assert "context_vars" not in graph
    assert graph["transitions"][1]["then"]["args"]["agent_id"] == "agent-7f3a"
    assert graph["transitions"][2]["when"]["args"]["agent_id"] == "agent-7f3a"


def test_compile_bad_bind_is_a_usage_error(
    flow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["compile", str(flow_file), "--bind", "nobody=x"], capsys)
    assert code == 2 and "nobody" in err
    code, _, err = run(["compile", str(flow_file), "--bind", "justaname"], capsys)
    assert code == 2 and "NAME=ID" in err
    # one speaker bound to two ids: refused, not the last one taken
    argv = ["compile", str(flow_file), "--bind", "drafter=x", "--bind", "drafter=y"]
    code, out, err = run(argv, capsys)
    assert code == 2 and "binds `drafter` twice: to 'x' and to 'y'" in err and not out
    # the same binding given twice is one binding
    code, _, _ = run([*argv[:-2], "--bind", "drafter=x"], capsys)
    assert code == 0


@pytest.mark.parametrize(
    "binds, words",
    [
        (
            ["drafter=reviewer"],
            "drafter=reviewer binds speaker drafter to `reviewer`, and speaker reviewer keeps "
            "`reviewer` as its id (each speaker needs one of its own: bind reviewer to another "
            "id too, or drafter to another)",
        ),
        (
            ["drafter=x", "reviewer=x"],
            "drafter=x and reviewer=x bind speakers drafter and reviewer to one agent id `x` "
            "(each speaker needs one of its own)",
        ),
    ],
)
def test_compile_bind_never_merges_two_speakers(
    binds: list[str], words: str, flow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A binding that gives two speakers one agent id would merge them in the graph (a
    rule from one fires for the other): a usage error naming the bindings, nothing
    printed. The same check refuses them in flowc.compile_flow and flowc.render."""
    args = ["compile", str(flow_file), "--graph"]
    for bind in binds:
        args += ["--bind", bind]
    code, out, err = run(args, capsys)
    assert (code, out, err) == (2, "", f"flowc compile: error: --bind: {words}\n")
    bindings = dict(b.split("=") for b in binds)
    with pytest.raises(ValueError) as compiled:
        flowc.compile_flow(FLOW, bindings=bindings)
    with pytest.raises(ValueError) as rendered:
        flowc.render(FLOW, bindings=bindings)
    assert str(compiled.value) == str(rendered.value) == f"bindings: {words}"


@pytest.mark.parametrize(
    "binds",
    [
        ["drafter=reviewer", "reviewer=drafter"],  # a swap
        ["drafter=reviewer", "reviewer=x"],  # reviewer's name, reviewer rebound
        ["user=drafter", "drafter=reviewer", "reviewer=user"],  # a cycle
        ["drafter=drafter", "reviewer=r"],  # a speaker's own name
    ],
)
def test_compile_bind_may_exchange_ids(
    binds: list[str], flow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bindings that leave each speaker an id of its own are no merge, whatever names they
    use: the graph's rules name each speaker by its own id."""
    args = ["compile", str(flow_file), "--graph"]
    for bind in binds:
        args += ["--bind", bind]
    code, out, err = run(args, capsys)
    assert (code, err) == (0, "")
    bindings = dict(b.split("=") for b in binds)
    froms = [
        t["when"]["args"]["agent_id"]
        for t in json.loads(out)["transitions"]
        if t["when"]["name"] == "from_speaker"
    ]
    assert froms == [bindings.get(s, s) for s in ("user", "drafter", "reviewer")]


def test_compile_flow_refuses_a_binding_of_no_speaker() -> None:
    """As `flowc compile --bind nobody=x` (exit 2), flowc.compile_flow refuses it."""
    with pytest.raises(ValueError, match=r"^bindings: nobody: no declared speaker of the flow"):
        flowc.compile_flow(FLOW, bindings={"nobody": "x"})


def test_compile_error_has_code_location_caret_and_help(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.flow"
    path.write_text("speaker a\nspeaker b\nwhen from a then reviewr\n", encoding="utf-8")
    code, out, err = run(["compile", str(path)], capsys)
    assert code == 1 and out == ""
    assert "error[E101]" in err
    assert f"{path}:3:18" in err
    assert "when from a then reviewr" in err and "^^^^^^^" in err
    assert "= help:" in err


def test_missing_file_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["compile", "/nonexistent/x.flow"], capsys)
    assert code == 2 and "no such file" in err


def test_fmt_check_diff_and_rewrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ugly.flow"
    path.write_text("speaker a  # first\nspeaker b\nwhen   from a then b\n", encoding="utf-8")
    code, out, err = run(["fmt", "--check", str(path)], capsys)
    assert code == 1 and "would reformat" in err
    code, out, _ = run(["fmt", "--diff", str(path)], capsys)
    assert code == 1 and "-when   from a then b" in out and "+when from a then b" in out
    assert path.read_text() == "speaker a  # first\nspeaker b\nwhen   from a then b\n"
    code, _, err = run(["fmt", str(path)], capsys)
    assert code == 0 and "reformatted" in err
    assert path.read_text() == "speaker a  # first\nspeaker b\nwhen from a then b\n"
    code, _, _ = run(["fmt", "--check", str(tmp_path)], capsys)
    assert code == 0


def test_fmt_syntax_error_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.flow"
    path.write_text("speaker a\nwhen from a then\n", encoding="utf-8")
    code, _, err = run(["fmt", str(path)], capsys)
    assert code == 1 and "E001" in err and "end of file" in err
    assert path.read_text() == "speaker a\nwhen from a then\n"


def test_fmt_reads_stdin() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "flowc", "fmt", "-"],
        input="speaker   a\nspeaker b # c\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "speaker a\nspeaker b  # c\n"


def test_fmt_keeps_a_files_windows_line_endings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "crlf.flow"
    path.write_bytes(b"speaker a  # first\r\nspeaker b\r\nwhen   from a then b\r\n")
    code, _, err = run(["fmt", str(path)], capsys)
    assert code == 0 and "reformatted" in err
    assert path.read_bytes() == b"speaker a  # first\r\nspeaker b\r\nwhen from a then b\r\n"
    code, _, err = run(["fmt", "--check", str(path)], capsys)
    assert code == 0 and err.splitlines()[-1] == "1 file already formatted"
    path.write_bytes(b"speaker a\nspeaker b\n")  # an LF file stays LF
    code, _, err = run(["fmt", "--check", str(path)], capsys)
    assert code == 0
    proc = subprocess.run(
        [sys.executable, "-m", "flowc", "fmt", "-"],
        input=b"speaker   a\r\nspeaker b # c\r\n",
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"speaker a\r\nspeaker b  # c\r\n"


def test_decompile_round_trips_through_compile(
    flow_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, knobs_text, _ = run(["compile", str(flow_file)], capsys)
    knobs_path = tmp_path / "knobs.json"
    knobs_path.write_text(knobs_text)
    code, flow_text, _ = run(["decompile", str(knobs_path)], capsys)
    assert code == 0
    back = tmp_path / "back.flow"
    back.write_text(flow_text)
    code, again, _ = run(["compile", str(back)], capsys)
    assert code == 0 and again == knobs_text


def test_decompile_reports_shape_errors_with_json_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps(
            {
                "initial_speaker": "a",
                "transitions": [
                    {
                        "when": {"name": "always", "args": {}},
                        "then": {"name": "agent", "args": {"agent_id": 5}},
                        "priority": 0,
                    }
                ],
                "default_target": {"name": "terminate", "args": {"reason": "x"}},
                "max_turns": None,
            }
        )
    )
    code, _, err = run(["decompile", str(path)], capsys)
    assert code == 1
    assert "transitions[0].then.args.agent_id: expected a string, got 5" in err


def test_decompile_invalid_json_points_at_the_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"initial_speaker": "a",\n  "transitions": [}\n')
    code, _, err = run(["decompile", str(path)], capsys)
    assert code == 1 and "E001" in err and ":2:" in err


def test_every_subcommand_is_mapped_to_the_module_that_registers_it() -> None:
    import importlib

    from flowc import cli

    for name, module_name in cli.COMMAND_MODULES.items():
        module = importlib.import_module(module_name)
        assert module.HANDLERS[name].__module__ == module_name, name
        assert set(cli.handlers([module])) <= set(cli.COMMAND_MODULES), module_name
        parser = cli.build_parser([module])
        given = (
            []
            if name in ("log", "explain", "lsp", "worker")
            else ["x", "1"]
            if name == "fork"  # a run and a turn
            else ["x"]
        )
        assert parser.parse_args([name, *given]).command == name


def test_compile_does_not_load_the_checker_or_the_runtime() -> None:
    code = (
        "import sys\n"
        "from flowc.cli import main\n"
        "assert main(['compile', 'examples/pipeline.flow', '-o', '/dev/null']) == 0\n"
        "heavy = [m for m in sys.modules if m.startswith(('flowc.runtime', 'flowc.compiler.analysis', 'networkx'))]\n"
        "print(','.join(heavy))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""
