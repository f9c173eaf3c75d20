"""A stored session opened (session/load, session/resume) from another folder than its own:
the user decides, on a permission request with a card of its own, whether it keeps working in
its folder, moves to the one the client opened it from, or is not opened at all."""

from __future__ import annotations

import uuid
from typing import Literal

from tether.rpc.peer import Peer
from tether.rpc.rpc_error import INVALID_PARAMS, RpcError
from tether.schemas import acp

Choice = Literal["keep", "move", "abort"]

# One option per ACP kind, as every card does: clients map keys and buttons by kind.
_OPTIONS: tuple[tuple[Choice, acp.PermissionKind], ...] = (
    ("keep", "allow_once"),
    ("move", "allow_always"),
    ("abort", "reject_once"),
)


async def choose_folder(peer: Peer, session_id: str, own: str, asked_from: str) -> Choice:
    """The user's choice; a cancelled or failed request is "abort" (nothing moves)."""
    card = f"folder-{uuid.uuid4().hex[:12]}"
    title = f"This session works in {own}; open it from {asked_from}?"
    note = (
        f"The session was last used in {own}. Keep: it goes on in {own}. Move: it goes on in "
        f"{asked_from} (the model is told; paths in earlier messages refer to {own}). Abort: "
        "it is not opened."
    )
    content: list[acp.ToolCallContent] = [_text(note)]
    raw = {"sessionCwd": own, "cwd": asked_from}
    start = acp.ToolCallStart(
        tool_call_id=card,
        title=title,
        kind="other",
        status="pending",
        content=content,
        raw_input=raw,
    )
    await _update(peer, session_id, start)
    names = {"keep": f"Keep {own}", "move": f"Move to {asked_from}", "abort": "Abort"}
    options = [acp.PermissionOption(option_id=c, name=names[c], kind=k) for c, k in _OPTIONS]
    request = acp.RequestPermissionRequest(
        session_id=session_id,
        tool_call=acp.ToolCallFields(tool_call_id=card, title=title, kind="other"),
        options=options,
    )
    choice: Choice = "abort"
    try:
        answer = await peer.request(
            "session/request_permission", request, acp.RequestPermissionResponse
        )
        if isinstance(answer.outcome, acp.SelectedOutcome):
            picked = answer.outcome.option_id
            choice = "keep" if picked == "keep" else "move" if picked == "move" else "abort"
    except RpcError:
        choice = "abort"
    status: acp.ToolCallStatus = "failed" if choice == "abort" else "completed"
    said = {"keep": f"Kept {own}", "move": f"Moved to {asked_from}", "abort": "Not opened"}
    done: list[acp.ToolCallContent] = [_text(said[choice])]
    await _update(
        peer, session_id, acp.ToolCallProgress(tool_call_id=card, status=status, content=done)
    )
    return choice


def aborted(session_id: str, own: str, asked_from: str) -> RpcError:
    return RpcError(
        INVALID_PARAMS,
        f"Session {session_id} works in {own}; the user chose not to open it from {asked_from}",
        {"sessionId": session_id, "sessionCwd": own, "cwd": asked_from},
    )


def _text(text: str) -> acp.ContentToolContent:
    return acp.ContentToolContent(content=acp.TextContent(text=text))


async def _update(peer: Peer, session_id: str, update: acp.SessionUpdate) -> None:
    notification = acp.SessionNotification(session_id=session_id, update=update)
    await peer.notify("session/update", notification)
