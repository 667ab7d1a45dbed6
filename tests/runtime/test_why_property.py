"""``explain_turn`` cross-checked against an evaluator of its own: on random graphs and
random runs stored in a real SQLite WAL, the rule the explanation says fired is the
recorded ``decided_by``, every rule it says did not fire (or could not, being another
speaker's) is false under this file's evaluator, every part of a condition it reports
has the value this evaluator gives it, the parts it says were not evaluated are exactly
those after the part that decided an ``and`` / ``or``, and the default's choice is the
default target's. ``trace_condition`` itself (which evaluates a condition with the
dispatch's own compiled short-circuit) is compared whole with this file's trace.

The evaluator here reads the model and a context this test keeps itself (from the
writes it posted): it shares no code with the runtime's dispatch.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowc.compiler import model as m
from flowc.compiler.serde import structure_graph
from flowc.runtime.adapters.workflow import (
    ConditionTrace,
    WorkflowAdapter,
    WorkflowState,
    trace_condition,
)
from flowc.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope
from flowc.runtime.hub import Hub
from flowc.runtime.transcript import transcript
from flowc.runtime.transitions import TransitionRegistry
from flowc.runtime.wal import SqliteStore
from flowc.runtime.why import ConditionWhy, TurnWhy, explain_turn

from .graphs import always, cond, ctx, frm, graph, rule, term, to, tool

SPEAKERS = ["a", "b", "c", "d"]
TOOLS = ["t1", "t2", "t3"]
KEYS = ["k1", "k2", "k3"]
VALUES = [None, 0, 1, 1.0, True, False, "x"]


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
    max_leaves=5,
)
targets = st.one_of(
    st.sampled_from(SPEAKERS).map(to),
    st.sampled_from(["r1", "r2"]).map(term),
    st.just(cond("stay")),
    st.just(cond("round_robin")),
)
graphs = st.builds(
    lambda rs, default, cap: graph("a", *rs, default=default, max_turns=cap),
    st.lists(st.builds(rule, conditions, targets, st.integers(-2, 2)), max_size=10),
    targets,
    st.one_of(st.none(), st.integers(1, 12)),
)
writes = st.fixed_dictionaries(
    {
        "set": st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2),
        "delete": st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
    }
)
#: one turn of the expected speaker: an optional context write before it, then a text,
#: a packet (writes, a routing tool or none), a hand-off or a finish
turns = st.tuples(
    st.one_of(st.none(), writes),
    st.one_of(
        st.tuples(st.just("text"), st.sampled_from(["hello", "xyz"])),
        st.tuples(
            st.just("packet"),
            writes,
            st.one_of(st.none(), st.sampled_from([*TOOLS, "other"])),
            st.sampled_from(["hello", "xyz"]),
        ),
        st.tuples(st.just("handoff"), st.sampled_from(SPEAKERS)),
        st.tuples(st.just("finish"), st.sampled_from(["done", ""])),
    ),
)


# ── the independent evaluator ────────────────────────────────────────────────


@attrs.frozen
class Seen:
    """What this test knows of a turn: the context after it, who spoke, the routing
    tool, the text."""

    context: dict[str, Any]
    sender: str
    tool: str | None
    body: str


def holds(c: m.Condition, t: Seen) -> bool:
    if isinstance(c, m.Always):
        return True
    if isinstance(c, m.FromSpeaker):
        return t.sender == c.agent_id
    if isinstance(c, m.ToolCalled):
        return t.tool == c.tool_name
    if isinstance(c, m.ContextEquals):
        return bool(t.context.get(c.key) == c.value)
    if isinstance(c, m.AllOf):
        return all(holds(x, t) for x in c.conditions)
    if isinstance(c, m.AnyOf):
        return any(holds(x, t) for x in c.conditions)
    if isinstance(c, m.Not):
        return not holds(c.condition, t)
    assert isinstance(c, m.CustomCondition) and c.name in ("body_has_x", "unregistered")
    # a condition the registry does not know never holds (its channel cannot open)
    return c.name == "body_has_x" and "x" in t.body


#: a part not evaluated: (condition, ``None``, no parts)
Traced = tuple[m.Condition, bool | None, tuple[Any, ...]]


def trace(c: m.Condition, t: Seen) -> Traced:
    """``c`` and each of its parts, as (condition, holds, parts): an ``and`` evaluates
    its parts up to the first false one, an ``or`` up to the first true one; those
    after it are not evaluated (``None``)."""
    if isinstance(c, m.Not):
        inner = trace(c.condition, t)
        return (c, not inner[1], (inner,))
    if not isinstance(c, m.AllOf | m.AnyOf):
        return (c, holds(c, t), ())
    deciding = isinstance(c, m.AnyOf)  # the part value that decides: true for `or`
    parts: list[Traced] = []
    decided = False
    for x in c.conditions:
        if decided:
            parts.append((x, None, ()))
            continue
        part = trace(x, t)
        parts.append(part)
        decided = part[1] is deciding
    return (c, deciding if decided else not deciding, tuple(parts))


def plain(t: ConditionTrace) -> Traced:
    return (t.condition, t.holds, tuple(plain(p) for p in t.parts))


def resolve(target: m.Target, t: Seen) -> tuple[str | None, str | None]:
    """(next speaker, close reason) of a target on the turn."""
    if isinstance(target, m.TerminateTarget):
        return None, target.reason
    if isinstance(target, m.AgentTarget):
        return target.agent_id, None
    if isinstance(target, m.StayTarget):
        return t.sender, None
    assert isinstance(target, m.RoundRobinTarget)
    return SPEAKERS[(SPEAKERS.index(t.sender) + 1) % len(SPEAKERS)], None


def apply(context: dict[str, Any], w: dict[str, Any] | None) -> dict[str, Any]:
    if not w:
        return context
    out = {k: v for k, v in context.items() if k not in w["delete"]}
    out.update(w["set"])
    return out


def check_parts(c: m.Condition, why: ConditionWhy, t: Seen) -> int:
    """The explanation's value of ``c`` and of each part it evaluated is this
    evaluator's, and the parts it did not evaluate are those :func:`trace` does not;
    the count of values checked."""
    return check_traced(trace(c, t), why)


def check_traced(want: Traced, why: ConditionWhy) -> int:
    c, value, parts = want
    assert why.holds == value, (c, why)
    if value is None:
        assert not why.parts, (c, why)
        return 0
    checked = 1
    # `context.k != v` and `from X or from Y` are explained as one test, without parts
    one_test = (isinstance(c, m.Not) and isinstance(c.condition, m.ContextEquals)) or (
        isinstance(c, m.AnyOf)
        and len(c.conditions) > 0
        and all(isinstance(x, m.FromSpeaker) for x in c.conditions)
    )
    if one_test:
        assert not why.parts, (c, why)
        return checked
    assert len(why.parts) == len(parts), (c, why)
    for part, part_why in zip(parts, why.parts, strict=True):
        checked += check_traced(part, part_why)
    return checked


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(conditions, st.just(cond("unregistered")), st.just(cond("all_of", conditions=[]))),
    st.builds(
        Seen,
        st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3),
        st.sampled_from(SPEAKERS),
        st.one_of(st.none(), st.sampled_from([*TOOLS, "other"])),
        st.sampled_from(["hello", "xyz"]),
    ),
)
def test_trace_condition_is_the_independent_trace(c: dict[str, Any], t: Seen) -> None:
    """``trace_condition`` whole (values, parts, parts not evaluated) is :func:`trace`,
    for every kind of part, an empty ``and`` and a condition the registry lacks."""
    model = structure_graph(graph("a", rule(c, to("b")))).transitions[0].when
    if t.tool is None:
        env = Envelope("c", t.sender, None, EV_TEXT, {"text": t.body})
    else:
        routing = {"kind": "handoff", "tool": t.tool, "reason": ""}
        env = Envelope("c", t.sender, None, EV_PACKET, {"routing": routing, "body": t.body})
    state = WorkflowState(tuple(SPEAKERS), None, context_vars=dict(t.context))
    assert plain(trace_condition(model, state, env, REGISTRY)) == trace(model, t)


# ── driving runs ─────────────────────────────────────────────────────────────

COUNTS: dict[str, int] = {}
_files = itertools.count()


def drive(db: Path, g: dict[str, Any], steps: list[Any]) -> tuple[str, list[Any]]:
    """Run ``steps`` (each taken by the speaker the run waits for) on a hub writing to
    ``db``; returns the run id and, per turn, what this test knows of it and its kind."""
    import asyncio

    async def go() -> tuple[str, list[Any]]:
        hub = await Hub.open(SqliteStore(str(db)))
        hub.register_adapter(WorkflowAdapter(REGISTRY))
        for s in SPEAKERS:
            hub.register_human(s, agent_id=s, buffer=False)
        ch = hub.open_channel("a", "workflow", SPEAKERS, {"graph": g}, expectations=())
        context: dict[str, Any] = {}
        seen: list[Any] = []
        for pre, (kind, *rest) in steps:
            if not ch.is_open:
                break
            who = ch.expected_next()
            assert who is not None
            if pre:
                hub.admit(Envelope(ch.channel_id, who, None, EV_CONTEXT_SET, pre))
                context = apply(context, pre)
            tool_name: str | None = None
            body = ""
            if kind == "text":
                body = rest[0]
                env = Envelope(ch.channel_id, who, None, EV_TEXT, {"text": body})
            else:
                w: dict[str, Any] = {"set": {}, "delete": []}
                if kind == "packet":
                    w, tool_name, body = rest
                    routing: dict[str, Any] = (
                        {"kind": "text"}
                        if tool_name is None
                        else {"kind": "handoff", "tool": tool_name, "reason": ""}
                    )
                elif kind == "handoff":
                    tool_name = "xfer"
                    routing = {"kind": "handoff", "tool": "xfer", "reason": "", "target": rest[0]}
                else:
                    tool_name = "fin"
                    routing = {"kind": "finish", "tool": "fin", "reason": rest[0], "summary": ""}
                data = {"routing": routing, "context_updates": w, "body": body}
                env = Envelope(ch.channel_id, who, None, EV_PACKET, data)
                context = apply(context, w)
            hub.admit(env)
            # the decision the live run made, as its hub's fold made it
            seen.append((Seen(dict(context), who, tool_name, body), kind, ch.state.decided_by))
        cid = ch.channel_id
        await hub.close()
        return cid, seen

    return asyncio.run(go())


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graphs, st.lists(turns, min_size=1, max_size=10))
def test_why_agrees_with_an_independent_evaluator(
    tmp_path: Path, g: dict[str, Any], steps: list[Any]
) -> None:
    db = tmp_path / f"runs-{next(_files)}.db"
    cid, seen = drive(db, g, steps)
    model = structure_graph(g)
    order = sorted(range(len(model.transitions)), key=lambda i: model.transitions[i].priority)
    store = SqliteStore(str(db), readonly=True)
    try:
        records, _, _ = transcript(list(store.read(cid)), WorkflowAdapter(REGISTRY))
        assert len(records) == len(seen)
        for n, (record, (t, kind, live)) in enumerate(zip(records, seen, strict=True), start=1):
            assert record.decided_by == live  # the transcript's re-fold, the live run
            why = explain_turn(store.read(cid), n, REGISTRY)
            check_turn(model, order, why, record.decided_by, record.closes, t, kind)
            json.dumps(why.to_json())
            assert why.text().startswith(f"turn {n}: ")
    finally:
        store.close()


def check_turn(
    model: m.TransitionGraph,
    order: list[int],
    why: TurnWhy,
    decided_by: int | str | None,
    closes: str | None,
    t: Seen,
    kind: str,
) -> None:
    assert why.agrees
    first = next((i for i in order if holds(model.transitions[i].when, t)), None)
    # what decided: the posted hand-off / finish, else the first rule that holds, else
    # the default; and the explanation names the same as the recorded decided_by
    if kind in ("handoff", "finish"):
        assert decided_by == kind and why.kind == kind
    elif first is None:
        assert decided_by == "default" and why.kind == "default"
    else:
        assert decided_by == first and why.kind == "rule"
    assert (None if why.fired is None else why.fired.rule - 1) == first
    if why.fired is not None:
        assert why.fired.holds and holds(model.transitions[first].when, t)  # type: ignore[index]
        COUNTS["parts"] = COUNTS.get("parts", 0) + check_parts(
            model.transitions[first].when,  # type: ignore[index]
            why.fired.condition,
            t,
        )
    # the rules before it: each checked one false (and each part as reported), each
    # one skipped as another speaker's false too, together exactly those before it
    ahead = order if first is None else order[: order.index(first)]
    checked = [r.rule - 1 for r in why.checked]
    skipped = [o - 1 for o in why.other_speakers]
    assert sorted(checked + skipped) == sorted(ahead)
    assert checked == [i for i in ahead if i in checked]  # in priority order
    for r in why.checked:
        assert not r.holds and not holds(model.transitions[r.rule - 1].when, t)
        COUNTS["parts"] = COUNTS.get("parts", 0) + check_parts(
            model.transitions[r.rule - 1].when, r.condition, t
        )
    for i in skipped:
        assert not holds(model.transitions[i].when, t)
    # the values read are the context this test kept
    for key, value in why.context.items():
        assert key in t.context and t.context[key] == value
    # what the default would have done
    nxt, reason = resolve(model.default_target, t)
    assert (why.default.next_speaker, why.default.close_reason) == (nxt, reason)
    if closes is not None:
        assert why.closes == closes
    COUNTS["turns"] = COUNTS.get("turns", 0) + 1
    COUNTS[why.kind] = COUNTS.get(why.kind, 0) + 1
    COUNTS["false rules"] = COUNTS.get("false rules", 0) + len(checked) + len(skipped)


@pytest.fixture(scope="module", autouse=True)
def _every_kind_met() -> Any:
    """Over the module's examples, every kind of decision was explained and checked."""
    yield
    if COUNTS.get("turns", 0) > 100:  # the property test ran (not a single test picked)
        for kind in ("rule", "default", "handoff", "finish"):
            assert COUNTS.get(kind, 0) > 0, COUNTS


def test_a_condition_that_changes_its_mind_is_said_not_to_agree(tmp_path: Path) -> None:
    """A custom condition that reads something besides the turn (here: how often it was
    asked; true every other time) can answer otherwise each time the turn is folded:
    the transcript's re-fold says the default decided, the explanation finds the rule
    true, and says that they do not agree."""
    asked = itertools.count()

    @attrs.frozen
    class EveryOtherTime:
        name: ClassVar[str] = "every_other_time"

        def evaluate(self, state: Any, envelope: Envelope) -> bool:
            return next(asked) % 2 == 0

    registry = TransitionRegistry()
    registry.register_condition(EveryOtherTime)
    g = graph("a", rule(cond("every_other_time"), to("b")), default=term("dflt"))
    db = tmp_path / "runs.db"

    async def go() -> str:
        hub = await Hub.open(SqliteStore(str(db)))
        hub.register_adapter(WorkflowAdapter(registry))
        for s in ("a", "b"):
            hub.register_human(s, agent_id=s, buffer=False)
        ch = hub.open_channel("a", "workflow", ["a", "b"], {"graph": g}, expectations=())
        hub.admit(Envelope(ch.channel_id, "a", None, EV_TEXT, {"text": "hi"}))
        assert ch.state.decided_by == 0  # the live run: the rule (call 0)
        await hub.close()
        return ch.channel_id

    import asyncio

    cid = asyncio.run(go())
    store = SqliteStore(str(db), readonly=True)
    try:
        why = explain_turn(store.read(cid), 1, registry)  # re-fold: call 1, trace: call 2
    finally:
        store.close()
    assert (why.kind, why.closes, why.agrees) == ("default", "dflt", False)
    assert why.fired is not None and why.fired.rule == 1
    assert why.fired.condition.because == "the custom condition `every_other_time` returned true"
    lines = why.text().splitlines()
    assert lines[1:3] == [
        "  rule 1: when every_other_time() then b",
        "    `every_other_time()` held: the custom condition `every_other_time` returned true",
    ]
    note = "  note: evaluating the rules again does not reach the decision the transcript shows"
    assert lines[-1].startswith(note)
