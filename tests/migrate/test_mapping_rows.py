"""Every row of the mapping tables of ``shared/design/migrate-sources.md`` §6 is exercised by
the corpus.

``ROWS`` quotes each row's construct cell verbatim (so a reader can find it on the design
page) and names the corpus inputs that use the construct, each with the finding code the
translation must report for it there: ``None`` for an exact mapping (nothing to report),
``M002`` lossy, ``M001`` unsupported (left out), ``M003`` no effect (dropped). A test reads the
design page's tables and fails when a row is missing here (or quoted differently), so this
table cannot silently go stale; rows the corpus does not cover yet are listed in
``UNCOVERED`` with the reason.

Where the translator's code differs from the design page's fidelity column, the row's note
says why (the design page's conventions are a proposal; ``docs/migrate.md`` records what was
chosen).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import pytest

CORPUS = Path(__file__).resolve().parent / "corpus"
DESIGN_CANDIDATES = (
    Path(__file__).resolve().parents[3] / "shared" / "design" / "migrate-sources.md",
    Path("/work/shared/design/migrate-sources.md"),
)
CODES = (None, "M001", "M002", "M003")


@attrs.frozen
class Row:
    """One mapping-table row: its section, its construct cell, and the corpus cases for it."""

    section: str
    construct: str
    cases: tuple[tuple[str, str | None], ...]
    note: str = ""


def _r(section: str, construct: str, *cases: tuple[str, str | None], note: str = "") -> Row:
    return Row(section, construct, tuple(cases), note)


ROWS: tuple[Row, ...] = (
    # ── 6.1 GroupChat / GroupChatManager ──
    _r("6.1", "`GroupChat(agents=[...])`", ("round_robin_blog.py", None)),
    _r("6.1", "`X.initiate_chat(manager, message=m)`", ("round_robin_blog.py", None)),
    _r(
        "6.1",
        "`max_round=N` (default 10)",
        ("round_robin_blog.py", None),
        ("auto_selector.py", "M002"),
    ),
    _r("6.1", '`speaker_selection_method="round_robin"`', ("round_robin_blog.py", None)),
    _r("6.1", "… with an initiator outside `agents`", ("outside_initiator.py", None)),
    _r("6.1", "… with a transitions graph", ("disallowed_round_robin.py", None)),
    _r("6.1", '`"auto"`', ("auto_selector.py", "M002"), ("studio_travel.json", "M002")),
    _r("6.1", '`"auto"` where a source has one eligible successor', ("transitions_chain.py", None)),
    _r("6.1", '`"random"` (+ `allow_repeat_speaker`)', ("random_selection.py", "M002")),
    _r("6.1", '`"manual"`', ("manual_selection.py", "M002")),
    _r(
        "6.1",
        "callable `speaker_selection_method`",
        ("selection_function.py", None),
        ("custom_selection.py", None),
        note="the recognised bodies; unrecognised ones are unit-tested in test_classic_units.py",
    ),
    _r(
        "6.1",
        '`allowed_or_disallowed_speaker_transitions` + `speaker_transitions_type="allowed"`',
        ("transitions_chain.py", None),
    ),
    _r("6.1", '`speaker_transitions_type="disallowed"`', ("disallowed_round_robin.py", None)),
    _r(
        "6.1",
        "source absent from the dict",
        ("transitions_chain.py", None),
        ("selection_function.py", None),
    ),
    _r("6.1", "source mapped to `[]`", ("empty_list_allowed.py", None)),
    _r(
        "6.1",
        "`allow_repeat_speaker=False` / `[agents]`",
        ("outside_initiator.py", None),
        ("random_selection.py", None),
    ),
    _r(
        "6.1",
        "`func_call_filter=True`",
        ("transitions_chain.py", "M002"),
        ("groupchat_settings.py", None),
    ),
    _r("6.1", "`send_introductions=True`", ("auto_selector.py", "M002")),
    _r(
        "6.1",
        "`select_speaker_message_template`, `select_speaker_prompt_template`, "
        "`select_speaker_auto_multiple_template`, `select_speaker_auto_none_template`, "
        "`role_for_select_speaker_messages`, `max_retries_for_selecting_speaker`, "
        "`select_speaker_auto_llm_config`, `select_speaker_auto_model_client_cls`, "
        "`select_speaker_transform_messages`, `select_speaker_auto_verbose`",
        ("auto_selector.py", "M002"),
        ("manual_selection.py", "M003"),
        note="without an `auto` selector these settings do nothing: M003",
    ),
    _r(
        "6.1",
        "`eligibility_policies=[AgentEligibilityPolicy]` (0.12+)",
        ("groupchat_settings.py", "M001"),
    ),
    _r(
        "6.1",
        "`admin_name` (KeyboardInterrupt takeover), `enable_clear_history`",
        ("groupchat_settings.py", "M003"),
        note="reported as no effect on routing (M003) rather than lossy",
    ),
    _r(
        "6.1",
        "`GroupChatManager(is_termination_msg=f)`",
        ("transitions_chain.py", None),
        ("outside_initiator.py", None),
        ("custom_selection.py", "M001"),
    ),
    _r(
        "6.1",
        "`GroupChatManager(max_consecutive_auto_reply=..., human_input_mode=...)`",
        ("outside_initiator.py", "M003"),
        note="ignored, and said so (M003)",
    ),
    _r("6.1", "`GroupChatManager(name=...)`", ("auto_selector.py", None)),
    _r(
        "6.1",
        "agent `is_termination_msg`",
        ("manual_selection.py", "M002"),
        ("studio_review_export.json", "M002"),
    ),
    _r(
        "6.1",
        "agent `max_consecutive_auto_reply`",
        ("studio_travel.json", "M002"),
        ("studio_review_export.json", "M003"),
        note="lossy, not left out: the flow's max_turns still caps the run; M003 when the count "
        "cannot be reached within max_round",
    ),
    _r("6.1", '`UserProxyAgent(human_input_mode="ALWAYS")`', ("group_api.py", None)),
    _r(
        "6.1",
        "`UserProxyAgent(NEVER, code_execution_config=...)`",
        ("auto_selector.py", None),
        ("custom_selection.py", None),
    ),
    _r(
        "6.1",
        "`register_function(f, caller=A, executor=B)` / `register_for_llm` + "
        "`register_for_execution`",
        ("transitions_chain.py", "M002"),
        ("auto_selector.py", "M002"),
    ),
    _r(
        "6.1",
        "`register_nested_chats`, `initiate_chats` (sequential chats)",
        ("custom_selection.py", "M001"),
        ("groupchat_settings.py", "M001"),
    ),
    # ── 6.2 AG2 0.9+ group API ──
    _r(
        "6.2",
        "`initiate_group_chat(pattern=, messages=, max_rounds=20)` (also `run_group_chat`, "
        "`run_group_chat_iter`, `a_*`)",
        ("group_triage.py", "M002"),
        ("group_guardrail.py", "M002"),
    ),
    _r("6.2", "`messages` as a list with `name` of a group agent", ("group_named_sender.py", None)),
    _r(
        "6.2",
        "`Pattern(initial_agent=...)`",
        ("group_triage.py", "M002"),
        ("group_round_robin.py", None),
    ),
    _r("6.2", "`user_agent=` / none", ("group_triage.py", None), ("group_random_pattern.py", None)),
    _r(
        "6.2",
        "`context_variables=ContextVariables(data={...})`",
        ("group_triage.py", None),
        ("group_guardrail.py", None),
    ),
    _r("6.2", "`group_after_work=`", ("group_triage.py", None), ("group_wide.py", None)),
    _r("6.2", "`DefaultPattern`", ("group_triage.py", None)),
    _r("6.2", "`RoundRobinPattern`", ("group_round_robin.py", None)),
    _r("6.2", "`RandomPattern`", ("group_random_pattern.py", "M002")),
    _r(
        "6.2",
        "`ManualPattern` / `AskUserTarget`",
        ("group_manual_pattern.py", "M002"),
        ("group_wide.py", "M002"),
    ),
    _r(
        "6.2",
        "`AutoPattern` / `GroupManagerTarget` (+ `GroupManagerSelectionMessageString/ContextStr`)",
        ("group_api.py", "M002"),
        ("group_wide.py", "M002"),
    ),
    _r(
        "6.2",
        "`group_manager_args` (`llm_config`, `is_termination_msg`, ...)",
        ("group_api.py", None),
        ("group_wide.py", None),
    ),
    _r(
        "6.2",
        "`agent.handoffs.add_llm_conditions([OnCondition(target, StringLLMCondition(prompt))])` "
        "(also `add_llm_condition`, `add`, `add_many`, `ConversableAgent(handoffs=Handoffs(...))`)",
        ("group_triage.py", "M002"),
        ("group_wide.py", "M002"),
    ),
    _r("6.2", "`ContextStrLLMCondition(ContextStr(template))`", ("group_wide.py", "M002")),
    _r(
        "6.2",
        "`OnCondition(available=StringAvailableCondition / ExpressionAvailableCondition)`",
        ("group_triage.py", "M002"),
        ("group_wide.py", "M002"),
    ),
    _r(
        "6.2",
        "`agent.handoffs.add_context_conditions([OnContextCondition(target, condition)])`",
        ("group_triage.py", "M002"),
        ("group_wide.py", "M002"),
    ),
    _r("6.2", "`StringContextCondition(variable_name)`", ("group_triage.py", None)),
    _r(
        "6.2",
        '`ExpressionContextCondition(ContextExpression("${k} == v"))`',
        ("group_triage.py", None),
    ),
    _r("6.2", "… `or` of equalities", ("group_wide.py", None)),
    _r("6.2", "… `and`, `not`, `!=` of equalities", ("group_wide.py", None)),
    _r("6.2", "… comparisons, `len()`", ("group_wide.py", None), ("group_triage.py", None)),
    _r(
        "6.2",
        "`OnContextCondition(condition=None)`",
        ("group_wide.py", "M002"),
        note="the rule is always true, but classic checks it before the agent's model runs, the "
        "flow after the agent's turn: the timing difference of every OnContextCondition",
    ),
    _r("6.2", "`handoffs.set_after_work(target)`", ("group_triage.py", None)),
    _r(
        "6.2",
        "`handoffs.add_after_work(OnContextCondition(target, cond))` / `add_after_works`",
        ("group_triage.py", None),
        ("group_wide.py", None),
    ),
    _r(
        "6.2",
        '`AgentTarget(agent)` / `AgentNameTarget("name")`',
        ("group_triage.py", None),
        ("group_guardrail.py", None),
    ),
    _r("6.2", "`RevertToUserTarget()`", ("group_triage.py", None)),
    _r("6.2", "`StayTarget()`", ("group_wide.py", None)),
    _r("6.2", "`TerminateTarget()`", ("group_triage.py", None)),
    _r("6.2", "`RandomAgentTarget(agents)`", ("group_wide.py", "M002")),
    _r(
        "6.2",
        "`FunctionTarget(fn, extra_args=)` (0.10+) → `FunctionTargetResult(target, messages, "
        "context_variables)`",
        ("group_unsupported.py", "M001"),
    ),
    _r(
        "6.2",
        '`NestedChatTarget(nested_chat_config={"chat_queue": ...})`',
        ("group_unsupported.py", "M001"),
    ),
    _r(
        "6.2",
        "`GroupChatTarget(GroupChatConfig(pattern, messages, max_rounds))`",
        ("group_unsupported.py", "M001"),
    ),
    _r(
        "6.2",
        "tool `-> ReplyResult(message, target=T, context_variables=cv)`",
        ("group_triage.py", None),
    ),
    _r(
        "6.2",
        "tool `-> ReplyResult(message, context_variables=cv)` (no target)",
        ("group_triage.py", None),
    ),
    _r("6.2", "tool returning a bare `TransitionTarget`", ("group_wide.py", None)),
    _r(
        "6.2",
        "`context_variables: ContextVariables` tool parameter (dependency-injected)",
        ("group_triage.py", None),
    ),
    _r(
        "6.2",
        "`UpdateSystemMessage(template)` / `update_agent_state_before_reply`",
        ("group_wide.py", "M002"),
    ),
    _r(
        "6.2",
        "guardrails (`RegexGuardrail`, `LLMGuardrail` with `target`), `safeguard_policy`",
        ("group_guardrail.py", "M002"),
        ("group_unsupported.py", "M001"),
    ),
    _r(
        "6.2",
        "`exclude_transit_message=True`",
        ("group_wide.py", "M003"),
        note="it only changes what agents see: no effect on the flow (M003)",
    ),
    # ── 6.3 legacy swarm ──
    _r(
        "6.3",
        "`initiate_swarm_chat(initial_agent, messages, agents, user_agent, max_rounds=20, "
        "context_variables, after_work=TERMINATE, swarm_manager_args)` (also `run_swarm`, `a_*`)",
        ("swarm_contrib.py", "M002"),
        ("swarm_legacy.py", "M002"),
    ),
    _r(
        "6.3",
        "`register_hand_off(agent, [ON_CONDITION(target, condition) / OnCondition(...)])`",
        ("swarm_legacy.py", "M002"),
        ("swarm_contrib.py", "M002"),
    ),
    _r("6.3", "`ON_CONDITION(target=<dict nested chat>)`", ("swarm_options.py", "M001")),
    _r(
        "6.3",
        "`OnCondition(available=str / ContextExpression / callable)`",
        ("swarm_contrib.py", "M002"),
        ("swarm_options.py", "M001"),
    ),
    _r(
        "6.3",
        "`OnCondition(condition=ContextStr / callable)`",
        ("swarm_options.py", "M002"),
        ("swarm_options.py", "M001"),
    ),
    _r(
        "6.3",
        '`OnContextCondition(target, condition="key" / ContextExpression)`',
        ("swarm_contrib.py", "M002"),
    ),
    _r(
        "6.3",
        "`AFTER_WORK(AfterWorkOption.TERMINATE)` / `AfterWork(...)`",
        ("swarm_legacy.py", None),
        ("swarm_contrib.py", None),
    ),
    _r("6.3", "`… REVERT_TO_USER`", ("swarm_contrib.py", None), ("swarm_options.py", None)),
    _r("6.3", "`… STAY`", ("swarm_options.py", None)),
    _r("6.3", "`… SWARM_MANAGER` (+ `next_agent_selection_msg`)", ("swarm_options.py", "M002")),
    _r(
        "6.3",
        '`AfterWork(agent)` / `AfterWork("name")`',
        ("swarm_contrib.py", None),
        ("swarm_options.py", None),
        note='pyautogen 0.8.7 rejects AFTER_WORK("name") (it reads a string as an AfterWorkOption)',
    ),
    _r("6.3", "`AfterWork(callable)` / `after_work=callable`", ("swarm_options.py", "M001")),
    _r("6.3", "swarm-level `after_work=`", ("swarm_contrib.py", None)),
    _r(
        "6.3",
        "tool `-> SwarmResult(values, agent=X / AfterWorkOption.*, context_variables)`",
        ("swarm_contrib.py", None),
    ),
    _r("6.3", "`SwarmAgent(...)`", ("swarm_legacy.py", None), ("swarm_options.py", None)),
    _r("6.3", "user turns after the first", ("swarm_contrib.py", "M002")),
    # ── 6.4 Microsoft AgentChat ──
    _r(
        "6.4",
        "`team.run(task=...)` / `run_stream`",
        ("agentchat_round_robin.json", None),
        ("agentchat_terminations.py", None),
    ),
    _r("6.4", "`RoundRobinGroupChat(participants)`", ("agentchat_round_robin.json", None)),
    _r(
        "6.4",
        "`SelectorGroupChat(model_client, selector_prompt, allow_repeated_speaker, "
        "max_selector_attempts)`",
        ("agentchat_selector.json", "M002"),
    ),
    _r(
        "6.4",
        "`SelectorGroupChat(selector_func=)`",
        ("agentchat_selector_func.py", None),
        ("agentchat_selector_history.py", "M001"),
    ),
    _r("6.4", "`SelectorGroupChat(candidate_func=)`", ("agentchat_selector_fallback.py", "M002")),
    _r(
        "6.4",
        "`Swarm(participants)` + `AssistantAgent(handoffs=[str or Handoff(target, description, "
        "name, message)])`",
        ("agentchat_swarm.json", None),
        ("agentchat_travel.py", None),
    ),
    _r("6.4", "`HandoffTermination(target=T)`", ("agentchat_travel.py", None)),
    _r(
        "6.4",
        "`GraphFlow(participants, graph=DiGraph)` / `DiGraphBuilder.add_edge(s, t)`",
        ("agentchat_graph_loop.py", None),
        ("agentchat_graphflow.json", None),
    ),
    _r(
        "6.4",
        '`add_edge(s, t, condition="kw")` / `add_conditional_edges`',
        ("agentchat_graph_groups.py", "M002"),
        ("agentchat_graph_py.py", "M002"),
    ),
    _r(
        "6.4",
        "`add_edge(condition=callable)`",
        ("agentchat_graph_lambda.py", "M001"),
        ("agentchat_graph_py.dump.json", "M002"),
        note="JSON cannot show the callable: a warning that it may have existed (M002)",
    ),
    _r(
        "6.4",
        'fan-out, `activation="all"/"any"`, `activation_group` joins',
        ("agentchat_graph_fanout.py", "M001"),
        ("agentchat_graph_fanout.py", "M002"),
        note="a fan-out is left out (M001); a join runs after any parent (M002)",
    ),
    _r("6.4", "graph completion (no ready node)", ("agentchat_graph_loop.py", None)),
    _r(
        "6.4",
        "`MaxMessageTermination(n, include_agent_event=False)`",
        ("agentchat_round_robin.json", None),
    ),
    _r("6.4", "team `max_turns=m`", ("agentchat_graph_py.py", None)),
    _r(
        "6.4",
        "`TextMentionTermination(text, sources=None)`",
        ("agentchat_travel.py", None),
        ("agentchat_round_robin.json", "M002"),
    ),
    _r("6.4", "`SourceMatchTermination(sources)`", ("agentchat_human_round_robin.json", None)),
    _r("6.4", "`TextMessageTermination(source)`", ("agentchat_terminations.py", "M002")),
    _r(
        "6.4",
        "`FunctionCallTermination(function_name)`",
        ("agentchat_human_round_robin.json", None),
    ),
    _r("6.4", "`StopMessageTermination`", ("agentchat_terminations.py", "M002")),
    _r("6.4", "`A \\| B`", ("agentchat_travel.py", None)),
    _r("6.4", "`A & B`", ("agentchat_terminations.py", "M001")),
    _r(
        "6.4",
        "`TokenUsageTermination`, `TimeoutTermination`, `ExternalTermination`, "
        "`FunctionalTermination`",
        ("agentchat_nested_team.py", "M001"),
        ("agentchat_human_round_robin.json", "M001"),
    ),
    _r("6.4", "`MagenticOneGroupChat`", ("magentic_python.py", "M001")),
    _r(
        "6.4", "a Team as a participant, `SocietyOfMindAgent`", ("agentchat_nested_team.py", "M001")
    ),
    _r(
        "6.4",
        "`UserProxyAgent` (AgentChat)",
        ("agentchat_human_round_robin.json", None),
        ("agentchat_graph_groups.py", None),
    ),
)

UNCOVERED = {(r.section, r.construct) for r in ROWS if not r.cases}

_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def design_rows(text: str) -> list[tuple[str, str]]:
    """``(section, construct cell)`` for every row of the §6 mapping tables of the design page."""
    out: list[tuple[str, str]] = []
    section: str | None = None
    for line in text.splitlines():
        heading = re.match(r"^###\s+(6\.\d+)\b", line)
        if heading:
            section = heading.group(1)
            continue
        if line.startswith("## "):
            section = None
            continue
        if section is None or not line.startswith("|"):
            continue
        cells = [c.strip() for c in _CELL_SPLIT.split(line.strip())[1:-1]]
        if len(cells) < 4 or set(cells[0]) <= set("-: "):
            continue
        if cells[1] == "network translation":  # the header row
            continue
        out.append((section, cells[0]))
    return out


def _design_text() -> str:
    for path in DESIGN_CANDIDATES:
        if path.exists():
            return path.read_text(encoding="utf-8")
    pytest.skip("the design page shared/design/migrate-sources.md is not available here")
    raise AssertionError  # unreachable: pytest.skip raises


def test_every_design_row_is_in_the_table() -> None:
    design = design_rows(_design_text())
    assert len(design) >= 100, "the design page's §6 tables were not found"
    ours = [(r.section, r.construct) for r in ROWS]
    missing = [row for row in design if row not in ours]
    assert not missing, f"mapping rows without an entry in ROWS: {missing}"
    stale = [row for row in ours if row not in design]
    assert not stale, f"ROWS quotes rows that are not on the design page (any more): {stale}"
    assert len(set(ours)) == len(ours), "a row is listed twice"


def test_the_table_is_well_formed() -> None:
    for row in ROWS:
        assert all(code in CODES for _, code in row.cases), row
        if not row.cases:
            assert row.note.startswith("UNCOVERED: "), f"{row.construct}: say why it is not covered"


def _findings(name: str) -> set[str]:
    path = CORPUS / name
    expected = path.with_name(path.name[: -len(path.suffix)] + ".expected.json")
    data = json.loads(expected.read_text(encoding="utf-8"))
    return {f["code"] for f in data["findings"]}


COVERED = [(r, name, code) for r in ROWS for name, code in r.cases]


@pytest.mark.parametrize(
    ("row", "name", "code"),
    COVERED,
    ids=[f"{r.section}:{name}:{code}:{i}" for i, (r, name, code) in enumerate(COVERED)],
)
def test_row_is_exercised_by_its_corpus_case(row: Row, name: str, code: str | None) -> None:
    path = CORPUS / name
    assert path.exists(), f"{row.construct}: corpus case {name} is missing"
    stem = name[: -len(path.suffix)]
    expected = CORPUS / f"{stem}.expected.json"
    assert expected.exists(), f"{name} has no .expected.json"
    if code is not None:
        assert code in _findings(name), f"{row.construct}: {name} should report {code}"
    else:
        # exact in this case: the translation was written (a golden exists)
        assert (CORPUS / f"{stem}.flow").exists(), f"{name} has no golden .flow"


def test_design_rows_reads_tables_of_section_6_only() -> None:
    text = (
        "## 5. Vocabulary\n| name | kind | args | semantics |\n|---|---|---|---|\n| `x` | c | - | - |\n"
        "## 6. Mapping table\n### 6.9 Sample\n"
        "| classic construct | network translation | fidelity | why |\n|---|---|---|---|\n"
        "| `A \\| B` | both | exact | any-of |\n| … `or` | rules | exact | — |\n"
        "## 7. Traps\n| `y` | t | exact | - |\n"
    )
    assert design_rows(text) == [("6.9", "`A \\| B`"), ("6.9", "… `or`")]


def test_no_row_is_left_uncovered() -> None:
    assert not UNCOVERED, f"rows without a corpus case: {sorted(UNCOVERED)}"


GROUP = """
from autogen import ConversableAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import AgentTarget, TerminateTarget
from autogen.agentchat.group.guardrails import RegexGuardrail
from autogen.agentchat.group.patterns import DefaultPattern
a = ConversableAgent(name="a")
b = ConversableAgent(name="b")
{extra}
pattern = DefaultPattern(initial_agent=a, agents=[a, b])
initiate_group_chat(pattern=pattern, messages={messages}, max_rounds=6)
"""


def _migrate(extra: str = "", messages: str = '"go"') -> tuple[str | None, list[tuple[str, str]]]:
    from flowc.migrate import migrate_source
    from flowc.source import SourceFile

    result = migrate_source(SourceFile("g.py", GROUP.format(extra=extra, messages=messages)))
    return result.text, [(d.code.id, d.message) for d in result.findings]


def test_regex_output_guardrail_becomes_a_text_matches_rule() -> None:
    text, findings = _migrate(
        'a.register_output_guardrails([RegexGuardrail("pii", r"\\d{4}", TerminateTarget())])'
    )
    assert text is not None
    assert 'when from a and text_matches(pattern = "\\\\d{4}") then terminate priority -5' in text
    assert any(code == "M002" and "output guardrail on `a`" in m for code, m in findings)
    assert not [m for code, m in findings if code == "M001"]


def test_input_guardrail_and_unknown_sender_are_reported() -> None:
    _, findings = _migrate(
        'b.register_input_guardrail(RegexGuardrail("x", "y", AgentTarget(a)))',
        messages='[{"name": "nobody", "content": "hi"}]',
    )
    assert any(code == "M001" and "input guardrail" in m for code, m in findings)
    assert any(code == "M001" and "names `nobody`" in m for code, m in findings)


def test_named_sender_starts_and_hands_the_first_turn_to_the_initial_agent() -> None:
    text, findings = _migrate(messages='[{"name": "b", "content": "notes"}]')
    assert text is not None and not findings
    assert "start b" in text and "speaker user" not in text
    assert "when turn_count_at_most(`turns` = 1) then a priority -8" in text
