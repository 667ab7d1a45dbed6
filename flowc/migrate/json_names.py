"""Names read from JSON (AgentChat component JSON, AutoGen Studio workflows), bounded to
:data:`~.pyvalues.MAX_NAME` characters as the Python reader bounds them
(:meth:`~.pyvalues.Values.const_name`).

The translation writes a name again in each rule and scenario line that names it, so a
longer one would make the output grow faster than the input. Before the team's component
JSON is translated, :func:`bound_names` bounds every name in it (the participants', which
the graph, the handoffs and the termination conditions repeat; the tools', the handoffs',
the team's): each name past the bound is an M001 at its JSON path
(:func:`long_name_message`, which the Studio reader words its own M001 with), and the
translation goes on with a name made up in its place.

Also here: :class:`Findings`, where the component translation reports a finding at a JSON
path, :func:`twice_named`, the finding on two participants (or tools) of one name, and
:func:`twice_tool`, which finds an agent's second tool of one name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Protocol, TypeGuard

import attrs

import flowc.migrate.model as mm
from flowc.diagnostics import M001, Code
from flowc.migrate.pyvalues import MAX_NAME, NAME_TOO_LONG


class Findings(Protocol):
    """Where the component translation reports a finding at a JSON path."""

    def report(self, code: Code, message: str, path: str, help: str | None = None) -> None: ...


#: what stands for a handoff or a termination condition that :func:`bound_names` left out
#: (and reported): the translation skips it without a finding of its own
LEFT_OUT = object()
_LONG_NAME_HELP = (
    "a participant whose name is refused takes part as `participant_<its position>`, a tool "
    "under its function's name, a handoff under AgentChat's default name "
    "`transfer_to_<target>`"
)
#: the function a FunctionTool's ``source_code`` defines (AgentChat's default tool name)
_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)[ \t]*\(", re.MULTILINE)


def long_name_message(instead: str) -> str:
    """The message of the M001 on a name past :data:`~.pyvalues.MAX_NAME` read from JSON;
    ``instead`` says what the translation does in its place.

    >>> long_name_message("the flow is titled after the file")
    'this name is not used: it is a name of more than 256 characters; the flow is titled after the file'
    """
    return f"this name is not used: {NAME_TOO_LONG}; {instead}"


def long_name_help(made_up: str) -> str:
    """The help of that M001; ``made_up`` says which name a refused one is replaced by."""
    return f"give a shorter name ({made_up})"


def twice_named(what: str, name: str, first: str) -> str:
    """The finding on two ``what`` (participants, agents) both named ``name`` as written,
    the first at JSON path ``first``. A name past :data:`~.pyvalues.MAX_NAME` is shown cut
    short, with its length and where the first one is: the names made up in its place
    differ from one to the other, and are not what the file says.

    >>> twice_named("participants", "a", "config.participants[0].config.name")
    'two participants are both named `a`'
    >>> print(twice_named("agents", "x" * 300, "agents[0].config.name"))
    two agents are both named "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (a name of 300 characters: this one and the one at `agents[0].config.name`)
    """
    if len(name) <= MAX_NAME:
        return f"two {what} are both named `{name}`"
    return (
        f"two {what} are both named {mm.shown(name)} (a name of {len(name)} characters: "
        f"this one and the one at `{first}`)"
    )


#: the help of the finding on two tools of one agent with one name
TWICE_TOOL_HELP = (
    'AgentChat refuses such an agent ("Tool names must be unique"), and flowc would have to '
    "drop one of the tools: give each tool of the agent a name of its own"
)


def _tool_entries(pc: dict[str, Any]) -> Iterator[tuple[Any, str]]:
    """Each tool of the participant whose config is ``pc`` (its ``tools``, then each
    workbench's), with the JSON path of its ``name`` under the participant's ``config``."""
    tools = pc.get("tools")
    for k, t in enumerate(tools if isinstance(tools, list) else []):
        yield _cfg(t).get("name"), f"tools[{k}].config.name"
    wb = pc.get("workbench")
    benches = [(f"workbench[{k}]", w) for k, w in enumerate(wb)] if isinstance(wb, list) else []
    for at, w in benches or [("workbench", wb)]:
        inner = _cfg(w).get("tools")
        for k, t in enumerate(inner if isinstance(inner, list) else []):
            yield _cfg(t).get("name"), f"{at}.config.tools[{k}].config.name"


def twice_tool(pc: dict[str, Any], path: str) -> tuple[str, str, str] | None:
    """The finding on the first tool of the participant whose config (as the file writes
    it) is ``pc`` and whose JSON path is ``path`` that has the name of an earlier one: its
    message, that tool's JSON path and its help; None when its tools' names are unique. AgentChat refuses such an
    agent (``AssistantAgent``: "Tool names must be unique"; with workbenches only the first
    tool of a name is ever called), and one ``tool`` line cannot stand for both: the
    translation refuses it, as it refuses two participants of one name.

    >>> tool = lambda name: {"config": {"name": name}}
    >>> twice_tool({"tools": [tool("f"), tool("g"), tool("f")]}, "config.participants[0]")[:2]
    ('two tools of one agent are both named `f`', 'config.participants[0].config.tools[2].config.name')
    >>> twice_tool({"tools": [tool("f"), tool("g")]}, "p") is None
    True
    """
    first: dict[str, str] = {}
    for name, at in _tool_entries(pc):
        if not isinstance(name, str) or not name:
            continue
        where = f"{path}.config.{at}"
        if name in first:
            return twice_named("tools of one agent", name, first[name]), where, TWICE_TOOL_HELP
        first[name] = where
    return None


def _long(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and len(value) > MAX_NAME


def _cfg(obj: Any) -> dict[str, Any]:
    cfg = obj.get("config") if isinstance(obj, dict) else None
    return cfg if isinstance(cfg, dict) else {}


def _with(obj: dict[str, Any], **config: Any) -> dict[str, Any]:
    """A copy of the component ``obj`` with ``config`` changed."""
    return {**obj, "config": {**_cfg(obj), **config}}


def _free(taken: set[str], name: str) -> str:
    """``name`` with ``_`` added until it is not in ``taken``, which it is then added to (as
    :func:`~.model.free_name`, without copying ``taken`` for each name made up)."""
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def _default_handoff(target: str) -> str:
    """AgentChat's name for a handoff to ``target`` (``Handoff.name``'s default)."""
    return f"transfer_to_{target}".lower()


def bound_names(r: Findings, cfg: dict[str, Any]) -> dict[str, Any]:
    """The team's ``config`` with every name in it bounded to :data:`~.pyvalues.MAX_NAME`
    characters. Each name past the bound is an M001 at its JSON path, and the copy carries
    what is used instead: a participant takes part as ``participant_<i>`` (its position in
    ``participants``, made free of the other names; two participants of one long name get
    two names, and the translation refuses them as it refuses two of one short name)
    wherever the team names it (graph, handoffs, termination); a tool is declared under
    its function's name (the ``def`` of its ``source_code``), or left out; a handoff takes
    AgentChat's default name, or is left out (:data:`LEFT_OUT`) when its target is such a
    name and no participant; a tool's or handoff's new name gets ``_`` added until it is
    none of its agent's other tools' and handoffs' (two tools stay two); a
    FunctionCallTermination on such a tool or handoff name follows it, or is left out; the
    team's name does not title the flow.
    """
    return _NameBounds(r).config(cfg)


@attrs.define
class _NameBounds:
    r: Findings
    #: participant names past the bound -> the names their first participant takes part
    #: under (what the graph, the handoffs and the termination conditions name)
    renamed: dict[str, str] = attrs.Factory(dict)
    #: the position of each participant whose name is past the bound -> its new name
    at: dict[int, str] = attrs.Factory(dict)
    #: tool and handoff names past the bound -> the name a FunctionCallTermination on
    #: them follows (the first tool's or handoff's of that name)
    calls: dict[str, str] = attrs.Factory(dict)
    #: the participant being read: its tool and handoff names (within the bound, or made
    #: up), and the names past the bound -> the names made up for them
    agent_tools: set[str] = attrs.Factory(set)
    agent_renames: dict[str, str] = attrs.Factory(dict)

    def new(self, name: Any) -> Any:
        """The name a participant named ``name`` takes part under (``name`` itself when it is
        within the bound, or not a string)."""
        return self.renamed.get(name, name) if isinstance(name, str) else name

    def refuse(self, path: str, instead: str) -> None:
        self.r.report(M001, long_name_message(instead), path, long_name_help(_LONG_NAME_HELP))

    def config(self, cfg: dict[str, Any]) -> dict[str, Any]:
        out = dict(cfg)
        if _long(cfg.get("name")):
            self.refuse("config.name", "the flow is titled after the file")
            del out["name"]
        raw = cfg.get("participants")
        if not isinstance(raw, list):
            return out
        names = [_cfg(p).get("name") for p in raw]
        taken = {x for x in names if isinstance(x, str) and not _long(x)}
        for i, x in enumerate(names):
            if _long(x):  # (by position: each participant its own name)
                self.at[i] = _free(taken, f"participant_{i}")
                self.renamed.setdefault(x, self.at[i])
        out["participants"] = [
            self.participant(p, f"config.participants[{i}]", self.at.get(i))
            for i, p in enumerate(raw)
        ]
        if isinstance(cfg.get("graph"), dict):
            out["graph"] = self.graph(cfg["graph"])
        if "termination_condition" in cfg:
            out["termination_condition"] = self.condition(
                cfg["termination_condition"], "config.termination_condition"
            )
        return out

    def written_tools(self, pc: dict[str, Any]) -> set[str]:
        """The names within the bound of every tool and handoff of the participant whose
        config is ``pc`` (a handoff's default name when it has none)."""
        names: set[str] = set()
        wb = pc.get("workbench")
        benches = wb if isinstance(wb, list) else [wb]
        for tools in [pc.get("tools"), *(_cfg(w).get("tools") for w in benches)]:
            for t in tools if isinstance(tools, list) else []:
                name = _cfg(t).get("name")
                if isinstance(name, str) and not _long(name):
                    names.add(name)
        handoffs = pc.get("handoffs")
        for h in handoffs if isinstance(handoffs, list) else []:
            name = h.get("name") if isinstance(h, dict) else None
            target = self.new(h.get("target") if isinstance(h, dict) else h)
            if isinstance(name, str) and name:
                if not _long(name):
                    names.add(name)
            elif isinstance(target, str) and target and not _long(target):
                names.add(_default_handoff(target))
        return names

    def participant(self, p: Any, path: str, new_name: str | None) -> Any:
        pc = _cfg(p)
        change: dict[str, Any] = {}
        self.agent_tools, self.agent_renames = self.written_tools(pc), {}
        if new_name is not None:
            change["name"] = new_name
            self.refuse(f"{path}.config.name", f"the participant takes part as `{new_name}`")
        if isinstance(pc.get("tools"), list):
            change["tools"] = self.tool_list(pc["tools"], f"{path}.config.tools")
        wb = pc.get("workbench")
        if isinstance(wb, dict) and isinstance(_cfg(wb).get("tools"), list):
            tools = self.tool_list(_cfg(wb)["tools"], f"{path}.config.workbench.config.tools")
            change["workbench"] = _with(wb, tools=tools)
        elif isinstance(wb, list):
            change["workbench"] = [
                _with(
                    w,
                    tools=self.tool_list(
                        _cfg(w)["tools"], f"{path}.config.workbench[{k}].config.tools"
                    ),
                )
                if isinstance(_cfg(w).get("tools"), list)
                else w
                for k, w in enumerate(wb)
            ]
        if isinstance(pc.get("handoffs"), list):
            change["handoffs"] = [
                self.handoff(h, f"{path}.config.handoffs[{j}]")
                for j, h in enumerate(pc["handoffs"])
            ]
        return _with(p, **change) if change else p

    def rename_tool(self, old: str, default: str) -> str:
        """The name the participant's tool or handoff named ``old`` (past the bound) is
        declared under: ``default``, with ``_`` added until it is none of the participant's
        other tools' and handoffs' (AgentChat's scope for unique names: two tools stay two).
        Its tools and handoffs of one name past the bound keep one name, as two of one
        shorter name would."""
        if old not in self.agent_renames:
            self.agent_renames[old] = _free(self.agent_tools, default)
            self.calls.setdefault(old, self.agent_renames[old])
        return self.agent_renames[old]

    def tool_list(self, tools: list[Any], path: str) -> list[Any]:
        out = []
        for k, t in enumerate(tools):
            name = _cfg(t).get("name")
            if not _long(name):
                out.append(t)
                continue
            code = _cfg(t).get("source_code")
            found = _DEF.search(code) if isinstance(code, str) else None
            if found is None or len(found.group(1)) > MAX_NAME:
                self.refuse(
                    f"{path}[{k}].config.name",
                    "the tool was left out (no `def` in its `source_code` names it)",
                )
                continue
            new = self.rename_tool(name, found.group(1))
            self.refuse(
                f"{path}[{k}].config.name",
                f"the tool is declared under its function's name, `{new}`"
                if new == found.group(1)
                else f"the tool is declared as `{new}`: its function's name, "
                f"`{found.group(1)}`, names another of the agent's tools or handoffs",
            )
            out.append(_with(t, name=new))
        return out

    def handoff(self, h: Any, path: str) -> Any:
        target = h.get("target") if isinstance(h, dict) else h
        if _long(target) and target not in self.renamed:
            self.refuse(
                f"{path}.target" if isinstance(h, dict) else path, "the handoff was left out"
            )
            return LEFT_OUT
        target = self.new(target)
        if not isinstance(h, dict):
            return target
        out = {**h, "target": target}
        name = h.get("name")
        if _long(name) and isinstance(target, str) and target:
            default = _default_handoff(target)
            out["name"] = self.rename_tool(name, default)
            self.refuse(
                f"{path}.name",
                f"the handoff is named `{default}`, AgentChat's default"
                if out["name"] == default
                else f"the handoff is named `{out['name']}`: AgentChat's default, `{default}`, "
                "names another of the agent's tools or handoffs",
            )
        return out

    def graph(self, graph: dict[str, Any]) -> dict[str, Any]:
        """The participants' new names in the graph: node keys and names, edge targets and
        activation groups, the start node."""
        rn, new_name = self.renamed, self.new
        out = dict(graph)
        nodes = graph.get("nodes")
        if isinstance(nodes, dict):
            new: dict[str, Any] = {}
            for key, node in nodes.items():
                if isinstance(node, dict):
                    edges = node.get("edges")
                    node = {**node, "name": new_name(node.get("name"))}
                    if isinstance(edges, list):
                        node["edges"] = [
                            {
                                **e,
                                "target": new_name(e.get("target")),
                                "activation_group": new_name(e.get("activation_group")),
                            }
                            if isinstance(e, dict)
                            else e
                            for e in edges
                        ]
                new[rn[key] if key in rn and rn[key] not in nodes else key] = node
            out["nodes"] = new
        if "default_start_node" in graph:
            out["default_start_node"] = new_name(graph["default_start_node"])
        return out

    def condition(self, cond: Any, path: str) -> Any:
        """The participants', tools' and handoffs' new names in a termination condition
        (through ``Or`` / ``And``)."""
        cc = _cfg(cond)
        if isinstance(cc.get("conditions"), list):
            subs = cc["conditions"]
            at = f"{path}.config.conditions"
            return _with(
                cond, conditions=[self.condition(c, f"{at}[{i}]") for i, c in enumerate(subs)]
            )
        change: dict[str, Any] = {}
        for key in ("source", "target"):
            if key in cc:
                change[key] = self.new(cc[key])
        if isinstance(cc.get("sources"), list):
            change["sources"] = [self.new(s) for s in cc["sources"]]
        fn = cc.get("function_name")
        if _long(fn) and fn in self.calls:
            change["function_name"] = self.calls[fn]
        elif _long(fn):
            self.refuse(f"{path}.config.function_name", "the termination condition was left out")
            return LEFT_OUT
        return _with(cond, **change) if change else cond


__all__ = [
    "LEFT_OUT",
    "TWICE_TOOL_HELP",
    "Findings",
    "bound_names",
    "long_name_help",
    "long_name_message",
    "twice_named",
    "twice_tool",
]
