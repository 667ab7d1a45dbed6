"""One explanation per finding (issue 25): the analysis works out why a rule never fires
once (``Diagnostic.explanation``), and `check`, `render --check` and the language
server's hover (tests/lsp/test_lsp.py) show that same text. A rule waiting for a tool
whose every call finishes the run (or hands the turn off) says so and names the effect."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import flowc
from flowc.cli import main
from flowc.compiler.render.diagram import SHADOWED, build_diagram, mark_findings

#: the issue's case: `close` finishes the run, so `when tool close` is never tried;
#: the diagram, reading the rules alone, would say rule 2 takes its turns
CLOSE = """\
speaker user: human
speaker bot {
  tool close finishes "done"
}
start user
when from user then bot
when from bot then user
when tool close then terminate "closed"
"""

FINISHING = (
    'every call of `close` ends the run (`finishes "done"`) before the rules are '
    "tried, so no rule ever sees such a turn"
)


def w203(text: str) -> flowc.Diagnostic:
    (found,) = [d for d in flowc.check(text) if d.code.id == "W203"]
    return found


def test_a_finishing_tool_is_the_explanation_and_the_help_fits() -> None:
    d = w203(CLOSE)
    assert d.explanation == FINISHING
    assert (
        d.message
        == f'rule 3, line 8 (`when tool close then terminate "closed"`) can never fire: {FINISHING}'
    )
    # the note shows a run that calls it, and the run ends there
    assert d.notes == ('a shortest run that calls it: user → bot (close) → terminate "done"',)
    # the tool is declared: no "declare the tool" help, but what to write instead
    assert d.help is not None and "declare the tool" not in d.help
    assert d.help == (
        "remove the rule: the tool's `finishes` effect already closes the run; to "
        'close it with "closed", declare `tool close finishes "closed"`'
    )


def test_hand_offs_and_mixed_tools() -> None:
    handoff = CLOSE.replace('tool close finishes "done"', "tool close hands off to user")
    d = w203(handoff)
    assert d.explanation == (
        "every call of `close` hands the turn off (`hands off to user`) "
        "before the rules are tried, so no rule ever sees such a turn"
    )
    assert d.help == (
        "remove the rule, or, if the rules should route calls of `close`, give it "
        "an alternative without `hands off to`"
    )
    both = CLOSE.replace(
        'tool close finishes "done"', 'tool close finishes "done" | hands off to user'
    )
    assert w203(both).explanation is not None
    assert "ends the run or hands the turn off" in (w203(both).explanation or "")
    # one alternative the rules route: the rule fires, no W203
    routed = CLOSE.replace('tool close finishes "done"', 'tool close finishes "done" | sets x = 1')
    # `from bot` takes it first (and the routing alternative beside a finishing one is an
    # AG2 difference, the I304 note)
    assert [d.code.id for d in flowc.check(routed)] == ["I304", "W203"]
    assert "earlier rules" in (w203(routed).explanation or "")


def test_every_dead_rule_finding_carries_its_explanation() -> None:
    shadowed = w203(CLOSE.replace('tool close finishes "done"', "tool close"))
    assert (
        shadowed.explanation == "earlier rules (in priority order) take every turn it could match"
    )
    contradiction = w203(CLOSE.replace("when tool close", "when from user and from bot"))
    assert (contradiction.explanation or "").startswith("its condition contradicts itself: ")
    never = w203(
        "speaker user: human\nspeaker bot\nstart user\n"
        "when context.k == 1 and from bot then user\nwhen from user then bot\n"
        'when from bot then terminate "done"\ncontext k = 2\n'
    )
    assert never.explanation == "its condition holds on no turn of any run"
    for d in (shadowed, contradiction, never):
        assert d.message.endswith(f"can never fire: {d.explanation}")
    trap = [
        d
        for d in flowc.check(
            "speaker user: human\nspeaker bot { tool ok sets done = true }\nstart user\n"
            'when context.done == true then terminate "ok" priority 100\n'
            "when from user then bot\nwhen from bot then user\n"
        )
        if d.code.id == "W204"
    ]
    assert trap and trap[0].message.endswith(f"can never fire: {trap[0].explanation}")


def test_render_check_draws_the_checkers_explanation() -> None:
    compiled = flowc.compile_flow(CLOSE)
    plain = build_diagram(compiled)
    (note,) = [x for x in plain.nodes if x.kind == SHADOWED]
    # unchecked, the diagram reads the rules alone: `from bot` is tried first
    assert note.details[0] == "tried earlier, these take every turn it matches:"
    checked = mark_findings(plain, flowc.check(CLOSE))
    (note,) = [x for x in checked.nodes if x.kind == SHADOWED]
    assert " ".join(note.details) == f"W203: {FINISHING}"


@pytest.mark.parametrize("fmt", ["dot", "mermaid"])
def test_render_check_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "close.flow").write_text(CLOSE, encoding="utf-8")
    assert main(["render", "close.flow", "--check", "-f", fmt]) == 0
    out, err = capsys.readouterr()
    assert "take every turn" not in out and "ends the run" in out
    assert main(["check", "close.flow", "--format", "concise"]) == 0
    check_out = capsys.readouterr().out
    # stderr of render --check is check's own concise report
    assert err == check_out.splitlines(keepends=True)[0]
    assert FINISHING in err


def test_priority_trap_help_is_followed_to_no_finding() -> None:
    """W204's help gives a priority below every rule that takes its turns: the README's
    review loop with `priority -5` on its `from` rules needs `priority -6` (the language
    server's quick fix writes the same, tests/lsp/test_actions.py), not `priority -1`,
    nor a rule without a priority moved up."""
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    (loop,) = [  # the review loop as first written
        block.split("```")[0] for block in readme.split("```flow\n") if "priority 100" in block
    ]
    text = re.sub(r"^(when from .*)$", r"\1 priority -5", loop, flags=re.MULTILINE)
    (trap,) = [d for d in flowc.check(text) if d.code.id == "W204"]
    assert trap.help is not None and "move it up" not in trap.help
    (given,) = re.findall(r"`(priority -?\d+)`", trap.help.split(",")[0])
    fixed = text.replace("priority 100", given)
    assert "W204" not in {d.code.id for d in flowc.check(fixed)}
    # with no other priority below 0, the rule may instead lose its priority and move up
    (plain,) = [d for d in flowc.check(loop) if d.code.id == "W204"]
    assert plain.help is not None and "`priority -1`" in plain.help
    rule = next(line for line in loop.splitlines() if "priority 100" in line)
    moved = loop.replace(rule + "\n", "").replace(
        "when from", rule.replace(" priority 100", "") + "\nwhen from", 1
    )
    assert "W204" not in {d.code.id for d in flowc.check(moved)}
