"""A hostile repository (issue 32, point 1): its pyproject.toml lists plugins that write a
marker file when they are imported, one a `.py` file and one a module name, and its own
Python (`team.py`) writes one if it ever runs. Opened through every command and through
the language server (a raw client: every request the server answers), nothing of it runs;
trusted (`--trust`, `FLOWC_TRUST=1`, the user's list of trusted folders) the plugins load
where the trust rule says they may (docs/trust.md).

Each command runs in a process of its own under the limits helper, with this checkout's
flowc and a `$XDG_CONFIG_HOME` of the test's own (its list of trusted folders)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import flowc
from tests.hostile.limits import Limited, run_limited

ROOT = Path(__file__).resolve().parents[2]
LIMITS = {"memory_mib": 512, "cpu_seconds": 60, "wall_seconds": 90.0, "output_mib": 8}

FLOW = """\
speaker user: human
speaker bot
condition odd()
target pick() -> bot
when odd() then terminate "odd"
when from user then pick()

scenario "hello" {
  user: "hi"
  bot: "hello"
  expect terminate "after_work"
}
"""
SIMPLE = """\
speaker user: human
speaker bot
when from user then bot
"""
#: what a plugin does when it is imported: writes its marker (and registers the classes
#: the flow's custom names need, so that a trusted run goes through)
PLUGIN = """\
import sys
from pathlib import Path
from typing import Any, ClassVar

import attrs

import flowc
from flowc.runtime import TransitionDecision

Path({marker!r}).write_text(" ".join(sys.argv))


@flowc.register_condition
@attrs.frozen
class Odd:
    name: ClassVar[str] = "odd"

    def evaluate(self, state: Any, envelope: Any) -> bool:
        return False


@flowc.register_target
@attrs.frozen
class Pick:
    name: ClassVar[str] = "pick"

    def resolve(self, state: Any, envelope: Any) -> TransitionDecision:
        return TransitionDecision("bot")
"""
#: the repository's own Python, which no command may run (migrate reads it)
TEAM = """\
from pathlib import Path

Path({marker!r}).write_text("team.py ran")

from autogen import AssistantAgent, GroupChat

a = AssistantAgent("a")
b = AssistantAgent("b")
chat = GroupChat(agents=[a, b], messages=[], max_round=5)
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The checkout: plugins in its pyproject.toml, flows, a script, a graph, a run
    database with a run in it, and a file that is no database."""
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = tmp_path / "cloned"
    (repo / "flows").mkdir(parents=True)
    (repo / "tools").mkdir()
    (repo / "pyproject.toml").write_text(
        '[tool.flowc]\nplugins = ["tools/evil_file.py", "evil_module"]\n'
    )
    (repo / "tools" / "evil_file.py").write_text(PLUGIN.format(marker=str(markers / "file")))
    (repo / "evil_module.py").write_text(PLUGIN.format(marker=str(markers / "module")))
    (repo / "team.py").write_text(TEAM.format(marker=str(markers / "team")))
    (repo / "flows" / "review.flow").write_text(FLOW)
    (repo / "flows" / "review2.flow").write_text(FLOW.replace('"odd"', '"even"'))
    (repo / "flows" / "simple.flow").write_text(SIMPLE)
    (repo / "script.json").write_text(json.dumps({"kickoff": "hi", "script": {"bot": ["ok"]}}))
    graph = flowc.compile_flow(FLOW).knobs["graph"]
    (repo / "graph.json").write_text(json.dumps(graph))
    (repo / "junk.db").write_text("this is no database\n")
    made = flow_command(repo, ["run", "flows/simple.flow", "--script", "script.json", *DB])
    assert made.returncode == 0, made.stderr
    assert not marks(repo)
    return repo


def marks(repo: Path) -> list[str]:
    """The markers written so far (and forget them, for the next command)."""
    found = sorted(p.name for p in (repo.parent / "markers").iterdir())
    for name in found:
        (repo.parent / "markers" / name).unlink()
    return found


def flow_command(
    repo: Path,
    args: list[str],
    env: dict[str, str | None] | None = None,
    stdin: bytes | None = None,
) -> Limited:
    """``flowc ARGS`` in the checkout, this checkout's flowc, the test's own trust list."""
    config = repo.parent / "config"
    environ: dict[str, str | None] = {
        "PYTHONPATH": str(ROOT),
        "XDG_CONFIG_HOME": str(config),
        "FLOWC_TRUST": None,
        **(env or {}),
    }
    return run_limited(args, cwd=repo, env=environ, stdin=stdin, **LIMITS)


#: the run database of the checkout (the fixture puts a run in it)
DB = ["--db", "runs.db"]

#: every command that reads a repository's files, with its arguments; whether it may
#: import the plugins the configuration lists (those that take --trust), and its exit
#: status untrusted
COMMANDS: dict[str, tuple[list[str], bool, int]] = {
    "check": (["check", "flows/review.flow"], True, 0),
    "check-folder": (["check", "flows"], True, 0),
    "compile": (["compile", "flows/review.flow"], True, 0),
    "render": (["render", "flows/review.flow", "-f", "dot", "--check"], True, 0),
    "render-svg": (["render", "flows/review.flow", "-o", "out.svg"], True, 0),
    "diff": (["diff", "flows/review.flow", "flows/review2.flow"], True, 2),
    "test": (["test", "flows"], True, 1),
    "run": (["run", "flows/review.flow", "--script", "script.json", *DB], True, 1),
    "resume": (["resume", "last", *DB], True, 0),
    "fork": (["fork", "last", "0", "--script", "script.json", *DB], True, 0),
    "log": (["log", *DB], True, 0),
    "replay": (["replay", "last", *DB], True, 0),
    "submit": (["submit", "flows/review.flow", "--script", "script.json", "--db", "s.db"], True, 1),
    "worker": (["worker", "--db", "junk.db"], True, 2),
    "fmt": (["fmt", "--check", "flows"], False, 1),
    "decompile": (["decompile", "graph.json", "--participants", "user,bot"], False, 0),
    "scenarios": (["scenarios", "flows/simple.flow"], False, 0),
    "migrate": (["migrate", "team.py"], False, 0),
}


def test_the_commands_are_every_command() -> None:
    from flowc.cli import COMMAND_MODULES

    ran = {args[0] for args, _, _ in COMMANDS.values()}
    # explain reads no file of the repository, lsp has a test of its own, trust writes
    # the user's list, view serves until stopped, and neither reads the configuration nor
    # takes --plugin (flowc/commands/view.py)
    assert ran | {"explain", "lsp", "trust", "view"} == set(COMMAND_MODULES)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_command_runs_an_untrusted_repository_s_python(repo: Path, name: str) -> None:
    args, may_load, status = COMMANDS[name]
    result = flow_command(repo, args)
    assert not result.timed_out and not result.traceback, result.stderr[-3000:]
    assert marks(repo) == [], result.stderr
    assert result.returncode == status, result.stdout[-2000:] + result.stderr[-2000:]
    notice = f"{repo / 'pyproject.toml'}: note: its plugins were not imported"
    # said once, by the commands that would have imported them
    assert result.stderr.count(notice) == (1 if may_load else 0), result.stderr


@pytest.mark.parametrize("route", ["--trust", "the list"])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_trusted_repository_s_plugins_load(repo: Path, name: str, route: str) -> None:
    """Trusted, the commands that take plugins import both (file and module); the others
    still run nothing of the repository's (they take no plugins: they do not need them)."""
    args, may_load, _ = COMMANDS[name]
    if route == "--trust":
        if not may_load:
            return  # they take no --trust
        args = [*args, "--trust"]
    else:
        listed = flow_command(repo, ["trust", str(repo)])
        assert listed.returncode == 0, listed.stderr
    result = flow_command(repo, args)
    assert not result.timed_out and not result.traceback, result.stderr[-3000:]
    assert marks(repo) == (["file", "module"] if may_load else []), result.stderr
    assert "its plugins were not imported" not in result.stderr


def test_flowc_trust_1_trusts_and_0_refuses(repo: Path) -> None:
    result = flow_command(repo, ["test", "flows"], env={"FLOWC_TRUST": "1"})
    assert result.returncode == 0, result.stderr
    assert marks(repo) == ["file", "module"]
    assert flow_command(repo, ["trust", str(repo)]).returncode == 0
    result = flow_command(repo, ["test", "flows"], env={"FLOWC_TRUST": "0"})
    assert result.returncode == 1 and marks(repo) == []
    assert "FLOWC_TRUST=0 trusts no folder" in result.stderr


# ── the language server ───────────────────────────────────────────────────────


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(msg_id: int, method: str, params: Any) -> bytes:
    return frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})


def notification(method: str, params: Any) -> bytes:
    return frame({"jsonrpc": "2.0", "method": method, "params": params})


def written(stdout: str) -> list[Any]:
    out = []
    for match in re.finditer(r"Content-Length: (\d+)\r\n(?:[^\r\n]+\r\n)*\r\n", stdout):
        out.append(json.loads(stdout[match.end() : match.end() + int(match.group(1))]))
    return out


#: every request the server answers about a document, with its parameters (the
#: document's URI filled in)
REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("textDocument/hover", {"position": {"line": 4, "character": 6}}),
    ("textDocument/hover", {"position": {"line": 1, "character": 9}}),
    ("textDocument/definition", {"position": {"line": 4, "character": 6}}),
    (
        "textDocument/references",
        {"position": {"line": 1, "character": 9}, "context": {"includeDeclaration": True}},
    ),
    ("textDocument/documentSymbol", {}),
    ("textDocument/completion", {"position": {"line": 5, "character": 20}}),
    ("textDocument/semanticTokens/full", {}),
    ("textDocument/foldingRange", {}),
    ("textDocument/formatting", {"options": {"tabSize": 2, "insertSpaces": True}}),
    (
        "textDocument/rangeFormatting",
        {
            "options": {"tabSize": 2, "insertSpaces": True},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}},
        },
    ),
    (
        "textDocument/codeAction",
        {
            "range": {"start": {"line": 4, "character": 0}, "end": {"line": 4, "character": 5}},
            "context": {"diagnostics": []},
        },
    ),
    ("textDocument/prepareRename", {"position": {"line": 1, "character": 9}}),
    ("textDocument/rename", {"position": {"line": 1, "character": 9}, "newName": "helper"}),
]


def lsp_session(
    repo: Path, args: list[str], env: dict[str, str | None] | None = None
) -> tuple[Limited, list[Any]]:
    """`flowc lsp ARGS` in the checkout, as an editor opening its flows: every request,
    the diagram, a changed pyproject.toml, a save, then shutdown and exit."""
    uri = (repo / "flows" / "review.flow").as_uri()
    doc = {"textDocument": {"uri": uri}}
    messages = [
        request(0, "initialize", {"processId": None, "rootUri": repo.as_uri(), "capabilities": {}}),
        notification("initialized", {}),
        notification(
            "textDocument/didOpen",
            {
                "textDocument": {
                    **doc["textDocument"],
                    "languageId": "flow",
                    "version": 1,
                    "text": FLOW,
                }
            },
        ),
        *(request(i, method, {**doc, **params}) for i, (method, params) in enumerate(REQUESTS, 1)),
        request(50, "workspace/executeCommand", {"command": "flowc.diagram", "arguments": [uri]}),
        notification(
            "workspace/didChangeWatchedFiles",
            {"changes": [{"uri": (repo / "pyproject.toml").as_uri(), "type": 2}]},
        ),
        notification(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": FLOW + "\n"}]},
        ),
        notification("textDocument/didSave", doc),
        request(60, "textDocument/documentSymbol", doc),
        request(99, "shutdown", None),
        notification("exit", None),
    ]
    result = flow_command(repo, ["lsp", *args], env=env, stdin=b"".join(messages))
    return result, written(result.stdout)


def test_the_language_server_runs_nothing_of_an_untrusted_repository(repo: Path) -> None:
    result, out = lsp_session(repo, [])
    assert not result.timed_out and not result.traceback, result.stderr[-3000:]
    assert result.returncode == 0, result.stderr[-3000:]
    assert marks(repo) == []
    answered = {m["id"]: m for m in out if "id" in m and "method" not in m}
    assert set(answered) == {0, *range(1, len(REQUESTS) + 1), 50, 60, 99}
    assert not [m for m in answered.values() if "error" in m], answered
    assert "<svg" in answered[50]["result"]["svg"]
    said = [m["params"] for m in out if m.get("method") == "window/showMessage"]
    notices = [p for p in said if "its plugins were not imported" in p["message"]]
    # an information, once (again after the pyproject.toml changed, if the server
    # checks the document again before it is told to shut down)
    assert [p["type"] for p in notices][:1] == [3] and len(notices) <= 2, said
    assert f"`flowc trust {repo}`" in notices[0]["message"]


@pytest.mark.parametrize("route", ["--trust", "FLOWC_TRUST", "the list"])
def test_the_language_server_imports_a_trusted_repository_s_plugins(repo: Path, route: str) -> None:
    args: list[str] = []
    env: dict[str, str | None] = {}
    if route == "--trust":
        args = ["--trust"]
    elif route == "FLOWC_TRUST":
        env = {"FLOWC_TRUST": "1"}
    else:
        assert flow_command(repo, ["trust", str(repo)]).returncode == 0
    result, out = lsp_session(repo, args, env)
    assert result.returncode == 0 and not result.traceback, result.stderr[-3000:]
    assert marks(repo) == ["file", "module"]
    said = [m["params"]["message"] for m in out if m.get("method") == "window/showMessage"]
    assert not [m for m in said if "not imported" in m], said
