"""The model <-> AG2's ``TransitionGraph`` dicts, both ways.

Structuring is strict (extra keys forbidden, no silent ``str(5)``), and every problem
comes back as a :class:`ShapeProblem` with its JSON path, e.g.
``transitions[3].then.args.agent_id: expected a string, got 5``.

A dict with exactly the model's shape is read here directly, without cattrs (a run
reads its graph back from its channel's knobs, and cattrs takes longer to import than
the whole read); anything else goes to the project's one cattrs converter
(:mod:`flowc.compiler.shapes`), which decides what is refused and says where. Either
way the result is the same: the fast reader only takes what the converter would take,
builds the same objects, and leaves every refusal to it. Writing a graph back to a dict
is done here for JSON values; anything else in a graph (a value that is not plain JSON)
is handed to the converter, so the dicts are exactly the converter's.

>>> graph = structure_graph({"initial_speaker": "a", "transitions": [],
...     "default_target": {"name": "terminate", "args": {"reason": "x"}}, "max_turns": None})
>>> unstructure_graph(graph)["default_target"]
{'name': 'terminate', 'args': {'reason': 'x'}}
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator, Sequence
from json.encoder import encode_basestring as _encode_str
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler.shape_problems import ShapeError, ShapeProblem, describe

__all__ = [
    "LazyList",
    "ShapeError",
    "ShapeProblem",
    "canonical_json",
    "describe",
    "is_knobs_dict",
    "lazy_knobs",
    "structure_graph",
    "structure_knobs",
    "unstructure_condition",
    "unstructure_graph",
    "unstructure_knobs",
    "unstructure_target",
]


def __getattr__(name: str) -> Any:
    if name == "converter":  # the cattrs converter, imported when asked for
        from flowc.compiler.shapes import converter

        return converter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ── dicts -> the model ────────────────────────────────────────────────────────
#
# The fast reader. Each function returns the model object, or None when the value is
# not exactly of the model's shape (a missing or extra key, a value of another type, a
# dict or list of a subclass, a `max_turns` below 1, conditions nested deeper than
# _FAST_DEPTH): then the converter reads it again, refuses it with its own problems or
# takes it as it always has. What is read here is what the converter's hooks return
# for the same value: strings, integers and `value` as they are, custom args copied,
# lists as tuples, absent keys left to the class defaults, and a `null` where AG2 reads
# one as absent (`transitions`, `args`, `max_turns`, a `default_target` or `then`) as absent.

#: a condition's fields, by kind: a string, any value, one condition, a list of them
_STR, _ANY, _COND, _CONDS = "str", "any", "cond", "conds"
_KINDS = {"str": _STR, "Any": _ANY, "Condition": _COND, "tuple[Condition, ...]": _CONDS}


def _declared(cls: type[Any], name: str) -> str:
    """A field's annotation as its class declares it (text: the model's modules postpone
    their annotations). Not the attrs field's ``type``: cattrs resolves that to the type
    itself, in place, when it first structures the class, and serde may be imported
    after that."""
    for klass in cls.__mro__:
        declared = inspect.get_annotations(klass)  # its own: the fields it declares
        if name in declared:
            return str(declared[name])
    raise KeyError(f"{cls.__name__}.{name}")


def _fields_of(cls: type[Any]) -> tuple[tuple[str, str], ...]:
    """``(field, kind)`` of a model class, in its constructor's order (a field of a type
    not in :data:`_KINDS` fails here, at import, rather than be read wrongly)."""
    return tuple((f.name, _KINDS[_declared(cls, f.name)]) for f in attrs.fields(cls))


#: by NAME, from the model: its class and fields
_CONDITION_FIELDS: dict[str, tuple[type[Any], tuple[tuple[str, str], ...]]] = {
    cls.NAME: (cls, _fields_of(cls)) for cls in (*m.BUILTIN_CONDITIONS, *m.COMPOSITE_CONDITIONS)
}


def _target_fields(cls: type[Any]) -> tuple[tuple[str, str | None], ...]:
    """A target's fields, each with its default or None when required (all strings:
    a field of another type fails here, at import)."""
    if any(kind != _STR for _, kind in _fields_of(cls)):
        raise TypeError(f"{cls.__name__}: the fast reader reads string fields of a target only")
    return tuple(
        (f.name, None if f.default is attrs.NOTHING else f.default) for f in attrs.fields(cls)
    )


#: by NAME, from the model: its class and fields (each a string, with its default or None)
_TARGET_FIELDS: dict[str, tuple[type[Any], tuple[tuple[str, str | None], ...]]] = {
    cls.NAME: (cls, _target_fields(cls)) for cls in m.BUILTIN_TARGETS
}
_NAMED_KEYS = frozenset(("name", "args"))
_TRANSITION_KEYS = frozenset(("when", "then", "priority"))
_GRAPH_KEYS = frozenset(("initial_speaker", "transitions", "default_target", "max_turns"))
_KNOBS_KEYS = frozenset(("graph", "context_vars"))
#: deeper nesting of conditions is left to the converter (which says when it is too deep)
_FAST_DEPTH = 32


def _fast_named(value: Any) -> tuple[str, dict[str, Any]] | None:
    if type(value) is not dict or not value.keys() <= _NAMED_KEYS:
        return None
    name = value.get("name")
    args = value.get("args")
    if args is None:
        args = {}
    if type(name) is not str or type(args) is not dict:
        return None
    return name, args


def _fast_condition(value: Any, depth: int) -> Any:
    named = _fast_named(value)
    if named is None or depth > _FAST_DEPTH:
        return None
    name, args = named
    spec = _CONDITION_FIELDS.get(name)
    if spec is None:
        if not all(type(k) is str for k in args):
            return None
        return m.CustomCondition(name, dict(args))
    cls, fields = spec
    if len(args) != len(fields):  # every field is required
        return None
    values: list[Any] = []
    for field, kind in fields:
        if field not in args:
            return None
        item = args[field]
        if kind == _STR:
            if type(item) is not str:
                return None
        elif kind == _COND:
            item = _fast_condition(item, depth + 1)
            if item is None:
                return None
        elif kind == _CONDS:
            if type(item) is not list and type(item) is not tuple:
                return None
            items = []
            for one in item:
                read = _fast_condition(one, depth + 1)
                if read is None:
                    return None
                items.append(read)
            item = tuple(items)
        values.append(item)
    return cls(*values)


#: AG2's ``target_from_dict(None)``: a ``null`` target is its default target
_NULL_TARGET = m.TerminateTarget()


def _fast_target(value: Any) -> Any:
    if value is None:
        return _NULL_TARGET
    named = _fast_named(value)
    if named is None:
        return None
    name, args = named
    spec = _TARGET_FIELDS.get(name)
    if spec is None:
        if not all(type(k) is str for k in args):
            return None
        return m.CustomTarget(name, dict(args))
    cls, fields = spec
    values: list[Any] = []
    used = 0
    for field, default in fields:
        if field in args:
            item = args[field]
            if type(item) is not str:
                return None
            used += 1
        elif default is None:
            return None
        else:
            item = default
        values.append(item)
    if used != len(args):  # a key the target does not take
        return None
    return cls(*values)


def _fast_transition(value: Any) -> m.Transition | None:
    if type(value) is not dict or not value.keys() <= _TRANSITION_KEYS:
        return None
    if "when" not in value or "then" not in value:
        return None
    when = _fast_condition(value["when"], 1)
    then = _fast_target(value["then"])
    priority = value.get("priority", 0)
    if when is None or then is None or type(priority) is not int:
        return None
    return m.Transition(when, then, priority)


def _fast_graph(data: Any) -> m.TransitionGraph | None:
    if type(data) is not dict or not data.keys() <= _GRAPH_KEYS:
        return None
    speaker = data.get("initial_speaker")
    if type(speaker) is not str:
        return None
    fields: dict[str, Any] = {}
    if data.get("transitions") is not None:  # AG2: `data.get("transitions") or []`
        items = data["transitions"]
        if type(items) is not list and type(items) is not tuple:
            return None
        transitions = []
        for item in items:
            read = _fast_transition(item)
            if read is None:
                return None
            transitions.append(read)
        fields["transitions"] = tuple(transitions)
    if "default_target" in data:
        fields["default_target"] = _fast_target(data["default_target"])
        if fields["default_target"] is None:
            return None
    if "max_turns" in data:
        turns = data["max_turns"]
        if turns is not None and (type(turns) is not int or turns < 1):
            return None
        fields["max_turns"] = turns
    return m.TransitionGraph(speaker, **fields)


def _fast_knobs(data: Any) -> m.Knobs | None:
    if type(data) is not dict or not data.keys() <= _KNOBS_KEYS or "graph" not in data:
        return None
    graph = _fast_graph(data["graph"])
    if graph is None:
        return None
    if "context_vars" not in data:
        return m.Knobs(graph)
    context = data["context_vars"]
    if type(context) is not dict or not all(type(k) is str for k in context):
        return None
    return m.Knobs(graph, dict(context))


def is_knobs_dict(data: Any) -> bool:
    """Whether a dict is meant as knobs (``{"graph": ..., "context_vars": ...}``) rather
    than a bare graph: it has one of the knobs keys and no ``initial_speaker``."""
    return (
        isinstance(data, dict)
        and ("graph" in data or "context_vars" in data)
        and "initial_speaker" not in data
    )


def structure_graph(data: Any) -> m.TransitionGraph:
    """A graph dict -> the model; raises :class:`ShapeError` with JSON paths."""
    graph = _fast_graph(data)
    if graph is not None:
        return graph
    from flowc.compiler.shapes import structure

    read: m.TransitionGraph = structure(data, m.TransitionGraph)
    return read


def structure_knobs(data: Any) -> m.Knobs:
    """A knobs dict (``{"graph": ..., "context_vars": ...}``) -> the model."""
    knobs = _fast_knobs(data)
    if knobs is not None:
        return knobs
    from flowc.compiler.shapes import structure

    read: m.Knobs = structure(data, m.Knobs)
    return read


# ── the model -> dicts ────────────────────────────────────────────────────────

_SCALARS = frozenset((str, int, float, bool, type(None)))


def _plain(value: Any) -> Any:
    """A condition's value as the converter writes it: JSON values copied (lists and
    tuples as lists), anything else by the converter itself. (Without recursion: a JSON
    graph's value may nest 500 levels, more than Python's stack holds two frames each.)

    >>> _plain({"k": (1, [2.5, None]), "b": True})
    {'k': [1, [2.5, None]], 'b': True}
    """
    if type(value) in _SCALARS:
        return value
    top: list[Any] = [None]
    todo: list[tuple[Any, Any, Any]] = [(value, top, 0)]  # (value, where it goes, key)
    while todo:
        item, holder, key = todo.pop()
        kind = type(item)
        if kind in _SCALARS:
            holder[key] = item
        elif kind is list or kind is tuple:
            holder[key] = out = [None] * len(item)
            todo.extend((x, out, i) for i, x in enumerate(item))
        elif kind is dict and all(type(k) is str for k in item):
            holder[key] = copied = dict.fromkeys(item)
            todo.extend((v, copied, k) for k, v in item.items())
        else:
            from flowc.compiler.shapes import converter

            holder[key] = converter.unstructure(item)
    return top[0]


def _named_dict(obj: Any) -> dict[str, Any]:
    """A condition or target -> ``{"name": ..., "args": {...}}``."""
    kind = type(obj)
    if kind is m.CustomCondition or kind is m.CustomTarget:
        return {"name": obj.name, "args": dict(obj.args)}
    if (kind is m.AllOf or kind is m.AnyOf) and type(obj.conditions) in (tuple, list):
        return {"name": obj.NAME, "args": {"conditions": [_named_dict(c) for c in obj.conditions]}}
    if kind is m.Not:
        return {"name": obj.NAME, "args": {"condition": _named_dict(obj.condition)}}
    if kind is m.ContextEquals:
        return {"name": obj.NAME, "args": {"key": _plain(obj.key), "value": _plain(obj.value)}}
    if kind in _STRING_ARGS:
        return {"name": obj.NAME, "args": {f: _plain(getattr(obj, f)) for f in _STRING_ARGS[kind]}}
    from flowc.compiler.shapes import converter

    out: dict[str, Any] = converter.unstructure(obj)
    return out


#: the built-in classes whose args are strings (or none), by field name
_STRING_ARGS: dict[type[Any], tuple[str, ...]] = {
    **{
        cls: tuple(f for f, _ in fields)
        for cls, fields in _CONDITION_FIELDS.values()
        if all(kind == _STR for _, kind in fields)
    },
    **{cls: tuple(f for f, _ in fields) for cls, fields in _TARGET_FIELDS.values()},
}


def _transition_dict(t: m.Transition) -> dict[str, Any]:
    if type(t) is not m.Transition:
        from flowc.compiler.shapes import converter

        out: dict[str, Any] = converter.unstructure(t)
        return out
    return {"when": _named_dict(t.when), "then": _named_dict(t.then), "priority": t.priority}


def unstructure_graph(graph: m.TransitionGraph) -> dict[str, Any]:
    """The model -> exactly the dict AG2's ``TransitionGraph.to_dict()`` writes."""
    return {
        "initial_speaker": graph.initial_speaker,
        "transitions": [_transition_dict(t) for t in graph.transitions],
        "default_target": _named_dict(graph.default_target),
        "max_turns": graph.max_turns,
    }


def unstructure_knobs(knobs: m.Knobs) -> dict[str, Any]:
    return {"graph": unstructure_graph(knobs.graph), "context_vars": dict(knobs.context_vars)}


def unstructure_condition(cond: m.Condition) -> dict[str, Any]:
    return _named_dict(cond)


def unstructure_target(target: m.Target) -> dict[str, Any]:
    return _named_dict(target)


class LazyList:
    """A JSON array whose items are made one at a time while :func:`canonical_json`
    writes them (each is written, then dropped): a large graph's transitions are never
    all held as dicts at once."""

    def __init__(self, items: Sequence[Any], make: Callable[[Any], Any]):
        self.items = items
        self.make = make

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Any]:
        return (self.make(item) for item in self.items)

    def materialize(self) -> list[Any]:
        return list(self)


def lazy_knobs(knobs: m.Knobs, graph_only: bool = False) -> dict[str, Any]:
    """The knobs dict (or the graph dict) with its transitions as a :class:`LazyList`."""
    graph = unstructure_graph(attrs.evolve(knobs.graph, transitions=()))
    graph["transitions"] = LazyList(knobs.graph.transitions, _transition_dict)
    return graph if graph_only else {"graph": graph, "context_vars": dict(knobs.context_vars)}


def _materialize(data: Any) -> Any:
    if isinstance(data, LazyList):
        return [_materialize(x) for x in data]
    if isinstance(data, dict):
        return {k: _materialize(v) for k, v in data.items()}
    return data


def canonical_json(data: Any) -> str:
    """Sorted keys, 2-space indent, trailing newline.

    Exactly ``json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\\n"``,
    written out directly: ``json`` has no C encoder for indented output, and its
    Python one takes twice as long as the whole compile on large flows.

    >>> canonical_json({"b": [1, 2.5, None], "a": {"k": "é"}, "c": {}})
    '{\\n  "a": {\\n    "k": "é"\\n  },\\n  "b": [\\n    1,\\n    2.5,\\n    null\\n  ],\\n  "c": {}\\n}\\n'
    """
    out = _Pieces()
    try:
        _write_json(data, "", out)
    except (_NotPlainJson, TypeError):
        return json.dumps(_materialize(data), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return out.text() + "\n"


class _Pieces(list[str]):
    """The pieces of a JSON text, joined every few thousand into a chunk, so that a
    large graph's text is not also held as millions of small strings."""

    FLUSH = 8192

    def __init__(self) -> None:
        super().__init__()
        self.chunks: list[str] = []

    def append(self, piece: str) -> None:
        super().append(piece)
        if len(self) >= self.FLUSH:
            self.chunks.append("".join(self))
            self.clear()

    def text(self) -> str:
        self.chunks.append("".join(self))
        self.clear()
        return "".join(self.chunks)


class _NotPlainJson(Exception):
    """A value ``json`` would convert first (a non-string key, an unknown type)."""


def _json_scalar(value: Any) -> str:
    if isinstance(value, str):
        return _encode_str(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    raise _NotPlainJson


def _write_json(value: Any, indent: str, out: list[str]) -> None:
    if isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = indent + "  "
        sep = ",\n" + inner
        out.append("{\n" + inner)
        first = True
        for key in sorted(value):  # mixed key types: TypeError, as json raises
            if not isinstance(key, str):
                raise _NotPlainJson
            if first:
                first = False
            else:
                out.append(sep)
            out.append(_encode_str(key) + ": ")
            _write_json(value[key], inner, out)
        out.append("\n" + indent + "}")
    elif isinstance(value, list | tuple | LazyList):
        if not value:
            out.append("[]")
            return
        inner = indent + "  "
        sep = ",\n" + inner
        out.append("[\n" + inner)
        first = True
        for item in value:
            if first:
                first = False
            else:
                out.append(sep)
            _write_json(item, inner, out)
        out.append("\n" + indent + "]")
    else:
        out.append(_json_scalar(value))
