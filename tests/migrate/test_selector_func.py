"""AgentChat ``SelectorGroupChat(selector_func=, candidate_func=)`` read statically and lowered
to rules (:mod:`flowc.migrate.selectfn`, AgentChat dialect;
:class:`flowc.migrate.agentchat_selector.SelectorFunctions`).

The corpus cases ``agentchat_selector_*.py`` cover the three outcomes end to end (exact and
recorded with the real package, a ``None`` fall-through with candidates, an unrecognisable
function); these tests pin each recognised shape and each refusal.
"""

from __future__ import annotations

import ast
import doctest

import pytest

from flowc.dsl.formatter import format_condition
from flowc.migrate import migrate_source, selectfn
from flowc.migrate.selectfn import Unsupported, lower_selection
from flowc.source import SourceFile

NAMES = {"a": "a", "b": "b", "c": "c", "user": "user"}


def _name(e: ast.expr) -> str | None:
    if isinstance(e, ast.Constant) and isinstance(e.value, str):
        return NAMES.get(e.value)
    if isinstance(e, ast.Attribute) and e.attr == "name" and isinstance(e.value, ast.Name):
        return NAMES.get(e.value.id)
    return None


def lower(code: str) -> list[tuple[str, str, str | None]]:
    """(source, guards, returned) for the first def or lambda of ``code``."""
    tree = ast.parse(code)
    node = tree.body[0]
    fn = node if isinstance(node, ast.FunctionDef) else node.value  # type: ignore[attr-defined]
    out = lower_selection(fn, ["user", "a", "b", "c"], _name, dialect="agentchat")
    return [
        (
            o.source,
            " and ".join(format_condition(g) for g in o.guards),
            ast.unparse(o.returned) if o.returned is not None else None,
        )
        for o in out
    ]


def test_selectfn_doctests() -> None:
    assert doctest.testmod(selectfn).failed == 0


def test_if_elif_chain_on_the_source_with_names_and_agent_names() -> None:
    got = lower(
        "def f(messages):\n"
        "    if messages[-1].source == 'user':\n        return a.name\n"
        "    elif messages[-1].source == a.name:\n        return 'b'\n"
        "    return None\n"
    )
    assert got == [("user", "", "a.name"), ("a", "", "'b'"), ("b", "", None), ("c", "", None)]


def test_not_equal_membership_and_reversed_comparisons() -> None:
    assert lower("x = lambda m: 'a' if m[-1].source != 'a' else None") == [
        ("user", "", "'a'"),
        ("b", "", "'a'"),
        ("c", "", "'a'"),
        ("a", "", None),
    ]
    assert lower("def f(m):\n    if m[-1].source in ('b', c.name):\n        return 'a'\n")[:2] == [
        ("b", "", "'a'"),
        ("c", "", "'a'"),
    ]
    assert lower("def f(m):\n    if b.name == m[-1].source:\n        return 'c'\n    return 'a'\n")[
        0
    ] == ("b", "", "'c'")


@pytest.mark.parametrize(
    ("text", "cond"),
    [
        ("m[-1].to_model_text()", 'text_contains(text = "DONE")'),
        ("m[-1].content", 'text_contains(text = "DONE")'),
        ("m[-1].to_text()", 'text_contains(text = "DONE")'),
        ("last.content", 'text_contains(text = "DONE")'),
    ],
)
def test_text_of_the_last_message(text: str, cond: str) -> None:
    got = lower(
        f"def f(m):\n    last = m[-1]\n    if m[-1].source == 'a':\n"
        f"        if 'DONE' in {text}:\n            return 'c'\n        return 'b'\n    return 'a'\n"
    )
    assert got[0] == ("a", cond, "'c'")
    assert got[1] == ("a", "", "'b'")


def test_speaker_and_text_in_one_test_split() -> None:
    got = lower(
        "def f(m):\n    if m[-1].source == 'b' and 'REVISE' in m[-1].content:\n"
        "        return 'a'\n    return 'c'\n"
    )
    assert ("b", 'text_contains(text = "REVISE")', "'a'") in got
    assert ("b", "", "'c'") in got
    assert ("a", "", "'c'") in got
    assert not any(s == "a" and g for s, g, _ in got)


@pytest.mark.parametrize(
    ("test", "cond"),
    [
        ("len(m) <= 3", "turn_count_at_most(`turns` = 3)"),
        ("len(m) == 1", "turn_count_at_most(`turns` = 1)"),
        ("len(m) > 4", "not turn_count_at_most(`turns` = 4)"),
        (
            "len(m) == 1 or m[-1].to_text() == 'Incorrect!'",
            'turn_count_at_most(`turns` = 1) or text_matches(pattern = "\\\\AIncorrect!\\\\Z")',
        ),
    ],
)
def test_turn_count_tests(test: str, cond: str) -> None:
    got = lower(f"def f(m):\n    if {test}:\n        return 'a'\n    return None\n")
    assert got[0] == ("user", cond, "'a'")


def test_equal_to_a_later_turn_is_exactly_that_turn() -> None:
    got = lower("def f(m):\n    if len(m) == 3:\n        return 'a'\n")
    assert got[0][1] == "turn_count_at_most(`turns` = 3) and not turn_count_at_most(`turns` = 2)"


@pytest.mark.parametrize(
    ("code", "what", "line"),
    [
        ("def f(m):\n    if m[-2].source == 'a':\n        return 'b'\n", "does not recognise", 2),
        ("def f(m):\n    for x in m:\n        pass\n", "`For` statement", 2),
        ("def f(m, extra):\n    return 'a'\n", "message thread", 1),
        (
            "def f(m):\n    if m[-1].source == 'nobody':\n        return 'a'\n",
            "names no participant",
            2,
        ),
        ("def f(m):\n    n = m[-2]\n    return 'a'\n", "assignment", 2),
    ],
)
def test_unrecognised_shapes_point_at_the_line(code: str, what: str, line: int) -> None:
    with pytest.raises(Unsupported) as err:
        lower(code)
    assert what in err.value.what
    assert getattr(err.value.node, "lineno", None) == line


TEAM = """
a = AssistantAgent("a", model_client=c)
b = AssistantAgent("b", model_client=c)
z = AssistantAgent("z", model_client=c)
{defs}
team = SelectorGroupChat([a, b, z], model_client=c, termination_condition=MaxMessageTermination(9){extra})
"""


def migrate(defs: str, extra: str) -> tuple[str, list[tuple[str, str]]]:
    result = migrate_source(SourceFile("team.py", TEAM.format(defs=defs, extra=extra)))
    assert result.text is not None
    return result.text, [(d.code.id, d.message) for d in result.findings]


def rules(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("when")]


def test_a_total_selector_func_drops_the_selector_and_is_exact() -> None:
    text, findings = migrate(
        "def pick(messages):\n    if messages[-1].source == a.name:\n"
        "        return b.name\n    return a.name\n",
        ", selector_func=pick",
    )
    assert rules(text) == ["when from a          then b", "when from user, b, z then a"]
    assert "speaker selector" not in text and "max_turns 9" in text
    assert "speaker order read statically" in text and 'scenario "AgentChat speaking order"' in text
    assert findings == []


def test_none_keeps_the_selector_for_those_turns_only() -> None:
    text, findings = migrate("", ", selector_func=lambda m: 'z' if m[-1].source == 'a' else None")
    got = rules(text)
    assert got[0].split() == ["when", "from", "a", "then", "z"]
    assert got[1].split() == ["when", "from", "user,", "b,", "z", "then", "selector"]
    assert "speaker selector" in text and "speaker order read statically" not in text
    assert [c for c, _ in findings] == ["M002", "M002"]
    assert "where `selector_func` returns None the model chooses" in findings[0][1]
    # allow_repeated_speaker defaults to False (autogen-agentchat 0.7.5): the model's turns
    # leave out the speaker it chose last, which the rules cannot follow (issue 29, class 1)
    assert findings[1][1].startswith(
        "`allow_repeated_speaker` is false (AgentChat's default) and not translated: AgentChat "
        "removes the speaker the model chose last from the candidates"
    )


def test_a_single_candidate_skips_the_model() -> None:
    """AgentChat does not ask the model when ``candidate_func`` returns one name."""
    text, findings = migrate(
        "def cands(messages):\n    if messages[-1].source == 'user':\n        return [a.name]\n"
        "    return [b.name, z.name]\n",
        ", candidate_func=cands",
    )
    got = [r.split() for r in rules(text)]
    assert ["when", "from", "user", "then", "a"] in got
    assert ["when", "from", "a,", "b,", "z", "then", "selector"] in got
    assert "tool transfer_to_a" not in text and "tool transfer_to_b" in text
    assert any("candidate_func`'s lists became advice" in m for _, m in findings)


def test_unrecognised_functions_are_left_out_at_their_line() -> None:
    text, findings = migrate(
        "def pick(messages):\n    return messages[-2].source\n", ", selector_func=pick"
    )
    assert "messages[-2].source" in left_out(findings)
    assert "when from user, a, b, z then selector" in text
    _, findings = migrate("", ", selector_func=make_selector()")
    assert "not a `def` or a `lambda` of this file" in left_out(findings)
    _, findings = migrate(
        "def cands(messages):\n    if messages[-1].source == 'a':\n        return [b.name]\n",
        ", candidate_func=cands",
    )
    assert "no candidate list" in left_out(findings)


def left_out(findings: list[tuple[str, str]]) -> str:
    (message,) = [m for c, m in findings if c == "M001"]
    return message


def test_returning_a_name_outside_the_team_is_left_out() -> None:
    _, findings = migrate("", ", selector_func=lambda m: 'nobody'")
    assert "`'nobody'` is not a participant's name" in left_out(findings)


def test_async_def_and_team_max_turns() -> None:
    text, findings = migrate(
        "async def pick(messages):\n    if messages[-1].source == 'a':\n"
        "        return 'b'\n    return 'a'\n",
        ", max_turns=5",
    )
    assert "selector_func" not in text  # no selector_func given: the selector picks
    text, findings = migrate(
        "async def pick(messages):\n    if messages[-1].source == 'a':\n"
        "        return 'b'\n    return 'a'\n",
        ", selector_func=pick, max_turns=5",
    )
    assert "max_turns 6" in text  # 5 agent turns + the task; no selector turns to double for
    assert "when from a          then b" in text and findings == []


def test_one_unlowerable_part_of_a_selector_func_leaves_only_that_part_to_the_model() -> None:
    """Read from the Python: after the task the writer speaks, after the critic the speaker
    before it (`messages[-2]`, which no rule can read: the model stands in, one M001 at that
    line), after anyone else the critic."""
    text, findings = migrate(
        "def pick(messages):\n"
        "    if messages[-1].source == 'user':\n        return a.name\n"
        "    if messages[-1].source == z.name:\n        return messages[-2].source\n"
        "    return z.name\n",
        ", selector_func=pick",
    )
    assert [" ".join(r.split()) for r in rules(text)] == [
        "when from user then a",
        "when from z then selector",
        "when from a, b then z",
        "when tool transfer_to_a then a",
        "when tool transfer_to_b then b",
        "when tool transfer_to_z then z",
        'when from selector then terminate "no_speaker_selected"',
    ]
    left_out = [m for code, m in findings if code == "M001"]
    assert len(left_out) == 1 and "part of `selector_func` `pick`" in left_out[0]
    assert "after `z`" in left_out[0] and "messages[-2].source" in left_out[0]
    assert "scenario" not in text
