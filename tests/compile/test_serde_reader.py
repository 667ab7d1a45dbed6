"""serde reads well-formed graph dicts without cattrs, and the result is always the one
cattrs gives (flowc.compiler.shapes): the same model for a dict it takes, the same
problems (JSON paths, words) for one it refuses, the same dicts when writing back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.compiler import model as m
from flowc.compiler import serde
from flowc.compiler.shapes import converter, structure

ROOT = Path(__file__).resolve().parents[2]

# ── the model, drawn ──────────────────────────────────────────────────────────

names = st.sampled_from(["a", "b", "writer", "é", ""])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | names,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)
#: values a caller of the API may put in a graph: tuples, sets, subclasses, objects
odd_values = st.recursive(
    json_values
    | st.frozensets(st.integers(), max_size=2)
    | st.just(b"x")
    | st.builds(lambda x: OrderedDict(x=x), st.integers()),
    lambda inner: st.tuples(inner, inner) | st.lists(inner, max_size=2),
    max_leaves=5,
)


def conditions(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    leaves = (
        st.just(m.Always())
        | st.builds(m.FromSpeaker, names)
        | st.builds(m.ToolCalled, names)
        | st.builds(m.ContextEquals, names, values)
        | st.builds(
            m.CustomCondition,
            st.sampled_from(["text_contains", "mine"]),
            st.dictionaries(names, values, max_size=2),
        )
    )
    return st.recursive(
        leaves,
        lambda inner: (
            st.builds(m.AllOf, st.lists(inner, max_size=3).map(tuple))
            | st.builds(m.AnyOf, st.lists(inner, max_size=3).map(tuple))
            | st.builds(m.Not, inner)
        ),
        max_leaves=6,
    )


targets = (
    st.builds(m.AgentTarget, names)
    | st.just(m.RoundRobinTarget())
    | st.just(m.StayTarget())
    | st.just(m.RevertToInitiatorTarget())
    | st.builds(m.TerminateTarget, names)
    | st.just(m.TerminateTarget())
    | st.builds(
        m.CustomTarget,
        st.sampled_from(["random_agent", "pick"]),
        st.dictionaries(names, json_values, max_size=2),
    )
)


def graphs(values: st.SearchStrategy[Any] = json_values) -> st.SearchStrategy[m.TransitionGraph]:
    transitions = st.builds(m.Transition, conditions(values), targets, st.integers(-3, 3))
    return st.builds(
        m.TransitionGraph,
        names,
        st.lists(transitions, max_size=4).map(tuple),
        targets,
        st.none() | st.integers(1, 50),
    )


# ── dicts, well-formed and not ────────────────────────────────────────────────


def spoil(data: Any, draw: Any) -> Any:
    """``data`` (a graph dict) with one part spoilt, somewhere."""
    if isinstance(data, dict) and data and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(data)))
        data = dict(data)
        data[key] = spoil(data[key], draw)
        return data
    if isinstance(data, list) and data and draw(st.booleans()):
        i = draw(st.integers(0, len(data) - 1))
        data = list(data)
        data[i] = spoil(data[i], draw)
        return data
    how = draw(
        st.sampled_from(
            [
                "drop",
                "extra",
                "int",
                "str",
                "null",
                "bool",
                "list",
                "object",
                "tuple",
                "subclass",
                "zero",
                "none_args",
            ]
        )
    )
    if how == "drop" and isinstance(data, dict) and data:
        data = dict(data)
        del data[draw(st.sampled_from(sorted(data)))]
        return data
    if how == "extra" and isinstance(data, dict):
        return {**data, draw(st.sampled_from(["extra", "args", "name", "priority", "when"])): 1}
    if how == "tuple" and isinstance(data, list):
        return tuple(data)
    if how == "subclass" and isinstance(data, dict):
        return OrderedDict(data)
    if how == "none_args" and isinstance(data, dict) and "args" in data:
        return {**data, "args": None}
    return {
        "int": 5,
        "str": "5",
        "null": None,
        "bool": True,
        "list": [],
        "object": {},
        "zero": 0,
    }.get(how, [data])


@st.composite
def graph_dicts(draw: Any) -> Any:
    data = converter.unstructure(draw(graphs()))
    for _ in range(draw(st.integers(0, 2))):
        data = spoil(data, draw)
    return data


def reference(data: Any, cls: type[Any]) -> Any:
    try:
        return structure(data, cls)
    except serde.ShapeError as err:
        return [str(p) for p in err.problems]


def ours(data: Any, cls: type[Any]) -> Any:
    read = serde.structure_knobs if cls is m.Knobs else serde.structure_graph
    try:
        return read(data)
    except serde.ShapeError as err:
        return [str(p) for p in err.problems]


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (a tuple is not a list)."""
    if type(a) is not type(b):
        return False
    if attrs.has(type(a)):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (a != a and b != b)


@settings(max_examples=600)
@given(graph_dicts())
def test_a_graph_dict_reads_as_the_converter_reads_it(data: Any) -> None:
    assert same(ours(data, m.TransitionGraph), reference(data, m.TransitionGraph))
    fast = serde._fast_graph(data)
    if fast is not None:  # the fast reader only takes what the converter takes
        assert same(fast, reference(data, m.TransitionGraph))


@settings(max_examples=300)
@given(
    graph_dicts(),
    st.none() | st.dictionaries(names, json_values, max_size=2) | st.integers(),
    st.booleans(),
)
def test_a_knobs_dict_reads_as_the_converter_reads_it(
    graph: Any, context: Any, with_context: bool
) -> None:
    data = {"graph": graph, "context_vars": context} if with_context else {"graph": graph}
    assert same(ours(data, m.Knobs), reference(data, m.Knobs))


@settings(max_examples=400)
@given(graphs(odd_values))
def test_the_model_writes_the_converters_dicts(graph: m.TransitionGraph) -> None:
    assert same(serde.unstructure_graph(graph), converter.unstructure(graph))
    knobs = m.Knobs(graph, {"k": [1]})
    assert same(serde.unstructure_knobs(knobs), converter.unstructure(knobs))
    for t in graph.transitions:
        assert same(serde.unstructure_condition(t.when), converter.unstructure(t.when))
        assert same(serde.unstructure_target(t.then), converter.unstructure(t.then))
    assert text(lambda: serde.lazy_knobs(knobs)) == text(lambda: converter.unstructure(knobs))


def text(make: Any) -> Any:
    """The canonical JSON of ``make()``, or the kind of error writing it raises."""
    try:
        return serde.canonical_json(make())
    except (TypeError, ValueError) as err:
        return type(err)


def test_the_readers_tables_are_the_models_fields() -> None:
    for name, (cls, fields) in serde._CONDITION_FIELDS.items():
        assert name == cls.NAME
        assert [f for f, _ in fields] == [a.name for a in attrs.fields(cls)]
        assert all(a.default is attrs.NOTHING for a in attrs.fields(cls))
    for name, (cls, target_fields) in serde._TARGET_FIELDS.items():
        assert name == cls.NAME
        assert [(f, d) for f, d in target_fields] == [
            (a.name, None if a.default is attrs.NOTHING else a.default) for a in attrs.fields(cls)
        ]
    assert {cls.NAME for cls in (*m.BUILTIN_CONDITIONS, *m.COMPOSITE_CONDITIONS)} == set(
        serde._CONDITION_FIELDS
    )
    assert {cls.NAME for cls in m.BUILTIN_TARGETS} == set(serde._TARGET_FIELDS)


def test_the_reader_loads_after_cattrs_resolved_the_models_annotations() -> None:
    """cattrs resolves a class's annotations to types, in place, when it first structures
    it; the reader's tables, derived from the same fields, must load either way (it
    failed with ``KeyError: "<class 'str'>"`` when ``flowc.compiler.shapes`` came first)."""
    code = (
        "import attrs, sys\n"
        "from flowc.compiler import model as m, shapes\n"
        "assert 'flowc.compiler.serde' not in sys.modules\n"
        "assert all(not isinstance(f.type, str) for f in attrs.fields(m.ContextEquals))\n"
        "from flowc.compiler import serde\n"
        "print(sorted(serde._CONDITION_FIELDS) == sorted(c.NAME for c in "
        "(*m.BUILTIN_CONDITIONS, *m.COMPOSITE_CONDITIONS)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr


def test_deep_nesting_is_left_to_the_converter() -> None:
    cond: Any = {"name": "always", "args": {}}
    for _ in range(serde._FAST_DEPTH + 5):
        cond = {"name": "not", "args": {"condition": cond}}
    data = {"initial_speaker": "a", "transitions": [{"when": cond, "then": {"name": "stay"}}]}
    assert serde._fast_graph(data) is None
    assert same(serde.structure_graph(data), structure(data, m.TransitionGraph))
    deep: Any = {"name": "always", "args": {}}
    for _ in range(5000):
        deep = {"name": "not", "args": {"condition": deep}}
    data["transitions"][0]["when"] = deep
    assert ours(data, m.TransitionGraph) == ["transitions[0].when: nested too deeply"] or ours(
        data, m.TransitionGraph
    ) == reference(data, m.TransitionGraph)


LOADED = """
import json, sys
from flowc.cli import main
code = main(sys.argv[1:])
print(json.dumps([code, sorted(m for m in sys.modules if m.split(".")[0] == "cattrs")[:1]]))
"""


def run_in_process(args: list[str], cwd: Path) -> tuple[int, list[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    code, loaded = json.loads(done.stdout.splitlines()[-1])
    return code, loaded, done.stdout + done.stderr


def test_a_run_of_a_flow_or_a_good_graph_imports_no_cattrs(tmp_path: Path) -> None:
    (tmp_path / "pair.flow").write_text(
        "speaker a: human\nspeaker b: human\nstart a\nmax_turns 2\n"
        'when from a and context.k == [1, {"x": null}] then b\nwhen from b then a\n'
    )
    (tmp_path / "s.json").write_text(json.dumps({"script": {"a": ["hi"], "b": ["yo"]}}))
    code, loaded, out = run_in_process(
        ["run", "pair.flow", "--script", "s.json", "--db", str(tmp_path / "runs.db")], tmp_path
    )
    assert (code, loaded) == (0, []), out
    code, loaded, out = run_in_process(["compile", "pair.flow", "-o", "graph.json"], tmp_path)
    assert (code, loaded) == (0, []), out
    code, loaded, out = run_in_process(
        ["run", "graph.json", "--script", "s.json", "--db", ":memory:"], tmp_path
    )
    assert (code, loaded) == (0, []), out
    # a bad graph is refused with the converter's words and JSON path, as before
    graph = json.loads((tmp_path / "graph.json").read_text())
    graph["graph"]["transitions"][1]["then"]["args"]["agent_id"] = 5
    (tmp_path / "bad.json").write_text(json.dumps(graph))
    code, loaded, out = run_in_process(
        ["run", "bad.json", "--script", "s.json", "--db", ":memory:"], tmp_path
    )
    assert code == 1 and loaded == ["cattrs"]
    assert "graph.transitions[1].then.args.agent_id: expected a string, got 5" in out
