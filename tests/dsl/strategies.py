"""Hypothesis strategies that build valid `.flow` ASTs (printed by the formatter), properties
included."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from flowc.dsl import nodes as n
from flowc.source import NO_SPAN

S = NO_SPAN
SPEAKER_POOL = [
    "user",
    "drafter",
    "reviewer",
    "triage",
    "sec-ops",
    "next",
    "a_1",
    "when",
    "B",
    "after",
]
KEYS = ["done", "route", "level", "x-y", "from", "time"]
TOOLS = ["approve", "escalate", "route_it", "stay", "ends"]
#: property names: keywords of properties among them (written in backquotes)
PROPERTY_NAMES = ["safe", "p-1", "after", "never", "turn", "_q"]
TURN_OPS = ["==", "!=", "<", "<=", ">", ">="]

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
def prop_exprs(
    draw: Any,
    speakers: list[str],
    tools: list[str],
    keys: list[str],
    reasons: list[str],
    depth: int = 0,
) -> n.Cond:
    """A property expression that names only what the flow has (it compiles)."""
    leaves = [
        st.lists(st.sampled_from(speakers), min_size=1, max_size=3, unique=True).map(
            lambda names: n.FromCond(tuple(name(x) for x in names), S)
        ),
        st.one_of(st.none(), *([st.sampled_from(reasons)] if reasons else [])).map(
            lambda r: n.EndsCond(None if r is None else n.Str(r, S), S)
        ),
        st.builds(
            lambda op, k: n.TurnCond(op, k, S), st.sampled_from(TURN_OPS), st.integers(0, 30)
        ),
    ]
    if tools:
        leaves.append(st.sampled_from(tools).map(lambda t: n.ToolCond(name(t), S)))
    if keys:
        leaves.append(
            st.builds(
                lambda k, op, v: n.ContextCond(name(k), op, n.Value(v, S), S),
                st.sampled_from(keys),
                st.sampled_from(["==", "!="]),
                json_value,
            )
        )
    if depth >= 3:
        return draw(st.one_of(leaves))
    sub = prop_exprs(speakers, tools, keys, reasons, depth + 1)
    compound = [
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: n.AndCond(tuple(xs), S)),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: n.OrCond(tuple(xs), S)),
        sub.map(lambda x: n.NotCond(x, S)),
        sub.map(lambda x: n.PreviousCond(x, S)),
    ]
    return draw(st.one_of(*leaves, *compound))


@st.composite
def property_decls(
    draw: Any,
    title: str,
    speakers: list[str],
    tools: list[str],
    keys: list[str],
    reasons: list[str],
) -> n.PropertyDecl:
    """``property TITLE: PATTERN [SCOPE]``, every pattern and scope."""
    e = prop_exprs(speakers, tools, keys, reasons)
    within = st.one_of(st.none(), st.integers(1, 5).map(lambda k: n.Within(k, S)))
    pattern = draw(
        st.one_of(
            e.map(lambda p: n.NeverPattern(p, S)),
            e.map(lambda p: n.AlwaysPattern(p, S)),
            st.builds(lambda p, w: n.EventuallyPattern(p, w, S), e, within),
            st.builds(lambda p, k: n.AtMostPattern(p, k, S), e, st.integers(0, 4)),
            st.builds(lambda p, q: n.OnlyAfterPattern(p, q, S), e, e),
            st.builds(lambda p, q, w: n.RespondsPattern(p, q, w, S), e, e, within),
        )
    )
    scope = draw(
        st.one_of(
            st.none(),
            e.map(lambda r: n.BeforeScope(r, S)),
            e.map(lambda q: n.AfterScope(q, S)),
            st.builds(lambda q, r: n.BetweenScope(q, r, S), e, e),
            st.builds(lambda q, r: n.AfterUntilScope(q, r, S), e, e),
        )
    )
    return n.PropertyDecl(name(title), pattern, scope, S)


def _reasons_written(statements: list[Any]) -> list[str]:
    """Close reasons the statements write for sure (a rule's or `otherwise`'s terminate, a
    tool's finish, the cap), as a run records them."""
    out: list[str] = []
    for st_ in statements:
        target = getattr(st_, "target", None)
        if isinstance(target, n.TerminateTarget):
            reason = target.reason.value if target.reason is not None else "after_work"
            out.append(reason or "workflow_terminated")
        if isinstance(st_, n.MaxTurnsDecl):
            out.append("max_turns")
        if isinstance(st_, n.SpeakerDecl):
            for tool in st_.tools:
                for alt in tool.alternatives:
                    finishes = [e for e in alt if isinstance(e, n.FinishEffect)]
                    if finishes:  # of two in one alternative, the last one counts
                        last = finishes[-1].reason
                        out.append((last.value if last is not None else "") or "finished")
    return sorted(set(out))


def _keys_set(statements: list[Any]) -> list[str]:
    """Context keys with an initial value, or that a tool sets or a human writes."""
    out: set[str] = set()
    for st_ in statements:
        if isinstance(st_, n.ContextDecl):
            out.update(e.key.value for e in st_.entries)
        elif isinstance(st_, n.SpeakerDecl):
            out.update(st_.written_keys)
            for tool in st_.tools:
                for alt in tool.alternatives:
                    out.update(e.key.value for e in alt if isinstance(e, n.SetEffect))
    return sorted(out)


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
    titles = draw(st.lists(st.sampled_from(PROPERTY_NAMES), max_size=3, unique=True))
    if titles:
        tools = sorted(
            {t.name.value for x in statements if isinstance(x, n.SpeakerDecl) for t in x.tools}
        )
        keys, reasons = _keys_set(statements), _reasons_written(statements)
        for title in titles:  # anywhere in the file: a property changes no other statement
            at = draw(st.integers(1, len(statements)))
            statements.insert(at, draw(property_decls(title, speakers, tools, keys, reasons)))
    return n.Flow(tuple(statements), (), S)
