"""What a run's record can hold (:func:`flowc.runtime.stored.json_values`, the check the
hub makes of every value an agent sends before anything is written): agreed with
:mod:`json` itself on random values, and values nested deeper than JSON's readers read
refused at their place, in time that grows with the value's size, not its depth."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.runtime import stored
from flowc.runtime.adapters.base import DamagedRecord, ProtocolError
from flowc.runtime.envelope import EV_PACKET, Envelope
from flowc.runtime.stored import MAX_INT_DIGITS, MAX_NESTING, admitted, json_values

#: values an agent may send: JSON's, and what JSON cannot hold as it is (sets, bytes,
#: numbers that are not finite, keys that are not strings), tuples (JSON's lists)
leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=3)
    | st.binary(max_size=2)
    | st.frozensets(st.integers(0, 3), max_size=2)
)
keys = st.text(max_size=2) | st.integers(0, 2) | st.booleans() | st.none()
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(keys, inner, max_size=3)
    ),
    max_leaves=12,
)


def as_lists(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [as_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: as_lists(v) for k, v in value.items()}
    return value


def json_holds(value: Any) -> bool:
    """The oracle, sharing no code with flowc: :mod:`json` writes the value with no
    ``NaN`` and reads back the same value (a key that is not a string comes back as one)."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return bool(json.loads(text) == as_lists(value))


@settings(max_examples=600, derandomize=True, deadline=None)
@given(values)
def test_what_a_record_holds_is_what_json_writes_and_reads_back(value: Any) -> None:
    try:
        json_values({"v": value}, "event_data")
        held = True
    except DamagedRecord:
        held = False
    assert held == json_holds({"v": value})


def test_a_record_holds_what_the_inputs_take() -> None:
    """A JSON graph (which a run's opening holds, three levels into the record) and a run
    script's numbers; the runtime keeps its own limits, the inputs theirs."""
    from flowc import inputs

    assert MAX_NESTING >= inputs.MAX_DEPTH + 3
    assert MAX_INT_DIGITS == inputs.MAX_INT_DIGITS
    json_values({"n": int("9" * MAX_INT_DIGITS)}, "event_data")
    with pytest.raises(DamagedRecord) as caught:
        json_values({"n": -(10**MAX_INT_DIGITS)}, "event_data")
    assert caught.value.path == "event_data.n"


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def test_a_value_nested_as_deep_as_a_record_holds_is_held_and_written() -> None:
    value = {"q": nested(MAX_NESTING - 2)}  # the object, "q"'s list and the lists in it
    json_values(value, "event_data")
    # (what is held is written and read back, the envelope around it and all)
    assert json.loads(json.dumps({"event_data": {"x": [value]}})) == {"event_data": {"x": [value]}}


@pytest.mark.parametrize("depth", [MAX_NESTING - 1, 10**5])
def test_a_value_nested_deeper_is_refused_at_its_place(depth: int) -> None:
    # (a value nested 100,000 deep was read in time growing with the square of its depth,
    # then took the run down: json.dumps stops near 1,000)
    with pytest.raises(DamagedRecord) as caught:
        json_values({"q": nested(depth)}, "event_data")
    assert caught.value.path == "event_data.q" + "[0]" * (MAX_NESTING - 1)
    assert caught.value.what.startswith(f"a list or object nested more than {MAX_NESTING} deep")


def test_a_place_is_named_whatever_its_keys() -> None:
    value: Any = math.inf
    for key in ("a", "b.c", "[0]"):
        value = {key: [value]}
    with pytest.raises(DamagedRecord) as caught:
        json_values(value, "event_data.set")
    assert caught.value.path == "event_data.set.[0][0].b.c[0].a[0]"


def test_a_list_held_twice_is_held_and_one_that_holds_itself_is_not() -> None:
    shared = [1]
    json_values({"a": [shared, shared, [shared]]}, "event_data")
    loop: list[Any] = [1]
    loop.append({"k": loop})
    with pytest.raises(DamagedRecord) as caught:
        json_values({"a": loop}, "event_data")
    assert (caught.value.path, caught.value.what) == (
        "event_data.a[1].k",
        "a list or object that holds itself",
    )


class Short(list):  # type: ignore[type-arg]
    """A list whose length and items, asked one by one, say otherwise than it holds."""

    def __len__(self) -> int:
        return 0

    def __getitem__(self, i: Any) -> Any:
        return "fine"


class Fickle(dict):  # type: ignore[type-arg]
    """A dict (not empty: JSON writes an empty one as `{}`) whose items are JSON's the
    first time they are read, a set's thereafter."""

    reads = 0

    def items(self) -> Any:
        Fickle.reads += 1
        return [("k", 1 if Fickle.reads == 1 else {1})]


def test_a_list_is_read_as_json_reads_it_whatever_it_says() -> None:
    # (a set its `len` hid passed, then took the run down as json wrote it)
    for value in (Short([{1}]), Short([math.nan]), Short([10**5000])):
        assert not json_holds({"v": value})
        with pytest.raises(DamagedRecord) as caught:
            json_values({"v": value}, "event_data")
        assert caught.value.path == "event_data.v[0]"
    # (and a list whose `len` says more than it holds was an IndexError)
    json_values({"v": type("Long", (list,), {"__len__": lambda s: 5})([1])}, "event_data")
    liar = type("I", (int,), {"bit_length": lambda s: 1, "__abs__": lambda s: 0})
    with pytest.raises(DamagedRecord, match="more than 4,300 digits"):
        json_values({"v": liar(10**5000)}, "event_data")


def test_a_value_json_writes_otherwise_than_it_reads_is_refused_not_a_crash() -> None:
    Fickle.reads = 0
    env = Envelope("c", "a", None, EV_PACKET, {"body": "x", "tool_calls": [{"args": Fickle(k=0)}]})
    with pytest.raises(ProtocolError) as caught:
        admitted(env)
    assert str(caught.value) == (
        "a's reply was refused: event_data: a value JSON does not write as it reads"
        " (TypeError: Object of type set is not JSON serializable)"
    )
    Fickle.reads = 0
    with pytest.raises(DamagedRecord, match=r"^a record is damaged: args: a value JSON"):
        stored.plain(Fickle(k=0), "args")
    assert stored.plain({"k": (1, [Short(["a"])])}, "args") == {"k": [1, [["a"]]]}
