"""decompile: graphs built with AG2's own API come back as readable flows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flowc import FlowError, compile_flow, decompile
from flowc.cli import main


def graph(
    transitions: list[dict[str, Any]], default: dict[str, Any] | None = None, **kw: Any
) -> dict[str, Any]:
    return {
        "initial_speaker": kw.get("initial_speaker", "user"),
        "transitions": transitions,
        "default_target": default or {"name": "terminate", "args": {"reason": "after_work"}},
        "max_turns": kw.get("max_turns"),
    }


def rule(when: dict[str, Any], then: dict[str, Any], priority: int = 0) -> dict[str, Any]:
    return {"when": when, "then": then, "priority": priority}


FROM_USER = {"name": "from_speaker", "args": {"agent_id": "user"}}
TO_BOT = {"name": "agent", "args": {"agent_id": "bot"}}


def test_explicit_rules_priorities_and_composites() -> None:
    g = graph(
        [
            rule(
                {
                    "name": "not",
                    "args": {
                        "condition": {"name": "context_equals", "args": {"key": "k", "value": 1}}
                    },
                },
                TO_BOT,
                -5,
            ),
            rule(
                {
                    "name": "all_of",
                    "args": {
                        "conditions": [
                            FROM_USER,
                            {"name": "tool_called", "args": {"tool_name": "go"}},
                        ]
                    },
                },
                {"name": "stay", "args": {}},
            ),
            rule({"name": "always", "args": {}}, {"name": "revert_to_initiator", "args": {}}, 3),
        ],
        {"name": "round_robin", "args": {}},
        max_turns=9,
    )
    text = " ".join(decompile(g).split())
    assert "when context.k != 1 then bot priority -5" in text
    assert "when from user and tool go then stay" in text
    assert "when always then initiator priority 3" in text
    assert "otherwise next" in text
    assert compile_flow(decompile(g)).graph_dict == g


def test_custom_conditions_and_targets_are_declared_with_inferred_types() -> None:
    g = graph(
        [
            rule(
                {"name": "score_above", "args": {"threshold": 3, "label": "x"}},
                {"name": "pick_reviewer", "args": {"pool": ["bot"]}},
            )
        ]
    )
    g["transitions"].append(rule(FROM_USER, TO_BOT))
    text = decompile(g)
    assert "condition score_above(threshold: int, label: string)" in text
    assert "target pick_reviewer(pool: list)" in text
    assert compile_flow(text).graph_dict == g


def test_keyword_and_odd_ids_are_backquoted() -> None:
    g = graph(
        [
            rule(
                {"name": "from_speaker", "args": {"agent_id": "next"}},
                {"name": "agent", "args": {"agent_id": "agent 7f3a"}},
            )
        ],
        initial_speaker="next",
    )
    text = decompile(g)
    assert "when from `next` then `agent 7f3a`" in text
    assert compile_flow(text).graph_dict == g


def test_top_level_any_of_is_written_as_an_or() -> None:
    g = graph([rule({"name": "any_of", "args": {"conditions": [FROM_USER, FROM_USER]}}, TO_BOT)])
    text = decompile(g)
    assert "when from user, user then bot" in text
    assert compile_flow(text).graph_dict == graph(
        [rule(FROM_USER, TO_BOT), rule(FROM_USER, TO_BOT)]
    )


def test_unrepresentable_name_is_refused() -> None:
    g = graph([rule(FROM_USER, {"name": "agent", "args": {"agent_id": "a`b"}})])
    with pytest.raises(FlowError) as err:
        decompile(g)
    assert "cannot be written" in err.value.diagnostics[0].message


def test_knobs_keep_context_vars() -> None:
    knobs = {"graph": graph([rule(FROM_USER, TO_BOT)]), "context_vars": {"level": 0, "tags": ["a"]}}
    text = decompile(knobs)
    assert compile_flow(text).knobs == knobs


# ── what a graph does not carry ───────────────────────────────────────────────

NEXT = """\
speaker user: human
speakers a, b
start user
when from user then a
when from a then next
"""


def test_decompile_says_which_speakers_it_cannot_see(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`b` is reached only through `next`: a graph does not name it."""
    graph = str(tmp_path / "next.json")
    Path(graph).write_text(compile_flow(NEXT).to_json(), encoding="utf-8")
    assert main(["decompile", graph]) == 0
    captured = capsys.readouterr()
    assert "speaker b" not in captured.out
    assert (
        "# Not in the graph: graph.transitions[1].then: `next` goes round the channel's participants"
        in captured.out
    )
    assert captured.err.startswith(
        f"{graph}: warning: graph.transitions[1].then: `next` goes round"
    )
    assert "--participants" in captured.err
    assert main(["decompile", graph, "--participants", "user,a,b"]) == 0
    captured = capsys.readouterr()
    assert (
        "speaker b" in captured.out
        and "Not in the graph" not in captured.out
        and captured.err == ""
    )


def test_decompile_says_it_cannot_see_the_initiator(capsys: pytest.CaptureFixture[str]) -> None:
    flow = compile_flow(
        "speakers u, a, b\nstart u\ninitiator a\nwhen from u then b\nwhen from b then initiator\n"
    )
    text = decompile(flow.knobs)
    assert "`initiator` routes back to the channel's creator" in text and "initiator a" not in text
    text = decompile(flow.knobs, initiator="a")
    assert "initiator a" in text and "Not in the graph" not in text
    assert compile_flow(text).initiator == "a"


def test_an_initiator_outside_the_participants_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in --initiator would add a speaker that `next` then goes round."""
    from flowc.cli import main

    graph = tmp_path / "g.json"
    graph.write_text(
        '{"initial_speaker": "user", "transitions": [], "default_target": '
        '{"name": "round_robin", "args": {}}, "max_turns": 4}'
    )
    assert (
        main(["decompile", str(graph), "--participants", "user,bot", "--initiator", "nobdy"]) == 2
    )
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "flowc decompile: error: --initiator nobdy is not one of --participants "
        "(user, bot): name one of them\n"
    )
