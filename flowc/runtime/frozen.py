"""Frozen attrs records built the cheap way, from their one declaration.

A frozen attrs class sets each field in ``__init__`` through ``object.__setattr__``
(about 0.8 k instructions a field), which the records a run makes on every turn (an
envelope, a transcript record, a script's turn) pay again and again. Instead, the class
sits on a writable base that holds its slots (:func:`writable_base`), and its builder
(:func:`builder`) fills an instance of that base with plain attribute stores and then
gives it the frozen class: the same layout, so the object is in every way one the
class's ``__init__`` would have built. Both are derived from the class's fields, so a
field is added in one place, the class body::

    @attrs.frozen
    @writable_base
    class Turn:
        say: str
        where: str = ""

    make_turn = builder(Turn)

>>> @attrs.frozen
... @writable_base
... class Turn:
...     say: str
...     where: str = ""
>>> make_turn = builder(Turn)
>>> make_turn("hi") == Turn("hi"), type(make_turn("hi")) is Turn
(True, True)
>>> Turn.__slots__, Turn.__mro__[1].__slots__
((), ('say', 'where', '__weakref__'))
"""

from __future__ import annotations

import inspect  # loaded with attrs anyway
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import attrs

__all__ = ["builder", "writable_base"]

T = TypeVar("T")
P = ParamSpec("P")


def writable_base(cls: type[T]) -> type[T]:
    """``cls`` on a base class that holds a slot for each of its annotated fields (and
    ``__weakref__``), so that ``attrs.frozen`` (applied after this, i.e. written above
    it) adds no slot of its own. The base is named ``_<Name>Slots``."""
    names = tuple(inspect.get_annotations(cls))  # its own fields, not its bases'
    base = type(
        f"_{cls.__name__}Slots",
        (),
        {
            "__slots__": (*names, "__weakref__"),
            "__module__": cls.__module__,
            "__doc__": f"The writable storage of :class:`{cls.__name__}` (see {__name__}).",
        },
    )
    body = {k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__")}
    made: type[T] = type(cls.__name__, (base,), body)
    return made


def builder(cls: Callable[P, T]) -> Callable[P, T]:
    """A function that takes what ``cls(...)`` takes (the same parameters, in order, with
    the same defaults) and returns the object ``cls(...)`` returns, built the cheap way:
    its :func:`writable_base` filled, then given ``cls``. Refuses a class whose
    ``__init__`` does more than store its arguments (a converter, a validator, a
    factory, a cached hash) or that adds a slot to its base."""
    if not isinstance(cls, type):
        raise TypeError(f"{cls!r} is not a class")
    fields = attrs.fields(cls)
    base = cls.__mro__[1]
    problems = [
        f.name
        for f in fields
        if f.converter is not None
        or f.validator is not None
        or isinstance(f.default, attrs.Factory)  # type: ignore[arg-type]
        or not f.init
    ]
    if problems or cls.__dict__.get("__slots__") != () or "__attrs_cached_hash__" in dir(cls):
        raise TypeError(f"{cls.__name__}: its __init__ does more than store {problems or ''}")
    if set(getattr(base, "__slots__", ())) != {f.name for f in fields} | {"__weakref__"}:
        raise TypeError(f"{cls.__name__}: its base does not hold exactly its fields")
    namespace: dict[str, Any] = {"_new": object.__new__, "_base": base, "_cls": cls}
    params = []
    for f in fields:
        if f.default is attrs.NOTHING:
            params.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
    lines = [f"def build({', '.join(params)}):", "    obj = _new(_base)"]
    lines += [f"    obj.{f.name} = {f.name}" for f in fields]
    lines += ["    obj.__class__ = _cls", "    return obj"]
    exec(compile("\n".join(lines), f"<{cls.__name__} builder>", "exec"), namespace)
    build: Callable[P, T] = namespace["build"]
    build.__qualname__ = build.__name__ = f"build_{cls.__name__}"
    build.__doc__ = f"``{cls.__name__}(...)``, built the cheap way (see {__name__})."
    return build
