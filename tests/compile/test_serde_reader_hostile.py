"""The fast graph reader against the converter alone, on dicts spoilt in the ways the
reader's shortcuts could get wrong: keys that are not strings, booleans where integers go,
integers where strings go, integers of any size, names in any script (lone surrogates
included), composites nested across the reader's depth cut-off and the converter's
limit, custom conditions and targets with any args. Each dict reads to the same model,
or is refused with the same problems at the same paths in the same order; the model
writes back the converter's dicts, to the same canonical JSON."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.compiler import model as m
from flowc.compiler import serde
from flowc.compiler.shapes import MAX_CONDITION_DEPTH, converter
from tests.compile.test_serde_reader import (
    graphs,
    json_values,
    odd_values,
    ours,
    reference,
    same,
    spoil,
    text,
)
from tests.stored_runs import json_paths

odd_names = st.sampled_from(
    [
        "a",
        "",
        "é",
        "\ud800",
        "\U0001f600",
        "\x00",
        "not",
        "always",
        "agent",
        "name",
        "args",
        "a" * 300,
        "__class__",
        "0",
    ]
)
big_ints = st.sampled_from([0, 1, -1, 2**31, 2**63, -(2**64), 10**40, True, False])
odd_keys = st.sampled_from([1, 0, None, True, 1.5, ("when",), b"name", "\ud800", "when"])


def spoil_more(data: Any, draw: Any) -> Any:
    """``data`` with one part spoilt in a way :func:`spoil` does not reach."""
    if isinstance(data, dict) and data and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(data, key=repr)))
        data = dict(data)
        data[key] = spoil_more(data[key], draw)
        return data
    if isinstance(data, list) and data and draw(st.booleans()):
        i = draw(st.integers(0, len(data) - 1))
        data = list(data)
        data[i] = spoil_more(data[i], draw)
        return data
    how = draw(st.sampled_from(["key", "rename", "int", "name", "nest"]))
    if how == "key" and isinstance(data, dict):
        return {**data, draw(odd_keys): draw(json_values)}
    if how == "rename" and isinstance(data, dict) and data:
        # a key of the model's replaced by the same word in a non-string (or the reverse)
        old = draw(st.sampled_from(sorted(data, key=repr)))
        data = dict(data)
        data[draw(odd_keys)] = data.pop(old)
        return data
    if how == "int":
        return draw(big_ints)
    if how == "name":
        return draw(odd_names)
    return {
        "name": draw(st.sampled_from(["not", "all_of", "any_of"])),
        "args": {"condition": data} if draw(st.booleans()) else {"conditions": [data]},
    }


def chain(depth: int, leaf: Any) -> Any:
    for i in range(depth):
        leaf = (
            {"name": "not", "args": {"condition": leaf}}
            if i % 3
            else {"name": "all_of" if i % 2 else "any_of", "args": {"conditions": [leaf]}}
        )
    return leaf


@st.composite
def hostile_graph_dicts(draw: Any) -> Any:
    data = serde.unstructure_graph(draw(graphs()))
    if draw(st.booleans()):  # a rule nested across the reader's cut-off or the limit
        depth = draw(
            st.sampled_from(
                [
                    serde._FAST_DEPTH - 1,
                    serde._FAST_DEPTH,
                    serde._FAST_DEPTH + 1,
                    MAX_CONDITION_DEPTH - 1,
                    MAX_CONDITION_DEPTH,
                ]
            )
        )
        leaf = draw(
            st.sampled_from(
                [
                    {"name": "always"},
                    {"name": "mine", "args": {"x": [1]}},
                    {"name": "from_speaker", "args": {"agent_id": 5}},
                ]
            )
        )
        data["transitions"] = [
            *data["transitions"],
            {"when": chain(depth, leaf), "then": {"name": "stay"}},
        ]
    if draw(st.booleans()):
        data = spoil(data, draw)  # (it sorts keys: before any key that is not a string)
    for _ in range(draw(st.integers(0, 2))):
        data = spoil_more(data, draw)
    if draw(st.booleans()):  # an integer or string field given another scalar
        field = draw(
            st.sampled_from(
                ["max_turns", "initial_speaker", "priority", "agent_id", "reason", "name"]
            )
        )
        value = draw(big_ints | odd_names | st.sampled_from([None, 1.0, [], {}]))
        if field in ("max_turns", "initial_speaker") and isinstance(data, dict):
            data = {**data, field: value}
        elif (
            isinstance(data, dict)
            and isinstance(data.get("transitions"), list)
            and data["transitions"]
            and isinstance(data["transitions"][0], dict)
        ):
            rule = dict(data["transitions"][0])
            if field == "priority":
                rule["priority"] = value
            else:
                rule["then"] = (
                    {"name": "agent", "args": {"agent_id": value}}
                    if field == "agent_id"
                    else {"name": "terminate", "args": {"reason": value}}
                    if field == "reason"
                    else {"name": value}
                )
            data = {**data, "transitions": [rule, *data["transitions"][1:]]}
    return data


@settings(max_examples=150)
@given(hostile_graph_dicts())
def test_a_spoilt_graph_reads_as_the_converter_alone_reads_it(data: Any) -> None:
    assert same(ours(data, m.TransitionGraph), reference(data, m.TransitionGraph))
    knobs = {"graph": data, "context_vars": {"k": 1}}
    assert same(ours(knobs, m.Knobs), reference(knobs, m.Knobs))


@settings(max_examples=60)
@given(
    hostile_graph_dicts(),
    st.dictionaries(odd_keys, json_values, max_size=2) | st.sampled_from([None, [], "x", 7, True]),
)
def test_spoilt_context_vars_read_as_the_converter_reads_them(graph: Any, context: Any) -> None:
    data = {"graph": graph, "context_vars": context}
    assert same(ours(data, m.Knobs), reference(data, m.Knobs))


def odd_graphs() -> st.SearchStrategy[m.TransitionGraph]:
    custom_targets = st.builds(
        m.CustomTarget, odd_names, st.dictionaries(odd_names, odd_values, max_size=2)
    )
    return graphs(odd_values).flatmap(
        lambda g: st.builds(
            lambda t, extra: m.TransitionGraph(
                g.initial_speaker,
                g.transitions
                + tuple(m.Transition(m.CustomCondition("c", {"v": extra}), t) for _ in range(1)),
                t,
                g.max_turns,
            ),
            custom_targets,
            odd_values,
        )
    )


@settings(max_examples=100)
@given(odd_graphs(), odd_values)
def test_the_model_writes_the_converters_json(graph: m.TransitionGraph, context: Any) -> None:
    assert same(serde.unstructure_graph(graph), converter.unstructure(graph))
    assert text(lambda: serde.unstructure_graph(graph)) == text(
        lambda: converter.unstructure(graph)
    )
    knobs = m.Knobs(graph, {"k": context})
    assert text(lambda: serde.unstructure_knobs(knobs)) == text(
        lambda: converter.unstructure(knobs)
    )
    assert text(lambda: serde.lazy_knobs(knobs)) == text(lambda: converter.unstructure(knobs))


# ── every one-point change of a graph that holds every kind of condition and target ──

EVERY_KIND = {
    "initial_speaker": "a",
    "transitions": [
        {
            "when": {
                "name": "all_of",
                "args": {
                    "conditions": [
                        {"name": "from_speaker", "args": {"agent_id": "a"}},
                        {
                            "name": "not",
                            "args": {
                                "condition": {"name": "tool_called", "args": {"tool_name": "t"}}
                            },
                        },
                        {
                            "name": "any_of",
                            "args": {
                                "conditions": [
                                    {
                                        "name": "context_equals",
                                        "args": {"key": "k", "value": [1, {"x": None}]},
                                    },
                                    {"name": "always", "args": {}},
                                    {"name": "mine", "args": {"n": 1}},
                                ]
                            },
                        },
                    ]
                },
            },
            "then": {"name": "agent", "args": {"agent_id": "b"}},
            "priority": 2,
        },
        {"when": {"name": "always"}, "then": {"name": "terminate", "args": {"reason": "r"}}},
        {"when": {"name": "always", "args": None}, "then": {"name": "pick", "args": {"k": "v"}}},
        {"when": {"name": "always"}, "then": {"name": "round_robin"}, "priority": -1},
        {"when": {"name": "always"}, "then": {"name": "stay", "args": {}}},
        {"when": {"name": "always"}, "then": {"name": "revert_to_initiator"}},
    ],
    "default_target": {"name": "terminate", "args": {}},
    "max_turns": 9,
}
SCALARS = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2**63,
    10**40,
    1.0,
    "",
    "a",
    "\ud800",
    "\U0001f600",
    '\x00"\\',
    [],
    {},
    (),
    [1],
    {"name": "always"},
]
ODD_KEYS = [1, None, True, 1.5, ("when",), "\ud800", "extra"]


def changed(data: Any, path: tuple[Any, ...], change: Any) -> Any:
    if not path:
        return change(data)
    head, *rest = path
    copy: Any = dict(data) if isinstance(data, dict) else list(data)
    copy[head] = changed(data[head], tuple(rest), change)
    return copy


def one_point_changes() -> list[Any]:
    out: list[Any] = []
    for path in json_paths(EVERY_KIND):
        for value in SCALARS:
            out.append(changed(EVERY_KIND, path, lambda _, v=value: v))
        out.append(
            changed(
                EVERY_KIND,
                path,
                lambda d: (
                    tuple(d) if isinstance(d, list) else dict(d) if isinstance(d, dict) else [d]
                ),
            )
        )

        def keyed(d: Any) -> Any:
            return (
                [{**d, k: 1} for k in ODD_KEYS]
                + [{(k if k != key else 1): v for k, v in d.items()} for key in d]
                + [{k: v for k, v in d.items() if k != key} for key in d]
            )

        target: Any = EVERY_KIND
        for step in path:
            target = target[step]
        if isinstance(target, dict):
            for one in keyed(target):
                out.append(changed(EVERY_KIND, path, lambda _, v=one: v))
    return out


def test_every_one_point_change_reads_as_the_converter_reads_it() -> None:
    cases = one_point_changes()
    assert len(cases) > 1900
    assert serde._fast_graph(EVERY_KIND) is not None  # the unchanged graph takes the fast road
    taken = 0
    for data in cases:
        expected = reference(data, m.TransitionGraph)
        assert same(ours(data, m.TransitionGraph), expected), data
        knobs = {"graph": data}
        assert same(ours(knobs, m.Knobs), reference(knobs, m.Knobs)), data
        taken += not isinstance(expected, list)
    assert 0 < taken < len(cases)  # both roads were taken
