"""Properties of the language tools on generated flows."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowc import compile_flow, decompile, format_source
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_flow
from flowc.dsl.parser import parse_source
from flowc.source import SourceFile
from tests.dsl.strategies import flows

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(flows())
def test_printed_flows_parse_back_to_the_same_tree(flow: n.Flow) -> None:
    text = format_flow(flow)
    parsed, diags = parse_source(SourceFile("gen.flow", text))
    assert diags == ()
    assert parsed == flow


@SETTINGS
@given(flows())
def test_fmt_is_idempotent_and_keeps_meaning(flow: n.Flow) -> None:
    text = format_flow(flow)
    once = format_source(text)
    assert format_source(once) == once
    assert compile_flow(once).knobs == compile_flow(text).knobs


@SETTINGS
@given(flows())
def test_compile_is_deterministic(flow: n.Flow) -> None:
    text = format_flow(flow)
    assert compile_flow(text).to_json() == compile_flow(text).to_json()


@SETTINGS
@given(flows())
def test_decompile_round_trips_every_compiled_graph(flow: n.Flow) -> None:
    compiled = compile_flow(format_flow(flow))
    knobs = compiled.knobs
    back = compile_flow(decompile(knobs, participants=compiled.speakers))
    assert back.knobs == knobs


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_parse_never_raises_on_arbitrary_text(text: str) -> None:
    parse_source(SourceFile("any.flow", text))
