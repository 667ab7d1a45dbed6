"""The checks compiling makes on a flow's scenarios (E111, W214): what ``flowc test``
would refuse on any run, found before a run. The lowering (:mod:`flowc.compiler.lower`)
runs them; they change nothing in the compiled flow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import attrs

from flowc.compiler.serde import describe
from flowc.compiler.tool_effects import (
    KICKOFF_TEXT_ONLY,
    AlternativeError,
    ToolEffectInfo,
    bare_alternatives,
    bare_effect_refusal,
    effects_info,
    finish_reason,
    human_write_refusal,
    match_alternative,
)
from flowc.diagnostics import E111, W214, Code, Diagnostic
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_name, format_value
from flowc.source import Span


@attrs.define
class ScenarioChecks:
    """The scenario checks of one lowering: they report into its ``diags`` (in the order
    they find things) and name speakers through its ``need_speaker`` (E101)."""

    filename: str
    speakers: Mapping[str, n.SpeakerDecl]
    diags: list[Diagnostic]
    need_speaker: Callable[[n.Name, str], bool]
    start: str  # the start speaker: its first turn is the kickoff

    def error(self, code: Code, message: str, span: Span, help: str | None = None) -> None:
        self.diags.append(Diagnostic(code, message, self.filename, span, help=help))

    def check_scenario(self, sc: n.Scenario, reasons: set[str] | None) -> None:
        """What ``flowc test`` would refuse on any run: undeclared speakers and tools, a
        tool effect the tool does not have, a close reason the flow never writes."""
        if not sc.items:
            self.diags.append(
                Diagnostic(
                    W214,
                    f"scenario {format_value(sc.title.value)} is empty: it has no turns "
                    "and no expectations, so it tests nothing",
                    self.filename,
                    sc.title.span,
                    help="write the run it stands for, one turn a line, with `expect` lines",
                )
            )
            return
        finishes = {
            finish_reason(item.reason.value if item.reason is not None else "")
            for item in sc.items
            if isinstance(item, n.FinishTurn)
        }
        turns = (n.SayTurn, n.CallTurn, n.SetTurn, n.ClearTurn, n.FinishTurn, n.HandoffTurn)
        first = next((item for item in sc.items if isinstance(item, turns)), None)
        for item in sc.items:
            names: list[n.Name] = []
            if isinstance(item, n.SayTurn | n.CallTurn | n.SetTurn | n.ClearTurn | n.FinishTurn):
                names.append(item.speaker)
            elif isinstance(item, n.HandoffTurn):
                names += [item.speaker, item.target]
            elif isinstance(item, n.ExpectNext):
                names.append(item.speaker)
            known = all([self.need_speaker(name, "the scenario names") for name in names])
            human = (
                known
                and bool(names)
                and self.speakers[names[0].value].human
                and not isinstance(item, n.ExpectNext)
            )
            if (
                item is first
                and known
                and not human
                and names[0].value == self.start
                and not isinstance(item, n.SayTurn)
            ):
                self.error(
                    E111,
                    KICKOFF_TEXT_ONLY.format(speaker=self.start),
                    item.span,
                    help=f'open the scenario with `{self.start}: "..."`',
                )
            elif human and isinstance(item, n.CallTurn | n.HandoffTurn | n.FinishTurn):
                who = names[0].value
                self.error(
                    E111,
                    f"`{who}` is a human; a human's turn is text and context "
                    "writes (`sets` / `clears`), not tool calls",
                    item.span,
                    help="give the call to a model speaker's turn",
                )
            elif human and isinstance(item, n.SetTurn | n.ClearTurn):
                self.check_human_writes(item)
            elif known and isinstance(item, n.SetTurn | n.ClearTurn | n.HandoffTurn | n.FinishTurn):
                self.check_bare_turn(item)
            elif isinstance(item, n.CallTurn) and known:
                self.check_call(item)
            elif (
                isinstance(item, n.ExpectTerminate)
                and item.reason is not None
                and (reasons is not None or item.reason.value == "")
            ):
                # (an empty reason is never recorded, whatever a custom target returns)
                want = item.reason.value
                closes = (reasons or set()) | finishes
                if want not in closes:
                    close = close_match(want, closes)
                    listed = ", ".join(format_value(r) for r in sorted(closes))
                    self.error(
                        E111,
                        f"the flow never ends with {format_value(want)}: "
                        + (
                            "a run never closes with an empty reason"
                            if reasons is None
                            else f"its runs close with {listed}"
                            if listed
                            else "it writes no close reason"
                        ),
                        item.reason.span,
                        help=empty_reason_help(closes)
                        if want == ""
                        else f"did you mean {format_value(close)}?"
                        if close
                        else "expect one of the reasons the flow writes, or `expect terminate` "
                        "with no reason",
                    )
            elif isinstance(item, n.ExpectTurns):
                count = item.count.value
                if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                    self.error(
                        E111,
                        f"`expect turns` takes a whole number >= 0, got {describe(count)}",
                        item.count.span,
                    )

    def check_human_writes(self, item: n.SetTurn | n.ClearTurn) -> None:
        who = item.speaker.value
        allowed = self.speakers[who].written_keys
        keys = [a.key for a in item.assigns] if isinstance(item, n.SetTurn) else list(item.keys)
        for key in keys:
            if key.value not in allowed:
                self.error(
                    E111,
                    human_write_refusal(who, key.value, allowed),
                    key.span,
                    help=f"declare it: `speaker {format_name(who)}: human {{ sets "
                    f"{format_name(key.value)} }}`",
                )

    def check_bare_turn(self, item: n.SetTurn | n.ClearTurn | n.HandoffTurn | n.FinishTurn) -> None:
        """A model speaker's bare hand-off, finish or write is one a declared tool makes."""
        who = item.speaker.value
        if isinstance(item, n.SetTurn):
            effect = ToolEffectInfo(tuple((a.key.value, a.value.value) for a in item.assigns))
        elif isinstance(item, n.ClearTurn):
            effect = ToolEffectInfo(clears=tuple(k.value for k in item.keys))
        elif isinstance(item, n.HandoffTurn):
            effect = ToolEffectInfo(handoff=item.target.value)
        else:
            effect = ToolEffectInfo(
                finish=item.reason.value if item.reason is not None else "finished"
            )
        tools = {
            t.name.value: tuple(effects_info(alt) for alt in t.alternatives)
            for t in self.speakers[who].tools
        }
        refusal = bare_effect_refusal(who, tools, effect)
        if refusal is not None:
            self.error(
                E111,
                refusal,
                item.span,
                help=None
                if bare_alternatives(tools, effect)  # ambiguous: the message says what to write
                else f"declare it: `speaker {format_name(who)} {{ tool "
                f"{'go' if effect.handoff else 'act'} {effect.text()} }}`, "
                f"or write the step as `{who} calls TOOL`",
            )

    def check_call(self, item: n.CallTurn) -> None:
        speaker, tool = item.speaker.value, item.tool.value
        decls = {t.name.value: t for t in self.speakers[speaker].tools}
        decl = decls.get(tool)
        if decl is None:
            declared = sorted(decls)
            hint = f" (declared: {', '.join(declared)})" if declared else " (it declares none)"
            close = close_match(tool, declared)
            self.error(
                E111,
                f"{speaker} has no tool `{tool}`{hint}",
                item.tool.span,
                help=f"did you mean `{close}`?"
                if close
                else f"declare it in `speaker {format_name(speaker)} {{ tool {tool} }}`",
            )
            return
        alts = tuple(effects_info(alt) for alt in decl.alternatives)
        effects = effects_info(item.effects) if item.effects else None
        try:
            match_alternative(alts, effects, None, None, speaker, tool)
        except AlternativeError as err:
            message = str(err)
            self.error(
                E111,
                message,
                item.span,
                help=None
                if not alts or "in a scenario:" in message
                else f"write the alternative the call takes: `{speaker} calls {tool} "
                f"{alts[0].text()}`",
            )


def empty_reason_help(known: set[str]) -> str:
    """The help for ``expect terminate ""``: what an empty reason closes a run with.

    >>> print(empty_reason_help({"finished", "max_turns"}))
    an empty reason is never recorded: a tool's `finishes ""` closes the run as "finished", \
`terminate ""` as "workflow_terminated" (as AG2 does); did you mean "finished"?
    """
    meant = [r for r in ("finished", "workflow_terminated") if r in known]
    said = (
        'an empty reason is never recorded: a tool\'s `finishes ""` closes the run as '
        '"finished", `terminate ""` as "workflow_terminated" (as AG2 does)'
    )
    return said + (
        "; did you mean " + " or ".join(format_value(r) for r in meant) + "?" if meant else ""
    )


def close_match(word: str, options: Iterable[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return close[0] if close else None
