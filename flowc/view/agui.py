"""A run's turns as AG-UI protocol events (``/api/run/ID/ag-ui``).

AG-UI is the event protocol AG2's own UI bridge and CopilotKit speak: a server sends a
run as a stream of JSON events over server-sent events, each ``data: {...}`` with a
``type``. `flowc view` serves the same live feed its page reads in that form (a ``GET``
with the token, as every request to it; read-only), so that code reading AG-UI events
can show a flowc run, live or finished:

- ``RUN_STARTED`` (``threadId`` and ``runId``: the run's id; ``parentRunId`` for a run
  forked from another) and a ``STATE_SNAPSHOT`` of the initial context, when a client
  starts from the beginning;
- per turn: ``STEP_STARTED`` (the speaker), the text as ``TEXT_MESSAGE_START`` /
  ``TEXT_MESSAGE_CONTENT`` / ``TEXT_MESSAGE_END`` (role ``user`` for a human speaker,
  else ``assistant``; ``name`` the speaker), each tool call as ``TOOL_CALL_START`` /
  ``TOOL_CALL_ARGS`` (its arguments as JSON) / ``TOOL_CALL_END``, the context's change as
  a ``STATE_DELTA`` (an RFC 6902 JSON Patch; a ``STATE_SNAPSHOT`` for the first turn
  after a reconnection), a ``CUSTOM`` event ``flowc.turn`` with what only flowc records:
  why the turn went where it went (the rule and its line, or the default, a hand-off...),
  the next speaker, the turn count, the properties the turn broke; then
  ``STEP_FINISHED``, which carries the SSE id (the turn's number, so that a client
  reconnecting with ``Last-Event-ID`` goes on from the next turn, with no gap and no
  duplicate);
- ``CUSTOM`` ``flowc.status`` when the run's status changes (running, stalled, its
  holder);
- ``RUN_FINISHED`` once the run closed (``result``: the close reason and the turns);
  ``RUN_ERROR`` (``code`` ``damaged``) instead, ending the stream, at a record of a
  damaged run, its ``message`` naming the run, the record and the JSON path; or
  (``code`` ``plugin-failed``) at an intact record a plugin's condition or target fails
  on now, its ``message`` naming the plugin and its exception.

Field names are the protocol's wire names (camelCase). Ids: a message is ``RUN#N`` (its
turn), a tool call ``RUN#N.K``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["AguiEncoder"]


def _pointer(key: str) -> str:
    """A context key as a JSON Pointer into the state (RFC 6901: ``~`` and ``/`` escaped).

    >>> _pointer("a/b~c")
    '/a~1b~0c'
    """
    return "/" + key.replace("~", "~0").replace("/", "~1")


def patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch that turns the context ``before`` into ``after`` (keys removed, then
    keys added or changed, each in the order of its mapping).

    >>> patch({"a": 1, "b": 2}, {"b": 3, "c": None})
    [{'op': 'remove', 'path': '/a'}, {'op': 'add', 'path': '/b', 'value': 3}, {'op': 'add', 'path': '/c', 'value': None}]
    >>> patch({"a": [1], "b": {"x": 1}}, {"a": [True], "b": {"x": 1.0}})
    [{'op': 'add', 'path': '/a', 'value': [True]}, {'op': 'add', 'path': '/b', 'value': {'x': 1.0}}]
    """
    ops: list[dict[str, Any]] = [
        {"op": "remove", "path": _pointer(k)} for k in before if k not in after
    ]
    for k, v in after.items():
        # compared as JSON: ``1`` and ``true``, ``[1]`` and ``[1.0]`` are not the same value
        if k not in before or _json(before[k]) != _json(v):
            # ("add" sets a member whether or not it is there: RFC 6902, 4.1)
            ops.append({"op": "add", "path": _pointer(k), "value": v})
    return ops


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _data(event: Mapping[str, Any], event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}data: {json.dumps(event, ensure_ascii=False)}\n\n"


class AguiEncoder:
    """One stream's AG-UI events, from the view's feed (the same events its page gets:
    :class:`flowc.view.feed.TurnFeed`). It keeps the context the client has, to send each
    turn's change as a patch."""

    def __init__(
        self,
        run_id: str,
        humans: Iterable[str],
        initial_context: Mapping[str, Any],
        parent: Mapping[str, Any] | None = None,
    ) -> None:
        self.run_id = run_id
        self.humans = frozenset(humans)
        self.initial_context = dict(initial_context)
        self.parent = parent
        #: the context the client has (None: not told yet, after a reconnection)
        self.context: dict[str, Any] | None = None

    def begin(self, after: int) -> str:
        """What opens the stream: from the start, ``RUN_STARTED`` and the initial state;
        after a reconnection (``after`` turns already sent), nothing: the client has them."""
        out = "retry: 1000\n\n"
        if after > 0:
            return out
        started: dict[str, Any] = {
            "type": "RUN_STARTED",
            "threadId": self.run_id,
            "runId": self.run_id,
        }
        if self.parent is not None and self.parent.get("run_id"):
            started["parentRunId"] = str(self.parent["run_id"])
        self.context = dict(self.initial_context)
        return out + _data(started) + _data({"type": "STATE_SNAPSHOT", "snapshot": self.context})

    def turn(self, event: Mapping[str, Any]) -> str:
        """One turn's events (see the module's docstring); the last carries its number."""
        n = int(event["n"])
        speaker = str(event["speaker"])
        step = {"type": "STEP_STARTED", "stepName": speaker}
        out = [_data(step)]
        message = f"{self.run_id}#{n}"
        text = event.get("text") or ""
        calls = event.get("tool_calls") or []
        if text or not calls:
            role = "user" if speaker in self.humans else "assistant"
            out.append(
                _data(
                    {
                        "type": "TEXT_MESSAGE_START",
                        "messageId": message,
                        "role": role,
                        "name": speaker,
                    }
                )
            )
            if text:
                out.append(
                    _data({"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": text})
                )
            out.append(_data({"type": "TEXT_MESSAGE_END", "messageId": message}))
        for k, call in enumerate(calls, 1):
            call_id = f"{message}.{k}"
            args = call.get("args", call.get("arguments", {}))
            out.append(
                _data(
                    {
                        "type": "TOOL_CALL_START",
                        "toolCallId": call_id,
                        "toolCallName": str(call.get("name", "")),
                        "parentMessageId": message,
                    }
                )
            )
            out.append(
                _data(
                    {
                        "type": "TOOL_CALL_ARGS",
                        "toolCallId": call_id,
                        "delta": args
                        if isinstance(args, str)
                        else json.dumps(args, ensure_ascii=False),
                    }
                )
            )
            out.append(_data({"type": "TOOL_CALL_END", "toolCallId": call_id}))
        context = event.get("context")
        if isinstance(context, Mapping):
            if self.context is None:
                out.append(_data({"type": "STATE_SNAPSHOT", "snapshot": dict(context)}))
            else:
                ops = patch(self.context, context)
                if ops:
                    out.append(_data({"type": "STATE_DELTA", "delta": ops}))
            self.context = dict(context)
        why = {
            key: event.get(key)
            for key in (
                "n",
                "speaker",
                "next_speaker",
                "decided_by",
                "decision",
                "rule",
                "rule_line",
                "closes",
                "turn_count",
            )
        }
        for key in ("property_violations", "warnings"):
            if key in event:
                why[key] = event[key]
        out.append(_data({"type": "CUSTOM", "name": "flowc.turn", "value": why}))
        out.append(_data({"type": "STEP_FINISHED", "stepName": speaker}, n))
        return "".join(out)

    def status(self, data: Mapping[str, Any]) -> str:
        """The run's status changed (running, stalled, who holds it)."""
        return _data({"type": "CUSTOM", "name": "flowc.status", "value": dict(data)})

    def damaged(self, error: str) -> str:
        """The run is damaged (``error`` says where): the stream ends."""
        return _data({"type": "RUN_ERROR", "message": error, "code": "damaged"})

    def plugin_failed(self, error: str) -> str:
        """A plugin's condition or target fails on the run now (``error`` names it): the
        stream ends."""
        return _data({"type": "RUN_ERROR", "message": error, "code": "plugin-failed"})

    def end(self, data: Mapping[str, Any]) -> str:
        """The run closed."""
        return _data(
            {
                "type": "RUN_FINISHED",
                "threadId": self.run_id,
                "runId": self.run_id,
                "result": {"close_reason": data.get("close_reason"), "turns": data.get("turns")},
            }
        )
