"""Values `flowc migrate` works out of a Python file are bounded, and what it cannot work
out is reported, never dropped silently.

A string, f-string or list built from itself (``s = s + s`` n times) doubles at each line:
migrate refuses such a value while it builds it (past 1 MiB of text or 10,000 items) with an
M001 at the line that passes the bound, in time and memory proportional to the file (these
run under resource limits, in a child process). A ``system_message`` that cannot be read
(``open(...).read()``) is an M003 at it (a comment that changes no routing, dropped: the
translation still succeeds); a file nested too deeply for Python's parser is an
E001 at the statement; a JSON key given twice is refused at its place.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main
from tests.hostile.limits import run_limited

LIMITS = {"memory_mib": 768, "cpu_seconds": 20, "wall_seconds": 30.0, "output_mib": 16}

HEAD = 'import autogen\nllm_config = {"config_list": [{"model": "gpt-4o"}]}\n'
TAIL = (
    "groupchat = autogen.GroupChat(agents={agents}, messages=[], max_round=10,\n"
    "                              speaker_selection_method='round_robin')\n"
    "manager = autogen.GroupChatManager(groupchat=groupchat, llm_config=llm_config)\n"
    "a.initiate_chat(manager, message='hi')\n"
)


def _doubling(kind: str, times: int) -> tuple[str, int]:
    """A chat whose agent reads a value doubled ``times`` times; with the line of the first
    doubling past the bound."""
    lines = [HEAD]
    if kind == "list":
        lines.append(
            "l = [autogen.AssistantAgent(name='a', llm_config=llm_config), "
            "autogen.AssistantAgent(name='b', llm_config=llm_config)]\n"
        )
        lines += ["l = l + l\n"] * times
        lines.append("a = l[0]\n")
        return "".join(lines) + TAIL.format(agents="l"), 2 + 13 + 1  # 2 * 2**13 > 10,000
    step = {"concat": "s = s + s\n", "fstring": 's = f"{s}{s}"\n', "name": "s = s + s\n"}[kind]
    lines.append('s = "xx"\n')
    lines += [step] * times
    if kind == "name":
        lines.append("a = autogen.AssistantAgent(name=s, llm_config=llm_config)\n")
    else:
        lines.append(
            "a = autogen.AssistantAgent(name='a', system_message=s, llm_config=llm_config)\n"
        )
    lines.append("b = autogen.AssistantAgent(name='b', llm_config=llm_config)\n")
    return "".join(lines) + TAIL.format(agents="[a, b]"), 3 + 20  # 2 * 2**20 > 1 MiB


@pytest.mark.parametrize(
    ("kind", "times"),
    [("concat", 24), ("concat", 48), ("fstring", 40), ("name", 30), ("list", 60)],
)
def test_a_value_doubled_past_the_bound_is_refused_in_bounded_time(
    tmp_path: Path, kind: str, times: int
) -> None:
    text, line = _doubling(kind, times)
    path = tmp_path / "chat.py"
    path.write_text(text, encoding="utf-8")
    result = run_limited(["migrate", str(path), "--format", "json"], **LIMITS)
    assert not result.timed_out and not result.traceback, result.stderr[-2000:]
    assert result.cpu < 10 and result.peak_mib < 300, (result.cpu, result.peak_mib)
    # the output does not grow with the value: no more than the file itself and a little
    assert len(result.stdout) < len(text) + 4096
    findings = json.loads(result.stderr)
    bound = [f for f in findings if "is not worked out" in f["message"]]
    assert len(bound) == 1, findings
    if kind in ("concat", "fstring"):
        # the system_message past the bound is reported once: not also as "cannot be read"
        assert [f["message"] for f in findings if f["code"] == "M001"] == [bound[0]["message"]], (
            findings
        )
    assert bound[0]["code"] == "M001" and bound[0]["location"]["row"] == line
    assert ("10,000 items" if kind == "list" else "1 MiB of text") in bound[0]["message"]
    assert result.returncode == (2 if kind == "list" else 1)


def test_a_value_at_the_bound_is_carried_in_bounded_time(tmp_path: Path) -> None:
    text, _ = _doubling("concat", 19)  # 2 * 2**19 characters: 1 MiB, the most allowed
    path = tmp_path / "chat.py"
    path.write_text(text, encoding="utf-8")
    result = run_limited(["migrate", str(path), "--format", "json"], **LIMITS)
    assert not result.timed_out and not result.traceback, result.stderr[-2000:]
    assert result.returncode == 0, result.stderr[-2000:]
    assert "# " + "x" * (1 << 20) + "\n" in result.stdout
    # each line of the file is worked out once: no 2**19 steps
    assert result.cpu < 3, result.cpu


def _run(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[dict]]:
    code = main(["migrate", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, json.loads(err) if err.strip() else []


def test_a_system_message_that_cannot_be_read_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chat.py"
    path.write_text(
        HEAD + 'a = autogen.AssistantAgent(name="a", system_message=open("p.txt").read(), '
        "llm_config=llm_config)\n"
        + 'b = autogen.AssistantAgent(name="b", system_message="Reviews.", llm_config=llm_config)\n'
        + 'c = autogen.AssistantAgent(name="c", system_message=open("q.txt").read())\n'
        + TAIL.format(agents="[a, b]"),
        encoding="utf-8",
    )
    code, out, findings = _run(path, capsys)
    assert code == 0 and "# Reviews." in out
    # a prompt changes no routing: the speaking order is still stated
    assert 'scenario "classic speaking order' in out
    unread = [f for f in findings if "system_message" in f["message"]]
    # `c` takes no part in the chat: nothing is said about it
    assert len(unread) == 1, findings
    assert unread[0]["code"] == "M003" and "`a`" in unread[0]["message"]
    assert unread[0]["location"] == {"row": 3, "column": 53}


DEEP = 's = "a"' + ' + "a"' * 100_000 + "\n"


@pytest.mark.parametrize(
    "body",
    [
        DEEP,
        # in a branch of a compound statement: named at the statement's first line
        "if llm_config:\n    pass\nelse:\n    " + DEEP,
    ],
    ids=["top-level", "else-branch"],
)
def test_a_statement_nested_too_deeply_is_named(tmp_path: Path, body: str) -> None:
    path = tmp_path / "chat.py"
    path.write_text(HEAD + body + TAIL.format(agents="[a, b]"), encoding="utf-8")
    result = run_limited(["migrate", str(path), "--format", "json"], **LIMITS)
    assert not result.timed_out and not result.traceback, result.stderr[-2000:]
    assert result.returncode == 2 and result.stdout == ""
    (finding,) = json.loads(result.stderr)
    assert finding["code"] == "E001" and finding["location"] == {"row": 3, "column": 1}
    assert "line 3 is nested too deeply" in finding["message"]
    assert "RecursionError" not in finding["message"]


def test_a_json_key_given_twice_is_refused_at_its_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    team = {
        "provider": "autogen_agentchat.teams.RoundRobinGroupChat",
        "component_type": "team",
        "config": {
            "participants": [
                {
                    "provider": "autogen_agentchat.agents.AssistantAgent",
                    "component_type": "agent",
                    "config": {"name": "writer", "description": "Writes."},
                },
                {
                    "provider": "autogen_agentchat.agents.AssistantAgent",
                    "component_type": "agent",
                    "config": {"name": "critic", "description": "Reviews."},
                },
            ]
        },
    }
    text = json.dumps(team, indent=1).replace('"name": "critic"', '"name": "critic", "name": "x"')
    path = tmp_path / "team.json"
    path.write_text(text, encoding="utf-8")
    code, out, findings = _run(path, capsys)
    assert code == 2 and out == ""
    (finding,) = findings
    assert finding["code"] == "E001" and "given twice" in finding["message"]
    # (well-formed JSON that flowc refuses: not called invalid)
    assert "invalid JSON" not in finding["message"] and "give each key once" in finding["message"]
    assert "config.participants[1].config.name" in finding["message"]
    line = next(i for i, t in enumerate(text.splitlines(), 1) if '"name": "x"' in t)
    assert finding["location"]["row"] == line
