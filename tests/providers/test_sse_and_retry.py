"""The sans-IO pieces: the SSE parser and the retry policy's arithmetic."""

from __future__ import annotations

import email.utils

import httpx
import msgspec
import pytest

from tether.engine.providers.retry import (
    RetryPolicy,
    error_message,
    looks_transient,
    parse_retry_after,
    retry_after_seconds,
)
from tether.engine.providers.sse import SSEEvent, SSEParser, decode_data
from tether.errors import ProviderError


def feed_all(chunks: list[bytes]) -> list[SSEEvent]:
    parser = SSEParser("test")
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events + parser.close()


def test_events_split_at_any_byte_boundary() -> None:
    stream = b'event: a\ndata: {"x": 1}\n\ndata: two\n\n'
    expected = [SSEEvent("a", b'{"x": 1}'), SSEEvent("message", b"two")]
    for cut in range(len(stream) + 1):
        assert feed_all([stream[:cut], stream[cut:]]) == expected


def test_crlf_cr_and_split_crlf() -> None:
    assert feed_all([b"data: a\r\n\r\ndata: b\r\r"]) == [
        SSEEvent("message", b"a"),
        SSEEvent("message", b"b"),
    ]
    # A CRLF split across two reads is one line end, not a line end plus an empty line.
    assert feed_all([b"data: a\r", b"\ndata: b\r\n\r\n"]) == [SSEEvent("message", b"a\nb")]


def test_comments_multiline_data_and_ignored_fields() -> None:
    stream = b": keep-alive\nid: 7\nretry: 100\ndata: line1\ndata:line2\ndata\n\n"
    assert feed_all([stream]) == [SSEEvent("message", b"line1\nline2\n")]


def test_event_name_resets_after_dispatch_and_empty_events_are_skipped() -> None:
    events = feed_all([b"event: ping\n\nevent: x\ndata: 1\n\ndata: 2\n\n"])
    assert events == [SSEEvent("x", b"1"), SSEEvent("message", b"2")]


def test_close_dispatches_complete_lines_and_drops_a_cut_line() -> None:
    parser = SSEParser("test")
    assert parser.feed(b"data: whole\n") == []
    assert parser.close() == [SSEEvent("message", b"whole")]
    parser = SSEParser("test")
    parser.feed(b'data: {"cut')
    assert parser.close() == []


def test_oversized_line_is_refused() -> None:
    parser = SSEParser("prov")
    with pytest.raises(ProviderError, match="prov: malformed event stream"):
        parser.feed(b"data: " + b"x" * (16 * 1024 * 1024 + 1))


def test_decode_data_reports_the_bad_payload() -> None:
    decoder = msgspec.json.Decoder(dict)
    with pytest.raises(ProviderError, match=r"prov: malformed stream data .*\{not json"):
        decode_data(decoder, SSEEvent("message", b"{not json"), "prov")


def test_the_default_waits_ride_out_an_outage_of_minutes() -> None:
    policy = RetryPolicy(jitter=0.0)
    waits = [policy.delay(n) for n in range(1, policy.max_attempts)]
    assert waits == [5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]
    assert sum(waits) >= 5 * 60  # minutes, not seconds


def test_waits_grow_and_are_capped() -> None:
    policy = RetryPolicy(delays=(1.0, 2.0), step=3.0, max_delay=6.0, jitter=0.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 5.0, 6.0]
    jittered = RetryPolicy(delays=(1.0,), max_delay=60.0, jitter=0.5)
    assert all(1.0 <= jittered.delay(1) <= 1.5 for _ in range(50))


def test_retry_after_wins_but_is_capped() -> None:
    policy = RetryPolicy(delays=(1.0,), max_delay=10.0)
    assert policy.delay(1, retry_after=3.0) == 3.0
    assert policy.delay(1, retry_after=3600.0) == 10.0


def test_retry_after_forms() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after("2", now) == 2.0
    assert parse_retry_after("0.25", now) == 0.25
    assert parse_retry_after(email.utils.formatdate(now + 30, usegmt=True), now) == 30.0
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now) == 0.0
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None
    headers = httpx.Headers({"retry-after-ms": "1500", "retry-after": "9"})
    assert retry_after_seconds(headers) == 1.5


def test_error_message_variants() -> None:
    assert error_message(b'{"error": {"message": "bad model"}}') == "bad model"
    assert error_message(b'{"type": "error", "error": {"type": "x", "message": "m"}}') == "m"
    assert error_message(b'{"error": "plain"}') == "plain"
    assert error_message(b'{"detail": "not found"}') == "not found"
    assert error_message(b"<html>Bad Gateway</html>") == "<html>Bad Gateway</html>"


def test_transient_hints() -> None:
    assert looks_transient("overloaded_error")
    assert looks_transient("server_error")
    assert looks_transient(503)
    assert not looks_transient("invalid_request_error", 400, None)
