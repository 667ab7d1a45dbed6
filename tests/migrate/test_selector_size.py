"""A SelectorGroupChat without repeats keeps a selector speaker per previous speaker while
those selectors stay small, whatever the number of participants.

Each such selector lists every other participant (a tool and its comment) and repeats the
team's ``selector_prompt``: what they write grows with the square of the team. The bound
is on their size (:func:`~flowc.migrate.agentchat.selectors_size`, at most
:data:`~flowc.migrate.agentchat.MAX_SELECTOR_BYTES`), not on the number of participants (it
was 32): a team of many short names keeps the exact translation, and past the bound one
selector speaker keeps the output linear in the input.
"""

from __future__ import annotations

import json
from typing import Any

import flowc.migrate.agentchat as agentchat
from flowc.migrate import MigrateResult, migrate_source
from flowc.source import SourceFile

AGENT = "autogen_agentchat.agents.AssistantAgent"
CAP = {
    "provider": "autogen_agentchat.conditions.MaxMessageTermination",
    "config": {"max_messages": 6},
}


def _migrate(names: list[str], **config: Any) -> MigrateResult:
    team = {
        "provider": "autogen_agentchat.teams.SelectorGroupChat",
        "component_type": "team",
        "config": {
            "participants": [{"provider": AGENT, "config": {"name": x}} for x in names],
            "termination_condition": CAP,
            **config,
        },
    }
    return migrate_source(SourceFile("team.json", json.dumps(team)))


def _crowded(result: MigrateResult) -> list[str]:
    return [d.message for d in result.findings if "per previous speaker" in d.message]


def test_a_hundred_short_names_keep_a_selector_per_previous_speaker() -> None:
    names = [f"a{i}" for i in range(100)]
    result = _migrate(names)
    assert result.text is not None and not _crowded(result)
    assert "speaker selector_after_a99 {" in result.text
    assert "when from a0 then selector_after_a0" in " ".join(result.text.split())
    # the exact translation of the largest such team stays about a megabyte
    assert len(result.text.encode()) < 2 * agentchat.MAX_SELECTOR_BYTES


def test_the_estimate_follows_the_selectors_written() -> None:
    # (the estimate is what bounds them: it must not be far from what is written)
    for names in ([f"a{i}" for i in range(60)], [f"{i:02}" + "z" * 200 for i in range(30)]):
        result = _migrate(names)
        assert result.text is not None and not _crowded(result)
        written = len(result.text[result.text.index("speaker selector_after_") :].encode())
        assert 0.8 < agentchat.selectors_size(names, "") / written < 1.2, (
            agentchat.selectors_size(names, ""),
            written,
        )


def test_fifty_long_names_are_past_the_bound_and_get_one_selector() -> None:
    names = [f"{i:02}" + "z" * 253 for i in range(50)]
    assert agentchat.selectors_size(names, "") > agentchat.MAX_SELECTOR_BYTES
    result = _migrate(names)
    assert result.text is not None and "selector_after_" not in result.text
    assert _crowded(result) == [
        "`allow_repeated_speaker` is false (AgentChat's default), but with 50 participants one"
        " selector speaker per previous speaker would name every participant once per other"
        " participant, in about 1.4 MiB of selector speakers (such selectors are written only"
        " up to 1 MiB): the selector speaker `selector` keeps every participant a candidate,"
        " the previous speaker included"
    ]


def test_a_prompt_of_one_long_word_is_written_once_not_once_per_participant() -> None:
    # each selector repeats the prompt in its comment, cut to three lines: a word longer
    # than that is written whole, and ten selectors would write 2 MB of a 200 KB prompt
    prompt = "p" * 200_000
    result = _migrate([f"a{i}" for i in range(10)], selector_prompt=prompt)
    assert result.text is not None and "selector_after_" not in result.text
    assert result.text.count(prompt) == 1
    assert len(result.text.encode()) < len(prompt) + 100_000
    assert len(_crowded(result)) == 1
    # a prompt of words is cut in each comment: the selectors stay
    words = _migrate([f"a{i}" for i in range(10)], selector_prompt="Pick one. " * 20_000)
    assert words.text is not None and not _crowded(words)
    assert "speaker selector_after_a9 {" in words.text
