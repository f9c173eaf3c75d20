"""The official Python ACP SDK (a client nobody here wrote) drives the real `tether acp`:
initialize -> session/new -> a prompt whose round asks one batch permission -> cancel mid-turn."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.connection import StreamDirection, StreamEvent
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

from tests.support.acp_schema import validate_agent_frame
from tests.support.harness import REPO, script
from tests.support.warm import Warm, children

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class SdkClient:
    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.waiting = anyio.Event()

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append(update)
        text = getattr(getattr(update, "content", None), "text", "")
        if text == "Now waiting for a slow model.":
            self.waiting.set()

    async def request_permission(
        self, options: Any, session_id: str, tool_call: Any, **kw: Any
    ) -> Any:
        self.permissions.append((tool_call, options))
        allow = next(o for o in options if o.kind == "allow_once")  # clients map by kind
        return {"outcome": {"outcome": "selected", "optionId": allow.option_id}}

    async def read_text_file(
        self, path: str, session_id: str, line: Any = None, limit: Any = None, **kw: Any
    ) -> Any:
        return {"content": Path(path).read_text()}

    async def write_text_file(self, content: str, path: str, session_id: str, **kw: Any) -> Any:
        Path(path).write_text(content)
        return {}


@pytest.mark.parametrize("start", ["cold", "warm"])
async def test_python_sdk_drives_a_batch_permission_and_a_cancel(
    home: Path, project: Path, tmp_path: Path, start: str, request: pytest.FixtureRequest
) -> None:
    """`warm`: the agent is a worker of a warm server (tests/warm/test_warm_start.py)."""
    writes = [
        {
            "tool_call": {
                "id": f"w{i}",
                "name": "write_file",
                "arguments": {"path": f"{n}.txt", "content": n},
            }
        }
        for i, n in enumerate(["one", "two"])
    ]
    path = script(
        tmp_path / "s.json", [writes, [{"text": "Now waiting for a slow model."}, {"delay": 60}]]
    )
    client = SdkClient()
    incoming: list[dict[str, Any]] = []

    def observe(event: StreamEvent) -> None:
        if event.direction == StreamDirection.INCOMING:
            validate_agent_frame(event.message)
            incoming.append(event.message)

    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    server = 0
    env["TETHER_WARM"] = "0"
    if start == "warm":
        warm: Warm = request.getfixturevalue("shared_warm")
        env.update(warm.env)
        server = warm.start(home)
    result: dict[str, Any] = {}
    async with spawn_agent_process(
        client,  # pyright: ignore[reportArgumentType]  # structurally a Client
        sys.executable,
        "-m",
        "tether",
        "acp",
        "--script",
        str(path),
        env=env,
        cwd=REPO,
        transport_kwargs={"stderr": None},
        observers=[observe],
    ) as (conn, _proc):
        caps = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
        )
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=caps,
            client_info=Implementation(name="sdk-test", version="0"),
        )
        assert init.protocol_version == 1 and init.agent_info is not None
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        assert session.modes is not None and session.modes.current_mode_id == "ask"
        if start == "warm":  # the server's worker serves; the spawned launcher runs nothing
            assert children(_proc.pid) == [] and len(children(server)) == 1

        async with anyio.create_task_group() as tg:

            async def run_prompt() -> None:
                result["resp"] = await conn.prompt(
                    session_id=session.session_id, prompt=[text_block("write")]
                )

            tg.start_soon(run_prompt)
            with anyio.fail_after(15):
                await client.waiting.wait()
            await conn.cancel(session_id=session.session_id)
        assert result["resp"].stop_reason == "cancelled"

    [(card, options)] = client.permissions
    assert card.title == "Edit one.txt, two.txt"
    assert [o.kind for o in options] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",  # "Review one by one": each kind once; it allows nothing by itself
    ]
    assert (project / "one.txt").read_text() == "one" and (project / "two.txt").read_text() == "two"
    kinds = [getattr(u, "session_update", None) for u in client.updates]
    assert {"available_commands_update", "tool_call", "tool_call_update", "usage_update"} <= set(
        kinds
    )
    assert incoming, "the observer saw the agent's frames"


class _AlwaysClient(SdkClient):
    """Answers every permission "always allow" (an option it finds by kind)."""

    async def request_permission(
        self, options: Any, session_id: str, tool_call: Any, **kw: Any
    ) -> Any:
        self.permissions.append((tool_call, options))
        always = next(o for o in options if o.kind == "allow_always")
        return {"outcome": {"outcome": "selected", "optionId": always.option_id}}


def _said(updates: list[Any]) -> str:
    return "".join(
        u.content.text
        for u in updates
        if getattr(u, "session_update", None) == "agent_message_chunk"
    )


async def test_python_sdk_drives_commands_project_grants_and_allow_all(
    home: Path, project: Path, tmp_path: Path
) -> None:
    def write(call_id: str, name: str) -> dict[str, Any]:
        arguments = {"path": name, "content": name}
        return {"tool_call": {"id": call_id, "name": "write_file", "arguments": arguments}}

    rounds = [[write("w1", "a.txt")], [{"text": "ok"}], [write("w2", "b.txt")], [{"text": "ok"}]]
    path = script(tmp_path / "s.json", rounds)
    client = _AlwaysClient()

    def observe(event: StreamEvent) -> None:
        if event.direction == StreamDirection.INCOMING:
            validate_agent_frame(event.message)

    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    async with spawn_agent_process(
        client,  # pyright: ignore[reportArgumentType]  # structurally a Client
        sys.executable,
        *("-m", "tether", "acp", "--script", str(path)),
        env=env,
        cwd=REPO,
        transport_kwargs={"stderr": None},
        observers=[observe],
    ) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await conn.set_config_option(config_id="always", session_id=sid, value="project")
        await conn.prompt(session_id=sid, prompt=[text_block("write a")])
        before = len(client.updates)
        await conn.prompt(session_id=sid, prompt=[text_block("/grants")])
        listed = _said(client.updates[before:])
        await conn.set_session_mode(session_id=sid, mode_id="allow-all")
        await conn.prompt(session_id=sid, prompt=[text_block("write b")])
    assert "1. always allow: " in listed and "(this project)" in listed
    assert len(client.permissions) == 1  # allow-all asked nothing for b.txt
    [(_, options)] = client.permissions
    assert next(o.name for o in options if o.kind == "allow_always").endswith(" in this project")
    assert (project / "a.txt").read_text() == "a.txt" and (project / "b.txt").read_text() == "b.txt"
