"""`flowc lsp` survives what its peer writes: raw bytes, written to a real server process.

A frame whose header is broken (a length that is not a number, negative or missing, a
header too long, lines ending in LF alone), a body that is not JSON or not a message, and
a length over the limit are skipped, or answered with an error where there is something
to answer; the server then finds the next ``Content-Length`` header and keeps serving. A
huge length is refused without reading it (under an address-space limit: the server
never tries to allocate it). A request whose parameters do not fit its method (a line of
-1, ``null``, ``"a"``, 2^31) is answered with ``-32602`` (invalid params).

Each session is one byte stream, written whole to the server's stdin before it is
closed: what the server answers depends only on those bytes, never on timing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.limits import Limited, run_limited
from tests.lsp.client import TRAP

#: where the server runs: `python -m flowc` there is this checkout's flowc
ROOT = Path(__file__).resolve().parents[2]
#: the longest message the server reads (flowc.lsp.stdio.MAX_MESSAGE_BYTES, as
#: docs/editors.md gives it)
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
#: enough for the server (its threads reserve address space), far from a huge message
LIMITS = {"memory_mib": 512, "cpu_seconds": 60, "wall_seconds": 90.0, "output_mib": 8}
SHUTDOWN = 9999


def frame(message: dict[str, Any], header: bytes = b"Content-Length: %d\r\n\r\n") -> bytes:
    body = json.dumps(message).encode()
    return (header % len(body) if b"%d" in header else header) + body


def request(msg_id: Any, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def symbols(msg_id: int, uri: str) -> dict[str, Any]:
    return request(msg_id, "textDocument/documentSymbol", {"textDocument": {"uri": uri}})


def hover(msg_id: int, uri: str, line: Any, character: Any = 0) -> dict[str, Any]:
    position = {"line": line, "character": character}
    return request(
        msg_id, "textDocument/hover", {"textDocument": {"uri": uri}, "position": position}
    )


def session(tmp_path: Path, *middle: bytes, memory_mib: int = 512) -> tuple[Limited, list[Any]]:
    """Run `flowc lsp` on: initialize, open TRAP, ``middle``, shutdown and exit; what it did
    and the messages it wrote."""
    uri = (tmp_path / "trap.flow").as_uri()
    start = [
        frame(request(0, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})),
        frame(notification("initialized", {})),
        frame(
            notification(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": "flow", "version": 1, "text": TRAP}},
            )
        ),
    ]
    end = [frame(request(SHUTDOWN, "shutdown", None)), frame(notification("exit", None))]
    stream = b"".join([*start, *middle, *end])
    result = run_limited(["lsp"], cwd=ROOT, stdin=stream, **{**LIMITS, "memory_mib": memory_mib})
    return result, written(result.stdout)


def written(stdout: str) -> list[Any]:
    """The messages in the server's output (ASCII: pygls and flowc escape the rest)."""
    out = []
    for match in re.finditer(r"Content-Length: (\d+)\r\n(?:[^\r\n]+\r\n)*\r\n", stdout):
        out.append(json.loads(stdout[match.end() : match.end() + int(match.group(1))]))
    return out


def answer(messages: list[Any], msg_id: Any) -> dict[str, Any]:
    found = [m for m in messages if "method" not in m and m.get("id") == msg_id]
    assert len(found) == 1, f"{len(found)} answers to {msg_id!r} in {messages}"
    return found[0]


def served(result: Limited, messages: list[Any], *ids: int) -> None:
    """The server ended cleanly (exit after shutdown) and answered each of ``ids`` with the
    outline of the document, and the shutdown."""
    assert not result.timed_out and not result.traceback, result.stderr[-3000:]
    assert result.returncode == 0, result.stderr[-3000:]
    for msg_id in ids:
        names = [s["name"] for s in answer(messages, msg_id)["result"]]
        assert "drafter" in names, names
    assert answer(messages, SHUTDOWN)["result"] is None


def uri_of(tmp_path: Path) -> str:
    return (tmp_path / "trap.flow").as_uri()


# ── frames ───────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "header",
    [
        b"Content-Length: abc\r\n\r\n",
        b"Content-Length: -5\r\n\r\n",
        b"Content-Length: 1.5e2\r\n\r\n",
        b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n",  # more digits than int() takes
        b"Content-Length: 12\r\nContent-Length: 13\r\n\r\n",  # two lengths that disagree
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",  # no length
        b"",  # no header at all: a bare body
        b"\x00\xff\xfe" * 30_000,  # 90 KB of bytes that are no header line
    ],
    ids=[
        "letters",
        "negative",
        "float",
        "5000-digits",
        "two-lengths",
        "no-length",
        "bare",
        "binary",
    ],
)
def test_a_broken_header_is_skipped_and_the_next_message_answered(
    tmp_path: Path, header: bytes
) -> None:
    uri = uri_of(tmp_path)
    lost = frame(symbols(50, uri), header)  # never answered: nothing says where it ends
    result, messages = session(tmp_path, frame(symbols(1, uri)), lost, frame(symbols(2, uri)))
    served(result, messages, 1, 2)
    assert not [m for m in messages if m.get("id") == 50]
    # told once, in one line, on stderr (the editor's log of the server)
    assert result.stderr.count("flowc lsp: ") == 1, result.stderr
    assert "skipped to the next Content-Length header" in result.stderr


def test_lines_ending_in_lf_alone_are_read(tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    lf = frame(symbols(1, uri), b"Content-Length: %d\n\n")
    mixed = frame(symbols(2, uri), b"Content-Length: %d\nContent-Type: x\r\n\n")
    result, messages = session(tmp_path, lf, mixed, frame(symbols(3, uri)))
    served(result, messages, 1, 2, 3)
    assert "flowc lsp" not in result.stderr, result.stderr


@pytest.mark.parametrize("extra", [-10, 25])
def test_a_wrong_length_costs_that_message_only(tmp_path: Path, extra: int) -> None:
    """Too short: the body's start is not JSON (answered: parse error), and its rest is
    skipped up to the next header (answered too). Too long: the body eats the start of the
    next message (not JSON), whose rest is skipped: that message is lost with it."""
    uri = uri_of(tmp_path)
    body = json.dumps(symbols(50, uri)).encode()
    wrong = b"Content-Length: %d\r\n\r\n" % (len(body) + extra) + body
    result, messages = session(
        tmp_path, frame(symbols(1, uri)), wrong, frame(symbols(51, uri)), frame(symbols(2, uri))
    )
    served(result, messages, 1, 2)
    errors = [m["error"] for m in messages if "error" in m and m["id"] is None]
    assert [e["code"] for e in errors] == [-32700, -32700], errors
    assert errors[0]["message"].startswith("a message that is not JSON"), errors
    assert errors[1]["message"].endswith("skipped to the next Content-Length header"), errors


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"", -32700),
        (b"{", -32700),
        (b"\xff\xfe not text", -32700),
        (b"[" * 100_000 + b"]" * 100_000, -32700),  # nested past any parser's stack
        (b"[1, 2]", -32600),
        (b'"a string"', -32600),
        (b'{"id": 7, "method": "textDocument/documentSymbol"}', -32600),  # no "jsonrpc"
    ],
    ids=["empty", "unfinished", "not-utf8", "deep", "array", "string", "no-jsonrpc"],
)
def test_a_body_that_is_no_message_is_answered(tmp_path: Path, body: bytes, code: int) -> None:
    uri = uri_of(tmp_path)
    bad = b"Content-Length: %d\r\n\r\n" % len(body) + body
    result, messages = session(tmp_path, frame(symbols(1, uri)), bad, frame(symbols(2, uri)))
    served(result, messages, 1, 2)
    errors = [m for m in messages if "error" in m]
    assert len(errors) == 1, errors
    want_id = 7 if b'"id": 7' in body else None
    assert errors[0]["id"] == want_id and errors[0]["error"]["code"] == code, errors


@pytest.mark.parametrize("length", [MAX_MESSAGE_BYTES + 1, 900 * 1024 * 1024, 99999999999])
def test_a_huge_length_is_refused_without_reading_it(tmp_path: Path, length: int) -> None:
    """Under a 512 MiB address-space limit: pygls read the length it was given at once (a
    MemoryError, and the server was gone)."""
    uri = uri_of(tmp_path)
    huge = b"Content-Length: %d\r\n\r\n" % length + json.dumps(symbols(50, uri)).encode()
    result, messages = session(tmp_path, frame(symbols(1, uri)), huge, frame(symbols(2, uri)))
    served(result, messages, 1, 2)
    assert result.peak_mib < 200, result.peak_mib
    [refused] = [m for m in messages if "error" in m]
    assert refused["id"] is None and refused["error"]["code"] == -32700
    assert f"a message of {length:,} bytes" in refused["error"]["message"]
    assert result.stderr.count("\n") == 1 and "over the limit of 32 MiB" in result.stderr


def test_a_message_over_the_limit_is_skipped_whole(tmp_path: Path) -> None:
    """Sent in full: its bytes are read past (never held), the next message answered."""
    uri = uri_of(tmp_path)
    text = "# " + "x" * (MAX_MESSAGE_BYTES + 10) + "\n" + TRAP
    big = frame(
        notification(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri + "x", "languageId": "flow", "version": 1, "text": text}},
        )
    )
    result, messages = session(tmp_path, frame(symbols(1, uri)), big, frame(symbols(2, uri)))
    served(result, messages, 1, 2)
    assert result.peak_mib < 200, result.peak_mib
    assert not [m for m in messages if m.get("params", {}).get("uri") == uri + "x"]


def test_the_input_ending_inside_a_message_ends_the_server_cleanly(tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    body = json.dumps(symbols(1, uri)).encode()
    stream = [
        frame(request(0, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})),
        b"Content-Length: %d\r\n\r\n" % len(body) + body[:10],
    ]
    result = run_limited(["lsp"], cwd=ROOT, stdin=b"".join(stream), **LIMITS)
    assert not result.timed_out and not result.traceback, result.stderr
    assert result.returncode == 0
    assert result.stderr == (
        f"flowc lsp: the input ended inside a message ({len(body) - 10} of its "
        f"{len(body)} bytes missing)\n"
    )


# ── parameters ───────────────────────────────────────────────────────────────


def test_invalid_parameters_are_answered_with_invalid_params(tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    bad: list[tuple[dict[str, Any], str]] = [
        (hover(10, uri, -1), "$.params.position: Position.line should be in range"),
        (hover(11, uri, None), "$.params.position.line: invalid value for type, expected int"),
        (hover(12, uri, "a"), "$.params.position.line: invalid value for type, expected int"),
        (hover(13, uri, 2**31), "but was 2147483648"),
        (hover(14, uri, 0, -1), "Position.character should be in range"),
        (request(15, "textDocument/hover", None), "$.params: invalid value for type"),
        (request(16, "textDocument/hover", {"position": {"line": 0, "character": 0}}),
         "$.params.textDocument: required field missing"),
        (request("seventeen", "textDocument/documentSymbol", {"textDocument": 5}),
         "$.params.textDocument"),
    ]  # fmt: skip
    # a notification is never answered: the server goes on
    broken_edit = notification("textDocument/didChange", {"textDocument": {"uri": uri}})
    result, messages = session(
        tmp_path,
        *(frame(message) for message, _ in bad),
        frame(broken_edit),
        frame(hover(20, uri, 2**31 - 1, 2**31 - 1)),  # valid, past the end: nothing there
        frame(symbols(1, uri)),
    )
    served(result, messages, 1)
    for message, detail in bad:
        error = answer(messages, message["id"])["error"]
        assert error["code"] == -32602, error
        assert error["message"].startswith(f"invalid params of {message['method']}: "), error
        assert detail in error["message"], error
    assert answer(messages, 20) == {"jsonrpc": "2.0", "id": 20, "result": None}
    assert not result.traceback, result.stderr
    # one line each on stderr, the notification's included
    lines = result.stderr.splitlines()
    assert len(lines) == len(bad) + 1, result.stderr
    assert all(line.startswith("flowc lsp: invalid params of ") for line in lines), lines


def test_a_request_with_an_id_that_is_no_id_is_invalid(tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    odd = {**symbols(0, uri), "id": {"an": "object"}}
    result, messages = session(tmp_path, frame(odd), frame(symbols(1, uri)))
    served(result, messages, 1)
    [error] = [m for m in messages if "error" in m]
    assert error["id"] is None and error["error"]["code"] == -32600, error
