"""Runtime contracts: real agents (async callables, AG2 `Agent`s), the workers' agents
and plugins' custom targets are held to the flow's declarations while a run goes.

A turn that breaks one is refused by default (the run stops open on that speaker,
exit 1, an error naming the agent, the tool and the declaration's file:line); under
``--contracts warn`` it goes through with a warning in the transcript, ``--json`` and
``flowc log``. Scripts are held by the same check before their run starts.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import flowc
from flowc.cli import main
from flowc.runtime import Finish, Handoff, Reply, ToolCall
from flowc.runtime.contracts import CONTRACT_MODES, Contract, reply_breach
from flowc.runtime.script import parse_script
from flowc.runtime.script_run import run_script
from flowc.runtime.target import RunTarget
from flowc.runtime.wal import MemoryStore
from tests.plugin_registry import remember_plugins

ROOT = Path(__file__).resolve().parents[2]
AGENTS = Path(__file__).resolve().parent / "agents"
APPROVE = str(AGENTS / "approve.flow")
KICKOFF = {"kickoff": "Review my draft", "script": {"user": ["Again"]}}

#: what the run says about the plain and the AG2 reviewer alike
BREACH = (
    '`reviewer` called `approve`, which sets approved = "yes", sets secret = 1, but the '
    f"flow declares that it sets approved = true ({APPROVE}:5:3: "
    "`tool approve sets approved = true`)"
)


@pytest.fixture
def kickoff(tmp_path: Path) -> str:
    path = tmp_path / "kickoff.json"
    path.write_text(json.dumps(KICKOFF))
    return str(path)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ── the acceptance case: `approve` writes approved = "yes" and secret = 1 ─────────


@pytest.mark.parametrize("agents", ["approve_breach", "ag2_approve_breach"])
def test_a_breaking_turn_is_refused_by_default_and_the_run_stays_open(
    agents: str, kickoff: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if agents.startswith("ag2"):
        pytest.importorskip("ag2.network")
    db = str(tmp_path / "runs.db")
    code, out, err = run(
        ["run", APPROVE, "--script", kickoff, "--agents", str(AGENTS / f"{agents}.py"), "--db", db],
        capsys,
    )
    assert code == 1, out + err
    assert "Traceback" not in err
    assert out.splitlines()[-1] == (
        "stalled: reviewer's turn was refused after 1 turn: it breaks the flow's declarations"
    )
    assert f"error: refused: {BREACH}\n" in err
    run_id = err.split("run ", 1)[1].split(" is open", 1)[0]
    assert (
        f"continue it with `flowc resume {run_id} --db {db} --script {kickoff} --agents "
        f"{AGENTS / agents}.py --contracts warn`"
    ) in err
    # nothing of the refused turn was written: the run waits for the reviewer
    code, out, _ = run(["log", run_id, "--db", db, "--json"], capsys)
    stored = json.loads(out)
    assert stored["close_reason"] is None and stored["next_speaker"] == "reviewer"
    assert [t["speaker"] for t in stored["turns"]] == ["user"]
    assert stored["context_vars"] == {}
    # --json says why, with the breach whole
    code, out, _ = run(
        [
            "resume",
            run_id,
            "--db",
            db,
            "--script",
            kickoff,
            "--agents",
            str(AGENTS / f"{agents}.py"),
            "--json",
        ],
        capsys,
    )
    doc = json.loads(out)
    assert code == 1 and doc["stalled_on"] == "reviewer" and doc["error"] == f"refused: {BREACH}"
    assert doc["refused"] == [
        {
            "speaker": "reviewer",
            "tool": "approve",
            "target": None,
            "declared_at": f"{APPROVE}:5:3",
            "message": BREACH,
        }
    ]
    # and `--contracts warn` continues it from there
    code, out, err = run(
        [
            "resume",
            run_id,
            "--db",
            db,
            "--script",
            kickoff,
            "--agents",
            str(AGENTS / f"{agents}.py"),
            "--contracts",
            "warn",
        ],
        capsys,
    )
    assert code == 0, out + err
    assert out.count(f"warning: {BREACH}") == 2
    assert out.splitlines()[-2:] == [
        'closed: "max_turns" after 4 turns',
        'context: {"approved": "yes", "secret": 1}',
    ]


@pytest.mark.parametrize("agents", ["approve_breach", "ag2_approve_breach"])
def test_warn_lets_the_turn_through_and_records_it_everywhere(
    agents: str, kickoff: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if agents.startswith("ag2"):
        pytest.importorskip("ag2.network")
    db = str(tmp_path / "runs.db")
    args = [
        "run",
        APPROVE,
        "--script",
        kickoff,
        "--agents",
        str(AGENTS / f"{agents}.py"),
        "--contracts",
        "warn",
        "--db",
        db,
    ]
    code, out, err = run(args, capsys)
    assert code == 0, out + err
    lines = out.splitlines()
    at = lines.index("  2  reviewer  Approved.")
    assert lines[at + 1 : at + 5] == [
        '              calls: approve(note="ok")',
        '              context: approved = "yes", secret = 1',
        f"              warning: {BREACH}",
        "              → user  (rule 3, line 11: when from reviewer then user)",
    ]
    warning = {
        "speaker": "reviewer",
        "tool": "approve",
        "target": None,
        "declared_at": f"{APPROVE}:5:3",
        "message": BREACH,
    }
    code, out, err = run([*args[:-2], "--db", ":memory:", "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["close_reason"] == "max_turns"
    assert [t.get("warnings") for t in doc["turns"]] == [None, [warning], None, [warning]]
    # `flowc log` shows the run as `run` printed it, in every form
    code, out, _ = run(["log", "last", "--db", db], capsys)
    assert out.count(f"warning: {BREACH}") == 2
    code, out, _ = run(["log", "last", "--db", db, "--json"], capsys)
    assert json.loads(out)["turns"][1]["warnings"] == [warning]
    code, out, _ = run(["log", "last", "--db", db, "--jsonl"], capsys)
    turns = [json.loads(line) for line in out.splitlines()][1:-1]
    assert [t.get("warnings") for t in turns] == [None, [warning], None, [warning]]
    # and the stored run re-folds to what was recorded
    code, out, _ = run(["replay", "last", "--db", db], capsys)
    assert code == 0 and 'same close reason "max_turns"' in out


def test_the_refusal_as_a_user_sees_it(kickoff: str) -> None:
    """In a process of its own, with the real AG2 Agent: exit 1, one error line."""
    pytest.importorskip("ag2.network")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowc",
            "run",
            APPROVE,
            "--script",
            kickoff,
            "--agents",
            str(AGENTS / "ag2_approve_breach.py"),
            "--db",
            ":memory:",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 1
    assert proc.stderr == f"error: refused: {BREACH}\n"  # in memory: nothing to resume
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowc",
            "run",
            APPROVE,
            "--script",
            kickoff,
            "--agents",
            str(AGENTS / "ag2_approve_breach.py"),
            "--db",
            ":memory:",
            "--contracts",
            "warn",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["turns"][1]["warnings"][0]["message"] == BREACH


def test_a_script_doing_the_same_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The script's call as it would run (the declared effect plus the script's own
    writes) goes through the same check."""
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            {
                **KICKOFF,
                "script": {
                    "user": ["Again"],
                    "reviewer": [
                        {
                            "tool": "approve",
                            "set": {"approved": "yes", "secret": 1},
                            "say": "Approved.",
                        }
                    ],
                },
            }
        )
    )
    code, out, err = run(["run", APPROVE, "--script", str(script), "--db", ":memory:"], capsys)
    assert code == 1 and out == ""
    assert err == f"{script}: error: script.reviewer[0]: {BREACH}\n"
    script.write_text(
        json.dumps(
            {
                **KICKOFF,
                "script": {
                    "user": ["Again"],
                    "reviewer": [
                        {"tool": "approve", "set": {"approved": True}, "say": "Approved."}
                    ],
                },
            }
        )
    )
    assert main(["run", APPROVE, "--script", str(script), "--db", ":memory:"]) == 0


# ── every kind of breach, with plain async agents ─────────────────────────────────

FLOW = """\
speaker user: human
speaker triage {
  tool escalate hands off to security
  tool resolve finishes "resolved"
  tool rate sets mood = "good" | sets mood = "bad"
  tool lookup
}
speaker security {
  tool lock
}
start user
max_turns 6
when tool lock then terminate "locked"
when from user then triage
when from triage then user
when from security then terminate "secured"
"""


def _target() -> RunTarget:
    return RunTarget.from_compiled(flowc.compile_flow(FLOW), filename="t.flow")


def _run(reply: Reply | str, mode: str = "enforce") -> Any:
    async def triage(turn: Any) -> Reply | str:
        return reply

    script = parse_script({"kickoff": "hi", "script": {"user": ["more"]}})
    return asyncio.run(
        run_script(
            _target(), script, store=MemoryStore(), agents={"triage": triage}, contracts=mode
        )
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            ToolCall("escalate", result=Handoff("user")),
            "`triage` called `escalate`, which hands off to user, but the flow declares that it "
            "hands off to security (t.flow:3:3: `tool escalate hands off to security`)",
        ),
        (
            ToolCall("resolve", result=Finish(reason="fixed")),
            '`triage` called `resolve`, which finishes "fixed", but the flow declares that it '
            'finishes "resolved" (t.flow:4:3: `tool resolve finishes "resolved"`)',
        ),
        (
            ToolCall("rate", set={"mood": "meh"}),
            '`triage` called `rate`, which sets mood = "meh", but the flow declares that it does one '
            'of: sets mood = "good" | sets mood = "bad" (t.flow:5:3: `tool rate sets mood = "good" | '
            'sets mood = "bad"`)',
        ),
        (
            ToolCall("rate"),
            "`triage` called `rate`, which does nothing, but the flow declares that it does one of: "
            'sets mood = "good" | sets mood = "bad" (t.flow:5:3: `tool rate sets mood = "good" | '
            'sets mood = "bad"`)',
        ),
        (
            ToolCall("lookup", delete=("mood",)),
            "`triage` called `lookup`, which clears mood, but the flow declares it with no effects "
            "(t.flow:6:3: `tool lookup`)",
        ),
        (
            ToolCall("search", set={"found": True}),
            "`triage` called `search`, a tool the flow does not declare for it (it declares "
            "escalate, resolve, rate, lookup), and sets found = true; declare it at t.flow:2:9, "
            "with what it does",
        ),
        (
            ToolCall("lock"),
            "`triage` called `lock`, a tool the flow does not declare for it (it declares "
            "escalate, resolve, rate, lookup), and a `tool lock` rule routes on it; declare it at "
            "t.flow:2:9, with what it does",
        ),
    ],
)
def test_each_kind_of_breach_is_refused_and_named(call: ToolCall, message: str) -> None:
    result = _run(Reply("On it.", (call,)))
    assert result.close_reason is None and result.stalled_on == "triage"
    assert result.error == f"refused: {message}"
    assert [t.speaker for t in result.turns] == ["user"]
    assert result.refused[0]["message"] == message
    warned = _run(Reply("On it.", (call,)), "warn")
    assert warned.turns[1].warnings[0]["message"] == message
    assert warned.error is None


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("escalate", {"reason": "x"}, result=Handoff("security", "login")),
        ToolCall("resolve", result=Finish("done", "resolved")),
        ToolCall("rate", set={"mood": "bad"}),
        ToolCall("lookup", {"q": "account"}),
        ToolCall("search", {"q": "docs"}),  # a helper tool no rule sees: nothing to hold
    ],
)
def test_turns_that_keep_the_declarations_run(call: ToolCall) -> None:
    result = _run(Reply("On it.", (call,)))
    assert result.error is None and not result.refused
    assert all(not t.warnings for t in result.turns)
    assert result.turns[1].tool_calls[0]["name"] == call.name


def test_one_reply_makes_one_call_the_flow_can_see() -> None:
    """Two calls that write context, hand off, finish or are routed on, in one reply: the
    analysis takes each turn as one call, so the reply is refused (named, with the calls),
    or under ``warn`` let through with the warning and routed on its first routing call.
    Helpers beside one such call (a declared tool with no effects that no rule routes on,
    or a tool the flow does not declare that does nothing) go through."""
    both = Reply(
        "On it.",
        (ToolCall("rate", set={"mood": "bad"}), ToolCall("escalate", result=Handoff("security"))),
    )
    message = (
        "`triage` (t.flow:2:9) made 2 calls in one reply that the flow can see (`rate`, "
        "`escalate`): flowc's analysis takes a turn as one call that writes context, hands off, "
        "finishes, is routed on or is read by a property, with calls beside it that do none of "
        "these; make them in separate replies (turn off parallel tool calls in the model config)"
    )
    result = _run(both)
    assert result.error == f"refused: {message}" and result.stalled_on == "triage"
    assert [t.speaker for t in result.turns] == ["user"] and result.context_vars == {}
    warned = _run(both, "warn")
    assert [w["message"] for w in warned.turns[1].warnings] == [message]
    assert warned.turns[1].routing["kind"] == "handoff" and warned.stalled_on == "security"
    # a finish then a handoff: the first routing call decides (under warn)
    first = _run(
        Reply("", (ToolCall("resolve", result=Finish(reason="resolved")), both.tool_calls[1])),
        "warn",
    )
    assert first.close_reason == "resolved"
    for helpers in (
        (ToolCall("lookup", {"q": "a"}), ToolCall("search"), both.tool_calls[0]),
        (both.tool_calls[1], ToolCall("lookup")),
    ):
        ok = _run(Reply("On it.", helpers))
        assert ok.error is None and not ok.refused, helpers
    # a script is held the same way, before its run starts
    from flowc.runtime.script import ScriptError

    script = parse_script(
        {
            "kickoff": "hi",
            "script": {
                "triage": [
                    {
                        "tools": [{"tool": "rate", "set": {"mood": "bad"}}, {"tool": "escalate"}],
                        "say": "x",
                    }
                ]
            },
        }
    )
    with pytest.raises(
        ScriptError, match=r"script\.triage\[0\]: `triage` \(t\.flow:2:9\) made 2 calls"
    ):
        asyncio.run(run_script(_target(), script, store=MemoryStore()))


def test_a_tool_a_property_names_is_a_call_the_flow_sees() -> None:
    """`lookup` does nothing, but a property reads `tool lookup`: beside another call the
    flow sees, its call would put two of the analysis's turns in one."""
    reply = Reply("", (ToolCall("lookup"), ToolCall("rate", set={"mood": "bad"})))
    plain = Contract.of(_target())
    assert plain.reply_breaches("triage", reply) == []
    watched = RunTarget.from_compiled(
        flowc.compile_flow(FLOW + "property quiet: never tool lookup\n"), filename="t.flow"
    )
    [breach] = Contract.of(watched).reply_breaches("triage", reply)
    assert breach.message.startswith(
        "`triage` (t.flow:2:9) made 2 calls in one reply that the flow can see (`lookup`, `rate`)"
    )


HELPER_FLOW = """\
speaker user: human
speaker bot {
  tool search
  tool refund sets refunded = true
}
start user
max_turns 4
when from user then bot
when from bot then user
property refund_is_tool: never context.refunded == true and previous context.refunded != true and not tool refund
"""


def test_a_property_reads_the_one_call_the_flow_sees_not_a_helper_before_it() -> None:
    """`check` proves the property (a turn that sets `refunded` calls `refund`); a reply
    that calls the helper `search` first and then `refund` is let through, and the live
    monitor reads its `tool` as `refund`, not as the helper: no violation."""
    from flowc.compiler.analysis import CheckOptions, check_source
    from flowc.source import SourceFile

    found = check_source(SourceFile("h.flow", HELPER_FLOW), CheckOptions())
    assert [d.code.id for d in found] == ["I306"]
    script = parse_script(
        {
            "kickoff": "refund please",
            "script": {
                "bot": [{"say": "done", "tools": [{"tool": "search"}, {"tool": "refund"}]}],
                "user": ["ok"],
            },
        }
    )
    target = RunTarget.from_compiled(flowc.compile_flow(HELPER_FLOW))
    result = asyncio.run(run_script(target, script, store=MemoryStore()))
    assert result.context_vars == {"refunded": True} and not result.property_violations


@pytest.mark.parametrize(
    ("extra", "calls"),
    [
        # a plain tool a property reads, beside a write
        (
            "property quiet: never tool lookup\n",
            [{"tool": "lookup"}, {"tool": "rate", "set": {"mood": "bad"}}],
        ),
        # a plain tool a rule routes on, beside a write
        (
            "when tool lookup then user priority -1\n",
            [{"tool": "lookup"}, {"tool": "rate", "set": {"mood": "bad"}}],
        ),
    ],
)
def test_a_script_turn_is_held_to_one_call_the_flow_sees(extra: str, calls: list[Any]) -> None:
    from flowc.runtime.script import ScriptError

    target = RunTarget.from_compiled(flowc.compile_flow(FLOW + extra), filename="t.flow")
    script = parse_script({"kickoff": "hi", "script": {"triage": [{"tools": calls, "say": "x"}]}})
    with pytest.raises(ScriptError) as err:
        asyncio.run(run_script(target, script, store=MemoryStore()))
    assert str(err.value).startswith(
        "script.triage[0]: `triage` (t.flow:2:9) made 2 calls in one reply that the flow can see "
        "(`lookup`, `rate`)"
    )
    assert str(err.value).endswith("do none of these; make them separate turns of the script")
    # without the property or the rule, `lookup` is a helper beside the one call
    plain = RunTarget.from_compiled(flowc.compile_flow(FLOW), filename="t.flow")
    assert asyncio.run(run_script(plain, script, store=MemoryStore())).error is None


def test_an_undeclared_tool_a_property_reads_is_refused_and_the_same_call_twice_is_one() -> None:
    contract = Contract.of(
        RunTarget.from_compiled(
            flowc.compile_flow(FLOW + "property calm: never tool escalate\n"), filename="t.flow"
        )
    )
    [breach] = contract.reply_breaches("security", Reply("", (ToolCall("escalate"),)))
    assert breach.message == (
        "`security` called `escalate`, a tool the flow does not declare for it (it declares "
        "lock), and a property reads `tool escalate`; declare it at t.flow:8:9, with what it does"
    )
    # the same call twice is one call as the flow sees it; two different ones are two
    once = ToolCall("rate", set={"mood": "bad"})
    assert contract.reply_breaches("triage", Reply("", (once, once))) == []
    other = ToolCall("rate", set={"mood": "good"})
    [breach] = contract.reply_breaches("triage", Reply("", (once, other)))
    assert "(`rate` 2 times, not all doing the same)" in breach.message
    # what the run records tells two calls apart: a value as JSON (1 is not true), a
    # finish's summary, a hand-off's reason, the reason a routing record takes from args
    for a, b in (
        (ToolCall("rate", set={"mood": 1}), ToolCall("rate", set={"mood": True})),
        (
            ToolCall("resolve", result=Finish("A", "resolved")),
            ToolCall("resolve", result=Finish("B", "resolved")),
        ),
        (
            ToolCall("escalate", result=Handoff("security", "r1")),
            ToolCall("escalate", result=Handoff("security", "r2")),
        ),
        (
            ToolCall("escalate", {"reason": "x"}, result=Handoff("security")),
            ToolCall("escalate", {"reason": "y"}, result=Handoff("security")),
        ),
    ):
        assert reply_breach("a", (a, b), names={}, seen=frozenset()) is not None, (a, b)
    # but not the order of one call's writes
    ab = ToolCall("t", set={"k": "v", "seen": 1}, delete=("x", "y"))
    ba = ToolCall("t", set={"seen": 1, "k": "v"}, delete=("y", "x"))
    assert reply_breach("a", (ab, ba), names={}, seen=frozenset()) is None
    # an agent's keys may be anything: told apart, never a crash
    odd = (ToolCall("x", delete=(None, None)), ToolCall("x", set={1: 2, "k": None}))  # type: ignore[dict-item, arg-type]
    assert reply_breach("a", odd, names={}, seen=frozenset()) is not None


def test_what_check_proves_holds_for_every_reply_the_contract_lets_through() -> None:
    """Why the rule: `check` takes a turn as one call, and proves here that no run
    terminates within `max_turns 3` (W212: x and y take two of bot's turns). A reply that
    calls both tools would close the run "both" on turn 2: it is refused (script and agent
    alike); only `--contracts warn` lets it through, and then says so on the turn."""
    from flowc.compiler.analysis import CheckOptions, check_source
    from flowc.runtime.script import ScriptError
    from flowc.source import SourceFile

    text = (
        "speaker user: human\nspeaker bot {\n  tool a sets x = true\n  tool b sets y = true\n}\n"
        "start user\nmax_turns 3\n"
        'when context.x == true and context.y == true then terminate "both"\n'
        "when from user then bot\nwhen from bot then user\n"
    )
    assert "W212" in {d.code.id for d in check_source(SourceFile("two.flow", text), CheckOptions())}
    target = RunTarget.from_compiled(flowc.compile_flow(text))
    both = Reply("x and y", (ToolCall("a", set={"x": True}), ToolCall("b", set={"y": True})))
    script = parse_script(
        {"kickoff": "go", "script": {"bot": [{"tools": [{"tool": "a"}, {"tool": "b"}]}]}}
    )
    with pytest.raises(ScriptError, match="made 2 calls in one reply"):
        asyncio.run(run_script(target, script, store=MemoryStore()))

    async def bot(turn: Any) -> Reply:
        return both

    def run_with(mode: str) -> Any:
        kickoff = parse_script({"kickoff": "go", "script": {"user": ["again"]}})
        return asyncio.run(
            run_script(target, kickoff, store=MemoryStore(), agents={"bot": bot}, contracts=mode)
        )

    refused = run_with("enforce")
    assert refused.close_reason is None and refused.refused and refused.turn_count == 1
    warned = run_with("warn")
    assert (warned.close_reason, warned.turn_count) == ("both", 2)
    assert "made 2 calls in one reply" in warned.turns[1].warnings[0]["message"]


def test_a_bound_speakers_agent_id_is_the_speaker_it_names() -> None:
    """With ``--bind``, a handoff names the agent id; the declaration names the speaker."""
    target = RunTarget.from_compiled(
        flowc.compile_flow(FLOW, bindings={"security": "agent-7", "triage": "agent-3"})
    )
    contract = Contract.of(target)
    assert (
        contract.reply_breaches(
            "agent-3", Reply("", (ToolCall("escalate", result=Handoff("agent-7")),))
        )
        == []
    )
    assert [
        b.speaker
        for b in contract.reply_breaches(
            "agent-3", Reply("", (ToolCall("escalate", result=Handoff("user")),))
        )
    ] == ["triage"]


def test_the_modes_of_the_option_are_the_runtimes() -> None:
    from flowc.commands.run_options import CONTRACTS

    assert CONTRACTS == CONTRACT_MODES


TWO_SEEN = (
    "`reviewer` ({flow}:4:9) made 2 calls in one reply that the flow can see (`note`, "
    "`approve`): flowc's analysis takes a turn as one call that writes context, hands off, "
    "finishes, is routed on or is read by a property, with calls beside it that do none of "
    "these; make them in separate replies (turn off parallel tool calls in the model config)"
)


@pytest.mark.parametrize("mode", ["enforce", "warn"])
def test_an_ag2_agent_calling_two_declared_tools_in_one_turn(
    mode: str, tmp_path: Path, kickoff: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two calls the flow sees in one reply are refused (the analysis takes a turn as one
    call), or under `warn` let through with that one warning: each AG2 tool's
    `set_context` writes are its own call's, so neither call breaks its own declaration
    (folded onto the first call, `note` would write `approved` too)."""
    pytest.importorskip("ag2.network")
    flow = tmp_path / "two.flow"
    flow.write_text(
        Path(APPROVE)
        .read_text()
        .replace(
            "  tool approve sets approved = true\n",
            "  tool note sets noted = true\n  tool approve sets approved = true\n",
        )
    )
    code, out, err = run(
        [
            "run",
            str(flow),
            "--script",
            kickoff,
            "--agents",
            str(AGENTS / "ag2_two_tools.py"),
            "--db",
            ":memory:",
            "--json",
            "--contracts",
            mode,
        ],
        capsys,
    )
    doc = json.loads(out)
    if mode == "enforce":
        assert code == 1, out + err
        assert doc["close_reason"] is None and doc["stalled_on"] == "reviewer"
        assert [b["message"] for b in doc["refused"]] == [TWO_SEEN.format(flow=flow)]
        assert doc["context_vars"] == {}
        return
    assert code == 0, out + err
    assert doc["close_reason"] == "approved"
    assert doc["context_vars"] == {"approved": True, "noted": True}
    [turn] = [t for t in doc["turns"] if t["speaker"] == "reviewer"]
    assert [w["message"] for w in turn["warnings"]] == [TWO_SEEN.format(flow=flow)]


# ── the workers' agents ───────────────────────────────────────────────────────────


@pytest.mark.parametrize(("mode", "event"), [("enforce", "stalled"), ("warn", "closed")])
def test_a_workers_agents_are_held_too(mode: str, event: str) -> None:
    from flowc.runtime.worker import Worker, submit_run

    async def reviewer(turn: Any) -> Reply:
        return Reply("Approved.", (ToolCall("approve", set={"approved": "yes", "secret": 1}),))

    target = RunTarget.from_compiled(
        flowc.compile_flow(Path(APPROVE).read_text()), filename=APPROVE
    )
    store = MemoryStore()
    events: list[tuple[str, str]] = []

    async def serve() -> None:
        await submit_run(store, target, KICKOFF)
        worker = Worker(
            store,
            agents={"reviewer": reviewer},
            poll_seconds=0.01,
            contracts=mode,
            on_event=lambda what, _, detail: events.append((what, detail)),
        )
        task = asyncio.ensure_future(worker.serve())
        while not any(what in ("stalled", "closed") for what, _ in events):
            await asyncio.sleep(0.01)
        worker.stop()
        await task

    asyncio.run(serve())
    done = [(what, detail) for what, detail in events if what in ("stalled", "closed")]
    assert done[0][0] == event
    if mode == "enforce":
        assert done[0][1] == f"on reviewer: refused: {BREACH}"


def test_flowc_worker_takes_the_option(tmp_path: Path, kickoff: str) -> None:
    """`flowc worker --contracts`: refused turns park the run, `warn` lets them through."""
    from tests.runtime.worker_harness import start_worker, stop_worker, submit

    agents = str(AGENTS / "approve_breach.py")
    for mode, want in (("enforce", "stalled"), ("warn", "closed")):
        db = str(tmp_path / f"{mode}.db")
        (run_id,) = submit(db, Path(APPROVE), Path(kickoff), 1)
        log = tmp_path / f"{mode}.log"
        proc = start_worker(db, log, "--agents", agents, "--contracts", mode)
        try:
            deadline = time.monotonic() + 60
            while f"{want} {run_id}" not in (log.read_text() if log.exists() else ""):
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
        finally:
            stop_worker(proc)
        line = next(x for x in log.read_text().splitlines() if x.startswith(want))
        assert line == (
            f"stalled {run_id} on reviewer: refused: {BREACH}"
            if mode == "enforce"
            else f'closed {run_id} "max_turns" after 4 turns'
        )


# ── custom targets ────────────────────────────────────────────────────────────────

TARGET_FLOW = """\
speaker user: human
speaker writer
speaker reviewer
target pick() -> writer | reviewer
max_turns 4
when from user then pick()
when from writer then terminate "written"
when from reviewer then terminate "reviewed"

scenario "the pick goes to a writer or a reviewer" {
  user: "hi"
  expect next reviewer
}
"""

TARGET_PLUGIN = """\
from typing import Any, ClassVar

import attrs

import flowc
from flowc.runtime import TransitionDecision


@flowc.register_target
@attrs.frozen
class Pick:
    name: ClassVar[str] = "pick"

    def resolve(self, state: Any, envelope: Any) -> TransitionDecision:
        return TransitionDecision({choice!r})
"""

TARGET_BREACH = (
    "after `user`'s turn, custom target `pick` (rule 1) chose `user`, which its "
    "declaration does not list (flows.flow:4:1: `target pick(...) -> writer | "
    "reviewer`)"
)


@pytest.fixture
def target_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    restore = remember_plugins()
    modules = set(sys.modules)
    (tmp_path / "flows.flow").write_text(TARGET_FLOW)
    (tmp_path / "to_user.py").write_text(TARGET_PLUGIN.format(choice="user"))
    (tmp_path / "to_reviewer.py").write_text(TARGET_PLUGIN.format(choice="reviewer"))
    (tmp_path / "s.json").write_text(
        json.dumps({"kickoff": "hi", "script": {"user": ["again"], "reviewer": ["ok"]}})
    )
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    restore()
    for name in set(sys.modules) - modules:
        if name.startswith("flowc_plugin_"):
            del sys.modules[name]


def test_a_custom_target_outside_its_declaration_is_refused(
    target_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "flows.flow", "--script", "s.json", "--plugin", "to_user.py"]
    code, out, err = run([*args, "--db", "runs.db"], capsys)
    assert code == 1, out + err
    assert out.splitlines()[-1] == (
        "stalled: user's turn was refused after 0 turns: it breaks the flow's declarations"
    )
    assert f"error: refused: {TARGET_BREACH}\n" in err
    code, out, err = run([*args, "--db", ":memory:", "--contracts", "warn", "--json"], capsys)
    doc = json.loads(out)
    assert doc["turns"][0]["warnings"] == [
        {
            "speaker": "user",
            "tool": None,
            "target": "pick",
            "declared_at": "flows.flow:4:1",
            "message": TARGET_BREACH,
        }
    ]
    assert doc["turns"][0]["next_speaker"] == "user"
    # a target that keeps its declaration runs as before
    code, out, err = run(
        [
            "run",
            "flows.flow",
            "--script",
            "s.json",
            "--plugin",
            "to_reviewer.py",
            "--db",
            ":memory:",
        ],
        capsys,
    )
    assert code == 0 and 'closed: "reviewed" after 2 turns' in out


def test_a_scenario_fails_where_a_custom_target_breaks_its_declaration(
    target_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["test", "flows.flow", "--plugin", "to_user.py"], capsys)
    assert code == 1
    assert f"turn 1 (line 11): refused: {TARGET_BREACH}" in out
    code, out, _ = run(["test", "flows.flow", "--plugin", "to_reviewer.py"], capsys)
    assert code == 0, out


def test_a_resumed_run_keeps_the_declarations_places(target_project: Path) -> None:
    """A later process (resume, a worker) holds the run to the declarations stored with
    it, and names where they are written."""
    flowc.load_plugins("to_reviewer.py")
    target = RunTarget.from_compiled(flowc.compile_flow(TARGET_FLOW), filename="f.flow")
    assert target.custom_targets == {"pick": (("writer", "reviewer"), "f.flow:4:1")}
    from flowc.runtime.adapters.base import ChannelMetadata
    from flowc.runtime.worker import submit_run

    store = MemoryStore()
    run_id = asyncio.run(submit_run(store, target, {"kickoff": "hi"}))
    opened = next(iter(store.read(run_id)))
    again = RunTarget.from_metadata(ChannelMetadata.from_dict(opened.event_data["metadata"]))
    assert again.custom_targets == target.custom_targets
    assert again.declared_at == target.declared_at and again.tool_at == target.tool_at
    assert Contract.of(again).targets == Contract.of(target).targets


def test_stdin_is_not_read_for_a_refused_turn(
    kickoff: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code, _, err = run(
        [
            "run",
            APPROVE,
            "--script",
            kickoff,
            "--agents",
            str(AGENTS / "approve_breach.py"),
            "--db",
            ":memory:",
        ],
        capsys,
    )
    assert code == 1 and "refused" in err
