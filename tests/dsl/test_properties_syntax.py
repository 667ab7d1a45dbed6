"""The `property` statement (issue 27): what each form parses and lowers to, both parsers
agreeing on it, its errors at their places, its one canonical line, and what it leaves
alone (the compiled dict, decompile, diagrams)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from flowc import compile_flow, decompile, format_source
from flowc.cli import main
from flowc.compiler import model as m
from flowc.compiler.describe import expression_text, property_text
from flowc.compiler.pipeline import compile_source
from flowc.compiler.properties import (
    After,
    AfterUntil,
    Always,
    AtMost,
    Before,
    Between,
    Ends,
    Eventually,
    Globally,
    Never,
    OnlyAfter,
    Previous,
    Property,
    Responds,
    TurnIs,
)
from flowc.diagnostics import FlowError
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_flow, format_name, format_property
from flowc.dsl.keywords import KEYWORDS, MAX_NESTING
from flowc.dsl.parser import parse_source
from flowc.source import SourceFile
from tests.dsl.strategies import flows
from tests.dsl.test_descent import agree
from tests.hostile.fuzz import mutate

ROOT = Path(__file__).resolve().parents[2]
NEW_KEYWORDS = [
    "property",
    "never",
    "eventually",
    "within",
    "turn",
    "time",
    "times",
    "at",
    "most",
    "only",
    "after",
    "before",
    "until",
    "ends",
    "previous",
]

BASE = """\
speaker user: human {
  sets approved
}
speaker bot {
  tool escalate
  tool refund sets refunded = true
  tool quit finishes "bye"
}
speaker agent
start user
max_turns 12
when tool escalate then agent
when from user then bot
when from agent then bot
when context.refunded == true then terminate "refunded"
otherwise terminate "answered"
"""

BOT, USER, AGENT = m.FromSpeaker("bot"), m.FromSpeaker("user"), m.FromSpeaker("agent")
REFUND, ESCALATE = m.ToolCalled("refund"), m.ToolCalled("escalate")
APPROVED = m.ContextEquals("approved", True)

#: a property's text after `property p: `, and the pattern and scope it lowers to
LOWERED = [
    ("never from bot", Never(BOT), Globally()),
    ("always not tool refund", Always(m.Not(REFUND)), Globally()),
    ("eventually ends", Eventually(Ends()), Globally()),
    ('eventually ends "bye" within 3 turns', Eventually(Ends("bye"), 3), Globally()),
    ("eventually from agent within 1 turn", Eventually(AGENT, 1), Globally()),
    ("eventually from agent within 1 turns", Eventually(AGENT, 1), Globally()),
    ("tool refund at most 1 time", AtMost(REFUND, 1), Globally()),
    ("tool refund at most 0 times", AtMost(REFUND, 0), Globally()),
    ("tool refund at most 3 times", AtMost(REFUND, 3), Globally()),
    ("tool refund only after context.approved == true", OnlyAfter(REFUND, APPROVED), Globally()),
    ("after tool escalate, from agent", Responds(ESCALATE, AGENT), Globally()),
    ("after tool escalate, from agent within 2 turns", Responds(ESCALATE, AGENT, 2), Globally()),
    (
        "after from user, bot, from agent",
        Responds(m.AnyOf((USER, BOT)), AGENT),
        Globally(),
    ),
    (
        "after from user or tool escalate, ends within 1 turn",
        Responds(m.AnyOf((USER, ESCALATE)), Ends(), 1),
        Globally(),
    ),
    ("never ends before turn >= 3", Never(Ends()), Before(TurnIs(">=", 3))),
    ("never ends after from user", Never(Ends()), After(USER)),
    ("never ends after from user before from agent", Never(Ends()), Between(USER, AGENT)),
    ("never ends after from user until from agent", Never(Ends()), AfterUntil(USER, AGENT)),
    (
        "after tool escalate, from agent within 1 turn after from user until ends",
        Responds(ESCALATE, AGENT, 1),
        AfterUntil(USER, Ends()),
    ),
    ("never turn == 0", Never(TurnIs("==", 0)), Globally()),
    ("never turn != 1", Never(TurnIs("!=", 1)), Globally()),
    ("never turn < 2", Never(TurnIs("<", 2)), Globally()),
    ("never turn <= 2", Never(TurnIs("<=", 2)), Globally()),
    ("never turn > 11", Never(TurnIs(">", 11)), Globally()),
    ("never turn>=12", Never(TurnIs(">=", 12)), Globally()),
    ("never context.refunded != true", Never(m.Not(m.ContextEquals("refunded", True))), Globally()),
    (
        'never context.approved == {"a": [1, null]}',
        Never(m.ContextEquals("approved", {"a": [1, None]})),
        Globally(),
    ),
    ("never from bot, agent", Never(m.AnyOf((BOT, AGENT))), Globally()),
    ("never from bot and previous from bot", Never(m.AllOf((BOT, Previous(BOT)))), Globally()),
    # or < and < not, previous < atom
    (
        "never from bot or from agent and previous from bot",
        Never(m.AnyOf((BOT, m.AllOf((AGENT, Previous(BOT)))))),
        Globally(),
    ),
    ("never not previous from bot", Never(m.Not(Previous(BOT))), Globally()),
    ("never previous not from bot", Never(Previous(m.Not(BOT))), Globally()),
    ("never previous previous from bot", Never(Previous(Previous(BOT))), Globally()),
    (
        "never (from bot or from agent) and turn > 1",
        Never(m.AllOf((m.AnyOf((BOT, AGENT)), TurnIs(">", 1)))),
        Globally(),
    ),
    (
        "never previous (from bot and from agent)",
        Never(Previous(m.AllOf((BOT, AGENT)))),
        Globally(),
    ),
    ("(from bot) only after (tool escalate)", OnlyAfter(BOT, ESCALATE), Globally()),
    (
        'eventually ends "refunded" or ends "answered" or ends "max_turns" or ends "bye"',
        Eventually(m.AnyOf((Ends("refunded"), Ends("answered"), Ends("max_turns"), Ends("bye")))),
        Globally(),
    ),
]


def lowered(rest: str) -> Property:
    (prop,) = compile_flow(BASE + f"property p: {rest}\n").properties
    return prop


@pytest.mark.parametrize(("rest", "pattern", "scope"), LOWERED, ids=[c[0] for c in LOWERED])
def test_every_pattern_scope_and_atom_lowers_to_its_model(
    rest: str, pattern: object, scope: object
) -> None:
    prop = lowered(rest)
    assert prop == Property("p", pattern, scope)  # type: ignore[arg-type]
    # its text is the statement as `flowc fmt` writes it, and says the same
    assert prop.text == format_source(f"property p: {rest}\n").rstrip("\n")
    assert lowered(prop.text.removeprefix("property p: ")) == prop
    # written back from the model (describe), it lowers to the same property again
    assert lowered(property_text(prop).removeprefix("property p: ")) == prop
    # and both parsers read it alike
    assert agree(BASE + f"property p: {rest}\n")


def test_properties_in_file_order_with_their_spans() -> None:
    text = BASE + (
        "property b: never from bot  # after the rules\n"
        "property a: after tool escalate,\n"
        "  from agent within 1 turn  # over two lines\n"
        "property `after`: never (ends)\n"
    )
    compiled = compile_flow(text)
    got = [
        (p.name, p.span.line, p.span.column, p.span.end_line, p.span.end_column)
        for p in compiled.properties
    ]
    last = len(BASE.splitlines())
    assert got == [
        ("b", last + 1, 1, last + 1, 27),
        ("a", last + 2, 1, last + 3, 27),
        ("after", last + 4, 1, last + 4, 31),  # the closing parenthesis included
    ]
    assert [p.text for p in compiled.properties] == [
        "property b: never from bot",
        "property a: after tool escalate, from agent within 1 turn",
        "property `after`: never ends",
    ]
    for prop in compiled.properties:
        assert prop.span is not None
        assert text[prop.span.start : prop.span.end].startswith("property ")


def test_bound_speakers_are_lowered_as_rules_are() -> None:
    compiled = compile_flow(BASE + "property p: never from bot\n", bindings={"bot": "agent-7"})
    assert compiled.properties[0].pattern == Never(m.FromSpeaker("agent-7"))
    assert expression_text(m.FromSpeaker("agent-7"), {"agent-7": "bot"}) == "from bot"


# ── both parsers ─────────────────────────────────────────────────────────────

#: valid and invalid texts: the fast parser accepts exactly what the LALR parser does,
#: with the same tree and spans
TEXTS = [
    "property p: never from a, b",
    'property p: after from a, b, tool t within 2 turns after from c until ends "x"',
    "property p: after from a, `b`, from c",
    "property p: after (from a), from b",
    "property p: after from a, b(",
    "property p: after from a, c(x = 1)",
    "property p: after tool t, c(x = 1)",
    "property p: never from a,\n b",
    "property p: never from a,",
    "property p: tool t at most 1 time",
    "property p: tool t at most 2 time",
    "property p: tool t at most -1 times",
    "property p: tool t at most 1.0 times",
    "property p: (from a) only after (tool x or previous from b)",
    "property p: always always",
    "property p: always at most 2 times",
    "property p: always (always) only after from a",
    "property p: never over(x = 1)",
    "property p: never not over()",
    "property p: eventually turn >= 2.5",
    "property p: eventually turn == 1e3",
    "property p: eventually turn < -1",
    "property p: eventually ends within 3 turn",
    "property p: eventually ends within 0 turns",
    "property p: eventually ends within 1 turn",
    "property p: eventually ends within 3",
    "property p: never not previous context.k != [1] and ends before turn == 3",
    "property p: always (((from a)))  # c\nspeaker a",
    "property p: eventually ends within 1 turn after tool t before ((tool x) and (from y))",
    "property `after`: never from `after`, `before`",
    "property p: always from a after from b until turn > 3\ncontext k = 1",
    'property p: eventually ends\nscenario "x" {}',
    'property p: eventually ends\n"x"',
    "property p: never turn = 1",
    "property p: never turn",
    "property p: never",
    "property p:",
    "property p never from a",
    "property: never from a",
    "property p: from a",
    "property p: from a only from b",
    "property p: after from a",
    "property p: after from a, from b before",
    "property p: never from a after from b before from c until from d",
    "property p: never (from a",
    "property p: never from a) ",
    "property p: never context.k == " + "[" * MAX_NESTING + "]" * MAX_NESTING,
    "property p: never context.k == " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1),
    "property p: never " + "previous " * MAX_NESTING + "from a",
    "property p: never " + "previous " * (MAX_NESTING + 1) + "from a",
    "property p: never " + "not (" * 60 + "from a" + ")" * 60,
    "when previous from a then b",
    "when ends then b",
    "when turn > 1 then b",
    "when from a then b\nproperty p: never from a\nwhen from b then a",
]


@pytest.mark.parametrize("text", TEXTS)
def test_both_parsers_agree(text: str) -> None:
    agree(text)


@pytest.mark.parametrize("chunk", [1, 2])
def test_lines_scanned_a_few_at_a_time(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A property spread over lines that the fast parser scans a chunk at a time (a `from`
    list whose comma ends one chunk, its `after P, S` going on in the next)."""
    from flowc.dsl import descent

    monkeypatch.setattr(descent, "_CHUNK", chunk)
    for text in [
        *TEXTS,
        "property p: after from a,\nb,\nfrom c\nwithin\n2\nturns\nafter\nturn\n>\n1",
        "property p: after from a\n,\nb\n,\ntool t",
    ]:
        agree(text)


def test_deep_parentheses_are_handed_over_and_parsed() -> None:
    from flowc.dsl import descent

    text = "speakers a, b\nproperty p: never " + "(" * 400 + "from a" + ")" * 400
    assert descent.parse_valid(text) is None
    assert agree(text, may_hand_over=True)


def test_mutated_properties() -> None:
    """Seeded character-level mutations of a flow full of properties: both parsers agree
    on each (most do not parse)."""
    source = (ROOT / "tests" / "editors" / "textmate" / "snap" / "support_desk.flow").read_text()
    assert source.count("property ") >= 10
    rng = random.Random(20270127)
    parsed = 0
    for _ in range(400):
        text = source
        for _ in range(rng.randint(1, 3)):
            text = mutate(text, rng)
        parsed += agree(text)
    assert parsed > 30


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(flows())
def test_both_parsers_agree_on_generated_flows(flow: n.Flow) -> None:
    assert agree(format_flow(flow))


@SETTINGS
@given(flows())
def test_generated_properties_lower_to_their_texts(flow: n.Flow) -> None:
    """Each property lowers once, in file order, with the formatter's text; written back
    from the model it lowers to the same; the compiled dict is the flow's without them."""
    text = format_flow(flow)
    compiled = compile_flow(text)
    decls = [st for st in flow.statements if isinstance(st, n.PropertyDecl)]
    assert [p.text for p in compiled.properties] == [format_property(d) for d in decls]
    names = {v: k for k, v in compiled.bindings.items()}
    for prop in compiled.properties:
        again = compile_flow(
            text + property_text(prop, names).replace(prop.name, "again", 1) + "\n"
        )
        assert again.properties[-1].pattern == prop.pattern
        assert again.properties[-1].scope == prop.scope
    without = n.Flow(
        tuple(st for st in flow.statements if not isinstance(st, n.PropertyDecl)), (), flow.span
    )
    assert compile_flow(format_flow(without)).to_json() == compiled.to_json()


# ── errors ───────────────────────────────────────────────────────────────────

#: (what follows BASE, line, column, message, help) of the one E001 a property gets
SYNTAX_ERRORS = [
    (
        "property p: never turn < 2.5",
        1,
        26,
        "`turn` is compared with a whole number, 0 or more; found `2.5`",
        None,
    ),
    (
        "property p: never turn == 1e3",
        1,
        27,
        "`turn` is compared with a whole number, 0 or more; found `1e3`",  # as written
        None,
    ),
    (
        "property p: never turn > -1",
        1,
        26,
        "`turn` is compared with a whole number, 0 or more; found `-1`",
        None,
    ),
    (
        "property p: eventually ends within 0 turns",
        1,
        36,
        "`within` takes a whole number of turns, 1 or more; found `0`",
        None,
    ),
    (
        "property p: eventually ends within 1.5 turns",
        1,
        36,
        "`within` takes a whole number of turns, 1 or more; found `1.5`",
        None,
    ),
    (
        "property p: eventually ends within 2 turn",
        1,
        38,
        "`within 2 turn`: the singular is for 1; write `turns`",
        None,
    ),
    (
        "property p: tool refund at most 2 time",
        1,
        35,
        "`at most 2 time`: the singular is for 1; write `times`",
        None,
    ),
    (
        "property p: tool refund at most 0 time",
        1,
        35,
        "`at most 0 time`: the singular is for 1; write `times`",
        None,
    ),
    (
        "property p: tool refund at most 2.0e0 times",
        1,
        33,
        "`at most` takes a whole number of times, 0 or more; found `2.0e0`",
        None,
    ),
    (
        "property p: tool refund at most -1 times",
        1,
        33,
        "`at most` takes a whole number of times, 0 or more; found `-1`",
        None,
    ),
    (
        "property p: tool refund at most 2.0 times",
        1,
        33,
        "`at most` takes a whole number of times, 0 or more; found `2.0`",
        None,
    ),
    (
        "property p: always at most 2 times",
        1,
        13,
        "`always` is not a condition in a property",
        "`always P` is the pattern",
    ),
    (
        "property p: never always",
        1,
        19,
        "`always` is not a condition in a property: it holds on every turn",
        "write `turn >= 1`",
    ),
    (
        "property p: never from bot\nproperty q: never (always or ends)",
        2,
        20,
        "`always` is not a condition in a property",
        None,
    ),
    (
        "condition busy()\nproperty p: never from bot and busy()",
        2,
        32,
        "a property cannot use the custom condition `busy`",
        "what a run shows",
    ),
    (
        "property p: eventually ends or busy(x = 1) within 3 turns",
        1,
        32,
        "a property cannot use the custom condition `busy`",
        None,
    ),
    # a name after `from a,` goes on with the list: the call is no `S` here
    ("condition c()\nproperty p: after from bot, c(), from agent", 2, 30, "unexpected `(`", None),
    (
        "property p: never from bot,",
        1,
        28,
        "unexpected end of file; expected a name after `,`",
        None,
    ),
    (
        "property p: never",
        1,
        18,
        "unexpected end of file; expected an expression after `never`",
        None,
    ),
    (
        "property p:\nspeaker c",
        1,
        12,
        "expected a pattern after `:`",
        "starts another with `speaker`",
    ),
    (
        "property p: never from bot after\nspeaker c",
        1,
        33,
        "expected an expression after `after`",
        None,
    ),
    ("property p: eventually ends within 3", 1, 37, "unexpected end of file", None),
    ("property p: never turn = 1", 1, 24, "unexpected `=`", "compare with `==`"),
    ("property p: never from bot before", 1, 34, "unexpected end of file", None),
    # a misspelt keyword before a keyword (the parser took it for a custom condition's
    # name): the keyword it resembles, not "write `from` in backquotes"
    *(
        (f"property p: {rest}", 1, column, "unexpected keyword `from`; expected `(`", said)
        for rest, column, said in [
            ("nevr from bot", 18, "`nevr` is not a keyword: did you mean `never`?"),
            ("alwys from bot", 19, "`alwys` is not a keyword: did you mean `always`?"),
            ("eventualy from bot", 23, "`eventualy` is not a keyword: did you mean `eventually`?"),
            (
                "always from bot after previos from agent",
                43,
                "`previos` is not a keyword: did you mean `previous`?",
            ),
            ("xyzzy from bot", 19, "see docs/language.md"),
        ]
    ),
    # the unit suggested is the one the count takes (`turn` is for 1 only)
    *(
        (f"property p: {rest}", 1, column, f"unexpected name `{word}`", f"did you mean `{unit}`?")
        for rest, column, word, unit in [
            ("eventually ends within 2 turnz", 38, "turnz", "turns"),
            ("eventually ends within 1 turnz", 38, "turnz", "turn"),
            ("tool refund at most 2 timez", 35, "timez", "times"),
            ("tool refund at most 0 timez", 35, "timez", "times"),
            ("tool refund at most 1 timez", 35, "timez", "time"),
        ]
    ),
    (
        "property p: never " + "previous " * (MAX_NESTING + 1) + "from bot",
        1,
        19 + 9 * (MAX_NESTING - 100),
        "property expression nested more than 100 levels deep",
        "split the property into several properties",
    ),
]


@pytest.mark.parametrize(
    ("rest", "line", "column", "message", "help_text"),
    SYNTAX_ERRORS,
    ids=[c[0][:60] for c in SYNTAX_ERRORS],
)
def test_syntax_errors_at_their_place(
    rest: str, line: int, column: int, message: str, help_text: str | None
) -> None:
    base_lines = len(BASE.splitlines())
    _, diags = parse_source(SourceFile("f.flow", BASE + rest))
    (d,) = diags
    assert d.code.id == "E001" and d.span is not None
    assert (d.span.line, d.span.column) == (base_lines + line, column), d.message
    assert message in d.message
    if help_text is not None:
        assert d.help is not None and help_text in d.help


def codes_at(text: str) -> list[tuple[str, int, int, str, str | None]]:
    _, diags = compile_source(SourceFile("f.flow", text))
    return [(d.code.id, d.span.line, d.span.column, d.message, d.help) for d in diags if d.span]


def test_end_reasons_the_flow_has() -> None:
    """What `ends "r"` may name: every reason a run may close with, including the
    defaults of a bare `terminate`, `finishes`, `terminate ""`, `finishes ""`, the implied
    ends of `sequence` and `round_robin`, the cap, and a called custom target's declared
    `terminate "r"` results."""
    flow = (
        'speaker a\nspeaker b {\n  tool f finishes\n  tool g finishes ""\n  tool h finishes "done"\n}\n'
        'max_turns 3\ntarget pick() -> a | terminate "picked"\n'
        'when from a then terminate\nwhen tool f then terminate ""\nwhen tool g then pick()\n'
    )
    for reason in ("after_work", "workflow_terminated", "finished", "done", "max_turns", "picked"):
        compile_flow(flow + f'property p: eventually ends "{reason}"\n')
    # not written: refused, with the reasons the flow has
    (only,) = codes_at(flow + 'property p: eventually ends "pickd"\n')
    assert only[0] == "E117" and only[4] == 'did you mean "picked"?'
    assert (
        '"after_work", "done", "finished", "max_turns", "picked", "workflow_terminated"' in only[3]
    )
    # a declared target nothing calls ends no run; without a cap, no run ends with "max_turns"
    lone = 'speakers a, b\ntarget pick() -> a | terminate "picked"\nwhen from a then b\n'
    for reason in ("picked", "max_turns"):
        (err,) = codes_at(lone + f'property p: eventually ends "{reason}"\n')
        assert err[:3] == ("E117", 4, 29)
    compile_flow(
        'speakers a, b\nsequence a -> b\nproperty p: eventually ends "sequence_complete"\n'
    )
    compile_flow(
        'speakers a, b\nround_robin a, b\nproperty p: eventually ends "round_robin_complete"\n'
    )


@pytest.mark.parametrize(
    "target",
    [
        "target pick()",
        "target pick() -> a | terminate",
        'target pick() -> terminate | terminate "x"',
    ],
)
def test_a_custom_target_that_picks_its_own_reason_allows_any(target: str) -> None:
    flow = f"speakers a, b\n{target}\nwhen from a then pick()\n"
    compiled = compile_flow(flow + 'property p: eventually ends "anything at all"\n')
    assert compiled.properties[0].pattern == Eventually(Ends("anything at all"))
    # but never the empty reason: a run closes with none
    (err,) = codes_at(flow + 'property p: eventually ends ""\n')
    assert err[0] == "E117" and "a run never closes with an empty reason" in err[3]


def test_context_keys_the_flow_sets() -> None:
    flow = (
        "speaker user: human { sets note }\nspeaker bot {\n  tool t sets done = true\n  tool c clears gone\n}\n"
        "context level = 1\nwhen from user then bot\n"
    )
    for key in ("note", "done", "level"):
        compile_flow(flow + f"property p: never context.{key} == 2\n")
    (err,) = codes_at(flow + "property p: never context.gone == null\n")  # only cleared
    assert err[:3] == ("E117", 8, 27) and "nothing sets" in err[3]
    (err,) = codes_at(flow + "property p: never context.levle == 2\n")
    assert err[4] == "did you mean `level`?"


def test_tools_the_speakers_declare() -> None:
    flow = "speakers a, b\nspeaker c { tool lookup }\nwhen from a then b\n"
    compile_flow(flow + "property p: never tool lookup\n")
    (err,) = codes_at(flow + "property p: never tool lokup\n")
    assert err == (
        "E117",
        4,
        24,
        "the property names tool `lokup`, which no speaker declares",
        "did you mean `lookup`?",
    )


def test_every_error_of_a_property_is_reported() -> None:
    """Names are checked like every other statement's: all errors at once, each at its
    place, E101 and E102 beside E117."""
    got = codes_at(
        "speakers a, b\nwhen from a then b\n"
        "property p: never from x and tool y\n"
        'property p: after context.z == 1, ends "w" before from a\n'
    )
    assert [g[:3] for g in got] == [
        ("E101", 3, 24),
        ("E117", 3, 35),
        ("E102", 4, 10),
        ("E117", 4, 27),
        ("E117", 4, 40),
    ]


# ── formatting ───────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("property  p :never   from a,b", "property p: never from a, b"),
        ("property p: eventually ends within 1 turns", "property p: eventually ends within 1 turn"),
        (
            "property p: eventually ends within 2 turns",
            "property p: eventually ends within 2 turns",
        ),
        ("property p: tool t at most 1 times", "property p: tool t at most 1 time"),
        ("property p: tool t at most 0  times", "property p: tool t at most 0 times"),
        ("property p: (from a) only after (tool x)", "property p: from a only after tool x"),
        ("property p: never not (from a or from b)", "property p: never not (from a or from b)"),
        (
            "property p: never previous (from a and from b)",
            "property p: never previous (from a and from b)",
        ),
        (
            "property p: never (previous from a) and ((from b))",
            "property p: never previous from a and from b",
        ),
        (
            "property p: never (from a or from b) or from c",
            "property p: never (from a or from b) or from c",
        ),
        ("property p: after (from a, b), (from c)", "property p: after from a, b, from c"),
        (
            'property p:\n  after\n  tool t ,\n  from a\n  within 3 turns\n  after turn>1\n  until ends "x"',
            'property p: after tool t, from a within 3 turns after turn > 1 until ends "x"',
        ),
        ("property `after`: never from `until`", "property `after`: never from `until`"),
    ],
)
def test_one_canonical_line(written: str, canonical: str) -> None:
    once = format_source(written + "\n")
    assert once == canonical + "\n"
    assert format_source(once) == once


def test_comments_around_and_inside_a_property_are_kept() -> None:
    text = (
        "# before\n"
        "property p: after tool t,   # the trigger\n"
        "  from a within 2 turns  # the answer\n"
        "property q: never ends  # trailing\n"
    )
    once = format_source(text)
    assert once == (
        "# before\n"
        "# the trigger\n"
        "property p: after tool t, from a within 2 turns  # the answer\n"
        "property q: never ends  # trailing\n"
    )
    assert format_source(once) == once


@pytest.mark.parametrize("word", NEW_KEYWORDS)
def test_the_new_keywords_are_reserved_and_quoted(word: str) -> None:
    assert word in KEYWORDS
    assert format_name(word) == f"`{word}`"
    _, diags = parse_source(SourceFile("f.flow", f"speaker {word}\n"))
    (d,) = diags
    assert d.code.id == "E001" and d.help is not None and f"`` `{word}` ``" in d.help
    text = (
        f"speakers `{word}`, b\nspeaker c {{\n  tool `{word}` sets `{word}` = 1\n}}\n"
        f"when from `{word}` then b\nwhen context.`{word}` == 1 then terminate\n"
        f"property `{word}`: never from `{word}` and tool `{word}` after context.`{word}` == 1\n"
    )
    formatted = format_source(text)
    assert format_source(formatted) == formatted
    assert text.splitlines()[-1] in formatted.splitlines()  # the property, as written
    compiled = compile_flow(formatted)
    assert compiled.properties[0].name == word
    # the graph, decompiled, writes the speaker and the key in backquotes again
    back = decompile(compiled.knobs, participants=compiled.speakers)
    assert f"`{word}`" in back
    assert compile_flow(back).knobs == compiled.knobs


# ── what a property leaves alone ─────────────────────────────────────────────

PROPERTIES = """
property no_double_bot: never from bot and previous from bot
property escalation: after tool escalate, from agent within 1 turn after from user until ends
property refund_approved: tool refund only after context.approved == true
"""


def test_compile_output_is_byte_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, with_props = tmp_path / "plain.flow", tmp_path / "props.flow"
    plain.write_text(BASE)
    with_props.write_text(BASE + PROPERTIES)
    outputs = []
    for path in (plain, with_props):
        for extra in ([], ["--graph"]):
            assert main(["compile", str(path), *extra]) == 0
            outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[2] and outputs[1] == outputs[3]
    assert len(compile_flow(BASE + PROPERTIES).properties) == 3


def test_decompile_writes_no_property() -> None:
    """A JSON graph has no properties: a .flow compiled and decompiled leaves them out."""
    compiled = compile_flow(BASE + PROPERTIES)
    back = decompile(compiled.knobs, participants=compiled.speakers)
    assert "property" not in back
    again = compile_flow(back)
    assert again.knobs == compiled.knobs and again.properties == ()


def test_diagrams_ignore_properties() -> None:
    from flowc.compiler.render.rendering import render

    plain, with_props = render(BASE), render(BASE + PROPERTIES)
    assert plain.mermaid == with_props.mermaid
    assert plain.dot == with_props.dot


def test_a_flow_without_properties_has_none() -> None:
    assert compile_flow(BASE).properties == ()


def test_an_example_with_properties_appended_compiles_the_same() -> None:
    for path in sorted((ROOT / "examples").glob("*.flow")):
        text = path.read_text(encoding="utf-8")
        try:
            compiled = compile_flow(text)
        except FlowError:
            continue
        extra = "\nproperty added_p1: eventually ends\nproperty added_p2: never turn > 100000\n"
        if re.search(r"(?m)^property ", text) is None:
            assert compile_flow(text + extra).to_json() == compiled.to_json(), path


@pytest.mark.parametrize("agent", ["after", "turn", "previous"])
def test_migrate_writes_a_new_keyword_in_backquotes(agent: str) -> None:
    """`flowc migrate` prints names as the formatter does: an agent named as one of the
    property keywords comes out backquoted, and the flow compiles."""
    from flowc.migrate import migrate_source

    code = (
        "from autogen import ConversableAgent, GroupChat, GroupChatManager\n"
        f"a = ConversableAgent({agent!r}, llm_config=False)\n"
        "b = ConversableAgent('plain', llm_config=False)\n"
        "gc = GroupChat(agents=[a, b], messages=[], max_round=5,\n"
        "               speaker_selection_method='round_robin')\n"
        "m = GroupChatManager(groupchat=gc, llm_config=False)\n"
        "a.initiate_chat(m, message='hi')\n"
    )
    result = migrate_source(SourceFile("chat.py", code))
    assert result.text is not None
    assert f"speaker `{agent}`" in result.text or f"speakers `{agent}`" in result.text
    compiled = compile_flow(result.text)
    assert agent in compiled.speakers
    assert format_source(result.text) == result.text
