"""The language server's end of stdin: the messages an editor writes, cut out of the
bytes it sends (:class:`Frames`), and the loop that hands them to pygls
(:func:`serve_stdio`).

The server reads its peer's bytes itself instead of through pygls' reader, which trusts
them: that reader asks for as many bytes as a header says at once (``Content-Length:
99999999999`` is a ``MemoryError``, and the server is gone), reads on from a header it
cannot read as if nothing had happened (the body that follows is glued to the next
message, and the server never answers again), and drops a request whose parameters do
not fit its method without an answer. Here:

* a message is at most :data:`MAX_MESSAGE_BYTES`; a header that gives more is refused
  before a byte of the body is held, and the body is read past, never kept;
* a header that cannot be read (no ``Content-Length``, a length that is not a number of
  bytes, two that disagree, a line that is not ``Name: value``, no blank line within
  :data:`MAX_HEADER_BYTES`) is skipped, and the reader goes on from the next
  ``Content-Length`` header: bytes that ran into one (the end of a message whose length
  was wrong, a body sent without a header, a stray line) cost no message but theirs;
* header lines may end in CRLF, as the protocol says, or in LF alone;
* a body that is not JSON is answered ``-32700`` (parse error), one that is not a
  JSON-RPC 2.0 message ``-32600`` (invalid request), with the request's ``id`` when it has
  one and ``null`` when it is unknown, as JSON-RPC says; a request whose parameters do not
  fit its method (a line of -1) is answered ``-32602`` (invalid params) with where and
  why. A notification is never answered.

Each of these is one line on stderr, the editor's log of the server; none stops it. The
input ending (the editor closed it) ends the server; ending inside a message says so in
one line. A diagram being drawn (in a thread of its own) is answered before a shutdown,
an exit or the end of the input is handed on: after a grace, its layout is stopped and it
is answered with an error.

>>> frames = Frames()
>>> frames.feed(b'Content-Length: 2\\r\\n\\r\\n{}Content-Length: x\\r\\n\\r\\n{}Content-Le')
[b'{}', Skipped(reason='a Content-Length that is not a number of bytes (x)')]
>>> frames.feed(b"ngth: 4\\n\\n[1]")
[]
>>> frames.missing, frames.end()
(1, 'the input ended inside a message (1 of its 4 bytes missing)')
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

import attrs
from cattrs.errors import BaseValidationError
from cattrs.v import format_exception, transform_error
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.io_ import StdoutWriter

from flowc.inputs import MAX_INPUT_BYTES
from flowc.lsp.core import FlowcServer

__all__ = ["MAX_HEADER_BYTES", "MAX_MESSAGE_BYTES", "Frames", "Skipped", "serve_stdio"]

#: the longest message the server reads: room for a document of the largest file flowc
#: reads (:data:`~flowc.inputs.MAX_INPUT_BYTES`, 16 MiB), whose text takes more bytes in
#: JSON than in the file (quotes, backslashes and line breaks are escaped)
MAX_MESSAGE_BYTES = 2 * MAX_INPUT_BYTES
#: the longest header (an editor's is a line or two, under 100 bytes)
MAX_HEADER_BYTES = 8 * 1024
#: how much is read at a time between messages, and at most at once within one
_CHUNK, _BODY_CHUNK = 64 * 1024, 1024 * 1024
#: the longest text of a refusal (its line on stderr, its error's message)
_MAX_REASON = 400

log = logging.getLogger("flowc.lsp")

#: the end of a header: a blank line (CRLF or LF alone)
_HEADER_END = re.compile(rb"\n\r?\n")
#: line breaks between messages (read past)
_BLANK = re.compile(rb"[\r\n]*")
#: where the reader looks for the next message after bytes that are none
_NEXT = re.compile(rb"content-length", re.IGNORECASE)
_KEEP = len(b"content-length") - 1
#: ``Name: value`` (a name is an HTTP token)
_FIELD = re.compile(r"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*")


def _shown(text: str, most: int = 40) -> str:
    r"""``text`` as a refusal quotes it: short, and every character a terminal or a log
    could act on (and anything not ASCII) escaped.

    >>> print(_shown("a\x1b[2J\u202e" + "9" * 60))
    a\x1b[2J\u202e9999999999999999999999999999999999...
    """
    out = "".join(c if c.isascii() and c.isprintable() else ascii(c)[1:-1] for c in text[:most])
    return out + "..." if len(text) > most else out


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB"


@attrs.frozen
class Skipped:
    """Bytes that held no message the reader could find the end of, and why (the line
    the server logs; it then reads from the next ``Content-Length`` header)."""

    reason: str


def header_length(block: bytes, limit: int = MAX_MESSAGE_BYTES) -> int | str:
    """The body length a header gives (its lines, without the blank line that ends it),
    or why it gives none the server will read.

    >>> header_length(b"Content-Length: 12\\r\\nContent-Type: x; charset=utf-8\\r\\n")
    12
    >>> header_length(b"Content-Length: -5\\r\\n")
    'a Content-Length that is not a number of bytes (-5)'
    >>> header_length(b"content-length: 99999999999\\n")
    'a message of 99,999,999,999 bytes, over the limit of 32 MiB'
    """
    try:
        text = block.decode("ascii")
    except UnicodeDecodeError:
        return "a header that is not ASCII text"
    length: int | None = None
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        if not line:
            continue
        field = _FIELD.fullmatch(line)
        if field is None:
            return f"a header line that is not 'Name: value' ({_shown(line)})"
        if field.group(1).lower() != "content-length":
            continue  # Content-Type: the body is UTF-8 JSON whatever it says
        value = field.group(2)
        if not (value.isascii() and value.isdigit()):
            return f"a Content-Length that is not a number of bytes ({_shown(value, 20)})"
        digits = value.lstrip("0") or "0"
        if len(digits) > 18:  # over any limit: not converted (int() refuses 4,301 digits)
            return f"a Content-Length of {len(digits):,} digits, over the limit of {_mib(limit)}"
        size = int(digits)
        if length is not None and length != size:
            return f"two Content-Length headers that disagree ({length} and {size})"
        length = size
    if length is None:
        return "a header without Content-Length"
    if length > limit:
        return f"a message of {length:,} bytes, over the limit of {_mib(limit)}"
    return length


def _is_field(line: bytes | bytearray) -> bool:
    """Whether a header line is a ``Name: value`` field."""
    try:
        text = bytes(line).removesuffix(b"\r").decode("ascii")
    except UnicodeDecodeError:
        return False
    return _FIELD.fullmatch(text) is not None


def _resume(buf: bytearray, end: int) -> int:
    r"""Where reading goes on after the broken header ``buf[:end]`` (its blank line
    included): where a header may begin within it, else at its end. One may begin at a
    ``Content-Length`` that other bytes come before on its line, and at the start of a line
    that follows one that is not a header field: the end of a message whose length was
    wrong, a body sent without a header or a stray line ran into the next header. A line
    after a field belongs to the broken header itself (``Content-Length: 12``, then
    ``Content-Length: 13``).

    >>> _resume(bytearray(b'"}}Content-Length: 2\r\n\r\n{}'), 24)
    3
    >>> _resume(bytearray(b"oops\nContent-Type: x\nContent-Length: 2\n\n{}"), 42)
    5
    >>> _resume(bytearray(b"Content-Length: 1\r\nContent-Length: 2\r\n\r\n"), 40)
    40
    """
    start = 0
    while start < end:
        stop = buf.find(b"\n", start, end)
        stop = end if stop == -1 else stop
        found = _NEXT.search(buf, start + 1, stop)
        if found is not None:
            return found.start()
        if not _is_field(buf[start:stop]):
            return min(stop + 1, end)
        start = stop + 1
    return end


class Frames:
    """Cuts the bytes a client writes into the bodies of its messages (``Content-Length:
    N``, more header lines, a blank line, N bytes), holding at most a header of
    :data:`MAX_HEADER_BYTES` or a body of ``limit`` bytes, and the last bytes fed.

    A header that gives no length the reader will take is a :class:`Skipped`; the reader
    then looks for the next ``Content-Length`` in what follows (bytes it looks through are
    dropped as it goes) and reads on from there, saying nothing more until it has found
    a message: one stretch of bytes that are no message is one :class:`Skipped`."""

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        self.limit = limit
        self._buffer = bytearray()
        #: the length of the body being read (None between messages)
        self._length: int | None = None
        #: looking for the next header, and whether that stretch was reported
        self._lost = False
        self._told = False

    @property
    def missing(self) -> int:
        """How many more bytes the body being read needs (0 between messages)."""
        return 0 if self._length is None else max(0, self._length - len(self._buffer))

    @property
    def held(self) -> int:
        """How many bytes the reader holds: a header, a body so far, or (looking for the
        next header) what may begin one."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes | Skipped]:
        """The bodies (and the stretches skipped) that ``data`` completes, in order."""
        self._buffer += data
        out: list[bytes | Skipped] = []
        while self._step(out):
            pass
        return out

    def end(self) -> str | None:
        """At the end of the input: what it cut short, if anything (a message, a header)."""
        if self._length is not None:
            return (
                f"the input ended inside a message ({self.missing} of its {self._length} "
                "bytes missing)"
            )
        if not self._lost and self._buffer.strip(b"\r\n"):
            return "the input ended inside a header"
        return None

    def _step(self, out: list[bytes | Skipped]) -> bool:
        """Take one body, header or skipped stretch off the buffer; False when the buffer
        holds no more of them whole."""
        buf = self._buffer
        if self._length is not None:
            if len(buf) < self._length:
                return False
            with memoryview(buf) as view:  # one copy of a body of up to the limit
                out.append(bytes(view[: self._length]))
            del buf[: self._length]
            self._length = None
            return True
        if self._lost:
            found = _NEXT.search(buf)
            if found is None:
                del buf[: max(0, len(buf) - _KEEP)]  # what may begin a header stays
                return False
            del buf[: found.start()]
            self._lost = False
        else:
            blank = _BLANK.match(buf)  # line breaks between messages are read past
            if blank is not None:
                del buf[: blank.end()]
        if not buf:
            return False
        end = _HEADER_END.search(buf, 0, MAX_HEADER_BYTES + 3)
        if end is not None:
            parsed = header_length(bytes(buf[: end.start() + 1]), self.limit)
            if isinstance(parsed, int):
                del buf[: end.end()]
                self._length = parsed
                self._told = False
                return True
            reason = parsed
            skip = _resume(buf, end.end())
        elif len(buf) > MAX_HEADER_BYTES:
            reason = f"a header of more than {MAX_HEADER_BYTES:,} bytes (no blank line ends it)"
            skip = 1  # the next header is looked for from after this one's start
        else:
            return False  # the rest of the header is still to come
        if not self._told:
            out.append(Skipped(reason))
            self._told = True
        self._lost = True
        del buf[:skip]
        return True


# ── the loop ──────────────────────────────────────────────────────────────────


def serve_stdio(
    server: FlowcServer, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> None:
    """Serve ``server`` on ``stdin``/``stdout`` (the process's by default) until the
    client says exit or closes the input; as pygls' ``start_io``, but through
    :class:`Frames` (see the module's docstring)."""
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    try:
        asyncio.run(_serve(server, stdin or sys.stdin.buffer))
    except BrokenPipeError:
        log.warning("flowc lsp: the editor closed its end of the connection")
    except (KeyboardInterrupt, SystemExit):
        pass  # the exit notification (pygls raises SystemExit for it)
    finally:
        server.shutdown()


def _read(stdin: BinaryIO, missing: int) -> bytes:
    """The next bytes of the input: of the body being read (at most :data:`_BODY_CHUNK`
    at once), else whatever has come (at most :data:`_CHUNK`)."""
    if missing:
        return stdin.read(min(missing, _BODY_CHUNK))
    read1 = getattr(stdin, "read1", None)
    return bytes(read1(_CHUNK) if read1 is not None else stdin.read(_CHUNK))


async def _serve(server: FlowcServer, stdin: BinaryIO) -> None:
    """Read, cut and hand on messages until the input ends (or the exit notification
    raises ``SystemExit``)."""
    loop = asyncio.get_running_loop()
    frames = Frames()
    # its own thread, never waited for: at the end it may be blocked reading the input
    reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flowc-stdin")
    try:
        while True:
            try:
                data = await loop.run_in_executor(reader, _read, stdin, frames.missing)
            except (OSError, ValueError) as err:  # ValueError: the input was closed
                log.warning("flowc lsp: cannot read the input: %s", err)
                return
            if not data:
                cut = frames.end()
                if cut is not None:
                    log.warning("flowc lsp: %s", cut)
                await server.finish_diagrams()
                return
            for item in frames.feed(data):
                if isinstance(item, Skipped):
                    reason = f"{item.reason}: skipped to the next Content-Length header"
                    _refuse(server, None, -32700, reason)
                else:
                    if _ends_session(item):
                        # the diagrams being drawn are answered before the shutdown is
                        # (a diagram asked for in the same read starts its work first)
                        await asyncio.sleep(0)
                        await server.finish_diagrams()
                    dispatch(server, item)
    finally:
        reader.shutdown(wait=False)


def _ends_session(body: bytes) -> bool:
    """Whether a message is the shutdown request or the exit notification."""
    if b"shutdown" not in body and b"exit" not in body:
        return False
    try:
        data = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("method") in ("shutdown", "exit")


def dispatch(server: FlowcServer, body: bytes) -> None:
    """Hand one message's body to pygls, or answer (or log) why it is not one."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError) as err:  # UnicodeDecodeError is a ValueError
        why = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        _refuse(server, None, -32700, f"a message that is not JSON ({why})")
        return
    if not isinstance(data, dict):
        _refuse(
            server, None, -32600, f"a message that is not a JSON object ({type(data).__name__})"
        )
        return
    # a request is answered; a notification (no id) or a response of the client's is not
    msg_id = data.get("id")
    is_request = "id" in data and "method" in data
    method = _shown(str(data.get("method", "a response")))
    if msg_id is not None and (isinstance(msg_id, bool) or not isinstance(msg_id, (int, str))):
        reason = f"a message of {method} whose id is not a number or a string"
        _refuse(server, None, -32600, f"{reason} ({_shown(json.dumps(msg_id))})", answer=is_request)
        return
    if data.get("jsonrpc") != "2.0":
        reason = f'a message of {method} that is not JSON-RPC 2.0 (no "jsonrpc": "2.0")'
        _refuse(server, msg_id, -32600, reason, answer=is_request)
        return
    try:
        message = server.protocol.structure_message(data)
    except JsonRpcInvalidParams as err:
        _refuse(server, msg_id, -32602, invalid_params(method, err), answer=is_request)
        return
    except JsonRpcException as err:  # pygls has logged what it could not convert
        error = err.to_response_error()
        reason = f"cannot read a message of {method}: {error.message}"
        _refuse(server, msg_id, error.code, reason, answer=is_request)
        return
    try:
        server.protocol.handle_message(message)
    except BrokenPipeError:
        raise
    except Exception as err:  # a bug in pygls or flowc: logged and shown, the server goes on
        server.internal_error(method, err)


def _refuse(
    server: FlowcServer, msg_id: Any, code: int, reason: str, *, answer: bool = True
) -> None:
    """Log why a message is refused (one line) and, unless told not to, answer it."""
    reason = reason.replace("\n", " ")
    if len(reason) > _MAX_REASON:
        reason = reason[: _MAX_REASON - 3] + "..."
    log.warning("flowc lsp: %s", reason)
    if answer:
        server.send_error(msg_id, code, reason)


def _described(exc: BaseException, kind: type | None) -> str:
    """cattrs' words for a value that does not fit, with a validator's own reason (a
    position's line out of range) instead of its "invalid value"."""
    if isinstance(exc, ValueError) and kind is None and str(exc):
        return str(exc).rstrip(".")
    return format_exception(exc, kind)


def _camel(path: str) -> str:
    """A path of lsprotocol's attribute names in the protocol's (``text_document`` is
    ``textDocument``)."""
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), path)


def invalid_params(method: str, err: JsonRpcInvalidParams) -> str:
    """Where and why a message's parameters do not fit its method, from the conversion
    error pygls raised it from.

    >>> from flowc.lsp.server import make_server
    >>> hover = {"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover",
    ...          "params": {"textDocument": {"uri": "file:///a.flow"},
    ...                     "position": {"line": -1, "character": "a"}}}
    >>> try:
    ...     make_server().protocol.structure_message(hover)
    ... except JsonRpcInvalidParams as err:
    ...     print(invalid_params("textDocument/hover", err))
    invalid params of textDocument/hover: $.params.position.character: invalid value for type, expected int
    """
    cause = err.__cause__
    if not isinstance(cause, BaseValidationError):
        return f"invalid params of {method}"
    problems = []
    for problem in transform_error(cause, "$", _described):
        what, _, where = problem.rpartition(" @ ")
        problems.append(f"{_camel(where)}: {what}")
    return f"invalid params of {method}: {'; '.join(problems)}"
