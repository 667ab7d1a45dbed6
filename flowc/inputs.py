"""Bounded readers for everything flowc reads: files, JSON and YAML.

Every input may come from a stranger (a pull request in CI), so each reader ends
quickly, in bounded memory, with a clean error:

* :func:`read_bytes` reads regular files (and stdin) only, at most
  :data:`MAX_INPUT_BYTES`; a device such as ``/dev/zero``, a FIFO or a socket is
  refused before a byte is read.
* :func:`load_json` and :func:`load_yaml` refuse values nested deeper than
  :data:`MAX_DEPTH`, integers longer than :data:`MAX_INT_DIGITS` digits, numbers
  that are not finite (``1e400``, ``NaN``, ``Infinity``, YAML's ``.inf``) and a key
  given twice in one object (which would keep only the last of its values);
  :func:`load_yaml` also refuses aliases that would expand a document past
  :data:`MAX_ALIAS_EXPANSION` (or its own size, when larger), alias cycles, and
  values JSON cannot hold (timestamps become plain strings; ``!!binary``,
  ``!!set`` ... are refused).

Errors are :class:`DataError` with where they are: a character offset (JSON), a line
and column, and the JSON path of the value.

>>> load_json('{"a": [1, 2.5]}')
{'a': [1, 2.5]}
>>> try:
...     load_json('{"k": 1e400}')
... except DataError as err:
...     print(err.path, err.line, err.column, err.message)
k 1 7 a number must be finite (found 1e400)
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from collections.abc import Callable
from itertools import accumulate
from typing import Any

__all__ = [
    "MAX_ALIAS_EXPANSION",
    "MAX_DEPTH",
    "MAX_INPUT_BYTES",
    "MAX_INT_DIGITS",
    "SCRIPT_MAX_DEPTH",
    "DataError",
    "DuplicateKeyError",
    "InputFileError",
    "MissingInputError",
    "bad_utf8",
    "decode_utf8",
    "json_path",
    "load_json",
    "load_yaml",
    "read_bytes",
    "read_text",
    "text_position",
    "walk_files",
    "yaml_position",
]

#: the largest file flowc reads (a flow of 16 MiB holds well over 100,000 rules)
MAX_INPUT_BYTES = 16 * 1024 * 1024
#: the deepest nesting of JSON/YAML values; a compiled flow needs at most about 410
#: (conditions nest 100 levels in `.flow`, 3 JSON levels each, plus 100 for a value)
MAX_DEPTH = 500
#: the deepest nesting of a run script (its values nest as deep as a `.flow`'s may)
SCRIPT_MAX_DEPTH = 100
#: the longest integer, in digits (Python's own limit for converting text to int)
MAX_INT_DIGITS = 4300
#: how large aliases (``*name``) may make a YAML document, counted in characters of
#: its expanded form; a document that is larger itself may grow to its own size
MAX_ALIAS_EXPANSION = 1024 * 1024


class InputFileError(OSError):
    """A file flowc will not read: missing, unreadable, not a regular file, too large.

    An ``OSError``, so that the Python API's "a file that cannot be read raises
    ``OSError``" holds for every refusal; a missing file is also a ``FileNotFoundError``.
    """


class MissingInputError(InputFileError, FileNotFoundError):
    """The file does not exist."""


class DataError(Exception):
    """JSON or YAML data flowc refuses, with where: offset/line/column and JSON path."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        offset: int | None = None,
        line: int | None = None,
        column: int | None = None,
    ):
        self.message = message
        self.path = path
        self.offset = offset
        self.line = line
        self.column = column
        super().__init__(self.describe())

    def describe(self) -> str:
        """``LINE:COL: message (at PATH)``, with the parts that are known."""
        where = f"{self.line}:{self.column}: " if self.line is not None else ""
        at = f" (at {self.path})" if self.path else ""
        return f"{where}{self.message}{at}"


class DuplicateKeyError(DataError):
    """A key given twice in one JSON object or YAML mapping (the data is otherwise read)."""


# ── files ──────────────────────────────────────────────────────────────────────


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def read_bytes(path: str, *, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of ``path`` (``-`` is stdin), refusing what flowc should not read.

    Raises :class:`InputFileError` for a missing or unreadable file, a folder,
    anything that is not a regular file, and more than ``limit`` bytes.
    """
    if path == "-":
        data = sys.stdin.buffer.read(limit + 1)
        if len(data) > limit:
            raise InputFileError(
                f"<stdin>: more than {_mib(limit)}; flowc reads at most {_mib(limit)}"
            )
        return data
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer before we can refuse it
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise MissingInputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory") from None
    except OSError as err:
        raise InputFileError(f"{path}: cannot read ({err.strerror})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputFileError(f"{path}: is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(
                f"{path}: not a regular file (a device, FIFO or socket); "
                "flowc reads regular files only"
            )
        if info.st_size > limit:
            raise InputFileError(
                f"{path}: the file is {_mib(info.st_size)}; flowc reads at most {_mib(limit)}"
            )
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except InputFileError:
        raise
    except OSError as err:
        raise InputFileError(f"{path}: cannot read ({err.strerror})") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew while we read it
        raise InputFileError(f"{path}: more than {_mib(limit)}; flowc reads at most {_mib(limit)}")
    return data


def walk_files(
    folder: str, suffixes: tuple[str, ...], onerror: Callable[[OSError], None] | None = None
) -> tuple[list[str], list[str]]:
    """Files under ``folder`` ending in one of ``suffixes`` (sorted; hidden folders and
    folder links not entered), and the links skipped because they lead out of ``folder``.

    As black does, a symbolic link whose target is outside the folder is never read or
    written: a repository cannot make ``flowc fmt .`` rewrite, or ``flowc check .``
    print, a file elsewhere on the machine.
    """
    root = os.path.realpath(folder)
    found: list[str] = []
    outside: list[str] = []
    for here, dirs, files in os.walk(folder, onerror=onerror):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.endswith(suffixes):
                continue
            path = os.path.join(here, name)
            if os.path.islink(path):
                target = os.path.realpath(path)
                if os.path.commonpath([root, target]) != root:
                    outside.append(path)
                    continue
            found.append(path)
    return sorted(found), outside


#: bytes of context shown before and after the first byte that is not UTF-8
_CONTEXT_BEFORE, _CONTEXT_AFTER = 24, 8


def _escaped(text: str) -> str:
    r"""``text`` with every character a terminal could act on written as an escape:
    control characters, bidirectional and other format characters, undecodable bytes
    (``\xNN``) and the backslash itself; printable characters stay as they are.

    >>> print(_escaped("a\x1b[31m\\ \u202e\udcff"))
    a\x1b[31m\\ \u202e\xff
    """
    out: list[str] = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


def bad_utf8(data: bytes, err: UnicodeDecodeError) -> DataError:
    r"""The error for ``data`` whose first byte that is not UTF-8 is at ``err.start``: its
    line and column (in characters), and at most a few dozen bytes of the same line around
    it, escaped (``\xNN`` for bytes that are not text, control characters and the like),
    so that a binary file or a huge line never floods the report or the terminal.

    >>> data = b"flow x\nspeaker \x1b[2J\xff\xfe!"
    >>> try:
    ...     data.decode("utf-8")
    ... except UnicodeDecodeError as u:
    ...     e = bad_utf8(data, u)
    >>> print(e.line, e.column, e.message)
    2 13 the file is not valid UTF-8 (byte 0xff, in "speaker \x1b[2J\xff\xfe!")
    """
    at = err.start
    # lines end at \n, \r\n or a lone \r, as flowc reads them (flowc.source.SourceFile)
    line_start = max(data.rfind(b"\n", 0, at), data.rfind(b"\r", 0, at)) + 1
    line = (
        data.count(b"\n", 0, line_start)
        + data.count(b"\r", 0, line_start)
        - data.count(b"\r\n", 0, line_start)
        + 1
    )
    column = len(data[line_start:at].decode("utf-8", errors="replace")) + 1
    start = max(line_start, at - _CONTEXT_BEFORE)
    end = min(len(data), at + 1 + _CONTEXT_AFTER)
    newline = min(
        (i for i in (data.find(b"\n", at, end), data.find(b"\r", at, end)) if i >= 0), default=-1
    )
    if newline != -1:
        end = newline
    head = "..." if start > line_start else ""
    tail = "..." if end < len(data) and data[end : end + 1] not in (b"\n", b"\r") else ""
    shown = _escaped(data[start:end].decode("utf-8", errors="surrogateescape"))
    before = data[:line_start].decode("utf-8", errors="replace")
    return DataError(
        f'the file is not valid UTF-8 (byte 0x{data[at]:02x}, in "{head}{shown}{tail}")',
        offset=len(before) + column - 1,
        line=line,
        column=column,
    )


def decode_utf8(data: bytes) -> str:
    """``data`` as UTF-8 (a leading BOM dropped); :class:`DataError` at the first bad byte
    (see :func:`bad_utf8`)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise bad_utf8(data, err) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str, *, limit: int = MAX_INPUT_BYTES) -> str:
    """:func:`read_bytes` then :func:`decode_utf8`: the one way flowc reads a text file.

    Raises :class:`InputFileError` (an ``OSError``) or :class:`DataError`.
    """
    return decode_utf8(read_bytes(path, limit=limit))


# ── JSON paths and positions ─────────────────────────────────────────────────

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: parts of a path shown before and after the elision of a very deep one
_PATH_HEAD, _PATH_TAIL = 8, 2


def json_path(parts: list[str | int]) -> str:
    """``transitions[0].when.args`` from its parts; a very deep path is shortened.

    >>> json_path(["transitions", 0, "when"]), json_path(["a b", 1])
    ('transitions[0].when', '["a b"][1]')
    >>> json_path([0] * 20)
    '[0][0][0][0][0][0][0][0]…(10 more)…[0][0]'
    """

    def text(items: list[str | int], first: bool) -> str:
        out = []
        for part in items:
            if isinstance(part, int):
                out.append(f"[{part}]")
            elif _KEY.match(part):
                out.append(part if first and not out else f".{part}")
            else:
                out.append(f"[{json.dumps(part, ensure_ascii=False)}]")
        return "".join(out)

    if len(parts) <= _PATH_HEAD + _PATH_TAIL + 1:
        return text(parts, True)
    hidden = len(parts) - _PATH_HEAD - _PATH_TAIL
    return f"{text(parts[:_PATH_HEAD], True)}…({hidden} more)…{text(parts[-_PATH_TAIL:], False)}"


def text_position(text: str, offset: int) -> tuple[int, int]:
    """``(line, column)``, from 1, of the character at ``offset`` in ``text``: lines end
    at ``\\n``, ``\\r\\n`` or a lone ``\\r``, as flowc reads them (a ``.flow``'s
    :class:`flowc.source.SourceFile`); a column counts characters.

    >>> [text_position(t, t.index("e")) for t in ("a\\nbc\\nde", "a\\rbc\\rde", "a\\r\\nbc\\r\\nde")]
    [(3, 2), (3, 2), (3, 2)]
    """
    from flowc.source import SourceFile

    return SourceFile("", text).position(offset)


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]|[^\s\[\]{}:,"]+')


def _find(
    text: str,
    bad_scalar: Any = None,
    depth_limit: int | None = None,
    bad_string: Any = None,
    duplicates: bool = False,
) -> DataError | None:
    """Walk valid JSON ``text`` token by token (linear) to the first value that is too
    deep (``depth_limit``), a scalar token ``bad_scalar(token)`` has a message for, a
    string (key or value) ``bad_string(token)`` has one for, or (``duplicates``) a key
    its object already has."""
    # [kind, key or index, expecting a key, offsets of the object's keys so far]
    stack: list[list[Any]] = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("{", "["):
            if stack:
                stack[-1][2] = False
            stack.append([token, 0 if token == "[" else None, token == "{", {}])
            if depth_limit is not None and len(stack) > depth_limit:
                return _located(
                    text, match.start(), stack[:-1], f"nested more than {depth_limit} levels deep"
                )
        elif token in ("}", "]"):
            if stack:
                stack.pop()
        elif token == ",":
            if stack and stack[-1][0] == "[":
                stack[-1][1] += 1
            elif stack:
                stack[-1][2] = True
        elif token == ":":
            continue
        elif bad_string is not None and token.startswith('"') and bad_string(token):
            return _located(text, match.start(), stack, bad_string(token))
        elif stack and stack[-1][0] == "{" and stack[-1][2]:
            key = json.loads(token) if token.startswith('"') else token
            stack[-1][1] = key
            stack[-1][2] = False
            if duplicates:
                first = stack[-1][3].setdefault(key, match.start())
                if first != match.start():
                    message = _twice(key, text, first)
                    return _located(text, match.start(), stack, message, DuplicateKeyError)
        elif bad_scalar is not None and not token.startswith('"'):
            message = bad_scalar(token)
            if message:
                return _located(text, match.start(), stack, message)
    return None


def _twice(key: Any, text: str, first: int) -> str:
    """The message for a key given a second time; its first place is ``first`` in ``text``."""
    line, column = text_position(text, first)
    shown = _shown(json.dumps(key, ensure_ascii=False)) if isinstance(key, str) else repr(key)
    return (
        f"the key {shown} is given twice in one object (first at {line}:{column}); "
        "give each key once"
    )


def _located(
    text: str,
    offset: int,
    stack: list[list[Any]],
    message: str,
    kind: type[DataError] = DataError,
) -> DataError:
    line, column = text_position(text, offset)
    parts: list[str | int] = [frame[1] for frame in stack if frame[1] is not None]
    return kind(message, path=json_path(parts), offset=offset, line=line, column=column)


# ── numbers ─────────────────────────────────────────────────────────────────────


def _digits(token: str) -> int:
    """How many digits the integer part of a number token has."""
    return len(token.lstrip("-+").split(".")[0].split("e")[0].split("E")[0])


def _shown(token: str) -> str:
    return token if len(token) <= 40 else token[:37] + "..."


def number_problem(token: str) -> str | None:
    """Why a JSON number token is refused, or ``None``.

    >>> number_problem("12"), number_problem("1e400")
    (None, 'a number must be finite (found 1e400)')
    """
    if token in ("NaN", "Infinity", "-Infinity"):
        return f"`{token}` is not JSON: a number must be finite"
    if token in ("true", "false", "null"):
        return None
    digits = _digits(token)
    if digits > MAX_INT_DIGITS:
        return f"a number may have at most {MAX_INT_DIGITS:,} digits (found {digits:,})"
    if any(c in token for c in ".eE"):
        try:
            if not math.isfinite(float(token)):
                return f"a number must be finite (found {_shown(token)})"
        except ValueError:
            return None
    return None


class _BadNumber(Exception):
    pass


def _parse_int(token: str) -> int:
    if _digits(token) > MAX_INT_DIGITS:
        raise _BadNumber
    return int(token)


def _parse_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value) or _digits(token) > MAX_INT_DIGITS:
        raise _BadNumber
    return value


def _parse_constant(token: str) -> Any:
    raise _BadNumber


class _DuplicateKey(Exception):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object from its members, refusing a key given twice (``json`` keeps the last)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _DuplicateKey
    return obj


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")
_DELTA = {"[": 1, "{": 1, "]": -1, "}": -1}


def _max_depth(text: str, limit: int) -> int:
    """The deepest nesting of valid JSON ``text``, at C speed (strings dropped first);
    0 when it cannot exceed ``limit``."""
    if text.count("[") + text.count("{") <= limit:
        return 0
    brackets = _BRACKETS.findall(_STRING.sub("", text))
    return max(accumulate(map(_DELTA.__getitem__, brackets)), default=0)


def load_json(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON, refusing deep nesting, huge integers, non-finite numbers and a key
    given twice in one object.

    Raises :class:`json.JSONDecodeError` for text that is not JSON (as :func:`json.loads`)
    and :class:`DataError` for JSON flowc refuses (:class:`DuplicateKeyError` for a key
    given twice).

    >>> load_json("[" * 501 + "]" * 501)
    Traceback (most recent call last):
    ...
    flowc.inputs.DataError: 1:501: nested more than 500 levels deep (at [0][0][0][0][0][0][0][0]…(490 more)…[0][0])
    >>> load_json('{"a": {"b": 1, "b": 2}}')
    Traceback (most recent call last):
    ...
    flowc.inputs.DuplicateKeyError: 1:16: the key "b" is given twice in one object (first at 1:8); give each key once (at a.b)
    """
    try:
        data = json.loads(
            text,
            object_pairs_hook=_object,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except _DuplicateKey:
        found = _find(text, duplicates=True)
        raise found or DuplicateKeyError("a key is given twice in one object") from None
    except _BadNumber:
        found = _find(text, bad_scalar=number_problem)
        raise found or DataError("a number is out of range") from None
    except RecursionError:
        found = _find(text, depth_limit=max_depth)
        raise found or DataError(f"nested more than {max_depth} levels deep") from None
    if _max_depth(text, max_depth) > max_depth:
        found = _find(text, depth_limit=max_depth)
        raise found or DataError(f"nested more than {max_depth} levels deep")
    if _SURROGATE_ESCAPE.search(text):  # the only way a lone surrogate gets in
        found = _find(text, bad_string=_surrogate_token)
        if found is not None:
            raise found
    return data


# ── strings ─────────────────────────────────────────────────────────────────────

#: ``\ud800``-``\udfff`` written as an escape (text read as UTF-8 holds none itself)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def surrogate_problem(value: str) -> str | None:
    r"""Why ``value`` is not text: a lone surrogate (an escape such as ``\ud800`` with no
    partner), which no UTF-8 output, SQLite row or terminal can hold; ``None`` if it is.

    >>> surrogate_problem("\U0001f600: a pair of escapes (\\ud83d\\ude00) reads as one character")
    >>> surrogate_problem("a \ud800")
    'a string holds a lone surrogate (\\ud800), which is not Unicode text'
    """
    found = _LONE_SURROGATE.search(value)
    if found is None:
        return None
    return (
        f"a string holds a lone surrogate (\\u{ord(found.group()):04x}), which is not Unicode text"
    )


def _surrogate_token(token: str) -> str | None:
    return surrogate_problem(json.loads(token)) if "\\u" in token else None


# ── YAML ─────────────────────────────────────────────────────────────────────────


def load_yaml(text: str, *, max_depth: int = SCRIPT_MAX_DEPTH) -> Any:
    """Parse one YAML document into JSON data, within the limits of this module.

    Raises ``yaml.YAMLError`` for text that is not YAML and :class:`DataError` for
    YAML flowc refuses.

    >>> load_yaml("a: &x [1, 2]\\nb: *x\\nwhen: 2024-01-02")
    {'a': [1, 2], 'b': [1, 2], 'when': '2024-01-02'}
    >>> load_yaml("a: 1\\nb:\\n  c: 2\\n  'c': 3")
    Traceback (most recent call last):
    ...
    flowc.inputs.DuplicateKeyError: 4:3: the key "c" is given twice in one mapping (first at 3:3); give each key once (at b.c)
    >>> load_yaml("a: &x [*x]")
    Traceback (most recent call last):
    ...
    flowc.inputs.DataError: 1:8: the alias *x refers to a value that holds it (a cycle) (at a[0])
    """

    loader = _loader_class()(text, max_depth)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def yaml_position(text: str, mark: Any) -> tuple[int, int]:
    """``(line, column)`` of a PyYAML mark in ``text`` (the string it read), counted as
    :func:`text_position` counts them: PyYAML also ends a line at ``\\x85``, ``\\u2028``
    and ``\\u2029``, which no other reader of flowc's does."""
    return text_position(text, mark.index)


_LOADER: list[type[Any]] = []
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"
_NOT_JSON = {"binary": "binary data", "set": "a set", "omap": "an ordered map", "pairs": "pairs"}


def _json_key(key: Any) -> str:
    """The key a YAML mapping's ``key`` is once written as JSON (``True``: ``"true"``,
    ``None``: ``"null"``, ``1``: ``"1"``), as a message says it.

    >>> [_json_key(k) for k in ("a", True, None, 1, 1.5)]
    ['a', 'true', 'null', '1', '1.5']
    """
    if isinstance(key, str):
        return key
    try:
        return str(next(iter(json.loads(json.dumps({key: 0})))))
    except (TypeError, ValueError):  # (a key JSON cannot write: a list, a date...)
        return str(key)


def _check_keys(loader: Any, node: Any, path: list[str | int]) -> None:
    """Refuse a key given twice in ``node``, when a mapping (PyYAML keeps the last value):
    two keys that make the same key once read (``1`` and ``0x1``) or once written as JSON
    (``1`` and ``"1"``). Keys merged in with ``<<`` may be overridden."""
    from yaml.nodes import MappingNode, ScalarNode

    if not isinstance(node, MappingNode):
        return
    by_value: dict[Any, Any] = {}
    by_text: dict[str, Any] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE:
            continue
        key = loader.construct_object(key_node, deep=True)
        text = _json_key(key)
        first = by_value.get(key) or by_text.get(text)
        if first is not None:
            line, column = yaml_position(loader.text, first.start_mark)
            shown = _shown(json.dumps(text, ensure_ascii=False))
            at = yaml_position(loader.text, key_node.start_mark)
            raise DuplicateKeyError(
                f"the key {shown} is given twice in one mapping (first at {line}:{column}); "
                "give each key once",
                path=json_path([*path, text]),
                line=at[0],
                column=at[1],
            )
        by_value.setdefault(key, key_node)
        by_text.setdefault(text, key_node)


def _loader_class() -> type[Any]:
    """PyYAML's safe loader, counting depth and alias expansion as it composes."""
    if _LOADER:
        return _LOADER[0]
    import yaml
    from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

    class Loader(yaml.SafeLoader):
        # timestamps stay strings: a JSON script has no dates
        yaml_implicit_resolvers = {  # noqa: RUF012 - PyYAML reads this class attribute
            key: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP]
            for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }

        def __init__(self, text: str, max_depth: int) -> None:
            super().__init__(text)
            self.text = text
            self.max_depth = max_depth
            self.limit = max(MAX_ALIAS_EXPANSION, len(text))
            self.size = 0  # characters of the expanded document so far
            self.sizes: dict[str, int] = {}  # anchor -> expanded size of its value
            self.open: set[str] = set()  # anchors whose value is being composed
            self.path: list[str | int] = []
            #: whether the text has an escape that could make a lone surrogate
            self.escapes = "\\u" in text or "\\U" in text

        def _error(self, message: str, mark: Any, path: list[str | int]) -> DataError:
            line, column = yaml_position(self.text, mark)
            return DataError(message, path=json_path(path), line=line, column=column)

        def compose_node(self, parent: Node | None, index: Any) -> Node | None:
            part: str | int | None = None
            if isinstance(index, int):
                part = index
            elif isinstance(index, ScalarNode):
                part = index.value
            path = [*self.path, part] if part is not None else self.path
            event = self.peek_event()  # type: ignore[no-untyped-call]
            if isinstance(event, yaml.AliasEvent):
                alias = str(event.anchor)
                if alias in self.open:
                    raise self._error(
                        f"the alias *{alias} refers to a value that holds it (a cycle)",
                        event.start_mark,
                        path,
                    )
                self.size += self.sizes.get(alias, 0)
                if self.size > self.limit:
                    raise self._error(
                        f"aliases expand the document past {_mib(self.limit)}: "
                        f"*{alias} repeats {self.sizes.get(alias, 0):,} characters",
                        event.start_mark,
                        path,
                    )
                return super().compose_node(parent, index)
            if len(path) >= self.max_depth and not isinstance(event, yaml.ScalarEvent):
                raise self._error(
                    f"nested more than {self.max_depth} levels deep", event.start_mark, path
                )
            anchor = getattr(event, "anchor", None)
            if anchor is not None:
                self.open.add(anchor)
            before = self.size
            saved, self.path = self.path, path
            try:
                node = super().compose_node(parent, index)
            finally:
                self.path = saved
            if isinstance(node, ScalarNode):
                self.size += len(node.value) + 2
                problem = surrogate_problem(node.value) if self.escapes else None
                if problem is not None:
                    raise self._error(problem, node.start_mark, path)
            elif isinstance(node, MappingNode | SequenceNode):
                self.size += 2 + len(node.value)
                _check_keys(self, node, path)
            if anchor is not None:
                self.open.discard(anchor)
                self.sizes[anchor] = self.size - before
            if self.size > self.limit:
                raise self._error(
                    f"the document expands past {_mib(self.limit)}", event.start_mark, path
                )
            return node

        def construct_yaml_int(self, node: ScalarNode) -> int:
            # checked before converting: decimal conversion is quadratic in the digits
            if len(node.value) > MAX_INT_DIGITS + 2 or (
                (value := super().construct_yaml_int(node)).bit_length() > MAX_INT_DIGITS * 3.32
            ):
                raise self._error(
                    f"a number may have at most {MAX_INT_DIGITS:,} digits "
                    f"(found {len(node.value):,} characters)",
                    node.start_mark,
                    [],
                )
            return value

        def construct_yaml_float(self, node: ScalarNode) -> float:
            value = super().construct_yaml_float(node)
            if not math.isfinite(value):
                raise self._error(
                    f"a number must be finite (found {_shown(node.value)})", node.start_mark, []
                )
            return value

        def construct_timestamp_text(self, node: ScalarNode) -> str:
            return str(self.construct_scalar(node))

        def refuse(self, node: Node) -> Any:
            kind = _NOT_JSON.get(node.tag.rsplit(":", 1)[-1], node.tag)
            raise self._error(f"{node.tag} ({kind}) is not JSON data", node.start_mark, [])

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    Loader.add_constructor("tag:yaml.org,2002:float", Loader.construct_yaml_float)
    Loader.add_constructor(_TIMESTAMP, Loader.construct_timestamp_text)
    for name in _NOT_JSON:
        Loader.add_constructor(f"tag:yaml.org,2002:{name}", Loader.refuse)
    _LOADER.append(Loader)
    return Loader
