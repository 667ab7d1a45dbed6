"""What a command writes on a stdout whose encoding lacks some of it.

Under ``PYTHONIOENCODING=ascii`` (or a terminal set to Latin-1), a speaker named ``用户``
or flowc's own arrows (``→``) cannot be written as they are. Every command's stdout is
then set up by the kind of output it writes (:func:`output_kind`), for the command's
length, and put back afterwards:

- **text** for people (a report, a transcript, the prompt a terminal's ``input()``
  writes): what the encoding lacks is written as escapes, as Python's own stderr does
  (``\\u7528``, ``\\xe9``: ``backslashreplace``), unless stdout has a handler of its own
  that does not stop;
- **JSON** (``--json``, ``--jsonl``, ``--format json`` or ``sarif``, ``compile``): as
  JSON escapes (``\\u7528``, a surrogate pair beyond U+FFFF), so the output stays valid
  JSON meaning the same values;
- **source** that flowc or another tool reads back (a ``.flow`` from ``fmt``,
  ``decompile`` or ``migrate``, scenarios, ``log --scenario-upto``, a diagram): an
  escape there would change a name or a text, so nothing is escaped or replaced: it is
  written whole at the end, and a character the encoding lacks ends the command with a
  clear error instead (:class:`UnencodableOutput`), exit 2, nothing of it written.
"""

from __future__ import annotations

import codecs
import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["JSON_ESCAPE", "UnencodableOutput", "output_kind", "stdout_for"]

#: the error handler of stdout for JSON output: a character its encoding lacks is
#: written as the JSON escape of it; JSON holds such characters only inside strings, so
#: the document stays valid JSON, the same as one written with ``ensure_ascii``
JSON_ESCAPE = "flowc.json-escape"

#: the error handlers that stop at a character the encoding lacks
_RAISING = frozenset({"strict", "surrogateescape", "surrogatepass"})

#: the commands whose stdout is source read back (a `.flow`, scenarios, a diagram)
_SOURCE = frozenset({"fmt", "decompile", "migrate", "render", "scenarios"})
#: the commands whose stdout is not text at all (the language server's protocol)
_UNTOUCHED = frozenset({"lsp"})


def _json_escape(err: UnicodeError) -> tuple[str, int]:
    r"""The JSON escapes of what ``err`` could not encode.

    >>> "用 é 😀".encode("ascii", JSON_ESCAPE) if _register() else None
    b'\\u7528 \\u00e9 \\ud83d\\ude00'
    """
    if not isinstance(err, UnicodeEncodeError):
        raise err
    out = []
    for ch in err.object[err.start : err.end]:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), err.end


def _register() -> bool:
    # (by the command that needs it, not on import: a name of flowc's own, added to the
    # interpreter's handlers, which changes none of those there)
    codecs.register_error(JSON_ESCAPE, _json_escape)
    return True


def output_kind(args: Any) -> str | None:
    """``text``, ``json`` or ``source`` (see the module), or None for a command whose
    stdout is not text (the language server).

    >>> from argparse import Namespace as N
    >>> output_kind(N(command="check", format="sarif")), output_kind(N(command="run", jsonl=True))
    ('json', 'json')
    >>> output_kind(N(command="log", scenario_upto=3)), output_kind(N(command="check", format="text"))
    ('source', 'text')
    """
    command = getattr(args, "command", None)
    if command in _UNTOUCHED:
        return None
    if command in _SOURCE or getattr(args, "scenario_upto", None) is not None:
        return "source"
    if (
        command == "compile"
        or getattr(args, "json", False)
        or getattr(args, "jsonl", False)
        or getattr(args, "format", None) in ("json", "sarif")
    ):
        return "json"
    return "text"


class UnencodableOutput(Exception):
    """Source output (see the module) holds a character stdout's encoding lacks: nothing
    of it was written."""

    def __init__(self, encoding: str, err: UnicodeEncodeError):
        self.encoding = encoding
        self.err = err
        super().__init__(_message(err, encoding))


class _Held:
    """stdout for source output: what is written is kept, and written at the end in one
    piece once it is known that the encoding holds all of it (never escaped or replaced,
    whatever stdout's error handler), so that a refusal leaves no part of it behind."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        self.parts.extend(lines)

    def flush(self) -> None:
        pass  # (written at the end)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)  # (``buffer``, ``isatty``, ``encoding``, ...)

    def release(self) -> None:
        """Write what was kept, or raise :class:`UnencodableOutput` having written none."""
        text, self.parts = "".join(self.parts), []
        if not text:
            return
        encoding = str(getattr(self.stream, "encoding", "") or "utf-8")
        try:
            text.encode(encoding)
        except UnicodeEncodeError as err:
            raise UnencodableOutput(encoding, err) from None
        self.stream.write(text)


@contextlib.contextmanager
def stdout_for(kind: str | None) -> Iterator[None]:
    """stdout set up for output of ``kind`` (:func:`output_kind`) while the block runs,
    then put back: text and JSON reconfigured (a stream that cannot be, an in-memory one,
    is left as it is, and so is text under a handler that does not stop), source output
    held and written at the end (:class:`_Held`; :class:`UnencodableOutput` when the
    encoding lacks a character of it)."""
    if kind == "source":
        held = _Held(sys.stdout)
        sys.stdout = held
        try:
            yield
        finally:
            if sys.stdout is held:
                sys.stdout = held.stream
            held.release()
        return
    stream = sys.stdout
    errors = getattr(stream, "errors", None)
    reconfigure = getattr(stream, "reconfigure", None)
    wanted = {"json": JSON_ESCAPE, "text": "backslashreplace"}.get(kind or "")
    if (
        wanted is None
        or reconfigure is None
        or errors == wanted
        or (kind == "text" and errors not in _RAISING)
    ):
        yield
        return
    if kind == "json":
        _register()
    try:
        reconfigure(errors=wanted)
    except (OSError, ValueError):  # (a closed or broken stream: nothing to change)
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            reconfigure(errors=errors)


def _message(err: UnicodeEncodeError, encoding: str) -> str:
    ch = err.object[err.start : err.start + 1]
    return (
        f"stdout's encoding ({encoding}) cannot write {ch!r} (U+{ord(ch):04X}), and this"
        " output is read back (an escape would change it): run with PYTHONIOENCODING=utf-8"
        " (or write it with `-o FILE`, where the command has it)"
    )
