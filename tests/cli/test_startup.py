"""Start-up and exit of the `flowc` program: what a command loads, the cycle collector
while it loads, and the end of the process (its exit functions run, a profiler still
writes its results), on every Python the package supports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

VERSION = """
import json, sys
from flowc import cli
sys.argv = ["flowc", "--version"]
try:
    cli.run()
except SystemExit as stop:
    code = stop.code
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("attr", "attrs", "cattrs")
                or m.startswith(("flowc.commands", "flowc.runtime", "flowc.dsl")))
print(json.dumps({"code": code, "loaded": loaded}))
"""


def test_version_loads_no_command() -> None:
    done = subprocess.run(
        [sys.executable, "-c", VERSION], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("flowc 0.1.0\n")
    result = json.loads(done.stdout.splitlines()[1])
    assert result == {"code": 0, "loaded": []}


RUN_OUTSIDE_A_PROJECT = """
import sys
from flowc.cli import main
code = main(["run", sys.argv[1], "--script", sys.argv[2], "--db", ":memory:"])
print(code, "tomllib" in sys.modules, "shutil" in sys.modules)
"""


def test_a_run_outside_a_project_reads_no_toml_and_sizes_no_help(tmp_path: Path) -> None:
    (tmp_path / "pair.flow").write_text(
        "speaker a: human\nspeaker b: human\nstart a\nmax_turns 2\nwhen from a then b\n"
    )
    (tmp_path / "s.json").write_text(json.dumps({"script": {"a": ["hi"], "b": ["yo"]}}))
    args = [
        sys.executable,
        "-c",
        RUN_OUTSIDE_A_PROJECT,
        str(tmp_path / "pair.flow"),
        str(tmp_path / "s.json"),
    ]
    done = subprocess.run(
        args,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "0 False False"
    # with a pyproject.toml beside the flow, its [tool.flowc] table is read
    (tmp_path / "pyproject.toml").write_text("[tool.flowc]\nstrict = true\n")
    done = subprocess.run(
        args,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert done.stdout.splitlines()[-1] == "0 True False", done.stderr


def test_help_is_sized_as_argparse_sizes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse
    import importlib
    import shutil

    from flowc import cli

    for columns in ("", "0", "-3", "wide", "57", "200"):
        monkeypatch.setenv("COLUMNS", columns)
        assert cli._help_width() == shutil.get_terminal_size().columns - 2
    monkeypatch.setenv("COLUMNS", "64")
    modules = [
        importlib.import_module(name)
        for name in dict.fromkeys(
            cli.COMMAND_MODULES[command] for command in ("run", "log", "check")
        )
    ]
    ours = cli.build_parser(modules)
    monkeypatch.setattr(cli, "_Parser", argparse.ArgumentParser)
    plain = cli.build_parser(modules)
    for args in ([], ["run"], ["log"], ["check"]):
        assert (cli._subparser(ours, args[0]) if args else ours).format_help() == (
            cli._subparser(plain, args[0]) if args else plain
        ).format_help()


PLUGIN = """
import atexit, os, pathlib, sys, threading, time
out = pathlib.Path(os.environ["FLOWC_TEST_OUT"])
atexit.register(lambda: (out / "atexit").write_text("ran"))
# the interpreter's tear-down clears its state, an audit event (no file can be opened then)
torn = os.open(out / "torn", os.O_WRONLY | os.O_CREAT)
def hook(event, args, write=os.write, fd=torn):
    if event == "cpython.PyInterpreterState_Clear":
        write(fd, b"torn down")
sys.addaudithook(hook)
if os.environ.get("FLOWC_TEST_THREAD"):
    def late():
        time.sleep(0.5)
        (out / "thread").write_text("done")
    threading.Thread(target=late).start()
"""


@pytest.mark.parametrize("thread", [False, True])
def test_the_process_ends_after_the_exit_functions_without_tearing_down(
    tmp_path: Path, thread: bool
) -> None:
    (tmp_path / "pair.flow").write_text(
        "speaker a: human\nspeaker b: human\nstart a\nmax_turns 2\nwhen from a then b\n"
    )
    (tmp_path / "s.json").write_text(json.dumps({"script": {"a": ["hi"], "b": ["yo"]}}))
    (tmp_path / "plugin.py").write_text(PLUGIN)
    env = dict(os.environ, PYTHONPATH=str(ROOT), FLOWC_TEST_OUT=str(tmp_path))
    if thread:
        env["FLOWC_TEST_THREAD"] = "1"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowc",
            "run",
            "pair.flow",
            "--script",
            "s.json",
            "--db",
            ":memory:",
            "--plugin",
            "plugin.py",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith('closed: "after_work" after 2 turns\n') and not done.stderr
    assert (tmp_path / "atexit").read_text() == "ran"  # the exit functions run
    torn = (tmp_path / "torn").read_text()
    if thread:  # another thread runs: the usual exit, which waits for it
        assert (tmp_path / "thread").read_text() == "done" and torn == "torn down"
    else:  # nothing left to wait for: no tear-down
        assert torn == ""


def test_a_profiled_run_still_writes_its_profile(tmp_path: Path) -> None:
    (tmp_path / "pair.flow").write_text(
        "speaker a: human\nspeaker b: human\nstart a\nmax_turns 2\nwhen from a then b\n"
    )
    (tmp_path / "s.json").write_text(json.dumps({"script": {"a": ["hi"], "b": ["yo"]}}))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cProfile",
            "-o",
            "run.prof",
            "-m",
            "flowc",
            "run",
            "pair.flow",
            "--script",
            "s.json",
            "--db",
            ":memory:",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert done.returncode == 0, done.stderr
    import pstats

    assert pstats.Stats(str(tmp_path / "run.prof")).total_calls > 1000


COLLECTOR_PLUGIN = """
import gc, json, os, pathlib
# a plugin loads when the command starts its work
pathlib.Path(os.environ["FLOWC_TEST_OUT"]).write_text(json.dumps(
    {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}))
"""


def test_the_collector_is_off_while_a_command_loads_and_on_when_it_works(tmp_path: Path) -> None:
    (tmp_path / "pair.flow").write_text(
        "speaker a: human\nspeaker b: human\nstart a\nmax_turns 2\nwhen from a then b\n"
    )
    (tmp_path / "s.json").write_text(json.dumps({"script": {"a": ["hi"], "b": ["yo"]}}))
    (tmp_path / "plugin.py").write_text(COLLECTOR_PLUGIN)
    out = tmp_path / "collector.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowc",
            "run",
            "pair.flow",
            "--script",
            "s.json",
            "--db",
            ":memory:",
            "--plugin",
            "plugin.py",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT), FLOWC_TEST_OUT=str(out)),
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(out.read_text())
    # on again for the run (a worker or the language server collects as usual), with
    # what the start-up loaded frozen out of its sight
    assert seen["enabled"] is True
    assert seen["frozen"] > 10_000
    # in-process callers of flowc.cli.main keep their collector as it is
    import gc

    from flowc import cli

    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            assert cli.main(["check", str(tmp_path / "pair.flow")]) == 0
            assert gc.isenabled() is enabled
        finally:
            gc.enable()


IMPORTED = """
import json, sys
from flowc.cli import main
code = main(sys.argv[1:])
print(json.dumps([code, sorted(m for m in sys.modules if m in (
    "cattrs", "flowc.compiler.shapes", "hashlib", "flowc.regex", "flowc.runtime.ctxexpr",
    "dataclasses", "flowc.runtime.vocabulary"))]))
"""


def test_a_run_imports_what_its_rules_use(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps({"script": {"a": ["hi"], "b": ["yo"]}}))

    def imported(flow: str) -> list[str]:
        (tmp_path / "pair.flow").write_text(flow)
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                IMPORTED,
                "run",
                "pair.flow",
                "--script",
                "s.json",
                "--db",
                ":memory:",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        code, loaded = json.loads(done.stdout.splitlines()[-1])
        assert code == 0, done.stdout + done.stderr
        return list(loaded)

    head = "speaker a: human\nspeaker b: human\nstart a\nmax_turns 2\n"
    # the migrate vocabulary (its dataclasses, its matcher, the context-expression parser,
    # hashlib) loads only for a rule that uses it
    assert imported(head + "when from a then b\n") == []
    assert {"flowc.regex", "flowc.runtime.vocabulary"} <= set(
        imported(
            head
            + 'condition text_matches(pattern: string)\nwhen from a and text_matches(pattern = "h.") '
            "then b\n"
        )
    )


DEFERRED = """
import json, sys
from flowc.compiler.registry import default_registry

def custom(name, kind):
    method = "evaluate" if kind == "condition" else "resolve"
    return type(name.title(), (), {"name": name, "__module__": "plugin",
                                   method: lambda self, state, envelope: None})

registry = default_registry()
if sys.argv[1] == "before":
    registry.register_condition(custom("early", "condition"))
import flowc.runtime
registry.register_condition(custom("text_contains", "condition"))  # replaces a shipped one
registry.register_condition(custom("late", "condition"))
registry.register_target(custom("random_agent", "target"))
if sys.argv[1] == "import":
    import flowc.runtime.vocabulary
loaded = "flowc.runtime.vocabulary" in sys.modules
print(json.dumps({
    "loaded_before_a_read": loaded,
    "conditions": registry.condition_names[-6:],
    "targets": registry.target_names[-1:],
    "text_contains": registry.condition("text_contains").__module__,
    "text_matches": registry.condition("text_matches").__module__,
    "random_agent": registry.target("random_agent").__module__,
}))
"""


@pytest.mark.parametrize("when", ["plain", "before", "import"])
def test_the_shipped_vocabulary_is_registered_when_the_registry_is_first_read(when: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", DEFERRED, when],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    # read as if flowc.runtime had registered it when imported: in that place, replaced
    # by what a plugin registers later under the same name
    shipped = ["text_contains", "text_matches", "context_expression", "turn_count_at_most"]
    assert seen == {
        "loaded_before_a_read": when == "import",
        "conditions": [*(["early"] if when == "before" else ["tool_called"]), *shipped, "late"][
            -6:
        ],
        "targets": ["random_agent"],
        "text_contains": "plugin",
        "text_matches": "flowc.runtime.vocabulary",
        "random_agent": "plugin",
    }


WORKER = """
import json, os, signal, sqlite3, sys, threading, time
from flowc import cli

def stop_once_closed():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(sys.argv[1]) as db:
                closed = db.execute(
                    "SELECT count(*) FROM wal WHERE event_type = 'ag2.channel.closed'"
                ).fetchone()[0]
        except sqlite3.Error:
            closed = 0
        if closed:
            break
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=stop_once_closed, daemon=True).start()
code = cli.main(["worker", "--db", sys.argv[1], "--quiet"])
loaded = sorted(m for m in sys.modules
                if m.startswith(("flowc.dsl.", "flowc.compiler.describe")))
print(json.dumps({"code": code, "loaded": loaded}))
"""


def test_a_worker_drives_a_run_without_the_syntax_tree(tmp_path: Path) -> None:
    """`flowc worker` runs submitted runs from what their WAL holds (the graph, the rule
    texts): it never loads the `.flow` syntax tree, the formatter or describe, whose
    classes cost a worker process ~50 ms of CPU at each start (issue 31)."""
    (tmp_path / "rr.flow").write_text(
        "speaker a\nspeaker b\nstart a\nmax_turns 4\nwhen from a then b\nwhen from b then a\n"
    )
    (tmp_path / "s.json").write_text(json.dumps({"script": {"a": ["1", "2"], "b": ["3", "4"]}}))
    db = str(tmp_path / "runs.db")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    submit = [sys.executable, "-m", "flowc", "submit", "rr.flow", "--script", "s.json"]
    done = subprocess.run(
        [*submit, "--db", db], capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [sys.executable, "-c", WORKER, db],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "1 run closed" in done.stdout, done.stdout
    result = json.loads(done.stdout.splitlines()[-1])
    assert result == {"code": 0, "loaded": ["flowc.dsl.keywords", "flowc.dsl.names"]}
