"""One streamed provider request with retries: attempt, classify the failure, back off, try again.

Retried as the official OpenAI and Anthropic SDKs do: HTTP 408 / 409 / 429 / 5xx, unless the
server says otherwise with `x-should-retry: true|false`; connection failures and timeouts; and a
retryable error the stream reports before it produced anything (Anthropic `overloaded_error`).
Never retried: other 4xx, a 429 for an exhausted quota (no wait can help: the message says what to
do instead), a connection that cannot be made (a name that does not resolve, a refused port, a
TLS handshake refused: a wrong base URL or a server that is not running, which no wait of
minutes cures; the message names the host and the settings to check), and any failure after
an event reached the consumer — the user has already seen part of an answer, so a silent
second answer would be wrong; that failure surfaces as a ProviderError.
"""

from __future__ import annotations

import email.utils
import random
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import anyio
import httpx
import msgspec

from tether.engine.providers.base import RetryNotice, StreamEvent
from tether.engine.providers.sse import SSEEvent, SSEParser
from tether.errors import ProviderError, ProviderHTTPError

RETRYABLE_STATUS = frozenset({408, 409, 429})
# Error codes (OpenAI `code`, or `type`) that no retry can cure.
QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})
# After the terminal event, wait this long for the server to end the body so the connection can
# go back to the pool; a server that keeps it open only costs us the connection.
DRAIN_GRACE = 1.0
# Error bodies are read whole up to this size; the message is all we need.
MAX_ERROR_BODY = 64 * 1024


class RetryPolicy(msgspec.Struct, frozen=True):
    """How long a request keeps trying through an outage: waits of 5, 10, 15 and 20 s, then
    10 s more each time, over 10 attempts (about 6 minutes in all), as an outage lasts minutes.
    A server's Retry-After is honoured up to `max_delay`. The budget is per request: a request
    that completes starts the next one afresh."""

    max_attempts: int = 10
    delays: tuple[float, ...] = (5.0, 10.0, 15.0, 20.0)  # after failed attempts 1, 2, 3, 4
    step: float = 10.0  # each later wait is this much longer than the one before
    max_delay: float = 120.0  # cap on any wait, Retry-After included
    jitter: float = 0.1  # up to this fraction is added at random, so clients don't stampede
    max_total: float | None = None  # no wait that would end past this many seconds of trying

    def out_of_time(self, started: float, delay: float) -> bool:
        """Whether waiting `delay` more seconds would pass `max_total` (from `started`)."""
        if self.max_total is None:
            return False
        return time.monotonic() - started + delay > self.max_total

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        if attempt <= len(self.delays):
            wait = self.delays[attempt - 1]
        else:
            last = self.delays[-1] if self.delays else 0.0
            wait = last + self.step * (attempt - len(self.delays))
        wait = min(wait, self.max_delay)
        return min(wait * (1.0 + random.uniform(0.0, self.jitter)), self.max_delay)


COUNTDOWN_STEP = 5.0  # a wait says how long is left this often


class Endpoint(msgspec.Struct, frozen=True):
    """Where requests go and the settings that say so, named when it cannot be reached."""

    base_url: str
    settings: str  # "the base URL setting OPENAI_BASE_URL; the key variable OPENAI_API_KEY"


def unreachable(provider: str, exc: httpx.ConnectError, where: Endpoint) -> ProviderError:
    """A connection that could not be made, said at once: which host, why, what to check."""
    try:
        url = exc.request.url
        host = f"{url.host}:{url.port}" if url.port else url.host
    except RuntimeError:  # an error raised without its request
        host = where.base_url
    cause = _root_cause(exc)
    if isinstance(cause, socket.gaierror):
        why = f"the name {host.rsplit(':', 1)[0]} does not resolve (DNS)"
    elif isinstance(cause, ConnectionRefusedError):
        why = f"{host} refused the connection (nothing listens there)"
    else:
        why = f"cannot connect to {host} ({cause or exc or 'connection failed'})"
    check = f"check {where.base_url or 'the base URL'}"
    if where.settings:
        check += f" ({where.settings})"
    return ProviderError(f"{provider}: {why}: {check}", retryable=False)


def _root_cause(exc: BaseException) -> BaseException:
    """The first error in the chain (socket.gaierror, ConnectionRefusedError, ...)."""
    for _ in range(8):  # a chain is short; a cycle must not loop
        inner = exc.__cause__ or exc.__context__
        if inner is None:
            break
        exc = inner
    return exc


class StreamDecoder(Protocol):
    """Per-attempt state that turns a provider's SSE events into StreamEvents.

    `feed` returns the events one SSE event produced (None when it produced none) and sets `done`
    on the terminal event; `end` returns the closing events (usage, finish) or raises when the
    stream stopped before the provider said it was complete.
    """

    done: bool

    def feed(self, event: SSEEvent) -> Sequence[StreamEvent] | None: ...

    def end(self) -> Sequence[StreamEvent]: ...


Send = Callable[[], AbstractAsyncContextManager[httpx.Response]]


async def stream_with_retry(
    prepare: Callable[[], Send],
    make_decoder: Callable[[], StreamDecoder],
    *,
    provider: str,
    policy: RetryPolicy,
    where: Endpoint | None = None,
) -> AsyncGenerator[StreamEvent, None]:
    """Build the request with `prepare`, then send it until one attempt streams to completion,
    yielding its events as they arrive. `prepare` runs on the first iteration, so a request the
    adapter refuses (images to a text-only model) fails where the consumer reads the stream."""
    send = prepare()
    attempt = 1
    started = time.monotonic()
    while True:
        emitted = False  # whether this attempt's output reached the consumer
        try:
            # The response lives inside this block: when the consumer stops iterating or the
            # task is cancelled, leaving the block closes the connection at once.
            async with send() as response:
                if response.status_code >= 400:
                    raise await error_from_response(provider, response)
                decoder = make_decoder()
                parser = SSEParser(provider)
                chunks = response.aiter_bytes()
                async for chunk in chunks:
                    out = _decode(parser.feed(chunk), decoder)
                    if out:
                        emitted = True
                        for event in out:
                            yield event
                    if decoder.done:
                        await _drain(chunks)
                        break
                else:
                    for event in _decode(parser.close(), decoder):
                        emitted = True
                        yield event
                closing = decoder.end()
            for event in closing:
                yield event
            return
        except (ProviderError, httpx.HTTPError, httpx.InvalidURL) as exc:
            last = attempt >= policy.max_attempts
            if isinstance(exc, httpx.ConnectError) and not emitted:
                raise unreachable(provider, exc, where or Endpoint("", "")) from exc
            retry_after, reason = _retry_or_raise(exc, provider, emitted=emitted, last=last)
            delay = policy.delay(attempt, retry_after)
            if policy.out_of_time(started, delay):  # the retry budget is spent: fail now
                _retry_or_raise(exc, provider, emitted=emitted, last=True)
        attempt += 1
        async for notice in _countdown(delay, attempt, policy.max_attempts, reason):
            yield notice


async def _countdown(
    delay: float, attempt: int, attempts: int, reason: str
) -> AsyncGenerator[RetryNotice, None]:
    """Wait `delay` seconds before attempt number `attempt`, saying so at the start and then
    every COUNTDOWN_STEP seconds (a cancel ends the wait at once: it is a plain sleep)."""
    left = delay
    while True:
        yield RetryNotice(attempt=attempt, delay=left, reason=reason, attempts=attempts)
        step = min(COUNTDOWN_STEP, left)
        await anyio.sleep(step)
        left -= step
        if left <= 1e-9:
            return


def _retry_or_raise(
    exc: ProviderError | httpx.HTTPError | httpx.InvalidURL,
    provider: str,
    *,
    emitted: bool,
    last: bool,
) -> tuple[float | None, str]:
    """Classify a failed attempt: raise what the consumer should see, or return the server's
    wait hint and the reason to show while waiting."""
    if isinstance(exc, ProviderError):
        if emitted or last or not exc.retryable:
            raise exc
        return (exc.retry_after if isinstance(exc, ProviderHTTPError) else None), str(exc)
    if isinstance(exc, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError):
        failure = _transport_error(provider, exc, emitted)
        if emitted or last:
            raise failure from exc
        return None, str(failure)
    # A bad URL, an unsupported scheme, a local protocol error: another attempt won't help.
    raise ProviderError(f"{provider}: request failed: {exc}") from exc


def _decode(sses: list[SSEEvent], decoder: StreamDecoder) -> list[StreamEvent]:
    """Feed one chunk's SSE events to the decoder; events after the terminal one are ignored.

    A chunk's output is only handed on once the whole chunk decoded: an error event later in
    the same chunk then discards output nobody saw, and the attempt may still be retried.
    """
    out: list[StreamEvent] = []
    for sse in sses:
        events = decoder.feed(sse)
        if events:
            out.extend(events)
        if decoder.done:
            break
    return out


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows the terminal event (`[DONE]`, the chunked-body end) so the connection
    can be reused; give up after a grace period for a server that keeps the body open."""
    with anyio.move_on_after(DRAIN_GRACE):
        async for _ in chunks:
            pass


_TRANSIENT_WORDS = ("overload", "server", "rate", "timeout", "unavailable", "internal", "capacity")


def looks_transient(*hints: str | int | None) -> bool:
    """Whether an error reported inside a stream (a type or code) is worth another attempt."""
    for hint in hints:
        if isinstance(hint, int):
            if hint in RETRYABLE_STATUS or hint >= 500:
                return True
        elif hint and any(word in hint.lower() for word in _TRANSIENT_WORDS):
            return True
    return False


def _transport_error(provider: str, exc: httpx.HTTPError, emitted: bool) -> ProviderError:
    kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "connection failed"
    if emitted:
        kind = "connection lost mid-stream"
    detail = str(exc) or type(exc).__name__
    return ProviderError(f"{provider}: {kind}: {detail}", retryable=True)


async def error_from_response(provider: str, response: httpx.Response) -> ProviderHTTPError:
    """Read a failed response's body (bounded) and turn it into a ProviderHTTPError."""
    status = response.status_code
    body = await read_bounded(response)
    message = error_message(body) or response.reason_phrase or "error"
    code = error_code(body)
    if code in QUOTA_CODES:
        return ProviderHTTPError(
            quota_message(provider, status, message), status=status, retryable=False
        )
    return ProviderHTTPError(
        f"{provider} HTTP {status}: {message}",
        status=status,
        retryable=_retryable(status, _should_retry_header(response.headers)),
        retry_after=retry_after_seconds(response.headers),
    )


def _retryable(status: int, should_retry: bool | None) -> bool:
    """The server's own verdict (`x-should-retry`) outranks the status."""
    if should_retry is not None:
        return should_retry
    return status in RETRYABLE_STATUS or status >= 500


async def read_bounded(response: httpx.Response) -> bytes:
    body = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) >= MAX_ERROR_BODY:
                break
    except httpx.HTTPError:
        pass  # the status says enough; a body cut short only loses detail
    return bytes(body)


def quota_message(provider: str, status: int, message: str) -> str:
    return (
        f"{provider} HTTP {status}: the account has no quota left ({message}). Waiting will not "
        "help: add credit or raise the spending limit in the provider's billing settings, or "
        "pick another model, then try again."
    )


def _should_retry_header(headers: httpx.Headers) -> bool | None:
    value = headers.get("x-should-retry")
    if value == "true":
        return True
    if value == "false":
        return False
    return None


def _error_object(body: bytes) -> Any:
    try:
        data: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None
    return data.get("error", data) if isinstance(data, dict) else None


def error_message(body: bytes) -> str:
    """The human part of an error body: `{"error": {"message": ...}}` and its common variants."""
    err = _error_object(body)
    if isinstance(err, str):
        return err
    if isinstance(err, dict):
        for key in ("message", "detail", "msg"):
            value: Any = err.get(key)
            if isinstance(value, str) and value:
                return value
    return body.decode(errors="replace").strip()[:500]


def error_code(body: bytes) -> str | None:
    """The machine part of an error body: OpenAI's `code`, else its `type`."""
    err = _error_object(body)
    if isinstance(err, dict):
        for key in ("code", "type"):
            value: Any = err.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def retry_after_seconds(headers: httpx.Headers, now: float | None = None) -> float | None:
    """The server's wait hint: `retry-after-ms` (OpenAI), else `Retry-After` seconds or date."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    return parse_retry_after(headers.get("retry-after"), now)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Parse a Retry-After value: delta-seconds (fractions tolerated) or an HTTP-date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(when.timestamp() - current, 0.0)
