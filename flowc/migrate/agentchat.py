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

from collections.abc import Callable
from typing import Any

import attrs

import flowc.migrate.model as mm
from flowc.diagnostics import M001, M002, M003, Code, Diagnostic
from flowc.dsl import nodes as n
from flowc.migrate.agentchat_graph import graph_rules, graph_scenarios
from flowc.migrate.json_names import LEFT_OUT, bound_names, twice_named, twice_tool
from flowc.migrate.model import NotRecognised
from flowc.migrate.selector_size import MAX_SELECTOR_BYTES, selector_role, selectors_size

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


@attrs.define
class _Participants:
    """What the team's ``participants`` say about each agent, in their order."""

    names: list[str] = attrs.Factory(list)
    #: a participant whose class flowc does not model: no claim about the order
    unmodelled: bool = False
    roles: dict[str, str | None] = attrs.Factory(dict)
    humans: set[str] = attrs.Factory(set)
    tools: dict[str, list[mm.Tool]] = attrs.Factory(dict)
    handoffs: dict[str, list[_Handoff]] = attrs.Factory(dict)


@attrs.define
class _Routing:
    """The rules a team kind adds after the termination rules, and what the later steps
    (speakers, scenarios) need to know about them."""

    rules: list[mm.Rule] = attrs.Factory(list)
    #: the rules state AgentChat's speaker order (scenarios may claim it)
    exact: bool = True
    #: GraphFlow: the unconditional chain from the entry node
    chain: list[str] = attrs.Factory(list)
    otherwise: n.Target | None = None
    otherwise_comment: str | None = None
    #: SelectorGroupChat: the selector's name and its speakers (name, after whom, candidates)
    selector: str | None = None
    selectors: list[tuple[str, str | None, list[str]]] = attrs.Factory(list)


def translate_component(data: Any, filename: str, per_speaker: bool = True) -> mm.Translation:
    """Translate an AgentChat team component (a dict from JSON).

    ``per_speaker``: a ``SelectorGroupChat`` without ``allow_repeated_speaker`` gets one
    selector speaker per previous speaker (False when a ``selector_func`` or
    ``candidate_func`` of the Python team decides which speaker the model chose last).

    Raises :class:`NotRecognised` when ``data`` is not a team this translator handles.
    """
    r = _JsonFindings(filename)
    kind, cfg, written = _team(r, data)
    cfg = bound_names(r, cfg)  # (a name past MAX_NAME: an M001, and what is used instead)
    team = _participants(r, cfg["participants"], kind, written)
    participants = team.names
    user = mm.free_name(participants, "user", "task_sender")
    findings_before = len(r.findings)
    max_turns, term_rules, witness, handoff_ends = _termination(
        r, cfg, participants, team.handoffs, kind
    )
    if kind == "RoundRobinGroupChat":
        routing = _Routing(_ring_rules(user, participants))
    elif kind == "SelectorGroupChat":
        routing = _selector_team(r, cfg, user, participants, per_speaker)
    elif kind == "GraphFlow":
        routing = _graph_team(r, cfg, participants, user)
    else:  # Swarm
        routing = _Routing(
            _swarm_rules(r, user, participants, team.handoffs, handoff_ends),
            otherwise=n.StayTarget(mm.S),
            otherwise_comment="a Swarm speaker keeps the floor until it hands off",
        )
    rules = [*term_rules, *routing.rules]
    speakers = _speakers(user, team, routing, cfg)
    if routing.selector is not None and max_turns is not None:
        # the selector speaks before every agent turn, but when a single candidate is left
        # (two participants, no repeats) only before the first one
        single = any(len(c) == 1 for _, _, c in routing.selectors)
        max_turns = max_turns + 1 if single else 2 * max_turns - 1
    exact = (
        routing.exact
        and not any(d.code is M001 for d in r.findings[findings_before:])
        and not team.unmodelled
    )
    scenarios, sequences = (
        _scenarios(kind, user, team, rules, routing.chain, max_turns, witness, handoff_ends)
        if exact
        else ([], [])
    )
    exact = exact and bool(scenarios)  # the label says the scenarios state the order
    migration = mm.Migration(
        title=mm.identifier(_label(cfg, kind, filename)),
        source_kind=f"an AgentChat component ({filename.rsplit('/', 1)[-1]})",
        description=_description(cfg),
        speakers=tuple(speakers),
        start=user,
        max_turns=max_turns,
        rules=tuple(rules),
        otherwise=routing.otherwise,
        otherwise_comment=routing.otherwise_comment,
        scenarios=tuple(scenarios),
        notes=tuple(_notes(kind, exact, _team_cap(cfg))),
    )
    return mm.Translation(migration, tuple(r.findings), tuple(sequences))


def _json_kind(value: Any) -> str:
    """What a JSON value that is not an object is, for a finding: ``an array``, ..."""
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"


def _team(r: _JsonFindings, data: Any) -> tuple[str, dict[str, Any], list[Any]]:
    """Check that ``data`` is a team this translator handles; its kind (the provider's
    class name), config and raw participants list. Raises :class:`NotRecognised` (with
    the reason as an M001 finding) otherwise, so that the caller can try another reader."""
    if not isinstance(data, dict):
        raise r.fail(
            f"not an AgentChat component: expected a JSON object at `$` (the top level), got "
            f"{_json_kind(data)}",
            "",
            help="the file must hold one JSON object: an AgentChat component "
            "(`team.dump_component().model_dump_json()`) or an AutoGen Studio workflow",
        )
    if "provider" not in data:
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
    return kind, cfg, raw


def _participants(r: _JsonFindings, raw: list[Any], kind: str, written: list[Any]) -> _Participants:
    """Read each participant's name, class, role, tools and handoffs, reporting nested
    teams and agent classes flowc does not model (they still take part as plain speakers).
    ``written`` holds each participant as the file writes it (:func:`bound_names` gave a
    name past the bound another one in ``raw``). Raises :class:`NotRecognised` on a
    nameless participant, or two of one name as written (AgentChat refuses such a team):
    without unique names no rule can point at it; and on an agent with two tools of one
    name as written (AgentChat refuses such an agent: :func:`twice_tool`), which one
    ``tool`` line would stand for as if they were one."""
    team = _Participants()
    first: dict[str, int] = {}  # a name as written -> its first participant
    for i, p in enumerate(raw):
        path = f"config.participants[{i}]"
        pc = _config(p)
        pname = pc.get("name")
        pkind = _short(p.get("provider") if isinstance(p, dict) else None)
        if not isinstance(pname, str) or not pname:
            raise r.fail("a participant has no `config.name`", path)
        wpc = _config(written[i])
        wname = wpc["name"] if isinstance(wpc.get("name"), str) else pname
        if wname in first:
            at = f"config.participants[{first[wname]}].config.name"
            raise r.fail(twice_named("participants", wname, at), f"{path}.config.name")
        first[wname] = i
        twice = twice_tool(wpc, path)
        if twice is not None:
            raise r.fail(*twice)
        if pkind in ("RoundRobinGroupChat", "SelectorGroupChat", "Swarm", "SocietyOfMindAgent"):
            r.report(
                M001,
                f"`{pname}` is a nested team; it became a plain speaker",
                path,
                help="migrate the nested team as its own flow",
            )
        elif pkind not in AGENTS:
            team.unmodelled = True
            r.report(
                M002,
                f"`{pname}` is a `{pkind or 'component'}`, an agent class flowc does not "
                "model: it takes part as a plain speaker, and what it does (its replies, "
                "tools or browsing) runs in your agent code, not in the flow",
                f"{path}.provider",
            )
        team.names.append(pname)
        if pkind == "UserProxyAgent":
            team.humans.add(pname)
        role = pc.get("description")
        if not isinstance(role, str) or role in DEFAULT_DESCRIPTIONS:
            role = pc.get("system_message")
        if pkind == "UserProxyAgent" and not role:
            role = "A person (UserProxyAgent)."
        team.roles[pname] = role if isinstance(role, str) else None
        team.tools[pname] = _tools(pc)
        team.handoffs[pname] = _handoffs(r, pc, path, kind, {t.name for t in team.tools[pname]})
    return team


def _ring_rules(user: str, participants: list[str]) -> list[mm.Rule]:
    """RoundRobinGroupChat: an explicit ring from the task sender through every
    participant and back to the first."""
    ring = [user, *participants]
    return [
        mm.Rule(mm.from_(a), mm.speaker_target(b))
        for a, b in zip(ring, [*participants, participants[0]], strict=True)
    ]


def _selector_team(
    r: _JsonFindings, cfg: dict[str, Any], user: str, participants: list[str], per_speaker: bool
) -> _Routing:
    """SelectorGroupChat: the selector speakers and their routing, with the findings on
    what model-based selection becomes and which selector settings are dropped. Never
    exact: the model picks the order."""
    selector = mm.free_name([*participants, user], "selector", "team_selector")
    # AgentChat 0.7.x's default: the previous speaker leaves the candidates
    no_repeat = cfg.get("allow_repeated_speaker", False) is False
    # one selector per previous speaker writes each participant's name once per other
    # participant: past MAX_SELECTOR_BYTES, one selector keeps the output linear in the input
    prompt = cfg.get("selector_prompt")
    size = selectors_size(participants, prompt if isinstance(prompt, str) else None)
    crowded = no_repeat and per_speaker and len(participants) > 2 and size > MAX_SELECTOR_BYTES
    per_speaker = per_speaker and not crowded
    selectors = _selectors(selector, participants, no_repeat and per_speaker, user)
    routing = _Routing(
        selector_routing(user, selector, participants, selectors),
        exact=False,
        selector=selector,
        selectors=selectors,
    )
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
    if crowded:
        r.report(
            M002,
            f"`allow_repeated_speaker` is false (AgentChat's default), but with"
            f" {len(participants)} participants one selector speaker per previous speaker"
            " would name every participant once per other participant, in about"
            f" {size / 2**20:.1f} MiB of selector speakers (such selectors are written only"
            f" up to {MAX_SELECTOR_BYTES >> 20} MiB): the selector speaker `{selector}` keeps"
            " every participant a candidate, the previous speaker included",
            "config.participants",
        )
    elif no_repeat and not per_speaker:
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
    return routing


def _graph_team(
    r: _JsonFindings, cfg: dict[str, Any], participants: list[str], user: str
) -> _Routing:
    """GraphFlow: the graph's edges as rules (see :func:`graph_rules`); when no node is
    ready the graph is complete and the run ends."""
    rules, exact, chain = graph_rules(r, cfg, participants, user)
    return _Routing(
        rules,
        exact,
        chain,
        mm.terminate("graph_complete"),
        "no node is ready: the graph is complete",
    )


def _swarm_rules(
    r: _JsonFindings,
    user: str,
    participants: list[str],
    handoffs: dict[str, list[_Handoff]],
    handoff_ends: set[str],
) -> list[mm.Rule]:
    """Swarm: the task goes to the first participant, and each handoff tool routes to
    its target (a HandoffTermination target is left to the termination rule). A tool name
    used for two targets, or a target outside the team, is reported and left out."""
    rules = [
        mm.Rule(
            mm.from_(user),
            mm.speaker_target(participants[0]),
            0,
            "the task goes to the first participant",
        )
    ]
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
    return rules


def _speakers(
    user: str, team: _Participants, routing: _Routing, cfg: dict[str, Any]
) -> list[mm.Speaker]:
    """The task sender, every participant (its tools plus its handoff tools) and, in a
    SelectorGroupChat, each selector speaker that has more than one candidate (with a
    single candidate AgentChat picks it without the model)."""
    speakers = [mm.Speaker(user, True, "Sends the task (AgentChat `team.run(task=...)`).")]
    for name in team.names:
        tools = team.tools[name]
        declared = {t.name for t in tools}
        hs = [mm.Tool(h.tool, h.description) for h in team.handoffs[name] if h.tool not in declared]
        speakers.append(mm.Speaker(name, name in team.humans, team.roles[name], (*tools, *hs)))
    if routing.selector is not None:
        prompt = cfg.get("selector_prompt")
        for name, after, candidates in routing.selectors:
            if len(candidates) < 2:
                continue  # one candidate: AgentChat picks it without the model
            speakers.append(
                mm.Speaker(
                    name,
                    False,
                    selector_role(after, prompt if isinstance(prompt, str) else None),
                    tuple(mm.Tool(f"transfer_to_{c}", f"{c} speaks next.") for c in candidates),
                )
            )
    return speakers


def _scenarios(
    kind: str,
    user: str,
    team: _Participants,
    rules: list[mm.Rule],
    chain: list[str],
    max_turns: int | None,
    witness: str | None,
    handoff_ends: set[str],
) -> tuple[list[n.Scenario], list[tuple[str, ...]]]:
    """The scenarios (and the speaker order each encodes) of a team whose rules state
    AgentChat's order exactly; none for a kind whose order cannot be stated."""
    participants = team.names
    if kind == "RoundRobinGroupChat" and max_turns is not None:
        return _ring_scenarios(user, participants, max_turns, witness)
    if kind == "GraphFlow":
        return graph_scenarios(user, chain, rules, max_turns)
    if kind == "Swarm":
        return _swarm_scenarios(user, participants, team.handoffs, handoff_ends, witness)
    return [], []


def _label(cfg: dict[str, Any], kind: str, filename: str) -> str:
    """The flow's title: the team's own name, or the file's stem when the team has none
    (or only its class name)."""
    stem = filename.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return str(cfg.get("name") if cfg.get("name") not in (None, "", kind) else stem)


def _description(cfg: dict[str, Any]) -> str | None:
    """The team's description, unless it is AgentChat's default one."""
    team_description = cfg.get("description")
    if isinstance(team_description, str) and team_description != "A team of agents.":
        return team_description
    return None


def _team_cap(cfg: dict[str, Any]) -> int | None:
    """The team's ``max_turns`` when it is a usable cap (a whole number of 1 or more)."""
    cap = cfg.get("max_turns")
    if isinstance(cap, int) and not isinstance(cap, bool) and cap >= 1:
        return cap
    return None


def _notes(kind: str, exact: bool, team_cap: int | None) -> list[str]:
    """The notes at the head of the flow: the team kind (and whether the scenarios state
    its order), and how the team's ``max_turns`` was counted."""
    notes = [
        f"{kind}"
        + (", speaker order read statically (the scenarios state it)" if exact else "")
        + "."
    ]
    if team_cap is not None:
        notes.append(
            f"team max_turns={team_cap} counts agent turns only; the task is one more turn."
        )
    return notes


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


def _handoffs(
    r: _JsonFindings, pc: dict[str, Any], path: str, kind: str, tools: set[str]
) -> list[_Handoff]:
    """The agent's handoffs; one named as an earlier one or one of its ``tools`` is left out."""
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
        if h is LEFT_OUT:
            continue  # (its target is a name past MAX_NAME: reported)
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
        if any(o.tool == tool for o in out) or tool in tools:  # (AgentChat refuses it)
            what = (
                ("handoff", "differ from its tools'")
                if tool in tools
                else ("second handoff", "be unique")
            )
            r.report(
                M001,
                f"a {what[0]} named `{tool}` (to `{target}`) was left out: an agent's handoff"
                f" names must {what[1]}",
                f"{path}.config.handoffs[{j}]",
            )
            continue
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
    """The team's termination: the turn cap (the smallest of team ``max_turns`` + 1 and
    every MaxMessageTermination), the -10 rules that end the run, the first mentioned
    text (a scenario's witness) and the HandoffTermination targets."""
    ends = _Ends(r, participants, handoffs)
    team_cap = _team_cap(cfg)
    if team_cap is not None:
        ends.caps.append(team_cap + 1)
    elif cfg.get("max_turns") is not None:  # null is AgentChat's own default: no cap
        r.report(
            M001,
            f"the team's `max_turns` ({mm.shown(cfg['max_turns'])}) is not a whole number of "
            "1 or more; left out",
            "config.max_turns",
            help="AgentChat counts agent turns with it: give a number of turns of 1 or more",
        )
    term = cfg.get("termination_condition")
    if term is not None:
        ends.visit(term, "config.termination_condition")
    if not ends.caps and kind != "Swarm" and not ends.rules:
        r.report(
            M002,
            "the team has no termination condition and no max_turns: the flow has no turn "
            "cap either",
            "config",
        )
    return (
        (min(ends.caps) if ends.caps else None),
        ends.rules,
        (ends.witness[0] if ends.witness else None),
        ends.handoff_ends,
    )


@attrs.define
class _Ends:
    """Reads a termination condition tree into turn caps and -10 rules, one method per
    condition class (an ``OrTerminationCondition`` visits its members in order, so the
    findings and rules keep the JSON's order)."""

    r: _JsonFindings
    participants: list[str]
    handoffs: dict[str, list[_Handoff]]
    caps: list[int] = attrs.Factory(list)
    rules: list[mm.Rule] = attrs.Factory(list)
    witness: list[str] = attrs.Factory(list)
    handoff_ends: set[str] = attrs.Factory(set)

    def visit(self, cond: Any, path: str) -> None:
        """Translate one condition at JSON ``path``; what has no flow equivalent is reported."""
        if cond is LEFT_OUT:
            return  # (it names a tool past MAX_NAME: reported)
        ck = _short(cond.get("provider")) if isinstance(cond, dict) else ""
        cc = _config(cond)
        if ck == "OrTerminationCondition":
            subs = cc.get("conditions")
            for i, sub in enumerate(subs if isinstance(subs, list) else []):
                self.visit(sub, f"{path}.config.conditions[{i}]")
        elif ck in _END_READERS:
            _END_READERS[ck](self, cc, path)
        elif ck == "StopMessageTermination":
            self.r.report(
                M002,
                "StopMessageTermination: a StopMessage comes from agent code; give the agent "
                "a tool that `finishes` instead",
                path,
            )
        elif ck:
            self.r.report(
                M001,
                f"the termination condition `{ck}` has no equivalent in a flow; left out",
                path,
                help="TokenUsage/Timeout/External/Functional conditions and `&` are not "
                "graph conditions; end the run from your application",
            )
        else:
            self.r.report(M001, "a termination condition without a `provider` was left out", path)

    def max_message(self, cc: dict[str, Any], path: str) -> None:
        """MaxMessageTermination: a turn cap (agent events are not turns)."""
        value = cc.get("max_messages")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            self.caps.append(value)
            if cc.get("include_agent_event"):
                self.r.report(
                    M002,
                    "`include_agent_event` also counts agent events; the flow counts turns only",
                    f"{path}.config.include_agent_event",
                )
        else:
            self.r.report(M001, "MaxMessageTermination without a readable `max_messages`", path)

    def text_mention(self, cc: dict[str, Any], path: str) -> None:
        """TextMentionTermination: a `text_contains` rule from any speaker (its ``sources``
        never reach the JSON); the text is the witness a scenario says."""
        text = cc.get("text")
        if not isinstance(text, str):
            self.r.report(M001, "TextMentionTermination without a `text`", path)
            return
        self.rules.append(
            mm.Rule(
                mm.call_cond("text_contains", text=text),
                mm.terminate("text_mention"),
                -10,
                "TextMentionTermination",
            )
        )
        self.witness.append(text)
        self.r.report(
            M002,
            "TextMentionTermination's `sources` is never written to component JSON "
            "(autogen-agentchat 0.7.5): the flow ends on the text from any speaker",
            path,
        )

    def source_match(self, cc: dict[str, Any], path: str) -> None:
        """SourceMatchTermination: the run ends after a turn of the named participants."""
        raw = cc.get("sources")
        sources = [
            s
            for s in (raw if isinstance(raw, list) else [])
            if isinstance(s, str) and s in self.participants
        ]
        if sources:
            self.rules.append(
                mm.Rule(
                    mm.from_(*sources),
                    mm.terminate("source_match"),
                    -10,
                    "SourceMatchTermination",
                )
            )
        else:
            self.r.report(M001, "SourceMatchTermination names no participant", path)

    def function_call(self, cc: dict[str, Any], path: str) -> None:
        """FunctionCallTermination: the run ends when the named tool is called."""
        fn = cc.get("function_name")
        if isinstance(fn, str) and fn:
            self.rules.append(
                mm.Rule(
                    mm.tool_cond(fn),
                    mm.terminate("function_call"),
                    -10,
                    "FunctionCallTermination",
                )
            )
        else:
            self.r.report(M001, "FunctionCallTermination without a `function_name`", path)

    def handoff(self, cc: dict[str, Any], path: str) -> None:
        """HandoffTermination: every handoff tool to the target ends the run (the Swarm
        routing leaves those tools to these rules)."""
        target = cc.get("target")
        names = sorted({h.tool for hs in self.handoffs.values() for h in hs if h.target == target})
        if not isinstance(target, str) or not names:
            self.r.report(
                M001, f"HandoffTermination to {target!r}: no participant hands off there", path
            )
            return
        self.handoff_ends.add(target)
        for name in names:
            self.rules.append(
                mm.Rule(
                    mm.tool_cond(name),
                    mm.terminate(f"handoff_to_{target}"),
                    -10,
                    "HandoffTermination",
                )
            )

    def text_message(self, cc: dict[str, Any], path: str) -> None:
        """TextMessageTermination: lossy, every turn of the source (or of anyone) ends the
        run, where AgentChat ends only on a text message."""
        source = cc.get("source")
        if source is not None and source not in self.participants:
            self.r.report(M001, f"TextMessageTermination names no participant ({source!r})", path)
            return
        ends = [source] if isinstance(source, str) else list(self.participants)
        self.rules.append(
            mm.Rule(mm.from_(*ends), mm.terminate("text_message"), -10, "TextMessageTermination")
        )
        self.r.report(
            M002,
            "TextMessageTermination became `when from "
            f"{', '.join(ends)} then terminate`: AgentChat ends only on a text "
            "message, the flow also after a turn that was a tool-call summary or a "
            "handoff",
            path,
        )


#: the termination conditions that become caps or rules, by class name
_END_READERS: dict[str, Callable[[_Ends, dict[str, Any], str], None]] = {
    "MaxMessageTermination": _Ends.max_message,
    "TextMentionTermination": _Ends.text_mention,
    "SourceMatchTermination": _Ends.source_match,
    "FunctionCallTermination": _Ends.function_call,
    "HandoffTermination": _Ends.handoff,
    "TextMessageTermination": _Ends.text_message,
}


#: the finding's opening words when the previous speaker's exclusion is not translated
REPEAT_MSG = "`allow_repeated_speaker` is false (AgentChat's default) and not translated"


def _selectors(
    selector: str, participants: list[str], no_repeat: bool, user: str
) -> list[tuple[str, str | None, list[str]]]:
    """The selector speakers of a SelectorGroupChat: (name, after whom, candidates).

    autogen-agentchat 0.7.5 (``SelectorGroupChatManager.select_speaker``): the candidates
    are all participants, minus the previous speaker when ``allow_repeated_speaker`` is
    false (there is none after the task); a single candidate is chosen without the model.
    Each name is free of the participants', the task sender's and the others'
    (:func:`~flowc.migrate.model.free_name`).
    """
    if not no_repeat or len(participants) < 2:
        return [(selector, None, list(participants))]
    out: list[tuple[str, str | None, list[str]]] = [(selector, None, list(participants))]
    taken = {*participants, user, selector}
    for p in participants:
        name = mm.free_name(taken, f"{selector}_after_{p}")
        taken.add(name)
        out.append((name, p, [c for c in participants if c != p]))
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
