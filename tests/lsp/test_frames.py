"""The language server's frame reader (:class:`flowc.lsp.stdio.Frames`) in process: what
it cuts out of a byte stream does not depend on how the stream is split into reads, bytes
that are no message cost no message that follows them, and it never holds more than a
header and one message's body."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from flowc.lsp.stdio import MAX_HEADER_BYTES, Frames, Skipped, header_length

bodies = st.binary(max_size=200)
#: bytes that are no message: anything without a Content-Length header's name in it
junk = st.binary(max_size=300).filter(lambda b: b"content-length" not in b.lower())
headers = st.sampled_from(
    [
        b"Content-Length: %d\r\n\r\n",
        b"Content-Length: %d\n\n",
        b"content-length:%d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
        b"Content-Type: x\nContent-Length:   %d \r\n\n",
    ]
)


def framed(body: bytes, header: bytes) -> bytes:
    return header % len(body) + body


def read(stream: bytes, cuts: list[int]) -> tuple[list[bytes | Skipped], str | None]:
    """What :class:`Frames` cuts out of ``stream`` read in pieces ending at ``cuts``."""
    frames = Frames()
    out: list[bytes | Skipped] = []
    start = 0
    for cut in [*sorted(set(cuts)), len(stream)]:
        out += frames.feed(stream[start:cut])
        start = max(start, cut)
    return out, frames.end()


@given(
    st.lists(st.tuples(junk, bodies, headers), max_size=6),
    junk,
    st.lists(st.integers(min_value=0, max_value=3000), max_size=20),
)
def test_any_split_of_the_input_reads_the_same(
    parts: list[tuple[bytes, bytes, bytes]], tail: bytes, cuts: list[int]
) -> None:
    stream = b"".join(j + framed(b, h) for j, b, h in parts) + tail
    assert read(stream, cuts) == read(stream, [])


@given(st.lists(st.tuples(junk, bodies, headers), min_size=1, max_size=6))
def test_bytes_that_are_no_message_cost_no_message_after_them(
    parts: list[tuple[bytes, bytes, bytes]],
) -> None:
    """Whatever comes before a header (the end of a message whose length was wrong, a
    body without a header, a stray line, binary noise) is skipped, each stretch told at
    most once, and the message after it is read whole."""
    stream = b"".join(j + framed(b, h) for j, b, h in parts)
    out, cut = read(stream, [])
    assert [x for x in out if isinstance(x, bytes)] == [b for _, b, _ in parts]
    assert sum(isinstance(x, Skipped) for x in out) <= sum(
        bool(j.strip(b"\r\n")) for j, _, _ in parts
    )
    assert cut is None


def test_a_header_that_cannot_be_read_is_skipped_to_the_next() -> None:
    body = b'{"jsonrpc": "2.0", "method": "x"}'
    cases = {
        b"Content-Length: abc\r\n\r\n": "a Content-Length that is not a number of bytes (abc)",
        b"Content-Length: 12\r\nContent-Length: 13\r\n\r\n": (
            "two Content-Length headers that disagree (12 and 13)"
        ),
        b"Content-Type: x\r\n\r\n": "a header without Content-Length",
        b"Content Length: 5\r\n\r\n": "a header line that is not 'Name: value' (Content Length: 5)",
        b"Content-Length: 5\xff\r\n\r\n": "a header that is not ASCII text",
        b"Content-Length: 33554433\r\n\r\n": (
            "a message of 33,554,433 bytes, over the limit of 32 MiB"
        ),
    }
    for header, reason in cases.items():
        out, cut = read(header + body + framed(body, b"Content-Length: %d\r\n\r\n"), [])
        assert out == [Skipped(reason), body], header
        assert cut is None


def test_a_header_without_its_end_is_skipped_past_the_limit() -> None:
    frames = Frames()
    assert frames.feed(b"x" * MAX_HEADER_BYTES) == []  # it may still end
    assert frames.feed(b"x") == [
        Skipped("a header of more than 8,192 bytes (no blank line ends it)")
    ]
    assert frames.feed(b"x" * 10_000 + framed(b"{}", b"Content-Length: %d\r\n\r\n")) == [b"{}"]


def test_a_message_over_the_limit_is_read_past_not_held() -> None:
    frames = Frames(limit=1024 * 1024)
    out = frames.feed(b"Content-Length: 5000000\r\n\r\n")
    assert out == [Skipped("a message of 5,000,000 bytes, over the limit of 1 MiB")]
    assert frames.missing == 0  # its length is not asked for
    for _ in range(80):
        assert frames.feed(b"y" * 65536) == []
        assert frames.held < 20  # only what may begin the next header
    assert frames.feed(framed(b"{}", b"Content-Length: %d\r\n\r\n")) == [b"{}"]


def test_lengths_are_read_without_converting_huge_numbers() -> None:
    assert header_length(b"Content-Length: " + b"9" * 5000 + b"\r\n") == (
        "a Content-Length of 5,000 digits, over the limit of 32 MiB"
    )
    assert header_length(b"Content-Length: 0000000000000000000000000012\r\n") == 12
    assert header_length(b"Content-Length: \xd9\xa3\r\n") == "a header that is not ASCII text"
    assert header_length(b"Content-Length: +5\r\n") == (
        "a Content-Length that is not a number of bytes (+5)"
    )


def test_the_end_of_the_input_says_what_it_cut_short() -> None:
    frames = Frames()
    frames.feed(b"\r\n\r\n")
    assert frames.end() is None  # line breaks between messages
    frames.feed(b"Content-Len")
    assert frames.end() == "the input ended inside a header"
