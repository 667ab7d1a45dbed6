"""The project's one cattrs converter: strict structuring of graph and knobs dicts into
the model, with every problem at its JSON path.

:mod:`flowc.compiler.serde` reads a dict that has exactly the model's shape by itself
and hands everything else here: this module decides what is refused and says where
(``transitions[3].then.args.agent_id: expected a string, got 5``). It is imported only
then, or when a graph holds a value that is not plain JSON, so that a command that
reads well-formed graphs does not load cattrs.

>>> structure({"initial_speaker": "a", "max_turns": 0}, m.TransitionGraph)
Traceback (most recent call last):
...
flowc.compiler.shape_problems.ShapeError: max_turns: must be at least 1, got 0
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn

from flowc.compiler import model as m
from flowc.compiler.shape_problems import ShapeError, ShapeProblem, describe

__all__ = ["converter", "structure"]

_CONDITIONS_BY_NAME: dict[str, type[Any]] = {
    cls.NAME: cls for cls in (*m.BUILTIN_CONDITIONS, *m.COMPOSITE_CONDITIONS)
}
_TARGETS_BY_NAME: dict[str, type[Any]] = {cls.NAME: cls for cls in m.BUILTIN_TARGETS}


class _TypeProblem(ValueError):
    """A leaf value of the wrong type (message already in words)."""


def _strict_str(value: Any, _: Any) -> str:
    if not isinstance(value, str):
        raise _TypeProblem(f"expected a string, got {describe(value)}")
    return value


def _strict_int(value: Any, _: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _TypeProblem(f"expected an integer, got {describe(value)}")
    return value


def _any(value: Any, _: Any) -> Any:
    return value


def _json_object(value: Any, _: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _TypeProblem(f"expected an object, got {describe(value)}")
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        raise _TypeProblem(f"object keys must be strings, got {describe(bad[0])}")
    return dict(value)


def _noted(exc: Exception, note: Any) -> Exception:
    exc.__notes__ = [*getattr(exc, "__notes__", []), note]
    return exc


def _named_object(value: Any, what: str, registry: dict[str, type[Any]], custom: type[Any]) -> Any:
    """Structure ``{"name": ..., "args": {...}}`` into the class its name picks.

    ``args`` may be left out or ``null``: AG2 reads ``data.get("args") or {}``.
    """
    if not isinstance(value, dict):
        raise _TypeProblem(
            f"expected a {what} object with `name` (and optional `args`), got {describe(value)}"
        )
    errors: list[Exception] = []
    extra = set(value) - {"name", "args"}
    if extra:
        errors.append(ForbiddenExtraKeysError("", dict, extra))
    name = value.get("name")
    if "name" not in value:
        errors.append(_noted(KeyError("name"), AttributeValidationNote("name", "name", str)))
    elif not isinstance(name, str):
        errors.append(
            _noted(
                _TypeProblem(f"expected a {what} name (a string), got {describe(name)}"),
                AttributeValidationNote("name", "name", str),
            )
        )
    args = value.get("args")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        errors.append(
            _noted(
                _TypeProblem(f"expected an object, got {describe(args)}"),
                AttributeValidationNote("args", "args", dict),
            )
        )
    result: Any = None
    if not errors:
        assert isinstance(name, str)
        cls = registry.get(name)
        try:
            if cls is None:
                result = custom(name, _json_object(args, None))
            else:
                result = converter.structure(args, cls)
        except Exception as exc:
            errors.append(_noted(exc, AttributeValidationNote("args", "args", dict)))
    if errors:
        raise ClassValidationError(f"While structuring a {what}", errors, dict)
    return result


#: conditions nest at most this deep in a graph (a flow nests them at most 100 deep);
#: deeper is refused here, at this depth in every command, rather than wherever Python's
#: recursion limit happens to fall in the command reading it (check took 193 `not`s, run 192)
MAX_CONDITION_DEPTH = 128
_nesting = threading.local()


def _structure_condition(value: Any, _: Any) -> m.Condition:
    depth: int = getattr(_nesting, "depth", 0)
    if depth >= MAX_CONDITION_DEPTH:
        raise _TypeProblem(
            f"nested too deeply: conditions nest at most {MAX_CONDITION_DEPTH} levels"
        )
    _nesting.depth = depth + 1
    try:
        return _named_object(value, "condition", _CONDITIONS_BY_NAME, m.CustomCondition)  # type: ignore[no-any-return]
    finally:
        _nesting.depth = depth


def _structure_target(value: Any, _: Any) -> m.Target:
    if value is None:
        # AG2's `target_from_dict(None)` is its default, `TerminateTarget()`: a `null`
        # `default_target` or rule `then` loads there as terminate "after_work"
        return m.TerminateTarget()
    return _named_object(value, "target", _TARGETS_BY_NAME, m.CustomTarget)  # type: ignore[no-any-return]


def _unstructure_named(obj: Any) -> dict[str, Any]:
    if isinstance(obj, m.CustomCondition | m.CustomTarget):
        return {"name": obj.name, "args": dict(obj.args)}
    args = {a.name: converter.unstructure(getattr(obj, a.name)) for a in attrs.fields(type(obj))}
    return {"name": obj.NAME, "args": args}


def _list_of(item_hook: Any, null_is_empty: bool = False) -> Any:
    """A list's hook; with ``null_is_empty`` a ``null`` is the empty list (AG2 reads a
    graph's ``data.get("transitions") or []``, but iterates a composite's list as is)."""

    def hook(value: Any, _: Any) -> tuple[Any, ...]:
        if value is None and null_is_empty:
            return ()
        if not isinstance(value, list | tuple):
            raise _TypeProblem(f"expected a list, got {describe(value)}")
        out: list[Any] = []
        errors: list[Exception] = []
        for i, item in enumerate(value):
            try:
                out.append(item_hook(item, None))
            except Exception as exc:
                errors.append(_noted(exc, IterableValidationNote(f"index {i}", i, object)))
        if errors:
            raise IterableValidationError("While structuring a list", errors, list)
        return tuple(out)

    return hook


#: what a JSON object of each model class holds, for "expected ..." messages
_OBJECT_WORDS: dict[type[Any], str] = {
    m.TransitionGraph: "a graph object (`initial_speaker`, `transitions`, `default_target`, "
    "`max_turns`)",
    m.Transition: "a transition object (`when`, `then`, `priority`)",
    m.Knobs: "a knobs object (`graph`, `context_vars`)",
}


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)

    def object_hook(cls: type[Any]) -> Any:
        # cattrs reads an attrs class from any mapping-like value and fails in Python's
        # words on anything else (`argument of type 'int' is not iterable`): say it in ours
        inner = make_dict_structure_fn(
            cls, conv, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True
        )
        what = _OBJECT_WORDS.get(cls, "an object")

        def hook(value: Any, _: Any) -> Any:
            if not isinstance(value, dict):
                raise _TypeProblem(f"expected {what}, got {describe(value)}")
            graph = inner(value, cls)
            if cls is m.TransitionGraph and graph.max_turns is not None and graph.max_turns < 1:
                # refused when the channel opens (a deliberate difference from AG2, which
                # closes such a run after its first turn): every command refuses it alike
                raise ClassValidationError(
                    "",
                    [
                        _noted(
                            _TypeProblem(f"must be at least 1, got {graph.max_turns}"),
                            AttributeValidationNote("max_turns", "max_turns", int),
                        )
                    ],
                    cls,
                )
            return graph

        return hook

    conv.register_structure_hook_factory(attrs.has, object_hook)
    conv.register_structure_hook(str, _strict_str)
    conv.register_structure_hook(int, _strict_int)
    conv.register_structure_hook(Any, _any)

    def exactly(t: Any) -> Any:
        return lambda candidate: candidate == t

    conv.register_structure_hook_func(exactly(dict[str, Any]), _json_object)
    conv.register_structure_hook_func(exactly(m.Condition), _structure_condition)
    conv.register_structure_hook_func(exactly(m.Target), _structure_target)
    conv.register_structure_hook_func(
        exactly(tuple[m.Condition, ...]), _list_of(_structure_condition)
    )
    conv.register_structure_hook_func(
        exactly(tuple[m.Transition, ...]),
        _list_of(lambda v, _: conv.structure(v, m.Transition), null_is_empty=True),
    )
    conv.register_structure_hook_func(
        exactly(int | None), lambda v, _: None if v is None else _strict_int(v, _)
    )
    for cls in (*m.BUILTIN_CONDITIONS, *m.COMPOSITE_CONDITIONS, *m.BUILTIN_TARGETS):
        conv.register_unstructure_hook(cls, _unstructure_named)
    conv.register_unstructure_hook(m.CustomCondition, _unstructure_named)
    conv.register_unstructure_hook(m.CustomTarget, _unstructure_named)
    conv.register_unstructure_hook(
        m.Transition,
        lambda t: {
            "when": conv.unstructure(t.when),
            "then": conv.unstructure(t.then),
            "priority": t.priority,
        },
    )
    conv.register_unstructure_hook(
        m.TransitionGraph,
        lambda g: {
            "initial_speaker": g.initial_speaker,
            "transitions": [conv.unstructure(t) for t in g.transitions],
            "default_target": conv.unstructure(g.default_target),
            "max_turns": g.max_turns,
        },
    )
    conv.register_unstructure_hook(
        m.Knobs,
        lambda k: {"graph": conv.unstructure(k.graph), "context_vars": dict(k.context_vars)},
    )
    return conv


converter = _make_converter()


def _problems(exc: BaseException, path: str) -> Iterator[ShapeProblem]:
    if isinstance(exc, ClassValidationError | IterableValidationError):
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            if isinstance(note, IterableValidationNote):
                yield from _problems(sub, f"{path}[{note.index}]")
            else:
                sep = "." if path else ""
                yield from _problems(sub, f"{path}{sep}{note.name}")
        for sub in without:
            yield from _problems(sub, path)
    elif isinstance(exc, ForbiddenExtraKeysError):
        allowed = _allowed_keys(exc.cl)
        expected = (
            "; this object takes no keys"
            if not allowed
            else "; expected " + " or ".join(", ".join(f"`{k}`" for k in allowed).rsplit(", ", 1))
        )
        for key in sorted(exc.extra_fields, key=str):
            sep = "." if path else ""
            yield ShapeProblem(f"{path}{sep}{key}", f"unexpected key{expected}")
    elif isinstance(exc, KeyError):
        key = path.rsplit(".", 1)[-1]
        what = _KEY_WORDS.get(key)
        yield ShapeProblem(
            path, f"required key missing: expected {what}" if what else "required key missing"
        )
    elif isinstance(exc, _TypeProblem):
        yield ShapeProblem(path, str(exc))
    elif isinstance(exc, RecursionError):
        yield ShapeProblem(path, "nested too deeply")
    else:
        yield ShapeProblem(path, f"invalid value ({exc})")


#: what a required key holds, for "required key missing" messages
_KEY_WORDS = {
    "initial_speaker": "the agent id of the first speaker (a string)",
    "graph": "the graph object",
    "when": "a condition object (`name`, `args`)",
    "then": "a target object (`name`, `args`)",
    "name": "a name (a string)",
    "agent_id": "an agent id (a string)",
    "tool_name": "a tool name (a string)",
    "key": "a context key (a string)",
    "value": "the value to compare with (any JSON value, null included)",
    "conditions": "a list of condition objects",
    "condition": "a condition object (`name`, `args`)",
    "reason": "a close reason (a string)",
}


def _allowed_keys(cls: type[Any]) -> list[str]:
    if attrs.has(cls):
        return [f.name for f in attrs.fields(cls)]
    return ["name", "args"]  # a condition or target object


def structure(value: Any, cls: type[Any], root: str = "") -> Any:
    """``value`` read as ``cls`` (the graph or the knobs); raises :class:`ShapeError`."""
    if not isinstance(value, dict):
        what = _OBJECT_WORDS.get(cls, "an object")
        if cls is m.Knobs or cls is m.TransitionGraph:
            what = "a graph object or a knobs object (`graph`, `context_vars`)"
        raise ShapeError([ShapeProblem(root, f"expected {what}, got {describe(value)}")])
    try:
        return converter.structure(value, cls)
    except (ClassValidationError, IterableValidationError, _TypeProblem, KeyError) as exc:
        raise ShapeError(list(_problems(exc, root))) from None
    except RecursionError:
        raise ShapeError([ShapeProblem(root, "nested too deeply")]) from None
