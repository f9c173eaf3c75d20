"""What a command's card says when it ran in the client's terminal. The client shows its own
terminal with the exit status it saw (tether.nvim "exited with code 0", VS Code "exited with 0",
Zed a failure mark): a card that also says "exit code 0" shows the status twice. The card is the
terminal, plus a line only for what the terminal cannot tell (why it was killed: a timeout),
while the model still reads the exit code. Judged by the frames a client receives."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.acp_schema import validate_agent_frame
from tests.support.inprocess import agent_in_memory
from tests.support.stored import tool_results
from tests.support.terminal_client import TerminalServer
from tether.tools import catalog

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes"),
]


async def _final_card(
    home: Path, project: Path, arguments: dict[str, Any]
) -> tuple[dict[str, Any], list[str], str]:
    """One run_argv in the client's terminal: its last card update, the terminals the client
    created, the tool result the model read."""
    call = {"tool_call": {"id": "c1", "name": "run_argv", "arguments": arguments}}
    script = {"rounds": [{"events": [call]}, {"events": [{"text": "ok"}]}]}
    server = TerminalServer()
    cards: list[dict[str, Any]] = []
    sid = ""
    async with agent_in_memory(home, script, catalog()) as client, anyio.create_task_group() as tg:
        server.register(client.peer, tg)

        async def on_update(params: dict[str, Any]) -> None:
            validate_agent_frame({"jsonrpc": "2.0", "method": "session/update", "params": params})
            if params["update"].get("toolCallId") == "c1":
                cards.append(params["update"])

        client.peer.on_notification("session/update", on_update)
        sid = await client.start(project, {"terminal": True})
        assert await client.prompt(sid, "go") == "end_turn"
        tg.cancel_scope.cancel()
    [result] = tool_results(home, sid)
    return cards[-1], list(server.terms), result


def _texts(card: dict[str, Any]) -> list[str]:
    return [c["content"]["text"] for c in card["content"] if c["type"] == "content"]


@pytest.mark.parametrize(("argv", "code"), [(["printf", "hi\\n"], 0), (["false"], 1)])
async def test_the_card_of_a_command_in_a_client_terminal_leaves_the_exit_status_to_it(
    home: Path, project: Path, argv: list[str], code: int
) -> None:
    card, terminals, result = await _final_card(home, project, {"argv": argv})
    assert card["status"] == "completed"
    assert card["content"][0] == {"type": "terminal", "terminalId": terminals[0]}
    assert not [t for t in _texts(card) if "exit code" in t], card["content"]
    assert card["rawOutput"]["exitCode"] == code  # still there, for a client that wants it
    assert result.startswith(f"exit code {code}\n")  # the model still reads it


async def test_a_timeout_is_said_on_the_card_the_terminal_only_shows_a_kill(
    home: Path, project: Path
) -> None:
    card, terminals, _ = await _final_card(
        home, project, {"argv": ["sleep", "60"], "timeout_seconds": 0.5}
    )
    assert card["content"][0] == {"type": "terminal", "terminalId": terminals[0]}
    texts = _texts(card)
    assert "timed out after 0.5 s: the command and what it started were killed" in texts
    assert not [t for t in texts if "exit code" in t]
