"""The indexed dispatch (rules filed by sender, tool and context key) never changes a
decision: on random graphs and random turns it picks what a plain linear scan of the
rules in AG2's order (ascending priority, ties in list order) picks."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.compiler import model as m
from flowc.compiler.serde import structure_graph
from flowc.runtime.adapters.base import ChannelMetadata, Participant
from flowc.runtime.adapters.workflow import (
    DEFAULT,
    NO_RULE,
    WorkflowAdapter,
    WorkflowState,
    compile_graph,
)
from flowc.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope
from flowc.runtime.transitions import TransitionRegistry

from .graphs import always, cond, ctx, frm, graph, rule, term, to, tool

SPEAKERS = ["a", "b", "c", "d"]
TOOLS = ["t1", "t2", "t3"]
KEYS = ["k1", "k2", "k3"]
VALUES = [None, 0, 1, 1.0, True, "x", [1]]


@attrs.frozen
class BodyHasX:
    """A custom condition: the turn's text contains an x."""

    name: ClassVar[str] = "body_has_x"

    def evaluate(self, state: Any, envelope: Envelope) -> bool:
        data = envelope.event_data
        return "x" in str(data.get("body", data.get("text", "")))


REGISTRY = TransitionRegistry()
REGISTRY.register_condition(BodyHasX)

leaves = st.one_of(
    st.just(always()),
    st.sampled_from([*SPEAKERS, "z"]).map(frm),
    st.sampled_from(TOOLS).map(tool),
    st.builds(ctx, st.sampled_from(KEYS), st.sampled_from(VALUES)),
    st.just(cond("body_has_x")),
)
conditions = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda cs: cond("all_of", conditions=cs)),
        st.lists(inner, min_size=1, max_size=3).map(lambda cs: cond("any_of", conditions=cs)),
        inner.map(lambda c: cond("not", condition=c)),
    ),
    max_leaves=4,
)
targets = st.one_of(
    st.sampled_from(SPEAKERS).map(to),
    st.sampled_from(["r1", "r2"]).map(term),
    st.just(cond("stay")),
    st.just(cond("round_robin")),
)
rules = st.builds(rule, conditions, targets, st.integers(-2, 2))
graphs = st.lists(rules, max_size=12).map(lambda rs: graph("a", *rs, default=term("dflt")))

context_writes = st.fixed_dictionaries(
    {
        "set": st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2),
        "delete": st.lists(st.sampled_from(KEYS), max_size=2),
    }
)
turns = st.one_of(
    st.tuples(
        st.just("context"), st.sampled_from(SPEAKERS), context_writes, st.none(), st.just("")
    ),
    st.tuples(
        st.just("text"),
        st.sampled_from([*SPEAKERS, "z"]),
        st.none(),
        st.none(),
        st.sampled_from(["hello", "xyz"]),
    ),
    st.tuples(
        st.just("packet"),
        st.sampled_from([*SPEAKERS, "z"]),
        context_writes,
        st.one_of(st.none(), st.sampled_from([*TOOLS, "other"])),
        st.sampled_from(["hello", "xyz"]),
    ),
)


def holds(c: m.Condition, state: WorkflowState, env: Envelope) -> bool:
    """The condition evaluated directly from the model, as AG2 evaluates it."""
    if isinstance(c, m.Always):
        return True
    if isinstance(c, m.FromSpeaker):
        return env.sender_id == c.agent_id
    if isinstance(c, m.ToolCalled):
        routing = env.event_data.get("routing") or {}
        return env.event_type == EV_PACKET and routing.get("tool") == c.tool_name
    if isinstance(c, m.ContextEquals):
        return bool(state.context_vars.get(c.key) == c.value)
    if isinstance(c, m.AllOf):
        return all(holds(x, state, env) for x in c.conditions)
    if isinstance(c, m.AnyOf):
        return any(holds(x, state, env) for x in c.conditions)
    if isinstance(c, m.Not):
        return not holds(c.condition, state, env)
    assert isinstance(c, m.CustomCondition)
    return BodyHasX().evaluate(state, env)


def linear_choice(g: m.TransitionGraph, state: WorkflowState, env: Envelope) -> int | str:
    """The first rule that holds, scanning every rule in AG2's order."""
    ordered = sorted(enumerate(g.transitions), key=lambda it: it[1].priority)
    for i, t in ordered:
        if holds(t.when, state, env):
            return i
    return DEFAULT


def envelope(
    kind: str, sender: str, writes: Any, tool_name: str | None, body: str, n: int
) -> Envelope:
    if kind == "context":
        return Envelope("c", sender, None, EV_CONTEXT_SET, writes, envelope_id=f"e{n}")
    if kind == "text":
        return Envelope("c", sender, None, EV_TEXT, {"text": body}, envelope_id=f"e{n}")
    routing = (
        {"kind": "text"}
        if tool_name is None
        else {"kind": "handoff", "tool": tool_name, "reason": ""}
    )
    return Envelope(
        "c",
        sender,
        None,
        EV_PACKET,
        {"routing": routing, "context_updates": writes, "body": body},
        envelope_id=f"e{n}",
    )


@settings(max_examples=300, deadline=None)
@given(
    graphs,
    st.lists(turns, max_size=25),
    st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3),
)
def test_indexed_dispatch_equals_a_linear_scan(
    g: dict[str, Any], steps: list[Any], context: dict[str, Any]
) -> None:
    model = structure_graph(g)
    md = ChannelMetadata(
        "c",
        "workflow",
        1,
        "a",
        tuple(Participant(p, i) for i, p in enumerate(SPEAKERS)),
        {"graph": g, "context_vars": context},
    )
    adapter = WorkflowAdapter(REGISTRY)
    state = adapter.initial_state(md)
    for n, step in enumerate(steps):
        env = envelope(*step, n)
        state = adapter.fold(env, state)
        if env.event_type == EV_CONTEXT_SET:
            continue
        assert state.decided_by == linear_choice(model, state, env), (env, state.context_vars)


@settings(max_examples=100, deadline=None)
@given(graphs, st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3))
def test_the_context_rules_that_hold_are_kept_exactly(
    g: dict[str, Any], context: dict[str, Any]
) -> None:
    table = compile_graph(structure_graph(g), tuple(SPEAKERS), REGISTRY)
    adapter = WorkflowAdapter(REGISTRY)
    md = ChannelMetadata(
        "c",
        "workflow",
        1,
        "a",
        tuple(Participant(p, i) for i, p in enumerate(SPEAKERS)),
        {"graph": g, "context_vars": {}},
    )
    state = adapter.initial_state(md)
    state = adapter.fold(
        Envelope("c", "a", None, EV_CONTEXT_SET, {"set": context, "delete": []}, envelope_id="e"),
        state,
    )
    expected = {pos for pos, fn in table.ctx_fns.items() if fn(context)}
    assert state.ctx_true == expected
    assert state.ctx_first == min(expected, default=NO_RULE)


def test_a_turn_without_a_tool_call_looks_at_no_tool_rule() -> None:
    calls = 0

    @attrs.frozen
    class Counted:
        name: ClassVar[str] = "counted"

        def evaluate(self, state: Any, envelope: Envelope) -> bool:
            nonlocal calls
            calls += 1
            return False

    registry = TransitionRegistry()
    registry.register_condition(Counted)
    many = [rule(cond("all_of", conditions=[tool(f"t{i}"), frm("a")]), to("b")) for i in range(500)]
    g = graph("a", *many, rule(cond("counted"), to("b")), rule(frm("a"), to("b")), default=term())
    table = compile_graph(structure_graph(g), ("a", "b"), registry)
    assert len(table.by_tool) == 500 and len(table.by_sender["a"]) == 2
    md = ChannelMetadata(
        "c", "workflow", 1, "a", (Participant("a", 0), Participant("b", 1)), {"graph": g}
    )
    adapter = WorkflowAdapter(registry)
    state = adapter.fold(
        Envelope("c", "a", None, EV_TEXT, {"text": "hi"}, envelope_id="e1"),
        adapter.initial_state(md),
    )
    assert state.decided_by == 501 and calls == 1


def test_context_rules_are_filed_by_key_and_only_rechecked_when_it_changes() -> None:
    g = graph(
        "a",
        *(rule(ctx(f"k{i}", i), to("b")) for i in range(300)),
        rule(always(), to("a")),
        default=term(),
    )
    table = compile_graph(structure_graph(g), ("a", "b"))
    assert len(table.ctx_rules) == 300 and table.by_sender["a"][0][0] == 300
    assert table.ctx_eq["k7"] == {7: (7,)} and not table.ctx_by_key  # equality: by value
    md = ChannelMetadata(
        "c", "workflow", 1, "a", (Participant("a", 0), Participant("b", 1)), {"graph": g}
    )
    adapter = WorkflowAdapter()
    state = adapter.initial_state(md)
    assert state.ctx_first == NO_RULE
    state = adapter.fold(
        Envelope(
            "c",
            "a",
            None,
            EV_PACKET,
            {
                "routing": {"kind": "text"},
                "context_updates": {"set": {"k7": 7}, "delete": []},
                "body": "x",
            },
            envelope_id="e1",
        ),
        state,
    )
    assert state.decided_by == 7 and state.ctx_true == {7}
    state = adapter.fold(
        Envelope("c", "b", None, EV_CONTEXT_SET, {"set": {}, "delete": ["k7"]}, envelope_id="e2"),
        state,
    )
    state = adapter.fold(Envelope("c", "b", None, EV_TEXT, {"text": "x"}, envelope_id="e3"), state)
    assert state.decided_by == 300 and state.ctx_true == frozenset()


def test_from_composites_are_filed_under_their_senders() -> None:
    """`from X and C` and `from X or from Y` are looked at only for X (and Y)."""
    many = [
        rule(cond("all_of", conditions=[frm(f"x{i}"), ctx("k", i)]), to("b")) for i in range(400)
    ]
    either = rule(cond("any_of", conditions=[frm("a"), frm("x1")]), to("b"))
    g = graph("a", *many, either, rule(frm("b"), to("a")), default=term())
    parts = ("a", "b", *(f"x{i}" for i in range(400)))
    table = compile_graph(structure_graph(g), parts)
    assert [r[0] for r in table.by_sender["a"]] == [400]  # not the 400 composites
    assert [r[0] for r in table.by_sender["b"]] == [401]
    assert [r[0] for r in table.by_sender["x1"]] == [1, 400]
    assert table.by_sender["x1"][1][1] is None  # `from a or from x1` always holds for x1


def test_context_equality_rules_are_filed_by_value() -> None:
    """300 rules on one key: a write re-tests the rules of the old and the new value
    only, and a write that does not change the value tests none."""
    g = graph(
        "a",
        *(rule(ctx("stage", f"s{i}"), to("b")) for i in range(300)),
        rule(always(), to("a")),
        default=term(),
    )
    md = ChannelMetadata(
        "c",
        "workflow",
        1,
        "a",
        (Participant("a", 0), Participant("b", 1)),
        {"graph": g, "context_vars": {"stage": "s0"}},
    )
    adapter = WorkflowAdapter()
    state = adapter.initial_state(md)
    table = state.table
    assert table is not None and len(table.ctx_eq["stage"]) == 300 and not table.ctx_by_key
    assert state.ctx_true == {0}
    calls = 0
    fns = dict(table.ctx_fns)

    def counting(pos: int) -> Any:
        def fn(context: dict[str, Any]) -> bool:
            nonlocal calls
            calls += 1
            return bool(fns[pos](context))

        return fn

    for pos in fns:
        table.ctx_fns[pos] = counting(pos)

    def write(value: str, n: int) -> None:
        nonlocal state
        state = adapter.fold(
            Envelope(
                "c",
                "a",
                None,
                EV_CONTEXT_SET,
                {"set": {"stage": value}, "delete": []},
                envelope_id=f"e{n}",
            ),
            state,
        )

    write("s7", 1)
    assert state.ctx_true == {7} and state.ctx_first == 7 and calls == 1
    write("s7", 2)
    assert state.ctx_true == {7} and calls == 1
    write("nowhere", 3)
    assert state.ctx_true == frozenset() and calls == 1
    write("s299", 4)
    assert state.ctx_true == {299} and calls == 2
