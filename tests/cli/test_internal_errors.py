"""An internal error (a bug in flowc, not in the input) ends every command with exit 2 and
one line on stderr, never exit 1 (the input has errors) and never a bare traceback; the
traceback comes with ``--traceback`` (before or after the command) or ``FLOWC_TRACEBACK=1``.

Each command gets a fault injected into a function it calls (a ``RuntimeError``), in this
process through :func:`flowc.cli.main`, and one through ``python -m flowc`` in a process of
its own."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FunctionType
from typing import Any

import pytest

from flowc import cli

REPO = Path(__file__).resolve().parents[2]
FLOW = str(REPO / "examples" / "feedback_loop.flow")
SCRIPT = str(REPO / "examples" / "scripts" / "feedback_loop.yaml")
HINT = " (run it again with --traceback to see where)"


def line(command: str) -> str:
    """The one line an internal error of ``command`` prints (without the --traceback hint)."""
    return (
        f"flowc {command}: internal error: RuntimeError: injected fault in {command}; "
        "please report it with the command and the input"
    )


def _cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    """Per command: its arguments, and the function it calls that is made to fail."""
    graph = tmp / "graph.json"
    graph.write_text('{"transitions": []}')
    team = tmp / "team.py"
    team.write_text("x = 1\n")
    db = tmp / "runs.db"
    db.touch()
    shared = str(tmp / "shared.db")
    return {
        "compile": ([FLOW], "flowc.compiler.pipeline.compile_source"),
        "check": ([FLOW], "flowc.commands.check.check_source"),
        "explain": (["W201"], "flowc.commands.check.page"),
        "fmt": ([FLOW, "--check"], "flowc.commands.fmt.format_source"),
        "decompile": ([str(graph)], "flowc.compiler.decompile.decompile"),
        "render": (
            [FLOW, "-o", str(tmp / "out.svg")],
            "flowc.compiler.render.diagram.build_diagram",
        ),
        "test": ([FLOW], "flowc.commands.testing.run_scenario"),
        "scenarios": ([FLOW], "flowc.compiler.analysis.generate.generate_scenarios"),
        "run": ([FLOW, "--script", SCRIPT, "--db", ":memory:"], "flowc.commands.run.run_script"),
        "resume": (["last", "--db", str(db)], "flowc.commands.run.open_store"),
        "fork": (["last", "0", "--db", str(db)], "flowc.commands.run.open_store"),
        "log": (["--db", str(db)], "flowc.commands.run.open_store"),
        "replay": (["last", "--db", str(db)], "flowc.commands.run.open_store"),
        "submit": ([FLOW, "--script", SCRIPT, "--db", shared], "flowc.runtime.worker.submit_run"),
        "worker": (["--db", shared], "flowc.runtime.worker.Worker.serve"),
        "migrate": ([str(team)], "flowc.migrate._migrate_python"),
        "diff": ([FLOW, FLOW], "flowc.compiler.analysis.changes.diff_versions"),
        "lsp": ([], "flowc.lsp.server.make_server"),
        "trust": (["--list"], "flowc.commands.trust_list.read_trust_list"),
        "view": (["--db", str(db), "--no-open"], "flowc.commands.view._check_db"),
    }


def _break(monkeypatch: pytest.MonkeyPatch, dotted: str, command: str) -> None:
    """Make the function at ``dotted`` raise (a coroutine function raises when awaited)."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:-1]:
            owner = getattr(owner, name)
        break
    original = getattr(owner, parts[-1])
    fault = RuntimeError(f"injected fault in {command}")
    broken: Callable[..., Any]
    if inspect.iscoroutinefunction(original):

        async def broken(*args: Any, **kwargs: Any) -> Any:
            raise fault
    else:

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise fault

    monkeypatch.setattr(owner, parts[-1], broken)
    _PATCHED.append((broken, original))


_PATCHED: list[tuple[Callable[..., Any], Callable[..., Any]]] = []


def _module_globals() -> Iterator[tuple[Any, str, Any]]:
    """(module, name, value) of every global of every module loaded."""
    for module in list(sys.modules.values()):
        for name, value in list(getattr(module, "__dict__", {}).items()):
            yield module, name, value


@pytest.fixture(autouse=True)
def _no_fault_left_behind() -> Iterator[None]:
    """A module first imported while a function is broken (``from x import f`` run by the
    command: ``render`` imports ``flowc.compiler.render.rendering``, which takes
    ``build_diagram`` by name) keeps the broken function as a global after monkeypatch
    puts the original back: each such global is put back too, and then no module's
    global may be a broken function, whatever order the tests run in."""
    yield
    while _PATCHED:
        broken, original = _PATCHED.pop()
        for module, name, value in _module_globals():
            if value is broken:
                setattr(module, name, original)
    left = [
        f"{module.__name__}.{name}"
        for module, name, value in _module_globals()
        if isinstance(value, FunctionType)
        and value.__qualname__.startswith("_break.<locals>.broken")
    ]
    assert left == [], "a fault injected here is left in place"


def _fail(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> str:
    """Run ``command`` with its fault; its stderr (the exit status is checked: 2)."""
    args, dotted = _cases(tmp_path)[command]
    _break(monkeypatch, dotted, command)
    monkeypatch.delenv("FLOWC_TRACEBACK", raising=False)
    argv = [command, *args]
    if where == "before":
        argv = ["--traceback", *argv]
    elif where == "after":
        argv = [*argv, "--traceback"]
    elif where == "environment":
        monkeypatch.setenv("FLOWC_TRACEBACK", "1")
    assert cli.main(argv) == 2
    return capsys.readouterr().err


def test_every_command_has_a_fault(tmp_path: Path) -> None:
    assert set(_cases(tmp_path)) == set(cli.COMMAND_MODULES)


@pytest.mark.parametrize("command", list(cli.COMMAND_MODULES))
def test_an_internal_error_is_one_line_and_exit_2(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _fail(command, tmp_path, monkeypatch, capsys, "none")
    assert err == line(command) + HINT + "\n"


@pytest.mark.parametrize("where", ["before", "after", "environment"])
@pytest.mark.parametrize("command", list(cli.COMMAND_MODULES))
def test_the_traceback_on_request(
    command: str,
    where: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _fail(command, tmp_path, monkeypatch, capsys, where)
    assert err.startswith("Traceback (most recent call last):\n"), err
    assert "raise fault" in err  # down to the frame that raised
    assert f"RuntimeError: injected fault in {command}\n" in err
    assert err.endswith("\n" + line(command) + "\n")  # the summary last, with no hint


@pytest.mark.parametrize("value", ["", "0"])
def test_flowc_traceback_empty_or_0_is_off(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args, dotted = _cases(tmp_path)["check"]
    _break(monkeypatch, dotted, "check")
    monkeypatch.setenv("FLOWC_TRACEBACK", value)
    assert cli.main(["check", *args]) == 2
    assert capsys.readouterr().err == line("check") + HINT + "\n"


def test_a_message_over_several_lines_is_printed_on_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("first\n  second")

    monkeypatch.setattr("flowc.commands.check.check_source", broken)
    monkeypatch.delenv("FLOWC_TRACEBACK", raising=False)
    assert cli.main(["check", FLOW]) == 2
    assert capsys.readouterr().err == (
        "flowc check: internal error: KeyError: 'first\\n  second'; please report it with the "
        "command and the input" + HINT + "\n"
    )
    monkeypatch.setattr("flowc.commands.check.check_source", lambda *a, **k: 1 / 0)
    assert cli.main(["check", FLOW]) == 2
    assert capsys.readouterr().err == (
        "flowc check: internal error: ZeroDivisionError: division by zero; please report it "
        "with the command and the input" + HINT + "\n"
    )


def test_an_error_before_the_command_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command module that fails to import (a broken install): exit 2, no command name."""

    def broken(name: str) -> Any:
        raise ImportError(f"cannot import {name}")

    monkeypatch.setattr(cli.importlib, "import_module", broken)
    monkeypatch.delenv("FLOWC_TRACEBACK", raising=False)
    assert cli.main(["check", FLOW]) == 2
    assert capsys.readouterr().err == (
        "flowc: internal error: ImportError: cannot import flowc.commands.check; please report "
        "it with the command and the input" + HINT + "\n"
    )


def test_the_clean_errors_stay_as_they_were(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "no/such.flow", "--traceback"]) == 2
    assert capsys.readouterr().err == "flowc check: error: no/such.flow: no such file or folder\n"
    assert cli.main(["explain", "NOPE"]) == 2
    assert "Traceback" not in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        cli.main(["--traceback", "check", "--no-such-option"])
    assert exited.value.code == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err


def test_traceback_after_a_double_dash_is_an_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "--", "--traceback"]) == 2
    assert capsys.readouterr().err == "flowc check: error: --traceback: no such file or folder\n"


def test_the_help_documents_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--traceback" in out and "FLOWC_TRACEBACK=1" in out


# ── internal errors a command reports itself ─────────────────────────────────


def test_fmt_refusing_its_own_output_is_exit_2_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The formatter's output failed its own checks: that file is left as it was, the
    others are formatted, exit 2."""
    from flowc.commands import fmt
    from flowc.dsl.formatter import FormatterBug

    real = fmt.format_source

    def format_source(text: str, name: str, verify: bool = True) -> str:
        if name.endswith("bad.flow"):
            raise FormatterBug(f"{name}: formatting lost or reordered a comment")
        return real(text, name, verify=verify)

    monkeypatch.setattr(fmt, "format_source", format_source)
    for name in ("bad.flow", "good.flow"):
        (tmp_path / name).write_text("speakers a,b\nwhen from a then b\n")
    assert cli.main(["fmt", str(tmp_path / "bad.flow"), str(tmp_path / "good.flow")]) == 2
    err = capsys.readouterr().err
    assert (
        f"flowc fmt: internal error: {tmp_path / 'bad.flow'}: formatting lost or reordered "
        "a comment; the file was left unchanged; please report it with the command and the "
        "input\n"
    ) in err
    assert (tmp_path / "bad.flow").read_text() == "speakers a,b\nwhen from a then b\n"
    assert (tmp_path / "good.flow").read_text() != "speakers a,b\nwhen from a then b\n"


def test_scenarios_that_fail_their_own_run_are_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A generated scenario that fails when run is a bug in flowc, not in the flow: exit 2
    (it was 1, the status of a flow with errors)."""
    import attrs

    from flowc.commands import testing

    real = testing.run_scenario
    monkeypatch.setattr(
        testing,
        "run_scenario",
        lambda target, scenario, *watched: attrs.evolve(
            real(target, scenario, *watched), passed=False, failure="the run diverged"
        ),
    )
    assert cli.main(["scenarios", FLOW]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines and all(
        x.startswith(f"flowc scenarios: internal error: {FLOW}: generated scenario ")
        and x.endswith(" fails: the run diverged; please report it with the command and the input")
        for x in lines
    ), err


# ── in a process of its own ──────────────────────────────────────────────────

#: imported by Python at start-up (on PYTHONPATH): breaks what `flowc check` calls
SITECUSTOMIZE = """
import flowc.commands.check

def check_source(*args, **kwargs):
    raise RuntimeError("injected fault in check")

flowc.commands.check.check_source = check_source
"""


@pytest.fixture
def faulty_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent(SITECUSTOMIZE))
    env = {k: v for k, v in os.environ.items() if k != "FLOWC_TRACEBACK"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    return env


def _flowc(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowc", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def test_a_process_exits_2_with_one_line(faulty_env: dict[str, str]) -> None:
    done = _flowc(["check", FLOW], faulty_env)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line("check") + HINT + "\n")


def test_a_process_prints_the_traceback_on_request(faulty_env: dict[str, str]) -> None:
    for args, env in (
        (["--traceback", "check", FLOW], faulty_env),
        (["check", FLOW, "--traceback"], faulty_env),
        (["check", FLOW], {**faulty_env, "FLOWC_TRACEBACK": "1"}),
    ):
        done = _flowc(args, env)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("Traceback (most recent call last):\n"), done.stderr
        assert 'raise RuntimeError("injected fault in check")' in done.stderr
        assert done.stderr.endswith("\n" + line("check") + "\n")


def test_memory_running_out_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Past flowc's bounds, an allocation refused under an address-space limit: one line
    that says so, not a MemoryError's traceback nor an internal error (a real one, under
    a limit: tests/hostile/test_memory_shapes.py)."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr("flowc.commands.check.check_source", broken)
    assert cli.main(["check", FLOW]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "flowc check: error: out of memory: the input needs more memory than this process may use"
    )
    assert err.endswith("or report the input (docs/trust.md lists flowc's bounds)\n")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_running_out_of_memory_lets_the_work_go_before_saying_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The line is written once the command's work is let go (the MemoryError's traceback
    holds it while it is handled): with it still held, the words themselves ran out of
    memory once, and Python printed a traceback from the error handler."""
    import weakref

    class Work:
        pass

    held: list[weakref.ref[Work]] = []

    def broken(*args: Any, **kwargs: Any) -> Any:
        work = Work()  # what a command builds, alive in this frame
        held.append(weakref.ref(work))
        raise MemoryError

    said = cli.out_of_memory

    def out_of_memory() -> str:
        assert held and held[0]() is None, "the work is still held"
        return said()

    monkeypatch.setattr("flowc.commands.check.check_source", broken)
    monkeypatch.setattr(cli, "out_of_memory", out_of_memory)
    assert cli.main(["check", FLOW]) == 2
    assert capsys.readouterr().err.startswith("flowc check: error: out of memory")
