"""The composition root of `tether acp` in this process, over an in-memory pipe: what it opens
(the providers' shared HTTP clients, web access) is closed when the input ends, and nothing is
left for the garbage collector to warn about."""

from __future__ import annotations

import gc
import json
import warnings
from pathlib import Path

import anyio
import pytest

from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import chat_text
from tether.errors import WebError
from tether.rpc.acp.acp_handshake import Handshake
from tether.rpc.acp.acp_stream import serve_composed
from tether.rpc.acp.replay_frames import acp_renderer
from tether.rpc.compose import Composed, compose
from tether.rpc.peer import Peer
from tether.rpc.startup import ServeOptions
from tether.transports.framing import NdjsonFramer
from tether.transports.memory import memory_pair
from tether.transports.streams import FramedStream

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_clients_are_closed_when_the_input_ends(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))  # discovery keeps its lists there
    with MockLLMServer() as llm:
        llm.script("/v1/models", Reply(body=json.dumps({"object": "list", "data": []}).encode()))
        llm.script("/v1/chat/completions", Reply(chunks=chat_text(["Hello"])))
        env = {"OPENAI_BASE_URL": f"{llm.url}/v1", "TETHER_MODEL": "openai:gpt-5.4"}
        composed = compose(ServeOptions(), acp_renderer(), env=env, home=home)
        a, b = memory_pair()
        client = Peer(FramedStream(b, NdjsonFramer()), name="client")
        updates: list[object] = []

        async def on_update(params: object) -> None:
            updates.append(params)

        client.on_notification("session/update", on_update)
        stopped = anyio.Event()

        async def serve(c: Composed) -> None:
            await serve_composed(FramedStream(a, NdjsonFramer()), Handshake(), c)
            stopped.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(serve, composed)
            tg.start_soon(client.run)
            await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            new = await client.request("session/new", {"cwd": str(project), "mcpServers": []})
            prompt = {"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": "Hi"}]}
            done = await client.request("session/prompt", prompt)
            assert done == {"stopReason": "end_turn"}
            clients = composed.deps.catalog.clients.opened()  # the provider's shared client
            assert [c.is_closed for c in clients] == [False]
            del clients
            await b.close_output()  # the agent reads the end of its input and stops
            await stopped.wait()
            tg.cancel_scope.cancel()
        await a.aclose()
        await b.aclose()
        assert [r.path for r in llm.posts] == ["/v1/chat/completions"]

    [opened] = composed.deps.catalog.clients.opened()
    assert opened.is_closed
    with pytest.raises(WebError) as info:
        await composed.web.search("q", max_results=8)
    assert info.value.code == "WEB_ABORTED" and "shut down" in info.value.message
    del composed, opened, client  # nothing is left for the collector to close
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
