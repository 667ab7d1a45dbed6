"""On random flows, changes that keep the meaning are "no change in behaviour":
``diff(F, fmt(F))`` and ``diff(F, decompile(compile(F)))``."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings

from flowc.compiler.analysis.changes import Version, diff_versions
from flowc.compiler.analysis.facts import CheckOptions
from flowc.compiler.decompile import decompile
from flowc.compiler.pipeline import compile_source
from flowc.dsl.formatter import format_source
from flowc.source import SourceFile
from tests.check.test_check_soundness import flow_text

OPTIONS = CheckOptions(max_states=5_000)


def version(name: str, text: str) -> Version:
    compiled, diags = compile_source(SourceFile(name, text))
    assert compiled is not None, (text, diags)
    return Version(name, compiled)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=flow_text())
def test_formatting_changes_no_behaviour(text: str) -> None:
    old = version("f.flow", text)
    # the formatter's layout, plus a comment and blank lines of our own
    new_text = "# reviewed\n\n" + format_source(text).replace("\n", "\n\n", 1)
    new = version("fmt.flow", new_text)
    d = diff_versions(old, new, OPTIONS)
    assert d.first is None, (text, d.first)
    assert d.behavioural == ()
    assert d.structural == ()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=flow_text())
# a custom target's `-> a | b` list is not in the graph: decompile cannot write it back
@example(
    text="target pick() -> a | b | terminate\nspeaker user\nspeaker a\nspeaker b\n"
    'when from user then pick()\nwhen from a then terminate "t"\n'
)
def test_decompiling_the_compiled_graph_changes_no_behaviour(text: str) -> None:
    old = version("f.flow", text)
    assert old.compiled is not None
    # the graph carries neither the participants (their order is what `next` goes round)
    # nor the initiator (whom `initiator` routes back to): they are given, as a user would
    back = decompile(
        old.compiled.knobs, participants=old.compiled.speakers, initiator=old.compiled.initiator
    )
    new = version("decompiled.flow", back)
    d = diff_versions(old, new, OPTIONS)
    assert d.first is None, (text, back, d.first)
    assert not [
        c
        for c in d.structural
        if c.kind.startswith(("rule-", "default", "cap", "start", "context"))
    ]
