"""A name `flowc migrate` works out of a Python file holds at most 256 characters.

The translation repeats an agent's name in each rule that names it (and a tool's name, a
context key, in each line that uses it), where a prompt is written once: a name doubled
nineteen times (1 MiB, within the bound on free text) named by the speaker-transition rules
made megabytes of .flow out of a file under 1 KB. A name past the bound is an M001 at the expression
and the agent is migrated under its variable's name, so the output stays a small multiple
of the file (run under resource limits, in a child process). A long but usable name is
still carried.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.hostile.limits import Limited, run_limited

LIMITS = {"memory_mib": 768, "cpu_seconds": 20, "wall_seconds": 30.0, "output_mib": 4}


def _chat(name_lines: list[str], name: str) -> str:
    return (
        "import autogen\n"
        'llm_config = {"config_list": [{"model": "gpt-4o"}]}\n'
        + "".join(name_lines)
        + f"a = autogen.ConversableAgent(name={name}, llm_config=llm_config)\n"
        'b = autogen.ConversableAgent(name="b", llm_config=llm_config)\n'
        'c = autogen.ConversableAgent(name="c", llm_config=llm_config)\n'
        "groupchat = autogen.GroupChat(agents=[a, b, c], messages=[], max_round=10,\n"
        "    allowed_or_disallowed_speaker_transitions={a: [b, c], b: [a, c], c: [a, b]},\n"
        "    speaker_transitions_type='allowed')\n"
        "manager = autogen.GroupChatManager(groupchat=groupchat, llm_config=llm_config)\n"
        "a.initiate_chat(manager, message='hi')\n"
    )


def _migrate(tmp_path: Path, text: str) -> tuple[Limited, list[dict]]:
    path = tmp_path / "chat.py"
    path.write_text(text, encoding="utf-8")
    result = run_limited(["migrate", str(path), "--format", "json"], **LIMITS)
    assert not result.timed_out and not result.traceback, result.stderr[-2000:]
    return result, json.loads(result.stderr) if result.stderr.strip() else []


def test_a_doubled_agent_name_is_refused_and_the_output_stays_small(tmp_path: Path) -> None:
    text = _chat(['n = "ab"\n'] + ["n = n + n\n"] * 19, "n")  # 2 * 2**19: 1 MiB of name
    result, findings = _migrate(tmp_path, text)
    assert result.cpu < 5 and result.peak_mib < 300, (result.cpu, result.peak_mib)
    # the output is a small multiple of the file, not the name times each rule
    assert len(result.stdout) < 4 * len(text) + 4096, len(result.stdout)
    bound = [f for f in findings if "is not worked out" in f["message"]]
    assert len(bound) == 1, findings
    assert bound[0]["code"] == "M001"
    assert "a name of more than 256 characters" in bound[0]["message"]
    # at the expression read as the name: `name=n` on line 23
    assert bound[0]["location"] == {"row": 23, "column": 35}
    # the agent is migrated under its variable's name; nothing says "cannot be read"
    assert "speaker a\n" in result.stdout
    assert not [f for f in findings if "cannot be read" in f["message"]], findings


def test_a_long_literal_name_is_refused_alike(tmp_path: Path) -> None:
    result, findings = _migrate(tmp_path, _chat([], repr("x" * 257)))
    assert "x" * 257 not in result.stdout
    (bound,) = [f for f in findings if "is not worked out" in f["message"]]
    assert bound["code"] == "M001" and bound["location"]["row"] == 3


def test_a_long_but_usable_name_built_by_concatenation_migrates(tmp_path: Path) -> None:
    # 60 characters (59 and the `'x'` added at the call), within OpenAI's 64: built from
    # parts, as configs do
    lines = ['p = "research_assistant_"\n', "n = p + p\n", 'n = n + "for_the_quarterly_rep"\n']
    name = "research_assistant_" * 2 + "for_the_quarterly_rep"
    assert len(name) == 59
    result, findings = _migrate(tmp_path, _chat(lines, "n + 'x'"))
    assert result.returncode == 0, findings
    assert f"speaker {name}x\n" in result.stdout
    assert not [f for f in findings if f["code"] == "M001"], findings
    # at the bound exactly: carried
    result, findings = _migrate(tmp_path, _chat([], repr("y" * 256)))
    assert result.returncode == 0, findings
    assert "y" * 256 in result.stdout


def test_a_long_context_key_is_left_out_and_the_others_kept(tmp_path: Path) -> None:
    text = (
        "from autogen import ConversableAgent, LLMConfig\n"
        "from autogen.agentchat import initiate_group_chat\n"
        "from autogen.agentchat.group import ContextVariables\n"
        "from autogen.agentchat.group.patterns import AutoPattern\n"
        'cfg = LLMConfig(api_type="openai", model="gpt-4o")\n'
        'a = ConversableAgent(name="a", llm_config=cfg)\n'
        'b = ConversableAgent(name="b", llm_config=cfg)\n'
        f'ctx = ContextVariables(data={{{"k" * 300!r}: 1, "ok": 2}})\n'
        "pattern = AutoPattern(initial_agent=a, agents=[a, b], context_variables=ctx,\n"
        '    group_manager_args={"llm_config": cfg})\n'
        'initiate_group_chat(pattern=pattern, messages="hi", max_rounds=5)\n'
    )
    result, findings = _migrate(tmp_path, text)
    assert "k" * 257 not in result.stdout
    assert "context {\n  ok = 2,\n}" in result.stdout, result.stdout
    (bound,) = [f for f in findings if f["code"] == "M001"]
    assert "a name of more than 256 characters" in bound["message"]
    assert bound["location"]["row"] == 8
