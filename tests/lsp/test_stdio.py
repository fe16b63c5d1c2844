"""lsp/stdio.py in process: the LSP base protocol's framing, and how a reader resynchronises
after a client's framing mistake (the server-level tests are in tests/hardening)."""

from __future__ import annotations

import io
import json
import logging

import pytest

from citeline.lsp.stdio import FrameReader


def body(n: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": "m", "params": {"n": n}}).encode()


def frames(data: bytes, max_body: int | None = None) -> list[bytes]:
    reader = (
        FrameReader(io.BytesIO(data))
        if max_body is None
        else FrameReader(io.BytesIO(data), max_body=max_body)
    )
    out = []
    while (got := reader.read_frame()) is not None:
        out.append(got)
    return out


def frame(payload: bytes, length: int | None = None, header: bytes = b"Content-Length") -> bytes:
    size = len(payload) if length is None else length
    return header + b": " + str(size).encode() + b"\r\n\r\n" + payload


def test_frames_in_a_row() -> None:
    assert frames(frame(body(1)) + frame(body(2))) == [body(1), body(2)]
    assert frames(frame("é".encode() * 3)) == ["é".encode() * 3]  # a length in bytes


def test_empty_stream_and_end_inside_a_body() -> None:
    assert frames(b"") == []
    assert frames(frame(body(1))[:-1]) == []  # the stream ended inside the body
    assert frames(b"Content-Length: 5\r\n") == []  # ... or before the blank line


def test_a_zero_length_body_is_a_frame() -> None:
    assert frames(frame(b"") + frame(body(3))) == [b"", body(3)]


def test_header_names_are_case_insensitive_and_other_headers_ignored() -> None:
    data = (
        b"content-length: "
        + str(len(body(1))).encode()
        + b"\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
        + body(1)
        + b"Content-Type: x\r\nCONTENT-LENGTH:"
        + str(len(body(2))).encode()
        + b"\t\n\n"  # no space after the colon, a tab before LF, LF-only line ends
        + body(2)
    )
    assert frames(data) == [body(1), body(2)]


def test_blank_lines_before_a_header_are_skipped() -> None:
    assert frames(b"\r\n\r\n\n" + frame(body(1))) == [body(1)]


def test_a_blank_line_ends_the_header_only_after_a_length() -> None:
    """Content-Type alone then a blank line is no frame: the next header starts one."""
    data = b"Content-Type: x\r\n\r\n" + frame(body(4))
    assert frames(data) == [body(4)]


def test_a_too_short_length_leaves_garbage_that_is_discarded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The tail of a frame announced too short runs into the next header: that header is
    found at the end of the garbage line and the next message is read whole."""
    first = body(1)
    data = frame(first, len(first) - 5) + frame(body(2))
    with caplog.at_level(logging.WARNING, "citeline.lsp.stdio"):
        got = frames(data)
    assert got == [first[:-5], body(2)]
    assert "garbage" in caplog.text


def test_the_log_says_how_many_bytes_of_garbage_and_shows_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The warning counts the bytes dropped before the next header (or the whole line when
    none follows) and quotes the first 80 of them."""
    tail = b'"}' * 50  # the end of a body announced too short (not a header name)
    with caplog.at_level(logging.WARNING, "citeline.lsp.stdio"):
        assert frames(tail + frame(body(1))) == [body(1)]
        assert frames(b"junk\r\n" + frame(body(2))) == [body(2)]
    first, second = (r.getMessage() for r in caplog.records)
    assert first == f"discarding 100 bytes of garbage in the message stream: {tail[:80]!r}"
    assert second == "discarding 6 bytes of garbage in the message stream: b'junk\\r\\n'"


def test_the_last_length_on_a_garbage_line_starts_the_next_frame() -> None:
    """Garbage may itself hold "Content-Length:" (a body quoting one): the header the client
    wrote next is the last one on the line."""
    garbage = b'{"note": "Content-Length: 3 is a header"} '
    assert frames(garbage + frame(body(3))) == [body(3)]


def test_a_line_of_garbage_alone_is_skipped() -> None:
    assert frames(b"hello there\r\n" + frame(body(5))) == [body(5)]
    # a garbage line ending in something that is not a header either
    assert frames(b"junk Content-Length: many\r\n" + frame(body(6))) == [body(6)]


def test_a_length_that_is_not_a_number_or_too_big_is_ignored() -> None:
    for bad in (b"Content-Length: -3\r\n\r\n", b"Content-Length: 1e3\r\n\r\n"):
        assert frames(bad + frame(body(7))) == [body(7)]
    big = b"Content-Length: 100\r\n\r\n" + b"x" * 100 + b"\r\n"
    assert frames(big + frame(body(8)), max_body=99) == [body(8)]
    assert frames(b"Content-Length: 100\r\n\r\n" + b"x" * 100, max_body=100) == [b"x" * 100]


def test_the_last_length_before_the_blank_line_wins() -> None:
    data = b"Content-Length: 3\r\nContent-Length: 5\r\n\r\nabcde"
    assert frames(data) == [b"abcde"]
    # a rejected length after a good one leaves no length: the blank line ends nothing
    assert frames(b"Content-Length: 5\r\nContent-Length: x\r\n\r\nabcde\r\n") == []


def test_garbage_then_a_blank_line_ends_no_frame() -> None:
    """Garbage forgets any length read before it: the blank line after it ends nothing."""
    assert frames(b"junk\r\n\r\n" + frame(body(9))) == [body(9)]
    assert frames(b"Content-Length: 3\r\njunk\r\n\r\n" + frame(body(9))) == [body(9)]


def test_the_stream_ending_inside_a_header_line_is_the_end_not_garbage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "citeline.lsp.stdio"):
        assert frames(frame(body(1)) + b"Content-Length: 5") == [body(1)]
        assert frames(frame(body(2)) + b"junk Content-Length: 5") == [body(2)]
    assert caplog.records == []


def test_the_log_quotes_a_rejected_length_up_to_40_bytes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    long = b"9" * 30 + b"x" * 30
    with caplog.at_level(logging.WARNING, "citeline.lsp.stdio"):
        assert frames(b"Content-Length: " + long + b"\r\n\r\n" + frame(body(1))) == [body(1)]
    (record,) = caplog.records
    assert record.getMessage() == f"ignoring a frame with Content-Length {long[:40]!r}"
