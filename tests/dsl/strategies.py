"""Hypothesis strategies that build valid `.flow` ASTs (printed by the formatter)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from flowc.dsl import nodes as n
from flowc.source import NO_SPAN

S = NO_SPAN
SPEAKER_POOL = ["user", "drafter", "reviewer", "triage", "sec-ops", "next", "a_1", "when", "B"]
KEYS = ["done", "route", "level", "x-y", "from"]
TOOLS = ["approve", "escalate", "route_it", "stay"]

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=8),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def name(value: str) -> n.Name:
    return n.Name(value, S)


@st.composite
def conditions(draw: Any, speakers: list[str], depth: int = 0) -> n.Cond:
    leaves = [
        st.just(n.AlwaysCond(S)),
        st.lists(st.sampled_from(speakers), min_size=1, max_size=2, unique=True).map(
            lambda names: n.FromCond(tuple(name(x) for x in names), S)
        ),
        st.sampled_from(TOOLS).map(lambda t: n.ToolCond(name(t), S)),
        st.builds(
            lambda k, op, v: n.ContextCond(name(k), op, n.Value(v, S), S),
            st.sampled_from(KEYS),
            st.sampled_from(["==", "!="]),
            json_value,
        ),
        st.builds(
            lambda t: n.CallCond(name("over"), (n.Arg(name("limit"), n.Value(t, S), S),), S),
            st.integers(0, 9),
        ),
    ]
    if depth >= 3:
        return draw(st.one_of(leaves))
    sub = conditions(speakers, depth + 1)
    compound = [
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: n.AndCond(tuple(xs), S)),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: n.OrCond(tuple(xs), S)),
        sub.map(lambda x: n.NotCond(x, S)),
    ]
    return draw(st.one_of(*leaves, *compound))


def targets(speakers: list[str]) -> st.SearchStrategy[n.Target]:
    return st.one_of(
        st.sampled_from(speakers).map(lambda s: n.SpeakerTarget(name(s), S)),
        st.just(n.NextTarget(S)),
        st.just(n.StayTarget(S)),
        st.just(n.InitiatorTarget(S)),
        st.one_of(st.none(), st.text(max_size=10)).map(
            lambda r: n.TerminateTarget(None if r is None else n.Str(r, S), S)
        ),
        st.sampled_from(speakers).map(
            lambda s: n.CallTarget(name("pick"), (n.Arg(name("pool"), n.Value([s], S), S),), S)
        ),
    )


@st.composite
def tool_decls(draw: Any, speakers: list[str]) -> n.ToolDecl:
    effect = st.one_of(
        st.builds(
            lambda k, v: n.SetEffect(name(k), n.Value(v, S), S), st.sampled_from(KEYS), json_value
        ),
        st.sampled_from(KEYS).map(lambda k: n.ClearEffect(name(k), S)),
        st.sampled_from(speakers).map(lambda s: n.HandoffEffect(name(s), S)),
        st.one_of(st.none(), st.text(max_size=6)).map(
            lambda r: n.FinishEffect(None if r is None else n.Str(r, S), S)
        ),
    )
    alts = draw(st.lists(st.lists(effect, min_size=1, max_size=2).map(tuple), max_size=3))
    return n.ToolDecl(name(draw(st.sampled_from(TOOLS))), tuple(alts), S)


@st.composite
def flows(draw: Any) -> n.Flow:
    """A flow that compiles: declared speakers, declared customs, valid references."""
    speakers = draw(st.lists(st.sampled_from(SPEAKER_POOL), min_size=2, max_size=5, unique=True))
    statements: list[Any] = [n.FlowDecl(name("generated"), n.Str(draw(st.text(max_size=12)), S), S)]
    for sp in speakers:
        if draw(st.booleans()):  # a human: no tools (E113), maybe the context keys it writes
            keys = draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True))
            writes = (n.WritesDecl(tuple(name(k) for k in keys), S),) if keys else ()
            statements.append(
                n.SpeakerDecl(name(sp), True, (), S, block=bool(writes), writes=writes)
            )
            continue
        tools = draw(st.lists(tool_decls(speakers), max_size=2, unique_by=lambda t: t.name.value))
        statements.append(n.SpeakerDecl(name(sp), False, tuple(tools), S))
    statements.append(
        n.ConditionDecl(
            name("over"), (n.Param(name("limit"), n.TypeRef("int", None, S), None, S),), S
        )
    )
    statements.append(
        n.TargetDecl(
            name("pick"),
            (n.Param(name("pool"), n.TypeRef("list", n.TypeRef("speaker", None, S), S), None, S),),
            (*(n.ResultSpeaker(name(s), S) for s in speakers), n.ResultTerminate(None, S)),
            S,
        )
    )
    if draw(st.booleans()):
        statements.append(n.StartDecl(name(draw(st.sampled_from(speakers))), S))
    if draw(st.booleans()):
        statements.append(n.InitiatorDecl(name(draw(st.sampled_from(speakers))), S))
    if draw(st.booleans()):
        statements.append(n.MaxTurnsDecl(n.Value(draw(st.integers(1, 50)), S), S))
    ctx = draw(st.dictionaries(st.sampled_from(KEYS), json_value, max_size=3))
    if ctx:
        entries = tuple(n.ContextEntry(name(k), n.Value(v, S), S) for k, v in ctx.items())
        statements.append(n.ContextDecl(entries, len(entries) > 1 or draw(st.booleans()), S))
    for _ in range(draw(st.integers(0, 5))):
        priority = draw(st.one_of(st.none(), st.integers(-200, 200)))
        statements.append(
            n.Rule(
                draw(conditions(speakers)),
                draw(targets(speakers)),
                None if priority is None else n.Priority(priority, S),
                S,
            )
        )
    if draw(st.booleans()):
        steps = draw(st.lists(st.sampled_from(speakers), min_size=2, max_size=4))
        statements.append(n.SequenceDecl(tuple(name(s) for s in steps), S))
    if draw(st.booleans()):
        statements.append(n.Otherwise(draw(targets(speakers)), S))
    return n.Flow(tuple(statements), (), S)
