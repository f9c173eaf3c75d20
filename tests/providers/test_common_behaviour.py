"""Behaviour every adapter shares, run against each API's wire format: retries, errors, broken
streams, cancellation, the image gate."""

from __future__ import annotations

import contextlib
import time

import anyio
import httpx
import pytest

from tests.support.providers.helpers import Kit, collect, model_info, of_type, request
from tests.support.providers.mock_llm_server import MockLLMServer, Reply, error_reply
from tether.engine.history import AssistantMessage, ImagePart, TextPart, UserMessage
from tether.engine.providers.base import Finish, RetryNotice, TextDelta
from tether.errors import ProviderError

pytestmark = pytest.mark.anyio

IMAGE = ImagePart(data="iVBORw0KGgo=", mime_type="image/png")


async def test_streams_text_and_ends_with_one_finish(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(kit.path, Reply(chunks=kit.text(["Hel", "lo", " world"])))
    events = await collect(kit.adapter(server, client), request())
    assert "".join(e.text for e in of_type(events, TextDelta)) == "Hello world"
    assert of_type(events, Finish) == [Finish("stop")]
    assert isinstance(events[-1], Finish)
    assert server.requests[0].headers["content-type"] == "application/json"


async def test_429_is_retried_after_retry_after(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(
        kit.path,
        error_reply(429, "slow down", {"retry-after": "0.15"}),
        Reply(chunks=kit.text(["ok"])),
    )
    started = time.perf_counter()
    events = await collect(kit.adapter(server, client), request())
    elapsed = time.perf_counter() - started
    notices = of_type(events, RetryNotice)
    assert len(notices) == 1
    assert notices[0].attempt == 2
    assert notices[0].delay == pytest.approx(0.15)
    assert "HTTP 429: slow down" in notices[0].reason
    assert elapsed >= 0.14  # the wait really happened
    assert isinstance(events[0], RetryNotice)  # the user sees the wait before it happens
    assert "".join(e.text for e in of_type(events, TextDelta)) == "ok"
    assert len(server.requests) == 2


async def test_500_is_retried_with_backoff(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(
        kit.path,
        error_reply(500, "internal"),
        error_reply(503, "unavailable"),
        Reply(chunks=kit.text(["fine"])),
    )
    events = await collect(kit.adapter(server, client), request())
    notices = of_type(events, RetryNotice)
    assert [n.attempt for n in notices] == [2, 3]
    assert notices[1].delay > notices[0].delay  # exponential
    assert of_type(events, Finish) == [Finish("stop")]


async def test_retries_stop_at_max_attempts(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(kit.path, *[error_reply(429, "quota", {"retry-after": "0"})] * 4)
    with pytest.raises(ProviderError) as info:
        await collect(kit.adapter(server, client), request())
    assert info.value.status == 429
    assert info.value.retryable
    assert len(server.requests) == 4


async def test_400_is_not_retried_and_message_surfaces(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(kit.path, error_reply(400, "messages: field required"), Reply())
    llm = kit.adapter(server, client)
    with pytest.raises(ProviderError) as info:
        await collect(llm, request())
    assert str(info.value) == f"{llm.name} HTTP 400: messages: field required"
    assert info.value.status == 400
    assert not info.value.retryable
    assert len(server.requests) == 1


async def test_cut_mid_stream_after_output_raises(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(kit.path, Reply(chunks=kit.prefix(["partial"]), end="cut"), Reply())
    seen: list[str] = []
    with pytest.raises(ProviderError) as info:
        async for event in kit.adapter(server, client).stream(request()):
            if isinstance(event, TextDelta):
                seen.append(event.text)
    assert seen == ["partial"]
    assert "mid-stream" in str(info.value)
    assert len(server.requests) == 1  # never silently answered twice


async def test_clean_end_without_terminal_event_raises(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(kit.path, Reply(chunks=kit.prefix(["partial"])))
    with pytest.raises(ProviderError, match="ended before the response completed"):
        await collect(kit.adapter(server, client), request())
    assert len(server.requests) == 1


async def test_cut_before_any_output_is_retried(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(kit.path, Reply(chunks=kit.prefix([])[:1], end="cut"))
    server.script(kit.path, Reply(chunks=kit.text(["again"])))
    events = await collect(kit.adapter(server, client), request())
    assert len(of_type(events, RetryNotice)) == 1
    assert "".join(e.text for e in of_type(events, TextDelta)) == "again"


async def test_timeout_before_first_byte_is_retried(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(kit.path, Reply(delay=1.0, chunks=kit.text(["late"])))
    server.script(kit.path, Reply(chunks=kit.text(["on time"])))
    events = await collect(kit.adapter(server, client, timeout=0.2), request())
    notices = of_type(events, RetryNotice)
    assert len(notices) == 1 and "timed out" in notices[0].reason
    assert "".join(e.text for e in of_type(events, TextDelta)) == "on time"


async def test_malformed_sse_data_raises(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    broken = b'data: {"type": "oops", "choices": [\n\n'
    server.script(kit.path, Reply(chunks=[*kit.prefix(["a"]), broken]), Reply())
    with pytest.raises(ProviderError, match="malformed stream data"):
        await collect(kit.adapter(server, client), request())
    assert len(server.requests) == 1


async def test_closing_the_stream_closes_the_connection(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(kit.path, Reply(chunks=kit.prefix(["first"]), end="hold"))
    stream = kit.adapter(server, client).stream(request())
    async with contextlib.aclosing(stream):
        async for event in stream:
            if isinstance(event, TextDelta):
                break
    assert await anyio.to_thread.run_sync(server.disconnected.wait, 2.0)


async def test_cancelling_the_task_closes_the_connection(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(kit.path, Reply(chunks=kit.prefix(["first"]), end="hold"))
    llm = kit.adapter(server, client)
    got_text = anyio.Event()

    async def consume() -> None:
        async for event in llm.stream(request()):
            if isinstance(event, TextDelta):
                got_text.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await got_text.wait()
            await anyio.sleep(0.05)  # let the consumer block on the next read
            tg.cancel_scope.cancel()
    assert await anyio.to_thread.run_sync(server.disconnected.wait, 2.0)


async def test_images_refused_for_a_text_only_model(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    req = request([UserMessage([TextPart("what is this?"), IMAGE])])
    with pytest.raises(ProviderError, match="model test:model does not accept images"):
        await collect(kit.adapter(server, client), req)
    assert server.requests == []  # refused before anything was sent


async def test_images_sent_to_an_image_model(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(kit.path, Reply(chunks=kit.text(["a cat"])))
    req = request([UserMessage([TextPart("what is this?"), IMAGE])])
    await collect(kit.adapter(server, client, info=model_info(images=True)), req)
    assert IMAGE.data in server.requests[0].body.decode()


async def test_crlf_stream_cut_at_arbitrary_bytes(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    body = b"".join(c for c in kit.text(["Hel", "lo"]) if isinstance(c, bytes))
    body = b": keep-alive\r\n\r\n" + body.replace(b"\n", b"\r\n")
    server.script(kit.path, Reply(chunks=[body[i : i + 7] for i in range(0, len(body), 7)]))
    events = await collect(kit.adapter(server, client), request())
    assert "".join(e.text for e in of_type(events, TextDelta)) == "Hello"
    assert of_type(events, Finish) == [Finish("stop")]


async def test_connection_refused_fails_at_once_naming_the_host(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.stop()  # nothing listens on the port any more
    events: list[object] = []
    with pytest.raises(ProviderError, match="refused the connection") as info:
        async for event in kit.adapter(server, client).stream(request()):
            events.append(event)
    assert not info.value.retryable
    assert events == []  # one attempt: no RetryNotice announced another
    assert server.url.removeprefix("http://") in str(info.value)


async def test_adapter_owns_a_client_when_given_none(kit: Kit, server: MockLLMServer) -> None:
    server.script(kit.path, Reply(chunks=kit.text(["own client"])))
    llm = kit.make(server.url + kit.base, "sk-test", "test-model", model_info())
    try:
        events = await collect(llm, request())
    finally:
        await llm.aclose()
    assert of_type(events, Finish) == [Finish("stop")]


async def test_a_reminder_from_tether_goes_as_the_apis_instruction_message(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    """A host message (the todo reminder) mid-conversation: a system message to chat
    completions, a developer message to Responses, user content to Anthropic (which has no
    such role mid-conversation); every body passes the vendor's schema (the server checks)."""
    server.script(kit.path, Reply(chunks=kit.text(["ok"])))
    reminder = "[TODO OPEN WORK] finish it"
    history = [
        UserMessage([TextPart("hi")]),
        AssistantMessage("done"),
        UserMessage([TextPart(reminder)], host=True),
    ]
    await collect(kit.adapter(server, client), request(history))
    body = server.requests[0].json()
    if kit.path.endswith("/chat/completions"):
        assert body["messages"][-1] == {"role": "system", "content": reminder}
    elif kit.path.endswith("/responses"):
        text = [{"type": "input_text", "text": reminder}]
        assert body["input"][-1] == {"type": "message", "role": "developer", "content": text}
    else:
        last = body["messages"][-1]
        assert last["role"] == "user"
        assert [(b["type"], b["text"]) for b in last["content"]] == [("text", reminder)]
