"""The script format of ``flowc run --script``: who says what, read from JSON/YAML.

A :class:`Script` maps speakers to their turns; each :class:`ScriptTurn` is text and
tool calls (:class:`ScriptCall`). :func:`parse_script` refuses a malformed script with
a :class:`ScriptError` naming the place (``script.bot[1].args``).

>>> s = parse_script({"kickoff": "hi", "script": {"bot": ["hello", {"handoff": "user"}]}})
>>> s.kickoff, s.turns["bot"][1].calls[0].handoff, s.turns["bot"][1].where
('hi', 'user', 'script.bot[1]')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from flowc.compiler.tool_effects import ToolEffectInfo
from flowc.runtime.frozen import builder, writable_base

__all__ = ["SCRIPT_LABEL", "Script", "ScriptCall", "ScriptError", "ScriptTurn", "parse_script"]

#: the label of a run submitted for the workers (``flowc submit``) that holds its script
#: (the parsed JSON/YAML document), which a worker drives the run with
SCRIPT_LABEL = "script_doc"


class ScriptError(Exception):
    """A script (or scenario) the runtime refuses before the run starts."""


@attrs.frozen
class ScriptCall:
    """One tool call (or bare effect) of a scripted turn."""

    tool: str | None = None
    args: dict[str, Any] = attrs.field(factory=dict)
    set: dict[str, Any] = attrs.field(factory=dict)
    delete: tuple[str, ...] = ()
    handoff: str | None = None
    finish: str | None = None  # the reason
    summary: str = ""
    #: the handoff's own reason (``handoff: {target, reason}``): what AG2 records as the
    #: routing reason of a tool that returns a ``Handoff``, never the call's ``reason`` arg
    reason: str = ""
    #: the declared alternative the call names (a scenario's ``calls T hands off to X``)
    effects: ToolEffectInfo | None = None


@attrs.frozen
@writable_base  # so that `_text_turn` builds one the cheap way (flowc.runtime.frozen)
class ScriptTurn:
    say: str = ""
    calls: tuple[ScriptCall, ...] = ()
    where: str = ""  # for messages: "script.triage[0]" or "line 12"


#: ``ScriptTurn(...)`` built the cheap way (a long script has thousands of turns)
_build_turn = builder(ScriptTurn)


def _text_turn(say: str, where: str) -> ScriptTurn:
    """``ScriptTurn(say, (), where)``, built the cheap way (:func:`_build_turn`)."""
    return _build_turn(say, (), where)


@attrs.frozen
class Script:
    kickoff: str | None
    turns: dict[str, tuple[ScriptTurn, ...]]
    participants: tuple[str, ...] | None = None
    humans: tuple[str, ...] | None = None
    creator: str | None = None
    context_vars: dict[str, Any] | None = None


_CALL_KEYS = {"tool", "args", "set", "delete", "handoff", "finish", "summary"}


def _parse_call(obj: Mapping[str, Any], where: str) -> ScriptCall:
    extra = set(obj) - _CALL_KEYS
    if extra:
        raise ScriptError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
    tool = obj.get("tool")
    if tool is not None and not isinstance(tool, str):
        raise ScriptError(f"{where}.tool: expected a tool name")
    # (absent or null is none; any other value of the wrong shape is refused, never
    # read as none: `args: 0`, `set: []`)
    args = _given(obj, "args", {})
    if not isinstance(args, dict):
        raise ScriptError(f"{where}.args: expected an object, got {_kind(args)}")
    sets = _given(obj, "set", {})
    if not isinstance(sets, dict):
        raise ScriptError(f"{where}.set: expected an object of context keys, got {_kind(sets)}")
    delete = _given(obj, "delete", [])
    if isinstance(delete, str):
        delete = [delete]
    if not isinstance(delete, list) or not all(isinstance(k, str) for k in delete):
        odd = [k for k in delete if not isinstance(k, str)][:1] if isinstance(delete, list) else []
        what = f"a list holding {_kind(odd[0])}" if odd else _kind(delete)
        raise ScriptError(f"{where}.delete: expected a key or a list of keys, got {what}")
    handoff, reason = _handoff(obj.get("handoff"), f"{where}.handoff")
    finish, summary = _finish(obj.get("finish"), obj.get("summary"), where)
    if handoff is not None and finish is not None:
        raise ScriptError(f"{where}: a call either hands off or finishes, not both")
    return ScriptCall(
        tool, dict(args), dict(sets), tuple(delete), handoff, finish, summary, reason=reason
    )


def _given(obj: Mapping[str, Any], key: str, default: Any) -> Any:
    """``obj[key]``, or ``default`` when it is absent or null."""
    value = obj.get(key)
    return default if value is None else value


def _kind(value: Any) -> str:
    """What a value of the wrong shape is, as a refusal names it, in JSON's words (a
    script is JSON or YAML): an object, a list, a string, a number, a boolean.

    >>> _kind([]), _kind({"a": 1}), _kind(1.5), _kind(True)
    ('a list', 'an object', 'a number', 'a boolean')
    """
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "null" if value is None else type(value).__name__


def _object(value: dict[str, Any], keys: tuple[str, ...], where: str) -> dict[str, str]:
    extra = set(value) - set(keys)
    if extra:
        raise ScriptError(
            f"{where}: unknown key(s) {', '.join(sorted(map(str, extra)))} "
            f"(an object here has {' and '.join(f'`{k}`' for k in keys)})"
        )
    for key in keys:
        if key in value and not isinstance(value[key], str):
            raise ScriptError(f"{where}.{key}: expected a string")
    return {k: value[k] for k in keys if k in value}


def _handoff(value: Any, where: str) -> tuple[str | None, str]:
    """``handoff: NAME`` or ``handoff: {target: NAME, reason: TEXT}`` -> (target, reason)."""
    if value is None or isinstance(value, str):
        return value, ""
    if isinstance(value, dict):
        fields = _object(value, ("target", "reason"), where)
        if "target" not in fields:
            raise ScriptError(f"{where}: a handoff object needs `target` (a speaker name)")
        return fields["target"], fields.get("reason", "")
    raise ScriptError(f"{where}: expected a speaker name or {{target, reason}}")


def _finish(value: Any, summary: Any, where: str) -> tuple[str | None, str]:
    """``finish: REASON`` / ``true`` (+ ``summary: TEXT``) or ``finish: {reason, summary}``
    -> (reason, summary); AG2's ``Finish`` defaults are ``reason="finished"``, ``summary=""``."""
    if summary is not None and not isinstance(summary, str):
        raise ScriptError(f"{where}.summary: expected a string")
    if isinstance(value, dict):
        if summary is not None:
            raise ScriptError(f"{where}: give the summary once, inside `finish` or beside it")
        fields = _object(value, ("reason", "summary"), f"{where}.finish")
        return fields.get("reason", "finished"), fields.get("summary", "")
    if value is True:
        value = "finished"
    elif value is False:
        value = None
    if value is not None and not isinstance(value, str):
        raise ScriptError(
            f"{where}.finish: expected a reason (a string), true, or {{reason, summary}}"
        )
    return value, summary or ""


def _parse_turn(item: Any, where: str) -> ScriptTurn:
    if isinstance(item, str):
        return ScriptTurn(item, (), where)
    if not isinstance(item, dict):
        raise ScriptError(f"{where}: a turn is a string or an object, got {type(item).__name__}")
    say = item.get("say", "")
    if not isinstance(say, str):
        raise ScriptError(f"{where}.say: expected a string")
    inline = {k: v for k, v in item.items() if k in _CALL_KEYS}
    extra = set(item) - _CALL_KEYS - {"say", "tools"}
    if extra:
        raise ScriptError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
    calls: list[ScriptCall] = []
    if inline:
        calls.append(_parse_call(inline, where))
    tools = item.get("tools")
    if tools is not None:
        if inline:
            raise ScriptError(f"{where}: give one call inline or several in `tools`, not both")
        if not isinstance(tools, list):
            raise ScriptError(f"{where}.tools: expected a list of calls")
        for i, call in enumerate(tools):
            if not isinstance(call, dict):
                raise ScriptError(f"{where}.tools[{i}]: expected an object")
            calls.append(_parse_call(call, f"{where}.tools[{i}]"))
    return ScriptTurn(say, tuple(calls), where)


def parse_script(data: Any) -> Script:
    """Read the script format of ``docs/runtime.md`` (already parsed from JSON/YAML).

    >>> parse_script({"script": {"a": ["hi", {"tool": "t", "say": "ok"}]}}).turns["a"][1].calls[0].tool
    't'
    """
    if not isinstance(data, dict):
        raise ScriptError("a script is an object with `kickoff` and `script`")
    extra = set(data) - {"kickoff", "script", "participants", "humans", "creator", "context_vars"}
    if extra:
        raise ScriptError(f"unknown key(s) {', '.join(sorted(extra))}")
    kickoff = data.get("kickoff")
    if kickoff is not None and not isinstance(kickoff, str):
        raise ScriptError("kickoff: expected a string")
    body = _given(data, "script", {})
    if not isinstance(body, dict):
        raise ScriptError(
            f"script: expected an object mapping speakers to lists of turns, got {_kind(body)}"
        )
    turns: dict[str, tuple[ScriptTurn, ...]] = {}
    for speaker, items in body.items():
        if not isinstance(items, list):
            raise ScriptError(f"script.{speaker}: expected a list of turns")
        turns[str(speaker)] = tuple(
            _text_turn(item, f"script.{speaker}[{i}]")
            if type(item) is str
            else _parse_turn(item, f"script.{speaker}[{i}]")
            for i, item in enumerate(items)
        )

    def names(key: str) -> tuple[str, ...] | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ScriptError(f"{key}: expected a list of names")
        first: dict[str, int] = {}
        for i, name in enumerate(value):
            if name in first:  # (a run's participants are each one agent)
                raise ScriptError(
                    f"{key}[{i}]: `{name}` is already given at {key}[{first[name]}]; name each once"
                )
            first[name] = i
        return tuple(value)

    creator = data.get("creator")
    if creator is not None and not isinstance(creator, str):
        raise ScriptError("creator: expected a name")
    context = data.get("context_vars")
    if context is not None and not isinstance(context, dict):
        raise ScriptError("context_vars: expected an object")
    return Script(kickoff, turns, names("participants"), names("humans"), creator, context)
