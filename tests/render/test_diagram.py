"""The diagram model: only the edges a flow declares, with targets resolved."""

from __future__ import annotations

import json

from flowc.compiler.pipeline import load_graph_json
from flowc.compiler.render.diagram import (
    CAP,
    DEFAULT,
    HUMAN,
    OTHERWISE,
    RULE,
    SPEAKER,
    START,
    TERMINAL,
    TOOL,
    UNKNOWN,
    build_diagram,
)
from flowc.source import SourceFile
from tests.render.helpers import diagram_of, edge_set


def test_nodes_speakers_humans_start_terminals_and_cap() -> None:
    _, d = diagram_of(
        "speaker user: human\nspeaker bot\nmax_turns 4\n"
        'when from user then bot\nwhen context.x == 1 then terminate "one"\n'
        'when context.x == 2 then terminate "one"\nwhen from bot then terminate\n'
    )
    kinds = [(n.kind, n.title) for n in d.nodes]
    assert kinds == [
        (START, "start"),
        (HUMAN, "user"),
        (SPEAKER, "bot"),
        (TERMINAL, 'terminate "one"'),  # one node per distinct reason
        (TERMINAL, 'terminate "after_work"'),
        (CAP, "max_turns 4"),
    ]
    assert d.speaker_node("user").details == ("human",)
    start_edges = [e for e in d.edges if e.kind == "start"]
    assert [(d.node(e.source).kind, d.node(e.target).title) for e in start_edges] == [
        (START, "user")
    ]


def test_no_cap_node_without_max_turns() -> None:
    _, d = diagram_of("speaker a\nspeaker b\nwhen from a then b\n")
    assert CAP not in {n.kind for n in d.nodes}


def test_from_rule_only_from_its_speaker_always_from_everyone() -> None:
    _, d = diagram_of("speakers a, b, c\nwhen from b then c\nwhen always then a priority 3\n")
    # `from b` is tried first and always fires for b: `always` only starts at a and c
    assert edge_set(d, RULE) == {
        ("b", "c", "rule 1, line 2: from b"),
        ("a", "a", "rule 2, line 3: always"),
        ("c", "a", "rule 2, line 3: always"),
    }
    # priority shows where not 0
    assert all(
        e.label[1] == "priority 3" for e in d.edges if e.label[:1] == ("rule 2, line 3: always",)
    )
    assert all(len(e.label) == 1 for e in d.edges if e.label[:1] == ("rule 1, line 2: from b",))


def test_rules_are_named_by_file_number_and_line_whatever_their_priority() -> None:
    # the diagram names rules as run, log, test and check do: file order, with the line;
    # the priority that changes the evaluation order shows on the edge instead
    _, d = diagram_of(
        "speakers a, b\nwhen from a then b priority 5\nwhen from b then a\n"
        "when context.k == 1 then terminate priority -1\n"
    )
    heads = {e.rule: e.label[0].split(":")[0] for e in d.edges if e.kind == RULE}
    assert heads == {0: "rule 1, line 2", 1: "rule 2, line 3", 2: "rule 3, line 4"}
    prios = {e.rule: e.label[1] for e in d.edges if e.kind == RULE and len(e.label) > 1}
    assert prios == {0: "priority 5", 2: "priority -1"}


def test_a_shadowed_rule_names_the_rules_tried_before_it() -> None:
    _, d = diagram_of(
        "speakers a, b\nwhen from a then b\nwhen from b then a\n"
        "when always then terminate priority 2\n"
    )
    note = next(n for n in d.nodes if n.title.endswith("never fires"))
    assert note.title == "rule 3, line 4 never fires"
    assert note.details[1:] == ("rule 1, line 2", "rule 2, line 3")


def test_next_stay_initiator_resolve_to_real_edges() -> None:
    _, d = diagram_of(
        "speakers u: human, p, c, t\ninitiator p\n"
        "when from u then next\nwhen from c then stay\nwhen from t then initiator\n"
        "when from p then next\n"
    )
    rules = {(a, b) for a, b, _ in edge_set(d, RULE)}
    assert rules == {("u", "p"), ("c", "c"), ("t", "p"), ("p", "c")}
    vias = {e.label[-1] for e in d.edges if e.kind == RULE}
    assert vias == {"via next", "via stay", "via initiator"}
    assert "initiator" in d.speaker_node("p").details


def test_next_wraps_around_the_declaration_order() -> None:
    _, d = diagram_of("speakers a, b, c\nround_robin a, b, c\n")
    assert {(a, b) for a, b, _ in edge_set(d, RULE)} == {("a", "b"), ("b", "c"), ("c", "a")}


def test_initiator_defaults_to_the_start_speaker() -> None:
    _, d = diagram_of("speakers a, b\nstart b\nwhen always then initiator\n")
    assert {(a, b) for a, b, _ in edge_set(d, RULE)} == {("a", "b"), ("b", "b")}


def test_custom_target_goes_to_its_result_list_or_to_a_question_mark() -> None:
    _, d = diagram_of(
        "speakers a, b, c\n"
        'target pick(k: string) -> b | c | terminate "gave up"\ntarget oracle()\n'
        'when from a then pick(k = "x")\nwhen from b then oracle()\n'
    )
    assert {(a, b) for a, b, _ in edge_set(d, RULE)} == {
        ("a", "b"),
        ("a", "c"),
        ("a", 'terminate "gave up"'),
        ("b", "?"),
    }
    unknown = [n for n in d.nodes if n.kind == UNKNOWN]
    assert len(unknown) == 1 and "oracle" in unknown[0].details[0]
    assert {e.label[-1] for e in d.edges if e.kind == RULE} == {'via pick(k = "x")', "via oracle()"}


def test_tool_condition_only_from_the_speakers_that_declare_it() -> None:
    _, d = diagram_of(
        "speaker a { tool go }\nspeaker b\nspeaker c { tool go }\n"
        "when tool go then b\nwhen tool nobody then a\n"
    )
    assert {(a, b) for a, b, _ in edge_set(d, RULE)} == {("a", "b"), ("c", "b")}


def test_composite_conditions_narrow_the_senders() -> None:
    _, d = diagram_of(
        "speakers a, b, c\n"
        "when from a and context.k == 1 then c\n"
        "when not from a then a\n"
        "when from a or from b then c\n"
    )
    by_rule: dict[int, set[str]] = {}
    for e in d.edges:
        if e.kind == RULE:
            by_rule.setdefault(e.rule or 0, set()).add(d.node(e.source).title)
    # `not from a` always fires for b and c, so the later `from b` never does: it is
    # drawn from a note that says so
    assert by_rule == {0: {"a"}, 1: {"b", "c"}, 2: {"a"}, 3: {"rule 4, line 4 never fires"}}


def test_tool_handoffs_and_finishes_are_edges_and_writes_are_on_the_speaker() -> None:
    _, d = diagram_of(
        'speaker a {\n  tool t sets k = 1, hands off to b | finishes "done"\n  tool w clears k\n}\n'
        "speaker b\nwhen from b then a\n"
    )
    assert edge_set(d, TOOL) == {("a", "b", "tool t"), ("a", 'terminate "done"', "tool t")}
    assert d.speaker_node("a").details == (
        'tool t: sets k = 1, hands off to b | finishes "done"',
        "tool w: clears k",
    )


def test_default_edge_only_from_speakers_without_a_rule_that_always_fires() -> None:
    _, d = diagram_of(
        "speakers a, b, c\nwhen from a then b\nwhen context.k == 1 then a\n"
        'otherwise terminate "fell"\n'
    )
    assert edge_set(d, DEFAULT) == {
        ("b", 'terminate "fell"', "otherwise"),
        ("c", 'terminate "fell"', "otherwise"),
    }
    assert all(e.spans for e in d.edges if e.kind == DEFAULT)  # the written otherwise


def test_written_default_that_nobody_reaches_is_drawn_on_its_own() -> None:
    _, d = diagram_of('speakers a, b\nwhen always then next\notherwise terminate "never"\n')
    assert edge_set(d, DEFAULT) == {("otherwise", 'terminate "never"', "otherwise")}
    assert [n.kind for n in d.nodes if n.title == "otherwise"] == [OTHERWISE]


def test_implicit_default_that_nobody_reaches_is_not_drawn() -> None:
    _, d = diagram_of("speakers a, b\nwhen always then next\n")
    assert not edge_set(d, DEFAULT)
    assert OTHERWISE not in {n.kind for n in d.nodes}
    assert TERMINAL not in {n.kind for n in d.nodes}


def test_default_next_and_stay_resolve_per_sender() -> None:
    _, d = diagram_of("speakers a, b, c\nwhen from a then b\notherwise next\n")
    assert {(a, b) for a, b, _ in edge_set(d, DEFAULT)} == {("b", "c"), ("c", "a")}


def test_rule_edges_carry_their_source_spans() -> None:
    compiled, d = diagram_of("speakers a, b, c\nwhen from a, b then c\n")
    edges = [e for e in d.edges if e.kind == RULE]
    assert [e.rule for e in edges] == [0, 1]
    for e in edges:
        info = compiled.rules[e.rule or 0]
        assert e.spans[0] == info.span
        assert e.spans[-1] == info.statement.span
        assert e.json_path == f"transitions[{e.rule}]"


def test_speaker_nodes_carry_their_declaration_span() -> None:
    compiled, d = diagram_of("speaker a\nspeaker b: human\n")
    decls = compiled.flow.speakers()
    assert d.speaker_node("a").spans == (decls[0].span,)
    assert d.speaker_node("b").spans == (decls[1].span,)


def test_bound_agent_ids_map_back_to_speaker_names() -> None:
    from flowc import compile_flow

    compiled = compile_flow("speakers a, b\nwhen from a then b\n", bindings={"a": "agent-1"})
    d = build_diagram(compiled)
    assert ("a", "b", "rule 1, line 2: from a") in edge_set(d, RULE)


def test_json_graph_every_mentioned_id_is_a_speaker_and_tools_from_everyone() -> None:
    graph = {
        "initial_speaker": "u",
        "transitions": [
            {
                "when": {"name": "from_speaker", "args": {"agent_id": "u"}},
                "then": {"name": "agent", "args": {"agent_id": "w-1"}},
                "priority": 0,
            },
            {
                "when": {"name": "tool_called", "args": {"tool_name": "done"}},
                "then": {"name": "terminate", "args": {"reason": "ok"}},
                "priority": 0,
            },
            {
                "when": {"name": "always", "args": {}},
                "then": {"name": "picker", "args": {}},
                "priority": 2,
            },
        ],
        "default_target": {"name": "terminate", "args": {"reason": "after_work"}},
        "max_turns": None,
    }
    loaded, diags = load_graph_json(SourceFile("g.json", json.dumps(graph)))
    assert loaded is not None, diags
    d = build_diagram(loaded)
    assert [n.title for n in d.nodes if n.kind == SPEAKER] == ["u", "w-1"]
    # `from u` is tried first and always fires for u, so the later rules only start at w-1
    assert {(a, b) for a, b, _ in edge_set(d, RULE)} == {
        ("u", "w-1"),
        ("w-1", 'terminate "ok"'),
        ("w-1", "?"),
    }
    # `always` fires for everyone: the implicit default is never reached
    assert not edge_set(d, DEFAULT)


def test_no_edge_that_the_flow_does_not_declare() -> None:
    """Every rule edge comes from a sender its condition allows and goes where its
    target resolves; the examples are built this way from real flows."""
    _compiled, d = diagram_of(
        'speaker user: human\nspeaker w { tool done finishes "ok" }\nspeaker r\n'
        "when from user then w\nwhen from w then r\nwhen from r then w\n"
    )
    assert edge_set(d) == {
        ("start", "user", ""),
        ("w", 'terminate "ok"', "tool done"),
        ("user", "w", "rule 1, line 4: from user"),
        ("w", "r", "rule 2, line 5: from w"),
        ("r", "w", "rule 3, line 6: from r"),
    }


def test_a_humans_writable_keys_are_drawn_on_its_node_in_every_format() -> None:
    from flowc.compiler.render.rendering import render

    text = (
        "speaker user: human {\n  sets approved, `from`\n}\nspeaker bot\n"
        "when from user then bot\nwhen from bot then user\nmax_turns 4\n"
    )
    r = render(text, filename="h.flow")
    assert r.diagram.speaker_node("user").details == ("human", "sets approved, `from`")
    assert "sets approved, `from`" in r.dot
    assert "sets approved, `from`" in r.mermaid.replace("#96;", "`")
