"""Which failures are retried, as the official OpenAI and Anthropic SDKs decide it: 408, 409, 429
and 5xx unless the server says otherwise in `x-should-retry`; never an exhausted quota."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.support.providers.helpers import Kit, collect, of_type, request
from tests.support.providers.mock_llm_server import MockLLMServer, Reply, error_reply
from tether.engine.providers.base import Finish, RetryNotice
from tether.errors import ProviderError

pytestmark = pytest.mark.anyio

QUOTA = {
    "error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_quota",
    }
}


async def test_409_is_retried(kit: Kit, server: MockLLMServer, client: httpx.AsyncClient) -> None:
    server.script(kit.path, error_reply(409, "lock timeout"), Reply(chunks=kit.text(["ok"])))
    events = await collect(kit.adapter(server, client), request())
    assert "HTTP 409: lock timeout" in of_type(events, RetryNotice)[0].reason
    assert of_type(events, Finish) == [Finish("stop")]
    assert len(server.posts) == 2


async def test_should_retry_false_outranks_a_5xx(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(kit.path, error_reply(503, "down", {"x-should-retry": "false"}), Reply())
    with pytest.raises(ProviderError, match="HTTP 503: down") as info:
        await collect(kit.adapter(server, client), request())
    assert not info.value.retryable
    assert len(server.posts) == 1


async def test_should_retry_true_outranks_a_400(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(
        kit.path,
        error_reply(400, "try again", {"x-should-retry": "true"}),
        Reply(chunks=kit.text(["ok"])),
    )
    events = await collect(kit.adapter(server, client), request())
    assert len(of_type(events, RetryNotice)) == 1
    assert len(server.posts) == 2


async def test_an_exhausted_quota_is_not_retried_and_says_what_to_do(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    quota = Reply(status=429, body=json.dumps(QUOTA).encode(), headers={"retry-after": "0"})
    server.script(kit.path, quota, Reply(chunks=kit.text(["never"])))
    llm = kit.adapter(server, client)
    events: list[object] = []
    with pytest.raises(ProviderError) as info:
        async for event in llm.stream(request()):
            events.append(event)
    assert events == []  # no "retrying" notice for a wait that cannot help
    message = str(info.value)
    assert message.startswith(f"{llm.name} HTTP 429: the account has no quota left")
    assert "You exceeded your current quota" in message
    assert "add credit or raise the spending limit" in message
    assert not info.value.retryable
    assert len(server.posts) == 1
