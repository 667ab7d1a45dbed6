"""The checker writes each distinct condition and target once (``Describer``, keyed by
``condition_key``): the texts must be those of ``transition_text`` for every rule, and
two conditions share a key only when they are the same condition."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler import model as m
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.describe import (
    Describer,
    condition_key,
    condition_text,
    target_text,
    transition_text,
)
from flowc.compiler.pipeline import compile_source
from flowc.compiler.serde import unstructure_condition
from flowc.diagnostics import elide
from flowc.source import SourceFile
from tests.check.golden_flows import flow

ROOT = Path(__file__).resolve().parents[2]


def _flows() -> list[tuple[str, str]]:
    found = [
        (str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
        for p in sorted(ROOT.glob("**/*.flow"))
        if ".venv" not in p.parts and "node_modules" not in p.parts
    ]
    return found + [(f"seed{s}", flow(s)) for s in range(100)]


def _transitions() -> list[tuple[m.Transition, dict[str, str]]]:
    out = []
    for name, text in _flows():
        compiled, _ = compile_source(SourceFile(name, text))
        if compiled is None:
            continue
        names = {compiled.agent_id(s): s for s in compiled.speakers}
        out += [(t, names) for t in compiled.graph.transitions]
    return out


TRICKY = [
    m.ContextEquals("k", 1),
    m.ContextEquals("k", True),
    m.ContextEquals("k", 1.0),
    m.ContextEquals("k", 0.0),
    m.ContextEquals("k", -0.0),
    m.ContextEquals("k", None),
    m.ContextEquals("k", "1"),
    m.ContextEquals("k", [1]),
    m.ContextEquals("k", {"a": 1}),
    m.Not(m.ContextEquals("k", 1)),
    m.Not(m.ContextEquals("k", True)),
    m.AllOf((m.FromSpeaker("a"), m.ToolCalled("a"))),
    m.AnyOf((m.FromSpeaker("a"), m.ToolCalled("a"))),
    m.AllOf((m.ToolCalled("a"), m.FromSpeaker("a"))),
    m.FromSpeaker("a"),
    m.ToolCalled("a"),
    m.Always(),
    m.AllOf(()),
    m.AnyOf(()),
    m.AllOf((m.Always(),)),
    m.CustomCondition("urgent", {"level": 1}),
    m.CustomCondition("urgent", {"level": True}),
]


def test_every_rule_is_described_as_transition_text() -> None:
    transitions = _transitions()
    assert len(transitions) > 1000
    describers: dict[int, Describer] = {}
    for t, names in transitions:
        d = describers.setdefault(id(names), Describer(names))
        assert d.transition(t) == transition_text(t, names)
        assert d.transition(t, condition_key(t.when)) == transition_text(t, names)  # cached


@pytest.mark.parametrize("cond", TRICKY, ids=repr)
def test_tricky_conditions(cond: m.Condition) -> None:
    d = Describer()
    for other in TRICKY:
        d.condition(other)  # every other one cached first
    assert d.condition(cond) == condition_text(cond)
    t = m.Transition(cond, m.TerminateTarget("1"), 2)
    assert d.transition(t) == transition_text(t)


def test_a_key_is_one_condition() -> None:
    """Conditions with one key serialise alike (the same JSON, types included) and
    are written alike; ``==`` alone would equate ``1``, ``1.0`` and ``true``."""
    conds = TRICKY + [t.when for t, _ in _transitions()]
    seen: dict[object, m.Condition] = {}
    for cond in conds:
        key = condition_key(cond)
        if key is None:
            continue
        first = seen.setdefault(key, cond)
        assert repr(unstructure_condition(first)) == repr(unstructure_condition(cond))
        assert condition_text(first) == condition_text(cond)
    assert condition_key(m.ContextEquals("k", 1)) != condition_key(m.ContextEquals("k", True))
    assert condition_key(m.ContextEquals("k", 0.0)) != condition_key(m.ContextEquals("k", -0.0))


def test_targets() -> None:
    d = Describer({"a1": "alice"})
    targets = [
        m.AgentTarget("a1"),
        m.AgentTarget("b"),
        m.TerminateTarget("done"),
        m.TerminateTarget("1"),
        m.RoundRobinTarget(),
        m.StayTarget(),
        m.RevertToInitiatorTarget(),
        m.CustomTarget("pick", {"x": 1}),
        m.CustomTarget("pick", {"x": True}),
    ]
    for t in targets * 2:
        assert d.target(t) == target_text(t, {"a1": "alice"})


def test_system_labels_use_the_cache() -> None:
    compiled, _ = compile_source(SourceFile("s.flow", flow(7)))
    assert compiled is not None
    system = system_of_flow(compiled)
    for rule in system.rules:
        text = transition_text(m.Transition(rule.when, rule.then, rule.priority), system.id_names)
        assert system.describe_rule(rule) == elide(text)
