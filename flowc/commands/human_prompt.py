"""What a human types at the ``client>`` prompt of `flowc run`: text, and the context
writes their ``speaker NAME: human { sets KEY, ... }`` block declares.

A line of text is the human's turn. Before it, commands prepare writes that go with
it, as a script's ``{set: ..., delete: ..., say: ...}`` turn does:

- ``/set KEY = VALUE`` writes ``KEY`` (``VALUE`` is JSON: ``true``, ``3``, ``"text"``,
  ``[...]``, ``{...}``); ``/set KEY`` writes ``true``;
- ``/clear KEY`` deletes ``KEY``;
- ``/help`` lists the commands and the keys this human may write, with their values;
- ``//TEXT`` posts text that begins with ``/``.

A key the human does not declare is refused with the reason, and the prompt asks
again. :func:`complete` is what Tab completes on a terminal (commands, then keys).

>>> p = HumanPrompt("client", ("signed_off", "notes"))
>>> p.feed("/set signed_off")
''
>>> p.prompt()
'client (signed_off = true)> '
>>> turn = p.feed("Looks good")
>>> turn.say, turn.calls[0].set
('Looks good', {'signed_off': True})
>>> p.feed("/set secret = 1")
Traceback (most recent call last):
...
flowc.commands.human_prompt.PromptError: `client` is a human that may write only context.signed_off, context.notes, not context.secret (/help lists them)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from flowc.compiler.tool_effects import human_write_refusal
from flowc.dsl.names import format_name
from flowc.inputs import DataError, load_json
from flowc.runtime.script import ScriptCall, ScriptTurn

__all__ = ["COMMANDS", "HumanPrompt", "PromptError", "complete"]

#: the commands, as Tab completes them
COMMANDS = ("/set ", "/clear ", "/help")

#: where a turn typed at the prompt is, in messages (a script's turn says ``script.a[0]``)
WHERE = "at the prompt"


class PromptError(ValueError):
    """A line the prompt refuses (the message says why); the human is asked again."""


def _key(text: str) -> str:
    """A key as typed: a name, or a name in backquotes (as the flow writes it)."""
    key = text.strip()
    if len(key) >= 2 and key.startswith("`") and key.endswith("`"):
        key = key[1:-1]
    return key


def _value(text: str, key: str) -> Any:
    try:
        return load_json(text)
    except (ValueError, DataError) as err:
        detail = _where(err, text) if isinstance(err, json.JSONDecodeError) else str(err)
        raise PromptError(
            f"/set {format_name(key)} = {text}: the value is JSON ({detail}): "
            'write text in double quotes ("yes"), or true, false, null, a '
            "number, [...] or {...}"
        ) from None


def _where(err: json.JSONDecodeError, text: str) -> str:
    """Why and where a value typed is not JSON: ``Expecting value at character 1`` for
    ``yes``, ``Expecting ',' delimiter at the end`` for ``[1, 2``, ``Unterminated string
    starting at character 1`` for ``"café``.

    >>> _where(json.JSONDecodeError("Unterminated string starting at", '"ab', 0), '"ab')
    'Unterminated string starting at character 1'
    """
    where = "the end" if err.pos >= len(text) else f"character {err.pos + 1}"
    return f"{err.msg.removesuffix(' at')} at {where}"


def _not_text(line: str) -> None:
    """Refuse a line that is not Unicode text: bytes the input's encoding could not read
    (a terminal or a pipe gives them as lone surrogates, ``\\udcff`` for byte 0xff) or a
    lone surrogate. No record could hold it (the run database keeps UTF-8 text), and
    guessing at the characters would post a text the human did not type."""
    found = _SURROGATE.search(line)
    if found is None:
        return
    code = ord(found.group())
    what = (
        f"byte 0x{code - 0xDC00:02x} at column {found.start() + 1} is not part of a UTF-8 character"
        if 0xDC80 <= code <= 0xDCFF
        else f"a lone surrogate (U+{code:04X}) at column {found.start() + 1} is not Unicode text"
    )
    raise PromptError(f"the line is not UTF-8 text: {what}; type it again (nothing was posted)")


#: a character of the surrogate range, which Unicode text never holds alone
_SURROGATE = re.compile("[\ud800-\udfff]")


class HumanPrompt:
    """One human's prompt: :meth:`feed` takes each line typed, :meth:`prompt` is the
    prompt to show next. ``keys``: the context keys the human may write (``None``: any,
    for a bare graph that declares none)."""

    def __init__(
        self, name: str, keys: Sequence[str] | None, context: Mapping[str, Any] | None = None
    ) -> None:
        self.name = name
        self.keys = None if keys is None else tuple(keys)
        self.context = dict(context or {})
        self.sets: dict[str, Any] = {}
        self.deletes: list[str] = []

    def prompt(self) -> str:
        """``client> ``, with the writes waiting for the turn's text: ``client (k = 1)> ``."""
        pending = [
            f"{format_name(k)} = {json.dumps(v, ensure_ascii=False)}" for k, v in self.sets.items()
        ]
        pending += [f"{format_name(k)} cleared" for k in self.deletes if k not in self.sets]
        return f"{self.name} ({', '.join(pending)})> " if pending else f"{self.name}> "

    def feed(self, line: str) -> ScriptTurn | str:
        """The human's turn once ``line`` is its text; after a command, what to show
        (``""``: nothing) before the human is asked again. Raises :class:`PromptError`
        for a line it refuses."""
        _not_text(line)
        if line.startswith("//"):
            return self._turn(line[1:])
        if not line.startswith("/"):
            return self._turn(line)
        command, _, rest = line[1:].partition(" ")
        if command == "help":
            return self.help()
        if command == "set":
            key_text, eq, value_text = rest.partition("=")
            key = self._allowed(_key(key_text), "set")
            value = _value(value_text.strip(), key) if eq else True
            self.sets[key] = value
            if key in self.deletes:
                self.deletes.remove(key)
            return ""
        if command == "clear":
            key = self._allowed(_key(rest), "clear")
            self.sets.pop(key, None)
            if key not in self.deletes:
                self.deletes.append(key)
            return ""
        raise PromptError(
            f"/{command}: no such command (the commands: /set KEY = VALUE, "
            "/clear KEY, /help; //TEXT posts text that begins with /)"
        )

    def _allowed(self, key: str, command: str) -> str:
        if not key:
            raise PromptError(f"/{command}: name the context key (/help lists them)")
        if self.keys is not None and key not in self.keys:
            raise PromptError(
                f"{human_write_refusal(self.name, key, self.keys)} (/help lists them)"
            )
        return key

    def _turn(self, text: str) -> ScriptTurn:
        calls = (
            (ScriptCall(set=dict(self.sets), delete=tuple(self.deletes)),)
            if self.sets or self.deletes
            else ()
        )
        self.sets, self.deletes = {}, []
        return ScriptTurn(text, calls, WHERE)

    def help(self) -> str:
        """The commands, and the keys this human may write with their current values."""
        if self.keys is None:
            keys = "any context key (the graph declares none)"
        elif not self.keys:
            keys = "no context keys (the flow declares none for it)"
        else:
            keys = ", ".join(
                f"{format_name(k)} (now {json.dumps(self.context[k], ensure_ascii=False)})"
                if k in self.context
                else f"{format_name(k)} (unset)"
                for k in self.keys
            )
        return "\n".join(
            [
                f"{self.name} posts a line of text as its turn; before it, these commands "
                "prepare context writes that go with it:",
                '  /set KEY = VALUE   write KEY (VALUE is JSON: true, 3, "text", [...], {...})',
                "  /set KEY           write KEY = true",
                "  /clear KEY         delete KEY",
                "  //TEXT             post text that begins with /",
                f"{self.name} may write: {keys}",
            ]
        )


def complete(before: str, keys: Sequence[str] | None) -> list[str]:
    """What Tab offers for the word the cursor ends (``before``: the line up to the
    cursor): a command at the start of the line, a declared key after ``/set`` or
    ``/clear``; nothing anywhere else.

    >>> complete("/s", ["signed_off"]), complete("/set si", ["signed_off", "notes"])
    (['/set '], ['signed_off'])
    >>> complete("/clear ", ["signed_off", "notes"]), complete("hello /s", ["a"])
    (['signed_off', 'notes'], [])
    """
    if not before.startswith("/"):
        return []
    command, space, rest = before.partition(" ")
    if not space:
        return [c for c in COMMANDS if c.startswith(command)]
    if command not in ("/set", "/clear") or "=" in rest or keys is None:
        return []
    word = rest.lstrip()
    if " " in word:
        return []
    return [k for k in keys if k.startswith(word)]
