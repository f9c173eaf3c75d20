"""pygls's private bookkeeping, as `tether/rpc/lsp/pygls_internals.py` reaches it, checked on the
installed pygls: each field is still there and still means what the adapter says. A pygls upgrade
that renames or repurposes one fails here, naming the field, instead of leaking requests or
hanging the end of input in a client."""

from __future__ import annotations

import json
import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import pytest
from lsprotocol import types

from tether.rpc.lsp import pygls_internals
from tether.rpc.lsp.pygls_internals import FIELDS, forget_request, is_pending, still_pending
from tether.rpc.lsp.server import TetherLanguageServer, make_server

PYGLS = f"pygls {version('pygls')}"


class Collect:
    """A writer pygls writes its frames to (the interface `wire.Output` implements)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.messages.append(json.loads(data))

    def close(self) -> None:
        pass


def _server() -> tuple[TetherLanguageServer, Collect]:
    server, _ = make_server()
    out = Collect()
    server.protocol.set_writer(out, include_headers=False)
    return server, out


def _deliver(server: TetherLanguageServer, message: dict[str, Any]) -> None:
    """A frame read from the client, as `wire.Connection` hands it to pygls."""
    typed: Any = server.protocol.structure_message(message)
    server.protocol.handle_message(typed)


def _field(server: TetherLanguageServer, name: str) -> dict[Any, Any]:
    value = getattr(server.protocol, name, None)
    assert isinstance(value, dict), (
        f"{PYGLS}: JsonRPCProtocol.{name} is no longer a dict ({type(value).__name__}); "
        f"tether/rpc/lsp/pygls_internals.py reaches it"
    )
    return value


@pytest.mark.parametrize("name", FIELDS)
def test_each_field_the_adapter_reaches_is_still_there(name: str) -> None:
    server, _ = _server()
    assert _field(server, name) == {}, f"{PYGLS}: JsonRPCProtocol.{name} is not empty at start"


def test_every_private_name_the_adapter_uses_is_listed() -> None:
    """The adapter's source names no private field it does not declare (and so test here)."""
    source = Path(pygls_internals.__file__).read_text()
    reached = set(re.findall(r"protocol\.(_\w+)", source))
    assert reached == set(FIELDS)


@pytest.mark.anyio
async def test_our_request_is_held_in_both_fields_until_forgotten() -> None:
    server, out = _server()
    params = types.ApplyWorkspaceEditParams(edit=types.WorkspaceEdit())
    server.protocol.send_request(types.WORKSPACE_APPLY_EDIT, params, msg_id="tether/1")
    assert out.messages[-1]["id"] == "tether/1"
    assert "tether/1" in _field(server, "_request_futures"), (
        f"{PYGLS}: JsonRPCProtocol._request_futures no longer holds a request we sent"
    )
    assert "tether/1" in _field(server, "_result_types"), (
        f"{PYGLS}: JsonRPCProtocol._result_types no longer holds a request's answer type"
    )
    assert is_pending(server.protocol, "tether/1")
    forget_request(server.protocol, "tether/1")
    assert not is_pending(server.protocol, "tether/1")
    assert "tether/1" not in _field(server, "_result_types")


@pytest.mark.anyio
async def test_an_answer_read_releases_our_request() -> None:
    server, _ = _server()
    params = types.ApplyWorkspaceEditParams(edit=types.WorkspaceEdit())
    future = server.protocol.send_request(types.WORKSPACE_APPLY_EDIT, params, msg_id="tether/2")
    answer = {"jsonrpc": "2.0", "id": "tether/2", "result": {"applied": True}}
    _deliver(server, answer)
    assert future.result().applied is True  # typed through _result_types
    assert not is_pending(server.protocol, "tether/2"), (
        f"{PYGLS}: JsonRPCProtocol._request_futures keeps a request whose answer was read"
    )
    assert "tether/2" not in _field(server, "_result_types")


@pytest.mark.anyio
async def test_the_clients_request_is_held_until_its_answer_is_sent() -> None:
    server, out = _server()
    release = anyio.Event()

    @server.command("tether.test.wait")
    async def wait(*arguments: object) -> str:
        await release.wait()
        return "done"

    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": types.WORKSPACE_EXECUTE_COMMAND,
        "params": {"command": "tether.test.wait", "arguments": []},
    }
    _deliver(server, request)
    assert still_pending(server.protocol, [7, 8]) == {7}, (
        f"{PYGLS}: JsonRPCProtocol._request_futures does not hold a request being handled"
    )
    release.set()
    with anyio.fail_after(5):
        while is_pending(server.protocol, 7):
            await anyio.sleep(0.01)
    assert out.messages[-1] == {"jsonrpc": "2.0", "id": 7, "result": "done"}
