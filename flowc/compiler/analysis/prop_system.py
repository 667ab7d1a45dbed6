"""The abstract system a flow's properties are decided on: the flow's own, as `check`
explores it, when in each of its states every comparison the properties make is true or
false; else the flow's with the values they compare told apart (a second exploration).
See :mod:`flowc.compiler.analysis.properties`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flowc.compiler import model as m
from flowc.compiler.analysis.system import OTHER, UNSET, System, system_of_flow
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.monitor import expr_key, walk
from flowc.compiler.properties import Property, expressions

__all__ = [
    "Comparisons",
    "comparisons",
    "hits_on",
    "property_literals",
    "reads_turns",
    "system_for",
    "told_apart",
]

#: how each comparison (``context.k == v``) the properties make reads a system's abstract
#: states, by the comparison's :func:`~flowc.compiler.monitor.expr_key`: :func:`hits_on`
Comparisons = Mapping[Any, tuple[int, frozenset[int]]]


def property_literals(props: Sequence[Property]) -> dict[str, list[Any]]:
    """The context keys and values the properties compare (``context.k == v``).

    >>> from flowc.compiler.properties import Never
    >>> property_literals([Property("p", Never(m.ContextEquals("stage", "draft")))])
    {'stage': ['draft']}
    """
    out: dict[str, list[Any]] = {}
    for prop in props:
        for expr in expressions(prop):
            for e in walk(expr):
                if isinstance(e, m.ContextEquals):
                    values = out.setdefault(e.key, [])
                    if not any(m.values_equal(v, e.value) for v in values):
                        values.append(e.value)
    return out


def told_apart(system: System, props: Sequence[Property]) -> bool:
    """Whether ``system`` already tells apart every value the properties compare: in each
    of its abstract states, each comparison is true or false (:func:`hits_on`)."""
    return comparisons(system, props) is not None


def comparisons(system: System, props: Sequence[Property]) -> Comparisons | None:
    """:func:`hits_on` of each comparison ``props`` make, or None when ``system`` does not
    tell one of them; made once per system and sequence of properties (whether the first
    exploration serves them, which system decides them, and the search read it)."""
    return system.made_for("comparisons", props, lambda: _comparisons(system, props))


def _comparisons(system: System, props: Sequence[Property]) -> Comparisons | None:
    out: dict[Any, tuple[int, frozenset[int]]] = {}
    for prop in props:
        for expr in expressions(prop):
            for e in walk(expr):
                if isinstance(e, m.ContextEquals) and expr_key(e) not in out:
                    found = hits_on(system, e.key, e.value)
                    if found is None:
                        return None
                    out[expr_key(e)] = found
    return out


def hits_on(system: System, key: str, value: Any) -> tuple[int, frozenset[int]] | None:
    """How ``context.key == value`` reads an abstract state of ``system``: the key's
    index (-1 for a key it does not track) and the abstract values it holds on; None when
    the state does not tell (the value is one of several the key may hold that ``system``
    lumps together as "another value", or the key is written but not tracked).

    A value no rule compares is told apart all the same when the key can hold no other
    value the rules do not compare: every run gives it only this one (then "another
    value" is it), or never this one (then it never holds). A key nothing tracks and
    nothing writes is never set. ``== null`` holds on a key not set and on one set to null
    (a value like any other here). What a key can hold is what the flow declares: its
    initial value and its tools' writes, each alternative (a human who writes it may
    write anything).

    >>> from flowc import compile_flow
    >>> s = system_of_flow(compile_flow('''
    ... speaker a { tool ok sets stage = "ok" }
    ... speaker b { tool pub sets stage = "published" }
    ... when context.stage == "ok" then b
    ... '''))
    >>> [hits_on(s, "stage", v) for v in ("ok", "published", "gone", None)]
    [(0, frozenset({2})), (0, frozenset({1})), (0, frozenset()), (0, frozenset({0}))]
    >>> hits_on(s, "other", None), hits_on(s, "other", 1)
    ((-1, frozenset({0})), (-1, frozenset()))
    >>> wiped = system_of_flow(compile_flow('''
    ... speaker a { tool ok sets stage = "ok" tool wipe sets stage = null }
    ... speaker b
    ... when context.stage == "ok" then b
    ... '''))
    >>> hits_on(wiped, "stage", None), hits_on(wiped, "stage", "gone")
    ((0, frozenset({0, 1})), (0, frozenset()))
    """
    if key in system.keys:
        k = system.keys.index(key)
        found = system.abstract(k, value)
        hits = {found} - {OTHER}
        if value is None:
            hits.add(UNSET)  # (`== null` holds on a key not set, and on one set to null)
        if found == OTHER:
            # what the key holds when the state says "another value": may it be this one?
            writable = _writable(system, key)
            if writable is None:
                return None
            same = [m.values_equal(v, value) for v in writable if system.abstract(k, v) == OTHER]
            if same and all(same):
                hits.add(OTHER)
            elif any(same):
                return None
        return k, frozenset(hits)
    writable = _writable(system, key)
    if writable is None or writable:
        return None
    return -1, frozenset({UNSET}) if value is None else frozenset()


def _writable(system: System, key: str) -> list[Any] | None:
    """The values a run of ``system``'s flow may give ``key``: its initial value and every
    write of every tool (each alternative); None when a human may write it (any value) or
    the flow is not at hand."""
    compiled = system.compiled
    if compiled is None or any(key in keys for keys in compiled.human_writes.values()):
        return None
    out = [system.initial_context[key]] if key in system.initial_context else []
    for actions in system.actions:
        for action in actions:
            out.extend(v for k, v in action.sets if k == key)
    return out


def system_for(
    compiled: CompiledFlow, props: Sequence[Property], base: System | None = None
) -> System:
    """The abstract system that decides ``props``: ``base`` (the flow's own, as
    ``check`` explores it) when it already tells apart every value they compare, else
    the flow's with those values added (rules read the same abstract values as before).
    """
    base = base if base is not None else system_of_flow(compiled)
    if told_apart(base, props):
        return base
    return system_of_flow(compiled, property_literals(props), base=base)


def reads_turns(system: System) -> bool:
    """Whether :func:`check_properties` decides the flow's properties on the exploration
    of ``system`` itself (which then keeps each node's turns): it has properties, and
    tells apart every value they compare (else they are decided on another)."""
    compiled = system.compiled
    if compiled is None or not compiled.properties or system.json_mode:
        return False
    return told_apart(system, compiled.properties)
