"""AutoGen Studio 0.1 workflow JSON (``"type": "groupchat"``) -> `.flow`.

AutoGen Studio 0.1.x builds a classic ``GroupChat`` from its workflow JSON
(``autogenstudio.workflowmanager.WorkflowManager.load``): every agent becomes a
``ConversableAgent(**config)`` whose ``is_termination_msg`` defaults to
``"TERMINATE" in content.rstrip()[-20:]``; the group chat agent becomes
``GroupChat(agents, messages, max_round, speaker_selection_method, allow_repeat_speaker)``
managed by a ``GroupChatManager`` that keeps the manager defaults (its name and
termination test are not passed on); the ``sender`` starts the chat.

This reader writes exactly that construction as Python and translates it with the
classic reader (:mod:`.classic`), then points each finding back at its JSON path. Both
shapes are read: the 0.1.5 export (``agents: [{agent, link: {agent_type}}]``, group
settings in the group agent's ``config``, members in its ``agents``) and the older
``sender`` / ``receiver`` + ``groupchat_config`` shape of the bundled defaults.

>>> wf = {"name": "demo", "type": "groupchat",
...       "sender": {"type": "userproxy", "config": {"name": "userproxy"}},
...       "receiver": {"type": "groupchat", "config": {"name": "group_chat_manager"},
...                    "groupchat_config": {"max_round": 4, "speaker_selection_method": "round_robin",
...                        "agents": [{"type": "assistant", "config": {"name": "a", "llm_config": {}}},
...                                   {"type": "assistant", "config": {"name": "b", "llm_config": {}}}]}}}
>>> r = translate_studio(wf, "wf.json")
>>> [s.name for s in r.migration.speakers], r.migration.max_turns
(['userproxy', 'a', 'b'], 4)
"""

from __future__ import annotations

from typing import Any

import attrs

from flowc.diagnostics import M001, Diagnostic
from flowc.migrate.classic import translate_classic
from flowc.migrate.json_names import long_name_help, long_name_message, twice_named
from flowc.migrate.model import NotRecognised, Translation, free_name, identifier
from flowc.migrate.pyvalues import MAX_NAME
from flowc.source import SourceFile

STUDIO_TERMINATION = 'lambda x: "TERMINATE" in x.get("content", "").rstrip()[-20:]'
DEFAULT_MAX_ROUND = 100


def is_studio_workflow(data: Any) -> bool:
    """A Studio 0.1 workflow (or a bare Studio group chat agent)."""
    if not isinstance(data, dict) or "provider" in data:
        return False
    if data.get("type") == "groupchat" or "receiver" in data or "sender" in data:
        return True
    agents = data.get("agents")
    return isinstance(agents, list) and any(isinstance(a, dict) and "link" in a for a in agents)


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = ["import autogen", ""]
        self.paths: dict[int, str] = {}

    def add(self, line: str, path: str) -> None:
        self.lines.append(line)
        self.paths[len(self.lines)] = path


def _fail(filename: str, message: str, path: str) -> NotRecognised:
    return NotRecognised([Diagnostic(M001, message, filename, json_path=path)])


def _parts(
    data: dict[str, Any], filename: str
) -> tuple[tuple[dict[str, Any], str] | None, tuple[dict[str, Any], str]]:
    """(sender, path) and (group chat agent, path)."""
    sender: tuple[dict[str, Any], str] | None = None
    receiver: tuple[dict[str, Any], str] | None = None
    if isinstance(data.get("agents"), list) and any(
        isinstance(a, dict) and "link" in a for a in data["agents"]
    ):
        for i, item in enumerate(data["agents"]):
            if not isinstance(item, dict) or not isinstance(item.get("agent"), dict):
                continue
            link = item.get("link")
            kind = link.get("agent_type") if isinstance(link, dict) else None
            if kind == "sender":
                sender = (item["agent"], f"agents[{i}].agent")
            elif kind == "receiver":
                receiver = (item["agent"], f"agents[{i}].agent")
    elif isinstance(data.get("receiver"), dict):
        receiver = (data["receiver"], "receiver")
        if isinstance(data.get("sender"), dict):
            sender = (data["sender"], "sender")
    elif data.get("type") == "groupchat" and isinstance(data.get("config"), dict):
        receiver = (data, "")
    if receiver is None:
        raise _fail(filename, "the Studio workflow has no receiver agent", "agents")
    if receiver[0].get("type") != "groupchat":
        raise _fail(
            filename,
            "the Studio workflow is a two-agent chat, not a group chat: there is nothing to route",
            f"{receiver[1]}.type".lstrip("."),
        )
    return sender, receiver


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def lower_studio(
    data: Any, filename: str, findings: list[Diagnostic]
) -> tuple[str, dict[int, str]]:
    """The classic Python that Studio's ``WorkflowManager`` builds from ``data``, and the
    JSON path of each of its lines; raises :class:`NotRecognised`. An agent's name past
    :data:`~.pyvalues.MAX_NAME` is an M001 (added to ``findings``) at its JSON path, and the
    agent takes part as ``agent_<i>`` (its position in the member ``agents``; ``sender``
    for the sender, or the name of the member it shares its name with), free of the other
    names. Two members of one such name are refused, as the classic reader refuses two
    members of one shorter name."""
    sender, (group, gpath) = _parts(data, filename)
    w = _Writer()
    raw_conf = group.get("config")
    gconf = dict(raw_conf) if isinstance(raw_conf, dict) else {}
    old = group.get("groupchat_config")
    members_path = _join(gpath, "agents")
    settings_path = _join(gpath, "config")
    if isinstance(old, dict):
        gconf.update(old)
        members_path = _join(gpath, "groupchat_config.agents")
        settings_path = _join(gpath, "groupchat_config")
    members = group.get("agents") if isinstance(group.get("agents"), list) else gconf.get("agents")
    if not isinstance(members, list) or not members:
        raise _fail(filename, "the group chat agent has no member agents", members_path)

    specs = [*members, *([sender[0]] if sender is not None else [])]
    taken = {name for spec in specs if len(name := _name(spec)) <= MAX_NAME}
    made: dict[str, tuple[str, str]] = {}  # a long name -> (its member's new name, path)

    def agent_code(var: str, spec: Any, path: str, instead: str) -> str | None:
        cfg = spec.get("config") if isinstance(spec, dict) else None
        if not isinstance(cfg, dict) or not _name(spec):
            return None
        name = cfg["name"]
        if len(name) > MAX_NAME:
            if name in made and var != "sender":
                message = twice_named("agents of the group chat", name, made[name][1])
                raise _fail(filename, message, f"{path}.config.name")
            if name not in made:  # (a sender of a member's name is that member, as classic)
                made[name] = (free_name(taken, instead), f"{path}.config.name")
                taken.add(made[name][0])
            name = made[name][0]
            findings.append(_long_name(filename, f"{path}.config.name", name))
        kw = [f"name={name!r}"]
        for key in ("system_message", "description", "human_input_mode"):
            if isinstance(cfg.get(key), str):
                kw.append(f"{key}={cfg[key]!r}")
        llm = cfg.get("llm_config", False)
        kw.append(
            "llm_config=False" if llm is False or llm is None else f"llm_config={_literal(llm)}"
        )
        mcar = cfg.get("max_consecutive_auto_reply")
        if isinstance(mcar, int) and not isinstance(mcar, bool):
            kw.append(f"max_consecutive_auto_reply={mcar}")
        term = cfg.get("is_termination_msg")
        kw.append(
            f"is_termination_msg={STUDIO_TERMINATION}"
            if term in (None, False, "")
            else "is_termination_msg=UNKNOWN_TERMINATION"
        )
        w.add(f"{var} = autogen.ConversableAgent({', '.join(kw)})", _join(path, "config"))
        return var

    names: list[str] = []
    for i, spec in enumerate(members):
        var = agent_code(f"member_{i}", spec, f"{members_path}[{i}]", f"agent_{i}")
        if var is None:
            raise _fail(filename, "a member agent has no `config.name`", f"{members_path}[{i}]")
        names.append(var)
    sender_var = None
    if sender is not None:
        sender_var = agent_code("sender", sender[0], sender[1], "sender")
    kw = [f"agents=[{', '.join(names)}]", "messages=[]"]
    max_round = gconf.get("max_round", DEFAULT_MAX_ROUND)
    kw.append(f"max_round={max_round!r}")
    kw.append(f"speaker_selection_method={gconf.get('speaker_selection_method', 'auto')!r}")
    repeat = gconf.get("allow_repeat_speaker", True)
    if isinstance(repeat, bool):
        kw.append(f"allow_repeat_speaker={repeat!r}")
    w.add(f"groupchat = autogen.GroupChat({', '.join(kw)})", settings_path)
    manager_llm = gconf.get("llm_config")
    w.add(
        f"manager = autogen.GroupChatManager(groupchat=groupchat, llm_config={_literal(manager_llm)})"
        if isinstance(manager_llm, dict)
        else "manager = autogen.GroupChatManager(groupchat=groupchat)",
        gpath or "type",
    )
    if sender_var is not None:
        w.add(f"{sender_var}.initiate_chat(manager)", sender[1] if sender else "")
    return "\n".join(w.lines) + "\n", w.paths


def translate_studio(data: Any, filename: str) -> Translation:
    """Translate a Studio 0.1 group-chat workflow; raises :class:`NotRecognised`."""
    bounds: list[Diagnostic] = []
    text, paths = lower_studio(data, filename, bounds)
    title = data.get("name") if isinstance(data.get("name"), str) else None
    if title is not None and len(title) > MAX_NAME:
        bounds.insert(0, _long_name(filename, "name", None))
        title = None
    try:
        result = translate_classic(SourceFile(filename, text))
    except NotRecognised as err:
        raise NotRecognised(
            [*bounds, *(_relocate(d, paths, filename) for d in err.findings)]
        ) from None
    stem = filename.rsplit("/", 1)[-1]
    migration = attrs.evolve(
        result.migration,
        source_kind=f"an AutoGen Studio 0.1 workflow ({stem})",
        description=data.get("description") if isinstance(data.get("description"), str) else None,
        title=_ident(title) if title else result.migration.title,
    )
    findings = (*bounds, *(_relocate(d, paths, filename) for d in result.findings))
    return Translation(migration, findings, result.sequences)


def _name(spec: Any) -> str:
    """An agent's ``config.name`` ("" when it has none)."""
    cfg = spec.get("config") if isinstance(spec, dict) else None
    name = cfg.get("name") if isinstance(cfg, dict) else None
    return name if isinstance(name, str) else ""


def _long_name(filename: str, path: str, instead: str | None) -> Diagnostic:
    """The M001 on a name past MAX_NAME, worded as the component JSON reader words it."""
    return Diagnostic(
        M001,
        long_name_message(
            f"the agent takes part as `{instead}`"
            if instead
            else "the flow is titled after the file"
        ),
        filename,
        json_path=path,
        help=long_name_help(
            "an agent whose name is refused takes part as `agent_<its position>` in the "
            "group's agents, or `sender`"
        ),
    )


def _literal(value: Any) -> str:
    """A JSON value as a Python literal (``repr`` of the decoded value)."""
    return repr(value) if isinstance(value, dict | list) else "{}"


def _ident(text: str) -> str:
    return identifier(text)


def _relocate(d: Diagnostic, paths: dict[int, str], filename: str) -> Diagnostic:
    path = paths.get(d.span.line, "") if d.span is not None else (d.json_path or "")
    return Diagnostic(d.code, d.message, filename, None, d.notes, d.help, json_path=path)
