"""The `fs` seam backed by the client's `fs/*` methods: reads see the editor's unsaved buffers,
writes go through the editor (which can then track and undo them).

ACP has no stat, listing, copy, move or delete: those act on the disk here. Before the editor is
asked to read or write a path, the same checks as a local access run on the disk (only regular
files, a size bound, no hard-linked file), so the editor is never asked to open a FIFO or a
device, or to load a file we would refuse.
"""

from __future__ import annotations

from pathlib import Path

from tether.engine.local.file_system import LocalFileSystem
from tether.engine.seam import TEXT_MAX_BYTES, DirEntry, FileStat
from tether.errors import SeamError
from tether.rpc.peer import Peer
from tether.rpc.rpc_error import RESOURCE_NOT_FOUND, RpcError
from tether.schemas import acp


class ClientFileSystem:
    def __init__(self, peer: Peer, session_id: str, caps: acp.FileSystemCapabilities) -> None:
        self._peer = peer
        self._session = session_id
        self._caps = caps
        self._local = LocalFileSystem()

    async def stat(self, path: Path) -> FileStat | None:
        return await self._local.stat(path)

    async def read_text(self, path: Path, *, max_bytes: int = TEXT_MAX_BYTES) -> str:
        if not self._caps.read_text_file:
            return await self._local.read_text(path, max_bytes=max_bytes)
        on_disk = await self._local.stat(path) is not None
        if on_disk:  # else the editor may still hold it: a new buffer not saved yet
            await self._local.check_readable(path, max_bytes)
        params = acp.ReadTextFileRequest(session_id=self._session, path=str(path))
        try:
            result = await self._peer.request("fs/read_text_file", params, acp.ReadTextFileResponse)
        except RpcError as exc:
            if exc.code == RESOURCE_NOT_FOUND and on_disk:
                # Editors serve only their project's files (Zed: its worktrees); a file our policy
                # allows outside them (a spill file, an added directory) is read from disk.
                return await self._local.read_text(path, max_bytes=max_bytes)
            if exc.code == RESOURCE_NOT_FOUND:
                raise SeamError("FILE_NOT_FOUND", f"no such file: {path}") from None
            raise SeamError(
                "CLIENT_FS_ERROR", f"the editor could not read {path}: {exc.message}"
            ) from None
        if len(result.content) > max_bytes:  # the editor's buffer grew past the bound
            raise SeamError(
                "FILE_TOO_LARGE", f"the editor's text of {path} is over {max_bytes} characters"
            )
        return result.content

    async def read_bytes(self, path: Path, *, offset: int = 0, max_bytes: int) -> bytes:
        return await self._local.read_bytes(path, offset=offset, max_bytes=max_bytes)

    async def write_text(self, path: Path, content: str) -> None:
        if not self._caps.write_text_file:
            await self._local.write_text(path, content)
            return
        await self._local.prepare_write(path)
        params = acp.WriteTextFileRequest(session_id=self._session, path=str(path), content=content)
        try:
            await self._peer.request("fs/write_text_file", params)
        except RpcError as exc:
            raise SeamError(
                "CLIENT_FS_ERROR", f"the editor could not write {path}: {exc.message}"
            ) from None

    async def list_dir(self, path: Path) -> list[DirEntry]:
        return await self._local.list_dir(path)

    async def copy(self, src: Path, dst: Path) -> None:
        await self._local.copy(src, dst)

    async def move(self, src: Path, dst: Path) -> None:
        await self._local.move(src, dst)

    async def delete(self, path: Path, *, permanent: bool) -> None:
        await self._local.delete(path, permanent=permanent)
