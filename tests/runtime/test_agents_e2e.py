"""`flowc run FLOW --agents MODULE.py` end to end, with real AG2 `Agent`s.

The modules under ``tests/runtime/agents/`` map speakers of ``agents/support.flow`` to
AG2 ``Agent`` objects whose model is scripted offline with ``ag2.testing.TestConfig``
(plain text, a tool returning AG2's ``Handoff``, a tool returning ``Finish``), and to
plain async callables. Each case runs as a subprocess (``python -m flowc``, stdin fed
to the human speaker) and, where it is cheap, in-process through ``flowc.cli.main``.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main

pytest.importorskip("ag2.network")

ROOT = Path(__file__).resolve().parents[2]
AGENTS = Path(__file__).resolve().parent / "agents"
FLOW = str(AGENTS / "support.flow")


def module(name: str) -> str:
    return str(AGENTS / f"{name}.py")


def flowc(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``flowc run ...`` in a fresh interpreter, from a neutral working directory."""
    return subprocess.run(
        [sys.executable, "-m", "flowc", "run", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def speakers(out: dict[str, Any]) -> list[str]:
    return [t["speaker"] for t in out["turns"]]


# ── AG2 Agents, subprocess ────────────────────────────────────────────────────


def test_ag2_agents_replying_text_with_a_human_on_stdin() -> None:
    proc = flowc(
        FLOW,
        "--agents",
        module("ag2_text"),
        "--json",
        "--db",
        ":memory:",
        stdin="I cannot log in\nStill locked out\nThanks\n",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert speakers(out) == ["user", "triage"] * 3
    assert [t["kind"] for t in out["turns"]] == ["text", "packet"] * 3
    assert [t["routing"] for t in out["turns"][1::2]] == [{"kind": "text"}] * 3
    assert out["close_reason"] == "max_turns" and out["turn_count"] == 6
    # the human is prompted on stderr and sees what the agent said
    assert proc.stderr.count("user> ") == 3
    assert "[triage] Have you tried a password reset?" in proc.stderr


def test_ag2_agents_readable_transcript() -> None:
    proc = flowc(
        FLOW,
        "--agents",
        module("ag2_text"),
        "--db",
        ":memory:",
        stdin="I cannot log in\nStill locked out\nThanks\n",
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["1", "user", "I", "cannot", "log", "in"]
    assert "2  triage    Have you tried a password reset?" in proc.stdout
    assert "→ user  (rule 2, line 13: when from triage then user)" in proc.stdout
    assert lines[-1] == 'closed: "max_turns" after 6 turns'


def test_ag2_agent_tool_returning_handoff_routes_to_its_target() -> None:
    proc = flowc(
        FLOW,
        "--agents",
        module("ag2_handoff"),
        "--json",
        "--db",
        ":memory:",
        stdin="Someone logged in from abroad\n",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert speakers(out) == ["user", "triage", "security"]
    # AG2's routing: the Handoff's target and reason (not the call's argument)
    assert out["turns"][1]["routing"] == {
        "kind": "handoff",
        "tool": "escalate",
        "target": "security",
        "reason": "security review (suspicious login)",
    }
    assert out["turns"][2]["routing"] == {"kind": "text"}
    assert out["close_reason"] == "secured" and out["turn_count"] == 3


def test_handoff_transcript_names_the_tool_and_the_handoff() -> None:
    proc = flowc(
        FLOW,
        "--agents",
        module("ag2_handoff"),
        "--db",
        ":memory:",
        stdin="Someone logged in from abroad\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert (
        "2  triage    [escalate: security review (suspicious login)] Escalating to security."
    ) in proc.stdout
    assert "→ security  (handoff)" in proc.stdout
    assert "3  security  Account locked; reset link sent." in proc.stdout
    assert (
        '■ terminate "secured"  (rule 3, line 14: when from security then terminate "secured")'
        in proc.stdout
    )
    assert proc.stdout.splitlines()[-1] == 'closed: "secured" after 3 turns'


def test_ag2_agent_tool_returning_finish_closes_the_run() -> None:
    proc = flowc(
        FLOW, "--agents", module("ag2_finish"), "--json", "--db", ":memory:", stdin="It works now\n"
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert speakers(out) == ["user", "triage"]
    assert out["turns"][1]["routing"] == {
        "kind": "finish",
        "tool": "resolve",
        "reason": "resolved",
        "summary": "password reset by the user",
    }
    assert out["close_reason"] == "resolved" and out["turn_count"] == 2


def test_agents_combine_with_a_script(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            {
                "kickoff": "My account was hacked",
                "script": {"security": ["Locked; reset link sent."]},
            }
        )
    )
    proc = flowc(
        FLOW, "--agents", module("ag2_text"), "--script", str(script), "--json", "--db", ":memory:"
    )
    # ag2_text also maps security: a speaker is scripted or real, not both
    assert proc.returncode == 1
    assert "security: both scripted and given as agents" in proc.stderr
    # triage real (AG2 Agent, Handoff), security scripted, user's kickoff scripted
    only_triage = tmp_path / "triage_only.py"
    only_triage.write_text(
        "from ag2_handoff import triage\n"  # the module's folder is importable
        "AGENTS = {'triage': triage}\n"
    )
    (tmp_path / "ag2_handoff.py").write_text((AGENTS / "ag2_handoff.py").read_text())
    proc = flowc(
        FLOW, "--agents", str(only_triage), "--script", str(script), "--json", "--db", ":memory:"
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert speakers(out) == ["user", "triage", "security"]
    assert out["turns"][1]["routing"]["kind"] == "handoff"
    assert out["turns"][2]["routing"] == {"kind": "text"}
    assert out["close_reason"] == "secured"
    assert proc.stderr == ""  # nobody was asked at the terminal


def test_ag2_agent_next_to_an_async_callable_and_a_scripted_human(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("kickoff: My account was hacked\n")
    proc = flowc(FLOW, "--agents", module("mixed"), "--script", str(script), "--db", ":memory:")
    assert proc.returncode == 0, proc.stderr
    assert "[escalate: hacked] Escalating." in proc.stdout
    assert "3  security  Locked after: Escalating." in proc.stdout
    assert proc.stdout.splitlines()[-1] == 'closed: "secured" after 3 turns'


def test_the_run_is_in_the_wal_and_replays(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    proc = flowc(FLOW, "--agents", module("ag2_handoff"), "--db", db, stdin="help\n")
    assert proc.returncode == 0, proc.stderr
    log = subprocess.run(
        [sys.executable, "-m", "flowc", "log", "--db", db, "last"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert log.returncode == 0, log.stderr
    assert "[escalate: security review (suspicious login)] Escalating to security." in log.stdout
    assert 'closed: "secured" after 3 turns' in log.stdout
    replay = subprocess.run(
        [sys.executable, "-m", "flowc", "replay", "--db", db, "last"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert 'same close reason "secured"' in replay.stdout


def test_the_human_closing_stdin_stalls_the_run() -> None:
    proc = flowc(
        FLOW,
        "--agents",
        module("ag2_text"),
        "--json",
        "--db",
        ":memory:",
        stdin="I cannot log in\n",
    )
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert speakers(out) == ["user", "triage"]
    assert out["close_reason"] is None and out["stalled_on"] == "user"


# ── error cases: a clean message, exit 2, never a traceback ───────────────────


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "broken_import",
            "broken_import.py:3: cannot import it: ModuleNotFoundError: "
            "No module named 'flowc_no_such_module_anywhere'",
        ),
        ("undeclared", "undeclared.py: AGENTS names no speaker of "),
        (
            "not_an_agent",
            "not_an_agent.py: AGENTS['triage'] is a str: give an async callable "
            "taking a Turn, or an AG2 Agent",
        ),
        ("no_such_module", "no_such_module.py: no such file"),
    ],
)
def test_bad_agents_modules_exit_2_with_a_message(name: str, message: str) -> None:
    proc = flowc(FLOW, "--agents", module(name), "--db", ":memory:", stdin="hi\n")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("flowc run: error: ") and message in proc.stderr
    assert proc.stdout == ""
    if name == "undeclared":
        assert proc.stderr.rstrip().endswith(": billing (its speakers: user, triage, security)")


# ── in-process, through flowc.cli.main ────────────────────────────────────────


def run_main(
    args: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: str = "",
) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(["run", FLOW, *args, "--db", ":memory:"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_in_process_handoff_and_finish(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_main(
        ["--agents", module("ag2_handoff"), "--json"], capsys, monkeypatch, "hacked\n"
    )
    assert code == 0, err
    result = json.loads(out)
    assert speakers(result) == ["user", "triage", "security"]
    assert result["turns"][1]["routing"]["target"] == "security"
    code, out, err = run_main(
        ["--agents", module("ag2_finish"), "--json"], capsys, monkeypatch, "fine now\n"
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["turns"][1]["routing"]["kind"] == "finish"
    assert result["close_reason"] == "resolved"


def test_in_process_text_agent_and_scripted_human(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"kickoff": "hi", "script": {"user": ["more", "bye"]}}))
    code, out, err = run_main(
        ["--agents", module("ag2_text"), "--script", str(script), "--json"], capsys, monkeypatch
    )
    assert code == 0, err
    result = json.loads(out)
    assert speakers(result) == ["user", "triage"] * 3
    assert result["close_reason"] == "max_turns"
    assert err == ""


@pytest.mark.parametrize("name", ["broken_import", "undeclared", "not_an_agent"])
def test_in_process_errors_exit_2(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path_before = list(sys.path)
    code, out, err = run_main(["--agents", module(name)], capsys, monkeypatch, "hi\n")
    assert code == 2 and out == ""
    assert err.startswith(f"flowc run: error: {module(name)}")
    assert sys.path == path_before  # the module's folder was only on sys.path while importing


def test_syntax_error_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("AGENTS = {\n  'triage': lambda turn: 'hi'\n  'x': 1}\n")
    code, _, err = run_main(["--agents", str(bad)], capsys, monkeypatch)
    assert code == 2
    assert err.startswith(f"flowc run: error: {bad}:")
    assert "cannot import it: SyntaxError" in err


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "from ag2 import Agent\nAGENTS = {'triage': Agent('triage')}\n",
            "AGENTS['triage']: AG2 Agent 'triage' has no model config",
        ),
        (
            "async def f(turn, extra):\n    return 'x'\nAGENTS = {'triage': f}\n",
            "AGENTS['triage']: f must take one argument, the Turn",
        ),
        ("AGENTS = {1: print}\n", "AGENTS keys are speaker names, got 1"),
        ("AGENTS = [1]\n", "define AGENTS = {speaker name: async callable or AG2 Agent}"),
    ],
)
def test_unusable_values_are_refused_before_the_run(
    source: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(source)
    code, out, err = run_main(["--agents", str(bad)], capsys, monkeypatch, "hi\n")
    assert code == 2 and out == ""
    assert message in err and "user> " not in err


def test_a_plain_function_is_a_callable_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    mod = tmp_path / "sync.py"
    mod.write_text(
        "def triage(turn):\n    return 'echo: ' + turn.text\nAGENTS = {'triage': triage}\n"
    )
    code, out, err = run_main(["--agents", str(mod)], capsys, monkeypatch, "a\nb\nc\n")
    assert code == 0, err
    assert "2  triage    echo: a" in out and "6  triage    echo: c" in out

    # an object with an async __call__ is an async callable too
    mod.write_text(
        "class Triage:\n    async def __call__(self, turn):\n"
        "        return 'heard ' + turn.text\n"
        "AGENTS = {'triage': Triage()}\n"
    )
    code, out, err = run_main(["--agents", str(mod)], capsys, monkeypatch, "a\nb\nc\n")
    assert code == 0, err
    assert "2  triage    heard a" in out and "6  triage    heard c" in out


# ── what an AG2 Agent is shown: the same on flowc's hub as on AG2's ───────────


def test_an_ag2_agent_sees_the_conversation_as_on_ag2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = ["hi", "again", "bye"]
    code, out, err = run_main(
        ["--agents", module("ag2_history")], capsys, monkeypatch, "".join(f"{x}\n" for x in lines)
    )
    assert code == 0, err
    assert out.splitlines()[-1] == 'closed: "max_turns" after 6 turns'
    ours = re.findall(r"^\s*\d+  triage +(.*)$", out, re.MULTILINE)
    assert ours == [
        "saw: [user]: hi",
        "saw: [user]: hi, <mine>, [user]: again",
        "saw: [user]: hi, <mine>, [user]: again, <mine>, [user]: bye",
    ]
    assert asyncio.run(_bodies_on_ag2(lines)) == ours


def test_the_handed_off_agent_sees_the_handoff_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_main(
        ["--agents", module("ag2_history_handoff")], capsys, monkeypatch, "hi\n"
    )
    assert code == 0, err
    assert (
        "3  security  saw: [user]: hi, [triage]: [Handed off via escalate] security review "
        "(suspicious login) / Escalating to security."
    ) in out


async def _bodies_on_ag2(lines: list[str]) -> list[str]:
    """Run support.flow on AG2's own hub: the user a ``HumanClient`` saying ``lines``,
    triage the ``ag2_history`` Agent; return triage's packet bodies."""
    from ag2 import Agent
    from ag2.knowledge import MemoryKnowledgeStore
    from ag2.network import EV_PACKET, Hub, HubClient, LocalLink, Passport, Resume

    import flowc
    from flowc.ag2 import open_workflow
    from tests.runtime.agents.ag2_history import EchoHistoryConfig

    flow = flowc.compile_flow(Path(FLOW).read_text())
    hub = await Hub.open(MemoryKnowledgeStore(), ttl_sweep_interval=0)
    link = LocalLink(hub)
    user = await HubClient(link, hub=hub).register_human(Passport(name="user", kind="human"))
    clients: dict[str, Any] = {"user": user}
    for name in ("triage", "security"):
        clients[name] = await HubClient(link, hub=hub).register(
            Agent(name, config=EchoHistoryConfig()),
            Passport(name=name),
            Resume(),
            attach_plugin=False,
        )
    channel = await open_workflow(flow, clients)
    bodies: list[str] = []
    for line in lines:
        await user.send(channel.channel_id, line)
        for _ in range(500):
            packets = [
                e for e in await hub.read_wal(channel.channel_id) if e.event_type == EV_PACKET
            ]
            if len(packets) > len(bodies):
                bodies.append(packets[-1].event_data["body"])
                break
            await asyncio.sleep(0.01)
    await hub.close()
    return bodies


# ── docs/runtime.md shows what these tests run ───────────────────────────────


def _blocks(lang: str) -> list[str]:
    text = (ROOT / "docs" / "runtime.md").read_text()
    return re.findall(rf"^```{lang}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_the_docs_ag2_example_is_the_tested_one() -> None:
    flow_src = (AGENTS / "support.flow").read_text().split("\n", 1)[1]
    agents_src = (AGENTS / "ag2_handoff.py").read_text().split('"""\n\n', 1)[1]
    assert flow_src in _blocks("flow")
    assert agents_src in _blocks("python")
    shown = next(b for b in _blocks("console") if "--agents ag2_handoff.py" in b)
    said = shown.splitlines()[1].removeprefix("user> ")
    proc = flowc(FLOW, "--agents", module("ag2_handoff"), "--db", ":memory:", stdin=said + "\n")
    assert proc.returncode == 0, proc.stderr
    assert shown.splitlines()[2:] == proc.stdout.splitlines()
