"""The runtime side of migrate's custom vocabulary (``flowc.runtime.vocabulary``)."""

from __future__ import annotations

import collections
from types import SimpleNamespace
from typing import Any

import pytest

from flowc.compiler.serde import structure_graph
from flowc.runtime.adapters.workflow import compile_graph
from flowc.runtime.transitions import TransitionRegistry, default_registry
from flowc.runtime.vocabulary import (
    ContextExpression,
    ExpressionError,
    RandomAgent,
    TextContains,
    TextMatches,
    TurnCountAtMost,
    message_text,
    parse_context_expression,
    register_vocabulary,
)


def env(text: str = "", *, kind: str = "ag2.packet", envelope_id: str = "env-1") -> Any:
    data = {"body": text} if kind == "ag2.packet" else {"text": text}
    return SimpleNamespace(event_type=kind, event_data=data, envelope_id=envelope_id)


def state(**kw: Any) -> Any:
    return SimpleNamespace(**kw)


def test_message_text_reads_packets_and_text_messages() -> None:
    assert message_text(env("a", kind="ag2.packet")) == "a"
    assert message_text(env("b", kind="ag2.msg.text")) == "b"
    assert (
        message_text(
            SimpleNamespace(event_type="ag2.context.set", event_data={"set": {}}, envelope_id="")
        )
        == ""
    )
    assert (
        message_text(
            SimpleNamespace(event_type="ag2.packet", event_data={"body": None}, envelope_id="")
        )
        == ""
    )


def test_text_conditions() -> None:
    assert TextContains("DONE").evaluate(state(), env("all DONE"))
    assert not TextContains("DONE").evaluate(state(), env("all done"))
    assert TextMatches(r"\ATERMINATE\Z").evaluate(state(), env("TERMINATE", kind="ag2.msg.text"))
    assert not TextMatches(r"\ATERMINATE\Z").evaluate(state(), env("TERMINATE."))
    with pytest.raises(ValueError, match="regular expression"):
        TextMatches("(unclosed")


def test_turn_count_at_most() -> None:
    cond = TurnCountAtMost(3)
    assert cond.evaluate(state(turn_count=3), env())
    assert not cond.evaluate(state(turn_count=4), env())


@pytest.mark.parametrize(
    ("expression", "context", "expected"),
    [
        ("${done}", {"done": True}, True),
        ("${done}", {"done": False}, False),
        ("not ${done}", {"done": False}, True),
        ("!${done}", {"done": True}, False),
        ("${a} and ${b}", {"a": True, "b": False}, False),
        ("${a} & ${b}", {"a": True, "b": True}, True),
        ("${a} or ${b}", {"a": False, "b": True}, True),
        ("${a} | ${b}", {"a": False, "b": False}, False),
        ("${stage} == 'review'", {"stage": "review"}, True),
        ('${stage} != "review"', {"stage": "draft"}, True),
        ("${count} >= 3", {"count": 3}, True),
        ("${count} < 3", {"count": 3}, False),
        ("len(${items}) > 0", {"items": [1]}, True),
        ("len(${items}) == 0", {"items": []}, True),
        ("(${a} or ${b}) and not ${c}", {"a": False, "b": True, "c": False}, True),
        ("${score} > 0.5", {"score": 0.75}, True),
        ("${flag} == True", {"flag": True}, True),
        ("${flag} == false", {"flag": False}, True),
        ("${missing} == 1", {}, False),  # classic raises KeyError; here: false
        ("not ${missing}", {}, False),
        ("${s} > 3", {"s": "text"}, False),  # cannot compare: false
    ],
)
def test_context_expression(expression: str, context: dict[str, Any], expected: bool) -> None:
    assert ContextExpression(expression).evaluate(state(context_vars=context), env()) is expected


@pytest.mark.parametrize("bad", ["${a} ==", "(${a}", "len ${a}", "${a} $$ ${b}", "${a} ${b}", ""])
def test_context_expression_refuses_bad_syntax(bad: str) -> None:
    with pytest.raises(ExpressionError):
        parse_context_expression(bad)
    with pytest.raises(ExpressionError):
        ContextExpression(bad)


def test_random_agent_is_a_pure_function_of_the_envelope_id() -> None:
    target = RandomAgent(["a", "b", "c"], allow_repeat=True)
    s = state(last_speaker_id="a")
    first = [target.resolve(s, env(envelope_id=f"e{i}")).next_speaker for i in range(200)]
    again = [target.resolve(s, env(envelope_id=f"e{i}")).next_speaker for i in range(200)]
    assert first == again
    counts = collections.Counter(first)
    assert set(counts) == {"a", "b", "c"}
    assert min(counts.values()) > 40  # roughly uniform over 200 draws


def test_random_agent_without_repeat_skips_the_sender() -> None:
    target = RandomAgent(["a", "b", "c"], allow_repeat=False)
    picks = {
        target.resolve(state(last_speaker_id="b"), env(envelope_id=f"x{i}")).next_speaker
        for i in range(100)
    }
    assert picks == {"a", "c"}
    only = RandomAgent(["a"], allow_repeat=False).resolve(state(last_speaker_id="a"), env())
    assert only.next_speaker is None and only.close_reason == "no_eligible_speaker"
    with pytest.raises(ValueError):
        RandomAgent([], allow_repeat=True)


def test_registered_on_the_runtime_default_registry() -> None:
    import flowc.runtime  # noqa: F401  (importing the runtime registers the vocabulary)

    reg = default_registry()
    for name in ("text_contains", "text_matches", "context_expression", "turn_count_at_most"):
        assert reg.condition(name) is not None, name
    assert reg.target("random_agent") is RandomAgent


def test_a_compiled_graph_uses_the_vocabulary() -> None:
    registry = register_vocabulary(TransitionRegistry())
    graph = structure_graph(
        {
            "initial_speaker": "a",
            "transitions": [
                {
                    "when": {"name": "text_contains", "args": {"text": "STOP"}},
                    "then": {"name": "terminate", "args": {"reason": "stop"}},
                    "priority": -10,
                },
                {
                    "when": {"name": "always", "args": {}},
                    "then": {
                        "name": "random_agent",
                        "args": {"agent_ids": ["a", "b"], "allow_repeat": False},
                    },
                    "priority": 0,
                },
            ],
            "default_target": {"name": "terminate", "args": {"reason": "after_work"}},
            "max_turns": None,
        }
    )
    table = compile_graph(graph, ("a", "b"), registry)
    rules = table.by_sender["a"]
    s = state(last_speaker_id="a", context_vars={}, turn_count=1)
    stop, rand = rules[0], rules[1]
    assert stop[1] is not None and stop[1](s, env("please STOP"))
    assert rand[2](s, env("go on")) == ("b", "")


def test_the_vocabulary_works_in_real_ag2() -> None:
    """Registered into AG2 1.2.1's registry, a migrated graph loads, round-trips through
    ``TransitionGraph.to_dict()`` and routes with AG2's own envelopes."""
    from ag2.network import TransitionRegistry as AG2Registry
    from ag2.network.envelope import Envelope as AG2Envelope
    from ag2.network.transitions import TransitionGraph

    from flowc.ag2 import register_composites, register_customs
    from flowc.compiler.pipeline import compile_source
    from flowc.runtime.vocabulary import VOCABULARY_CONDITIONS, VOCABULARY_TARGETS
    from flowc.source import SourceFile

    flow = """
    speakers host: human, a, b
    condition text_matches(pattern: string)
    condition context_expression(expression: string)
    condition turn_count_at_most(`turns`: int)
    target random_agent(agent_ids: list[speaker], allow_repeat: bool) -> a | b
    when text_matches(pattern = "\\\\ATERMINATE\\\\Z") then terminate "is_termination_msg" priority -10
    when context_expression(expression = "${n} >= 2") and turn_count_at_most(`turns` = 5) then a
    when always then random_agent(agent_ids = ["a", "b"], allow_repeat = false)
    """
    compiled, diags = compile_source(SourceFile("v.flow", flow))
    assert compiled is not None, diags
    registry = AG2Registry.default()  # flowc's composites build their parts from AG2's default
    register_composites(registry)
    register_customs(VOCABULARY_CONDITIONS, VOCABULARY_TARGETS, registry)
    graph = TransitionGraph.loads(compiled.graph_dict, registry=registry)
    assert graph.to_dict() == compiled.graph_dict

    def envelope(text: str, sender: str = "a", envelope_id: str = "e-1") -> AG2Envelope:
        return AG2Envelope(
            "ch", sender, None, "ag2.msg.text", {"text": text}, envelope_id=envelope_id
        )

    done, context_rule, random_rule = graph.transitions
    st = state(context_vars={"n": 2}, turn_count=3, last_speaker_id="a")
    assert done.when.evaluate(st, envelope("TERMINATE"))
    assert not done.when.evaluate(st, envelope("TERMINATE now"))
    assert context_rule.when.evaluate(st, envelope("x"))
    assert not context_rule.when.evaluate(state(context_vars={"n": 1}, turn_count=3), envelope("x"))
    assert random_rule.then.resolve(st, envelope("x")).next_speaker == "b"  # never the sender
