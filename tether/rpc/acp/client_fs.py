"""The `fs` seam backed by the client's `fs/*` methods: reads see the editor's unsaved buffers,
writes go through the editor (which can then track and undo them)."""

from __future__ import annotations

from pathlib import Path

from tether.engine.local import LocalFileSystem
from tether.engine.seam import SeamError
from tether.rpc.errors import RESOURCE_NOT_FOUND, RpcError
from tether.rpc.peer import Peer
from tether.schemas import acp


class ClientFileSystem:
    def __init__(self, peer: Peer, session_id: str, caps: acp.FileSystemCapabilities) -> None:
        self._peer = peer
        self._session = session_id
        self._caps = caps
        self._local = LocalFileSystem()

    async def read_text(self, path: Path) -> str:
        if not self._caps.read_text_file:
            return await self._local.read_text(path)
        params = acp.ReadTextFileRequest(session_id=self._session, path=str(path))
        try:
            result = await self._peer.request("fs/read_text_file", params, acp.ReadTextFileResponse)
        except RpcError as exc:
            code = "FILE_NOT_FOUND" if exc.code == RESOURCE_NOT_FOUND else "CLIENT_FS_ERROR"
            raise SeamError(code, f"the editor could not read {path}: {exc.message}") from None
        return result.content

    async def write_text(self, path: Path, content: str) -> None:
        if not self._caps.write_text_file:
            await self._local.write_text(path, content)
            return
        params = acp.WriteTextFileRequest(session_id=self._session, path=str(path), content=content)
        try:
            await self._peer.request("fs/write_text_file", params)
        except RpcError as exc:
            raise SeamError(
                "CLIENT_FS_ERROR", f"the editor could not write {path}: {exc.message}"
            ) from None
