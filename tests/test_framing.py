"""Sans-IO framers: NDJSON and Content-Length, auto-detection, the size cap."""

from __future__ import annotations

from tether.transports.framing import AutoFramer, ContentLengthFramer, FrameTooLarge, NdjsonFramer


def test_ndjson_frames_split_across_chunks() -> None:
    f = NdjsonFramer()
    assert f.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert f.feed(b":2}\r\n\n  \n") == [b'{"b":2}']
    assert f.feed(b'{"c":3}') == []
    assert f.finish() == [b'{"c":3}']
    assert f.encode(b"{}") == b"{}\n"


def test_ndjson_oversized_line_is_dropped_and_the_stream_recovers() -> None:
    f = NdjsonFramer(max_frame=10)
    out = f.feed(b"x" * 6)
    out += f.feed(b"y" * 20)
    out += f.feed(b'\n{"ok":1}\n')
    assert isinstance(out[0], FrameTooLarge) and out[0].size == 26
    assert out[1:] == [b'{"ok":1}']


def test_content_length_frames() -> None:
    f = ContentLengthFramer()
    body = b'{"jsonrpc":"2.0"}'
    wire = f.encode(body)
    assert wire == b"Content-Length: 17\r\n\r\n" + body
    assert f.feed(wire[:5]) == []
    assert f.feed(wire[5:] + b"Content-Type: x\r\ncontent-length: 2\r\n\r\n{}") == [body, b"{}"]


def test_content_length_oversized_body_is_skipped() -> None:
    f = ContentLengthFramer(max_frame=4)
    out = f.feed(b"Content-Length: 10\r\n\r\n0123")
    out += f.feed(b"456789Content-Length: 2\r\n\r\n{}")
    assert isinstance(out[0], FrameTooLarge) and out[1:] == [b"{}"]


def test_content_length_bad_header_is_reported_as_empty_frame() -> None:
    assert ContentLengthFramer().feed(b"Content-Length: abc\r\n\r\n") == [b""]


def test_auto_detects_from_the_first_byte() -> None:
    nd = AutoFramer()
    assert nd.feed(b'\n {"a":1}\n') == [b'{"a":1}']
    assert isinstance(nd.chosen, NdjsonFramer)
    cl = AutoFramer()
    assert cl.feed(b"Content-Length: 2\r\n\r\n{}") == [b"{}"]
    assert isinstance(cl.chosen, ContentLengthFramer)
    assert cl.encode(b"{}").startswith(b"Content-Length")
    assert AutoFramer().encode(b"{}") == b"{}\n"
