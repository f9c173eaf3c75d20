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


def test_content_length_a_huge_declared_length_does_not_swallow_later_frames() -> None:
    f = ContentLengthFramer(max_frame=1000)
    out = f.feed(b'Content-Length: 99999999999\r\n\r\n{"x":1}Content-Length: 2\r\n\r\n{}')
    assert isinstance(out[0], FrameTooLarge) and out[1:] == [b"{}"]


def test_content_length_resyncs_after_a_body_one_byte_short_or_long() -> None:
    f = ContentLengthFramer()
    short = b'Content-Length: 6\r\n\r\n{"a":1}'  # declares one byte too few
    good = b'Content-Length: 7\r\n\r\n{"b":2}'
    assert f.feed(short + good + good) == [b'{"a":1', b'{"b":2}', b'{"b":2}']
    f = ContentLengthFramer()
    long = b'Content-Length: 8\r\n\r\n{"a":1}'  # one byte too many: eats the next "C"
    out = f.feed(long + good + good)
    assert out[0] == b'{"a":1}C' and out[-1] == b'{"b":2}'


def test_content_length_accepts_lf_only_headers() -> None:
    f = ContentLengthFramer()
    assert f.feed(b"Content-Length: 2\n\n{}content-length: 2\r\n\r\n[]") == [b"{}", b"[]"]


def test_content_length_header_split_while_resyncing() -> None:
    f = ContentLengthFramer(max_frame=4)
    out = f.feed(b"Content-Length: 50\r\n\r\n" + b"z" * 30 + b"Content-Le")
    out += f.feed(b"ngth: 2\r\n\r\n{}")
    assert isinstance(out[0], FrameTooLarge) and out[1:] == [b"{}"]
