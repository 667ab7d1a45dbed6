"""The workflow adapter: AG2's fold order, the compiled dispatch table, refusals at open."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import pytest

from flowc.runtime.adapters.base import ChannelMetadata, ChannelState, Participant, ProtocolError
from flowc.runtime.adapters.workflow import GraphError, WorkflowAdapter, WorkflowState
from flowc.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope
from flowc.runtime.failures import PluginFailed
from flowc.runtime.transitions import TransitionDecision, TransitionRegistry
from tests.runtime.graphs import always, chain, cond, ctx, frm, graph, rule, term, to, tool


def meta(
    g: dict[str, Any],
    order: list[str],
    creator: str | None = None,
    context: dict[str, Any] | None = None,
) -> ChannelMetadata:
    return ChannelMetadata(
        "ch",
        "workflow",
        1,
        creator or order[0],
        tuple(Participant(p, i, p) for i, p in enumerate(order)),
        {"graph": g, "context_vars": context or {}},
    )


def text(sender: str, body: str = "x") -> Envelope:
    return Envelope("ch", sender, None, EV_TEXT, {"text": body})


def packet(
    sender: str,
    body: str = "x",
    routing: dict[str, Any] | None = None,
    sets: dict[str, Any] | None = None,
    delete: list[str] | None = None,
) -> Envelope:
    return Envelope(
        "ch",
        sender,
        None,
        EV_PACKET,
        {
            "routing": routing or {"kind": "text"},
            "context_updates": {"set": sets or {}, "delete": delete or []},
            "body": body,
        },
    )


class Run:
    """Folds envelopes through validate_send -> fold -> on_accepted, as the hub does."""

    def __init__(
        self, g: dict[str, Any], order: list[str], adapter: WorkflowAdapter | None = None, **kw: Any
    ) -> None:
        self.adapter = adapter or WorkflowAdapter()
        self.meta = meta(g, order, **kw)
        self.adapter.validate_create(self.meta)
        self.state: WorkflowState = self.adapter.initial_state(self.meta)
        self.closed: str | None = None

    def send(self, env: Envelope) -> WorkflowState:
        assert self.closed is None
        self.adapter.validate_send(self.meta, env, self.state)
        new = self.adapter.fold(env, self.state)
        result = self.adapter.on_accepted(self.meta, env, new)
        self.state = new
        if result.next_state is ChannelState.CLOSED:
            self.closed = result.auto_close_reason
        return new


FEEDBACK = graph(
    "user",
    rule(ctx("done", True), term("approved")),
    rule(frm("user"), to("drafter")),
    rule(frm("drafter"), to("reviewer")),
    rule(frm("reviewer"), to("drafter")),
    default=term("max_revisions"),
    max_turns=12,
)


def test_context_on_the_packet_is_seen_by_the_same_fold() -> None:
    run = Run(FEEDBACK, ["user", "drafter", "reviewer"], context={"done": False})
    run.send(text("user"))
    run.send(packet("drafter"))
    st = run.send(packet("reviewer", sets={"done": True}))
    assert (st.expected_next_speaker, st.decided_by, run.closed) == (None, 0, "approved")
    assert st.context_vars == {"done": True} and st.turn_count == 3


def test_context_set_envelope_applies_delete_then_set_and_does_not_count_as_a_turn() -> None:
    run = Run(FEEDBACK, ["user", "drafter", "reviewer"], context={"a": 1, "b": 2})
    st = run.send(
        Envelope("ch", "drafter", None, EV_CONTEXT_SET, {"set": {"a": 5}, "delete": ["a", "b"]})
    )
    assert st.context_vars == {"a": 5} and st.turn_count == 0
    assert st.expected_next_speaker == "user"


def test_finish_routing_ends_with_its_reason_before_any_rule() -> None:
    g = graph("a", rule(always(), to("b"), priority=-100))
    run = Run(g, ["a", "b"])
    run.send(packet("a", routing={"kind": "finish", "tool": "f", "reason": "", "summary": ""}))
    assert run.closed == "finished" and run.state.decided_by == "finish"


def test_handoff_with_target_bypasses_a_priority_minus_100_rule() -> None:
    g = graph("a", rule(always(), term("never"), priority=-100), rule(frm("a"), to("b")))
    run = Run(g, ["a", "b", "c"])
    run.send(packet("a", routing={"kind": "handoff", "tool": "t", "reason": "", "target": "c"}))
    assert run.closed is None
    assert (run.state.expected_next_speaker, run.state.decided_by) == ("c", "handoff")


def test_handoff_without_target_goes_through_the_rules() -> None:
    g = graph("a", rule(tool("esc"), to("c")), rule(frm("a"), to("b")))
    run = Run(g, ["a", "b", "c"])
    run.send(packet("a", routing={"kind": "handoff", "tool": "esc", "reason": "r"}))
    assert (run.state.expected_next_speaker, run.state.decided_by) == ("c", 0)


def test_max_turns_still_applies_after_a_handoff() -> None:
    g = graph("a", rule(frm("a"), to("b")), max_turns=2)
    run = Run(g, ["a", "b", "c"])
    run.send(text("a"))
    run.send(packet("b", routing={"kind": "handoff", "tool": "t", "reason": "", "target": "c"}))
    assert run.closed == "max_turns"


def test_terminate_on_the_last_allowed_turn_keeps_its_own_reason() -> None:
    g = graph("a", rule(frm("a"), to("b")), rule(frm("b"), term("done")), max_turns=2)
    run = Run(g, ["a", "b"])
    run.send(text("a"))
    run.send(packet("b"))
    assert run.closed == "done"


def test_priorities_ascending_and_ties_in_list_order() -> None:
    g = graph(
        "a",
        rule(frm("a"), to("c"), priority=5),
        rule(frm("a"), to("b"), priority=1),
        rule(always(), to("c"), priority=1),
    )
    run = Run(g, ["a", "b", "c"])
    run.send(text("a"))
    assert (run.state.expected_next_speaker, run.state.decided_by) == ("b", 1)


def test_default_target_when_no_rule_matches() -> None:
    run = Run(chain(3), ["s0", "s1", "s2"])
    for s in ("s0", "s1", "s2"):
        run.send(packet(s))
    assert run.closed == "sequence_complete" and run.state.decided_by == "default"


def test_round_robin_advances_from_the_sender_and_initiator_is_the_creator() -> None:
    g = graph("b", rule(frm("c"), cond("revert_to_initiator")), rule(always(), cond("round_robin")))
    run = Run(g, ["a", "b", "c"], creator="a")
    assert run.send(text("b")).expected_next_speaker == "c"
    assert run.send(packet("c")).expected_next_speaker == "a"
    assert run.send(text("a")).expected_next_speaker == "b"


def test_missing_context_key_equals_null() -> None:
    g = graph("a", rule(ctx("k", None), to("b")), default=term("set"))
    run = Run(g, ["a", "b"])
    assert run.send(text("a")).expected_next_speaker == "b"


def test_stay_targets_the_sender() -> None:
    g = graph("a", rule(always(), cond("stay")), max_turns=3)
    run = Run(g, ["a", "b"])
    assert run.send(text("a")).expected_next_speaker == "a"


def test_out_of_turn_send_is_refused() -> None:
    run = Run(FEEDBACK, ["user", "drafter", "reviewer"])
    with pytest.raises(ProtocolError, match="expects 'user' to speak, got 'drafter'"):
        run.send(packet("drafter"))


def test_composites_all_of_any_of_not() -> None:
    both = cond("all_of", conditions=[frm("a"), ctx("x", 1)])
    either = cond("any_of", conditions=[ctx("y", 1), ctx("z", 1)])
    g = graph(
        "a", rule(both, to("b")), rule(cond("not", condition=either), to("c")), default=to("a")
    )
    run = Run(g, ["a", "b", "c"], context={"x": 1})
    assert run.send(text("a")).expected_next_speaker == "b"
    assert run.send(packet("b", sets={"x": 2})).expected_next_speaker == "c"
    assert run.send(packet("c", sets={"z": 1})).expected_next_speaker == "a"


def test_dispatch_table_is_per_sender_and_drops_rules_after_an_always_match() -> None:
    g = chain(5000)
    run = Run(g, [f"s{i}" for i in range(5000)])
    table = run.state.table
    assert table is not None
    assert all(len(rules) <= 1 for rules in table.by_sender.values())
    assert table.by_sender["s10"][0][0] == 10 and table.by_sender["s10"][0][1] is None
    g2 = graph("a", rule(frm("a"), to("b")), rule(always(), to("a")), rule(tool("t"), to("b")))
    table2 = Run(g2, ["a", "b"]).state.table
    assert table2 is not None
    assert [r[0] for r in table2.by_sender["a"]] == [0]
    assert [r[0] for r in table2.by_sender["b"]] == [1]


# ── refusals at open, with JSON paths ───────────────────────────────────────────


def problems(g: dict[str, Any], order: list[str], **kw: Any) -> list[str]:
    with pytest.raises(GraphError) as err:
        WorkflowAdapter().validate_create(meta(g, order, **kw))
    return [str(p) for p in err.value.problems]


def test_non_participant_target_is_refused_with_its_path() -> None:
    g = graph("a", rule(frm("a"), to("b")), rule(frm("b"), to("ghost")), default=to("nobody"))
    assert problems(g, ["a", "b"]) == [
        'transitions[1].then.args.agent_id: "ghost" is not a participant (a, b)',
        'default_target.args.agent_id: "nobody" is not a participant (a, b)',
    ]


def test_wrong_typed_priority_and_max_turns_are_refused() -> None:
    g = graph("a", rule(frm("a"), to("b"), priority="high"))  # type: ignore[arg-type]
    g["max_turns"] = "12"
    got = problems(g, ["a", "b"])
    assert 'transitions[0].priority: expected an integer, got "high"' in got
    assert 'max_turns: expected an integer, got "12"' in got
    assert problems(graph("a", max_turns=0), ["a", "b"]) == ["max_turns: must be at least 1, got 0"]


def test_initial_speaker_must_be_a_participant() -> None:
    assert problems(graph("zed"), ["a", "b"]) == [
        'initial_speaker: "zed" is not a participant (a, b)'
    ]


def test_args_that_do_not_fit_are_refused() -> None:
    g = graph("a", rule(cond("from_speaker", agent="a"), to("b")))
    got = problems(g, ["a", "b"])
    assert any(p.startswith("transitions[0].when.args") for p in got), got


def test_unknown_custom_name_is_a_clear_error_at_open(monkeypatch: pytest.MonkeyPatch) -> None:
    # nothing registered: other test modules register customs (`urgent`, `pick`) in the
    # process-wide registry when they are imported, which would add a did-you-mean here
    from flowc.compiler.registry import default_registry

    monkeypatch.setattr(default_registry(), "_conditions", {})
    monkeypatch.setattr(default_registry(), "_targets", {})
    g = graph("a", rule(cond("is_urgent", level=3), cond("pick_one")))
    assert problems(g, ["a", "b"]) == [
        "transitions[0].then.name: no target registered as `pick_one`",
        "transitions[0].when.name: no condition registered as `is_urgent`",
    ]


def test_too_few_participants() -> None:
    with pytest.raises(ProtocolError, match="at least 2 participants"):
        WorkflowAdapter().validate_create(meta(graph("a"), ["a"]))


# ── custom conditions and targets ───────────────────────────────────────────────


@attrs.frozen
class LongBody:
    name: ClassVar[str] = "long_body"
    min_chars: int

    def evaluate(self, state: Any, envelope: Envelope) -> bool:
        return len(envelope.event_data.get("body", "")) >= self.min_chars


@attrs.frozen
class Pick:
    name: ClassVar[str] = "pick"
    choice: str

    def resolve(self, state: Any, envelope: Envelope) -> TransitionDecision:
        return TransitionDecision(self.choice)


def test_registered_custom_condition_and_target() -> None:
    reg = TransitionRegistry()
    reg.register_condition(LongBody)
    reg.register_target(Pick)
    g = graph(
        "a", rule(cond("long_body", min_chars=5), cond("pick", choice="c")), rule(always(), to("b"))
    )
    run = Run(g, ["a", "b", "c"], adapter=WorkflowAdapter(reg))
    assert run.send(packet("a", body="hello world")).expected_next_speaker == "c"
    assert run.send(packet("c", body="hi")).expected_next_speaker == "b"


def test_custom_args_that_do_not_fit_are_refused_at_open() -> None:
    reg = TransitionRegistry()
    reg.register_condition(LongBody)
    g = graph("a", rule(cond("long_body", chars=5), to("b")))
    with pytest.raises(GraphError) as err:
        WorkflowAdapter(reg).validate_create(meta(g, ["a", "b"]))
    assert str(err.value.problems[0]).startswith("transitions[0].when.args: args do not fit")


def test_a_custom_target_choosing_a_non_participant_fails_the_fold() -> None:
    reg = TransitionRegistry()
    reg.register_target(Pick)
    run = Run(
        graph("a", rule(always(), cond("pick", choice="ghost"))),
        ["a", "b"],
        adapter=WorkflowAdapter(reg),
    )
    before = run.state
    with pytest.raises(PluginFailed) as failed:  # the plugin's choice (the WAL is sound)
        run.send(text("a"))
    assert str(failed.value) == "target `pick`: chose 'ghost', which is not a participant"
    assert run.state is before


def test_builtins_cannot_be_replaced() -> None:
    @attrs.frozen
    class Fake:
        name: ClassVar[str] = "all_of"

        def evaluate(self, state: Any, envelope: Any) -> bool:
            return True

    with pytest.raises(ValueError, match="built-in"):
        TransitionRegistry().register_condition(Fake)
