"""The `fs` seam over LSP: reads see the text of the documents the client has open (its unsaved
buffers), writes go through `workspace/applyEdit`, so they land in the editor's buffers with its
undo.

- An open document is changed with one versioned edit of the lines that differ (`changes` when
  the client has no `documentChanges`); the write returns once the client reports the change
  (`didChange`), so the next read sees it. An editor that says it applied an edit but never
  reports it (Neovim drops an edit whose version is older than its buffer) fails the write.
- A new file is a `create` operation plus the text, when the client offers both; until the
  client opens the file to us or the file on disk changes, reads see that text and later writes
  edit the editor's buffer of it the same way (unversioned: the client never told us one).
- Everything else (an existing file the client has not opened, a client without `applyEdit`)
  acts on the disk, as do stat, listing, copy, move and delete.

Before the editor is asked to change a path, the same checks as a local write run on the disk
(only regular files, no hard-linked file).
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.workspace import PositionCodec, TextDocument

from tether.engine.local.file_system import LocalFileSystem
from tether.engine.seam import TEXT_MAX_BYTES, DirEntry, FileStat
from tether.errors import SeamError
from tether.rpc.lsp.documents import Documents
from tether.rpc.lsp.edits import fill_empty, line_edit
from tether.rpc.lsp.features import ClientFeatures
from tether.rpc.lsp.wire import Connection
from tether.rpc.rpc_error import ConnectionClosed, RpcError

REPORT_WAIT = 5.0  # how long the client may take to report an applied edit (Neovim: 150 ms)


class LspFileSystem:
    def __init__(self, conn: Connection, documents: Documents, features: ClientFeatures) -> None:
        self._conn = conn
        self._encoding = conn.handshake.encoding
        self._docs = documents
        self._features = features
        self._local = LocalFileSystem()

    async def stat(self, path: Path) -> FileStat | None:
        return await self._local.stat(path)

    async def read_text(self, path: Path, *, max_bytes: int = TEXT_MAX_BYTES) -> str:
        doc = self._docs.find(path)
        if doc is not None:
            text = doc.source
        else:
            now = await self._local.stat(path)
            text = self._docs.created(path, now.stamp if now else None)
            if text is None:
                return await self._local.read_text(path, max_bytes=max_bytes)
        if len(text.encode("utf-8")) > max_bytes:
            raise SeamError(
                "FILE_TOO_LARGE", f"the editor's text of {path} is over {max_bytes} bytes"
            )
        return text

    async def read_bytes(self, path: Path, *, offset: int = 0, max_bytes: int) -> bytes:
        return await self._local.read_bytes(path, offset=offset, max_bytes=max_bytes)

    async def write_text(self, path: Path, content: str) -> None:
        doc = self._docs.find(path) if self._features.apply_edit else None
        if doc is not None:
            await self._local.prepare_write(path)
            await self._edit_open(path, doc, content)
            return
        now = await self._local.stat(path)
        if self._features.create_files and now is None:
            await self._local.prepare_write(path)  # the parent directories
            await self._create(path, content)
            return
        created = self._docs.created(path, now.stamp if now else None)
        if created is not None and self._features.apply_edit:
            await self._local.prepare_write(path)
            await self._edit_created(path, created, content)
            return
        self._docs.forget(path)
        await self._local.write_text(path, content)

    async def _edit_open(self, path: Path, doc: TextDocument, content: str) -> None:
        edit = line_edit(doc.source, content, doc.position_codec.client_num_units)
        if edit is None:
            return
        version = doc.version
        if self._features.document_changes:
            ident = types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=version)
            change = types.TextDocumentEdit(text_document=ident, edits=[edit])
            workspace_edit = types.WorkspaceEdit(document_changes=[change])
        else:
            workspace_edit = types.WorkspaceEdit(changes={doc.uri: [edit]})
        await self._apply(path, workspace_edit, f"tether: edit {path.name}")
        if not await self._docs.wait_change(doc.uri, version, REPORT_WAIT):
            raise SeamError(
                "CLIENT_FS_ERROR",
                f"the editor accepted the edit of {path} but never reported the change "
                "(its buffer had probably changed meanwhile); read the file again",
            )

    async def _edit_created(self, path: Path, old: str, content: str) -> None:
        edit = line_edit(old, content, PositionCodec(self._encoding).client_num_units)
        if edit is None:
            return
        uri = path.as_uri()
        ident = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None)
        change = types.TextDocumentEdit(text_document=ident, edits=[edit])
        await self._apply(
            path, types.WorkspaceEdit(document_changes=[change]), f"tether: edit {path.name}"
        )
        now = await self._local.stat(path)
        self._docs.remember_created(path, content, now.stamp if now else None)

    async def _create(self, path: Path, content: str) -> None:
        uri = path.as_uri()
        ident = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None)
        changes: list[types.TextDocumentEdit | types.CreateFile] = [types.CreateFile(uri=uri)]
        if content:
            changes.append(types.TextDocumentEdit(text_document=ident, edits=[fill_empty(content)]))
        await self._apply(
            path, types.WorkspaceEdit(document_changes=changes), f"tether: create {path.name}"
        )
        now = await self._local.stat(path)
        self._docs.remember_created(path, content, now.stamp if now else None)

    async def _apply(self, path: Path, edit: types.WorkspaceEdit, label: str) -> None:
        params = types.ApplyWorkspaceEditParams(edit=edit, label=label)
        try:
            result: types.ApplyWorkspaceEditResult = await self._conn.request(
                types.WORKSPACE_APPLY_EDIT, params
            )
        except (RpcError, ConnectionClosed) as exc:
            raise SeamError(
                "CLIENT_FS_ERROR", f"the editor could not write {path}: {exc}"
            ) from None
        if not result.applied:
            why = result.failure_reason or "no reason given"
            raise SeamError(
                "CLIENT_FS_ERROR", f"the editor did not apply the edit of {path}: {why}"
            )

    async def list_dir(self, path: Path) -> list[DirEntry]:
        return await self._local.list_dir(path)

    async def copy(self, src: Path, dst: Path) -> None:
        await self._local.copy(src, dst)

    async def move(self, src: Path, dst: Path) -> None:
        self._docs.forget(src)
        await self._local.move(src, dst)

    async def delete(self, path: Path, *, permanent: bool) -> None:
        self._docs.forget(path)
        await self._local.delete(path, permanent=permanent)
