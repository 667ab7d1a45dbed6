"""Microsoft AgentChat component JSON (``dump_component()``, AutoGen Studio 0.4) -> `.flow`.

Teams: ``RoundRobinGroupChat`` (an explicit ring from the task sender), ``SelectorGroupChat``
(a selector speaker with one ``transfer_to_<agent>`` tool per participant) and ``Swarm``
(each ``handoffs`` entry is a tool named as AgentChat names it, routed by a ``when tool``
rule; ``otherwise stay`` keeps the speaker, as ``SwarmGroupChatManager``). The task is
sent by a synthesized human ``user``. Termination conditions: ``MaxMessageTermination``
(``max_turns``), team ``max_turns`` (+1 for the task), ``TextMentionTermination``,
``SourceMatchTermination``, ``FunctionCallTermination``, ``HandoffTermination``,
``TextMessageTermination`` (lossy: every turn of the source ends the run), and
``OrTerminationCondition`` of those.

>>> team = {"provider": "autogen_agentchat.teams.RoundRobinGroupChat", "component_type": "team",
...         "config": {"participants": [
...             {"provider": "autogen_agentchat.agents.AssistantAgent", "config": {"name": "a"}},
...             {"provider": "autogen_agentchat.agents.AssistantAgent", "config": {"name": "b"}}],
...           "max_turns": 4}}
>>> r = translate_component(team, "team.json")
>>> r.migration.max_turns, [s.name for s in r.migration.speakers]
(5, ['user', 'a', 'b'])
"""

from __future__ import annotations

from typing import Any

import attrs

import flowc.migrate.model as mm
from flowc.diagnostics import M001, M002, M003, Code, Diagnostic
from flowc.dsl import nodes as n
from flowc.migrate.model import NotRecognised

TEAMS = ("RoundRobinGroupChat", "SelectorGroupChat", "Swarm", "GraphFlow")
#: the agent classes a team's participants are read from (in Python: constructor calls)
AGENTS = ("AssistantAgent", "UserProxyAgent", "CodeExecutorAgent", "SocietyOfMindAgent")
#: the descriptions AgentChat writes when the user gave none
DEFAULT_DESCRIPTIONS = frozenset(
    {
        "An agent that provides assistance with ability to use tools.",
        "A human user",
    }
)
UNSUPPORTED_TEAMS = {
    "MagenticOneGroupChat": "a MagenticOne orchestrator (ledger and replanning)",
}


def _short(provider: Any) -> str:
    return provider.rsplit(".", 1)[-1] if isinstance(provider, str) else ""


@attrs.frozen
class _Handoff:
    tool: str
    target: str
    description: str | None


class _JsonFindings:
    """Findings that point at a JSON path of the component."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.findings: list[Diagnostic] = []

    def report(self, code: Code, message: str, path: str, help: str | None = None) -> None:
        self.findings.append(Diagnostic(code, message, self.filename, json_path=path, help=help))

    def fail(self, message: str, path: str, help: str | None = None) -> NotRecognised:
        self.report(M001, message, path, help)
        return NotRecognised(self.findings)


def _config(obj: Any) -> dict[str, Any]:
    cfg = obj.get("config") if isinstance(obj, dict) else None
    return cfg if isinstance(cfg, dict) else {}


def translate_component(data: Any, filename: str, per_speaker: bool = True) -> mm.Translation:
    """Translate an AgentChat team component (a dict from JSON).

    ``per_speaker``: a ``SelectorGroupChat`` without ``allow_repeated_speaker`` gets one
    selector speaker per previous speaker (False when a ``selector_func`` or
    ``candidate_func`` of the Python team decides which speaker the model chose last).

    Raises :class:`NotRecognised` when ``data`` is not a team this translator handles.
    """
    r = _JsonFindings(filename)
    if not isinstance(data, dict) or "provider" not in data:
        raise r.fail(
            "not an AgentChat component: the JSON object has no `provider`",
            "",
            help="export the team with `team.dump_component().model_dump_json()`",
        )
    provider = data["provider"]
    kind = _short(provider)
    if kind in UNSUPPORTED_TEAMS:
        raise r.fail(f"{UNSUPPORTED_TEAMS[kind]} is not translated by this version", "provider")
    if kind not in TEAMS:
        raise r.fail(
            f"unknown component provider {provider!r}: migrate translates the AgentChat teams "
            f"{', '.join(TEAMS)}",
            "provider",
        )
    cfg = _config(data)
    raw = cfg.get("participants")
    if not isinstance(raw, list) or len(raw) < 1:
        raise r.fail("the team has no `participants` list", "config.participants")

    participants: list[str] = []
    unmodelled = False  # a participant whose class flowc does not model: no claim about the order
    roles: dict[str, str | None] = {}
    humans: set[str] = set()
    tools: dict[str, list[mm.Tool]] = {}
    handoffs: dict[str, list[_Handoff]] = {}
    for i, p in enumerate(raw):
        path = f"config.participants[{i}]"
        pc = _config(p)
        pname = pc.get("name")
        pkind = _short(p.get("provider") if isinstance(p, dict) else None)
        if not isinstance(pname, str) or not pname:
            raise r.fail("a participant has no `config.name`", path)
        if pname in participants:
            raise r.fail(f"two participants are both named `{pname}`", f"{path}.config.name")
        if pkind in ("RoundRobinGroupChat", "SelectorGroupChat", "Swarm", "SocietyOfMindAgent"):
            r.report(
                M001,
                f"`{pname}` is a nested team; it became a plain speaker",
                path,
                help="migrate the nested team as its own flow",
            )
        elif pkind not in AGENTS:
            unmodelled = True
            r.report(
                M002,
                f"`{pname}` is a `{pkind or 'component'}`, an agent class flowc does not "
                "model: it takes part as a plain speaker, and what it does (its replies, "
                "tools or browsing) runs in your agent code, not in the flow",
                f"{path}.provider",
            )
        participants.append(pname)
        if pkind == "UserProxyAgent":
            humans.add(pname)
        role = pc.get("description")
        if not isinstance(role, str) or role in DEFAULT_DESCRIPTIONS:
            role = pc.get("system_message")
        if pkind == "UserProxyAgent" and not role:
            role = "A person (UserProxyAgent)."
        roles[pname] = role if isinstance(role, str) else None
        tools[pname] = _tools(pc)
        handoffs[pname] = _handoffs(r, pc, path, kind)

    user = "user" if "user" not in participants else "task_sender"
    findings_before = len(r.findings)
    max_turns, term_rules, witness, handoff_ends = _termination(
        r, cfg, participants, handoffs, kind
    )
    team_cap = cfg.get("max_turns")

    rules: list[mm.Rule] = list(term_rules)
    speakers = [mm.Speaker(user, True, "Sends the task (AgentChat `team.run(task=...)`).")]
    otherwise: n.Target | None = None
    otherwise_comment: str | None = None
    selector = None
    exact = True
    chain: list[str] = []
    if kind == "RoundRobinGroupChat":
        ring = [user, *participants]
        for a, b in zip(ring, [*participants, participants[0]], strict=True):
            rules.append(mm.Rule(mm.from_(a), mm.speaker_target(b)))
    elif kind == "SelectorGroupChat":
        exact = False
        selector = "selector" if "selector" not in participants else "team_selector"
        # AgentChat 0.7.x's default: the previous speaker leaves the candidates
        no_repeat = cfg.get("allow_repeated_speaker", False) is False
        selectors = _selectors(selector, participants, no_repeat and per_speaker)
        rules += selector_routing(user, selector, participants, selectors)
        if len(selectors) == 1:
            r.report(
                M002,
                "model-based speaker selection became the selector speaker "
                f"`{selector}` with one `transfer_to_<agent>` tool per participant; its turns "
                "count toward max_turns",
                "provider",
            )
        else:
            r.report(
                M002,
                "model-based speaker selection became the selector speaker "
                f"`{selector}` after the task and `{selector}_after_<agent>` after each "
                "agent, whose candidates leave that agent out (`allow_repeated_speaker` "
                "false, AgentChat's default; a single candidate speaks without the model), "
                "each with one `transfer_to_<agent>` tool per candidate: their turns count "
                "toward max_turns, and when the model names no candidate the run ends "
                "(AgentChat asks again, then keeps the previous speaker)",
                "provider",
            )
        if no_repeat and not per_speaker:
            r.report(
                M002,
                f"{REPEAT_MSG}: AgentChat removes the speaker the model chose last from the "
                "candidates and asks the model again when it names that speaker; here the "
                f"selector speaker `{selector}` keeps every participant a candidate",
                "config.allow_repeated_speaker" if "allow_repeated_speaker" in cfg else "config",
            )
        r.report(
            M002,
            "a `selector_func` or `candidate_func` is never written to component JSON: "
            "if the Python team had one, port it by hand as `when from X then Y` rules",
            "config",
        )
        for key in ("max_selector_attempts", "model_client_streaming", "model_context"):
            if key in cfg:
                r.report(M003, f"`{key}` configures the selector model; dropped", f"config.{key}")
    elif kind == "GraphFlow":
        graph_rules, exact, chain = _graph(r, cfg, participants, user)
        rules += graph_rules
        otherwise = mm.terminate("graph_complete")
        otherwise_comment = "no node is ready: the graph is complete"
    else:  # Swarm
        rules.append(
            mm.Rule(
                mm.from_(user),
                mm.speaker_target(participants[0]),
                0,
                "the task goes to the first participant",
            )
        )
        seen: dict[str, str] = {}
        for src in participants:
            for h in handoffs[src]:
                if h.tool in seen:
                    if seen[h.tool] != h.target:
                        r.report(
                            M001,
                            f"two handoffs are named `{h.tool}` but go to different agents; "
                            f"only the one to `{seen[h.tool]}` is routed",
                            "config.participants",
                        )
                    continue
                seen[h.tool] = h.target
                if h.target in handoff_ends:
                    continue  # HandoffTermination: the -10 rule ends the run
                if h.target in participants:
                    rules.append(mm.Rule(mm.tool_cond(h.tool), mm.speaker_target(h.target)))
                elif h.target == "user":
                    rules.append(mm.Rule(mm.tool_cond(h.tool), mm.speaker_target(user)))
                else:
                    r.report(
                        M001,
                        f"the handoff `{h.tool}` targets `{h.target}`, who is not in the "
                        "team; it was left out",
                        "config.participants",
                    )
        otherwise = n.StayTarget(mm.S)
        otherwise_comment = "a Swarm speaker keeps the floor until it hands off"
    for name in participants:
        declared = {t.name for t in tools[name]}
        hs = [mm.Tool(h.tool, h.description) for h in handoffs[name] if h.tool not in declared]
        speakers.append(
            mm.Speaker(name, name in humans, roles[name], tuple(tools[name]) + tuple(hs))
        )
    if selector is not None:
        prompt = cfg.get("selector_prompt")
        for name, after, candidates in selectors:
            if len(candidates) < 2:
                continue  # one candidate: AgentChat picks it without the model
            speakers.append(
                mm.Speaker(
                    name,
                    False,
                    (f"After {after}: " if after else "")
                    + "Chooses the next speaker (AgentChat SelectorGroupChat): calls the transfer "
                    "tool of the participant who should speak next."
                    + (f" Prompt: {prompt}" if isinstance(prompt, str) else ""),
                    tuple(mm.Tool(f"transfer_to_{c}", f"{c} speaks next.") for c in candidates),
                )
            )
    if selector is not None and max_turns is not None:
        # the selector speaks before every agent turn, but when a single candidate is left
        # (two participants, no repeats) only before the first one
        single = any(len(c) == 1 for _, _, c in selectors)
        max_turns = max_turns + 1 if single else 2 * max_turns - 1
    scenarios: list[n.Scenario] = []
    sequences: list[tuple[str, ...]] = []
    exact = (
        exact and not any(d.code is M001 for d in r.findings[findings_before:]) and not unmodelled
    )
    if exact and kind == "RoundRobinGroupChat" and max_turns is not None:
        scenarios, sequences = _ring_scenarios(user, participants, max_turns, witness)
    if exact and kind == "GraphFlow":
        keywords = [k for r_ in rules for k in _keywords(r_.cond)]
        branches = [
            (
                _keywords(r_.cond)[0],
                r_.target.speaker.value,
                any(isinstance(c, n.NotCond) for c in r_.cond.items),
            )
            for r_ in rules
            if isinstance(r_.cond, n.AndCond)
            and isinstance(r_.target, n.SpeakerTarget)
            and chain
            and mm.from_(chain[-1]) in r_.cond.items
            and len(_keywords(r_.cond)) == 1
        ]
        scenarios, sequences = _chain_scenarios(user, chain, max_turns, keywords, branches)
    if exact and kind == "Swarm":
        scenarios, sequences = _swarm_scenarios(user, participants, handoffs, handoff_ends, witness)
    exact = exact and bool(scenarios)  # the label says the scenarios state the order
    stem = filename.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    label = cfg.get("name") if cfg.get("name") not in (None, "", kind) else stem
    team_description = cfg.get("description")
    notes = [
        f"{kind}"
        + (", speaker order read statically (the scenarios state it)" if exact else "")
        + "."
    ]
    if team_cap is not None:
        notes.append(
            f"team max_turns={team_cap} counts agent turns only; the task is one more turn."
        )
    migration = mm.Migration(
        title=mm.identifier(str(label)),
        source_kind=f"an AgentChat component ({filename.rsplit('/', 1)[-1]})",
        description=team_description
        if isinstance(team_description, str) and team_description != "A team of agents."
        else None,
        speakers=tuple(speakers),
        start=user,
        max_turns=max_turns,
        rules=tuple(rules),
        otherwise=otherwise,
        otherwise_comment=otherwise_comment,
        scenarios=tuple(scenarios),
        notes=tuple(notes),
    )
    return mm.Translation(migration, tuple(r.findings), tuple(sequences))


def _tools(pc: dict[str, Any]) -> list[mm.Tool]:
    found: list[Any] = []
    if isinstance(pc.get("tools"), list):
        found += pc["tools"]
    workbench = pc.get("workbench")
    for wb in (
        workbench
        if isinstance(workbench, list)
        else [workbench]
        if isinstance(workbench, dict)
        else []
    ):
        inner = _config(wb).get("tools")
        if isinstance(inner, list):
            found += inner
    out: list[mm.Tool] = []
    for t in found:
        tc = _config(t)
        name = tc.get("name")
        if isinstance(name, str) and name and all(x.name != name for x in out):
            desc = tc.get("description")
            out.append(mm.Tool(name, desc if isinstance(desc, str) else None))
    return out


def _handoffs(r: _JsonFindings, pc: dict[str, Any], path: str, kind: str) -> list[_Handoff]:
    raw = pc.get("handoffs")
    if not isinstance(raw, list):
        return []
    if kind != "Swarm" and raw:
        r.report(
            M003,
            f"handoffs do not pick the next speaker in a {kind} (only a Swarm routes on "
            "them): they stay tools of the agent, and a HandoffTermination still ends the "
            "run when one is called",
            f"{path}.config.handoffs",
        )
    out: list[_Handoff] = []
    for j, h in enumerate(raw):
        target: Any = None
        name: Any = None
        desc: Any = None
        if isinstance(h, str):
            target = h
        elif isinstance(h, dict):
            target, name, desc = h.get("target"), h.get("name"), h.get("description")
        if not isinstance(target, str) or not target:
            r.report(
                M001, "a handoff without a `target` was left out", f"{path}.config.handoffs[{j}]"
            )
            continue
        tool = name if isinstance(name, str) and name else f"transfer_to_{target}".lower()
        out.append(
            _Handoff(tool, target, desc if isinstance(desc, str) else f"Handoff to {target}.")
        )
    return out


def _termination(
    r: _JsonFindings,
    cfg: dict[str, Any],
    participants: list[str],
    handoffs: dict[str, list[_Handoff]],
    kind: str,
) -> tuple[int | None, list[mm.Rule], str | None, set[str]]:
    caps: list[int] = []
    rules: list[mm.Rule] = []
    witness: list[str] = []
    handoff_ends: set[str] = set()
    team_cap = cfg.get("max_turns")
    if isinstance(team_cap, int) and not isinstance(team_cap, bool) and team_cap >= 1:
        caps.append(team_cap + 1)

    def visit(cond: Any, path: str) -> None:
        ck = _short(cond.get("provider")) if isinstance(cond, dict) else ""
        cc = _config(cond)
        if ck == "OrTerminationCondition":
            subs = cc.get("conditions")
            for i, sub in enumerate(subs if isinstance(subs, list) else []):
                visit(sub, f"{path}.config.conditions[{i}]")
        elif ck == "MaxMessageTermination":
            value = cc.get("max_messages")
            if isinstance(value, int) and value >= 1:
                caps.append(value)
                if cc.get("include_agent_event"):
                    r.report(
                        M002,
                        "`include_agent_event` also counts agent events; the flow counts "
                        "turns only",
                        f"{path}.config.include_agent_event",
                    )
            else:
                r.report(M001, "MaxMessageTermination without a readable `max_messages`", path)
        elif ck == "TextMentionTermination":
            text = cc.get("text")
            if not isinstance(text, str):
                r.report(M001, "TextMentionTermination without a `text`", path)
                return
            rules.append(
                mm.Rule(
                    mm.call_cond("text_contains", text=text),
                    mm.terminate("text_mention"),
                    -10,
                    "TextMentionTermination",
                )
            )
            witness.append(text)
            r.report(
                M002,
                "TextMentionTermination's `sources` is never written to component JSON "
                "(autogen-agentchat 0.7.5): the flow ends on the text from any speaker",
                path,
            )
        elif ck == "SourceMatchTermination":
            raw = cc.get("sources")
            sources = [
                s
                for s in (raw if isinstance(raw, list) else [])
                if isinstance(s, str) and s in participants
            ]
            if sources:
                rules.append(
                    mm.Rule(
                        mm.from_(*sources),
                        mm.terminate("source_match"),
                        -10,
                        "SourceMatchTermination",
                    )
                )
            else:
                r.report(M001, "SourceMatchTermination names no participant", path)
        elif ck == "FunctionCallTermination":
            fn = cc.get("function_name")
            if isinstance(fn, str) and fn:
                rules.append(
                    mm.Rule(
                        mm.tool_cond(fn),
                        mm.terminate("function_call"),
                        -10,
                        "FunctionCallTermination",
                    )
                )
            else:
                r.report(M001, "FunctionCallTermination without a `function_name`", path)
        elif ck == "HandoffTermination":
            target = cc.get("target")
            names = sorted({h.tool for hs in handoffs.values() for h in hs if h.target == target})
            if not isinstance(target, str) or not names:
                r.report(
                    M001, f"HandoffTermination to {target!r}: no participant hands off there", path
                )
                return
            handoff_ends.add(target)
            for name in names:
                rules.append(
                    mm.Rule(
                        mm.tool_cond(name),
                        mm.terminate(f"handoff_to_{target}"),
                        -10,
                        "HandoffTermination",
                    )
                )
        elif ck == "TextMessageTermination":
            source = cc.get("source")
            if source is not None and source not in participants:
                r.report(M001, f"TextMessageTermination names no participant ({source!r})", path)
                return
            ends = [source] if isinstance(source, str) else list(participants)
            rules.append(
                mm.Rule(
                    mm.from_(*ends), mm.terminate("text_message"), -10, "TextMessageTermination"
                )
            )
            r.report(
                M002,
                "TextMessageTermination became `when from "
                f"{', '.join(ends)} then terminate`: AgentChat ends only on a text "
                "message, the flow also after a turn that was a tool-call summary or a "
                "handoff",
                path,
            )
        elif ck == "StopMessageTermination":
            r.report(
                M002,
                "StopMessageTermination: a StopMessage comes from agent code; give the agent "
                "a tool that `finishes` instead",
                path,
            )
        elif ck:
            r.report(
                M001,
                f"the termination condition `{ck}` has no equivalent in a flow; left out",
                path,
                help="TokenUsage/Timeout/External/Functional conditions and `&` are not "
                "graph conditions; end the run from your application",
            )
        else:
            r.report(M001, "a termination condition without a `provider` was left out", path)

    term = cfg.get("termination_condition")
    if term is not None:
        visit(term, "config.termination_condition")
    if not caps and kind != "Swarm" and not rules:
        r.report(
            M002,
            "the team has no termination condition and no max_turns: the flow has no turn "
            "cap either",
            "config",
        )
    return (min(caps) if caps else None), rules, (witness[0] if witness else None), handoff_ends


#: the finding's opening words when the previous speaker's exclusion is not translated
REPEAT_MSG = "`allow_repeated_speaker` is false (AgentChat's default) and not translated"


def _selectors(
    selector: str, participants: list[str], no_repeat: bool
) -> list[tuple[str, str | None, list[str]]]:
    """The selector speakers of a SelectorGroupChat: (name, after whom, candidates).

    autogen-agentchat 0.7.5 (``SelectorGroupChatManager.select_speaker``): the candidates
    are all participants, minus the previous speaker when ``allow_repeated_speaker`` is
    false (there is none after the task); a single candidate is chosen without the model.
    """
    if not no_repeat or len(participants) < 2:
        return [(selector, None, list(participants))]
    out: list[tuple[str, str | None, list[str]]] = [(selector, None, list(participants))]
    for p in participants:
        out.append((f"{selector}_after_{p}", p, [c for c in participants if c != p]))
    return out


def selector_routing(
    user: str,
    selector: str,
    participants: list[str],
    selectors: list[tuple[str, str | None, list[str]]],
) -> list[mm.Rule]:
    """The rules of a SelectorGroupChat: the turn after the task (and after every turn when
    repeats are allowed) goes to ``selector``; with repeats excluded, the turn after a
    participant goes to the selector that leaves it out, or straight to the only other one."""
    rules: list[mm.Rule] = []
    if len(selectors) == 1:
        rules.append(
            mm.Rule(
                mm.from_(user, *participants),
                mm.speaker_target(selector),
                0,
                "the selector speaks after every turn",
            )
        )
    else:
        rules.append(mm.Rule(mm.from_(user), mm.speaker_target(selector), 0, "after the task"))
        for name, after, candidates in selectors[1:]:
            assert after is not None
            target = candidates[0] if len(candidates) == 1 else name
            comment = (
                "the previous speaker is not a candidate (allow_repeated_speaker=False)"
                if after == participants[0]
                else None
            )
            rules.append(mm.Rule(mm.from_(after), mm.speaker_target(target), 0, comment))
    for c in participants:
        rules.append(mm.Rule(mm.tool_cond(f"transfer_to_{c}"), mm.speaker_target(c)))
    named = [name for name, _, candidates in selectors if len(candidates) > 1]
    rules.append(
        mm.Rule(
            mm.from_(*named),
            mm.terminate("no_speaker_selected"),
            0,
            "the selector chose nobody",
        )
    )
    return rules


def _ring_scenarios(
    user: str, participants: list[str], max_turns: int, witness: str | None
) -> tuple[list[n.Scenario], list[tuple[str, ...]]]:
    ring = [user] + [participants[i % len(participants)] for i in range(min(max_turns, 24) - 1)]
    items: list[n.ScenarioItem] = [mm.say(sp, f"{sp}, turn {i + 1}") for i, sp in enumerate(ring)]
    if len(ring) == max_turns:
        items.append(mm.expect_terminate("max_turns"))
    else:
        items.append(mm.expect_next(participants[(len(ring) - 1) % len(participants)]))
    items.append(mm.expect_turns(len(ring)))
    scenarios = [mm.scenario("AgentChat speaking order", items)]
    sequences = [tuple(ring)]
    if witness is not None and max_turns >= 2:
        scenarios.append(
            mm.scenario(
                "the mention ends the run",
                [
                    mm.say(user, "the task"),
                    mm.say(participants[0], f"All done. {witness}"),
                    mm.expect_terminate("text_mention"),
                ],
            )
        )
        sequences.append((user, participants[0]))
    return scenarios, sequences


def _swarm_scenarios(
    user: str,
    participants: list[str],
    handoffs: dict[str, list[_Handoff]],
    ends: set[str],
    witness: str | None,
) -> tuple[list[n.Scenario], list[tuple[str, ...]]]:
    first = participants[0]
    items: list[n.ScenarioItem] = [
        mm.say(user, "the task"),
        mm.say(first, "working on it"),
        mm.expect_next(first),
    ]
    seq = [user, first, first]
    routed = [h for h in handoffs[first] if h.target in participants or h.target in ends]
    if routed:
        h = routed[0]
        items.append(mm.calls(first, h.tool, f"handing off to {h.target}"))
        if h.target in ends:
            items.append(mm.expect_terminate(f"handoff_to_{h.target}"))
        else:
            items.append(mm.expect_next(h.target))
            seq.append(h.target)
    else:
        items.append(mm.say(first, "still working"))
        seq.append(first)
    scenarios = [mm.scenario("the swarm keeps the speaker until a handoff", items)]
    if witness is not None:
        scenarios.append(
            mm.scenario(
                "the mention ends the run",
                [
                    mm.say(user, "the task"),
                    mm.say(first, f"All done. {witness}"),
                    mm.expect_terminate("text_mention"),
                ],
            )
        )
    return scenarios, [tuple(seq)]


def _keywords(cond: n.Cond) -> list[str]:
    if isinstance(cond, n.CallCond) and cond.name.value == "text_contains":
        return [str(cond.args[0].value.value)]
    if isinstance(cond, n.AndCond | n.OrCond):
        return [k for c in cond.items for k in _keywords(c)]
    if isinstance(cond, n.NotCond):
        return _keywords(cond.item)
    return []


def _graph(
    r: _JsonFindings, cfg: dict[str, Any], participants: list[str], user: str
) -> tuple[list[mm.Rule], bool, list[str]]:
    """GraphFlow edges -> rules. Returns the rules, whether they are exact, and the
    unconditional chain from the entry node (for scenarios)."""
    graph = cfg.get("graph")
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    if not isinstance(nodes, dict) or not nodes:
        r.report(M001, "the GraphFlow has no `graph.nodes`", "config.graph")
        return [], False, []
    exact = True
    rules: list[mm.Rule] = []
    incoming: dict[str, list[str]] = {name: [] for name in nodes}
    edges: dict[str, list[dict[str, Any]]] = {}
    for name, node in nodes.items():
        raw = node.get("edges") if isinstance(node, dict) else None
        edges[name] = (
            [e for e in raw if isinstance(e, dict) and isinstance(e.get("target"), str)]
            if isinstance(raw, list)
            else []
        )
        for e in edges[name]:
            incoming.setdefault(e["target"], []).append(name)
    unknown = sorted(n_ for n_ in incoming if n_ not in participants)
    if unknown:
        r.report(
            M001, f"graph nodes {', '.join(unknown)} are not participants; left out", "config.graph"
        )
        return [], False, []
    start = graph.get("default_start_node") if isinstance(graph, dict) else None
    if isinstance(start, str) and start not in nodes:
        r.report(M001, f"`default_start_node` {start!r} is not a node of the graph", "config.graph")
        return [], False, []
    starts = [start] if isinstance(start, str) else [n_ for n_ in nodes if not incoming.get(n_)]
    if not starts:
        r.report(
            M001,
            "the graph has no start node (every node has a parent) and no `default_start_node`",
            "config.graph",
        )
        return [], False, []
    if len(starts) > 1:
        r.report(
            M001,
            f"several start nodes ({', '.join(starts)}) run in parallel in AgentChat; only "
            f"`{starts[0]}` starts the flow",
            "config.graph",
        )
        exact = False
    rules.append(
        mm.Rule(mm.from_(user), mm.speaker_target(starts[0]), 0, "the task goes to the entry node")
    )
    silent_edges = False
    for name, out in edges.items():
        path = f"config.graph.nodes.{name}.edges"
        plain = [e for e in out if not e.get("condition")]
        conditional = [e for e in out if e.get("condition")]
        if plain:
            silent_edges = True
        for e in conditional:
            cond = e["condition"]
            # a condition a Python reader already expressed (`"kw" not in m.to_model_text()`)
            flow_cond = e.get("_flow_condition")
            if flow_cond is not None:
                rules.append(
                    mm.Rule(
                        n.AndCond((mm.from_(name), flow_cond), mm.S), mm.speaker_target(e["target"])
                    )
                )
                continue
            if not isinstance(cond, str):
                r.report(
                    M001,
                    f"the condition of the edge `{name}` -> `{e['target']}` is not a keyword "
                    "test; the edge was left out",
                    f"{path}[{out.index(e)}].condition",
                    help=f"port it by hand: `when from {name} and <condition> then {e['target']}` "
                    "with a custom condition",
                )
                exact = False
                continue
            rules.append(
                mm.Rule(
                    n.AndCond((mm.from_(name), mm.call_cond("text_contains", text=cond)), mm.S),
                    mm.speaker_target(e["target"]),
                )
            )
        negated = [_keywords(e["_flow_condition"]) for e in conditional if e.get("_flow_condition")]
        exclusive = (
            len(conditional) == 2
            and len(negated) == 1
            and negated[0]
            == [e["condition"] for e in conditional if isinstance(e["condition"], str)]
        )
        if len(conditional) > 1 and not exclusive:  # `"kw"` / `not "kw"` never both hold
            r.report(
                M002,
                f"`{name}`'s edges test keywords: when a message holds several of them, "
                "AgentChat runs several nodes, the flow only the first",
                path,
            )
        if plain and conditional:
            r.report(
                M001,
                f"`{name}` has both conditional and unconditional edges, which run in "
                "parallel in AgentChat; the unconditional ones were left out",
                path,
            )
            exact = False
            continue
        if len(plain) > 1:
            r.report(
                M001,
                f"`{name}` fans out to {', '.join(e['target'] for e in plain)} in parallel; only "
                f"the edge to `{plain[0]['target']}` was kept",
                path,
            )
            exact = False
        if plain:
            rules.append(mm.Rule(mm.from_(name), mm.speaker_target(plain[0]["target"])))
    for name, parents in incoming.items():
        # autogen-agentchat >= 0.6 activates a node per edge `activation_group` (default: the
        # target) with that group's `activation_condition`; older JSON has the node's `activation`
        groups: dict[tuple[str, Any], set[str]] = {}
        for src, out in edges.items():
            for e in out:
                if e["target"] == name and isinstance(e.get("activation_group"), str):
                    key = (e["activation_group"], e.get("activation_condition", "all"))
                    groups.setdefault(key, set()).add(src)
        if groups:
            for (group, condition), sources in sorted(groups.items()):
                if condition == "all" and len(sources) > 1:
                    r.report(
                        M002,
                        f"`{name}` waits for all of {', '.join(sorted(sources))} in AgentChat "
                        f"(activation group `{group}`, `all`); in the flow it speaks after "
                        "any of them",
                        f"config.graph.nodes.{name}.activation",
                    )
            continue
        node = nodes.get(name)
        activation = node.get("activation", "all") if isinstance(node, dict) else "all"
        if len(set(parents)) > 1 and activation == "all":
            r.report(
                M002,
                f"`{name}` waits for all of {', '.join(sorted(set(parents)))} in AgentChat "
                "(`activation: all`); in the flow it speaks after any of them",
                f"config.graph.nodes.{name}.activation",
            )
    if silent_edges:
        r.report(
            M002,
            "an edge with a Python callable condition is written to JSON without its "
            "condition, exactly like an unconditional edge: check the original graph",
            "config.graph",
        )
    chain = [starts[0]]
    while len(chain) <= len(nodes):
        out = edges.get(chain[-1], [])
        if len(out) != 1 or out[0].get("condition"):
            break
        chain.append(out[0]["target"])
    return rules, exact, chain


def _chain_scenarios(
    user: str,
    chain: list[str],
    max_turns: int | None,
    keywords: list[str],
    branches: list[tuple[str, str, bool]],
) -> tuple[list[n.Scenario], list[tuple[str, ...]]]:
    """The graph's unconditional path from the entry node to where no node is ready."""
    seq = [user, *chain]
    if len(set(chain)) != len(chain) or (max_turns is not None and len(seq) >= max_turns):
        return [], []  # a cycle, or the cap comes first: the path does not complete by itself
    texts = [f"{sp}, turn {i + 1}" for i, sp in enumerate(seq)]
    if any(k in t for k in keywords for t in texts):
        return [], []
    last = chain[-1]
    negated = [k for k, _, neg in branches if neg]
    scenarios: list[n.Scenario] = []
    sequences: list[tuple[str, ...]] = []
    if not negated:  # an edge `"kw" not in ...` fires on the path's keyword-free text
        items: list[n.ScenarioItem] = [mm.say(sp, t) for sp, t in zip(seq, texts, strict=True)]
        items.append(mm.expect_terminate("graph_complete"))
        scenarios.append(mm.scenario("the graph's path", items))
        sequences.append(tuple(seq))
    for keyword, target, neg in branches:
        if neg:
            if len(negated) != 1:
                continue  # every negated edge would fire on a keyword-free text
            text, title = texts[-1], f"`{last}` does not say {keyword}"
        else:
            text, title = f"{last}: {keyword}", f"`{last}` says {keyword}"
            if any(k in text for k in keywords if k != keyword) or any(
                k not in text for k in negated
            ):
                continue
        b_items: list[n.ScenarioItem] = [
            mm.say(sp, t) for sp, t in zip(seq[:-1], texts, strict=False)
        ]
        b_items += [mm.say(last, text), mm.expect_next(target)]
        scenarios.append(mm.scenario(title, b_items))
        sequences.append((*seq, target))
    return scenarios, sequences
