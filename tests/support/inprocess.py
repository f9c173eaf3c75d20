"""The ACP agent in this process over an in-memory pipe pair, for tests that need to hand it
their own tools (a slow one, a huge one) or tune its limits. Everything else is the real code."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from tests.support.acp_schema import validate_agent_frame
from tether.engine.config.catalog import ModelCatalog
from tether.engine.providers.scripted import Script, ScriptedModel
from tether.engine.registry import Registry, ToolDef
from tether.engine.sessions.deps import EngineDeps
from tether.engine.sessions.store import Store
from tether.engine.system_prompt import PERSONA
from tether.engine.turn import TurnConfig
from tether.rpc.acp.acp_handshake import Handshake
from tether.rpc.acp.agent import AcpAgent
from tether.rpc.acp.replay_frames import acp_renderer
from tether.rpc.peer import Peer
from tether.transports.framing import NdjsonFramer
from tether.transports.memory import memory_pair
from tether.transports.streams import FramedStream


@dataclass
class Client:
    peer: Peer
    updates: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    permissions: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    choice: str | None = "allow"  # the option id picked; None answers `cancelled`
    models: list[ScriptedModel] = field(default_factory=list[ScriptedModel])
    cancel_on: str | None = None  # send session/cancel when an agent chunk says this

    async def on_update(self, params: dict[str, Any]) -> None:
        validate_agent_frame({"jsonrpc": "2.0", "method": "session/update", "params": params})
        update = params["update"]
        self.updates.append(update)
        content = update.get("content")
        text = content.get("text") if isinstance(content, dict) else None
        if self.cancel_on is not None and isinstance(text, str) and text.strip() == self.cancel_on:
            await self.peer.notify("session/cancel", {"sessionId": params["sessionId"]})

    async def on_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        frame = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "session/request_permission",
            "params": params,
        }
        validate_agent_frame(frame)
        self.permissions.append(params)
        if self.choice is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": self.choice}}

    async def start(
        self, cwd: Path, caps: dict[str, Any] | None = None, info: dict[str, Any] | None = None
    ) -> str:
        params: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": caps or {}}
        if info is not None:
            params["clientInfo"] = info
        await self.peer.request("initialize", params)
        result = await self.peer.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        return result["sessionId"]

    async def load(self, sid: str, cwd: Path) -> list[dict[str, Any]]:
        """Initialize, load the session: the updates its replay sent before the answer."""
        await self.peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        before = len(self.updates)
        params = {"sessionId": sid, "cwd": str(cwd), "mcpServers": []}
        await self.peer.request("session/load", params)
        return self.updates[before:]

    async def prompt(self, sid: str, text: str) -> str:
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
        return (await self.peer.request("session/prompt", params))["stopReason"]


@asynccontextmanager
async def agent_in_memory(
    home: Path, script: dict[str, Any], tools: list[ToolDef], turn: TurnConfig | None = None
) -> AsyncIterator[Client]:
    import msgspec

    loaded = msgspec.convert(script, Script)
    catalog = ModelCatalog(default="scripted")
    models: list[ScriptedModel] = []

    def open_model() -> ScriptedModel:
        models.append(ScriptedModel(loaded, keep_requests=True))
        return models[-1]

    catalog.add(ScriptedModel(loaded).info, open_model)
    deps = EngineDeps(
        catalog=catalog,
        registry_factory=lambda: Registry(tools),
        store=Store(home / "tether.db", acp_renderer()),
        spill_root=home / "spill",
        turn=turn or TurnConfig(system=PERSONA),
    )
    a, b = memory_pair()
    agent_peer = Peer(FramedStream(a, NdjsonFramer()), name="agent")
    client_peer = Peer(FramedStream(b, NdjsonFramer()), name="client")
    client = Client(client_peer, models=models)
    client_peer.on_notification("session/update", client.on_update)
    client_peer.on_request("session/request_permission", client.on_permission)
    async with anyio.create_task_group() as tg:
        AcpAgent(agent_peer, Handshake(), deps, background=tg).register()
        tg.start_soon(agent_peer.run)
        tg.start_soon(client_peer.run)
        yield client
        await b.close_output()  # the agent reads the end of its input, answers, and stops
        tg.cancel_scope.cancel()
    await a.aclose()
    await b.aclose()
