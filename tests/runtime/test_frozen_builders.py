"""The cheap builders of frozen records (the hub's ``stamped``, the transcript's
``_record``, the script reader's ``_text_turn``) fill a writable base class of the same
slots and then give it the frozen class. Over generated field values, what they build
behaves in every way we can observe as what the class's ``__init__`` builds: equality,
hash (or the same error), repr, ``attrs.asdict``/``astuple``/``evolve``, copies, pickles at
every protocol, type and isinstance, weak references, and the same refusal of
``setattr``/``delattr``."""

from __future__ import annotations

import copy
import pickle
import weakref
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.runtime.adapters.workflow import GraphError, compile_graph, tool_rule_names
from flowc.runtime.envelope import Envelope, stamped
from flowc.runtime.script import ScriptCall, ScriptTurn, _text_turn
from flowc.runtime.transcript import TurnRecord, _record
from tests.compile.test_serde_reader import graphs

texts = st.text(max_size=8) | st.sampled_from(["", "\x00", "\ud800", "\U0001f600", "é" * 50])
json_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | texts
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
#: hashable values (a field of a hashable record), for the hash to be compared as a number
hashables = st.recursive(
    json_leaves,
    lambda inner: st.tuples(inner, inner) | st.frozensets(st.integers(), max_size=2),
    max_leaves=4,
)
opt_text = st.none() | texts
opt_int = st.none() | st.integers() | st.just(2**80)

envelope_fields = st.fixed_dictionaries(
    {
        "channel_id": texts,
        "sender_id": texts,
        "audience": st.none() | st.lists(texts, max_size=3).map(tuple),
        "event_type": texts,
        "event_data": st.dictionaries(texts, json_values, max_size=3) | hashables,
        "envelope_id": texts,
        "task_id": opt_text,
        "causation_id": opt_text,
        "trace_id": opt_text,
        "priority": st.sampled_from(["normal", "urgent", "low", ""]),
        "depth": st.integers(),
        "idempotency_key": opt_text,
        "created_at": texts,
        "ttl_seconds": opt_int,
    }
)
record_fields = st.fixed_dictionaries(
    {
        "number": st.integers(),
        "speaker": texts,
        "agent_id": texts,
        "kind": texts,
        "routing": st.none() | st.dictionaries(texts, json_values, max_size=2) | hashables,
        "text": texts,
        "context_set": st.dictionaries(texts, json_values, max_size=2) | hashables,
        "context_delete": st.lists(texts, max_size=2).map(tuple),
        "next_speaker": opt_text,
        "decided_by": st.none() | st.integers() | texts,
        "closes": opt_text,
        "tool_calls": st.lists(
            st.dictionaries(texts, json_values, max_size=2) | hashables, max_size=2
        ).map(tuple),
        "warnings": st.lists(
            st.dictionaries(texts, json_values, max_size=2) | hashables, max_size=2
        ).map(tuple),
        "violated": st.lists(
            st.dictionaries(texts, json_values, max_size=2) | hashables, max_size=2
        ).map(tuple),
    }
)


def outcome(make: Callable[[], Any]) -> Any:
    """What ``make()`` returns, or the type and words of what it raises."""
    try:
        return ("ok", make())
    except Exception as err:
        return ("raised", type(err), str(err))


def nan_safe_eq(a: Any, b: Any) -> bool:
    """Equal as the reprs say (a NaN field makes a record unequal to itself)."""
    return repr(a) == repr(b)


def behave_alike(cheap: Any, plain: Any) -> None:
    cls = type(plain)
    assert type(cheap) is cls and isinstance(cheap, cls.__mro__[1])
    assert cheap.__class__ is cls and not hasattr(cheap, "__dict__")
    assert repr(cheap) == repr(plain)
    assert (cheap == plain) == (plain == plain) and (cheap != plain) == (plain != plain)
    assert (plain == cheap) == (plain == plain)
    assert outcome(lambda: hash(cheap)) == outcome(lambda: hash(plain))
    assert repr(attrs.asdict(cheap)) == repr(attrs.asdict(plain))
    assert repr(attrs.asdict(cheap, recurse=False)) == repr(attrs.asdict(plain, recurse=False))
    assert repr(attrs.astuple(cheap)) == repr(attrs.astuple(plain))
    first = attrs.fields(cls)[0].name
    assert repr(attrs.evolve(cheap)) == repr(plain)
    assert repr(attrs.evolve(cheap, **{first: getattr(plain, first)})) == repr(plain)
    # (a copy is compared with the same copy of ``plain``: a deep copy, as unpickling,
    # rebuilds a frozenset field, whose repr may list colliding items in another order,
    # e.g. {-76, -52})
    for other, same in (
        (copy.copy(cheap), copy.copy(plain)),
        (copy.deepcopy(cheap), copy.deepcopy(plain)),
    ):
        assert type(other) is cls and repr(other) == repr(same)
        assert outcome(lambda o=other: hash(o)) == outcome(lambda: hash(plain))
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = outcome(lambda p=protocol: pickle.loads(pickle.dumps(cheap, p)))
        want = outcome(lambda p=protocol: pickle.loads(pickle.dumps(plain, p)))
        assert back[0] == want[0] and repr(back[1:]) == repr(want[1:])
        if back[0] == "ok":
            assert type(back[1]) is cls and repr(back[1]) == repr(want[1])
        assert outcome(lambda p=protocol: pickle.dumps(cheap, p)) == outcome(
            lambda p=protocol: pickle.dumps(plain, p)
        )
    assert weakref.ref(cheap)() is cheap
    for field in attrs.fields(cls):
        assert getattr(cheap, field.name) is getattr(plain, field.name)
        set_cheap = outcome(lambda f=field.name: setattr(cheap, f, 1))
        assert set_cheap == outcome(lambda f=field.name: setattr(plain, f, 1))
        assert set_cheap[0] == "raised" and set_cheap[1] is attrs.exceptions.FrozenInstanceError
        assert outcome(lambda f=field.name: delattr(cheap, f)) == outcome(
            lambda f=field.name: delattr(plain, f)
        )
    assert outcome(lambda: setattr(cheap, "other", 1)) == outcome(
        lambda: setattr(plain, "other", 1)
    )
    assert repr(cheap) == repr(plain)  # nothing above changed it


@settings(max_examples=150)
@given(envelope_fields)
def test_a_stamped_envelope_is_an_envelope(fields: dict[str, Any]) -> None:
    assert {f.name for f in attrs.fields(Envelope)} == set(fields)
    values = [fields[f.name] for f in attrs.fields(Envelope)]  # in the builder's order
    behave_alike(stamped(*values), Envelope(**fields))
    env = stamped(*values)
    assert outcome(env.to_json) == outcome(Envelope(**fields).to_json)


@settings(max_examples=150)
@given(record_fields)
def test_a_built_turn_record_is_a_turn_record(fields: dict[str, Any]) -> None:
    assert {f.name for f in attrs.fields(TurnRecord)} == set(fields)
    behave_alike(_record(*[fields[f.name] for f in attrs.fields(TurnRecord)]), TurnRecord(**fields))


@settings(max_examples=100)
@given(texts, texts)
def test_a_text_turn_is_a_script_turn(say: str, where: str) -> None:
    assert [f.name for f in attrs.fields(ScriptTurn)] == ["say", "calls", "where"]
    behave_alike(_text_turn(say, where), ScriptTurn(say, (), where))
    # and unequal to a turn that differs only in its calls
    assert _text_turn(say, where) != ScriptTurn(say, (ScriptCall("t"),), where)


@pytest.mark.parametrize(
    "make",
    [
        lambda: stamped(
            "c", "a", None, "text", {}, "e", None, None, None, "normal", 0, None, "t", None
        ),
        lambda: _record(1, "a", "a", "text", None, "t", {}, (), None, None, None, ()),
        lambda: _text_turn("hi", "w"),
    ],
)
def test_the_frozen_classes_add_no_slot_of_their_own(make: Callable[[], Any]) -> None:
    """The class swap needs the same layout: a slot (or a cached hash) added to the frozen
    class would be left unset by the cheap builder."""
    obj = make()
    cls = type(obj)
    assert cls.__slots__ == () and cls.__mro__[1].__slots__
    assert not getattr(cls, "__attrs_cached_hash__", False)
    assert all(hasattr(obj, a.name) for a in attrs.fields(cls))


@settings(max_examples=100)
@given(
    texts,
    texts,
    st.sampled_from(["ag2.msg.packet", "ag2.context.set"]) | texts,
    st.dictionaries(texts, json_values, max_size=3),
)
def test_an_agent_rounds_template_is_the_plain_envelope(
    cid: str, sender: str, kind: str, data: dict[str, Any]
) -> None:
    """The workflow adapter's packet and context envelopes, before the hub stamps them."""
    from flowc.runtime.adapters.workflow import _template

    behave_alike(_template(cid, sender, kind, data), Envelope(cid, sender, None, kind, data))


@settings(max_examples=150)
@given(st.data())
def test_the_compiled_graphs_routing_tools_are_the_graphs_tool_rules(data: Any) -> None:
    """`CompiledGraph.routing_tools`, found once when the graph is compiled, is what
    `tool_rule_names` finds on the graph each agent round used to ask it."""
    graph = data.draw(graphs())
    try:
        table = compile_graph(graph, ("a", "b", "writer", "é", ""))
    except GraphError:
        return
    assert table.routing_tools == tool_rule_names(graph)
